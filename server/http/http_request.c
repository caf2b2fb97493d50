/* http_request.c — one request on libmicrohttpd: its state, auth and body budget, the answer (fast
 * or on the pool of threads for handlers that may work for long), and its log line. */
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "http_framing.h"
#include "http_origin.h"
#include "http_shared.h"
#include "log.h"

/* ---- requests ---- */

static void log_client(struct MHD_Connection *c, char out[64]);

static const char *header_of(const rkd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->ctx, MHD_HEADER_KIND, name);
}

static const char *query_of(const rkd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->ctx, MHD_GET_ARGUMENT_KIND, name);
}

/* MHD sends a shared body from where it is (no copy per connection, however slowly the client
 * reads) and drops the rkh_hold when it frees the response. */
static struct MHD_Response *make_response(rkd_response *r)
{
    if (r->body_owner)
        return MHD_create_response_from_buffer_with_free_callback_cls(
            r->body_len, r->body, r->body_release, r->body_owner);
    if (r->body)
        return MHD_create_response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE);
    return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

/* An answer the slow send buffer cannot take at once is sent through the fast one, if the send
 * budget has room for it: given back, and the buffer made slow again, when the request completes.
 */
static void send_fast(struct MHD_Connection *c, req_state *st, size_t body_len)
{
    if (body_len <= 2 * SNDBUF_SLOW || st->sending ||
        !rkd_budget_take(st->h->sends, st->addr, 2 * SNDBUF_FAST))
        return;
    st->sending = 2 * SNDBUF_FAST;
    rkh_set_buffer(c, SO_SNDBUF, SNDBUF_FAST);
}

/* An origin of --allow-origin may read the answer (and, `preflight`, send what the console
 * sends). */
static void add_cors(struct MHD_Connection *c, struct MHD_Response *m, int preflight)
{
    MHD_add_response_header(m, "Access-Control-Allow-Origin",
                            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"));
    MHD_add_response_header(m, "Vary", "Origin");
    MHD_add_response_header(m, "Access-Control-Expose-Headers",
                            "ETag, Location, Retry-After, RK-Stale");
    if (!preflight)
        return;
    MHD_add_response_header(m, "Access-Control-Allow-Methods", "GET, POST, PUT");
    MHD_add_response_header(m, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, If-Match, If-None-Match, RK-Client, "
                            "RK-Refused");
    MHD_add_response_header(m, "Access-Control-Max-Age", "600");
}

/* `close`: the connection is closed after this answer (its framing cannot be trusted). */
static enum MHD_Result send_response(struct MHD_Connection *c, req_state *st, rkd_response *r,
                                     int close)
{
    if (r->status >= 500 && r->body) { /* JSON bodies end in a newline; the log line does too */
        size_t len = r->body_len;
        while (len > 0 && r->body[len - 1] == '\n')
            len--;
        if (!st->why)
            st->why = malloc(WHY_MAX);
        if (st->why)
            snprintf(st->why, WHY_MAX, " %.*s", (int)len, r->body);
    }
    struct MHD_Response *m = make_response(r);
    if (!m) {
        rkd_response_clear(r);
        return MHD_NO;
    }
    r->body = NULL; /* the MHD response owns it, or the rkh_hold on its owner, now */
    r->body_owner = NULL;
    if (r->content_type)
        MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    if (r->etag[0])
        MHD_add_response_header(m, MHD_HTTP_HEADER_ETAG, r->etag);
    if (r->location[0])
        MHD_add_response_header(m, MHD_HTTP_HEADER_LOCATION, r->location);
    if (r->allow)
        MHD_add_response_header(m, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (r->stale[0])
        MHD_add_response_header(m, "RK-Stale", r->stale);
    if (r->retry_after) {
        char secs[16];
        snprintf(secs, sizeof secs, "%u", r->retry_after);
        MHD_add_response_header(m, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    if (close)
        MHD_add_response_header(m, MHD_HTTP_HEADER_CONNECTION, "close");
    if (st->cors)
        add_cors(c, m, st->cors == 2);
    /* Every answer: no type sniffing, no framing by other sites, and a page that runs only the
     * console's own files (the console is the only HTML this server sends). */
    MHD_add_response_header(m, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(m, "X-Frame-Options", "DENY");
    MHD_add_response_header(m, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    send_fast(c, st, r->body_len);
    st->status = r->status;
    st->bytes = r->body_len;
    st->route = r->route;
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, m);
    MHD_destroy_response(m);
    return ok;
}

/* An error the HTTP layer answers itself, before the API sees the request. */
static enum MHD_Result send_error(struct MHD_Connection *c, req_state *st, rkd_error_code e,
                                  const char *message)
{
    rkd_response r = {0};
    rkd_response_error(&r, e, NULL, "%s", message);
    r.route = "other";
    return send_response(c, st, &r, 0);
}

#define BODIES_FULL                                                                                \
    "request bodies in flight are at this server's bound (ringkeeperd --max-bodies, a quarter of " \
    "it per client address)"

/* 503 busy with Retry-After, and the connection closed: its slot is freed for someone else. */
static enum MHD_Result send_busy(struct MHD_Connection *c, req_state *st, const char *what)
{
    rkd_response r = {0};
    rkd_response_error(&r, RKD_E_BUSY, NULL, "%s; retry after %d s", what, RETRY_AFTER_BUSY);
    r.route = "other";
    r.retry_after = RETRY_AFTER_BUSY;
    return send_response(c, st, &r, 1);
}

/* 400, and the connection closed: where this request's body ends is unknown. */
static enum MHD_Result send_bad_framing(struct MHD_Connection *c, req_state *st,
                                        const rkd_framing *f)
{
    rkd_response r = {0};
    rkd_response_error(&r, RKD_E_INVALID_HEADER, f->field, "the %s header %s", f->field, f->why);
    r.route = "other";
    return send_response(c, st, &r, 1);
}

static rkd_request request_of(struct MHD_Connection *c, const req_state *st, int resumed)
{
    return (rkd_request){.method = st->method,
                         .path = st->path,
                         .query = query_of,
                         .header = header_of,
                         .ctx = c,
                         .body = st->body,
                         .body_len = st->len,
                         .author = st->author,
                         .lacks = st->lacks,
                         .client_token = st->client ? st->author : NULL,
                         .resumed = resumed,
                         .addr = strcmp(st->addr, "-") != 0 ? st->addr : NULL};
}

/* ---- the pool: handlers that may work for long run off MHD's threads ---- */

/* Each of MHD's threads serves its share of the connections: a handler working for a second (a
 * plan, a big publish, an uncached version document) would stall every other connection of that
 * thread, /healthz included. So only what is answered from memory stays there: /healthz, /readyz,
 * /metrics, the ring and a cluster's changes (long polls are held there); the rest is suspended and
 * queued here. */
static int ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n >= m && strcmp(s + n - m, end) == 0;
}

static int for_pool(const req_state *st)
{
    static const char *const quick[] = {"/healthz", "/readyz", "/metrics"};
    for (size_t i = 0; i < sizeof quick / sizeof quick[0]; i++) {
        if (strcmp(st->path, quick[i]) == 0)
            return 0;
    }
    return !ends_with(st->path, "/ring") && !ends_with(st->path, "/changes");
}

static void *pool_main(void *arg)
{
    rkd_http *h = arg;
    pthread_mutex_lock(&h->jobs_mu);
    for (;;) {
        while (!h->jobs && !h->pool_stopping)
            pthread_cond_wait(&h->jobs_cv, &h->jobs_mu);
        req_state *st = h->jobs;
        if (!st)
            break;
        h->jobs = st->next_job;
        if (!h->jobs)
            h->jobs_tail = &h->jobs;
        pthread_mutex_unlock(&h->jobs_mu);
        rkd_request req = request_of(st->conn, st, 1); /* no long poll here: answer now */
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        rkh_defer_wakes();
        rkd_api_handle(h->cfg.app, &req, st->out);
        st->pooled = 2;
        MHD_resume_connection(st->conn); /* st is MHD's again: not touched after this */
        rkh_wake_deferred(h);
        if (rkh_elapsed(&start) > TRIM_AFTER_S)
            malloc_trim(0);
        pthread_mutex_lock(&h->jobs_mu);
    }
    pthread_mutex_unlock(&h->jobs_mu);
    return NULL;
}

static enum MHD_Result to_pool(rkd_http *h, struct MHD_Connection *c, req_state *st)
{
    st->out = calloc(1, sizeof *st->out);
    if (!st->out)
        return MHD_NO; /* as when its state could not be made: the connection is closed */
    st->pooled = 1;
    st->conn = c;
    rkh_set_rcvbuf(c, 1);
    MHD_suspend_connection(c);
    pthread_mutex_lock(&h->jobs_mu);
    *h->jobs_tail = st;
    h->jobs_tail = &st->next_job;
    pthread_cond_signal(&h->jobs_cv);
    pthread_mutex_unlock(&h->jobs_mu);
    return MHD_YES;
}

/* Stops the pool once it has answered every queued request, and frees it. */
void rkh_pool_free(rkd_http *h)
{
    pthread_mutex_lock(&h->jobs_mu);
    h->pool_stopping = 1;
    pthread_cond_broadcast(&h->jobs_cv);
    pthread_mutex_unlock(&h->jobs_mu);
    for (unsigned i = 0; i < h->pool_started; i++)
        pthread_join(h->pool[i], NULL);
    free(h->pool);
    pthread_mutex_destroy(&h->jobs_mu);
    pthread_cond_destroy(&h->jobs_cv);
}

/* As many pool threads as MHD's (at least one). 0, or -1 when one could not be started. */
int rkh_pool_start(rkd_http *h)
{
    unsigned n = h->cfg.threads ? h->cfg.threads : 1;
    pthread_mutex_init(&h->jobs_mu, NULL);
    pthread_cond_init(&h->jobs_cv, NULL);
    h->jobs_tail = &h->jobs;
    h->pool = calloc(n, sizeof *h->pool);
    while (h->pool && h->pool_started < n &&
           pthread_create(&h->pool[h->pool_started], NULL, pool_main, h) == 0)
        h->pool_started++;
    return h->pool_started == n ? 0 : -1;
}

/* Also the call after a held long poll is resumed: its time is up or its client left (answer as
 * the handler sees fit), or an activation woke it (look again: the new version, or wait on if the
 * client has it); and the call after the pool answered. */
static enum MHD_Result answer(rkd_http *h, struct MHD_Connection *c, req_state *st)
{
    if (st->pooled == 2)
        return send_response(c, st, st->out, 0);
    if (for_pool(st))
        return to_pool(h, c, st);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int over = st->w.gone || !rkh_before(&now, &st->w.deadline);
    rkd_request req = request_of(c, st, st->waiting && over);
    rkd_response r = {0};
    /* An activation between the handler's look and the rkh_hold would be slept through: rkh_hold
     * only if none came in between, else look again (a few times, then answer as is). */
    for (int tries = 0;; tries++) {
        uint64_t seen[2] = {atomic_load(&h->wakes[RKH_RING]), atomic_load(&h->wakes[RKH_CHANGES])};
        rkd_api_handle(h->cfg.app, &req, &r);
        if (r.wait_seconds == 0 || req.resumed)
            break;
        int held =
            tries < 3 ? rkh_hold(h, st, c, &r, seen[r.wait_changes ? RKH_CHANGES : RKH_RING]) : -1;
        rkd_response_clear(&r);
        if (held == 0)
            return MHD_YES;
        if (held == 2)
            return send_busy(c, st,
                             "this server holds as many long polls as it may (ringkeeperd "
                             "--max-polls)");
        req.resumed = held < 0; /* stopping, or wakes keep coming: answer now */
    }
    return send_response(c, st, &r, 0);
}

/* A write needs a token when a token file is set; a read may send one (a client's credential, so
 * that it is counted as authenticated), and is served without it when it is not configured here:
 * the ring must reach a client whose token was rotated away. RKD_AUTH_OK, or a write's refusal. */
static int authenticate(rkd_http *h, struct MHD_Connection *c, req_state *st, const char *method)
{
    const char *authz = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    int write = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
    unsigned roles = 0;
    int rc = write || authz
                 ? rkd_auth_check(h->cfg.auth, authz, st->author, sizeof st->author, &roles)
                 : RKD_AUTH_MISSING;
    st->lacks = rkd_auth_enabled(h->cfg.auth) ? RKD_ROLES_ALL & ~roles : 0;
    st->client = rkd_auth_enabled(h->cfg.auth) && (roles & RKD_ROLE_CLIENT);
    return write ? rc : RKD_AUTH_OK;
}

/* The rules against cross-site writes and DNS rebinding (http_origin.h): 0 when the request goes
 * on, else 1 once answered (a refusal, or the CORS preflight of an allowed origin) with *answered
 * MHD's result. */
static int browser_rules(rkd_http *h, struct MHD_Connection *c, req_state *st, const char *method,
                         enum MHD_Result *answered)
{
    const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    rkd_origin_request r = {
        .method = method,
        .origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
        .host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"),
        .fetch_site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site"),
        .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"),
        .has_body = (length && strtoull(length, NULL, 10) > 0) ||
                    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding")};
    rkd_origin_refusal no;
    rkd_origin_rules rules = {h->cfg.allow_origins, h->cfg.public_names};
    if (rkd_origin_check(&rules, &r, &no) != 0) {
        rkd_response e = {0};
        rkd_response_error(&e, no.code, no.field, "%s", no.message);
        e.route = "other";
        *answered = send_response(c, st, &e, 0);
        return 1;
    }
    st->cors = rkd_origin_allowed(&rules, r.origin);
    if (!st->cors || strcmp(method, "OPTIONS") != 0)
        return 0;
    st->cors = 2; /* the preflight: what the allowed page may send */
    rkd_response ok = {.status = 204, .route = "other"};
    *answered = send_response(c, st, &ok, 0);
    return 1;
}

/* A body's room in the budget is taken before a byte of it is read: its declared length, or
 * --max-body for one whose length is known only at its end (chunked; rkd_check_framing let no
 * other through), none without either. Taken as it grew, 600
 * chunked bodies of 8 MiB were each let in, read whole and dropped once the budget ran out:
 * /healthz at 0.7 s (p99), 277 of them closed unanswered; refused now as a declared length is.
 * 0 when the budget has no room for it. */
static int reserve_body(rkd_http *h, struct MHD_Connection *c, req_state *st, const char *cl)
{
    int chunked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding") != NULL;
    size_t want = cl ? (size_t)strtoull(cl, NULL, 10) : chunked ? h->cfg.max_body : 0;
    if (st->discard)
        return 1;
    /* A big body leaves the budget's last eighth to small ones (a publish is a few KB): reserved
     * whole, 8 MiB bodies from a few addresses had kept every byte taken, and no publish got in. */
    size_t total = h->cfg.body_budget;
    if (want > total / 16 && rkd_budget_used(h->bodies) + want > total - total / 8)
        return 0;
    if (!rkd_budget_take(h->bodies, st->addr, want))
        return 0;
    st->taken = want;
    return 1;
}

/* First call of a request: state, authentication, the declared body size. */
static enum MHD_Result begin(rkd_http *h, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, void **req_cls)
{
    int encoded_slash = *req_cls == RKD_ENCODED_SLASH; /* rkd_uri_seen's mark */
    req_state *st = calloc(1, sizeof *st);
    if (!st)
        return MHD_NO;
    st->h = h;
    clock_gettime(CLOCK_MONOTONIC, &st->start);
    snprintf(st->method, sizeof st->method, "%s", method);
    snprintf(st->path, sizeof st->path, "%s", url);
    snprintf(st->author, sizeof st->author, "-");
    log_client(c, st->addr); /* once: the log line and the table of clients (docs/API.md) */
    *req_cls = st;
    rkh_slow_done(h, rkh_conn_of(c));
    atomic_fetch_add(&h->inflight, 1);
    rkd_framing f = rkd_check_framing(c, method, version);
    if (f.field)
        return send_bad_framing(c, st, &f);
    if (rkd_path_has_control(url))
        return send_error(c, st, RKD_E_INVALID_PATH,
                          "the path holds a control character (raw, or escaped as %00..%1f or "
                          "%7f) or a malformed %-escape (% and two hex digits)");
    if (encoded_slash)
        return send_error(c, st, RKD_E_INVALID_PATH,
                          "the path holds an escaped slash (%2F): segments are split as sent, "
                          "so a / in a route is never escaped, and no name holds one");
    enum MHD_Result answered;
    if (browser_rules(h, c, st, method, &answered))
        return answered;
    int auth = authenticate(h, c, st, method);
    if (auth == RKD_AUTH_MISSING)
        return send_error(c, st, RKD_E_UNAUTHORIZED,
                          "this server needs Authorization: Bearer <token> for writes");
    if (auth != RKD_AUTH_OK)
        return send_error(c, st, RKD_E_FORBIDDEN, "the bearer token is not configured here");
    st->discard = !rkd_api_takes_body(method, url);
    if (!st->discard)
        rkh_set_rcvbuf(c, 0); /* a body to read: at full speed (a 5.9 MB publish) */
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body) {
        st->too_big = 1;
        return send_error(c, st, RKD_E_BODY_TOO_LARGE,
                          "the request body is over this server's --max-body limit");
    }
    return reserve_body(h, c, st, cl) ? MHD_YES : send_busy(c, st, BODIES_FULL);
}

/* Keeps the body within its room (st->taken); past it, which only a chunked body can reach, the
 * request is answered 413 and the rest dropped. */
static void take_body(req_state *st, const char *data, size_t size)
{
    if (st->discard)
        return;
    if (st->too_big || st->len + size > st->taken) {
        st->too_big = 1;
        return;
    }
    if (st->len + size > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + size)
            cap *= 2;
        if (cap > st->taken)
            cap = st->taken; /* the body's room needs no more */
        char *grown = realloc(st->body, cap);
        if (!grown) {
            st->too_big = 1; /* answered 413 rather than half a body */
            return;
        }
        st->body = grown, st->cap = cap;
    }
    memcpy(st->body + st->len, data, size);
    st->len += size;
}

enum MHD_Result rkh_on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **req_cls)
{
    rkd_http *h = cls;
    req_state *st = *req_cls;
    if (!st || st == RKD_ENCODED_SLASH)
        return begin(h, c, url, method, version, req_cls);
    if (st->status) /* already answered on an earlier call (401, 403, 413) */
        return MHD_YES;
    if (*upload_size) {
        take_body(st, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (st->too_big)
        return send_error(c, st, RKD_E_BODY_TOO_LARGE,
                          "the request body is over this server's --max-body limit");
    return answer(h, c, st);
}

/* Copies `in` to `out` with every byte a reader could mistake escaped as \xNN: controls (a CR or LF
 * would forge a second line), DEL, bytes over 0x7f (C1 controls, bytes that are not UTF-8), the
 * backslash itself (so an escape in the input stays unambiguous) and, in a field, the space that
 * separates fields. Cut to fit; `out` has room for 4 bytes per input byte plus the NUL. */
void rkh_log_escape(char *out, size_t size, const char *in, int field)
{
    size_t n = 0;
    for (; *in && n + 5 <= size; in++) {
        unsigned char b = (unsigned char)*in;
        if (b < 0x20 || b >= 0x7f || b == '\\' || (field && b == ' '))
            n += (size_t)snprintf(out + n, size - n, "\\x%02x", b);
        else
            out[n++] = (char)b;
    }
    out[n] = '\0';
}

/* "2026-01-02T03:04:05.678Z": now, RFC 3339 in UTC with milliseconds. */
static void log_time(char out[32])
{
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03ldZ", now.tv_nsec / 1000000);
}

#define LOG_ADDR_BYTES 64 /* a numeric IPv6 address with its scope fits; req_state.addr's size */

/* The client's numeric address, or "-". */
static void log_client(struct MHD_Connection *c, char out[LOG_ADDR_BYTES])
{
    const union MHD_ConnectionInfo *ci =
        c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    socklen_t len =
        sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (!sa || getnameinfo(sa, len, out, LOG_ADDR_BYTES, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(out, LOG_ADDR_BYTES, "-");
}

/* One line per request, whatever the client sent: its path, method and the error body are escaped.
 * It starts with the time and the client's address, so lines from several clients can be told
 * apart and matched with theirs. */
static void log_request(const req_state *st, double secs, const char *how)
{
    char method[4 * sizeof st->method], path[4 * sizeof st->path], author[4 * sizeof st->author],
        why[4 * WHY_MAX], when[32];
    log_time(when);
    rkh_log_escape(method, sizeof method, st->method, 1);
    rkh_log_escape(path, sizeof path, st->path, 1);
    rkh_log_escape(author, sizeof author, st->author, 1);
    rkh_log_escape(why, sizeof why, st->why ? st->why : "", 0);
    rkd_log_raw("%s %s %s %s %d %zu %.3fms %s%s%s", when, st->addr, method, path, st->status,
                st->bytes, secs * 1e3, author, how, why);
}

void rkh_on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                      enum MHD_RequestTerminationCode toe)
{
    rkd_http *h = cls;
    req_state *st = *req_cls;
    if (!st || st == RKD_ENCODED_SLASH) /* never begun: the mark, not a state */
        return;
    double secs = rkh_elapsed(&st->start);
    log_request(st, secs, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed)");
    rkd_metrics_request(h->cfg.metrics, st->method, st->route ? st->route : "other", st->status,
                        secs);
    if (st->out) /* the pool's answer, when the client left before it was sent */
        rkd_response_clear(st->out);
    free(st->out);
    free(st->why);
    rkd_budget_give(h->bodies, st->addr, st->taken);
    if (st->sending) {
        rkd_budget_give(h->sends, st->addr, st->sending);
        rkh_set_buffer(c, SO_SNDBUF, SNDBUF_SLOW); /* for its next request, if any */
    }
    free(st->body);
    free(st);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) /* kept open: its next request is owed */
        rkh_slow_wait(h, rkh_conn_of(c));
}
