-- 0007_migration_jobs.sql — the migration job (SPEC section 10, docs/MIGRATE.md): what a worker moving a
-- cluster's data has done, kept here so that any worker can resume it. One row per cluster: its latest
-- job as the JSON document GET .../migration answers, and a revision that every change moves on, so
-- that two servers or two requests changing it at once cannot lose one change (compare and set).
-- The events of a job (start, pause, resume, throttle, cancel, verified, failed) go to the audit, so
-- the events table is rebuilt with those kinds allowed; its rows and rules are kept as they were.

CREATE TABLE migration_jobs (
    cluster_id INTEGER PRIMARY KEY REFERENCES clusters (id),
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    doc        TEXT NOT NULL CHECK (json_valid(doc))
);

CREATE TABLE events_0007 (
    cluster_id     INTEGER NOT NULL REFERENCES clusters (id),
    event          INTEGER NOT NULL CHECK (event >= 1),
    kind           TEXT NOT NULL CHECK (kind IN ('publish', 'revert', 'approve', 'activate',
                                                 'force', 'policy', 'finish', 'migration_start',
                                                 'migration_pause', 'migration_resume',
                                                 'migration_throttle', 'migration_cancel',
                                                 'migration_verified', 'migration_failed')),
    at             TEXT NOT NULL,
    author         TEXT,
    version        INTEGER,
    from_version   INTEGER,
    digest         TEXT,
    moved_fraction REAL,
    detail         TEXT,
    PRIMARY KEY (cluster_id, event)
);

INSERT INTO events_0007 SELECT cluster_id, event, kind, at, author, version, from_version, digest,
                               moved_fraction, detail FROM events;
DROP TABLE events;
ALTER TABLE events_0007 RENAME TO events;

CREATE TRIGGER events_immutable BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never changed');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never deleted');
END;
