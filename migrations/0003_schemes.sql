-- 0003_schemes.sql — versions of the ketama scheme (docs/KETAMA.md) beside those of the ringkeeper
-- scheme. A ketama topology names twemproxy's key hashes and has no vnode_factor (stored as 0), so
-- the CHECKs of 0001 must change, which SQLite does only by rebuilding the table: the rows are
-- copied as they are (every existing version is of the ringkeeper scheme), then the index and the
-- triggers are made again. Applied in one transaction like every migration.

DROP TRIGGER versions_immutable;
DROP TRIGGER versions_no_delete;

CREATE TABLE versions_new (
    cluster_id   INTEGER NOT NULL REFERENCES clusters (id),
    version      INTEGER NOT NULL CHECK (version >= 1),
    state        TEXT NOT NULL CHECK (state IN ('staged', 'active', 'retired', 'superseded')),
    created_at   TEXT NOT NULL,
    activated_at TEXT,
    author       TEXT,
    comment      TEXT,
    scheme       TEXT NOT NULL DEFAULT 'ringkeeper' CHECK (scheme IN ('ringkeeper', 'ketama')),
    hash         TEXT NOT NULL CHECK (
        (scheme = 'ringkeeper' AND hash IN ('fnv1a_32', 'md5_32', 'xxh3_64')) OR
        (scheme = 'ketama' AND hash IN ('one_at_a_time', 'md5', 'crc16', 'crc32', 'crc32a',
                                        'fnv1_64', 'fnv1a_64', 'fnv1_32', 'fnv1a_32', 'hsieh',
                                        'murmur', 'jenkins'))),
    vnode_factor INTEGER NOT NULL CHECK (
        (scheme = 'ringkeeper' AND vnode_factor BETWEEN 1 AND 4096) OR
        (scheme = 'ketama' AND vnode_factor = 0)),
    points       INTEGER NOT NULL CHECK (points >= 1),
    fingerprint  TEXT NOT NULL CHECK (length(fingerprint) = 16),
    topology     TEXT NOT NULL,
    PRIMARY KEY (cluster_id, version)
);

INSERT INTO versions_new (cluster_id, version, state, created_at, activated_at, author, comment,
                          scheme, hash, vnode_factor, points, fingerprint, topology)
SELECT cluster_id, version, state, created_at, activated_at, author, comment, 'ringkeeper', hash,
       vnode_factor, points, fingerprint, topology
FROM versions;

DROP TABLE versions;
ALTER TABLE versions_new RENAME TO versions;

CREATE UNIQUE INDEX versions_one_active ON versions (cluster_id) WHERE state = 'active';
CREATE INDEX versions_staged ON versions (cluster_id, version) WHERE state = 'staged';

CREATE TRIGGER versions_immutable
BEFORE UPDATE OF cluster_id, version, created_at, author, comment, scheme, hash, vnode_factor,
                 points, fingerprint, topology ON versions
BEGIN
    SELECT RAISE(ABORT, 'versions are immutable');
END;

CREATE TRIGGER versions_no_delete
BEFORE DELETE ON versions
BEGIN
    SELECT RAISE(ABORT, 'versions are never deleted');
END;
