/* etcd_http.c — the etcd v3 JSON gateway client of etcd_http.h: requests over libcurl with a
 * handle each (so any thread may rke_http_call; all reuse pooled connections), failover between
 * members, base64 through nettle (already linked by the ring library), and etcd's answers mapped to
 * the store's codes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <nettle/base64.h>

#include "etcd_http_internal.h"
#include "store.h"

#define CONNECT_TIMEOUT_MS 1000
#define RESPONSE_MAX       (64u << 20) /* the largest answer read: a range of many heads */
#define NO_LEADER_ROUNDS   20          /* an election is waited for this many rounds ... */
#define NO_LEADER_PAUSE_MS 100         /* ... this far apart, before answering unavailable */

#define AUTH_PATH "/v3/auth/authenticate"

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

static void lock_pool(CURL *h, curl_lock_data data, curl_lock_access access, void *arg)
{
    (void)h, (void)data, (void)access;
    pthread_mutex_lock(&((rke_client *)arg)->pool_mu);
}

static void unlock_pool(CURL *h, curl_lock_data data, void *arg)
{
    (void)h, (void)data;
    pthread_mutex_unlock(&((rke_client *)arg)->pool_mu);
}

/* The connections every request reuses (a raw txn through the gateway took 0.8-0.9 ms more on a
 * fresh connection than on a reused one, on loopback: docs/PERFORMANCE.md). */
static CURLSH *pool_share(rke_client *c)
{
    CURLSH *sh = curl_share_init();
    if (sh && (curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) ||
               curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, lock_pool) ||
               curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, unlock_pool) ||
               curl_share_setopt(sh, CURLSHOPT_USERDATA, c))) {
        curl_share_cleanup(sh);
        return NULL;
    }
    return sh;
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
    if (pthread_mutex_init(&c->pool_mu, NULL) != 0) {
        pthread_mutex_destroy(&c->token_mu);
        free(c);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    atomic_init(&c->preferred, 0);
    curl_global_init(CURL_GLOBAL_DEFAULT); /* thread-safe since 7.84; counted, undone in free */
    c->pool = pool_share(c);
    int rc = !c->pool || copy_security(&c->sec, sec ? sec : &plain)
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
    curl_share_cleanup(c->pool); /* closes the pooled connections */
    pthread_mutex_destroy(&c->token_mu);
    pthread_mutex_destroy(&c->pool_mu);
    free(c);
    curl_global_cleanup();
}

/* ---- base64 ---- */

char *rke_http_b64(const char *src, size_t len)
{
    char *out = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
    if (!out)
        return NULL;
    base64_encode_raw(out, len, (const uint8_t *)src);
    out[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
    return out;
}

/* Decodes src into a new NUL-terminated *out of *len bytes; RK_EINVAL for bad base64. */
int rke_http_unb64(const char *src, char **out, size_t *len)
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

size_t rke_http_on_data(char *ptr, size_t size, size_t n, void *arg)
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
CURL *rke_http_new_handle(rke_client *c, const char *host, const char *path, const char *body,
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

/* libcurl sends a request again by itself, on a fresh connection, when a reused one closes before
 * any answer; for a write etcd may have applied, that would be a second write the caller believes
 * its first. libcurl calls this before each sending of the request: a second call is refused, so
 * such a write fails instead (CURLE_ABORTED_BY_CALLBACK, UNCERTAIN below: the step asks etcd
 * whether it applied). The body stays in libcurl's request buffer, sent with the headers. */
static int send_once(void *sends, char *ip, char *local_ip, int port, int local_port)
{
    (void)ip, (void)local_ip, (void)port, (void)local_port;
    return (*(int *)sends)++ ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

/* POSTs `body` to one member; the answer in *b, curl's result returned (its account in errbuf),
 * the HTTP status in *status. */
static CURLcode post(rke_client *c, const char *host, const char *path, const char *body, int write,
                     buffer *b, long *status, char errbuf[CURL_ERROR_SIZE])
{
    struct curl_slist *headers;
    int sends = 0;
    CURL *h = rke_http_new_handle(c, host, path, body, &headers, errbuf);
    if (!h)
        return CURLE_OUT_OF_MEMORY;
    if (write) {
        curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, send_once);
        curl_easy_setopt(h, CURLOPT_PREREQDATA, &sends);
    }
    curl_easy_setopt(h, CURLOPT_SHARE, c->pool);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, rke_http_on_data);
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
        CURLcode rc = post(c, c->hosts[at], path, body, write, &b, &status, errbuf);
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
int rke_http_have_token(rke_client *c, rk_error *err)
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
int rke_http_call(rke_client *c, const char *path, json_t *req, int write, json_t **resp,
                  int *unknown, rk_error *err)
{
    attempt_log log = {"", ""};
    char *body = json_dumps(req, JSON_COMPACT);
    enum outcome o = NOT_SENT;
    *resp = NULL;
    *unknown = 0;
    if (!body)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    int rc = rke_http_have_token(c, err);
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
