-- 0006_migration_window.sql — the cutover's (docs/API.md) migration window: while a row is here, clients of
-- the cluster keep answering the owners of the previous ring (dual reads) next to the active one.
-- An activation under a policy with migration_window opens it, in the activation's transaction;
-- POST .../migration/finish deletes the row, with a "finish" event in the same transaction (the
-- events keep the history, so a closed window leaves nothing here). At most one per cluster.

CREATE TABLE migration_windows (
    cluster_id INTEGER PRIMARY KEY REFERENCES clusters (id),
    version    INTEGER NOT NULL,  -- the active version the window was opened by
    previous   INTEGER NOT NULL CHECK (previous >= 1 AND previous < version),
    opened_at  TEXT NOT NULL,
    opened_by  TEXT,
    FOREIGN KEY (cluster_id, version) REFERENCES versions (cluster_id, version),
    FOREIGN KEY (cluster_id, previous) REFERENCES versions (cluster_id, version)
);
