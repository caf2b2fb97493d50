-- 0008_scheme_rules.sql — the rules of a scheme leave the schema: each ring scheme checks its own
-- hash and parameters (client/core/scheme/, docs/ARCHITECTURE.md "Ring schemes") before a version
-- is stored, so the per-scheme CHECKs of 0003, which made a new scheme a new migration, give way
-- to checks of shape only. SQLite changes a CHECK only by rebuilding the table: the rows are copied
-- as they are (no fingerprint or topology changes), the index and the triggers are made again.
-- A migration window refers to two versions (0006), and foreign keys are on in a migration's
-- transaction, so the windows are set aside while the versions table is rebuilt and put back.

CREATE TEMP TABLE windows_0008 AS SELECT * FROM migration_windows;
DELETE FROM migration_windows;

DROP TRIGGER versions_immutable;
DROP TRIGGER versions_no_delete;

CREATE TABLE versions_0008 (
    cluster_id   INTEGER NOT NULL REFERENCES clusters (id),
    version      INTEGER NOT NULL CHECK (version >= 1),
    state        TEXT NOT NULL CHECK (state IN ('staged', 'active', 'retired', 'superseded')),
    created_at   TEXT NOT NULL,
    activated_at TEXT,
    author       TEXT,
    comment      TEXT,
    scheme       TEXT NOT NULL DEFAULT 'ringkeeper' CHECK (
        length(scheme) BETWEEN 1 AND 32 AND scheme NOT GLOB '*[^a-z0-9_]*'),
    hash         TEXT NOT NULL CHECK (
        length(hash) BETWEEN 1 AND 32 AND hash NOT GLOB '*[^a-z0-9_]*'),
    vnode_factor INTEGER NOT NULL CHECK (vnode_factor BETWEEN 0 AND 4096), -- 0: none (ketama)
    points       INTEGER NOT NULL CHECK (points >= 1),
    fingerprint  TEXT NOT NULL CHECK (length(fingerprint) = 16),
    topology     TEXT NOT NULL,
    PRIMARY KEY (cluster_id, version)
);

INSERT INTO versions_0008 (cluster_id, version, state, created_at, activated_at, author, comment,
                           scheme, hash, vnode_factor, points, fingerprint, topology)
SELECT cluster_id, version, state, created_at, activated_at, author, comment, scheme, hash,
       vnode_factor, points, fingerprint, topology
FROM versions;

DROP TABLE versions;
ALTER TABLE versions_0008 RENAME TO versions;

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

INSERT INTO migration_windows SELECT * FROM windows_0008;
DROP TABLE windows_0008;
