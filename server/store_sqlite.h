/* store_sqlite.h — what the SQLite backend offers beyond store.h, for the callers that know they
 * deal with SQLite (the `backup` subcommand): nothing here is part of the store interface, and
 * another backend owes none of it. */
#ifndef RKD_STORE_SQLITE_H
#define RKD_STORE_SQLITE_H

#include "store.h"

/* Copies the ringkeeper database at `db_path` to the file `to_path`: a consistent snapshot of one
 * moment, safe while a server (in this process or another) reads and writes the database, which
 * it does not block. The copy is written to a temporary file next to `to_path`, checked with
 * PRAGMA integrity_check, synced, and only then given its name, so `to_path` never holds half a
 * copy. Refuses a source that is not a ringkeeper database (RKD_STORE_ENOTRK, nothing written) and,
 * unless `replace` is non-zero, an existing `to_path` (RKD_STORE_ECONFLICT). Other failures:
 * RKD_STORE_EUNAVAILABLE or RK_ENOMEM, with no file left behind. Restoring: stop the server, copy
 * the file over the database, remove the database's -wal and -shm files, start the server. */
int rkd_sqlite_backup(const char *db_path, const char *to_path, int replace,
                      rk_error *err) RK_MUST_CHECK;

#endif /* RKD_STORE_SQLITE_H */
