/* store_reads.c — reading the SQLite store: one version (with the migration window over it), the
 * pages of a cluster's versions, and the clusters, as rkd_store_ops get, list and list_clusters;
 * and the queries the writing files share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

#define VERSION_COLS                                                                               \
    "c.name, v.version, v.state, v.created_at, v.activated_at, v.author, v.comment, v.hash, "      \
    "v.vnode_factor, v.points, v.fingerprint, v.scheme"
#define COL_TOPOLOGY 12 /* after VERSION_COLS in the single-version queries */

/* The LEFT JOIN tells an unknown cluster (no row) from a missing version (NULL version); the
 * window's join adds the previous version while a migration window is open over this one. */
#define WINDOW_COLS ", v.topology, w.previous, pv.fingerprint FROM clusters c LEFT JOIN versions v "
#define WINDOW_JOIN                                                                                \
    " LEFT JOIN migration_windows w ON w.cluster_id = c.id AND w.version = v.version LEFT JOIN "   \
    "versions pv ON pv.cluster_id = c.id AND pv.version = w.previous WHERE c.name = :cluster"
#define COL_PREVIOUS    13 /* after the topology */
#define COL_PREVIOUS_FP 14
static const char sql_get[] =
    "SELECT " VERSION_COLS WINDOW_COLS "ON v.cluster_id = c.id AND v.version = :v" WINDOW_JOIN;
static const char sql_active[] =
    "SELECT " VERSION_COLS WINDOW_COLS "ON v.cluster_id = c.id AND v.state = 'active'" WINDOW_JOIN;
static const char sql_latest[] = "SELECT " VERSION_COLS WINDOW_COLS
                                 "ON v.cluster_id = c.id AND v.version = (SELECT MAX(version) "
                                 "FROM versions WHERE cluster_id = c.id)" WINDOW_JOIN;
static const char sql_list[] = "SELECT " VERSION_COLS " FROM versions v JOIN clusters c ON c.id = "
                               "v.cluster_id WHERE v.cluster_id = :cid AND v.version < :v "
                               "ORDER BY v.version DESC LIMIT :limit";
static const char sql_clusters[] =
    "SELECT c.name, COALESCE((SELECT version FROM versions WHERE cluster_id = c.id AND state = "
    "'active'), 0), COALESCE((SELECT MAX(version) FROM versions WHERE cluster_id = c.id), 0) "
    "FROM clusters c WHERE c.name > :cluster ORDER BY c.name LIMIT :limit";
const char rks_sql_cluster_id[] = "SELECT id FROM clusters WHERE name = :cluster";
const char rks_sql_max_version[] =
    "SELECT COALESCE(MAX(version), 0) FROM versions WHERE cluster_id = :cid";
const char rks_sql_active_version[] =
    "SELECT COALESCE(MAX(version), 0) FROM versions WHERE cluster_id = :cid AND state = 'active'";
/* ---- Reading versions ---- */

static void copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *text = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", text ? (const char *)text : "");
}

static int dup_col(sqlite3_stmt *st, int col, char **dst, rk_error *err)
{
    return rkd_store_strdup((const char *)sqlite3_column_text(st, col), dst, err);
}

static int parse_state(const char *name, rkd_store_state *out)
{
    for (int i = RKD_STATE_STAGED; i <= RKD_STATE_SUPERSEDED; i++) {
        if (name && strcmp(name, rkd_store_state_name((rkd_store_state)i)) == 0) {
            *out = (rkd_store_state)i;
            return RK_OK;
        }
    }
    return RK_EINVAL;
}

/* Fills `rec` from a row of VERSION_COLS. */
static int row_to_version(sqlite3_stmt *st, rkd_store_version *rec, rk_error *err)
{
    rec->version = sqlite3_column_int64(st, 1);
    copy_col(rec->created_at, sizeof rec->created_at, st, 3);
    copy_col(rec->activated_at, sizeof rec->activated_at, st, 4);
    rec->vnode_factor = (uint32_t)sqlite3_column_int64(st, 8);
    rec->points = (uint64_t)sqlite3_column_int64(st, 9);
    copy_col(rec->fingerprint, sizeof rec->fingerprint, st, 10);
    int rc = dup_col(st, 0, &rec->cluster, err);
    rc = rc ? rc : dup_col(st, 5, &rec->author, err);
    rc = rc ? rc : dup_col(st, 6, &rec->comment, err);
    if (rc != RK_OK)
        return rc;
    if (parse_state((const char *)sqlite3_column_text(st, 2), &rec->state) != RK_OK ||
        rk_scheme_from_name((const char *)sqlite3_column_text(st, 11), &rec->scheme) != RK_OK ||
        rk_hash_from_scheme_name(rec->scheme, (const char *)sqlite3_column_text(st, 7),
                                 &rec->hash) != RK_OK)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                            "cluster %s version %lld is damaged in the "
                            "database: unknown state, scheme or hash",
                            rec->cluster, (long long)rec->version);
    return RK_OK;
}

/* By one of sql_get/sql_active/sql_latest; the topology is parsed after the lock is released. */
int rks_fetch_locked(rks_store *s, rkd_store_pick pick, const rks_params *p,
                     rkd_store_version **out, char **doc, rk_error *err)
{
    static const char *const sql[] = {sql_get, sql_active, sql_latest};
    static const int missing[] = {RKD_STORE_ENOVERSION, RKD_STORE_ENOACTIVE, RKD_STORE_ENOVERSION};
    sqlite3_stmt *st = NULL;
    rkd_store_version *rec = NULL;
    int rc = rks_statement(s, sql[pick], p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step == SQLITE_DONE)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, p->cluster, p->v);
    else if (step != SQLITE_ROW)
        rc = rks_db_err(s, err, step, "reading a version");
    else if (sqlite3_column_type(st, 1) == SQLITE_NULL)
        rc = rkd_store_missing(err, missing[pick], p->cluster, p->v);
    if (rc != RK_OK)
        goto done;
    rec = calloc(1, sizeof *rec);
    rc = rec ? row_to_version(st, rec, err) : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rc = rc ? rc : dup_col(st, COL_TOPOLOGY, doc, err);
    if (rc == RK_OK) {
        rec->previous = sqlite3_column_int64(st, COL_PREVIOUS);
        copy_col(rec->previous_fingerprint, sizeof rec->previous_fingerprint, st, COL_PREVIOUS_FP);
    }
done:
    sqlite3_finalize(st);
    if (rc == RK_OK)
        *out = rec;
    else
        rkd_store_version_free(rec);
    return rc;
}

int rks_get(void *b, const char *cluster, rkd_store_pick pick, int64_t v, rkd_store_version **out,
            char **doc, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .v = pick == RKD_PICK_VERSION ? v : 0};
    pthread_mutex_lock(&s->lock);
    int rc = rks_fetch_locked(s, pick, &p, out, doc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* ---- Lists ---- */

/* Reads up to p->limit - 1 rows into out; one more row means there is another page. */
static int list_locked(rks_store *s, const rks_params *p, rkd_store_version_list *out,
                       rk_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t want = (size_t)p->limit - 1;
    int rc = RK_ENOMEM;
    out->items = calloc(want, sizeof *out->items);
    if (!out->items) {
        rk_error_set(err, rc, NULL, "out of memory listing versions");
        goto done;
    }
    rc = rks_statement(s, sql_list, p, &st, err);
    while (rc == RK_OK && !out->next_before) {
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW)
            rc = rks_db_err(s, err, step, "listing versions");
        else if (out->count == want)
            out->next_before = out->items[want - 1].version;
        else
            rc = row_to_version(st, &out->items[out->count++], err);
    }
done:
    sqlite3_finalize(st);
    return rc;
}

int rks_list(void *b, const char *cluster, size_t limit, int64_t before,
             rkd_store_version_list *out, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {
        .cluster = cluster, .v = before > 0 ? before : INT64_MAX, .limit = (int64_t)limit + 1};
    pthread_mutex_lock(&s->lock);
    int rc = rks_int_query(s, rks_sql_cluster_id, &p, &p.cid, err);
    if (rc == RK_OK && p.cid == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, 0);
    if (rc == RK_OK)
        rc = list_locked(s, &p, out, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Reads up to p->limit - 1 rows into out (allocated for them); one more row means there is another
 * page, which starts after the last name of this one. */
static int clusters_locked(rks_store *s, const rks_params *p, rkd_store_cluster_list *out,
                           rk_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t want = (size_t)p->limit - 1;
    out->items = calloc(want, sizeof *out->items);
    int rc = out->items ? rks_statement(s, sql_clusters, p, &st, err)
                        : rk_error_set(err, RK_ENOMEM, NULL, "out of memory listing clusters");
    while (rc == RK_OK && !out->next_after) {
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW) {
            rc = rks_db_err(s, err, step, "listing clusters");
        } else if (out->count == want) {
            rc = rkd_store_strdup(out->items[want - 1].name, &out->next_after, err);
        } else {
            rkd_store_cluster *c = &out->items[out->count];
            c->active_version = sqlite3_column_int64(st, 1);
            c->latest_version = sqlite3_column_int64(st, 2);
            rc = dup_col(st, 0, &c->name, err);
            out->count += rc == RK_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* The page is a range of the names' unique index (c.name > :cluster, LIMIT): its cost is the page,
 * not the store. */
int rks_list_clusters(void *b, size_t limit, const char *after, rkd_store_cluster_list *out,
                      rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = after, .limit = (int64_t)limit + 1};
    pthread_mutex_lock(&s->lock);
    int rc = clusters_locked(s, &p, out, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
