/* store_docs.c — a cluster's documents in the SQLite store: the migration job (SPEC 10,
 * migration 0007, table migration_jobs), the rollout (SPEC 11, migration 0009, table rollouts)
 * and the load profile (docs/LOAD.md, migration 0011, table load_profiles), one row per cluster
 * with a revision, read, and written by compare and set with its event in one transaction. Their
 * rules are migration_job.c's and rollout.c's; this file only keeps what they decide. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

/* Each kind's statements: read, and insert or replace. */
static const char *const sql_get[RKD_DOC_KINDS] = {
    [RKD_DOC_JOB] = "SELECT revision, doc FROM migration_jobs WHERE cluster_id = :cid",
    [RKD_DOC_ROLLOUT] = "SELECT revision, doc FROM rollouts WHERE cluster_id = :cid",
    [RKD_DOC_LOAD] = "SELECT revision, doc FROM load_profiles WHERE cluster_id = :cid",
};
static const char *const sql_put[RKD_DOC_KINDS] = {
    [RKD_DOC_JOB] = "INSERT INTO migration_jobs (cluster_id, revision, doc) VALUES (:cid, :v, "
                    ":doc) ON CONFLICT (cluster_id) DO UPDATE SET revision = excluded.revision, "
                    "doc = excluded.doc",
    [RKD_DOC_ROLLOUT] = "INSERT INTO rollouts (cluster_id, revision, doc) VALUES (:cid, :v, :doc) "
                        "ON CONFLICT (cluster_id) DO UPDATE SET revision = excluded.revision, "
                        "doc = excluded.doc",
    [RKD_DOC_LOAD] = "INSERT INTO load_profiles (cluster_id, revision, doc) VALUES (:cid, :v, "
                     ":doc) ON CONFLICT (cluster_id) DO UPDATE SET revision = excluded.revision, "
                     "doc = excluded.doc",
};

/* The document of cluster p->cid (s->lock held): *rev 0 and *doc NULL when there is none. */
static int doc_locked(rks_store *s, rkd_store_doc_kind kind, const rks_params *p, char **doc,
                      int64_t *rev, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    char what[48];
    int rc = rks_statement(s, sql_get[kind], p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_DONE;
    if (step == SQLITE_ROW) {
        *rev = sqlite3_column_int64(st, 0);
        rc = rkd_store_strdup((const char *)sqlite3_column_text(st, 1), doc, err);
    } else if (step != SQLITE_DONE) {
        snprintf(what, sizeof what, "reading the %s", rkd_store_doc_name(kind));
        rc = rks_db_err(s, err, step, what);
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

int rks_get_doc(void *b, rkd_store_doc_kind kind, const char *cluster, char **doc, int64_t *rev,
                rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster};
    pthread_mutex_lock(&s->lock);
    int rc = cluster_locked(s, &p, err);
    rc = rc ? rc : doc_locked(s, kind, &p, doc, rev, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int write_locked(rks_store *s, rkd_store_doc_kind kind, rks_params *p, const char *doc,
                        int64_t rev, const rkd_store_doc_event *e, rk_error *err)
{
    char *had = NULL, what[48];
    int64_t have = 0;
    int rc = cluster_locked(s, p, err);
    rc = rc ? rc : doc_locked(s, kind, p, &had, &have, err);
    free(had);
    if (rc == RK_OK && have != rev)
        rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                          "cluster %s: the %s changed meanwhile (revision %lld, not %lld)",
                          p->cluster, rkd_store_doc_name(kind), (long long)have, (long long)rev);
    sqlite3_stmt *st = NULL;
    p->v = rev + 1;
    rc = rc ? rc : rks_statement(s, sql_put[kind], p, &st, err);
    int step = rc == RK_OK ? rks_bind_text(st, ":doc", doc) : SQLITE_OK;
    step = rc == RK_OK && step == SQLITE_OK ? sqlite3_step(st) : step;
    if (rc == RK_OK && step != SQLITE_DONE) {
        snprintf(what, sizeof what, "writing the %s", rkd_store_doc_name(kind));
        rc = rks_db_err(s, err, step, what);
    }
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

int rks_put_doc(void *b, rkd_store_doc_kind kind, const char *cluster, const char *doc, int64_t rev,
                const rkd_store_doc_event *e, const char *now, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .now = now};
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : write_locked(s, kind, &p, doc, rev, e, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int rks_gate_view_locked(rks_store *s, const rks_params *p, int64_t active, const rk_ring *ring,
                         const rkd_store_gate *gate, double *moved, rk_error *err)
{
    rkd_store_gate_view view = {.cluster = p->cluster, .active = active, .ring = ring};
    char fingerprint[RKD_STORE_FP_LEN], *rollout = NULL;
    int64_t rev = 0;
    if (!gate)
        return RK_OK;
    int rc = rks_window_kept_locked(s, p, &view.previous, fingerprint, err);
    rc = rc ? rc : rks_policy_locked(s, p->cid, &view.policy, err);
    rc = rc ? rc : doc_locked(s, RKD_DOC_ROLLOUT, p, &rollout, &rev, err);
    view.rollout = rollout;
    rc = rc ? rc : rkd_store_run_gate(gate, &view, moved, err);
    free(rollout);
    return rc;
}
