/* test_api.c — the HTTP API of ringkeeperd (server/api/api.h) in-process: every route and status
 * code, the version state machine, paging, ETags and long polls, plans, reverts, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "tmpdir.h"
#include <dirent.h>
#include <pthread.h>
#include <jansson.h>
#include <unistd.h>

#include "api.h"
#include "api_harness.h"
#include "cache.h"
#include "reply.h"
#include "metrics.h"
#include "ringkeeper.h"
#include "store.h"

/* ---- Tests ---- */

static void test_routes(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "routes", &store, NULL);
    json_t *doc = expect_json(get(app, "/healthz", NULL, NULL), 200);
    assert_string_equal(str_at(doc, "status"), "ok");
    json_decref(doc);
    json_decref(expect_json(get(app, "/readyz", NULL, NULL), 200));
    json_decref(expect_json(run(app, "HEAD", "/healthz", NULL, NULL, NULL, 0), 200));

    rkd_response r = get(app, "/metrics", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    rkd_response_clear(&r);

    r = get(app, "/nope", NULL, NULL);
    assert_string_equal(r.route, "other");
    expect_error(r, 404, "not_found", NULL);
    expect_error(get(app, "/v1/clusters/a/versions/1/activate/x", NULL, NULL), 404, "not_found",
                 NULL);
    expect_error(get(app, "/v1/clusters/", NULL, NULL), 404, "not_found", NULL);

    r = run(app, "POST", "/healthz", NULL, NULL, "{}", 0);
    assert_string_equal(r.allow, "GET");
    expect_error(r, 405, "method_not_allowed", NULL);
    r = run(app, "DELETE", "/v1/clusters/a/versions", NULL, NULL, NULL, 0);
    assert_string_equal(r.allow, "GET, POST");
    assert_string_equal(r.route, "/v1/clusters/{c}/versions");
    expect_error(r, 405, "method_not_allowed", NULL);
    r = get(app, "/v1/clusters/a/versions/1/activate", NULL, NULL);
    assert_string_equal(r.allow, "POST");
    expect_error(r, 405, "method_not_allowed", NULL);

    r = get(app, "/v1/clusters/Bad!/versions", NULL, NULL);
    assert_string_equal(r.route, "/v1/clusters/{c}/versions");
    expect_error(r, 400, "invalid_cluster", NULL);
    expect_error(get(app,
                     "/v1/clusters/"
                     "a123456789012345678901234567890123456789012345678901234567890123/ring",
                     NULL, NULL),
                 400, "invalid_cluster", NULL);
    expect_error(get(app, "/v1/clusters//ring", NULL, NULL), 400, "invalid_cluster", NULL);
    expect_error(get(app, "/v1/clusters/a/versions/abc", NULL, NULL), 400, "invalid_version", NULL);
    expect_error(get(app, "/v1/clusters/a/versions/0", NULL, NULL), 400, "invalid_version", NULL);
    expect_error(get(app, "/v1/clusters/a/versions/-1", NULL, NULL), 400, "invalid_version", NULL);
    expect_error(get(app, "/v1/clusters/a/versions/99999999999999999999", NULL, NULL), 400,
                 "invalid_version", NULL);
    app_close(app, store);
}

static void test_publish_document(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "publish", &store, NULL);
    char *body = topology(3, "fnv1a_32", "three nodes");
    rkd_response r = run(app, "POST", "/v1/clusters/cache/versions", NULL, NULL, body, 0);
    assert_string_equal(r.location, "/v1/clusters/cache/versions/1");
    assert_string_equal(r.route, "/v1/clusters/{c}/versions");
    json_t *doc = expect_json(r, 201);
    static const char *const keys[] = {
        "cluster", "version",      "state", "created_at", "activated_at", "author",  "comment",
        "hash",    "vnode_factor", "nodes", "points",     "fingerprint",  "store_id"};
    assert_int_equal(json_object_size(doc), sizeof keys / sizeof keys[0]);
    size_t k = 0;
    const char *key;
    json_t *value;
    json_object_foreach(doc, key, value)
    {
        assert_string_equal(key, keys[k++]); /* the order of docs/API.md */
    }
    assert_string_equal(str_at(doc, "cluster"), "cache");
    assert_int_equal(int_at(doc, "version"), 1);
    assert_string_equal(str_at(doc, "state"), "staged");
    assert_int_equal(strlen(str_at(doc, "created_at")), 20);
    assert_true(json_is_null(json_object_get(doc, "activated_at")));
    assert_string_equal(str_at(doc, "author"), "ops");
    assert_string_equal(str_at(doc, "comment"), "three nodes");
    assert_string_equal(str_at(doc, "hash"), "fnv1a_32");
    assert_int_equal(int_at(doc, "vnode_factor"), 16);
    assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 3);
    json_t *n1 = json_array_get(json_object_get(doc, "nodes"), 1);
    assert_string_equal(str_at(n1, "id"), "n1");
    assert_string_equal(str_at(n1, "addr"), "10.0.0.2:11211");
    assert_int_equal(int_at(n1, "weight"), 2);
    assert_int_equal(int_at(doc, "points"), 16 * 4);
    assert_int_equal(strlen(str_at(doc, "fingerprint")), 16);

    json_t *again = expect_json(get(app, "/v1/clusters/cache/versions/1", NULL, NULL), 200);
    assert_true(json_equal(doc, again));
    json_decref(again);
    json_decref(doc);
    free(body);

    body = topology(2, "fnv1a_32", NULL);
    doc = expect_json(run(app, "POST", "/v1/clusters/cache/versions", NULL, NULL, body, 0), 201);
    assert_true(json_is_null(json_object_get(doc, "comment")));
    json_decref(doc);
    free(body);

    expect_error(get(app, "/v1/clusters/cache/versions/3", NULL, NULL), 404, "unknown_version",
                 NULL);
    expect_error(get(app, "/v1/clusters/nope/versions/1", NULL, NULL), 404, "unknown_cluster",
                 NULL);
    app_close(app, store);
}

/* Weights in steps of 1/vnode_factor (docs/RING.md) are stored and served as they were written,
 * and one that is no such step is refused, naming it. */
static void test_step_weights(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "step_weights", &store, NULL);
    const char *path = "/v1/clusters/c/versions";
    json_t *doc = expect_json(
        run(app, "POST", path, NULL, NULL,
            "{\"hash\":\"xxh3_64\",\"vnode_factor\":160,\"nodes\":[{\"id\":\"a\",\"addr\":\"x\","
            "\"weight\":1},{\"id\":\"b\",\"addr\":\"y\",\"weight\":0.00625},{\"id\":\"c\","
            "\"addr\":\"z\",\"weight\":0.2}]}",
            0),
        201);
    assert_int_equal(int_at(doc, "points"), 160 + 1 + 32);
    json_decref(doc);
    rkd_response r = get(app, "/v1/clusters/c/versions/1", NULL, NULL);
    assert_int_equal(r.status, 200);
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)r.body_len, r.body);
    assert_non_null(strstr(text, "\"weight\":0.00625}"));
    assert_non_null(strstr(text, "\"weight\":0.2}"));
    rkd_response_clear(&r);
    expect_error(run(app, "POST", path, NULL, NULL,
                     "{\"hash\":\"xxh3_64\",\"vnode_factor\":160,\"nodes\":[{\"id\":\"a\","
                     "\"addr\":\"x\",\"weight\":0.003}]}",
                     0),
                 400, "invalid_topology", "nodes[0].weight");
    expect_error(get(app, "/v1/clusters/c/versions/2", NULL, NULL), 404, "unknown_version", NULL);
    app_close(app, store);
}

static void test_publish_errors(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "publish_errors", &store, NULL);
    const char *path = "/v1/clusters/c/versions";
    expect_error(run(app, "POST", path, NULL, NULL, "{\"hash\": ", 0), 400, "malformed_json", NULL);
    expect_error(run(app, "POST", path, NULL, NULL, NULL, 0), 400, "malformed_json", NULL);
    expect_error(run(app, "POST", path, NULL, NULL,
                     "{\"hash\":\"fnv1a_32\",\"vnode_factor\":1,\"nodes\":[{\"id\":\"a\","
                     "\"addr\":\"x\",\"weight\":5000}]}",
                     0),
                 400, "invalid_topology", "nodes[0].weight");
    expect_error(run(app, "POST", path, NULL, NULL,
                     "{\"hash\":\"fnv1a_32\",\"vnode_factor\":4096,\"nodes\":[{\"id\":\"a\","
                     "\"addr\":\"x\",\"weight\":1000},{\"id\":\"b\",\"addr\":\"y\","
                     "\"weight\":1000}]}",
                     0),
                 422, "too_many_points", "nodes");

    char *body = topology(2, "fnv1a_32", NULL);
    expect_error(run(app, "POST", path, "activate=yes", NULL, body, 0), 400, "invalid_parameter",
                 "activate");
    expect_error(run(app, "POST", path, NULL, "If-Match: v1", body, 0), 400, "invalid_header",
                 "If-Match");
    expect_error(run(app, "POST", path, NULL, "If-Match: \"v\"", body, 0), 400, "invalid_header",
                 "If-Match");
    expect_error(run(app, "POST", path, NULL, "If-Match: \"v1\"", body, 0), 412,
                 "precondition_failed", NULL);
    json_decref(expect_json(run(app, "POST", path, NULL, "If-Match: \"v0\"", body, 0), 201));
    expect_error(run(app, "POST", path, NULL, "If-Match: \"v0\"", body, 0), 412,
                 "precondition_failed", NULL);
    json_decref(expect_json(run(app, "POST", path, NULL, "if-match: \"v1\"", body, 0), 201));
    free(body);
    app_close(app, store);
}

static void test_state_machine(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "states", &store, NULL);
    char s[32];
    for (size_t n = 1; n <= 3; n++)
        assert_int_equal(publish(app, "c", n + 1, NULL), (int64_t)n);
    json_t *doc = activate(app, "c", 2, NULL, 200);
    assert_string_equal(str_at(doc, "state"), "active");
    assert_int_equal(strlen(str_at(doc, "activated_at")), 20);
    assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 3);
    json_decref(doc);
    assert_string_equal(state_of(app, "c", 1, s, sizeof s), "superseded");
    assert_string_equal(state_of(app, "c", 3, s, sizeof s), "staged");
    activate(app, "c", 1, NULL, 409);
    activate(app, "c", 2, NULL, 409);
    expect_error(
        run(app, "POST", "/v1/clusters/c/versions/3/activate", NULL, "If-Match: \"v1\"", NULL, 0),
        412, "precondition_failed", NULL);
    expect_error(
        run(app, "POST", "/v1/clusters/c/versions/3/activate", NULL, "If-Match: 2", NULL, 0), 400,
        "invalid_header", "If-Match");
    expect_error(run(app, "POST", "/v1/clusters/c/versions/9/activate", NULL, NULL, NULL, 0), 404,
                 "unknown_version", NULL);
    expect_error(run(app, "POST", "/v1/clusters/zz/versions/1/activate", NULL, NULL, NULL, 0), 404,
                 "unknown_cluster", NULL);
    json_decref(activate(app, "c", 3, "If-Match: \"v2\"", 200));
    assert_string_equal(state_of(app, "c", 2, s, sizeof s), "retired");

    char *body = topology(2, "fnv1a_32", NULL);
    doc = expect_json(run(app, "POST", "/v1/clusters/c/versions", "activate=true", NULL, body, 0),
                      201);
    assert_int_equal(int_at(doc, "version"), 4);
    assert_string_equal(str_at(doc, "state"), "active");
    assert_string_equal(str_at(doc, "activated_at"), str_at(doc, "created_at"));
    json_decref(doc);
    doc = expect_json(run(app, "POST", "/v1/clusters/c/versions", "activate=false", NULL, body, 0),
                      201);
    assert_string_equal(str_at(doc, "state"), "staged");
    json_decref(doc);
    free(body);
    assert_string_equal(state_of(app, "c", 3, s, sizeof s), "retired");
    app_close(app, store);
}

/* Lists a page and checks its versions (newest first) and next_before (0: null). */
static void expect_page(rkd_app *app, const char *query, const int64_t *want, size_t n,
                        int64_t next)
{
    json_t *doc = expect_json(get(app, "/v1/clusters/p/versions", query, NULL), 200);
    json_t *list = json_object_get(doc, "versions");
    assert_int_equal(json_array_size(list), n);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(list, i);
        assert_int_equal(int_at(v, "version"), want[i]);
        assert_null(json_object_get(v, "nodes"));
        assert_non_null(json_object_get(v, "fingerprint"));
    }
    if (next)
        assert_int_equal(int_at(doc, "next_before"), next);
    else
        assert_true(json_is_null(json_object_get(doc, "next_before")));
    json_decref(doc);
}

static void test_list_paging(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "paging", &store, NULL);
    json_t *doc = expect_json(get(app, "/v1/clusters", NULL, NULL), 200);
    assert_int_equal(json_array_size(json_object_get(doc, "clusters")), 0);
    json_decref(doc);
    for (int i = 0; i < 5; i++)
        publish(app, "p", 2, NULL);
    publish(app, "a", 2, "activate=true");

    expect_page(app, "limit=2", (int64_t[]){5, 4}, 2, 4);
    expect_page(app, "limit=2&before=4", (int64_t[]){3, 2}, 2, 2);
    expect_page(app, "limit=2&before=2", (int64_t[]){1}, 1, 0);
    expect_page(app, NULL, (int64_t[]){5, 4, 3, 2, 1}, 5, 0);
    expect_page(app, "limit=1000", (int64_t[]){5, 4, 3, 2, 1}, 5, 0);
    static const char *const bad[][2] = {{"limit=0", "limit"},     {"limit=1001", "limit"},
                                         {"limit=x", "limit"},     {"limit=-1", "limit"},
                                         {"before=0", "before"},   {"before=-3", "before"},
                                         {"before=1.5", "before"}, {"limit= 2", "limit"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_error(get(app, "/v1/clusters/p/versions", bad[i][0], NULL), 400, "invalid_parameter",
                     bad[i][1]);
    expect_error(get(app, "/v1/clusters/q/versions", NULL, NULL), 404, "unknown_cluster", NULL);

    doc = expect_json(get(app, "/v1/clusters", NULL, NULL), 200);
    json_t *list = json_object_get(doc, "clusters");
    assert_int_equal(json_array_size(list), 2);
    json_t *a = json_array_get(list, 0), *p = json_array_get(list, 1);
    assert_string_equal(str_at(a, "cluster"), "a");
    assert_int_equal(int_at(a, "active_version"), 1);
    assert_int_equal(int_at(a, "latest_version"), 1);
    assert_string_equal(str_at(p, "cluster"), "p");
    assert_true(json_is_null(json_object_get(p, "active_version")));
    assert_int_equal(int_at(p, "latest_version"), 5);
    json_decref(doc);
    app_close(app, store);
}

static int64_t hooked_version;
static char hooked_cluster[RKD_CLUSTER_MAX];

static int hooked_changes; /* calls for other changes (version 0) */

/* The wake hook: counts activations in *arg, and the other changes apart. */
static void on_activation(void *arg, const char *cluster, int64_t version)
{
    if (version == 0) {
        hooked_changes++;
        return;
    }
    *(int *)arg += 1;
    hooked_version = version;
    snprintf(hooked_cluster, sizeof hooked_cluster, "%s", cluster);
}

/* GET .../changes of cluster x: its seq, and whether it asked to be held (waiting on changes). */
static int64_t changes(rkd_app *app, const char *query, int *held)
{
    rkd_response r = run(app, "GET", "/v1/clusters/x/changes", query, NULL, NULL, 0);
    *held = r.wait_seconds > 0;
    if (*held) {
        assert_int_equal(r.wait_changes, 1);
        assert_string_equal(r.wait_cluster, "x");
        assert_null(r.body);
        rkd_response_clear(&r);
        return 0;
    }
    json_t *doc = expect_json(r, 200);
    int64_t seq = int_at(doc, "seq");
    json_decref(doc);
    return seq;
}

/* The change counter (docs/API.md, GET .../changes): a write moves it on and calls the hook with
 * version 0; a dry run, a read or a failed write does not; `since` equal to it holds the request.
 */
static void test_changes(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "changes", &store, NULL);
    int hooks = 0, held = 0;
    char q[96];
    rkd_app_set_activation_hook(app, on_activation, &hooks);
    expect_error(get(app, "/v1/clusters/x/changes", NULL, NULL), 404, "unknown_cluster", NULL);
    publish(app, "x", 2, NULL);
    int64_t seq = changes(app, NULL, &held);
    assert_false(held);
    snprintf(q, sizeof q, "since=%lld&wait=5", (long long)seq);
    assert_int_equal(changes(app, q, &held), 0);
    assert_true(held); /* nothing new: wait */
    snprintf(q, sizeof q, "since=%lld", (long long)seq);
    assert_int_equal(changes(app, q, &held), seq); /* no wait asked: at once */
    int before = hooked_changes;
    publish(app, "x", 3, NULL);
    assert_int_equal(hooked_changes, before + 1);
    snprintf(q, sizeof q, "since=%lld&wait=5", (long long)seq);
    assert_int_equal(changes(app, q, &held), seq + 1); /* news: at once */
    json_decref(activate(app, "x", 1, NULL, 200));
    assert_int_equal(hooks, 1); /* an activation wakes with its version */
    int64_t now = changes(app, NULL, &held);
    assert_int_equal(now, seq + 2); /* the activation woke once: the dispatcher left it */
    json_t *plan = expect_json(get(app, "/v1/clusters/x/plan", "to=2", NULL), 200);
    char body[128];
    snprintf(body, sizeof body, "{\"digest\":\"%s\",\"dry_run\":true}", str_at(plan, "digest"));
    json_decref(plan);
    json_decref(expect_json(
        run(app, "POST", "/v1/clusters/x/versions/2/approve", NULL, NULL, body, 0), 200));
    expect_error(run(app, "POST", "/v1/clusters/x/versions/9/activate", NULL, NULL, NULL, 0), 404,
                 "unknown_version", NULL);
    assert_int_equal(changes(app, NULL, &held), now); /* neither a dry run nor a refusal */
    expect_error(get(app, "/v1/clusters/x/changes", "since=-1", NULL), 400, "invalid_parameter",
                 "since");
    expect_error(get(app, "/v1/clusters/x/changes", "wait=61", NULL), 400, "invalid_parameter",
                 "wait");
    app_close(app, store);
}

/* GET /ring with headers; checks status and ETag; returns the body's version (0 for none). */
static int64_t ring(rkd_app *app, const char *query, const char *headers, int resumed, int status,
                    const char *etag)
{
    rkd_response r = run(app, "GET", "/v1/clusters/r/ring", query, headers, NULL, resumed);
    assert_int_equal(r.status, status);
    assert_string_equal(r.etag, etag);
    assert_string_equal(r.route, "/v1/clusters/{c}/ring");
    if (status != 200) {
        assert_null(r.body);
        rkd_response_clear(&r);
        return 0;
    }
    json_t *doc = expect_json(r, 200);
    int64_t v = int_at(doc, "version");
    assert_string_equal(str_at(doc, "state"), "active");
    assert_non_null(json_object_get(doc, "nodes"));
    json_decref(doc);
    return v;
}

/* The ring's ETag of version v (published) of cluster r in `app` into tag, and an If-None-Match
 * header naming it into inm. */
static void tags(rkd_app *app, rkd_store *store, int64_t v, char tag[RKD_ETAG_MAX], char inm[96])
{
    char path[64];
    snprintf(path, sizeof path, "/v1/clusters/r/versions/%lld", (long long)v);
    json_t *doc = expect_json(get(app, path, NULL, NULL), 200);
    snprintf(tag, RKD_ETAG_MAX, "\"v%lld.%s.%s\"", (long long)v, rkd_store_id(store),
             str_at(doc, "fingerprint"));
    snprintf(inm, 96, "If-None-Match: %s", tag);
    json_decref(doc);
}

static void test_ring_etag_wait(void **state)
{
    (void)state;
    rkd_store *store;
    char v1[RKD_ETAG_MAX], v2[RKD_ETAG_MAX], v3[RKD_ETAG_MAX], inm[96], inm2[96], unused[96];
    rkd_app *app = app_open(tmpdir, "ring", &store, NULL);
    int hooks = 0;
    rkd_app_set_activation_hook(app, on_activation, &hooks);
    expect_error(get(app, "/v1/clusters/r/ring", NULL, NULL), 404, "unknown_cluster", NULL);
    publish(app, "r", 2, NULL);
    publish(app, "r", 3, NULL);
    tags(app, store, 1, v1, inm);
    tags(app, store, 2, v2, inm2);
    expect_error(get(app, "/v1/clusters/r/ring", NULL, NULL), 404, "no_active_version", NULL);
    json_decref(activate(app, "r", 1, NULL, 200));
    assert_int_equal(hooks, 1);
    assert_int_equal(hooked_version, 1);
    assert_string_equal(hooked_cluster, "r");

    assert_int_equal(ring(app, NULL, NULL, 0, 200, v1), 1);
    assert_int_equal(ring(app, NULL, NULL, 0, 200, v1), 1); /* from the cache */
    json_t *a = expect_json(get(app, "/v1/clusters/r/ring", NULL, NULL), 200);
    json_t *b = expect_json(get(app, "/v1/clusters/r/versions/1", NULL, NULL), 200);
    /* The ring document is the version document and the migration window (docs/API.md). */
    assert_true(json_is_null(json_object_get(a, "previous")));
    json_object_del(a, "previous");
    assert_true(json_equal(a, b));
    assert_string_equal(str_at(a, "store_id"), rkd_store_id(store));
    json_decref(a);
    json_decref(b);

    ring(app, NULL, inm, 0, 304, v1);
    ring(app, "wait=0", inm, 0, 304, v1);
    assert_int_equal(ring(app, "wait=30", NULL, 0, 200, v1), 1); /* no INM: at once */
    rkd_response r = run(app, "GET", "/v1/clusters/r/ring", "wait=30", inm, NULL, 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.wait_seconds, 30);
    assert_string_equal(r.wait_cluster, "r");
    assert_null(r.body);
    rkd_response_clear(&r);
    ring(app, "wait=30", inm, 1, 304, v1); /* resumed: answer now */
    expect_error(get(app, "/v1/clusters/r/ring", "wait=61", inm), 400, "invalid_parameter", "wait");
    expect_error(get(app, "/v1/clusters/r/ring", "wait=soon", inm), 400, "invalid_parameter",
                 "wait");

    /* Without the store id, or with another one, v1 may be another ring: never a 304. A bare tag
     * still waits (older clients long-poll with it), then gets the ring. */
    const char *bare = "If-None-Match: \"v1\"";
    assert_int_equal(ring(app, NULL, bare, 0, 200, v1), 1);
    assert_int_equal(ring(app, NULL, "If-None-Match: \"v1.0123456789abcdef\"", 0, 200, v1), 1);
    assert_int_equal(ring(app, "wait=30", "If-None-Match: \"v1.0123456789abcdef\"", 0, 200, v1), 1);
    r = run(app, "GET", "/v1/clusters/r/ring", "wait=30", bare, NULL, 0);
    assert_int_equal(r.wait_seconds, 30);
    rkd_response_clear(&r);
    assert_int_equal(ring(app, "wait=30", bare, 1, 200, v1), 1);
    /* Nor without the fingerprint (clients before it): it waits, then gets the ring. */
    char no_fp[96];
    snprintf(no_fp, sizeof no_fp, "If-None-Match: \"v1.%s\"", rkd_store_id(store));
    assert_int_equal(ring(app, NULL, no_fp, 0, 200, v1), 1);
    r = run(app, "GET", "/v1/clusters/r/ring", "wait=30", no_fp, NULL, 0);
    assert_int_equal(r.wait_seconds, 30);
    rkd_response_clear(&r);
    /* v1 of this store with another fingerprint: a ring a hostile server sent under this store's
     * id before the store issued v1. Sent the real one at once, never held nor 304. */
    char forged[96];
    snprintf(forged, sizeof forged, "If-None-Match: \"v1.%s.0123456789abcdef\"",
             rkd_store_id(store));
    assert_int_equal(ring(app, NULL, forged, 0, 200, v1), 1);
    assert_int_equal(ring(app, "wait=30", forged, 0, 200, v1), 1);

    json_decref(activate(app, "r", 2, NULL, 200));
    assert_int_equal(hooks, 2);
    assert_int_equal(hooked_version, 2);
    assert_int_equal(ring(app, "wait=30", inm, 1, 200, v2), 2); /* woken: the new ring */
    assert_int_equal(ring(app, "wait=30", inm, 0, 200, v2), 2); /* stale INM */
    assert_int_equal(ring(app, NULL, "If-None-Match: garbage", 0, 200, v2), 2);
    assert_int_equal(ring(app, NULL, "If-None-Match: \"v2.0123456789abcdeF\"", 0, 200, v2), 2);
    ring(app, NULL, inm2, 0, 304, v2);

    /* Activations made beside the API (same store handle) reach the cache and the hook too. */
    rkd_store_version *v = NULL;
    publish(app, "r", 4, NULL);
    tags(app, store, 3, v3, unused);
    rkd_store_activation any = {RKD_STORE_ANY, NULL, -1, NULL, NULL, 0, NULL};
    assert_int_equal(rkd_store_activate(store, "r", 3, &any, &v, NULL), RK_OK);
    rkd_store_version_free(v);
    assert_int_equal(hooks, 3);
    assert_int_equal(ring(app, NULL, inm2, 0, 200, v3), 3);

    /* If-Match takes the ring's ETag too; one of another store names a version lost to a restore */
    publish(app, "r", 5, NULL);
    expect_error(run(app, "POST", "/v1/clusters/r/versions/4/activate", NULL,
                     "If-Match: \"v3.0123456789abcdef\"", NULL, 0),
                 412, "precondition_failed", "If-Match");
    char if_match[80];
    snprintf(if_match, sizeof if_match, "If-Match: %s", v3);
    json_decref(activate(app, "r", 4, if_match, 200));
    app_close(app, store);
}

/* The version GET /ring answers for `cluster`. */
static int64_t ring_version(rkd_app *app, const char *cluster)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/%s/ring", cluster);
    json_t *doc = expect_json(get(app, path, NULL, NULL), 200);
    int64_t v = int_at(doc, "version");
    json_decref(doc);
    return v;
}

/* GET /plan; returns the JSON body after checking the status. */
static json_t *plan(rkd_app *app, const char *cluster, const char *query)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/%s/plan", cluster);
    rkd_response r = get(app, path, query, NULL);
    assert_string_equal(r.route, "/v1/clusters/{c}/plan");
    return expect_json(r, 200);
}

static void expect_text_plan(rkd_response r)
{
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/plain; charset=utf-8");
    assert_non_null(r.body);
    assert_int_equal(strlen(r.body), r.body_len);
    assert_non_null(strstr(r.body, "pl"));
    rkd_response_clear(&r);
}

static void test_plan(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "plan", &store, NULL);
    expect_error(get(app, "/v1/clusters/pl/plan", NULL, NULL), 404, "unknown_cluster", NULL);
    publish(app, "pl", 3, NULL);
    publish(app, "pl", 4, NULL);
    expect_error(get(app, "/v1/clusters/pl/plan", NULL, NULL), 404, "no_active_version", NULL);
    json_t *doc = plan(app, "pl", "from=1&to=2");
    assert_int_equal(int_at(json_object_get(doc, "from"), "version"), 1);
    json_decref(doc);
    json_decref(activate(app, "pl", 1, NULL, 200));

    doc = plan(app, "pl", NULL);
    assert_string_equal(str_at(doc, "cluster"), "pl");
    assert_int_equal(int_at(json_object_get(doc, "from"), "version"), 1);
    assert_int_equal(int_at(json_object_get(doc, "to"), "version"), 2);
    assert_true(json_array_size(json_object_get(doc, "arcs")) > 0);
    assert_null(json_object_get(doc, "steps"));
    double moved = json_real_value(json_object_get(doc, "moved_fraction"));
    assert_true(moved > 0 && moved < 1);
    json_t *again = plan(app, "pl", "from=1&to=2"); /* rings from the cache: the same plan */
    assert_true(json_equal(doc, again));
    json_decref(again);
    json_decref(doc);

    doc = plan(app, "pl", "arcs=false&max_step=0.01&keys=1000");
    assert_null(json_object_get(doc, "arcs"));
    if (json_array_size(json_object_get(doc, "steps")) < 2)
        fail_msg("want steps: %s", json_dumps(doc, 0));
    json_t *t0 = json_array_get(json_object_get(doc, "transfers"), 0);
    assert_non_null(json_object_get(t0, "keys_estimate"));
    json_decref(doc);
    doc = plan(app, "pl", "from=2&to=1&arcs=true&max_step=1");
    assert_int_equal(int_at(json_object_get(doc, "from"), "version"), 2);
    assert_non_null(json_object_get(doc, "arcs"));
    json_decref(doc);

    expect_text_plan(get(app, "/v1/clusters/pl/plan", "format=text", NULL));
    expect_text_plan(get(app, "/v1/clusters/pl/plan", NULL, "Accept: text/html, text/plain"));
    json_decref(
        expect_json(get(app, "/v1/clusters/pl/plan", "format=json", "Accept: text/plain"), 200));

    static const char *const bad[][2] = {{"max_step=0", "max_step"},
                                         {"max_step=1.5", "max_step"},
                                         {"max_step=abc", "max_step"},
                                         {"max_step=nan", "max_step"},
                                         {"max_step=-0.1", "max_step"},
                                         {"keys=0", "keys"},
                                         {"keys=many", "keys"},
                                         {"format=xml", "format"},
                                         {"arcs=no", "arcs"},
                                         {"from=abc", "from"},
                                         {"to=0", "to"},
                                         {"from=1.0", "from"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_error(get(app, "/v1/clusters/pl/plan", bad[i][0], NULL), 400, "invalid_parameter",
                     bad[i][1]);
    expect_error(get(app, "/v1/clusters/pl/plan", "from=9", NULL), 404, "unknown_version", NULL);
    expect_error(get(app, "/v1/clusters/pl/plan", "to=9", NULL), 404, "unknown_version", NULL);

    char *body = topology(3, "md5_32", NULL);
    json_decref(
        expect_json(run(app, "POST", "/v1/clusters/pl/versions", NULL, NULL, body, 0), 201));
    free(body);
    expect_error(get(app, "/v1/clusters/pl/plan", NULL, NULL), 422, "hash_mismatch", "hash");
    app_close(app, store);
}

/* Reverts version v of cluster "rv" and returns the new version document. */
static json_t *revert(rkd_app *app, int64_t v, const char *query)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/rv/versions/%lld/revert", (long long)v);
    rkd_response r = run(app, "POST", path, query, NULL, NULL, 0);
    char location[sizeof r.location];
    assert_string_equal(r.route, "/v1/clusters/{c}/versions/{v}/revert");
    memcpy(location, r.location, sizeof location);
    json_t *doc = expect_json(r, 201);
    char want[128];
    snprintf(want, sizeof want, "/v1/clusters/rv/versions/%lld", (long long)int_at(doc, "version"));
    assert_string_equal(location, want);
    return doc;
}

static void test_revert(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "revert", &store, NULL);
    char long_comment[RK_MAX_COMMENT + 1]; /* "x" and 2-byte characters: 1023 bytes */
    long_comment[0] = 'x';
    for (size_t i = 1; i + 1 < RK_MAX_COMMENT; i += 2)
        memcpy(long_comment + i, "\xc3\xa9", 2);
    long_comment[RK_MAX_COMMENT - 1] = '\0';
    const char *const comments[] = {"first", NULL, long_comment};
    for (size_t i = 0; i < 3; i++) {
        char *body = topology(i + 2, "fnv1a_32", comments[i]);
        json_decref(
            expect_json(run(app, "POST", "/v1/clusters/rv/versions", NULL, NULL, body, 0), 201));
        free(body);
    }
    json_t *orig = expect_json(get(app, "/v1/clusters/rv/versions/1", NULL, NULL), 200);
    json_t *doc = revert(app, 1, NULL);
    assert_int_equal(int_at(doc, "version"), 4);
    assert_string_equal(str_at(doc, "state"), "staged");
    assert_string_equal(str_at(doc, "comment"), "revert to v1: first");
    assert_string_equal(str_at(doc, "author"), "ops");
    assert_string_equal(str_at(doc, "fingerprint"), str_at(orig, "fingerprint"));
    assert_true(json_equal(json_object_get(doc, "nodes"), json_object_get(orig, "nodes")));
    json_decref(doc);
    json_decref(orig);

    doc = revert(app, 2, "activate=true");
    assert_string_equal(str_at(doc, "comment"), "revert to v2");
    assert_string_equal(str_at(doc, "state"), "active");
    json_decref(doc);

    doc = revert(app, 3, NULL);
    const char *c = str_at(doc, "comment");
    /* Cut at 1024 bytes would split a character: one byte less. */
    assert_int_equal(strlen(c), RK_MAX_COMMENT - 1);
    assert_int_equal(strncmp(c, "revert to v3: x\xc3\xa9", 17), 0);
    assert_memory_equal(c + strlen(c) - 2, "\xc3\xa9", 2);
    json_decref(doc);

    expect_error(run(app, "POST", "/v1/clusters/rv/versions/99/revert", NULL, NULL, NULL, 0), 404,
                 "unknown_version", NULL);
    expect_error(
        run(app, "POST", "/v1/clusters/rv/versions/1/revert", NULL, "If-Match: \"v1\"", NULL, 0),
        412, "precondition_failed", NULL);
    app_close(app, store);
}

static void test_metrics_counted(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    rkd_app *app = app_open(tmpdir, "metrics", &store, m);
    publish(app, "m", 2, "activate=true");
    publish(app, "m", 3, NULL);
    rkd_response r = get(app, "/metrics", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "ringkeeper_publishes_total 2"));
    assert_non_null(strstr(r.body, "ringkeeper_activations_total 1"));
    assert_non_null(strstr(r.body, "ringkeeper_active_version{cluster=\"m\"} 1"));
    rkd_response_clear(&r);
    app_close(app, store);

    /* A new app over the same database reports the active versions it finds. */
    rkd_metrics *m2 = rkd_metrics_new();
    app = app_open(tmpdir, "metrics", &store, m2);
    r = get(app, "/metrics", NULL, NULL);
    assert_non_null(strstr(r.body, "ringkeeper_active_version{cluster=\"m\"} 1"));
    rkd_response_clear(&r);
    app_close(app, store);
    rkd_metrics_free(m2);
    rkd_metrics_free(m);
}

static int freed_values;

static void free_value(void *v)
{
    freed_values++;
    free(v);
}

/* Puts a 1-byte value of `size` counted bytes; returns 1 when the cache kept it. */
static int put(rkd_cache *c, const char *cluster, int64_t key, int64_t tag, size_t size,
               uint64_t gen)
{
    rkd_entry *e = rkd_cache_put(c, cluster, key, tag, malloc(1), size, gen);
    assert_non_null(e);
    rkd_cache_release(c, e);
    e = rkd_cache_get(c, cluster, key);
    int kept = e && e->tag == tag;
    rkd_cache_release(c, e);
    return kept;
}

/* The LRU behind the ring and plan caches: slots, byte budget, holds, tags, generations. */
static void test_cache(void **state)
{
    (void)state;
    rkd_cache *c = rkd_cache_new(2, 100, free_value);
    assert_non_null(c);
    freed_values = 0;
    uint64_t gen = rkd_cache_gen(c);
    rkd_entry *held = rkd_cache_put(c, "a", 1, 0, malloc(1), 10, gen);
    assert_true(put(c, "a", 2, 0, 10, gen));
    assert_true(put(c, "b", 1, 0, 10, gen)); /* evicts a/1, the least recently used */
    assert_null(rkd_cache_get(c, "a", 1));
    assert_int_equal(freed_values, 0); /* still held */
    assert_int_equal(held->key, 1);
    rkd_cache_release(c, held);
    assert_int_equal(freed_values, 1);
    assert_false(put(c, "z", 1, 0, 10, gen)); /* new key, but something was evicted meanwhile */
    assert_int_equal(freed_values, 2);

    gen = rkd_cache_gen(c);
    assert_true(put(c, "c", 1, 0, 95, gen)); /* over the byte budget: evicts both others */
    assert_null(rkd_cache_get(c, "a", 2));
    assert_null(rkd_cache_get(c, "b", 1));
    assert_int_equal(freed_values, 4);
    assert_false(put(c, "d", 1, 0, 101, rkd_cache_gen(c))); /* larger than the whole budget */
    assert_int_equal(freed_values, 5);

    /* Tags: a value only moves forward. */
    gen = rkd_cache_gen(c);
    assert_true(put(c, "v", 0, 4, 1, gen));
    assert_true(put(c, "v", 0, 5, 1, gen));
    assert_false(put(c, "v", 0, 4, 1, gen)); /* a reader that loaded v4 late */
    rkd_cache_raise(c, "v", 0, 6);           /* v6 activated: forget v5 */
    assert_null(rkd_cache_get(c, "v", 0));
    assert_false(put(c, "v", 0, 5, 1, gen)); /* loaded before the raise */
    assert_true(put(c, "v", 0, 6, 1, rkd_cache_gen(c)));
    rkd_cache_raise(c, "v", 0, 6); /* already there: kept */
    rkd_entry *e = rkd_cache_get(c, "v", 0);
    assert_non_null(e);
    assert_int_equal(e->tag, 6);
    rkd_cache_release(c, e);
    rkd_cache_free(c);
    assert_int_equal(freed_values, 11);
}

/* Checks that side `side` ("from" or "to") of plan `doc` is version v, built from v's topology. */
static void expect_plan_side(json_t *doc, const char *side, int64_t v, const char *fingerprint)
{
    json_t *o = json_object_get(doc, side);
    assert_int_equal(int_at(o, "version"), v);
    assert_string_equal(str_at(o, "fingerprint"), fingerprint);
}

/* More versions than the ring cache keeps: plans stay right while rings are evicted. Both sides of
 * every plan are the versions asked for, with their own rings (the fingerprints of their version
 * documents), whether the ring was cached or rebuilt. */
static void test_plan_many_versions(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "plan_many", &store, NULL);
    char fingerprint[13][24];
    for (size_t i = 0; i < 12; i++)
        publish(app, "pl", 2 + i % 5, i == 0 ? "activate=true" : NULL);
    for (int v = 1; v <= 12; v++)
        version_str(app, "pl", v, "fingerprint", fingerprint[v], sizeof fingerprint[v]);
    for (int round = 0; round < 2; round++) {
        for (int v = 2; v <= 12; v++) {
            char query[64];
            snprintf(query, sizeof query, "from=%d&to=%d&arcs=false", v - 1, v);
            json_t *doc = plan(app, "pl", query);
            expect_plan_side(doc, "from", v - 1, fingerprint[v - 1]);
            expect_plan_side(doc, "to", v, fingerprint[v]);
            json_decref(doc);
        }
    }
    app_close(app, store);
}

typedef struct reader {
    rkd_app *app;
    int stop;      /* set (atomically) by the main thread */
    int backwards; /* a ring older than one already seen */
    int failures;  /* any answer but 200 */
} reader;

/* GETs the ring and a plan until stopped; the ring's version must never go back. */
static void *read_rings(void *arg)
{
    reader *r = arg;
    int64_t seen = 0;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        rkd_response resp = get(r->app, "/v1/clusters/cc/ring", NULL, NULL);
        json_t *doc = resp.status == 200 ? json_loadb(resp.body, resp.body_len, 0, NULL) : NULL;
        int64_t v = json_integer_value(json_object_get(doc, "version"));
        if (!doc && r->failures++ == 0)
            fprintf(stderr, "ring: %d %.*s\n", resp.status, (int)resp.body_len, resp.body);
        r->backwards += v < seen;
        seen = v > seen ? v : seen;
        json_decref(doc);
        rkd_response_clear(&resp);
        resp = get(r->app, "/v1/clusters/cc/plan", "from=1&to=2&arcs=false", NULL);
        if (resp.status != 200 && r->failures++ == 0)
            fprintf(stderr, "plan: %d %.*s\n", resp.status, (int)resp.body_len, resp.body);
        rkd_response_clear(&resp);
    }
    return NULL;
}

/* rkd_plan_slot for a request from `addr` (NULL: unknown): 1 taken, or 0 refused 503. */
static int plan_slot_from(rkd_app *app, const char *addr)
{
    rkd_request req = {.addr = addr};
    rkd_response resp = {0};
    rkd_call c = {.app = app, .req = &req, .resp = &resp};
    int taken = rkd_plan_slot(&c);
    assert_int_equal(taken ? 0 : resp.status, taken ? 0 : 503);
    rkd_response_clear(&resp);
    return taken;
}

static void plan_slot_back(rkd_app *app, const char *addr)
{
    rkd_request req = {.addr = addr};
    rkd_plan_slot_release(&(rkd_call){.app = app, .req = &req});
}

/* One address holds all the plan slots but one: an IPv6 one counts by its /64, an IPv4-mapped one
 * as the IPv4 address, requests of no known address as one. */
static void test_plan_slot_share(void **state)
{
    static const struct {
        const char *holds, *asks;
        int same; /* the same address for the slots */
    } cases[] = {
        {"2001:db8:1:2::1", "2001:db8:1:2:ffff::9", 1},
        {"2001:db8:1:2::1", "2001:db8:1:3::1", 0},
        {"::ffff:192.0.2.7", "192.0.2.7", 1},
        {"192.0.2.7", "192.0.2.8", 0},
        {NULL, NULL, 1},
    };
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "slots", &store, NULL);
    assert_int_equal(rkd_app_set_plan_limits(app, &(rkd_plan_limits){.concurrency = 3}), RK_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_true(plan_slot_from(app, cases[i].holds));
        assert_true(plan_slot_from(app, cases[i].holds));
        assert_int_equal(plan_slot_from(app, cases[i].asks), !cases[i].same);
        if (!cases[i].same)
            plan_slot_back(app, cases[i].asks);
        plan_slot_back(app, cases[i].holds);
        plan_slot_back(app, cases[i].holds);
    }
    app_close(app, store);
}

/* Readers on several threads while versions are activated: no stale ring after a newer one. */
static void test_concurrent(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = app_open(tmpdir, "concurrent", &store, NULL);
    /* every reader plans, all from one address (none known): half the slots are theirs */
    assert_int_equal(rkd_app_set_plan_limits(app, &(rkd_plan_limits){.concurrency = 8}), RK_OK);
    publish(app, "cc", 2, "activate=true");
    publish(app, "cc", 3, NULL);
    reader readers[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        readers[i] = (reader){.app = app};
        assert_int_equal(pthread_create(&threads[i], NULL, read_rings, &readers[i]), 0);
    }
    for (int i = 0; i < 20; i++)
        publish(app, "cc", 2 + i % 4, "activate=true");
    for (int i = 0; i < 4; i++)
        __atomic_store_n(&readers[i].stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL); /* all of them before any assertion can jump away */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(readers[i].backwards, 0);
        assert_int_equal(readers[i].failures, 0);
    }
    assert_int_equal(ring_version(app, "cc"), 22);
    app_close(app, store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_publish_document),
        cmocka_unit_test(test_publish_errors),
        cmocka_unit_test(test_step_weights),
        cmocka_unit_test(test_state_machine),
        cmocka_unit_test(test_list_paging),
        cmocka_unit_test(test_ring_etag_wait),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_revert),
        cmocka_unit_test(test_metrics_counted),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_plan_many_versions),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_plan_slot_share),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
