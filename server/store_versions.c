/* store_versions.c — clusters and versions in the SQLite store: reading one version, listing
 * versions and clusters, publishing (gap-free numbering), activating, and the activation watch.
 * The connection, statements and transactions come from store_sqlite.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#include "store_sqlite_internal.h"

#define VERSION_COLS                                                                               \
    "c.name, v.version, v.state, v.created_at, v.activated_at, v.author, v.comment, v.hash, "      \
    "v.vnode_factor, v.points, v.fingerprint"
#define COL_TOPOLOGY 11 /* after VERSION_COLS in the single-version queries */

/* The LEFT JOIN tells an unknown cluster (no row) from a missing version (NULL version). */
static const char sql_get[] = "SELECT " VERSION_COLS ", v.topology FROM clusters c LEFT JOIN "
                              "versions v ON v.cluster_id = c.id AND v.version = :v "
                              "WHERE c.name = :cluster";
static const char sql_active[] = "SELECT " VERSION_COLS ", v.topology FROM clusters c LEFT JOIN "
                                 "versions v ON v.cluster_id = c.id AND v.state = 'active' "
                                 "WHERE c.name = :cluster";
static const char sql_latest[] =
    "SELECT " VERSION_COLS ", v.topology FROM clusters c LEFT JOIN versions v ON v.cluster_id = "
    "c.id AND v.version = (SELECT MAX(version) FROM versions WHERE cluster_id = c.id) "
    "WHERE c.name = :cluster";
static const char sql_list[] = "SELECT " VERSION_COLS " FROM versions v JOIN clusters c ON c.id = "
                               "v.cluster_id WHERE v.cluster_id = :cid AND v.version < :v "
                               "ORDER BY v.version DESC LIMIT :limit";
static const char sql_clusters[] =
    "SELECT c.name, COALESCE((SELECT version FROM versions WHERE cluster_id = c.id AND state = "
    "'active'), 0), COALESCE((SELECT MAX(version) FROM versions WHERE cluster_id = c.id), 0) "
    "FROM clusters c ORDER BY c.name";
static const char sql_cluster_id[] = "SELECT id FROM clusters WHERE name = :cluster";
static const char sql_max_version[] =
    "SELECT COALESCE(MAX(version), 0) FROM versions WHERE cluster_id = :cid";
static const char sql_active_version[] =
    "SELECT COALESCE(MAX(version), 0) FROM versions WHERE cluster_id = :cid AND state = 'active'";
static const char sql_insert_version[] =
    "INSERT INTO versions (cluster_id, version, state, created_at, author, comment, hash, "
    "vnode_factor, points, fingerprint, topology) VALUES (:cid, :v, 'staged', :now, :author, "
    ":comment, :hash, :vnode_factor, :points, :fingerprint, :topology)";

static void now_rfc3339(char out[RKD_STORE_TIME_LEN])
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, RKD_STORE_TIME_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, RKD_STORE_TIME_LEN, "1970-01-01T00:00:00Z");
}

static int dup_str(const char *src, char **dst, rk_error *err)
{
    *dst = NULL;
    if (!src)
        return RK_OK;
    *dst = strdup(src);
    if (!*dst)
        return rks_set_err(err, RK_ENOMEM, "out of memory copying a string");
    return RK_OK;
}

static int check_cluster_arg(const char *cluster, rk_error *err)
{
    if (!cluster || !cluster[0])
        return rks_set_err(err, RK_EINVAL, "a cluster name is required");
    return RK_OK;
}

/* ---- Reading versions ---- */

static void copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *text = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", text ? (const char *)text : "");
}

static int dup_col(sqlite3_stmt *st, int col, char **dst, rk_error *err)
{
    return dup_str((const char *)sqlite3_column_text(st, col), dst, err);
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
        rk_hash_from_name((const char *)sqlite3_column_text(st, 7), &rec->hash) != RK_OK)
        return rks_set_err(err, RKD_STORE_EUNAVAILABLE,
                           "cluster %s version %lld is damaged in the "
                           "database: unknown state or hash",
                           rec->cluster, (long long)rec->version);
    return RK_OK;
}

static int missing_err(const rks_params *p, int missing, rk_error *err)
{
    if (missing == RKD_STORE_ENOACTIVE)
        return rks_set_err(err, missing, "cluster %s has no active version yet; activate one first",
                           p->cluster);
    if (missing == RKD_STORE_ENOVERSION)
        return rks_set_err(err, missing, "cluster %s has no version %lld", p->cluster,
                           (long long)p->v);
    return rks_set_err(err, RKD_STORE_ENOCLUSTER,
                       "there is no cluster named %s; publishing a version "
                       "creates it",
                       p->cluster);
}

/* One version by one of sql_get/sql_active/sql_latest: a new record (without its topology) and
 * a copy of the topology text, so that parsing happens after the lock is released. */
static int fetch_locked(rkd_store *s, const char *sql, const rks_params *p, int missing,
                        rkd_store_version **out, char **doc, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rkd_store_version *rec = NULL;
    int rc = rks_statement(s, sql, p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step == SQLITE_DONE)
        rc = missing_err(p, RKD_STORE_ENOCLUSTER, err);
    else if (step != SQLITE_ROW)
        rc = rks_db_err(s, err, step, "reading a version");
    else if (sqlite3_column_type(st, 1) == SQLITE_NULL)
        rc = missing_err(p, missing, err);
    if (rc != RK_OK)
        goto done;
    rec = calloc(1, sizeof *rec);
    rc = rec ? row_to_version(st, rec, err) : rks_set_err(err, RK_ENOMEM, "out of memory");
    rc = rc ? rc : dup_col(st, COL_TOPOLOGY, doc, err);
done:
    sqlite3_finalize(st);
    if (rc == RK_OK)
        *out = rec;
    else
        rkd_store_version_free(rec);
    return rc;
}

/* Parses the stored topology into rec; libringkeeper validates it again, so a damaged row is
 * reported instead of served. */
static int attach_topology(rkd_store_version *rec, const char *doc, rk_error *err)
{
    rk_error perr = {0};
    rec->topology = rk_topology_parse(doc ? doc : "", doc ? strlen(doc) : 0, &perr);
    if (rec->topology)
        return RK_OK;
    if (perr.code == RK_ENOMEM)
        return rks_set_err(err, RK_ENOMEM, "out of memory parsing a topology");
    return rks_set_err(err, RKD_STORE_EUNAVAILABLE,
                       "cluster %s version %lld is damaged in the database: "
                       "%s",
                       rec->cluster, (long long)rec->version, perr.message);
}

static int get_one(rkd_store *s, const char *sql, const rks_params *p, int missing,
                   rkd_store_version **out, rk_error *err)
{
    rk_error scratch;
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    *out = NULL;
    int rc = check_cluster_arg(p->cluster, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = fetch_locked(s, sql, p, missing, &rec, &doc, err);
    pthread_mutex_unlock(&s->lock);
    if (rc == RK_OK)
        rc = attach_topology(rec, doc, err);
    if (rc == RK_OK) {
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rkd_store_version_free(rec);
    return rc;
}

int rkd_store_get(rkd_store *s, const char *cluster, int64_t v, rkd_store_version **out,
                  rk_error *err)
{
    rks_params p = {.cluster = cluster, .v = v};
    return get_one(s, sql_get, &p, RKD_STORE_ENOVERSION, out, err);
}

int rkd_store_get_active(rkd_store *s, const char *cluster, rkd_store_version **out, rk_error *err)
{
    rks_params p = {.cluster = cluster};
    return get_one(s, sql_active, &p, RKD_STORE_ENOACTIVE, out, err);
}

int rkd_store_latest(rkd_store *s, const char *cluster, rkd_store_version **out, rk_error *err)
{
    rks_params p = {.cluster = cluster};
    return get_one(s, sql_latest, &p, RKD_STORE_ENOVERSION, out, err);
}

/* ---- Lists ---- */

/* Reads up to p->limit - 1 rows into out; one more row means there is another page. */
static int list_locked(rkd_store *s, const rks_params *p, rkd_store_version_list *out,
                       rk_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t want = (size_t)p->limit - 1;
    int rc = RK_ENOMEM;
    out->items = calloc(want, sizeof *out->items);
    if (!out->items) {
        rks_set_err(err, rc, "out of memory listing versions");
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

int rkd_store_list(rkd_store *s, const char *cluster, size_t limit, int64_t before,
                   rkd_store_version_list *out, rk_error *err)
{
    rk_error scratch;
    rks_params p = {
        .cluster = cluster, .v = before > 0 ? before : INT64_MAX, .limit = (int64_t)limit + 1};
    err = err ? err : &scratch;
    memset(out, 0, sizeof *out);
    int rc = check_cluster_arg(cluster, err);
    if (rc != RK_OK)
        return rc;
    if (limit < 1 || limit > RKD_STORE_LIST_MAX || before < 0)
        return rks_set_err(err, RK_EINVAL, "limit must be 1..%d and before a version number",
                           RKD_STORE_LIST_MAX);
    pthread_mutex_lock(&s->lock);
    rc = rks_int_query(s, sql_cluster_id, &p, &p.cid, err);
    if (rc == RK_OK && p.cid == 0)
        rc = missing_err(&p, RKD_STORE_ENOCLUSTER, err);
    if (rc == RK_OK)
        rc = list_locked(s, &p, out, err);
    pthread_mutex_unlock(&s->lock);
    if (rc != RK_OK)
        rkd_store_version_list_free(out);
    return rc;
}

static int append_cluster(sqlite3_stmt *st, rkd_store_cluster_list *out, size_t *cap, rk_error *err)
{
    if (out->count == *cap) {
        size_t n = *cap ? *cap * 2 : 16;
        rkd_store_cluster *items = realloc(out->items, n * sizeof *items);
        if (!items)
            return rks_set_err(err, RK_ENOMEM, "out of memory listing clusters");
        out->items = items;
        *cap = n;
    }
    rkd_store_cluster *c = &out->items[out->count];
    c->active_version = sqlite3_column_int64(st, 1);
    c->latest_version = sqlite3_column_int64(st, 2);
    int rc = dup_col(st, 0, &c->name, err);
    if (rc == RK_OK)
        out->count++;
    return rc;
}

int rkd_store_list_clusters(rkd_store *s, rkd_store_cluster_list *out, rk_error *err)
{
    rk_error scratch;
    sqlite3_stmt *st = NULL;
    rks_params p = {0};
    size_t cap = 0;
    err = err ? err : &scratch;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    int rc = rks_statement(s, sql_clusters, &p, &st, err);
    while (rc == RK_OK) {
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            break;
        if (step == SQLITE_ROW)
            rc = append_cluster(st, out, &cap, err);
        else
            rc = rks_db_err(s, err, step, "listing clusters");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    if (rc != RK_OK)
        rkd_store_cluster_list_free(out);
    return rc;
}

/* ---- Publishing and activating ---- */

static void notify(rkd_store *s, const char *cluster, int64_t version)
{
    uint64_t seq = atomic_fetch_add(&s->seq, 1) + 1;
    if (s->watch)
        s->watch(s->watch_arg, cluster, version, seq);
}

/* The state changes of an activation, inside the caller's transaction. Retiring first keeps the
 * one-active-version index satisfied at every statement. */
static int apply_activation(rkd_store *s, int64_t cid, int64_t v, const char *now, rk_error *err)
{
    static const char *const steps[] = {
        "UPDATE versions SET state = 'retired' WHERE cluster_id = :cid AND state = 'active'",
        "UPDATE versions SET state = 'superseded' WHERE cluster_id = :cid AND state = 'staged' "
        "AND version < :v",
        "UPDATE versions SET state = 'active', activated_at = :now WHERE cluster_id = :cid AND "
        "version = :v",
    };
    rks_params p = {.cid = cid, .v = v, .now = now};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc = rks_exec_params(s, steps[i], &p, "activating", err);
        if (rc != RK_OK)
            return rc;
    }
    return RK_OK;
}

/* A record for `t` with everything but the version number, and its JSON text in *doc. The ring
 * is built here, before any lock, for the fingerprint. */
static int new_record(const char *cluster, rk_topology *t, const char *author,
                      rkd_store_version **out, char **doc, rk_error *err)
{
    rkd_store_version *rec = calloc(1, sizeof *rec);
    rk_ring *ring = NULL;
    json_t *json = NULL;
    int rc = rec ? RK_OK : rks_set_err(err, RK_ENOMEM, "out of memory");
    if (rc != RK_OK)
        goto done;
    rec->topology = rk_topology_ref(t);
    rec->hash = rk_topology_hash(t);
    rec->vnode_factor = rk_topology_vnode_factor(t);
    rec->points = rk_topology_points(t);
    now_rfc3339(rec->created_at);
    rc = dup_str(cluster, &rec->cluster, err);
    rc = rc ? rc : dup_str(author, &rec->author, err);
    rc = rc ? rc : dup_str(rk_topology_comment(t), &rec->comment, err);
    ring = rc ? NULL : rk_ring_build(t, err);
    if (rc == RK_OK && !ring)
        rc = err->code;
    if (rc != RK_OK)
        goto done;
    snprintf(rec->fingerprint, sizeof rec->fingerprint, "%s", rk_ring_fingerprint_hex(ring));
    json = rk_topology_to_json(t);
    *doc = json ? json_dumps(json, JSON_COMPACT) : NULL;
    if (!*doc)
        rc = rks_set_err(err, RK_ENOMEM, "out of memory serialising the topology");
done:
    json_decref(json);
    rk_ring_free(ring);
    if (rc == RK_OK)
        *out = rec;
    else
        rkd_store_version_free(rec);
    return rc;
}

static int insert_version(rkd_store *s, int64_t cid, const rkd_store_version *rec, const char *doc,
                          rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rks_params p = {.cid = cid, .v = rec->version, .now = rec->created_at};
    int rc = rks_statement(s, sql_insert_version, &p, &st, err);
    if (rc != RK_OK)
        goto done;
    int b = rks_bind_text(st, ":author", rec->author);
    b = b ? b : rks_bind_text(st, ":comment", rec->comment);
    b = b ? b : rks_bind_text(st, ":hash", rk_hash_name(rec->hash));
    b = b ? b : rks_bind_int(st, ":vnode_factor", rec->vnode_factor);
    b = b ? b : rks_bind_int(st, ":points", (int64_t)rec->points);
    b = b ? b : rks_bind_text(st, ":fingerprint", rec->fingerprint);
    b = b ? b : rks_bind_text(st, ":topology", doc);
    b = b ? b : sqlite3_step(st);
    if (b != SQLITE_DONE)
        rc = rks_db_err(s, err, b, "storing the version");
done:
    sqlite3_finalize(st);
    return rc;
}

/* Numbers the version after the latest one inside the caller's BEGIN IMMEDIATE transaction:
 * holding the write lock from this read to the insert is what keeps numbers gap-free. */
static int publish_locked(rkd_store *s, rkd_store_version *rec, const char *doc,
                          const rkd_store_publish_opts *opt, rk_error *err)
{
    rks_params p = {.cluster = rec->cluster, .now = rec->created_at};
    int64_t latest = 0;
    int rc = rks_exec_params(s,
                             "INSERT INTO clusters (name, created_at) VALUES (:cluster, :now) "
                             "ON CONFLICT (name) DO NOTHING",
                             &p, "creating the cluster", err);
    rc = rc ? rc : rks_int_query(s, sql_cluster_id, &p, &p.cid, err);
    rc = rc ? rc : rks_int_query(s, sql_max_version, &p, &latest, err);
    if (rc != RK_OK)
        return rc;
    if (opt->if_match_latest != RKD_STORE_ANY && opt->if_match_latest != latest)
        return rks_set_err(err, RKD_STORE_EPRECONDITION,
                           "cluster %s: the latest version is %lld, not "
                           "%lld; fetch it, review, and publish again",
                           rec->cluster, (long long)latest, (long long)opt->if_match_latest);
    rec->version = latest + 1;
    rc = insert_version(s, p.cid, rec, doc, err);
    if (rc != RK_OK || !opt->activate)
        return rc;
    rc = apply_activation(s, p.cid, rec->version, rec->created_at, err);
    rec->state = RKD_STATE_ACTIVE;
    memcpy(rec->activated_at, rec->created_at, sizeof rec->activated_at);
    return rc;
}

int rkd_store_publish(rkd_store *s, const char *cluster, rk_topology *t,
                      const rkd_store_publish_opts *opt, rkd_store_version **out, rk_error *err)
{
    static const rkd_store_publish_opts defaults = {NULL, RKD_STORE_ANY, 0};
    rk_error scratch;
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    opt = opt ? opt : &defaults;
    *out = NULL;
    int rc = check_cluster_arg(cluster, err);
    if (rc == RK_OK && !t)
        rc = rks_set_err(err, RK_EINVAL, "a topology is required");
    rc = rc ? rc : new_record(cluster, t, opt->author, &rec, &doc, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = rks_begin(s, err);
    rc = rc ? rc : publish_locked(s, rec, doc, opt, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    if (rc == RK_OK && opt->activate)
        notify(s, cluster, rec->version);
    if (rc == RK_OK) {
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rkd_store_version_free(rec);
    return rc;
}

/* Checks in HTTP's order: existence (404), then the precondition (412), then the state (409). */
static int activate_locked(rkd_store *s, rks_params *p, int64_t if_match, rk_error *err)
{
    int64_t exists = 0, active = 0;
    int rc = rks_int_query(s, sql_cluster_id, p, &p->cid, err);
    if (rc == RK_OK && p->cid == 0)
        rc = missing_err(p, RKD_STORE_ENOCLUSTER, err);
    rc = rc ? rc : rks_int_query(s, sql_max_version, p, &exists, err);
    rc = rc ? rc : rks_int_query(s, sql_active_version, p, &active, err);
    if (rc == RK_OK && (p->v < 1 || p->v > exists))
        rc = missing_err(p, RKD_STORE_ENOVERSION, err);
    if (rc != RK_OK)
        return rc;
    if (if_match != RKD_STORE_ANY && if_match != active)
        return rks_set_err(err, RKD_STORE_EPRECONDITION,
                           "cluster %s: the active version is %lld, not "
                           "%lld",
                           p->cluster, (long long)active, (long long)if_match);
    if (p->v <= active)
        return rks_set_err(err, RKD_STORE_ECONFLICT,
                           "cluster %s: version %lld is not newer than the "
                           "active version %lld; to roll back, revert to it and activate the copy",
                           p->cluster, (long long)p->v, (long long)active);
    return apply_activation(s, p->cid, p->v, p->now, err);
}

int rkd_store_activate(rkd_store *s, const char *cluster, int64_t v, int64_t if_match_active,
                       rkd_store_version **out, rk_error *err)
{
    rk_error scratch;
    char now[RKD_STORE_TIME_LEN];
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    *out = NULL;
    now_rfc3339(now);
    rks_params p = {.cluster = cluster, .v = v, .now = now};
    int rc = check_cluster_arg(cluster, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = rks_begin(s, err);
    rc = rc ? rc : activate_locked(s, &p, if_match_active, err);
    rc = rc ? rc : fetch_locked(s, sql_get, &p, RKD_STORE_ENOVERSION, &rec, &doc, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    if (rc == RK_OK)
        notify(s, cluster, v);
    rc = rc ? rc : attach_topology(rec, doc, err);
    if (rc == RK_OK) {
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rkd_store_version_free(rec);
    return rc;
}

/* ---- Watching ---- */

uint64_t rkd_store_watch_seq(rkd_store *s)
{
    return atomic_load(&s->seq);
}

void rkd_store_set_watch(rkd_store *s, rkd_store_watch_fn fn, void *arg)
{
    s->watch = fn;
    s->watch_arg = arg;
}
