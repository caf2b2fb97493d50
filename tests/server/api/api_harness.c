/* api_harness.c — the API's requests in-process (api_harness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api_harness.h"
#include "fake_request.h"

/* A request built in-process: its strings, and the pairs its lookups read. */
typedef struct fake {
    rkd_request req;
    char buf[2048];  /* copies of names and values */
    rk_fake_pairs p; /* the request's ctx */
} fake;

/* Copies `text` into f->buf from *used on and splits it into `pairs`. */
static void parse_pairs(fake *f, size_t *used, const char *text, const char *sep, const char *sep2,
                        const char *(*pairs)[2])
{
    char *s = f->buf + *used;
    size_t len = strlen(text ? text : "");
    assert_true(*used + len + 1 < sizeof f->buf);
    memcpy(s, text ? text : "", len + 1);
    *used += len + 1;
    assert_true(fake_split(s, sep, sep2, pairs) <= RK_FAKE_PAIRS);
}

rkd_app *app_open(const char *dir, const char *name, rkd_store **store, rkd_metrics *metrics)
{
    char path[512];
    rk_error err = {0};
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    *store =
        rkd_store_open_with(path, &(rkd_store_param){"migrations", RK_MIGRATIONS_DIR}, 1, &err);
    if (!*store)
        fail_msg("rkd_store_open: %s", err.message);
    rkd_app *app = rkd_app_new(*store, metrics, &err);
    if (!app)
        fail_msg("rkd_app_new: %s", err.message);
    return app;
}

void app_close(rkd_app *app, rkd_store *store)
{
    rkd_app_free(app);
    rkd_store_close(store);
}

rkd_response run(rkd_app *app, const char *method, const char *path, const char *query,
                 const char *headers, const char *body, int resumed)
{
    fake f;
    size_t used = 0;
    memset(&f, 0, sizeof f);
    parse_pairs(&f, &used, query, "&", "=", f.p.q);
    parse_pairs(&f, &used, headers, "\n", ": ", f.p.h);
    f.req = (rkd_request){.method = method,
                          .path = path,
                          .query = fake_query,
                          .header = fake_header,
                          .ctx = &f.p,
                          .body = body,
                          .body_len = body ? strlen(body) : 0,
                          .author = "ops",
                          .resumed = resumed};
    rkd_response resp;
    memset(&resp, 0, sizeof resp);
    rkd_api_handle(app, &f.req, &resp);
    return resp;
}

rkd_response get(rkd_app *app, const char *path, const char *query, const char *headers)
{
    return run(app, "GET", path, query, headers, NULL, 0);
}

json_t *body_json(const rkd_response *r)
{
    json_error_t jerr;
    assert_non_null(r->body);
    assert_string_equal(r->content_type, "application/json; charset=utf-8");
    json_t *doc = json_loadb(r->body, r->body_len, 0, &jerr);
    if (!doc)
        fail_msg("not JSON (%s): %.*s", jerr.text, (int)r->body_len, r->body);
    return doc;
}

void expect_error(rkd_response r, int status, const char *code, const char *field)
{
    if (r.status != status)
        fail_msg("status %d, want %d: %.*s", r.status, status, (int)r.body_len, r.body);
    json_t *doc = body_json(&r);
    json_t *e = json_object_get(doc, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), code);
    const char *message = json_string_value(json_object_get(e, "message"));
    assert_non_null(message);
    assert_true(strlen(message) > 10);
    json_t *f = json_object_get(e, "field");
    if (field)
        assert_string_equal(json_string_value(f), field);
    else if (f)
        fail_msg("unexpected field: %.*s", (int)r.body_len, r.body);
    json_decref(doc);
    rkd_response_clear(&r);
}

json_t *expect_json(rkd_response r, int status)
{
    if (r.status != status)
        fail_msg("status %d, want %d: %.*s", r.status, status, (int)r.body_len, r.body);
    json_t *doc = body_json(&r);
    rkd_response_clear(&r);
    return doc;
}

int64_t int_at(json_t *doc, const char *key)
{
    json_t *v = json_object_get(doc, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

const char *str_at(json_t *doc, const char *key)
{
    json_t *v = json_object_get(doc, key);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

char *topology(size_t n, const char *hash, const char *comment)
{
    json_t *nodes = json_array();
    for (size_t i = 0; i < n; i++) {
        char id[32], addr[48];
        snprintf(id, sizeof id, "n%zu", i);
        snprintf(addr, sizeof addr, "10.0.0.%zu:11211", i + 1);
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:i}", "id", id, "addr", addr, "weight",
                                               1 + (int)(i % 2)));
    }
    json_t *doc = json_pack("{s:s, s:i, s:o}", "hash", hash, "vnode_factor", 16, "nodes", nodes);
    if (comment)
        json_object_set_new(doc, "comment", json_string(comment));
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    assert_non_null(text);
    return text;
}

int64_t publish(rkd_app *app, const char *cluster, size_t n, const char *query)
{
    char path[128];
    char *body = topology(n, "fnv1a_32", "test");
    snprintf(path, sizeof path, "/v1/clusters/%s/versions", cluster);
    json_t *doc = expect_json(run(app, "POST", path, query, NULL, body, 0), 201);
    int64_t v = int_at(doc, "version");
    json_decref(doc);
    free(body);
    return v;
}

json_t *activate(rkd_app *app, const char *cluster, int64_t v, const char *headers, int status)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/%s/versions/%lld/activate", cluster, (long long)v);
    rkd_response r = run(app, "POST", path, NULL, headers, NULL, 0);
    return status == 200 ? expect_json(r, 200) : (expect_error(r, status, "conflict", NULL), NULL);
}

const char *version_str(rkd_app *app, const char *cluster, int64_t v, const char *key, char *out,
                        size_t cap)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/%s/versions/%lld", cluster, (long long)v);
    json_t *doc = expect_json(get(app, path, NULL, NULL), 200);
    snprintf(out, cap, "%s", str_at(doc, key));
    json_decref(doc);
    return out;
}

const char *state_of(rkd_app *app, const char *cluster, int64_t v, char *out, size_t cap)
{
    return version_str(app, cluster, v, "state", out, cap);
}
