-- 0011_load_profiles.sql — a cluster's load profile (docs/LOAD.md): what `ringkeeper measure`
-- found on its data servers (keys, bytes and reads over the ring), kept as the JSON document
-- GET .../load answers, one row per cluster (its latest profile) with a revision that every
-- change moves on (compare and set, as the migration jobs of 0007 and the rollouts of 0009). A
-- store is a "load" event of the audit, which 0009's kind check already admits.

CREATE TABLE load_profiles (
    cluster_id INTEGER PRIMARY KEY REFERENCES clusters (id),
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    doc        TEXT NOT NULL CHECK (json_valid(doc))
);
