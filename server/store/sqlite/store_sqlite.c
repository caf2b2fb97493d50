/* store_sqlite.c — the SQLite backend of store.h: opening a store (the file created private, the
 * schema through store_migrate.c) into an rkd_store with this backend's rkd_store_ops, closing,
 * pinging and read-only detection. The connection and the statement and transaction helpers
 * every file of the backend runs its SQL with are store_sqlite_db.c.
 *
 * One connection per store, used under a mutex. SQLite admits one writer at a time anyway, so a
 * pool would only help readers, and reads here are short indexed lookups: the expensive parts
 * (building the ring for the fingerprint, serialising and parsing topologies) run outside the lock.
 * Writes still use BEGIN IMMEDIATE, which takes the database's write lock before reading the latest
 * version number, so numbering has no gaps or duplicates across handles and processes too; the
 * busy timeout makes a second writer wait for the first instead of failing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

/* ---- The connection ---- */

static int ping(void *b, rk_error *err)
{
    rks_store *s = b;
    int64_t n = 0;
    rks_params p = {0};
    pthread_mutex_lock(&s->lock);
    int rc = rks_int_query(s, "SELECT COUNT(*) FROM sqlite_master", &p, &n, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* SQLite opens a file it may not write read-only; writable() below recovers from that. */
static int read_only(void *b)
{
    rks_store *s = b;
    pthread_mutex_lock(&s->lock);
    int ro = sqlite3_db_readonly(s->db, "main") == 1;
    pthread_mutex_unlock(&s->lock);
    return ro;
}

/* Creates a missing database file 0600, whatever the umask: SQLite gives the -wal and -shm files
 * the database file's mode, so all three stay the owner's. (Setting the umask around the open
 * instead would change it for every thread of the process.) The umask can only narrow 0600. An
 * existing file keeps its mode: docs/OPERATIONS.md says how to tighten it. */
static int create_private(const char *path, rk_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST)
        return RK_OK;
    if (fd < 0)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                            "cannot create the database %s: %s; check the folder's owner and "
                            "permissions",
                            path, strerror(errno));
    close(fd);
    return RK_OK;
}

static int open_store(rks_store *s, const char *path, const char *dir, rk_error *err)
{
    rks_migration_set set = {0};
    int rc = rks_migrations_load(dir, &set, err);
    rc = rc ? rc : create_private(path, err);
    rc = rc ? rc : rks_connect(s, path, err);
    rc = rc ? rc : rks_check_identity(s, path, &set, err);
    rc = rc ? rc : rks_configure(s, err);
    rc = rc ? rc : rks_migrate(s, &set, err);
    rks_migrations_free(&set);
    return rc;
}

static void close_db(void *b)
{
    rks_store *s = b;
    sqlite3_close(s->db); /* every statement is finalized where it is used */
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s);
}

static const rkd_store_ops sqlite_ops = {
    .close = close_db,
    .store_id = rks_store_id,
    .ping = ping,
    .read_only = read_only,
    .publish = rks_publish,
    .activate = rks_activate,
    .get = rks_get,
    .list = rks_list,
    .list_clusters = rks_list_clusters,
    .get_policy = rks_get_policy,
    .put_policy = rks_put_policy,
    .approve = rks_approve,
    .list_events = rks_list_events,
    .finish_migration = rks_finish_migration,
    .get_doc = rks_get_doc,
    .put_doc = rks_put_doc,
    .list_approvals = rks_list_approvals,
    .adopt_id = rks_adopt_id,
    .import = rks_import,
};

static rks_store *new_db(const char *path, rk_error *err)
{
    rks_store *s = calloc(1, sizeof *s);
    if (!s) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        rk_error_set(err, RK_ENOMEM, NULL, "cannot create a mutex");
        return NULL;
    }
    s->path = strdup(path);
    if (s->path)
        return s;
    rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    close_db(s);
    return NULL;
}

const char *const rkd_sqlite_param_names[] = {"migrations", NULL};

void *rkd_sqlite_open_params(const char *path, const rkd_store_param *p, size_t n,
                             const rkd_store_ops **ops, rk_error *err)
{
    const char *migrations = rkd_store_param_value(p, n, "migrations");
    if (!migrations) {
        rk_error_set(err, RK_EINVAL, "migrations",
                     "an SQLite store takes its schema from a directory of NNNN_*.sql files "
                     "(--migrations DIR)");
        return NULL;
    }
    return rkd_sqlite_open(path, migrations, ops, err);
}

void *rkd_sqlite_open(const char *path, const char *migrations_dir, const rkd_store_ops **ops,
                      rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    if (!path || !migrations_dir) {
        rk_error_set(err, RK_EINVAL, NULL,
                     "a database path and a migrations directory are required");
        return NULL;
    }
    rks_store *s = new_db(path, err);
    if (!s)
        return NULL;
    *ops = &sqlite_ops;
    if (open_store(s, path, migrations_dir, err) == RK_OK)
        return s;
    close_db(s);
    return NULL;
}
