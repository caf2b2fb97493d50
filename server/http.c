/* http.c — ringkeeperd on libmicrohttpd: request state, auth, body cap, long polls, logging. */
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <microhttpd.h>

#include "http.h"
#include "http_budget.h"
#include "http_framing.h"

#define TICK_MS 1000 /* longest sleep of the long-poll timer when no deadline is nearer */
/* Its shortest: 10,000 polls held with as many deadlines would wake it 10,000 times per period,
 * each waking a walk of the whole list; a poll answered 10 ms late costs nobody anything. */
#define TICK_MIN_NS      (10 * 1000 * 1000)
#define RETRY_AFTER_BUSY 2 /* seconds, in a 503 busy: bodies or polls at their bound */

/* Kernel socket buffers (SO_SNDBUF, SO_RCVBUF; Linux books twice the figure). Left to the kernel's
 * autotuning, 1000 clients that asked for a 5.9 MB ring and never read it queued 2.1 GB in
 * ringkeeperd's sockets (net.ipv4.tcp_mem's limit) and /healthz stalled 1.5 s. Capped, a connection
 * queues at most 2 * SNDBUF_FAST while it sends an answer of the send budget (cfg.send_budget; the
 * 5.9 MB ring in 9 ms on loopback), else 2 * SNDBUF_SLOW (the same in 3 s; 4 KiB took /healthz's
 * p99 to 44 ms), and a held long poll or a queued request, which is not read from meanwhile, keeps
 * at most 2 * RCVBUF_HELD of what its client sends. */
#define SNDBUF_FAST (64 * 1024)
#define SNDBUF_SLOW (16 * 1024)
#define RCVBUF_OPEN (64 * 1024) /* a 5.9 MB publish reads as fast as with autotuning */
#define RCVBUF_HELD 4096
/* A handler that worked this long (a plan, a big publish) may have freed hundreds of MiB that glibc
 * keeps in its thread's arena: 28 plans of 10000 nodes left RSS at 720 MiB from 324 MiB for good.
 * malloc_trim after it returns them (RSS back to 139 MiB) for 12 ms (73 ms at most) of its pool
 * thread; a quick request never pays it. */
#define TRIM_AFTER_S 0.1
/* Thousands of connections that came and went (a flood of polls or readers, a fleet reconnecting)
 * leave their freed pools spread over the heaps of MHD's threads, where glibc keeps them: RSS
 * stayed at 117 MiB from 36 MiB after CI's attack phase. The timer trims once that many have
 * closed. */
#define TRIM_AFTER_CLOSES 256

/* Blocks of this size or more come from mmap and go back to the system when freed. glibc's own
 * threshold rises to the largest block freed so far (up to 32 MiB), after which big response bodies
 * (a 15 MiB plan, freed by MHD's thread after sending) stay in the heap: 19 plans left RSS at
 * 156 MiB from 90 MiB. */
#define MMAP_FROM (1 << 20)

/* A long poll held by MHD_suspend_connection until an activation of its cluster or its deadline. */
typedef struct waiter {
    struct waiter *next;           /* in rkd_http.waiters */
    struct MHD_Connection *conn;   /* suspended connection */
    char cluster[RKD_CLUSTER_MAX]; /* woken by an activation of this cluster */
    struct timespec deadline;      /* CLOCK_MONOTONIC */
} waiter;

/* Per-request state (MHD's *req_cls): made on the first call, freed when the request completes. */
typedef struct req_state {
    struct rkd_http *h;    /* its server */
    struct timespec start; /* CLOCK_MONOTONIC, for the log and the latency histogram */
    char method[16];       /* for the log line */
    char path[256];        /* for the log line, cut */
    char author[72];       /* token name for writes and reads that send one, "-" for other reads */
    unsigned lacks;        /* the roles its token lacks (rkd_request.lacks) */
    int client;            /* its token has the client role (rkd_request.client_token) */
    char addr[64];         /* the client's numeric address (LOG_ADDR_BYTES), or "-" */
    char *body;            /* request body so far */
    size_t len, cap;       /* its length and allocation */
    int too_big;           /* the body passed the cap: answered 413, the rest is dropped */
    int discard;           /* no route reads this body: dropped unread, never buffered */
    int over_budget;       /* the body budget was full: answered 503 busy, the rest dropped */
    size_t taken;          /* bytes of the body budget this request holds (its allocation) */
    size_t sending;        /* bytes of the send budget its answer holds (2 * SNDBUF_FAST or 0) */
    int waiting;           /* a long poll: held at least once, `w.deadline` is its end */
    waiter w;              /* the long-poll registration while held */
    int status;            /* answered status, for the log */
    size_t bytes;          /* answered body bytes, for the log */
    char why[240];         /* a 5xx answer's error body, for the log: the operator's first clue */
    const char *route;     /* route pattern, for metrics */
    int pooled;            /* 1: queued for or running on the pool; 2: answered there, in `out` */
    rkd_response out;      /* the pool's answer, sent by MHD's thread once resumed */
    struct MHD_Connection *conn; /* resumed by the pool */
    struct req_state *next_job;  /* in rkd_http.jobs */
} req_state;

struct rkd_http {
    struct MHD_Daemon *d;         /* the daemon */
    rkd_http_config cfg;          /* as started */
    unsigned port;                /* bound port */
    atomic_long inflight;         /* requests started and not completed */
    atomic_long connections;      /* connections open now, for the --max-connections check */
    atomic_long held;             /* of them, held long polls: not counted against it */
    atomic_long closed;           /* connections closed since the start, for TRIM_AFTER_CLOSES */
    rkd_budget *bodies;           /* request body bytes buffered, cfg.body_budget in all */
    rkd_budget *sends;            /* kernel send buffers of answers sent fast, cfg.send_budget */
    _Atomic uint64_t activations; /* counted under mu, so a hold sees any it missed */
    pthread_mutex_t mu;           /* guards waiters and stopping */
    pthread_cond_t cv;            /* wakes the timer thread */
    waiter *waiters;              /* held long polls */
    int stopping;                 /* the timer thread exits */
    pthread_t timer;              /* resumes long polls whose deadline passed */
    atomic_int started;           /* MHD's own messages are printed from then on (mhd_log) */
    pthread_mutex_t jobs_mu;      /* guards jobs, jobs_tail and pool_stopping */
    pthread_cond_t jobs_cv;       /* wakes the pool */
    req_state *jobs, **jobs_tail; /* requests waiting for the pool, oldest first */
    int pool_stopping;            /* the pool exits once the queue is empty */
    pthread_t *pool;              /* cfg.threads threads that answer what may work for long */
    unsigned pool_started;        /* how many of them run */
};

static double elapsed(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - since->tv_sec) + (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* ---- kernel socket buffers ---- */

static void set_buffer(struct MHD_Connection *c, int which, int bytes)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) /* at worst the kernel's figure stays: a bound missed, nothing broken */
        (void)setsockopt(ci->connect_fd, SOL_SOCKET, which, &bytes, sizeof bytes);
}

static void set_buffers(struct MHD_Connection *c, int sndbuf, int rcvbuf)
{
    set_buffer(c, SO_SNDBUF, sndbuf);
    set_buffer(c, SO_RCVBUF, rcvbuf);
}

/* ---- long polls ---- */

/* Unlinks `w` and resumes its connection; the caller holds h->mu. */
static void release(rkd_http *h, waiter **link)
{
    waiter *w = *link;
    *link = w->next;
    atomic_fetch_sub(&h->held, 1);
    MHD_resume_connection(w->conn);
    rkd_metrics_waiting(h->cfg.metrics, -1);
}

/* Holds the request until an activation of its cluster or its deadline, set by the first hold: a
 * poll woken by an activation it already has waits on for the rest of its time. Returns -1 when the
 * server is stopping (answer at once), 1 when an activation came since `seen` (look again), 2 when
 * max_polls are held already (answer 503 busy). */
static int hold(rkd_http *h, req_state *st, struct MHD_Connection *c, const rkd_response *r,
                uint64_t seen)
{
    pthread_mutex_lock(&h->mu);
    int full = atomic_load(&h->held) >= (long)h->cfg.max_polls;
    if (h->stopping || full || atomic_load(&h->activations) != seen) {
        int rc = h->stopping ? -1 : full ? 2 : 1;
        pthread_mutex_unlock(&h->mu);
        return rc;
    }
    atomic_fetch_add(&h->held, 1); /* before the suspend: its slot is the poll share's from now */
    if (!st->waiting) {
        st->waiting = 1;
        clock_gettime(CLOCK_MONOTONIC, &st->w.deadline);
        st->w.deadline.tv_sec += r->wait_seconds;
    }
    st->w.conn = c;
    snprintf(st->w.cluster, sizeof st->w.cluster, "%s", r->wait_cluster);
    set_buffer(c, SO_RCVBUF, RCVBUF_HELD);
    MHD_suspend_connection(c); /* before it is listed, so no resume can come first */
    st->w.next = h->waiters;
    h->waiters = &st->w;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    rkd_metrics_waiting(h->cfg.metrics, +1);
    return 0;
}

/* Activation hook of the app: answer every long poll of that cluster now. */
static void on_activation(void *arg, const char *cluster, int64_t version)
{
    rkd_http *h = arg;
    (void)version;
    pthread_mutex_lock(&h->mu);
    atomic_fetch_add(&h->activations, 1);
    for (waiter **link = &h->waiters; *link;) {
        if (strcmp((*link)->cluster, cluster) == 0)
            release(h, link);
        else
            link = &(*link)->next;
    }
    pthread_mutex_unlock(&h->mu);
}

/* malloc_trim, outside the lock, when TRIM_AFTER_CLOSES connections closed since the last one:
 * non-zero when it ran. The caller holds h->mu. */
static int trim_after_closes(rkd_http *h, long *trimmed)
{
    long closed = atomic_load(&h->closed);
    if (closed - *trimmed < TRIM_AFTER_CLOSES)
        return 0;
    *trimmed = closed;
    pthread_mutex_unlock(&h->mu);
    malloc_trim(0);
    pthread_mutex_lock(&h->mu);
    return 1;
}

static void *timer_main(void *arg)
{
    rkd_http *h = arg;
    long trimmed = 0;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        if (trim_after_closes(h, &trimmed))
            continue;
        struct timespec now, wake, soonest;
        clock_gettime(CLOCK_MONOTONIC, &now);
        wake = soonest = now;
        wake.tv_sec += TICK_MS / 1000;
        soonest.tv_nsec += TICK_MIN_NS;
        if (soonest.tv_nsec >= 1000000000L)
            soonest.tv_sec++, soonest.tv_nsec -= 1000000000L;
        for (waiter **link = &h->waiters; *link;) {
            if (!before(&now, &(*link)->deadline)) {
                release(h, link);
                continue;
            }
            if (before(&(*link)->deadline, &wake))
                wake = (*link)->deadline;
            link = &(*link)->next;
        }
        if (before(&wake, &soonest))
            wake = soonest;
        pthread_cond_timedwait(&h->cv, &h->mu, &wake);
    }
    while (h->waiters) /* stopping: every held poll answers now (304 or the new ring) */
        release(h, &h->waiters);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

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
 * reads) and drops the hold when it frees the response. */
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
    set_buffer(c, SO_SNDBUF, SNDBUF_FAST);
}

/* `close`: the connection is closed after this answer (its framing cannot be trusted). */
static enum MHD_Result send_response(struct MHD_Connection *c, req_state *st, rkd_response *r,
                                     int close)
{
    if (r->status >= 500 && r->body) { /* JSON bodies end in a newline; the log line does too */
        size_t len = r->body_len;
        while (len > 0 && r->body[len - 1] == '\n')
            len--;
        snprintf(st->why, sizeof st->why, " %.*s", (int)len, r->body);
    }
    struct MHD_Response *m = make_response(r);
    if (!m) {
        rkd_response_clear(r);
        return MHD_NO;
    }
    r->body = NULL; /* the MHD response owns it, or the hold on its owner, now */
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
static enum MHD_Result send_error(struct MHD_Connection *c, req_state *st, int status,
                                  const char *code, const char *message)
{
    rkd_response r = {0};
    rkd_response_error(&r, status, code, NULL, "%s", message);
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
    rkd_response_error(&r, 503, "busy", NULL, "%s; retry after %d s", what, RETRY_AFTER_BUSY);
    r.route = "other";
    r.retry_after = RETRY_AFTER_BUSY;
    return send_response(c, st, &r, 1);
}

/* 400, and the connection closed: where this request's body ends is unknown. */
static enum MHD_Result send_bad_framing(struct MHD_Connection *c, req_state *st,
                                        const rkd_framing *f)
{
    rkd_response r = {0};
    rkd_response_error(&r, 400, "invalid_header", f->field, "the %s header %s", f->field, f->why);
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
 * /metrics and the ring (its long polls are held there); the rest is suspended and queued here. */
static int for_pool(const req_state *st)
{
    static const char *const quick[] = {"/healthz", "/readyz", "/metrics"};
    size_t n = strlen(st->path);
    for (size_t i = 0; i < sizeof quick / sizeof quick[0]; i++) {
        if (strcmp(st->path, quick[i]) == 0)
            return 0;
    }
    return !(n >= 5 && strcmp(st->path + n - 5, "/ring") == 0);
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
        rkd_api_handle(h->cfg.app, &req, &st->out);
        st->pooled = 2;
        MHD_resume_connection(st->conn); /* st is MHD's again: not touched after this */
        if (elapsed(&start) > TRIM_AFTER_S)
            malloc_trim(0);
        pthread_mutex_lock(&h->jobs_mu);
    }
    pthread_mutex_unlock(&h->jobs_mu);
    return NULL;
}

static enum MHD_Result to_pool(rkd_http *h, struct MHD_Connection *c, req_state *st)
{
    st->pooled = 1;
    st->conn = c;
    set_buffer(c, SO_RCVBUF, RCVBUF_HELD);
    MHD_suspend_connection(c);
    pthread_mutex_lock(&h->jobs_mu);
    *h->jobs_tail = st;
    h->jobs_tail = &st->next_job;
    pthread_cond_signal(&h->jobs_cv);
    pthread_mutex_unlock(&h->jobs_mu);
    return MHD_YES;
}

/* Stops the pool once it has answered every queued request, and frees it. */
static void pool_free(rkd_http *h)
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
static int pool_start(rkd_http *h)
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

/* Also the call after a held long poll is resumed: its time is up (answer as the handler sees fit),
 * or an activation woke it (look again: the new version, or wait on if the client has it); and the
 * call after the pool answered. */
static enum MHD_Result answer(rkd_http *h, struct MHD_Connection *c, req_state *st)
{
    if (st->pooled == 2 || st->waiting)
        set_buffer(c, SO_RCVBUF, RCVBUF_OPEN);
    if (st->pooled == 2)
        return send_response(c, st, &st->out, 0);
    if (for_pool(st))
        return to_pool(h, c, st);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    rkd_request req = request_of(c, st, st->waiting && !before(&now, &st->w.deadline));
    rkd_response r = {0};
    /* An activation between the handler's look and the hold would be slept through: hold only if
     * none came in between, else look again (a few times, then answer as is). */
    for (int tries = 0;; tries++) {
        uint64_t seen = atomic_load(&h->activations);
        rkd_api_handle(h->cfg.app, &req, &r);
        if (r.wait_seconds == 0 || req.resumed)
            break;
        int held = tries < 3 ? hold(h, st, c, &r, seen) : -1;
        rkd_response_clear(&r);
        if (held == 0)
            return MHD_YES;
        if (held == 2)
            return send_busy(c, st,
                             "this server holds as many long polls as it may (ringkeeperd "
                             "--max-polls)");
        req.resumed = held < 0; /* stopping, or activations keep coming: answer now */
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

/* First call of a request: state, authentication, the declared body size. */
static enum MHD_Result begin(rkd_http *h, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, void **req_cls)
{
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
    atomic_fetch_add(&h->inflight, 1);
    rkd_framing f = rkd_check_framing(c, method, version);
    if (f.field)
        return send_bad_framing(c, st, &f);
    if (rkd_path_has_control(url))
        return send_error(c, st, 400, "invalid_path",
                          "the path holds a control character (raw, or escaped as %00..%1f or "
                          "%7f) or a malformed %-escape (% and two hex digits)");
    int auth = authenticate(h, c, st, method);
    if (auth == RKD_AUTH_MISSING)
        return send_error(c, st, 401, "unauthorized",
                          "this server needs Authorization: Bearer <token> for writes");
    if (auth != RKD_AUTH_OK)
        return send_error(c, st, 403, "forbidden", "the bearer token is not configured here");
    st->discard = !rkd_api_takes_body(method, url);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body) {
        st->too_big = 1;
        return send_error(c, st, 413, "body_too_large",
                          "the request body is over this server's --max-body limit");
    }
    /* A declared body that cannot fit now is refused before a byte of it is read. */
    if (cl && !st->discard && !rkd_budget_fits(h->bodies, st->addr, strtoull(cl, NULL, 10)))
        return send_busy(c, st, BODIES_FULL);
    return MHD_YES;
}

/* Keeps at most max_body bytes; past that the request is answered 413 and the rest dropped. Each
 * allocation is taken from the body budget first: past it, 503 busy and the rest dropped. */
static void take_body(rkd_http *h, req_state *st, const char *data, size_t size)
{
    if (st->discard || st->over_budget)
        return;
    if (st->too_big || st->len + size > h->cfg.max_body) {
        st->too_big = 1;
        return;
    }
    if (st->len + size > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + size)
            cap *= 2;
        if (cap > h->cfg.max_body)
            cap = h->cfg.max_body; /* the largest body allowed needs no more */
        if (!rkd_budget_take(h->bodies, st->addr, cap - st->cap)) {
            st->over_budget = 1;
            return;
        }
        char *grown = realloc(st->body, cap);
        if (!grown) {
            rkd_budget_give(h->bodies, st->addr, cap - st->cap);
            st->too_big = 1; /* answered 413 rather than half a body */
            return;
        }
        st->taken += cap - st->cap;
        st->body = grown, st->cap = cap;
    }
    memcpy(st->body + st->len, data, size);
    st->len += size;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    rkd_http *h = cls;
    req_state *st = *req_cls;
    if (!st)
        return begin(h, c, url, method, version, req_cls);
    if (st->status) /* already answered on an earlier call (401, 403, 413) */
        return MHD_YES;
    if (*upload_size) {
        take_body(h, st, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (st->too_big)
        return send_error(c, st, 413, "body_too_large",
                          "the request body is over this server's --max-body limit");
    if (st->over_budget)
        return send_busy(c, st, BODIES_FULL);
    return answer(h, c, st);
}

/* Copies `in` to `out` with every byte a reader could mistake escaped as \xNN: controls (a CR or LF
 * would forge a second line), DEL, bytes over 0x7f (C1 controls, bytes that are not UTF-8), the
 * backslash itself (so an escape in the input stays unambiguous) and, in a field, the space that
 * separates fields. Cut to fit; `out` has room for 4 bytes per input byte plus the NUL. */
static void log_escape(char *out, size_t size, const char *in, int field)
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
        why[4 * sizeof st->why], when[32];
    log_time(when);
    log_escape(method, sizeof method, st->method, 1);
    log_escape(path, sizeof path, st->path, 1);
    log_escape(author, sizeof author, st->author, 1);
    log_escape(why, sizeof why, st->why, 0);
    fprintf(stderr, "%s %s %s %s %d %zu %.3fms %s%s%s\n", when, st->addr, method, path, st->status,
            st->bytes, secs * 1e3, author, how, why);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    rkd_http *h = cls;
    req_state *st = *req_cls;
    if (!st)
        return;
    double secs = elapsed(&st->start);
    log_request(st, secs, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed)");
    rkd_metrics_request(h->cfg.metrics, st->method, st->route ? st->route : "other", st->status,
                        secs);
    rkd_response_clear(&st->out); /* the pool's answer, when the client left before it was sent */
    rkd_budget_give(h->bodies, st->addr, st->taken);
    if (st->sending) {
        rkd_budget_give(h->sends, st->addr, st->sending);
        set_buffer(c, SO_SNDBUF, SNDBUF_SLOW); /* for its next request, if any */
    }
    free(st->body);
    free(st);
    *req_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
}

/* ---- the daemon ---- */

/* libmicrohttpd's own limit, when reached, stops accepting: a new connection then waits unanswered
 * in the listen backlog until its client gives up. So MHD's limit is set above ours (by the pool
 * threads that may each be between this check and the count), and ours closes at once. Held long
 * polls have their own share (max_polls): however many are held, max_connections remain for
 * /healthz, publishes and every other short request. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    rkd_http *h = cls;
    (void)addr, (void)addrlen;
    long open = atomic_load(&h->connections) - atomic_load(&h->held);
    return open < (long)h->cfg.max_connections ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
    rkd_http *h = cls;
    (void)socket_context;
    atomic_fetch_add(&h->connections, what == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
    if (what != MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add(&h->closed, 1);
    if (what == MHD_CONNECTION_NOTIFY_STARTED)
        set_buffers(c, SNDBUF_SLOW, RCVBUF_OPEN);
}

static int listen_error(rk_error *err, const char *listen)
{
    return rk_error_set(err, RK_EINVAL, "--listen",
                        "\"%.100s\" is not HOST:PORT (e.g. 127.0.0.1:7070 or [::1]:7070) of this "
                        "machine",
                        listen);
}

/* Resolves "host:port" or "[v6]:port" into *out. */
static int resolve(const char *listen, struct addrinfo **out, rk_error *err)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    const char *open = listen[0] == '[' ? listen + 1 : listen;
    size_t hl = colon ? (size_t)(colon - open) : 0;
    if (colon && listen[0] == '[' && hl > 0 && open[hl - 1] == ']')
        hl--;
    if (!colon || hl == 0 || hl >= sizeof host || !colon[1])
        return listen_error(err, listen);
    memcpy(host, open, hl);
    host[hl] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(host, colon + 1, &hints, out);
    if (rc)
        return listen_error(err, listen);
    return RK_OK;
}

/* libmicrohttpd's messages. While the daemon starts they are dropped: its bind error reads
 * "Failed to bind to port 0" (the port is in MHD_OPTION_SOCK_ADDR, not the argument it names), and
 * rkd_http_start's own error says what failed. Later ones are printed, escaped, as ringkeeperd's.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    rkd_http *h = cls;
    char text[256], line[4 * sizeof text];
    if (!atomic_load(&h->started))
        return;
    vsnprintf(text, sizeof text, fmt, ap);
    text[strcspn(text, "\n")] = '\0';
    log_escape(line, sizeof line, text, 0);
    fprintf(stderr, "ringkeeperd: libmicrohttpd: %s\n", line);
}

static struct MHD_Daemon *start_daemon(rkd_http *h, const struct addrinfo *ai)
{
    /* AUTO picks epoll on Linux: each pool thread watches its share of the connections. Suspended
     * connections (held long polls) are not timed out by MHD while they are held. */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    const rkd_http_config *c = &h->cfg;
    struct MHD_OptionItem opts[8];
    size_t n = 0;
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                (intptr_t)(c->max_connections + c->max_polls + c->threads), NULL};
    if (c->max_per_address)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            (intptr_t)c->max_per_address, NULL};
    if (c->tls_cert && c->tls_key) {
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)c->tls_key};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)c->tls_cert};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    unsigned timeout = c->idle_timeout ? c->idle_timeout : 30;
    return MHD_start_daemon(
        flags, 0, on_accept, h, on_request, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)c->threads,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)RKD_HTTP_CONN_MEMORY,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_UNESCAPE_CALLBACK, rkd_unescape, NULL,
        MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
}

/* Fills in the defaults of `cfg` (its zeroes). */
static void set_defaults(rkd_http_config *cfg)
{
    if (!cfg->max_connections)
        cfg->max_connections = RKD_HTTP_MAX_CONNECTIONS;
    if (!cfg->max_polls)
        cfg->max_polls = RKD_HTTP_MAX_POLLS;
    if (!cfg->body_budget)
        cfg->body_budget = RKD_HTTP_BODY_BUDGET;
    if (!cfg->send_budget)
        cfg->send_budget = RKD_HTTP_SEND_BUDGET;
}

rkd_http *rkd_http_start(const rkd_http_config *cfg, rk_error *err)
{
    struct addrinfo *ai = NULL;
    if (resolve(cfg->listen, &ai, err))
        return NULL;
    rkd_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        return NULL;
    }
    h->cfg = *cfg;
    set_defaults(&h->cfg);
    mallopt(M_MMAP_THRESHOLD, MMAP_FROM); /* see MMAP_FROM */
    size_t share =
        h->cfg.body_budget / 4 > h->cfg.max_body ? h->cfg.body_budget / 4 : h->cfg.max_body;
    size_t addresses = h->cfg.max_connections + h->cfg.max_polls + h->cfg.threads;
    h->bodies = rkd_budget_new(h->cfg.body_budget, share, addresses);
    h->sends = rkd_budget_new(h->cfg.send_budget, h->cfg.send_budget / 4, addresses);
    if (!h->bodies || !h->sends) {
        rkd_budget_free(h->bodies);
        rkd_budget_free(h->sends);
        free(h);
        freeaddrinfo(ai);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory for the table of body budgets");
        return NULL;
    }
    atomic_init(&h->inflight, 0);
    atomic_init(&h->connections, 0);
    atomic_init(&h->held, 0);
    atomic_init(&h->closed, 0);
    atomic_init(&h->activations, 0);
    atomic_init(&h->started, 0);
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    h->d = pool_start(h) == 0 ? start_daemon(h, ai) : NULL;
    freeaddrinfo(ai);
    if (!h->d || pthread_create(&h->timer, NULL, timer_main, h)) {
        rk_error_set(err, RK_EIO, NULL,
                     cfg->tls_cert ? "cannot serve HTTPS on %.100s: the address is in use or not "
                                     "of this machine, or the certificate and key do not match"
                                   : "cannot listen on %.100s: the address is in use or not of "
                                     "this machine",
                     cfg->listen);
        pool_free(h); /* before MHD stops, as in rkd_http_stop */
        if (h->d)
            MHD_stop_daemon(h->d);
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
        rkd_budget_free(h->bodies);
        rkd_budget_free(h->sends);
        free(h);
        return NULL;
    }
    atomic_store(&h->started, 1);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    rkd_app_set_activation_hook(cfg->app, on_activation, h);
    return h;
}

unsigned rkd_http_port(const rkd_http *h)
{
    return h->port;
}

void rkd_http_stop(rkd_http *h, unsigned grace_ms)
{
    if (!h)
        return;
    MHD_quiesce_daemon(h->d); /* no new connections; requests in flight go on */
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->timer, NULL); /* it answers every held long poll on its way out */
    for (unsigned waited = 0; atomic_load(&h->inflight) > 0 && waited < grace_ms; waited += 10)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    pool_free(h); /* before MHD stops: the pool answers and resumes what it was given */
    MHD_stop_daemon(h->d);
    rkd_app_set_activation_hook(h->cfg.app, NULL, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    rkd_budget_free(h->bodies);
    rkd_budget_free(h->sends);
    free(h);
}
