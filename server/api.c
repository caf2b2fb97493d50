/* api.c — the routes of SPEC section 4 over the store: request in, response out, no sockets.
 *
 * Error codes (the "code" of every error body; "field" is set where one thing is to blame):
 *
 * | status | code                | when                                                          |
 * |--------|---------------------|---------------------------------------------------------------|
 * | 400    | malformed_json      | the request body is not JSON                                  |
 * | 400    | invalid_topology    | a topology rule is broken; field: its JSON path               |
 * | 400    | invalid_parameter   | a query parameter is out of range; field: its name            |
 * | 400    | invalid_header      | If-Match is not "v<N>"; field: the header's name              |
 * | 400    | invalid_cluster     | the cluster name in the path breaks SPEC section 1's rule     |
 * | 400    | invalid_version     | the version in the path is not a positive integer             |
 * | 401    | unauthorized        | (http.c) no usable credentials                                |
 * | 403    | forbidden           | (http.c) a token that is not configured                       |
 * | 404    | not_found           | no such path                                                  |
 * | 404    | unknown_cluster     | no cluster of that name                                       |
 * | 404    | unknown_version     | the cluster has no such version                               |
 * | 404    | no_active_version   | the cluster has no active version yet (ring, default plan)    |
 * | 405    | method_not_allowed  | known path, other method; the Allow header lists the methods  |
 * | 409    | conflict            | activation of a version not newer than the active one         |
 * | 412    | precondition_failed | If-Match names another version than the latest / active one   |
 * | 413    | body_too_large      | (http.c) request body over the limit                          |
 * | 422    | too_many_points     | the topology's total points are over the cap                  |
 * | 422    | hash_mismatch       | a plan between versions with different hash algorithms        |
 * | 500    | internal            | out of memory, a damaged database, a bug                      |
 * | 503    | unavailable         | the database does not answer now (busy, locked, I/O, full)    |
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_internal.h"

#define CT_JSON    "application/json; charset=utf-8"
#define CT_TEXT    "text/plain; charset=utf-8"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

#define LIST_LIMIT_DEFAULT 100
#define WAIT_MAX_SECONDS   60
#define DOC_CACHE_ENTRIES  256                 /* clusters whose active document is kept */
#define DOC_CACHE_BYTES    ((size_t)64 << 20)  /* ... in at most this many bytes */
#define RING_CACHE_ENTRIES 8                   /* built rings kept for plans */
#define RING_CACHE_BYTES   ((size_t)512 << 20) /* ... in at most this many bytes of points */
#define MAX_SEGMENTS       6                   /* path segments of the longest route */

struct rkd_app {
    rkd_store *store;        /* borrowed */
    rkd_metrics *metrics;    /* borrowed, may be NULL */
    rkd_cache *docs;         /* (cluster, 0) -> active_doc of the active version */
    rkd_cache *rings;        /* (cluster, version) -> rk_ring */
    pthread_mutex_t hook_mu; /* guards hook and hook_arg */
    rkd_activation_fn hook;  /* called after each activation, or NULL */
    void *hook_arg;          /* its argument */
};

/* The serialized active version document of a cluster, as cached. */
typedef struct active_doc {
    int64_t version; /* which version it is */
    size_t len;      /* bytes in body */
    char body[];     /* the JSON, NUL-terminated */
} active_doc;

/* One request being answered: the parsed path parameters with the request and response. */
typedef struct call {
    rkd_app *app;
    const rkd_request *req;
    rkd_response *resp;
    char cluster[RKD_CLUSTER_MAX]; /* {c}, validated */
    int64_t version;               /* {v}, validated; 0 when the route has none */
} call;

/* ---- Responses ---- */

void rkd_response_clear(rkd_response *resp)
{
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

static void set_body(rkd_response *resp, int status, const char *ctype, char *body, size_t len)
{
    free(resp->body);
    resp->status = status;
    resp->content_type = ctype;
    resp->body = body;
    resp->body_len = len;
}

/* Last resort when even an error body cannot be built. */
static void out_of_memory(rkd_response *resp)
{
    static const char msg[] = "{\"error\":{\"code\":\"internal\",\"message\":\"the server is out "
                              "of memory; retry later\"}}";
    char *body = strdup(msg);
    set_body(resp, 500, CT_JSON, body, body ? strlen(body) : 0);
}

void rkd_response_error(rkd_response *resp, int status, const char *code, const char *field,
                        const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    field = field && field[0] ? field : NULL;
    json_t *doc = json_pack("{s:{s:s, s:s, s:s*}}", "error", "code", code, "message", message,
                            "field", field);
    char *body = NULL;
    size_t len = 0;
    if (rkd_json_dump(doc, &body, &len) != RK_OK) {
        out_of_memory(resp);
        return;
    }
    set_body(resp, status, CT_JSON, body, len);
}

/* Answers `doc` (stolen) as JSON with `status`. */
static void answer_json(rkd_response *resp, int status, json_t *doc)
{
    char *body = NULL;
    size_t len = 0;
    if (rkd_json_dump(doc, &body, &len) != RK_OK) {
        out_of_memory(resp);
        return;
    }
    set_body(resp, status, CT_JSON, body, len);
}

/* How a failure code from the store or the library becomes an HTTP error. */
typedef struct failure {
    int rc;           /* RK_* or RKD_STORE_* */
    int status;       /* HTTP status */
    const char *code; /* machine code */
    int db_error;     /* counts as RKD_COUNT_DB_ERRORS */
} failure;

static const failure failures[] = {
    {RK_EJSON, 400, "malformed_json", 0},
    {RK_ETOPOLOGY, 400, "invalid_topology", 0},
    {RK_ETOOBIG, 422, "too_many_points", 0},
    {RK_EHASHMISMATCH, 422, "hash_mismatch", 0},
    {RKD_STORE_ENOCLUSTER, 404, "unknown_cluster", 0},
    {RKD_STORE_ENOVERSION, 404, "unknown_version", 0},
    {RKD_STORE_ENOACTIVE, 404, "no_active_version", 0},
    {RKD_STORE_ECONFLICT, 409, "conflict", 0},
    {RKD_STORE_EPRECONDITION, 412, "precondition_failed", 0},
    {RKD_STORE_EUNAVAILABLE, 503, "unavailable", 1},
    {RK_EIO, 503, "unavailable", 1},
    {RKD_STORE_ENOTRK, 500, "internal", 1},
    {RKD_STORE_ETOONEW, 500, "internal", 1},
    {RKD_STORE_EMIGRATION, 500, "internal", 1},
};

static void count(rkd_app *app, rkd_counter which)
{
    if (app->metrics)
        rkd_metrics_count(app->metrics, which);
}

/* Answers the failure `rc` with its message from `err` (may be NULL for out of memory). */
static void fail(call *c, int rc, const rk_error *err)
{
    const failure *f = NULL;
    for (size_t i = 0; i < sizeof failures / sizeof failures[0]; i++) {
        if (failures[i].rc == rc)
            f = &failures[i];
    }
    if (f && f->db_error)
        count(c->app, RKD_COUNT_DB_ERRORS);
    if (!f || !err || !err->message[0]) {
        rkd_response_error(c->resp, f ? f->status : 500, f ? f->code : "internal", NULL,
                           "the server failed (%s); retry, and report it if it persists",
                           rkd_store_strerror(rc));
        return;
    }
    rkd_response_error(c->resp, f->status, f->code, err->field, "%s", err->message);
}

/* ---- Parsing request values ---- */

/* A decimal integer 0..INT64_MAX: digits only, no sign, no spaces. */
static int parse_int(const char *s, int64_t *out)
{
    if (!s || s[0] < '0' || s[0] > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* A decimal number in (0, 1]: digits and a point (strtod's exponents allowed), no sign, no
 * spaces, no "nan". */
static int parse_fraction(const char *s, double *out)
{
    char *end = NULL;
    if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
        return -1;
    *out = strtod(s, &end);
    return *end == '\0' && *out > 0 && *out <= 1 ? 0 : -1;
}

/* An ETag or If-Match value of the form "v<N>" (quotes included) into *version. */
static int parse_etag(const char *s, int64_t *version)
{
    char digits[24];
    size_t len = s ? strlen(s) : 0;
    if (len < 4 || len - 3 >= sizeof digits || s[0] != '"' || s[1] != 'v' || s[len - 1] != '"')
        return -1;
    memcpy(digits, s + 2, len - 3);
    digits[len - 3] = '\0';
    return parse_int(digits, version);
}

static void format_etag(char out[RKD_ETAG_MAX], int64_t version)
{
    snprintf(out, RKD_ETAG_MAX, "\"v%lld\"", (long long)version);
}

/* Query integer `name` in min..max: 1 and *out set when present, 0 when absent, -1 after
 * answering 400. */
static int query_int(call *c, const char *name, int64_t min, int64_t max, int64_t *out)
{
    const char *s = c->req->query(c->req, name);
    if (!s)
        return 0;
    if (parse_int(s, out) == 0 && *out >= min && *out <= max)
        return 1;
    if (max == INT64_MAX)
        rkd_response_error(c->resp, 400, "invalid_parameter", name,
                           "query parameter %s must be an integer of at least %lld", name,
                           (long long)min);
    else
        rkd_response_error(c->resp, 400, "invalid_parameter", name,
                           "query parameter %s must be an integer from %lld to %lld", name,
                           (long long)min, (long long)max);
    return -1;
}

/* Query boolean `name` ("true" or "false"; *out keeps its default when absent): 0, or -1 after
 * answering 400. */
static int query_bool(call *c, const char *name, int *out)
{
    const char *s = c->req->query(c->req, name);
    if (!s)
        return 0;
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        *out = s[0] == 't';
        return 0;
    }
    rkd_response_error(c->resp, 400, "invalid_parameter", name,
                       "query parameter %s must be true or false", name);
    return -1;
}

/* If-Match as a version (RKD_STORE_ANY when absent): 0, or -1 after answering 400. */
static int if_match(call *c, int64_t *version)
{
    const char *s = c->req->header(c->req, "If-Match");
    *version = RKD_STORE_ANY;
    if (!s || parse_etag(s, version) == 0)
        return 0;
    rkd_response_error(c->resp, 400, "invalid_header", "If-Match",
                       "If-Match must be a version ETag such as \"v4\" (with the quotes)");
    return -1;
}

/* ---- Activations and the active document cache ---- */

/* Loads the active version of `cluster` from the store, serializes it and caches it; held entry
 * or NULL with rc and err set. */
static rkd_entry *load_active(rkd_app *app, const char *cluster, int *rc, rk_error *err)
{
    rkd_store_version *v = NULL;
    uint64_t gen = rkd_cache_gen(app->docs);
    char *body = NULL;
    size_t len = 0;
    *rc = rkd_store_get_active(app->store, cluster, &v, err);
    if (*rc != RK_OK)
        return NULL;
    int64_t version = v->version;
    *rc = rkd_json_dump(rkd_version_json(v, 1), &body, &len);
    rkd_store_version_free(v);
    active_doc *doc = *rc == RK_OK ? malloc(sizeof *doc + len + 1) : NULL;
    if (!doc) {
        free(body);
        *rc = RK_ENOMEM;
        return NULL;
    }
    doc->version = version;
    doc->len = len;
    memcpy(doc->body, body, len + 1);
    free(body);
    rkd_entry *e = rkd_cache_put(app->docs, cluster, 0, version, doc, sizeof *doc + len, gen);
    *rc = e ? RK_OK : RK_ENOMEM;
    return e;
}

/* The active document of `cluster`, held: from the cache, else from the store. */
static rkd_entry *active_entry(rkd_app *app, const char *cluster, int *rc, rk_error *err)
{
    rkd_entry *e = rkd_cache_get(app->docs, cluster, 0);
    *rc = RK_OK;
    return e ? e : load_active(app, cluster, rc, err);
}

/* The store's watch callback: runs after every activation this store handle commits. Forgets
 * the older document (and any load of it still in flight), then loads the new one before the hook
 * wakes long polls, so that they find it cached instead of all reading the database at once. */
static void on_activation(void *arg, const char *cluster, int64_t version, uint64_t seq)
{
    rkd_app *app = arg;
    int rc = RK_OK;
    (void)seq;
    count(app, RKD_COUNT_ACTIVATIONS);
    if (app->metrics)
        rkd_metrics_active_version(app->metrics, cluster, version);
    rkd_cache_raise(app->docs, cluster, 0, version);
    rkd_cache_release(app->docs, load_active(app, cluster, &rc, NULL));
    pthread_mutex_lock(&app->hook_mu);
    rkd_activation_fn hook = app->hook;
    void *hook_arg = app->hook_arg;
    pthread_mutex_unlock(&app->hook_mu);
    if (hook)
        hook(hook_arg, cluster, version);
}

/* ---- Handlers ---- */

static void h_healthz(call *c)
{
    answer_json(c->resp, 200, json_pack("{s:s}", "status", "ok"));
}

static void h_readyz(call *c)
{
    rk_error err = {0};
    int rc = rkd_store_ping(c->app->store, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        return;
    }
    answer_json(c->resp, 200, json_pack("{s:s}", "status", "ready"));
}

static void h_metrics(call *c)
{
    char *text = c->app->metrics ? rkd_metrics_render(c->app->metrics) : strdup("");
    if (!text) {
        out_of_memory(c->resp);
        return;
    }
    set_body(c->resp, 200, CT_METRICS, text, strlen(text));
}

static void h_clusters(call *c)
{
    rkd_store_cluster_list list = {0};
    rk_error err = {0};
    int rc = rkd_store_list_clusters(c->app->store, &list, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        return;
    }
    answer_json(c->resp, 200, rkd_clusters_json(&list));
    rkd_store_cluster_list_free(&list);
}

/* Answers a committed version `v` with `status` and its document; 201 adds Location. */
static void answer_version(call *c, int status, const rkd_store_version *v)
{
    if (status == 201)
        snprintf(c->resp->location, sizeof c->resp->location, "/v1/clusters/%s/versions/%lld",
                 v->cluster, (long long)v->version);
    answer_json(c->resp, status, rkd_version_json(v, 1));
}

/* The publish options of the request: its author, ?activate and If-Match. 0, or -1 after
 * answering 400. Read before any expensive work, so that a bad parameter costs little. */
static int publish_opts(call *c, rkd_store_publish_opts *opt)
{
    *opt = (rkd_store_publish_opts){c->req->author, RKD_STORE_ANY, 0};
    if (query_bool(c, "activate", &opt->activate) != 0)
        return -1;
    return if_match(c, &opt->if_match_latest);
}

/* Publishes `t` (borrowed) and answers 201. Shared by publish and revert. */
static void publish(call *c, rk_topology *t, const rkd_store_publish_opts *opt)
{
    rkd_store_version *v = NULL;
    rk_error err = {0};
    int rc = rkd_store_publish(c->app->store, c->cluster, t, opt, &v, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        return;
    }
    count(c->app, RKD_COUNT_PUBLISHES);
    answer_version(c, 201, v);
    rkd_store_version_free(v);
}

static void h_publish(call *c)
{
    rkd_store_publish_opts opt;
    rk_error err = {0};
    if (publish_opts(c, &opt) != 0)
        return;
    rk_topology *t = rk_topology_parse(c->req->body ? c->req->body : "", c->req->body_len, &err);
    if (!t) {
        fail(c, err.code, &err);
        return;
    }
    publish(c, t, &opt);
    rk_topology_free(t);
}

static void h_list_versions(call *c)
{
    int64_t limit = LIST_LIMIT_DEFAULT, before = 0;
    rkd_store_version_list list = {0};
    rk_error err = {0};
    if (query_int(c, "limit", 1, RKD_STORE_LIST_MAX, &limit) < 0 ||
        query_int(c, "before", 1, INT64_MAX, &before) < 0)
        return;
    int rc = rkd_store_list(c->app->store, c->cluster, (size_t)limit, before, &list, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        return;
    }
    answer_json(c->resp, 200, rkd_versions_json(&list));
    rkd_store_version_list_free(&list);
}

static void h_get_version(call *c)
{
    rkd_store_version *v = NULL;
    rk_error err = {0};
    int rc = rkd_store_get(c->app->store, c->cluster, c->version, &v, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        return;
    }
    answer_version(c, 200, v);
    rkd_store_version_free(v);
}

static void h_activate(call *c)
{
    rkd_store_version *v = NULL;
    rk_error err = {0};
    int64_t expect = RKD_STORE_ANY;
    if (if_match(c, &expect) != 0)
        return;
    int rc = rkd_store_activate(c->app->store, c->cluster, c->version, expect, &v, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        return;
    }
    answer_version(c, 200, v);
    rkd_store_version_free(v);
}

/* Room for "revert to v<N>: " before a comment of RK_MAX_COMMENT bytes. */
#define REVERT_COMMENT_CAP (RK_MAX_COMMENT + 40)

/* "revert to v<N>" or "revert to v<N>: <comment>", cut to RK_MAX_COMMENT bytes on a UTF-8
 * character boundary (the comment must stay valid UTF-8). */
static void revert_comment(char out[REVERT_COMMENT_CAP], int64_t version, const char *original)
{
    int n = snprintf(out, REVERT_COMMENT_CAP, "revert to v%lld%s%s", (long long)version,
                     original ? ": " : "", original ? original : "");
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len <= RK_MAX_COMMENT)
        return;
    len = RK_MAX_COMMENT; /* out[len] is the first byte cut off: back up to a character start */
    while (len > 0 && ((unsigned char)out[len] & 0xC0) == 0x80)
        len--;
    out[len] = '\0';
}

/* A copy of `t` with another comment. */
static rk_topology *with_comment(const rk_topology *t, const char *comment, rk_error *err)
{
    size_t n = rk_topology_node_count(t);
    rk_node *nodes = malloc(n * sizeof *nodes);
    if (!nodes) {
        err->code = RK_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        nodes[i] = *rk_topology_node(t, i);
    rk_topology *copy =
        rk_topology_new(rk_topology_hash(t), rk_topology_vnode_factor(t), nodes, n, comment, err);
    free(nodes);
    return copy;
}

static void h_revert(call *c)
{
    rkd_store_publish_opts opt;
    rkd_store_version *v = NULL;
    rk_topology *copy = NULL;
    rk_error err = {0};
    char comment[REVERT_COMMENT_CAP];
    if (publish_opts(c, &opt) != 0)
        return;
    int rc = rkd_store_get(c->app->store, c->cluster, c->version, &v, &err);
    if (rc != RK_OK) {
        fail(c, rc, &err);
        goto done;
    }
    revert_comment(comment, v->version, v->comment);
    copy = with_comment(v->topology, comment, &err);
    if (!copy) {
        fail(c, err.code, &err);
        goto done;
    }
    publish(c, copy, &opt);
done:
    rk_topology_free(copy);
    rkd_store_version_free(v);
}

/* The version If-None-Match names, or -1 when absent or not one of ours. */
static int64_t if_none_match(call *c)
{
    int64_t v = -1;
    const char *s = c->req->header(c->req, "If-None-Match");
    return s && parse_etag(s, &v) == 0 ? v : -1;
}

/* Answers 200 with a copy of a cached document (the cache keeps its own). */
static void answer_copy(rkd_response *resp, const active_doc *doc)
{
    char *body = malloc(doc->len + 1);
    if (!body) {
        out_of_memory(resp);
        return;
    }
    memcpy(body, doc->body, doc->len + 1);
    set_body(resp, 200, CT_JSON, body, doc->len);
}

static void h_ring(call *c)
{
    int64_t wait = 0;
    rk_error err = {0};
    int rc = RK_OK;
    if (query_int(c, "wait", 0, WAIT_MAX_SECONDS, &wait) < 0)
        return;
    rkd_entry *e = active_entry(c->app, c->cluster, &rc, &err);
    if (!e) {
        fail(c, rc, &err);
        return;
    }
    const active_doc *doc = e->value;
    int fresh = if_none_match(c) == doc->version; /* the client has this version already */
    format_etag(c->resp->etag, doc->version);
    if (fresh && wait > 0 && !c->req->resumed) {
        c->resp->wait_seconds = (unsigned)wait;
        snprintf(c->resp->wait_cluster, sizeof c->resp->wait_cluster, "%s", c->cluster);
    } else if (fresh) {
        c->resp->status = 304;
    } else {
        answer_copy(c->resp, doc);
    }
    rkd_cache_release(c->app->docs, e);
}

static void free_ring(void *ring)
{
    rk_ring_free(ring);
}

/* Version `v` of the cluster as a built ring, held: from the cache, else built and cached. */
static rkd_entry *ring_entry(call *c, int64_t v, int *rc, rk_error *err)
{
    rkd_entry *e = rkd_cache_get(c->app->rings, c->cluster, v);
    rkd_store_version *rec = NULL;
    *rc = RK_OK;
    if (e)
        return e;
    *rc = rkd_store_get(c->app->store, c->cluster, v, &rec, err);
    rk_ring *ring = *rc == RK_OK ? rk_ring_build(rec->topology, err) : NULL;
    rkd_store_version_free(rec);
    if (!ring) {
        *rc = *rc != RK_OK ? *rc : err->code;
        return NULL;
    }
    e = rkd_cache_put(c->app->rings, c->cluster, v, 0, ring, rk_ring_memory(ring),
                      rkd_cache_gen(c->app->rings));
    *rc = e ? RK_OK : RK_ENOMEM;
    return e;
}

/* from and to of a plan: the query's, else the active and the latest versions. 0, or -1 after
 * answering. */
static int plan_versions(call *c, int64_t *from, int64_t *to)
{
    rk_error err = {0};
    int rc = RK_OK;
    int has_from = query_int(c, "from", 1, INT64_MAX, from);
    int has_to = has_from < 0 ? -1 : query_int(c, "to", 1, INT64_MAX, to);
    if (has_to < 0)
        return -1;
    if (!has_from) {
        rkd_entry *e = active_entry(c->app, c->cluster, &rc, &err);
        *from = e ? ((const active_doc *)e->value)->version : 0;
        rkd_cache_release(c->app->docs, e);
    }
    if (rc == RK_OK && !has_to) {
        rkd_store_version_list list = {0};
        rc = rkd_store_list(c->app->store, c->cluster, 1, 0, &list, &err);
        *to = rc == RK_OK && list.count > 0 ? list.items[0].version : 0;
        rkd_store_version_list_free(&list);
    }
    if (rc != RK_OK)
        fail(c, rc, &err);
    return rc == RK_OK ? 0 : -1;
}

/* The plan's options and rendering from the query: 0, or -1 after answering 400. */
static int plan_query(call *c, rk_plan_options *opt, int *text, int *arcs)
{
    const char *step = c->req->query(c->req, "max_step");
    const char *format = c->req->query(c->req, "format");
    const char *accept = c->req->header(c->req, "Accept");
    int64_t keys = 0;
    if (step && parse_fraction(step, &opt->max_step) != 0) {
        rkd_response_error(c->resp, 400, "invalid_parameter", "max_step",
                           "query parameter max_step must be a number above 0 and at most 1");
        return -1;
    }
    if (query_int(c, "keys", 1, INT64_MAX, &keys) < 0 || query_bool(c, "arcs", arcs) != 0)
        return -1;
    opt->keys = (uint64_t)keys;
    if (format && strcmp(format, "json") != 0 && strcmp(format, "text") != 0) {
        rkd_response_error(c->resp, 400, "invalid_parameter", "format",
                           "query parameter format must be json or text");
        return -1;
    }
    *text = format ? strcmp(format, "text") == 0 : accept && strstr(accept, "text/plain") != NULL;
    return 0;
}

/* Renders plan `p` as the query asked. */
static void answer_plan(call *c, const rk_plan *p, const rk_plan_meta *meta, int text, int arcs)
{
    if (!text) {
        answer_json(c->resp, 200, rk_plan_to_json(p, meta, arcs ? 0 : RK_PLAN_NO_ARCS));
        return;
    }
    char *body = rk_plan_to_text(p, meta);
    if (!body) {
        out_of_memory(c->resp);
        return;
    }
    set_body(c->resp, 200, CT_TEXT, body, strlen(body));
}

static void h_plan(call *c)
{
    rk_plan_options opt = {0};
    rk_plan_meta meta = {.cluster = c->cluster};
    rkd_entry *from = NULL, *to = NULL;
    rk_plan *plan = NULL;
    rk_error err = {0};
    int text = 0, arcs = 1, rc = RK_OK;
    if (plan_query(c, &opt, &text, &arcs) != 0 ||
        plan_versions(c, &meta.from_version, &meta.to_version) != 0)
        goto done;
    from = ring_entry(c, meta.from_version, &rc, &err);
    to = from ? ring_entry(c, meta.to_version, &rc, &err) : NULL;
    plan = to ? rk_plan_new(from->value, to->value, &opt, &err) : NULL;
    rc = to && !plan ? err.code : rc;
    if (!plan) {
        fail(c, rc, &err);
        goto done;
    }
    answer_plan(c, plan, &meta, text, arcs);
done:
    rk_plan_free(plan);
    rkd_cache_release(c->app->rings, to);
    rkd_cache_release(c->app->rings, from);
}

/* ---- Routing ---- */

typedef struct route {
    const char *method;       /* "GET" (HEAD is answered as GET) or "POST" */
    const char *pattern;      /* segments; "{c}" a cluster name, "{v}" a version */
    const char *allow;        /* every method of this pattern, for 405 */
    void (*handler)(call *c); /* answers */
} route;

static const route routes[] = {
    {"GET", "/healthz", "GET", h_healthz},
    {"GET", "/readyz", "GET", h_readyz},
    {"GET", "/metrics", "GET", h_metrics},
    {"GET", "/v1/clusters", "GET", h_clusters},
    {"POST", "/v1/clusters/{c}/versions", "GET, POST", h_publish},
    {"GET", "/v1/clusters/{c}/versions", "GET, POST", h_list_versions},
    {"GET", "/v1/clusters/{c}/versions/{v}", "GET", h_get_version},
    {"POST", "/v1/clusters/{c}/versions/{v}/activate", "POST", h_activate},
    {"POST", "/v1/clusters/{c}/versions/{v}/revert", "POST", h_revert},
    {"GET", "/v1/clusters/{c}/ring", "GET", h_ring},
    {"GET", "/v1/clusters/{c}/plan", "GET", h_plan},
};

/* Path segments: a pointer to each and its length. */
typedef struct segments {
    const char *at[MAX_SEGMENTS + 1];
    size_t len[MAX_SEGMENTS + 1];
    size_t n; /* MAX_SEGMENTS + 1 means "too many for any route" */
} segments;

static void split(const char *path, segments *out)
{
    out->n = 0;
    if (path[0] != '/')
        return;
    for (const char *p = path + 1; out->n <= MAX_SEGMENTS; out->n++) {
        size_t len = strcspn(p, "/");
        out->at[out->n] = p;
        out->len[out->n] = len;
        if (p[len] == '\0') {
            out->n++;
            return;
        }
        p += len + 1;
    }
}

/* Non-zero when `pattern` matches the segments; placeholders match any segment. */
static int matches(const char *pattern, const segments *s)
{
    segments ps;
    split(pattern, &ps);
    if (ps.n != s->n)
        return 0;
    for (size_t i = 0; i < ps.n; i++) {
        if (ps.at[i][0] == '{')
            continue;
        if (ps.len[i] != s->len[i] || memcmp(ps.at[i], s->at[i], ps.len[i]) != 0)
            return 0;
    }
    return 1;
}

/* Fills c->cluster and c->version from the placeholders of r's pattern: 0, or -1 after answering
 * 400. */
static int bind(call *c, const route *r, const segments *s)
{
    segments ps;
    split(r->pattern, &ps);
    for (size_t i = 0; i < ps.n; i++) {
        if (strncmp(ps.at[i], "{c}", 3) == 0) {
            int fits = s->len[i] < sizeof c->cluster;
            snprintf(c->cluster, sizeof c->cluster, "%.*s", (int)s->len[i], s->at[i]);
            if (!fits || !rk_cluster_name_valid(c->cluster)) {
                rkd_response_error(c->resp, 400, "invalid_cluster", NULL,
                                   "a cluster name is 1 to 63 bytes of a-z, 0-9, '.', '_' and "
                                   "'-', starting with a letter or digit");
                return -1;
            }
        }
        if (strncmp(ps.at[i], "{v}", 3) == 0) {
            char digits[24];
            snprintf(digits, sizeof digits, "%.*s", (int)s->len[i], s->at[i]);
            if (s->len[i] >= sizeof digits || parse_int(digits, &c->version) != 0 ||
                c->version < 1) {
                rkd_response_error(c->resp, 400, "invalid_version", NULL,
                                   "a version in the path is a positive integer such as 4");
                return -1;
            }
        }
    }
    return 0;
}

static int method_is(const route *r, const char *method)
{
    return strcmp(r->method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0);
}

void rkd_api_handle(rkd_app *app, const rkd_request *req, rkd_response *resp)
{
    call c = {.app = app, .req = req, .resp = resp};
    const route *path_match = NULL;
    segments s;
    split(req->path ? req->path : "", &s);
    resp->route = "other";
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!matches(routes[i].pattern, &s))
            continue;
        path_match = &routes[i];
        resp->route = path_match->pattern;
        if (!method_is(&routes[i], req->method))
            continue;
        if (bind(&c, &routes[i], &s) == 0)
            routes[i].handler(&c);
        return;
    }
    if (!path_match) {
        rkd_response_error(resp, 404, "not_found", NULL,
                           "there is no such path; see SPEC section 4 for the routes");
        return;
    }
    resp->allow = path_match->allow;
    rkd_response_error(resp, 405, "method_not_allowed", NULL, "%s is not allowed here; use %s",
                       req->method, path_match->allow);
}

/* ---- The application ---- */

/* Reports the active version of every cluster to the metrics, so they are right from the start. */
static int seed_metrics(rkd_app *app, rk_error *err)
{
    rkd_store_cluster_list list = {0};
    if (!app->metrics)
        return RK_OK;
    int rc = rkd_store_list_clusters(app->store, &list, err);
    for (size_t i = 0; rc == RK_OK && i < list.count; i++) {
        if (list.items[i].active_version > 0)
            rkd_metrics_active_version(app->metrics, list.items[i].name,
                                       list.items[i].active_version);
    }
    rkd_store_cluster_list_free(&list);
    return rc;
}

rkd_app *rkd_app_new(rkd_store *store, rkd_metrics *metrics, rk_error *err)
{
    rkd_app *app = calloc(1, sizeof *app);
    if (!app || pthread_mutex_init(&app->hook_mu, NULL) != 0) {
        free(app);
        if (err)
            *err = (rk_error){.code = RK_ENOMEM, .message = "out of memory creating the API"};
        return NULL;
    }
    app->store = store;
    app->metrics = metrics;
    app->docs = rkd_cache_new(DOC_CACHE_ENTRIES, DOC_CACHE_BYTES, free);
    app->rings = rkd_cache_new(RING_CACHE_ENTRIES, RING_CACHE_BYTES, free_ring);
    int rc = app->docs && app->rings ? seed_metrics(app, err) : RK_ENOMEM;
    if (rc != RK_OK) {
        if (rc == RK_ENOMEM && err)
            *err = (rk_error){.code = RK_ENOMEM, .message = "out of memory creating the API"};
        rkd_app_free(app);
        return NULL;
    }
    rkd_store_set_watch(store, on_activation, app);
    return app;
}

void rkd_app_free(rkd_app *app)
{
    if (!app)
        return;
    if (app->store)
        rkd_store_set_watch(app->store, NULL, NULL);
    rkd_cache_free(app->rings);
    rkd_cache_free(app->docs);
    pthread_mutex_destroy(&app->hook_mu);
    free(app);
}

void rkd_app_set_activation_hook(rkd_app *app, rkd_activation_fn fn, void *arg)
{
    pthread_mutex_lock(&app->hook_mu);
    app->hook = fn;
    app->hook_arg = arg;
    pthread_mutex_unlock(&app->hook_mu);
}
