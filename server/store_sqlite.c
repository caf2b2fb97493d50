/* store_sqlite.c — the SQLite backend of store.h: schema migrations, gap-free version numbering,
 * activation, and the settings that make an acknowledged version durable (WAL, synchronous=FULL).
 *
 * One connection per rk_store, used under a mutex. SQLite admits one writer at a time anyway, so a
 * pool would only help readers, and reads here are short indexed lookups: the expensive parts
 * (building the ring for the fingerprint, serialising and parsing topologies) run outside the lock.
 * Writes still use BEGIN IMMEDIATE, which takes the database's write lock before reading the latest
 * version number, so numbering has no gaps or duplicates across handles and processes too; the
 * busy timeout makes a second writer wait for the first instead of failing. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#include "store.h"

#define RK_APPLICATION_ID   0x52696e67 /* "Ring": marks a ringkeeper database in the file header */
#define BUSY_TIMEOUT_MS     5000       /* a writer waits this long for another before giving up */
#define MAX_MIGRATIONS      1000       /* files NNNN_*.sql; more means a wrong directory */
#define MAX_MIGRATION_BYTES (1 << 20)  /* one migration file */

struct rk_store {
    sqlite3 *db;              /* the connection; used only under lock */
    pthread_mutex_t lock;     /* serialises use of db */
    atomic_uint_fast64_t seq; /* activations committed through this handle */
    rk_store_watch_fn watch;  /* called after each activation, or NULL */
    void *watch_arg;          /* its argument */
};

/* Named parameters a statement may use; bind_params binds those it has. */
typedef struct params {
    const char *cluster; /* :cluster */
    int64_t cid;         /* :cid, clusters.id */
    int64_t v;           /* :v, a version number */
    int64_t limit;       /* :limit */
    const char *now;     /* :now, RFC 3339 */
} params;

typedef struct migration {
    int number; /* NNNN of the file name */
    char *path; /* owned */
} migration;

typedef struct migration_set {
    migration *items; /* sorted by number */
    size_t count;     /* how many */
} migration_set;

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

static int set_err(rk_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_err(rk_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    err->code = code;
    err->field[0] = '\0';
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

/* A file that is not a database is not ours; anything else SQLite reports (busy, locked, I/O,
 * full disk, read-only) leaves the database unavailable for now. */
static int map_rc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOMEM:
        return RK_ENOMEM;
    case SQLITE_NOTADB:
        return RK_STORE_ENOTRK;
    default:
        return RK_STORE_EUNAVAILABLE;
    }
}

static int db_err(rk_store *s, rk_error *err, int rc, const char *what)
{
    return set_err(err, map_rc(rc), "database error while %s: %s", what, sqlite3_errmsg(s->db));
}

static void now_rfc3339(char out[RK_STORE_TIME_LEN])
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, RK_STORE_TIME_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, RK_STORE_TIME_LEN, "1970-01-01T00:00:00Z");
}

static int dup_str(const char *src, char **dst, rk_error *err)
{
    *dst = NULL;
    if (!src)
        return RK_OK;
    *dst = strdup(src);
    if (!*dst)
        return set_err(err, RK_ENOMEM, "out of memory copying a string");
    return RK_OK;
}

static int check_cluster_arg(const char *cluster, rk_error *err)
{
    if (!cluster || !cluster[0])
        return set_err(err, RK_EINVAL, "a cluster name is required");
    return RK_OK;
}

static int exec(rk_store *s, const char *sql, const char *what, rk_error *err)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return db_err(s, err, rc, what);
    return RK_OK;
}

static int prepare(rk_store *s, const char *sql, sqlite3_stmt **st, rk_error *err)
{
    int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return db_err(s, err, rc, "preparing a statement");
    return RK_OK;
}

/* Index 0 (a name the statement lacks) is skipped: one params struct serves every statement. */
static int bind_text(sqlite3_stmt *st, const char *name, const char *val)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0)
        return SQLITE_OK;
    if (!val)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, val, -1, SQLITE_TRANSIENT);
}

static int bind_int(sqlite3_stmt *st, const char *name, int64_t val)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i == 0)
        return SQLITE_OK;
    return sqlite3_bind_int64(st, i, val);
}

static int bind_params(rk_store *s, sqlite3_stmt *st, const params *p, rk_error *err)
{
    int rc = bind_text(st, ":cluster", p->cluster);
    rc = rc ? rc : bind_int(st, ":cid", p->cid);
    rc = rc ? rc : bind_int(st, ":v", p->v);
    rc = rc ? rc : bind_int(st, ":limit", p->limit);
    rc = rc ? rc : bind_text(st, ":now", p->now);
    if (rc != SQLITE_OK)
        return db_err(s, err, rc, "binding parameters");
    return RK_OK;
}

/* Prepares `sql` and binds `p`; the caller finalizes *st (also on failure: it may be NULL). */
static int statement(rk_store *s, const char *sql, const params *p, sqlite3_stmt **st,
                     rk_error *err)
{
    int rc = prepare(s, sql, st, err);
    if (rc == RK_OK)
        rc = bind_params(s, *st, p, err);
    return rc;
}

/* Runs a statement that returns no rows. */
static int exec_params(rk_store *s, const char *sql, const params *p, const char *what,
                       rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = statement(s, sql, p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step != SQLITE_DONE)
        rc = db_err(s, err, step, what);
done:
    sqlite3_finalize(st);
    return rc;
}

/* The first column of the first row, or 0 when there is no row or it is NULL. */
static int int_query(rk_store *s, const char *sql, const params *p, int64_t *out, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = 0;
    int rc = statement(s, sql, p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    else if (step != SQLITE_DONE)
        rc = db_err(s, err, step, "reading");
done:
    sqlite3_finalize(st);
    return rc;
}

static int begin(rk_store *s, rk_error *err)
{
    return exec(s, "BEGIN IMMEDIATE", "starting a write transaction", err);
}

/* Commits when rc is RK_OK, rolls back otherwise; returns the outcome. */
static int finish(rk_store *s, int rc, rk_error *err)
{
    if (rc == RK_OK)
        rc = exec(s, "COMMIT", "committing", err);
    if (rc != RK_OK && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* the error already says why */
    return rc;
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

static int parse_state(const char *name, rk_store_state *out)
{
    for (int i = RK_STATE_STAGED; i <= RK_STATE_SUPERSEDED; i++) {
        if (name && strcmp(name, rk_store_state_name((rk_store_state)i)) == 0) {
            *out = (rk_store_state)i;
            return RK_OK;
        }
    }
    return RK_EINVAL;
}

/* Fills `rec` from a row of VERSION_COLS. */
static int row_to_version(sqlite3_stmt *st, rk_store_version *rec, rk_error *err)
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
        return set_err(err, RK_STORE_EUNAVAILABLE,
                       "cluster %s version %lld is damaged in the "
                       "database: unknown state or hash",
                       rec->cluster, (long long)rec->version);
    return RK_OK;
}

static int missing_err(const params *p, int missing, rk_error *err)
{
    if (missing == RK_STORE_ENOACTIVE)
        return set_err(err, missing, "cluster %s has no active version yet; activate one first",
                       p->cluster);
    if (missing == RK_STORE_ENOVERSION)
        return set_err(err, missing, "cluster %s has no version %lld", p->cluster, (long long)p->v);
    return set_err(err, RK_STORE_ENOCLUSTER,
                   "there is no cluster named %s; publishing a version "
                   "creates it",
                   p->cluster);
}

/* One version by one of sql_get/sql_active/sql_latest: a new record (without its topology) and
 * a copy of the topology text, so that parsing happens after the lock is released. */
static int fetch_locked(rk_store *s, const char *sql, const params *p, int missing,
                        rk_store_version **out, char **doc, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rk_store_version *rec = NULL;
    int rc = statement(s, sql, p, &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    if (step == SQLITE_DONE)
        rc = missing_err(p, RK_STORE_ENOCLUSTER, err);
    else if (step != SQLITE_ROW)
        rc = db_err(s, err, step, "reading a version");
    else if (sqlite3_column_type(st, 1) == SQLITE_NULL)
        rc = missing_err(p, missing, err);
    if (rc != RK_OK)
        goto done;
    rec = calloc(1, sizeof *rec);
    rc = rec ? row_to_version(st, rec, err) : set_err(err, RK_ENOMEM, "out of memory");
    rc = rc ? rc : dup_col(st, COL_TOPOLOGY, doc, err);
done:
    sqlite3_finalize(st);
    if (rc == RK_OK)
        *out = rec;
    else
        rk_store_version_free(rec);
    return rc;
}

/* Parses the stored topology into rec; libringkeeper validates it again, so a damaged row is
 * reported instead of served. */
static int attach_topology(rk_store_version *rec, const char *doc, rk_error *err)
{
    rk_error perr = {0};
    rec->topology = rk_topology_parse(doc ? doc : "", doc ? strlen(doc) : 0, &perr);
    if (rec->topology)
        return RK_OK;
    if (perr.code == RK_ENOMEM)
        return set_err(err, RK_ENOMEM, "out of memory parsing a topology");
    return set_err(err, RK_STORE_EUNAVAILABLE,
                   "cluster %s version %lld is damaged in the database: "
                   "%s",
                   rec->cluster, (long long)rec->version, perr.message);
}

static int get_one(rk_store *s, const char *sql, const params *p, int missing,
                   rk_store_version **out, rk_error *err)
{
    rk_error scratch;
    rk_store_version *rec = NULL;
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
    rk_store_version_free(rec);
    return rc;
}

int rk_store_get(rk_store *s, const char *cluster, int64_t v, rk_store_version **out, rk_error *err)
{
    params p = {.cluster = cluster, .v = v};
    return get_one(s, sql_get, &p, RK_STORE_ENOVERSION, out, err);
}

int rk_store_get_active(rk_store *s, const char *cluster, rk_store_version **out, rk_error *err)
{
    params p = {.cluster = cluster};
    return get_one(s, sql_active, &p, RK_STORE_ENOACTIVE, out, err);
}

int rk_store_latest(rk_store *s, const char *cluster, rk_store_version **out, rk_error *err)
{
    params p = {.cluster = cluster};
    return get_one(s, sql_latest, &p, RK_STORE_ENOVERSION, out, err);
}

/* ---- Lists ---- */

/* Reads up to p->limit - 1 rows into out; one more row means there is another page. */
static int list_locked(rk_store *s, const params *p, rk_store_version_list *out, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t want = (size_t)p->limit - 1;
    int rc = RK_ENOMEM;
    out->items = calloc(want, sizeof *out->items);
    if (!out->items) {
        set_err(err, rc, "out of memory listing versions");
        goto done;
    }
    rc = statement(s, sql_list, p, &st, err);
    while (rc == RK_OK && !out->next_before) {
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW)
            rc = db_err(s, err, step, "listing versions");
        else if (out->count == want)
            out->next_before = out->items[want - 1].version;
        else
            rc = row_to_version(st, &out->items[out->count++], err);
    }
done:
    sqlite3_finalize(st);
    return rc;
}

int rk_store_list(rk_store *s, const char *cluster, size_t limit, int64_t before,
                  rk_store_version_list *out, rk_error *err)
{
    rk_error scratch;
    params p = {
        .cluster = cluster, .v = before > 0 ? before : INT64_MAX, .limit = (int64_t)limit + 1};
    err = err ? err : &scratch;
    memset(out, 0, sizeof *out);
    int rc = check_cluster_arg(cluster, err);
    if (rc != RK_OK)
        return rc;
    if (limit < 1 || limit > RK_STORE_LIST_MAX || before < 0)
        return set_err(err, RK_EINVAL, "limit must be 1..%d and before a version number",
                       RK_STORE_LIST_MAX);
    pthread_mutex_lock(&s->lock);
    rc = int_query(s, sql_cluster_id, &p, &p.cid, err);
    if (rc == RK_OK && p.cid == 0)
        rc = missing_err(&p, RK_STORE_ENOCLUSTER, err);
    if (rc == RK_OK)
        rc = list_locked(s, &p, out, err);
    pthread_mutex_unlock(&s->lock);
    if (rc != RK_OK)
        rk_store_version_list_free(out);
    return rc;
}

static int append_cluster(sqlite3_stmt *st, rk_store_cluster_list *out, size_t *cap, rk_error *err)
{
    if (out->count == *cap) {
        size_t n = *cap ? *cap * 2 : 16;
        rk_store_cluster *items = realloc(out->items, n * sizeof *items);
        if (!items)
            return set_err(err, RK_ENOMEM, "out of memory listing clusters");
        out->items = items;
        *cap = n;
    }
    rk_store_cluster *c = &out->items[out->count];
    c->active_version = sqlite3_column_int64(st, 1);
    c->latest_version = sqlite3_column_int64(st, 2);
    int rc = dup_col(st, 0, &c->name, err);
    if (rc == RK_OK)
        out->count++;
    return rc;
}

int rk_store_list_clusters(rk_store *s, rk_store_cluster_list *out, rk_error *err)
{
    rk_error scratch;
    sqlite3_stmt *st = NULL;
    params p = {0};
    size_t cap = 0;
    err = err ? err : &scratch;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    int rc = statement(s, sql_clusters, &p, &st, err);
    while (rc == RK_OK) {
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            break;
        if (step == SQLITE_ROW)
            rc = append_cluster(st, out, &cap, err);
        else
            rc = db_err(s, err, step, "listing clusters");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    if (rc != RK_OK)
        rk_store_cluster_list_free(out);
    return rc;
}

/* ---- Publishing and activating ---- */

static void notify(rk_store *s, const char *cluster, int64_t version)
{
    uint64_t seq = atomic_fetch_add(&s->seq, 1) + 1;
    if (s->watch)
        s->watch(s->watch_arg, cluster, version, seq);
}

/* The state changes of an activation, inside the caller's transaction. Retiring first keeps the
 * one-active-version index satisfied at every statement. */
static int apply_activation(rk_store *s, int64_t cid, int64_t v, const char *now, rk_error *err)
{
    static const char *const steps[] = {
        "UPDATE versions SET state = 'retired' WHERE cluster_id = :cid AND state = 'active'",
        "UPDATE versions SET state = 'superseded' WHERE cluster_id = :cid AND state = 'staged' "
        "AND version < :v",
        "UPDATE versions SET state = 'active', activated_at = :now WHERE cluster_id = :cid AND "
        "version = :v",
    };
    params p = {.cid = cid, .v = v, .now = now};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc = exec_params(s, steps[i], &p, "activating", err);
        if (rc != RK_OK)
            return rc;
    }
    return RK_OK;
}

/* A record for `t` with everything but the version number, and its JSON text in *doc. The ring
 * is built here, before any lock, for the fingerprint. */
static int new_record(const char *cluster, rk_topology *t, const char *author,
                      rk_store_version **out, char **doc, rk_error *err)
{
    rk_store_version *rec = calloc(1, sizeof *rec);
    rk_ring *ring = NULL;
    json_t *json = NULL;
    int rc = rec ? RK_OK : set_err(err, RK_ENOMEM, "out of memory");
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
        rc = set_err(err, RK_ENOMEM, "out of memory serialising the topology");
done:
    json_decref(json);
    rk_ring_free(ring);
    if (rc == RK_OK)
        *out = rec;
    else
        rk_store_version_free(rec);
    return rc;
}

static int insert_version(rk_store *s, int64_t cid, const rk_store_version *rec, const char *doc,
                          rk_error *err)
{
    sqlite3_stmt *st = NULL;
    params p = {.cid = cid, .v = rec->version, .now = rec->created_at};
    int rc = statement(s, sql_insert_version, &p, &st, err);
    if (rc != RK_OK)
        goto done;
    int b = bind_text(st, ":author", rec->author);
    b = b ? b : bind_text(st, ":comment", rec->comment);
    b = b ? b : bind_text(st, ":hash", rk_hash_name(rec->hash));
    b = b ? b : bind_int(st, ":vnode_factor", rec->vnode_factor);
    b = b ? b : bind_int(st, ":points", (int64_t)rec->points);
    b = b ? b : bind_text(st, ":fingerprint", rec->fingerprint);
    b = b ? b : bind_text(st, ":topology", doc);
    b = b ? b : sqlite3_step(st);
    if (b != SQLITE_DONE)
        rc = db_err(s, err, b, "storing the version");
done:
    sqlite3_finalize(st);
    return rc;
}

/* Numbers the version after the latest one inside the caller's BEGIN IMMEDIATE transaction:
 * holding the write lock from this read to the insert is what keeps numbers gap-free. */
static int publish_locked(rk_store *s, rk_store_version *rec, const char *doc,
                          const rk_store_publish_opts *opt, rk_error *err)
{
    params p = {.cluster = rec->cluster, .now = rec->created_at};
    int64_t latest = 0;
    int rc = exec_params(s,
                         "INSERT INTO clusters (name, created_at) VALUES (:cluster, :now) "
                         "ON CONFLICT (name) DO NOTHING",
                         &p, "creating the cluster", err);
    rc = rc ? rc : int_query(s, sql_cluster_id, &p, &p.cid, err);
    rc = rc ? rc : int_query(s, sql_max_version, &p, &latest, err);
    if (rc != RK_OK)
        return rc;
    if (opt->if_match_latest != RK_STORE_ANY && opt->if_match_latest != latest)
        return set_err(err, RK_STORE_EPRECONDITION,
                       "cluster %s: the latest version is %lld, not "
                       "%lld; fetch it, review, and publish again",
                       rec->cluster, (long long)latest, (long long)opt->if_match_latest);
    rec->version = latest + 1;
    rc = insert_version(s, p.cid, rec, doc, err);
    if (rc != RK_OK || !opt->activate)
        return rc;
    rc = apply_activation(s, p.cid, rec->version, rec->created_at, err);
    rec->state = RK_STATE_ACTIVE;
    memcpy(rec->activated_at, rec->created_at, sizeof rec->activated_at);
    return rc;
}

int rk_store_publish(rk_store *s, const char *cluster, rk_topology *t,
                     const rk_store_publish_opts *opt, rk_store_version **out, rk_error *err)
{
    static const rk_store_publish_opts defaults = {NULL, RK_STORE_ANY, 0};
    rk_error scratch;
    rk_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    opt = opt ? opt : &defaults;
    *out = NULL;
    int rc = check_cluster_arg(cluster, err);
    if (rc == RK_OK && !t)
        rc = set_err(err, RK_EINVAL, "a topology is required");
    rc = rc ? rc : new_record(cluster, t, opt->author, &rec, &doc, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = begin(s, err);
    rc = rc ? rc : publish_locked(s, rec, doc, opt, err);
    rc = finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    if (rc == RK_OK && opt->activate)
        notify(s, cluster, rec->version);
    if (rc == RK_OK) {
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rk_store_version_free(rec);
    return rc;
}

/* Checks in HTTP's order: existence (404), then the precondition (412), then the state (409). */
static int activate_locked(rk_store *s, params *p, int64_t if_match, rk_error *err)
{
    int64_t exists = 0, active = 0;
    int rc = int_query(s, sql_cluster_id, p, &p->cid, err);
    if (rc == RK_OK && p->cid == 0)
        rc = missing_err(p, RK_STORE_ENOCLUSTER, err);
    rc = rc ? rc : int_query(s, sql_max_version, p, &exists, err);
    rc = rc ? rc : int_query(s, sql_active_version, p, &active, err);
    if (rc == RK_OK && (p->v < 1 || p->v > exists))
        rc = missing_err(p, RK_STORE_ENOVERSION, err);
    if (rc != RK_OK)
        return rc;
    if (if_match != RK_STORE_ANY && if_match != active)
        return set_err(err, RK_STORE_EPRECONDITION,
                       "cluster %s: the active version is %lld, not "
                       "%lld",
                       p->cluster, (long long)active, (long long)if_match);
    if (p->v <= active)
        return set_err(err, RK_STORE_ECONFLICT,
                       "cluster %s: version %lld is not newer than the "
                       "active version %lld; to roll back, revert to it and activate the copy",
                       p->cluster, (long long)p->v, (long long)active);
    return apply_activation(s, p->cid, p->v, p->now, err);
}

int rk_store_activate(rk_store *s, const char *cluster, int64_t v, int64_t if_match_active,
                      rk_store_version **out, rk_error *err)
{
    rk_error scratch;
    char now[RK_STORE_TIME_LEN];
    rk_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    *out = NULL;
    now_rfc3339(now);
    params p = {.cluster = cluster, .v = v, .now = now};
    int rc = check_cluster_arg(cluster, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = begin(s, err);
    rc = rc ? rc : activate_locked(s, &p, if_match_active, err);
    rc = rc ? rc : fetch_locked(s, sql_get, &p, RK_STORE_ENOVERSION, &rec, &doc, err);
    rc = finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    if (rc == RK_OK)
        notify(s, cluster, v);
    rc = rc ? rc : attach_topology(rec, doc, err);
    if (rc == RK_OK) {
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rk_store_version_free(rec);
    return rc;
}

/* ---- Watching ---- */

uint64_t rk_store_watch_seq(rk_store *s)
{
    return atomic_load(&s->seq);
}

void rk_store_set_watch(rk_store *s, rk_store_watch_fn fn, void *arg)
{
    s->watch = fn;
    s->watch_arg = arg;
}

int rk_store_ping(rk_store *s, rk_error *err)
{
    rk_error scratch;
    int64_t n = 0;
    params p = {0};
    err = err ? err : &scratch;
    pthread_mutex_lock(&s->lock);
    int rc = int_query(s, "SELECT COUNT(*) FROM sqlite_master", &p, &n, err);
    pthread_mutex_unlock(&s->lock);
    if (rc != RK_OK)
        err->code = RK_STORE_EUNAVAILABLE; /* any failure here means not ready */
    return rc == RK_OK ? RK_OK : RK_STORE_EUNAVAILABLE;
}

/* ---- Migrations ---- */

/* NNNN of a file named NNNN_what.sql, or -1 for any other name. */
static int migration_number(const char *name)
{
    size_t len = strlen(name);
    if (len < 9 || name[4] != '_' || strcmp(name + len - 4, ".sql") != 0)
        return -1;
    int n = 0;
    for (int i = 0; i < 4; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        n = n * 10 + (name[i] - '0');
    }
    return n;
}

static int by_number(const void *a, const void *b)
{
    const migration *x = a, *y = b;
    return (x->number > y->number) - (x->number < y->number);
}

static void migrations_free(migration_set *set)
{
    for (size_t i = 0; i < set->count; i++)
        free(set->items[i].path);
    free(set->items);
}

static int add_migration(migration_set *set, const char *dir, const char *name, int number,
                         rk_error *err)
{
    if (set->count == MAX_MIGRATIONS)
        return set_err(err, RK_STORE_EMIGRATION, "more than %d migrations in %s", MAX_MIGRATIONS,
                       dir);
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);
    if (!path)
        return set_err(err, RK_ENOMEM, "out of memory reading migrations");
    snprintf(path, len, "%s/%s", dir, name);
    set->items[set->count].number = number;
    set->items[set->count].path = path;
    set->count++;
    return RK_OK;
}

/* Numbers must run 1, 2, 3 ...: a gap or a duplicate means a broken deployment. */
static int check_numbering(const migration_set *set, const char *dir, rk_error *err)
{
    if (set->count == 0)
        return set_err(err, RK_STORE_EMIGRATION, "no migrations (NNNN_name.sql) in %s", dir);
    for (size_t i = 0; i < set->count; i++) {
        if (set->items[i].number != (int)i + 1)
            return set_err(err, RK_STORE_EMIGRATION,
                           "migrations in %s must be numbered 0001, "
                           "0002 ... without gaps or repeats; %s breaks that",
                           dir, set->items[i].path);
    }
    return RK_OK;
}

static int load_migrations(const char *dir, migration_set *set, rk_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return set_err(err, RK_STORE_EMIGRATION, "cannot read the migrations directory %s: %s", dir,
                       strerror(errno));
    int rc = RK_OK;
    set->items = calloc(MAX_MIGRATIONS, sizeof *set->items);
    if (!set->items)
        rc = set_err(err, RK_ENOMEM, "out of memory reading migrations");
    while (rc == RK_OK) {
        struct dirent *e = readdir(d);
        if (!e)
            break;
        int number = migration_number(e->d_name);
        if (number >= 0)
            rc = add_migration(set, dir, e->d_name, number, err);
    }
    closedir(d);
    if (rc != RK_OK)
        return rc;
    qsort(set->items, set->count, sizeof *set->items, by_number);
    return check_numbering(set, dir, err);
}

static int read_file(const char *path, char **out, rk_error *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    int rc = RK_OK;
    if (!f)
        return set_err(err, RK_STORE_EMIGRATION, "cannot open %s: %s", path, strerror(errno));
    buf = malloc(MAX_MIGRATION_BYTES + 1);
    if (!buf) {
        rc = set_err(err, RK_ENOMEM, "out of memory reading %s", path);
        goto done;
    }
    size_t n = fread(buf, 1, MAX_MIGRATION_BYTES + 1, f);
    if (ferror(f) || n > MAX_MIGRATION_BYTES)
        rc = set_err(err, RK_STORE_EMIGRATION, "cannot read %s, or it is over %d bytes", path,
                     MAX_MIGRATION_BYTES);
    buf[n > MAX_MIGRATION_BYTES ? MAX_MIGRATION_BYTES : n] = '\0';
done:
    fclose(f);
    if (rc != RK_OK)
        free(buf);
    else
        *out = buf;
    return rc;
}

/* Runs one migration's SQL and records it, inside the caller's transaction. */
static int run_migration(rk_store *s, const migration *m, const char *sql, rk_error *err)
{
    char *msg = NULL;
    char pragmas[96];
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        set_err(err, map_rc(rc) == RK_STORE_EUNAVAILABLE ? RK_STORE_EMIGRATION : map_rc(rc),
                "migration %s failed: %s", m->path, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return err->code;
    }
    /* Integers of our own making: PRAGMA takes no bound parameters. */
    snprintf(pragmas, sizeof pragmas, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
             m->number, RK_APPLICATION_ID);
    return exec(s, pragmas, "recording the schema version", err);
}

/* Applies `m` unless the database has it already (another process may have got there first:
 * the version is read again under the write lock). */
static int apply_migration(rk_store *s, const migration *m, rk_error *err)
{
    char *sql = NULL;
    int64_t current = 0;
    params p = {0};
    int rc = read_file(m->path, &sql, err);
    if (rc != RK_OK)
        return rc;
    rc = begin(s, err);
    rc = rc ? rc : int_query(s, "PRAGMA user_version", &p, &current, err);
    if (rc == RK_OK && current < m->number)
        rc = run_migration(s, m, sql, err);
    rc = finish(s, rc, err);
    free(sql);
    return rc;
}

/* Decides, before anything is written, whether the file at `path` may be used: a ringkeeper
 * database no newer than `known`, or an empty file. */
static int check_identity(rk_store *s, const char *path, int known, rk_error *err)
{
    int64_t app = 0, user = 0, objects = 0;
    params p = {0};
    int rc = int_query(s, "PRAGMA application_id", &p, &app, err);
    rc = rc ? rc : int_query(s, "PRAGMA user_version", &p, &user, err);
    rc = rc ? rc : int_query(s, "SELECT COUNT(*) FROM sqlite_master", &p, &objects, err);
    if (rc == RK_STORE_ENOTRK)
        return set_err(err, rc,
                       "%s is not a ringkeeper database (not an SQLite file at all); "
                       "point --db at a ringkeeper database or a new path",
                       path);
    if (rc != RK_OK)
        return rc;
    if (app == RK_APPLICATION_ID && user > known)
        return set_err(err, RK_STORE_ETOONEW,
                       "%s has schema version %lld but this ringkeeperd "
                       "knows up to %d; run a newer ringkeeperd",
                       path, (long long)user, known);
    if (app == RK_APPLICATION_ID || (app == 0 && user == 0 && objects == 0))
        return RK_OK;
    return set_err(err, RK_STORE_ENOTRK,
                   "%s is an SQLite database of another application "
                   "(application_id %lld, %lld schema objects); point --db at a ringkeeper "
                   "database or a new path",
                   path, (long long)app, (long long)objects);
}

/* Durability settings (SPEC section 7): WAL must really be on, or refuse to run. */
static int configure(rk_store *s, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = prepare(s, "PRAGMA journal_mode = WAL", &st, err);
    if (rc != RK_OK)
        goto done;
    int step = sqlite3_step(st);
    const char *mode = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (step != SQLITE_ROW)
        rc = db_err(s, err, step, "turning on WAL");
    else if (!mode || strcmp(mode, "wal") != 0)
        rc = set_err(err, RK_STORE_EUNAVAILABLE,
                     "the database refused WAL mode (it is in %s "
                     "mode); put it on a local file system",
                     mode ? mode : "an unknown");
    rc = rc ? rc : exec(s, "PRAGMA synchronous = FULL", "setting synchronous=FULL", err);
    rc = rc ? rc : exec(s, "PRAGMA foreign_keys = ON", "turning on foreign keys", err);
done:
    sqlite3_finalize(st);
    return rc;
}

static int connect_db(rk_store *s, const char *path, rk_error *err)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK)
        return set_err(err, map_rc(rc) == RK_ENOMEM ? RK_ENOMEM : RK_STORE_EUNAVAILABLE,
                       "cannot open the database %s: %s", path,
                       s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    return RK_OK;
}

static int open_store(rk_store *s, const char *path, const char *dir, rk_error *err)
{
    migration_set set = {0};
    int rc = load_migrations(dir, &set, err);
    rc = rc ? rc : connect_db(s, path, err);
    rc = rc ? rc : check_identity(s, path, set.items[set.count - 1].number, err);
    rc = rc ? rc : configure(s, err);
    for (size_t i = 0; rc == RK_OK && i < set.count; i++)
        rc = apply_migration(s, &set.items[i], err);
    migrations_free(&set);
    return rc;
}

rk_store *rk_store_open(const char *path, const char *migrations_dir, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    if (!path || !migrations_dir) {
        set_err(err, RK_EINVAL, "a database path and a migrations directory are required");
        return NULL;
    }
    rk_store *s = calloc(1, sizeof *s);
    if (!s) {
        set_err(err, RK_ENOMEM, "out of memory");
        return NULL;
    }
    atomic_init(&s->seq, 0);
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        set_err(err, RK_ENOMEM, "cannot create a mutex");
        return NULL;
    }
    if (open_store(s, path, migrations_dir, err) == RK_OK)
        return s;
    rk_store_close(s);
    return NULL;
}

void rk_store_close(rk_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db); /* every statement is finalized where it is used */
    pthread_mutex_destroy(&s->lock);
    free(s);
}
