-- 0001_init.sql — ringkeeper's first schema: clusters and their numbered, immutable topology versions.
-- Applied by the server inside one transaction, which also sets PRAGMA user_version = 1 and the
-- ringkeeper application_id; so this file holds no BEGIN/COMMIT and no PRAGMA of its own.

CREATE TABLE clusters (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,   -- matches ^[a-z0-9][a-z0-9._-]{0,62}$ (checked by the caller)
    created_at TEXT NOT NULL           -- RFC 3339 UTC, 2026-11-29T17:41:10Z
);

CREATE TABLE versions (
    cluster_id   INTEGER NOT NULL REFERENCES clusters (id),
    version      INTEGER NOT NULL CHECK (version >= 1),   -- 1, 2, 3 ... per cluster
    state        TEXT NOT NULL CHECK (state IN ('staged', 'active', 'retired', 'superseded')),
    created_at   TEXT NOT NULL,
    activated_at TEXT,                                     -- NULL until activated
    author       TEXT,                                     -- token name; NULL without tokens
    comment      TEXT,
    hash         TEXT NOT NULL CHECK (hash IN ('fnv1a_32', 'md5_32', 'xxh3_64')),
    vnode_factor INTEGER NOT NULL CHECK (vnode_factor BETWEEN 1 AND 4096),
    points       INTEGER NOT NULL CHECK (points >= 1),
    fingerprint  TEXT NOT NULL CHECK (length(fingerprint) = 16),
    topology     TEXT NOT NULL,                            -- rk_topology_to_json, compact
    PRIMARY KEY (cluster_id, version)
);

-- At most one active version per cluster (docs/API.md), enforced by the database itself.
CREATE UNIQUE INDEX versions_one_active ON versions (cluster_id) WHERE state = 'active';

-- Versions are immutable: only the state and the activation time ever change, and no row is
-- deleted, so a version number is never reused.
CREATE TRIGGER versions_immutable
BEFORE UPDATE OF cluster_id, version, created_at, author, comment, hash, vnode_factor, points,
                 fingerprint, topology ON versions
BEGIN
    SELECT RAISE(ABORT, 'versions are immutable');
END;

CREATE TRIGGER versions_no_delete
BEFORE DELETE ON versions
BEGIN
    SELECT RAISE(ABORT, 'versions are never deleted');
END;
