/* store_sqlite.c — the SQLite backend of store.h, its connection: opening (durability settings,
 * then the schema through store_migrate.c) into an rkd_store with this backend's rkd_store_ops,
 * closing, pinging, read-only detection, and the statement and transaction helpers that
 * store_versions.c and store_migrate.c run their SQL with.
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

#define BUSY_TIMEOUT_MS 5000 /* a writer waits this long for another before giving up */

/* ---- Errors, statements and transactions ---- */

/* A file that is not a database is not ours; anything else SQLite reports (busy, locked, I/O,
 * full disk, read-only) leaves the database unavailable for now. */
int rks_map_rc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOMEM:
        return RK_ENOMEM;
    case SQLITE_NOTADB:
        return RKD_STORE_ENOTRK;
    default:
        return RKD_STORE_EUNAVAILABLE;
    }
}

/* Failures of the storage under SQLite (a full disk, a read-only file, an I/O error), which an
 * operator fixes outside ringkeeper; SQLite has rolled the transaction back by then. */
static int storage_failure(int rc)
{
    int primary = rc & 0xff;
    return primary == SQLITE_FULL || primary == SQLITE_IOERR || primary == SQLITE_READONLY ||
           primary == SQLITE_CANTOPEN;
}

int rks_db_err(rks_store *s, rk_error *err, int rc, const char *what)
{
    return rk_error_set(err, rks_map_rc(rc), NULL, "database error while %s: %s%s", what,
                        sqlite3_errmsg(s->db),
                        storage_failure(rc) ? "; nothing was changed, retry once the storage "
                                              "is fixed"
                                            : "");
}

int rks_exec(rks_store *s, const char *sql, const char *what, rk_error *err)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return rks_db_err(s, err, rc, what);
    return RK_OK;
}

static int prepare(rks_store *s, const char *sql, sqlite3_stmt **st, rk_error *err)
{
    int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return rks_db_err(s, err, rc, "preparing a statement");
    return RK_OK;
}

/* Index 0 (a name the statement lacks) is skipped: one rks_params struct serves every statement. */
int rks_bind_text(sqlite3_stmt *st, const char *name, const char *val)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0)
        return SQLITE_OK;
    if (!val)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, val, -1, SQLITE_TRANSIENT);
}

int rks_bind_int(sqlite3_stmt *st, const char *name, int64_t val)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0)
        return SQLITE_OK;
    return sqlite3_bind_int64(st, i, val);
}

static int bind_params(rks_store *s, sqlite3_stmt *st, const rks_params *p, rk_error *err)
{
    int rc = rks_bind_text(st, ":cluster", p->cluster);
    rc = rc ? rc : rks_bind_int(st, ":cid", p->cid);
    rc = rc ? rc : rks_bind_int(st, ":v", p->v);
    rc = rc ? rc : rks_bind_int(st, ":limit", p->limit);
    rc = rc ? rc : rks_bind_text(st, ":now", p->now);
    if (rc != SQLITE_OK)
        return rks_db_err(s, err, rc, "binding parameters");
    return RK_OK;
}

/* Prepares `sql` and binds `p`; the caller finalizes *st (also on failure: it may be NULL). */
int rks_statement(rks_store *s, const char *sql, const rks_params *p, sqlite3_stmt **st,
                  rk_error *err)
{
    int rc = prepare(s, sql, st, err);
    if (rc == RK_OK)
        rc = bind_params(s, *st, p, err);
    return rc;
}

/* Runs a statement that returns no rows. */
int rks_exec_params(rks_store *s, const char *sql, const rks_params *p, const char *what,
                    rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = rks_statement(s, sql, p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step != SQLITE_DONE)
        rc = rks_db_err(s, err, step, what);
done:
    sqlite3_finalize(st);
    return rc;
}

/* The first column of the first row, or 0 when there is no row or it is NULL. */
int rks_int_query(rks_store *s, const char *sql, const rks_params *p, int64_t *out, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = 0;
    int rc = rks_statement(s, sql, p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else if (step != SQLITE_DONE)
        rc = rks_db_err(s, err, step, "reading");
done:
    sqlite3_finalize(st);
    return rc;
}

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

/* Durability settings (docs/OPERATIONS.md): WAL must really be on, or refuse to run. */
static int configure(rks_store *s, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, "PRAGMA journal_mode = WAL", &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    const char *mode = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (step != SQLITE_ROW)
        rc = rks_db_err(s, err, step, "turning on WAL");
    else if (!mode || strcmp(mode, "wal") != 0)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "the database refused WAL mode (it is in %s "
                          "mode); put it on a local file system",
                          mode ? mode : "an unknown");
    rc = rc ? rc : rks_exec(s, "PRAGMA synchronous = FULL", "setting synchronous=FULL", err);
    rc = rc ? rc : rks_exec(s, "PRAGMA foreign_keys = ON", "turning on foreign keys", err);
done:
    sqlite3_finalize(st);
    return rc;
}

int rks_open_db(rks_store *s, const char *path, int flags, rk_error *err)
{
    int rc = sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        return rk_error_set(err, rks_map_rc(rc) == RK_ENOMEM ? RK_ENOMEM : RKD_STORE_EUNAVAILABLE,
                            NULL, "cannot open the database %s: %s", path,
                            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    return RK_OK;
}

static int connect_db(rks_store *s, const char *path, rk_error *err)
{
    return rks_open_db(s, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err);
}

/* ---- Write transactions ---- */

/* SQLite opens a file it may not write read-only, and the connection stays so; once the file is
 * writable again only a new connection can write, and making it here lets writes recover without
 * a restart. While the file stays read-only, each write attempt costs one open(). */
static int writable(rks_store *s, rk_error *err)
{
    if (sqlite3_db_readonly(s->db, "main") != 1)
        return RK_OK;
    sqlite3 *old = s->db;
    int rc = connect_db(s, s->path, err);
    if (rc == RK_OK && sqlite3_db_readonly(s->db, "main") != 0)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "the database file %s is read-only: nothing was changed; writes work "
                          "again once it is writable, reads go on meanwhile",
                          s->path);
    rc = rc ? rc : configure(s, err);
    sqlite3_close(rc == RK_OK ? old : s->db);
    if (rc != RK_OK)
        s->db = old;
    return rc;
}

int rks_begin(rks_store *s, rk_error *err)
{
    int rc = writable(s, err);
    return rc ? rc : rks_exec(s, "BEGIN IMMEDIATE", "starting a write transaction", err);
}

/* Commits when rc is RK_OK, rolls back otherwise; returns the outcome. */
int rks_finish(rks_store *s, int rc, rk_error *err)
{
    if (rc == RK_OK)
        rc = rks_exec(s, "COMMIT", "committing", err);
    if (rc != RK_OK && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* the error already says why */
    return rc;
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
    rc = rc ? rc : connect_db(s, path, err);
    rc = rc ? rc : rks_check_identity(s, path, &set, err);
    rc = rc ? rc : configure(s, err);
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
    .get_job = rks_get_job,
    .put_job = rks_put_job,
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

rkd_store *rkd_store_open_sqlite(const char *path, const char *migrations_dir, rk_error *err)
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
    if (open_store(s, path, migrations_dir, err) == RK_OK)
        return rkd_store_new(&sqlite_ops, s, err);
    close_db(s);
    return NULL;
}
