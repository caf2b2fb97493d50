-- 0010_policy_prewarm.sql — a cluster served by proxies (nginx, HAProxy, nutcracker driven by
-- `ringkeeper agent`, docs/AGENT.md) reads from one ring at a time, so a migration window's dual
-- reads do not help it: with `prewarm` set, activating a version whose topology names its data
-- needs that version's verified pre-warm (a before_cutover job), and a rollout's step pre-warms
-- before it activates and opens no window of its own (docs/MIGRATE.md, "Clusters served by
-- proxies"). Every policy stored before reads as 0: nothing changes for them.

ALTER TABLE policies ADD COLUMN prewarm INTEGER NOT NULL DEFAULT 0 CHECK (prewarm IN (0, 1));
