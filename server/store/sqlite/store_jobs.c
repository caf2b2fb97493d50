/* store_jobs.c — the migration job (SPEC 10, migration 0007) in the SQLite store: one document per
 * cluster with a revision, read, and written by compare and set with its event in one
 * transaction. The job's rules are migration_job.c's; this file only keeps what they decide. */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

static const char sql_job[] = "SELECT revision, doc FROM migration_jobs WHERE cluster_id = :cid";
static const char sql_put_job[] =
    "INSERT INTO migration_jobs (cluster_id, revision, doc) VALUES (:cid, :v, :doc) ON CONFLICT "
    "(cluster_id) DO UPDATE SET revision = excluded.revision, doc = excluded.doc";

/* The job of cluster p->cid (s->lock held): *rev 0 and *doc NULL when there is none. */
static int job_locked(rks_store *s, const rks_params *p, char **doc, int64_t *rev, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = rks_statement(s, sql_job, p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_DONE;
    if (step == SQLITE_ROW) {
        *rev = sqlite3_column_int64(st, 0);
        rc = rkd_store_strdup((const char *)sqlite3_column_text(st, 1), doc, err);
    } else if (step != SQLITE_DONE) {
        rc = rks_db_err(s, err, step, "reading the migration job");
    }
    sqlite3_finalize(st);
    return rc;
}

/* p->cid of p->cluster, or RKD_STORE_ENOCLUSTER. */
static int cluster_locked(rks_store *s, rks_params *p, rk_error *err)
{
    int rc = rks_int_query(s, rks_sql_cluster_id, p, &p->cid, err);
    if (rc == RK_OK && p->cid == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, p->cluster, 0);
    return rc;
}

int rks_get_job(void *b, const char *cluster, char **doc, int64_t *rev, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster};
    pthread_mutex_lock(&s->lock);
    int rc = cluster_locked(s, &p, err);
    rc = rc ? rc : job_locked(s, &p, doc, rev, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int write_locked(rks_store *s, rks_params *p, const char *doc, int64_t rev,
                        const rkd_store_job_event *e, rk_error *err)
{
    char *had = NULL;
    int64_t have = 0;
    int rc = cluster_locked(s, p, err);
    rc = rc ? rc : job_locked(s, p, &had, &have, err);
    free(had);
    if (rc == RK_OK && have != rev)
        rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                          "cluster %s: the migration job changed meanwhile (revision %lld, not "
                          "%lld)",
                          p->cluster, (long long)have, (long long)rev);
    sqlite3_stmt *st = NULL;
    p->v = rev + 1;
    rc = rc ? rc : rks_statement(s, sql_put_job, p, &st, err);
    int step = rc == RK_OK ? rks_bind_text(st, ":doc", doc) : SQLITE_OK;
    step = rc == RK_OK && step == SQLITE_OK ? sqlite3_step(st) : step;
    if (rc == RK_OK && step != SQLITE_DONE)
        rc = rks_db_err(s, err, step, "writing the migration job");
    sqlite3_finalize(st);
    if (rc != RK_OK || !e)
        return rc;
    rks_event ev = {.kind = e->kind,
                    .author = e->author,
                    .version = e->version,
                    .from_version = e->from_version,
                    .moved_fraction = -1,
                    .detail = e->detail};
    return rks_add_event(s, p->cid, &ev, p->now, err);
}

int rks_put_job(void *b, const char *cluster, const char *doc, int64_t rev,
                const rkd_store_job_event *e, const char *now, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .now = now};
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : write_locked(s, &p, doc, rev, e, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
