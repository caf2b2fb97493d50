/* store_events.c — The cutover (docs/API.md) in the SQLite store: policies, approvals and the audit
 * of events (migration 0005). Every event is written inside the transaction of the change it
 * records, by the operation making that change, so the audit and the versions cannot disagree after
 * a crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

static const char sql_policy[] =
    "SELECT max_moved_fraction, max_balance_after, approvals, distinct_approver, migration_window, "
    "prewarm, max_moved_bytes FROM policies WHERE cluster_id = :cid";
static const char sql_put_policy[] =
    "INSERT INTO policies (cluster_id, max_moved_fraction, max_balance_after, approvals, "
    "distinct_approver, migration_window, prewarm, max_moved_bytes) VALUES (:cid, :moved, "
    ":balance, :approvals, :distinct, :window, :prewarm, :bytes) ON CONFLICT (cluster_id) DO "
    "UPDATE SET max_moved_fraction = excluded.max_moved_fraction, max_balance_after = "
    "excluded.max_balance_after, approvals = excluded.approvals, distinct_approver = "
    "excluded.distinct_approver, migration_window = excluded.migration_window, prewarm = "
    "excluded.prewarm, max_moved_bytes = excluded.max_moved_bytes";
static const char sql_event[] =
    "INSERT INTO events (cluster_id, event, kind, at, author, version, from_version, digest, "
    "moved_fraction, detail) VALUES (:cid, (SELECT COALESCE(MAX(event), 0) + 1 FROM events WHERE "
    "cluster_id = :cid), :kind, :now, :author, :version, :from, :digest, :moved, :detail)";
static const char sql_events[] =
    "SELECT event, kind, at, author, version, from_version, digest, moved_fraction, detail FROM "
    "events WHERE cluster_id = :cid AND event < :v ORDER BY event DESC LIMIT :limit";
static const char sql_version_row[] =
    "SELECT fingerprint, author FROM versions WHERE cluster_id = :cid AND version = :v";
/* Approvals of the plan by anyone but `excluded` (the author, under distinct_approver). */
static const char sql_count_approvals[] =
    "SELECT COUNT(*) FROM approvals WHERE cluster_id = :cid AND version = :v AND digest = :digest "
    "AND approver IS NOT :excluded";
static const char sql_approve[] =
    "INSERT INTO approvals (cluster_id, version, digest, approver, comment, created_at) VALUES "
    "(:cid, :v, :digest, :approver, :comment, :now) ON CONFLICT DO NOTHING";
static int bind_real(sqlite3_stmt *st, const char *name, double val, int null)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0)
        return SQLITE_OK;
    return null ? sqlite3_bind_null(st, i) : sqlite3_bind_double(st, i, val);
}

/* Runs a prepared statement that returns no rows, then finalizes it. */
static int step_done(rks_store *s, sqlite3_stmt *st, int bound, const char *what, rk_error *err)
{
    int rc = bound == SQLITE_OK ? sqlite3_step(st) : bound;
    int out = rc == SQLITE_DONE ? RK_OK : rks_db_err(s, err, rc, what);
    sqlite3_finalize(st);
    return out;
}

int rks_add_event(rks_store *s, int64_t cid, const rks_event *e, const char *now, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rks_params p = {.cid = cid, .now = now};
    int rc = rks_statement(s, sql_event, &p, &st, err);
    if (rc != RK_OK) {
        sqlite3_finalize(st);
        return rc;
    }
    int b = rks_bind_text(st, ":kind", e->kind);
    b = b ? b : rks_bind_text(st, ":author", e->author);
    b = b ? b : (e->version ? rks_bind_int(st, ":version", e->version) : SQLITE_OK);
    b = b ? b : (e->from_version ? rks_bind_int(st, ":from", e->from_version) : SQLITE_OK);
    b = b ? b : rks_bind_text(st, ":digest", e->digest && e->digest[0] ? e->digest : NULL);
    b = b ? b : bind_real(st, ":moved", e->moved_fraction, e->moved_fraction < 0);
    b = b ? b : rks_bind_text(st, ":detail", e->detail);
    return step_done(s, st, b, "recording the event", err);
}

/* The cluster's id, or RKD_STORE_ENOCLUSTER. */
static int cluster_id(rks_store *s, rks_params *p, rk_error *err)
{
    int rc = rks_int_query(s, rks_sql_cluster_id, p, &p->cid, err);
    if (rc == RK_OK && p->cid == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, p->cluster, 0);
    return rc;
}

int rks_policy_locked(rks_store *s, int64_t cid, rkd_store_policy *out, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rks_params p = {.cid = cid};
    *out = RKD_STORE_POLICY_DEFAULTS;
    int rc = rks_statement(s, sql_policy, &p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_DONE;
    if (step == SQLITE_ROW) {
        out->max_moved_fraction = sqlite3_column_double(st, 0);
        out->max_balance_after = sqlite3_column_double(st, 1); /* NULL reads as 0: no limit */
        out->approvals = sqlite3_column_int64(st, 2);
        out->distinct_approver = sqlite3_column_int(st, 3);
        out->migration_window = sqlite3_column_int(st, 4);
        out->prewarm = sqlite3_column_int(st, 5);
        out->max_moved_bytes = sqlite3_column_int64(st, 6);
    } else if (step != SQLITE_DONE) {
        rc = rks_db_err(s, err, step, "reading the policy");
    }
    sqlite3_finalize(st);
    return rc;
}

/* Version v's fingerprint and author (NULL when none; the caller frees it). */
static int version_row(rks_store *s, int64_t cid, int64_t v, char fp[RKD_STORE_FP_LEN],
                       char **author, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rks_params p = {.cid = cid, .v = v};
    *author = NULL;
    fp[0] = '\0';
    int rc = rks_statement(s, sql_version_row, &p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_ROW;
    if (rc == RK_OK && step != SQLITE_ROW)
        rc = rks_db_err(s, err, step, "reading a version");
    if (rc == RK_OK) {
        const unsigned char *text = sqlite3_column_text(st, 0);
        snprintf(fp, RKD_STORE_FP_LEN, "%s", text ? (const char *)text : "");
        rc = rkd_store_strdup((const char *)sqlite3_column_text(st, 1), author, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int rks_plan_locked(rks_store *s, int64_t cid, int64_t active, int64_t v, rks_plan_state *out,
                    rk_error *err)
{
    char active_fp[RKD_STORE_FP_LEN] = "", v_fp[RKD_STORE_FP_LEN];
    char *ignored = NULL;
    int rc = active ? version_row(s, cid, active, active_fp, &ignored, err) : RK_OK;
    free(ignored);
    rc = rc ? rc : version_row(s, cid, v, v_fp, &out->author, err);
    rc = rc ? rc : rks_policy_locked(s, cid, &out->policy, err);
    if (rc == RK_OK)
        rkd_store_digest(active, active_fp, v, v_fp, out->digest);
    return rc;
}

int rks_gate_locked(rks_store *s, const char *cluster, int64_t cid, int64_t active, int64_t v,
                    int rollout, char digest[RK_PLAN_DIGEST_LEN], rk_error *err)
{
    rks_plan_state plan = {0};
    sqlite3_stmt *st = NULL;
    rks_params p = {.cid = cid, .v = v};
    int64_t have = 0;
    int rc = rks_plan_locked(s, cid, active, v, &plan, err);
    if (rollout)
        plan.policy.approvals = 0;
    if (rc == RK_OK && plan.policy.approvals > 0) {
        rc = rks_statement(s, sql_count_approvals, &p, &st, err);
        int b = rc ? SQLITE_OK : rks_bind_text(st, ":digest", plan.digest);
        b = b ? b
              : rks_bind_text(st, ":excluded", plan.policy.distinct_approver ? plan.author : NULL);
        int step = rc ? SQLITE_ROW : b ? b : sqlite3_step(st);
        if (rc == RK_OK && step != SQLITE_ROW)
            rc = rks_db_err(s, err, step, "counting approvals");
        have = rc == RK_OK ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
    }
    rc = rc ? rc
            : rkd_store_check_approvals(cluster, v, active, plan.digest, &plan.policy, have, err);
    memcpy(digest, plan.digest, RK_PLAN_DIGEST_LEN);
    free(plan.author);
    return rc;
}

/* ---- The operations of rkd_store_ops ---- */

int rks_get_policy(void *b, const char *cluster, rkd_store_policy *out, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster};
    pthread_mutex_lock(&s->lock);
    int rc = cluster_id(s, &p, err);
    rc = rc ? rc : rks_policy_locked(s, p.cid, out, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int rks_policy_row(rks_store *s, const rks_params *p, const rkd_store_policy *pol, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = rks_statement(s, sql_put_policy, p, &st, err);
    if (rc != RK_OK) {
        sqlite3_finalize(st);
        return rc;
    }
    int bd = bind_real(st, ":moved", pol->max_moved_fraction, 0);
    bd = bd ? bd : bind_real(st, ":balance", pol->max_balance_after, pol->max_balance_after == 0);
    bd = bd ? bd : rks_bind_int(st, ":approvals", pol->approvals);
    bd = bd ? bd : rks_bind_int(st, ":distinct", pol->distinct_approver ? 1 : 0);
    bd = bd ? bd : rks_bind_int(st, ":window", pol->migration_window ? 1 : 0);
    bd = bd ? bd : rks_bind_int(st, ":prewarm", pol->prewarm ? 1 : 0);
    bd = bd ? bd : rks_bind_int(st, ":bytes", pol->max_moved_bytes);
    return step_done(s, st, bd, "storing the policy", err);
}

static int put_policy_locked(rks_store *s, rks_params *p, const rkd_store_policy *pol,
                             const rks_event *e, rk_error *err)
{
    int rc = cluster_id(s, p, err);
    rc = rc ? rc : rks_policy_row(s, p, pol, err);
    return rc ? rc : rks_add_event(s, p->cid, e, p->now, err);
}

int rks_put_policy(void *b, const char *cluster, const rkd_store_policy *pol, const char *author,
                   const char *detail, const char *now, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .now = now};
    rks_event e = {.kind = "policy", .author = author, .moved_fraction = -1, .detail = detail};
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : put_policy_locked(s, &p, pol, &e, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int rks_insert_approval(rks_store *s, const rks_params *p, const char *digest, const char *approver,
                        const char *comment, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = rks_statement(s, sql_approve, p, &st, err);
    if (rc != RK_OK) {
        sqlite3_finalize(st);
        return rc;
    }
    int bd = rks_bind_text(st, ":digest", digest);
    bd = bd ? bd : rks_bind_text(st, ":approver", approver);
    bd = bd ? bd : rks_bind_text(st, ":comment", comment);
    return step_done(s, st, bd, "storing the approval", err);
}

static int approve_locked(rks_store *s, rks_params *p, const rkd_store_approval_req *a,
                          rk_error *err)
{
    int64_t latest = 0, active = 0;
    rks_plan_state plan = {0};
    int rc = cluster_id(s, p, err);
    rc = rc ? rc : rks_int_query(s, rks_sql_max_version, p, &latest, err);
    rc = rc ? rc : rks_int_query(s, rks_sql_active_version, p, &active, err);
    rc = rc ? rc : rkd_store_check_activation(p->cluster, p->v, latest, active, RKD_STORE_ANY, err);
    rc = rc ? rc : rks_plan_locked(s, p->cid, active, p->v, &plan, err);
    rc = rc ? rc
            : rkd_store_check_approval(p->cluster, p->v, a->digest, plan.digest, &plan.policy,
                                       plan.author, a->approver, err);
    rc = rc           ? rc
         : a->dry_run ? RKD_STORE_EDRYRUN
                      : rks_insert_approval(s, p, a->digest, a->approver, a->comment, err);
    rks_event e = {.kind = "approve",
                   .author = a->approver,
                   .version = p->v,
                   .from_version = active,
                   .digest = a->digest,
                   .moved_fraction = -1,
                   .detail = a->comment};
    rc = rc ? rc : rks_add_event(s, p->cid, &e, p->now, err);
    free(plan.author);
    return rc;
}

int rks_approve(void *b, const char *cluster, const rkd_store_approval_req *a, const char *now,
                rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .v = a->version, .now = now};
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : approve_locked(s, &p, a, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* ---- Listing events ---- */

static int row_to_event(sqlite3_stmt *st, rkd_store_event *e, rk_error *err)
{
    const unsigned char *kind = sqlite3_column_text(st, 1);
    const unsigned char *at = sqlite3_column_text(st, 2);
    const unsigned char *digest = sqlite3_column_text(st, 6);
    e->event = sqlite3_column_int64(st, 0);
    snprintf(e->kind, sizeof e->kind, "%s", kind ? (const char *)kind : "");
    snprintf(e->at, sizeof e->at, "%s", at ? (const char *)at : "");
    e->version = sqlite3_column_int64(st, 4);
    e->from_version = sqlite3_column_int64(st, 5);
    snprintf(e->digest, sizeof e->digest, "%s", digest ? (const char *)digest : "");
    e->moved_fraction =
        sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 7);
    int rc = rkd_store_strdup((const char *)sqlite3_column_text(st, 3), &e->author, err);
    return rc ? rc : rkd_store_strdup((const char *)sqlite3_column_text(st, 8), &e->detail, err);
}

/* Reads up to p->limit - 1 rows into out; one more row means there is another page. */
static int events_locked(rks_store *s, const rks_params *p, rkd_store_event_list *out,
                         rk_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t want = (size_t)p->limit - 1;
    out->items = calloc(want, sizeof *out->items);
    int rc = out->items ? rks_statement(s, sql_events, p, &st, err)
                        : rk_error_set(err, RK_ENOMEM, NULL, "out of memory listing events");
    while (rc == RK_OK && !out->next_before) {
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW)
            rc = rks_db_err(s, err, step, "listing events");
        else if (out->count == want)
            out->next_before = out->items[want - 1].event;
        else
            rc = row_to_event(st, &out->items[out->count++], err);
    }
    sqlite3_finalize(st);
    return rc;
}

int rks_list_events(void *b, const char *cluster, size_t limit, int64_t before,
                    rkd_store_event_list *out, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {
        .cluster = cluster, .v = before > 0 ? before : INT64_MAX, .limit = (int64_t)limit + 1};
    pthread_mutex_lock(&s->lock);
    int rc = cluster_id(s, &p, err);
    rc = rc ? rc : events_locked(s, &p, out, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
