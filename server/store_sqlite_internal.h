/* store_sqlite_internal.h — what the files of the SQLite store share and store.h does not show:
 * the rkd_store struct, statement parameters, the error, statement and transaction helpers of
 * store_sqlite.c and the migration steps of store_migrate.c. Only store_*.c include it. */
#ifndef RKD_STORE_SQLITE_INTERNAL_H
#define RKD_STORE_SQLITE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store_sqlite.h"

struct rkd_store {
    sqlite3 *db;              /* the connection; used only under lock */
    char *path;               /* the database file, for reopening the connection */
    pthread_mutex_t lock;     /* serialises use of db */
    atomic_uint_fast64_t seq; /* activations committed through this handle */
    rkd_store_watch_fn watch; /* called after each activation, or NULL */
    void *watch_arg;          /* its argument */
};

/* Named parameters a statement may use; rks_statement binds those it has. */
typedef struct rks_params {
    const char *cluster; /* :cluster */
    int64_t cid;         /* :cid, clusters.id */
    int64_t v;           /* :v, a version number */
    int64_t limit;       /* :limit */
    const char *now;     /* :now, RFC 3339 */
} rks_params;

/* ---- store_sqlite.c: errors, statements, transactions (call with s->lock held) ---- */

/* Fills err (code, message from fmt) and returns code. */
int rks_set_err(rk_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The store code for an SQLite result code. */
int rks_map_rc(int rc);
/* Sets err from the connection's last error while doing `what`; returns the code. */
int rks_db_err(rkd_store *s, rk_error *err, int rc, const char *what);
/* Runs SQL without parameters or rows. */
int rks_exec(rkd_store *s, const char *sql, const char *what, rk_error *err);
/* Bind a named parameter if the statement has it; SQLite result codes. */
int rks_bind_text(sqlite3_stmt *st, const char *name, const char *val);
int rks_bind_int(sqlite3_stmt *st, const char *name, int64_t val);
int rks_statement(rkd_store *s, const char *sql, const rks_params *p, sqlite3_stmt **st,
                  rk_error *err);
int rks_exec_params(rkd_store *s, const char *sql, const rks_params *p, const char *what,
                    rk_error *err);
int rks_int_query(rkd_store *s, const char *sql, const rks_params *p, int64_t *out, rk_error *err);
/* BEGIN IMMEDIATE, on a new connection first when this one was opened read-only (the file may be
 * writable again); rks_finish commits when rc is RK_OK and rolls back otherwise. */
int rks_begin(rkd_store *s, rk_error *err);
int rks_finish(rkd_store *s, int rc, rk_error *err);

/* ---- store_migrate.c: the schema ---- */

typedef struct rks_migration rks_migration;

typedef struct rks_migration_set {
    rks_migration *items; /* sorted by number: 1, 2, 3 ... */
    size_t count;         /* how many; at least one once loaded */
} rks_migration_set;

/* Reads the names of the NNNN_*.sql files in `dir`, before any database is touched. */
int rks_migrations_load(const char *dir, rks_migration_set *set, rk_error *err);
void rks_migrations_free(rks_migration_set *set);
/* Refuses a database that is not ours or newer than `set`, before anything is written. */
int rks_check_identity(rkd_store *s, const char *path, const rks_migration_set *set, rk_error *err);
/* Refuses (RKD_STORE_ENOTRK) anything but a ringkeeper database with a schema: for reading one. */
int rks_check_ours(rkd_store *s, const char *path, rk_error *err);
/* Applies the migrations the database lacks, in order, each in its own transaction. */
int rks_migrate(rkd_store *s, const rks_migration_set *set, rk_error *err);

#endif /* RKD_STORE_SQLITE_INTERNAL_H */
