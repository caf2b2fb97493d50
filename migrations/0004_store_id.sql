-- 0004_store_id.sql — the store's identity: 64 random bits, as 16 lowercase hex digits, made with
-- the database (or at this upgrade for an older one). Version numbers are unique only within one
-- history; a restored backup starts another one and reuses numbers, so the server carries this id
-- in the ring's ETag and in version documents ("store_id"), and clients compare versions only
-- under the same id. `ringkeeperd backup` writes a new id into each copy, so a restored copy is a
-- different history from the moment it was taken. One row, always.

CREATE TABLE meta (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    store_id TEXT NOT NULL CHECK (length(store_id) = 16 AND store_id NOT GLOB '*[^0-9a-f]*')
);

INSERT INTO meta (id, store_id) VALUES (1, lower(hex(randomblob(8))));
