-- 0009_rollouts.sql — the rollout (SPEC 11, docs/MIGRATE.md "Rollouts"): a change from the active
-- version to a target in approved steps, kept here as the JSON document GET .../rollouts/{id}
-- answers, one row per cluster (its latest rollout) with a revision that every change moves on
-- (compare and set, as the migration jobs of 0007). A rollout's events (create, approve, start,
-- step, pause, resume, abort, done, failed) go to the audit: the events table is rebuilt with a
-- CHECK of the kind's shape instead of a list, so that the next kind of event is no migration.

CREATE TABLE rollouts (
    cluster_id INTEGER PRIMARY KEY REFERENCES clusters (id),
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    doc        TEXT NOT NULL CHECK (json_valid(doc))
);

CREATE TABLE events_0009 (
    cluster_id     INTEGER NOT NULL REFERENCES clusters (id),
    event          INTEGER NOT NULL CHECK (event >= 1),
    kind           TEXT NOT NULL CHECK (
        length(kind) BETWEEN 1 AND 32 AND kind NOT GLOB '*[^a-z_]*'),
    at             TEXT NOT NULL,
    author         TEXT,
    version        INTEGER,
    from_version   INTEGER,
    digest         TEXT,
    moved_fraction REAL,
    detail         TEXT,
    PRIMARY KEY (cluster_id, event)
);

INSERT INTO events_0009 SELECT cluster_id, event, kind, at, author, version, from_version, digest,
                               moved_fraction, detail FROM events;
DROP TABLE events;
ALTER TABLE events_0009 RENAME TO events;

CREATE TRIGGER events_immutable BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never changed');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never deleted');
END;
