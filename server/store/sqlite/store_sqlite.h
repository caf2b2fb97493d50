/* store_sqlite.h — the SQLite backend (store_sqlite.c, store_versions.c, store_migrate.c,
 * store_backup.c): its opening, which store_open.c calls, and what it offers beyond store.h for
 * callers that know they deal with SQLite (the `backup` subcommand). Nothing here is part of the
 * store interface, and another backend owes none of it. */
#ifndef RKD_STORE_SQLITE_H
#define RKD_STORE_SQLITE_H

#include "store_backend.h"

/* The backend's parameters (rkd_store_param), NULL-terminated: "migrations", the directory of the
 * NNNN_*.sql files, which rkd_sqlite_open_params hands rkd_sqlite_open. */
extern const char *const rkd_sqlite_param_names[];
/* rkd_sqlite_open of `path` with the migrations its parameters p[0 .. n) name; RK_EINVAL on the
 * field "migrations" without them. */
void *rkd_sqlite_open_params(const char *path, const rkd_store_param *p, size_t n,
                             const rkd_store_ops **ops, rk_error *err) RK_MUST_CHECK;

/* Opens (creating when absent) the database at `path` and brings its schema up to date with the
 * SQL files NNNN_*.sql in `migrations_dir`: in numeric order, each once, each in its own
 * transaction. Refuses, without changing the file, one that is not a ringkeeper database
 * (RKD_STORE_ENOTRK) or whose schema is newer than the highest migration (RKD_STORE_ETOONEW).
 * While the file is not writable the store is read-only (rkd_store_read_only): reads work, and
 * every write fails with RKD_STORE_EUNAVAILABLE, changing nothing, until the file is writable
 * again; the next write after that succeeds without reopening the store. Returns the backend's
 * state, with *ops its table of operations, for rkd_store_new (store_open.c), which then owns it;
 * NULL with `err` set. */
void *rkd_sqlite_open(const char *path, const char *migrations_dir, const rkd_store_ops **ops,
                      rk_error *err) RK_MUST_CHECK;

/* Copies the ringkeeper database at `db_path` to the file `to_path`: a consistent snapshot of one
 * moment, safe while a server (in this process or another) reads and writes the database, which
 * it does not block. The copy is written to a temporary file next to `to_path`, checked with
 * PRAGMA integrity_check, synced, and only then given its name, so `to_path` never holds half a
 * copy. The copy has a new store id (rkd_store_id): restored, it is another history than the
 * database's, whose version numbers it will reuse. Refuses a source that is not a ringkeeper
 * database (RKD_STORE_ENOTRK, nothing written) and, unless `replace` is non-zero, an existing
 * `to_path` (RKD_STORE_ECONFLICT). Other failures: RKD_STORE_EUNAVAILABLE or RK_ENOMEM, with no
 * file left behind. Restoring: stop the server, copy the file over the database, remove the
 * database's -wal and -shm files, start the server. */
int rkd_sqlite_backup(const char *db_path, const char *to_path, int replace,
                      rk_error *err) RK_MUST_CHECK;

#endif /* RKD_STORE_SQLITE_H */
