/* etcd_http.c — the etcd v3 JSON gateway client of etcd_http.h: requests over libcurl with a
 * handle each (so any thread may call), failover between members, base64 through nettle (already
 * linked by the ring library), and etcd's answers mapped to the store's codes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <nettle/base64.h>

#include "etcd_http.h"
#include "store.h"

#define MAX_ENDPOINTS      16
#define CONNECT_TIMEOUT_MS 1000
#define RESPONSE_MAX       (64u << 20) /* the largest answer read: a range of many heads */
#define NO_LEADER_ROUNDS   20          /* an election is waited for this many rounds ... */
#define NO_LEADER_PAUSE_MS 100         /* ... this far apart, before answering unavailable */

#define AUTH_PATH "/v3/auth/authenticate"

struct rke_client {
    char *hosts[MAX_ENDPOINTS]; /* "HOST:PORT" */
    size_t n;                   /* how many */
    atomic_size_t preferred;    /* the last one that answered */
    rke_security sec;           /* copies of the caller's strings */
    pthread_mutex_t token_mu;   /* guards token */
    char *token;                /* etcd's auth token while we hold one, else NULL */
};

/* ---- Endpoints ---- */

static int parse_endpoints(rke_client *c, const char *list, rk_error *err)
{
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        if (len == 0 || !colon || colon == p || colon + 1 == p + len || c->n == MAX_ENDPOINTS)
            return rk_error_set(err, RK_EINVAL, NULL,
                                "etcd endpoints are HOST:PORT[,HOST:PORT...] (at most %d), got "
                                "\"%s\"",
                                MAX_ENDPOINTS, list);
        c->hosts[c->n] = strndup(p, len);
        if (!c->hosts[c->n++])
            return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        p += len + (p[len] == ',');
    }
    if (c->n == 0)
        return rk_error_set(err, RK_EINVAL, NULL, "no etcd endpoint given");
    return RK_OK;
}

/* *dst = a copy of src (NULL stays NULL); non-zero when out of memory. */
static int copy_opt(const char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst;
}

static int copy_security(rke_security *dst, const rke_security *src)
{
    dst->tls = src->tls;
    return copy_opt(&dst->cacert, src->cacert) | copy_opt(&dst->cert, src->cert) |
           copy_opt(&dst->key, src->key) | copy_opt(&dst->user, src->user) |
           copy_opt(&dst->password, src->password);
}

rke_client *rke_client_new(const char *endpoints, const rke_security *sec, rk_error *err)
{
    static const rke_security plain = {0};
    rke_client *c = calloc(1, sizeof *c);
    if (!c || pthread_mutex_init(&c->token_mu, NULL) != 0) {
        free(c);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    atomic_init(&c->preferred, 0);
    curl_global_init(CURL_GLOBAL_DEFAULT); /* thread-safe since 7.84; counted, undone in free */
    int rc = copy_security(&c->sec, sec ? sec : &plain)
                 ? rk_error_set(err, RK_ENOMEM, NULL, "out of memory")
                 : parse_endpoints(c, endpoints, err);
    if (rc == RK_OK)
        return c;
    rke_client_free(c);
    return NULL;
}

/* Frees a secret string after overwriting it: no copy left in freed memory. */
static void free_secret(const char *s)
{
    if (s)
        memset((char *)s, 0, strlen(s));
    free((char *)s);
}

void rke_client_free(rke_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->hosts[i]);
    free((char *)c->sec.cacert);
    free((char *)c->sec.cert);
    free((char *)c->sec.key);
    free((char *)c->sec.user);
    free_secret(c->sec.password);
    free_secret(c->token);
    pthread_mutex_destroy(&c->token_mu);
    free(c);
    curl_global_cleanup();
}

/* ---- base64 ---- */

static char *b64(const char *src, size_t len)
{
    char *out = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
    if (!out)
        return NULL;
    base64_encode_raw(out, len, (const uint8_t *)src);
    out[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
    return out;
}

/* Decodes src into a new NUL-terminated *out of *len bytes; RK_EINVAL for bad base64. */
static int unb64(const char *src, char **out, size_t *len)
{
    struct base64_decode_ctx ctx;
    size_t n = strlen(src);
    *out = malloc(BASE64_DECODE_LENGTH(n) + 1);
    if (!*out)
        return RK_ENOMEM;
    base64_decode_init(&ctx);
    *len = BASE64_DECODE_LENGTH(n);
    if (!base64_decode_update(&ctx, len, (uint8_t *)*out, n, src) || !base64_decode_final(&ctx))
        return RK_EINVAL;
    (*out)[*len] = '\0';
    return RK_OK;
}

/* ---- One request ---- */

typedef struct buffer {
    char *data;
    size_t len;
} buffer;

static size_t on_data(char *ptr, size_t size, size_t n, void *arg)
{
    buffer *b = arg;
    size_t add = size * n;
    if (b->len + add > RESPONSE_MAX)
        return 0; /* curl reports a write error */
    char *grown = realloc(b->data, b->len + add + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, ptr, add);
    b->data = grown;
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

/* The headers every request carries: the token we hold (not to authenticate itself). NULL when
 * out of memory. */
static struct curl_slist *request_headers(rke_client *c, const char *path)
{
    struct curl_slist *all = curl_slist_append(NULL, "Grpc-Metadata-hasleader: true");
    struct curl_slist *more = all ? curl_slist_append(all, "Content-Type: application/json") : NULL;
    pthread_mutex_lock(&c->token_mu);
    if (more && c->token && strcmp(path, AUTH_PATH) != 0) {
        size_t n = strlen(c->token) + sizeof "Authorization: ";
        char *line = malloc(n);
        if (line)
            snprintf(line, n, "Authorization: %s", c->token);
        more = line ? curl_slist_append(all, line) : NULL;
        free_secret(line);
    }
    pthread_mutex_unlock(&c->token_mu);
    if (!more)
        curl_slist_free_all(all);
    return more ? all : NULL;
}

/* TLS as --etcd-cacert, --etcd-cert and --etcd-key say (the system's CAs without a CA file). */
static void set_tls(CURL *h, const rke_security *sec)
{
    if (sec->cacert)
        curl_easy_setopt(h, CURLOPT_CAINFO, sec->cacert);
    if (sec->cert)
        curl_easy_setopt(h, CURLOPT_SSLCERT, sec->cert);
    if (sec->key)
        curl_easy_setopt(h, CURLOPT_SSLKEY, sec->key);
}

/* A handle POSTing `body` to `path` at `host`, with the headers every request carries (*headers
 * to free after the transfer) and curl's own account of a failure in `errbuf`, or NULL. */
static CURL *new_handle(rke_client *c, const char *host, const char *path, const char *body,
                        struct curl_slist **headers, char errbuf[CURL_ERROR_SIZE])
{
    char url[300];
    CURL *h = curl_easy_init();
    *headers = h ? request_headers(c, path) : NULL;
    if (!*headers) {
        curl_easy_cleanup(h);
        return NULL;
    }
    errbuf[0] = '\0';
    snprintf(url, sizeof url, "%s://%s%s", c->sec.tls ? "https" : "http", host, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, c->sec.tls ? "https" : "http");
    if (c->sec.tls)
        set_tls(h, &c->sec);
    return h;
}

/* POSTs `body` to one member; the answer in *b, curl's result returned (its account in errbuf),
 * the HTTP status in *status. */
static CURLcode post(rke_client *c, const char *host, const char *path, const char *body, buffer *b,
                     long *status, char errbuf[CURL_ERROR_SIZE])
{
    struct curl_slist *headers;
    CURL *h = new_handle(c, host, path, body, &headers, errbuf);
    if (!h)
        return CURLE_OUT_OF_MEMORY;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)RKE_TIMEOUT_MS);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    return rc;
}

/* What became of one attempt. */
enum outcome {
    ANSWERED,  /* a 200 with JSON */
    NOT_SENT,  /* etcd cannot have acted on it: try another member */
    NO_LEADER, /* the same, because the member has no leader (an election, or no quorum) */
    AUTH,      /* refused for an expired or unknown token: authenticate again, then retry */
    UNCERTAIN, /* it may have been applied */
};

/* Failures before a request was sent: no connection, or no TLS session (a certificate refused). */
static int never_sent(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
           rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
           rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CACERT_BADFILE ||
           rc == CURLE_SSL_ENGINE_INITFAILED;
}

/* What an etcd error message means for the request. */
static enum outcome classify_message(const char *msg)
{
    if (msg && strstr(msg, "no leader"))
        return NO_LEADER;
    if (msg && (strstr(msg, "invalid auth token") || strstr(msg, "revision in header is old")))
        return AUTH; /* refused before it reached the log: safe to send again */
    return UNCERTAIN;
}

/* Classifies an attempt and says why in `why` when it did not answer. */
static enum outcome classify(CURLcode rc, long status, const buffer *b, const char *errbuf,
                             char *why, size_t cap)
{
    if (rc == CURLE_OK && status == 200)
        return ANSWERED;
    if (rc != CURLE_OK) {
        snprintf(why, cap, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        return never_sent(rc) ? NOT_SENT : UNCERTAIN;
    }
    json_t *j = json_loadb(b->data ? b->data : "", b->len, 0, NULL);
    const char *msg = json_string_value(json_object_get(j, "message"));
    snprintf(why, cap, "HTTP %ld: %s", status, msg ? msg : "no message");
    enum outcome out = classify_message(msg);
    json_decref(j);
    return out;
}

/* Where a request stands: the last member tried and why it did not answer. */
typedef struct attempt_log {
    char why[CURL_ERROR_SIZE + 64];
    char host[200];
} attempt_log;

/* Sends `body` to each member in turn until one answers (*resp). Returns ANSWERED, UNCERTAIN (a
 * write that may have applied: no other member is tried), NO_LEADER when every member said so,
 * else NOT_SENT. */
static enum outcome try_members(rke_client *c, const char *path, const char *body, int write,
                                json_t **resp, attempt_log *log)
{
    size_t first = atomic_load(&c->preferred);
    int all_no_leader = 1;
    for (size_t i = 0; i < c->n; i++) {
        size_t at = (first + i) % c->n;
        buffer b = {0};
        long status = 0;
        char errbuf[CURL_ERROR_SIZE];
        CURLcode rc = post(c, c->hosts[at], path, body, &b, &status, errbuf);
        enum outcome o = classify(rc, status, &b, errbuf, log->why, sizeof log->why);
        snprintf(log->host, sizeof log->host, "%s", c->hosts[at]);
        *resp = o == ANSWERED ? json_loadb(b.data, b.len, 0, NULL) : NULL;
        free(b.data);
        if (o == ANSWERED && !*resp)
            snprintf(log->why, sizeof log->why, "an answer that is not JSON");
        if (*resp)
            atomic_store(&c->preferred, at);
        if (*resp || o == AUTH || (write && (o == UNCERTAIN || o == ANSWERED)))
            return *resp ? ANSWERED : o == AUTH ? AUTH : UNCERTAIN;
        all_no_leader &= o == NO_LEADER;
    }
    return all_no_leader ? NO_LEADER : NOT_SENT;
}

/* try_members, waiting out an election: while every member says it has no leader, again every
 * NO_LEADER_PAUSE_MS for up to NO_LEADER_ROUNDS rounds. */
static enum outcome try_rounds(rke_client *c, const char *path, const char *body, int write,
                               json_t **resp, attempt_log *log)
{
    enum outcome o = NOT_SENT;
    for (int round = 0; round < NO_LEADER_ROUNDS; round++) {
        if (round > 0)
            nanosleep(&(struct timespec){0, NO_LEADER_PAUSE_MS * 1000000L}, NULL);
        o = try_members(c, path, body, write, resp, log);
        if (o != NO_LEADER)
            break;
    }
    return o;
}

/* Asks etcd for a token for --etcd-user (a simple token lives 5 minutes by default) and keeps it.
 * Threads that find the token refused at once each ask for one; the last kept wins, harmless. */
static int authenticate(rke_client *c, rk_error *err)
{
    attempt_log log = {"", ""};
    json_t *resp = NULL;
    json_t *req = json_pack("{ssss}", "name", c->sec.user, "password", c->sec.password);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    enum outcome o = try_rounds(c, AUTH_PATH, body, 0, &resp, &log);
    free_secret(body);
    const char *token = json_string_value(json_object_get(resp, "token"));
    char *copy = token ? strdup(token) : NULL;
    json_decref(resp);
    if (!copy)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                            "etcd did not authenticate user %s (%s at %s); check --etcd-user and "
                            "--etcd-password-file, and that etcd has auth enabled",
                            c->sec.user, o == ANSWERED ? "no token in its answer" : log.why,
                            log.host);
    pthread_mutex_lock(&c->token_mu);
    free_secret(c->token);
    c->token = copy;
    pthread_mutex_unlock(&c->token_mu);
    return RK_OK;
}

/* Authenticates first when a user is set and no token is held yet. */
static int have_token(rke_client *c, rk_error *err)
{
    if (!c->sec.user)
        return RK_OK;
    pthread_mutex_lock(&c->token_mu);
    int held = c->token != NULL;
    pthread_mutex_unlock(&c->token_mu);
    return held ? RK_OK : authenticate(c, err);
}

/* POSTs `req` to `path` (try_rounds); a refused token is replaced once and the request sent
 * again (etcd refused it before its log, so a write too). */
static int call(rke_client *c, const char *path, json_t *req, int write, json_t **resp,
                int *unknown, rk_error *err)
{
    attempt_log log = {"", ""};
    char *body = json_dumps(req, JSON_COMPACT);
    enum outcome o = NOT_SENT;
    *resp = NULL;
    *unknown = 0;
    if (!body)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    int rc = have_token(c, err);
    for (int tries = 0; rc == RK_OK && tries < 2; tries++) {
        o = try_rounds(c, path, body, write, resp, &log);
        if (o != AUTH || !c->sec.user || tries > 0)
            break;
        rc = authenticate(c, err); /* the token expired: a new one, then the request once more */
    }
    free(body);
    if (rc != RK_OK)
        return rc;
    *unknown = o == UNCERTAIN;
    if (*resp)
        return RK_OK;
    if (*unknown)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                            "etcd did not confirm a write (%s at %s); it may still be applied",
                            log.why, log.host);
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                        "etcd is unavailable (%s at %s, the last of %zu member%s tried): it "
                        "needs a majority of its members up with a leader; nothing was changed",
                        log.why, log.host, c->n, c->n == 1 ? "" : "s");
}

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
    int rc = key ? unb64(key, &kv->key, &klen) : RK_EINVAL;
    rc = rc ? rc : unb64(value ? value : "", &kv->value, &kv->len);
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
    out->revision = rev ? strtoll(rev, NULL, 10) : 0;
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
    char *enc = b64(src, len);
    int rc = enc ? json_object_set_new(o, name, json_string(enc)) : -1;
    free(enc);
    return rc;
}

int rke_range(rke_client *c, const char *key, const char *end, rke_kvs *out, rk_error *err)
{
    json_t *req = json_object(), *resp = NULL;
    int unknown;
    int bad = !req || set_b64(req, "key", key, strlen(key)) ||
              (end && set_b64(req, "range_end", end, strlen(end)));
    int rc = bad ? rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request")
                 : call(c, "/v3/kv/range", req, 0, &resp, &unknown, err);
    rc = rc ? rc : parse_kvs(resp, out, err);
    json_decref(req);
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

void rke_txn_put(rke_txn *t, const char *key, const char *value, size_t len)
{
    json_t *put = json_object(), *op = json_object();
    t->failed |= !put || !op || set_b64(put, "key", key, strlen(key)) ||
                 set_b64(put, "value", value, len) || json_object_set(op, "request_put", put) ||
                 json_array_append(t->success, op);
    t->bytes += strlen(key) + len;
    json_decref(put);
    json_decref(op);
}

void rke_txn_put_str(rke_txn *t, const char *key, const char *value)
{
    rke_txn_put(t, key, value, strlen(value));
}

int rke_txn_commit(rke_client *c, const rke_txn *t, int *ok, int *unknown, rk_error *err)
{
    json_t *resp = NULL;
    *ok = 0;
    *unknown = 0;
    if (t->failed)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    if (t->bytes > RKE_REQUEST_MAX)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "one change would write %zu bytes to etcd, over the %u one request "
                            "may carry; a comment or author that long cannot be stored",
                            t->bytes, RKE_REQUEST_MAX);
    json_t *req = json_pack("{sOsO}", "compare", t->compare, "success", t->success);
    int rc = req ? call(c, "/v3/kv/txn", req, 1, &resp, unknown, err)
                 : rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    *ok = rc == RK_OK && json_is_true(json_object_get(resp, "succeeded"));
    json_decref(req);
    json_decref(resp);
    return rc;
}

/* ---- Watching ---- */

#define WATCH_LINE_MAX (1u << 20) /* a watch message this long ends the stream */

typedef struct watch_state {
    buffer line;                    /* the message being received */
    rke_watch_fn fn;                /* the caller's */
    void *arg;                      /* its argument */
    const atomic_int *stop;         /* the caller's stop flag */
    char why[CURL_ERROR_SIZE + 64]; /* why the stream ended, when etcd said */
} watch_state;

/* Calls fn for each put of one message; 0 when the message ends the watch. */
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
        if (!json_object_get(e, "type") && parse_kv(json_object_get(e, "kv"), &kv, &ignored) == 0)
            w->fn(w->arg, &kv); /* a put: DELETE events have a type */
        rke_kv_deinit(&kv);
    }
    return 1;
}

/* Splits the stream into its newline-separated messages. */
static size_t on_watch_data(char *ptr, size_t size, size_t n, void *arg)
{
    watch_state *w = arg;
    size_t add = size * n;
    if (on_data(ptr, 1, add, &w->line) != add)
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
              json_object_set_new(create, "start_revision", json_integer(from));
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
    int rc = body ? have_token(c, err) : RK_ENOMEM;
    CURL *h = rc == RK_OK ? new_handle(c, c->hosts[at], "/v3/watch", body, &headers, errbuf) : NULL;
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
