-- 0005_cutover.sql — The cutover (docs/API.md): a cluster's cutover policy, approvals of plans and the
-- append-only audit of events. A cluster without a policy row has the defaults (no budget, no
-- approvals), so existing clusters keep the flow of section 4 unchanged.

CREATE TABLE policies (
    cluster_id         INTEGER PRIMARY KEY REFERENCES clusters (id),
    max_moved_fraction REAL NOT NULL CHECK (max_moved_fraction >= 0 AND max_moved_fraction <= 1),
    max_balance_after  REAL CHECK (max_balance_after IS NULL OR max_balance_after >= 1),
    approvals          INTEGER NOT NULL CHECK (approvals BETWEEN 0 AND 100),
    distinct_approver  INTEGER NOT NULL CHECK (distinct_approver IN (0, 1)),
    migration_window   INTEGER NOT NULL CHECK (migration_window IN (0, 1))
);

-- One approval per approver, version and plan: re-approving the same plan changes nothing, and an
-- approval of another plan (another active version) does not count for this one.
CREATE TABLE approvals (
    cluster_id INTEGER NOT NULL REFERENCES clusters (id),
    version    INTEGER NOT NULL,
    digest     TEXT NOT NULL CHECK (length(digest) = 16),
    approver   TEXT NOT NULL,
    comment    TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (cluster_id, version, digest, approver)
);

-- Numbered 1, 2, 3 ... per cluster like versions, written in the transaction of the change each
-- records, never changed, never deleted.
CREATE TABLE events (
    cluster_id     INTEGER NOT NULL REFERENCES clusters (id),
    event          INTEGER NOT NULL CHECK (event >= 1),
    kind           TEXT NOT NULL CHECK (kind IN ('publish', 'revert', 'approve', 'activate',
                                                 'force', 'policy', 'finish')),
    at             TEXT NOT NULL,
    author         TEXT,
    version        INTEGER,
    from_version   INTEGER,
    digest         TEXT,
    moved_fraction REAL,
    detail         TEXT,   -- a comment, a force's reason, or the policy set (JSON)
    PRIMARY KEY (cluster_id, event)
);

CREATE TRIGGER events_immutable BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never changed');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never deleted');
END;
