/* store_sqlite_db.c — the SQLite backend's connection and what every file of it runs its SQL
 * with: errors mapped to the store's codes, statements with named parameters, the durability
 * settings, and write transactions (BEGIN IMMEDIATE on a connection made writable again when the
 * file became so).
 *
 * One connection per store, used under a mutex. SQLite admits one writer at a time anyway, so a
 * pool would only help readers, and reads here are short indexed lookups: the expensive parts
 * (building the ring for the fingerprint, serialising and parsing topologies) run outside the lock.
 * Writes use BEGIN IMMEDIATE, which takes the database's write lock before reading the latest
 * version number, so numbering has no gaps or duplicates across handles and processes too; the
 * busy timeout makes a second writer wait for the first instead of failing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Durability settings (docs/OPERATIONS.md): WAL must really be on, or refuse to run. */
int rks_configure(rks_store *s, rk_error *err)
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

int rks_connect(rks_store *s, const char *path, rk_error *err)
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
    int rc = rks_connect(s, s->path, err);
    if (rc == RK_OK && sqlite3_db_readonly(s->db, "main") != 0)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "the database file %s is read-only: nothing was changed; writes work "
                          "again once it is writable, reads go on meanwhile",
                          s->path);
    rc = rc ? rc : rks_configure(s, err);
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
