/* store_window.c — the cutover's (docs/API.md) migration window in the SQLite store (migration
 * 0006): opening one inside an activation's transaction, refusing activations while one is open,
 * and closing it with its "finish" event in one transaction. */
#include <stdio.h>
#include <stdlib.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

static const char sql_window[] =
    "SELECT w.version, w.previous, v.fingerprint FROM migration_windows w LEFT JOIN versions v ON "
    "v.cluster_id = w.cluster_id AND v.version = w.previous WHERE w.cluster_id = :cid";
/* Opens a window where the cluster's policy asks for one, or for a rollout's step (:always) unless
 * the policy pre-warms instead; a first activation has nothing to keep (:previous 0). */
static const char sql_open[] =
    "INSERT INTO migration_windows (cluster_id, version, previous, opened_at, opened_by) SELECT "
    ":cid, :v, :previous, :now, :author WHERE :previous > 0 AND ((:always AND NOT EXISTS (SELECT "
    "1 FROM policies WHERE cluster_id = :cid AND prewarm = 1)) OR EXISTS (SELECT 1 FROM policies "
    "WHERE cluster_id = :cid AND migration_window = 1))";
static const char sql_close[] = "DELETE FROM migration_windows WHERE cluster_id = :cid";

/* The open window of cluster p->cid: *open is its version (0: none), *previous the one kept and
 * `fingerprint` (if not NULL) that one's. */
static int window_locked(rks_store *s, const rks_params *p, int64_t *open, int64_t *previous,
                         char *fingerprint, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    *open = *previous = 0;
    int rc = rks_statement(s, sql_window, p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_DONE;
    const unsigned char *fp = NULL;
    if (step == SQLITE_ROW) {
        *open = sqlite3_column_int64(st, 0);
        *previous = sqlite3_column_int64(st, 1);
        fp = sqlite3_column_text(st, 2);
    } else if (step != SQLITE_DONE) {
        rc = rks_db_err(s, err, step, "reading the migration window");
    }
    if (fingerprint)
        snprintf(fingerprint, RKD_STORE_FP_LEN, "%s", fp ? (const char *)fp : "");
    sqlite3_finalize(st);
    return rc;
}

int rks_window_kept_locked(rks_store *s, const rks_params *p, int64_t *previous,
                           char fingerprint[RKD_STORE_FP_LEN], rk_error *err)
{
    int64_t open = 0;
    return window_locked(s, p, &open, previous, fingerprint, err);
}

int rks_check_window_locked(rks_store *s, const rks_params *p, rk_error *err)
{
    int64_t open = 0, previous = 0;
    int rc = window_locked(s, p, &open, &previous, NULL, err);
    return rc ? rc : rkd_store_check_window(p->cluster, open, previous, err);
}

int rks_open_window_locked(rks_store *s, const rks_params *p, int64_t previous, int always,
                           const char *author, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = rks_statement(s, sql_open, p, &st, err);
    int step = rc == RK_OK ? rks_bind_int(st, ":previous", previous) : SQLITE_OK;
    step = rc == RK_OK && step == SQLITE_OK ? rks_bind_int(st, ":always", always != 0) : step;
    step = rc == RK_OK && step == SQLITE_OK ? rks_bind_text(st, ":author", author) : step;
    step = rc == RK_OK && step == SQLITE_OK ? sqlite3_step(st) : step;
    if (rc == RK_OK && step != SQLITE_DONE)
        rc = rks_db_err(s, err, step, "opening the migration window");
    sqlite3_finalize(st);
    return rc;
}

/* Closes the window of p->cluster with its event; p->v becomes the active version. */
static int finish_locked(rks_store *s, rks_params *p, const char *author, const char *comment,
                         rk_error *err)
{
    int64_t previous = 0;
    int rc = rks_int_query(s, rks_sql_cluster_id, p, &p->cid, err);
    if (rc == RK_OK && p->cid == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, p->cluster, 0);
    rc = rc ? rc : window_locked(s, p, &p->v, &previous, NULL, err);
    if (rc == RK_OK && p->v == 0)
        rc = rkd_store_no_window(p->cluster, err);
    rc = rc ? rc : rks_exec_params(s, sql_close, p, "closing the migration window", err);
    rks_event e = {.kind = "finish",
                   .author = author,
                   .version = p->v,
                   .from_version = previous,
                   .moved_fraction = -1,
                   .detail = comment};
    return rc ? rc : rks_add_event(s, p->cid, &e, p->now, err);
}

int rks_finish_migration(void *b, const char *cluster, const char *author, const char *comment,
                         const char *now, rkd_store_version **out, char **doc, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .now = now};
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : finish_locked(s, &p, author, comment, err);
    rc = rc ? rc : rks_fetch_locked(s, RKD_PICK_ACTIVE, &p, out, doc, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
