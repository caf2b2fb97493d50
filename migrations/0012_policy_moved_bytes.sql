-- 0012_policy_moved_bytes.sql — the policy's budget in bytes (docs/LOAD.md, "A budget in bytes"):
-- with max_moved_bytes set, an activation may move at most that many bytes by the cluster's load
-- profile (0011), as max_moved_fraction bounds its hash space. Every policy stored before reads
-- as 0, no byte budget: nothing changes for them.

ALTER TABLE policies ADD COLUMN max_moved_bytes INTEGER NOT NULL DEFAULT 0
    CHECK (max_moved_bytes >= 0);
