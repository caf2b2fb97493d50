/* etcd_kv.c — etcd's key-value API over the gateway client (etcd_http.h): reading a key and a
 * range, transactions (compare mod revisions, then put), and the watch stream a thread reads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "etcd_http_internal.h"
#include "store.h"

/* ---- Reading ---- */

void rke_kv_deinit(rke_kv *kv)
{
    free(kv->key);
    free(kv->value);
    memset(kv, 0, sizeof *kv);
}

void rke_kvs_free(rke_kvs *kvs)
{
    for (size_t i = 0; i < kvs->count; i++)
        rke_kv_deinit(&kvs->items[i]);
    free(kvs->items);
    memset(kvs, 0, sizeof *kvs);
}

char *rke_kvs_take_value(rke_kvs *kvs)
{
    char *value = kvs->count == 1 ? kvs->items[0].value : NULL;
    if (value)
        kvs->items[0].value = NULL;
    return value;
}

static int bad_answer(rk_error *err, const char *what)
{
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "etcd answered %s", what);
}

/* One KeyValue of an answer; etcd leaves out an empty value and zero revisions. */
static int parse_kv(json_t *j, rke_kv *kv, rk_error *err)
{
    const char *key = json_string_value(json_object_get(j, "key"));
    const char *value = json_string_value(json_object_get(j, "value"));
    const char *mod = json_string_value(json_object_get(j, "mod_revision"));
    size_t klen;
    int rc = key ? rke_http_unb64(key, &kv->key, &klen) : RK_EINVAL;
    rc = rc ? rc : rke_http_unb64(value ? value : "", &kv->value, &kv->len);
    kv->mod_revision = mod ? strtoll(mod, NULL, 10) : 0;
    if (rc == RK_ENOMEM)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading etcd's answer");
    return rc ? bad_answer(err, "a key that is not base64") : RK_OK;
}

static int parse_kvs(json_t *resp, rke_kvs *out, rk_error *err)
{
    json_t *kvs = json_object_get(resp, "kvs");
    size_t n = json_array_size(kvs);
    const char *rev =
        json_string_value(json_object_get(json_object_get(resp, "header"), "revision"));
    const char *total = json_string_value(json_object_get(resp, "count"));
    out->revision = rev ? strtoll(rev, NULL, 10) : 0;
    out->total = total ? strtoll(total, NULL, 10) : 0; /* int64 is a string in the gateway's JSON */
    out->more = json_is_true(json_object_get(resp, "more"));
    if (n == 0)
        return RK_OK;
    out->items = calloc(n, sizeof *out->items);
    if (!out->items)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading etcd's answer");
    for (size_t i = 0; i < n; i++) {
        int rc = parse_kv(json_array_get(kvs, i), &out->items[i], err);
        out->count++;
        if (rc != RK_OK)
            return rc;
    }
    return RK_OK;
}

/* Adds `name`: base64 of `len` bytes to the object `o`; -1 when out of memory. */
static int set_b64(json_t *o, const char *name, const char *src, size_t len)
{
    char *enc = rke_http_b64(src, len);
    int rc = enc ? json_object_set_new(o, name, json_string(enc)) : -1;
    free(enc);
    return rc;
}

int rke_range(rke_client *c, const char *key, const char *end, rke_kvs *out, rk_error *err)
{
    return rke_range_with(c, key, end, NULL, out, err);
}

int rke_range_with(rke_client *c, const char *key, const char *end, const rke_range_opts *o,
                   rke_kvs *out, rk_error *err)
{
    json_t *req = json_object(), *resp = NULL;
    int unknown;
    int bad = !req || set_b64(req, "key", key, strlen(key)) ||
              (end && set_b64(req, "range_end", end, strlen(end))) ||
              (o && o->limit > 0 &&
               json_object_set_new(req, "limit", json_integer((json_int_t)o->limit)) != 0) ||
              (o && o->count_only && json_object_set_new(req, "count_only", json_true()) != 0) ||
              (o && o->revision > 0 &&
               json_object_set_new(req, "revision", json_integer((json_int_t)o->revision)) != 0);
    int rc = bad ? rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request")
                 : rke_http_call(c, "/v3/kv/range", req, 0, &resp, &unknown, err);
    rc = rc ? rc : parse_kvs(resp, out, err);
    json_decref(req);
    json_decref(resp);
    return rc;
}

/* {"request_range": {"key": ..., "range_end": ...}}, or NULL when out of memory. */
static json_t *range_op(const rke_range_req *r)
{
    json_t *range = json_object();
    int bad = !range || set_b64(range, "key", r->key, strlen(r->key)) ||
              (r->end && set_b64(range, "range_end", r->end, strlen(r->end)));
    json_t *op = bad ? NULL : json_pack("{sO}", "request_range", range);
    json_decref(range);
    return op;
}

int rke_ranges(rke_client *c, const rke_range_req *req, size_t n, rke_kvs *out, rk_error *err)
{
    json_t *ops = json_array(), *resp = NULL;
    int unknown, bad = !ops;
    for (size_t i = 0; !bad && i < n; i++)
        bad = json_array_append_new(ops, range_op(&req[i])) != 0;
    json_t *txn = bad ? NULL : json_pack("{sO}", "success", ops);
    json_decref(ops);
    int rc = txn ? rke_http_call(c, "/v3/kv/txn", txn, 0, &resp, &unknown, err)
                 : rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    json_t *responses = json_object_get(resp, "responses");
    if (rc == RK_OK && json_array_size(responses) != n)
        rc = bad_answer(err, "a txn of reads without their answers");
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        json_t *range = json_object_get(json_array_get(responses, i), "response_range");
        rc = range ? parse_kvs(range, &out[i], err) : bad_answer(err, "a read without its keys");
    }
    json_decref(txn);
    json_decref(resp);
    return rc;
}

int rke_get(rke_client *c, const char *key, rke_kv *out, rk_error *err)
{
    rke_kvs kvs = {0};
    memset(out, 0, sizeof *out);
    int rc = rke_range(c, key, NULL, &kvs, err);
    if (rc == RK_OK && kvs.count == 1) {
        *out = kvs.items[0];
        kvs.count = 0;
    }
    rke_kvs_free(&kvs);
    return rc;
}

char *rke_prefix_end(const char *prefix)
{
    char *end = strdup(prefix);
    size_t n = end ? strlen(end) : 0;
    if (n > 0)
        end[n - 1]++; /* prefixes here end in '/', so no byte overflows */
    return end;
}

/* ---- Transactions ---- */

void rke_txn_init(rke_txn *t)
{
    t->compare = json_array();
    t->success = json_array();
    t->bytes = 0;
    t->failed = !t->compare || !t->success;
}

void rke_txn_deinit(rke_txn *t)
{
    json_decref(t->compare);
    json_decref(t->success);
    memset(t, 0, sizeof *t);
}

void rke_txn_if_mod(rke_txn *t, const char *key, int64_t rev)
{
    char num[24];
    json_t *cmp = json_object();
    snprintf(num, sizeof num, "%lld", (long long)rev);
    t->failed |= !cmp || set_b64(cmp, "key", key, strlen(key)) ||
                 json_object_set_new(cmp, "target", json_string("MOD")) ||
                 json_object_set_new(cmp, "result", json_string("EQUAL")) ||
                 json_object_set_new(cmp, "mod_revision", json_string(num)) ||
                 json_array_append(t->compare, cmp);
    json_decref(cmp);
}

/* Appends {"<kind>": body} to t's success ops (taking body), or marks t failed. */
static void add_op(rke_txn *t, const char *kind, json_t *body)
{
    json_t *op = body ? json_pack("{so}", kind, body) : NULL;
    t->failed |= !op || json_array_append_new(t->success, op) != 0;
}

void rke_txn_put_leased(rke_txn *t, const char *key, const char *value, size_t len, int64_t lease)
{
    char num[24];
    json_t *put = json_object();
    snprintf(num, sizeof num, "%lld", (long long)lease);
    int bad = !put || set_b64(put, "key", key, strlen(key)) || set_b64(put, "value", value, len) ||
              (lease && json_object_set_new(put, "lease", json_string(num)) != 0);
    if (bad) {
        json_decref(put);
        put = NULL;
    }
    add_op(t, "request_put", put);
    t->bytes += strlen(key) + len;
}

void rke_txn_put(rke_txn *t, const char *key, const char *value, size_t len)
{
    rke_txn_put_leased(t, key, value, len, 0);
}

void rke_txn_delete_if(rke_txn *t, const char *key, int64_t rev)
{
    rke_txn inner;
    rke_txn_init(&inner);
    rke_txn_if_mod(&inner, key, rev);
    json_t *del = json_object();
    int bad = !del || set_b64(del, "key", key, strlen(key));
    add_op(&inner, "request_delete_range", bad ? NULL : del);
    if (bad)
        json_decref(del);
    json_t *nested = inner.failed
                         ? NULL
                         : json_pack("{sOsO}", "compare", inner.compare, "success", inner.success);
    add_op(t, "request_txn", nested);
    t->bytes += strlen(key);
    rke_txn_deinit(&inner);
}

size_t rke_txn_ops(const rke_txn *t)
{
    return json_array_size(t->success);
}

void rke_txn_put_str(rke_txn *t, const char *key, const char *value)
{
    rke_txn_put(t, key, value, strlen(value));
}

int rke_txn_commit(rke_client *c, const rke_txn *t, int *ok, int *unknown, rk_error *err)
{
    int64_t rev;
    return rke_txn_commit_at(c, t, ok, unknown, &rev, err);
}

int rke_txn_commit_at(rke_client *c, const rke_txn *t, int *ok, int *unknown, int64_t *rev,
                      rk_error *err)
{
    json_t *resp = NULL;
    *ok = 0;
    *unknown = 0;
    *rev = 0;
    if (t->failed)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    if (t->bytes > RKE_REQUEST_MAX)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "one change would write %zu bytes to etcd, over the %u one request "
                            "may carry; a comment or author that long cannot be stored",
                            t->bytes, RKE_REQUEST_MAX);
    json_t *req = json_pack("{sOsO}", "compare", t->compare, "success", t->success);
    int rc = req ? rke_http_call(c, "/v3/kv/txn", req, 1, &resp, unknown, err)
                 : rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    *ok = rc == RK_OK && json_is_true(json_object_get(resp, "succeeded"));
    const char *at =
        json_string_value(json_object_get(json_object_get(resp, "header"), "revision"));
    *rev = at ? strtoll(at, NULL, 10) : 0;
    json_decref(req);
    json_decref(resp);
    return rc;
}

/* ---- Watching ---- */

/* A watch message this long ends the stream. Messages are fragments of at most etcd's request
 * size (1.5 MiB by default, asked for with "fragment"), base64 and JSON making them a third
 * longer. */
#define WATCH_LINE_MAX (4u << 20)

typedef struct watch_state {
    buffer line;                    /* the message being received */
    rke_watch_fn fn;                /* the caller's */
    void *arg;                      /* its argument */
    const atomic_int *stop;         /* the caller's stop flag */
    char why[CURL_ERROR_SIZE + 64]; /* why the stream ended, when etcd said */
} watch_state;

/* Calls fn for each change of one message; 0 when the message ends the watch. */
static int watch_message(watch_state *w, json_t *msg)
{
    json_t *result = json_object_get(msg, "result");
    json_t *events = json_object_get(result, "events");
    if (!result || json_is_true(json_object_get(result, "canceled")) ||
        json_object_get(result, "compact_revision")) {
        const char *reason = json_string_value(json_object_get(result, "cancel_reason"));
        snprintf(w->why, sizeof w->why, "etcd ended the watch%s%s", reason ? ": " : "",
                 reason ? reason : " (compaction, or no leader)");
        return 0;
    }
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        rke_kv kv = {0};
        rk_error ignored;
        if (parse_kv(json_object_get(e, "kv"), &kv, &ignored) == 0) /* PUT has no "type" */
            w->fn(w->arg, &kv, json_object_get(e, "type") != NULL);
        rke_kv_deinit(&kv);
    }
    return 1;
}

/* Splits the stream into its newline-separated messages. */
static size_t on_watch_data(char *ptr, size_t size, size_t n, void *arg)
{
    watch_state *w = arg;
    size_t add = size * n;
    if (rke_http_on_data(ptr, 1, add, &w->line) != add)
        return 0;
    char *nl;
    while ((nl = memchr(w->line.data, '\n', w->line.len)) != NULL) {
        json_t *msg = json_loadb(w->line.data, (size_t)(nl - w->line.data), 0, NULL);
        int go_on = watch_message(w, msg);
        json_decref(msg);
        w->line.len -= (size_t)(nl + 1 - w->line.data);
        memmove(w->line.data, nl + 1, w->line.len + 1);
        if (!go_on)
            return 0;
    }
    return w->line.len > WATCH_LINE_MAX ? 0 : add;
}

static int on_watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    const watch_state *w = arg;
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(w->stop) != 0;
}

/* The body of a watch of [key, end) from revision `from`. */
static char *watch_body(const char *key, const char *end, int64_t from)
{
    json_t *create = json_object();
    int bad = !create || set_b64(create, "key", key, strlen(key)) ||
              set_b64(create, "range_end", end, strlen(end)) ||
              json_object_set_new(create, "start_revision", json_integer(from)) ||
              json_object_set_new(create, "fragment", json_true());
    json_t *req = bad ? NULL : json_pack("{so}", "create_request", create);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    if (!req)
        json_decref(create);
    json_decref(req);
    return body;
}

int rke_watch(rke_client *c, const char *key, const char *end, int64_t from, rke_watch_fn fn,
              void *arg, const atomic_int *stop, rk_error *err)
{
    watch_state w = {.fn = fn, .arg = arg, .stop = stop};
    struct curl_slist *headers = NULL;
    size_t at = atomic_load(&c->preferred);
    char *body = watch_body(key, end, from);
    char errbuf[CURL_ERROR_SIZE];
    int rc = body ? rke_http_have_token(c, err) : RK_ENOMEM;
    CURL *h = rc == RK_OK
                  ? rke_http_new_handle(c, c->hosts[at], "/v3/watch", body, &headers, errbuf)
                  : NULL;
    if (!h) {
        free(body);
        return rc != RK_OK && rc != RK_ENOMEM
                   ? rc
                   : rk_error_set(err, RK_ENOMEM, NULL, "out of memory starting an etcd watch");
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
    CURLcode done = curl_easy_perform(h);
    if (done != CURLE_ABORTED_BY_CALLBACK) /* another member next time */
        atomic_store(&c->preferred, (at + 1) % c->n);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    free(body);
    free(w.line.data);
    if (atomic_load(stop))
        return RK_OK;
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "the etcd watch at %s ended: %s",
                        c->hosts[at],
                        w.why[0]    ? w.why
                        : errbuf[0] ? errbuf
                                    : curl_easy_strerror(done));
}
