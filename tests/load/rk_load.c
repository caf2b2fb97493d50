/* rk_load.c: a bounded load driver for ringkeeperd on loopback: readers, long-pollers and
 * publishers/activators together for a fixed time, then a check over HTTP that nothing acknowledged
 * was lost (tests/load/test_load.sh; figures in docs/RELIABILITY.md, "Load test").
 *
 * rk_load mixed  --url URL --cluster C --seconds S --acked FILE [--readers N] [--pollers N]
 *                [--publishers N] [--pid SERVER_PID]
 *   Runs for S seconds: readers GET /ring on a kept-alive connection (version from the ETag;
 *   a lower version than one the same thread saw is "backwards"); pollers GET /ring?wait=10 (odd
 *   ones ?wait=1) with If-None-Match (a 200 must carry a newer version); publishers POST random
 *   small topologies, a third with ?activate=true (409 when activations raced its gate three
 *   times: expected), a third followed by POST .../activate (409
 *   when a newer one was activated meanwhile: expected), a third left staged, and pause the last
 *   2 s of every 10 so that polls are held, woken and timed out too. A sampler reads VmRSS of
 *   --pid every second. Then prints per kind: requests, 2xx, 304, expected and unexpected 4xx,
 *   5xx, transport errors, p50/p99/max latency; versions published and activated; RSS at 1, S/3,
 *   2S/3 and S seconds; and runs `verify`.
 * rk_load storm  --url URL --cluster C --seconds S --acked FILE [--publishers N]
 *   Publishes (half with ?activate=true) as fast as it can until S seconds pass or the server stops
 *   answering (it is being killed: each publisher stops quietly at its first unanswered request).
 * rk_load probe  --url URL --cluster C --seconds S --acked FILE [--latency-factor K] [--token T]
 *   What a client sees while the server is under attack (test_load.sh runs attackers.py meanwhile):
 *   one thread GETs /healthz every PROBE_EVERY_MS on a kept-alive connection, one publisher
 *   publishes as in mixed. Fails unless every answer is 2xx (409 to an overtaken activation
 *   allowed), /healthz p99 stays under PROBE_HEALTH_P99_MS and every publish under
 *   PROBE_PUBLISH_MAX_MS, both times K (default 1; a sanitizer build of the server, several times
 *   slower by design, is probed with a larger K).
 * rk_load verify --url URL --cluster C --acked FILE
 *   Lists every version of C: the numbers must be exactly 1..latest; every acknowledged version
 *   in FILE must be there with the same fingerprint; the active version must be at least the
 *   highest acknowledged activation.
 *
 * FILE gets one line per acknowledgement, flushed at once so a killed server cannot outrun it:
 * "V FINGERPRINT" for a 201 to a publish, "V FINGERPRINT A" when V was acknowledged active (201 to
 * ?activate=true, or 200 to an activation). It is appended to, never truncated.
 * Exit: 0 when every check passed; 1 with one "FAIL: ..." line per failed check; 2 bad usage. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>

#include "load_fail.h"

#define MAX_WORKERS          64         /* per role */
#define MAX_SECONDS          3600       /* longest run */
#define MAX_LOOPS            100000000L /* bound on any worker's loop (time ends it first) */
#define REQ_TIMEOUT_S        20         /* a plain request; a long poll gets its wait on top */
#define CONNECT_TIMEOUT_S    5          /* loopback: a connect either works at once or not */
#define POLL_WAIT_S          10         /* ?wait= of even pollers (odd ones: 1), cut at the end */
#define QUIET_EVERY_S        10     /* mixed: publishers pause QUIET_S of every QUIET_EVERY_S s, */
#define QUIET_S              2      /* so long polls are also held, and 1 s ones time out (304) */
#define EARLY_MARGIN_US      200000 /* a 304 this much before the end of its wait is "early" */
#define BODY_MAX             (64L << 20) /* largest response body kept (a page of 1000 versions) */
#define PAGE_LIMIT           1000        /* versions per listing page, the API's maximum */
#define MAX_VERSIONS         (1L << 22)  /* largest cluster verify handles */
#define FP_LEN               16          /* hex digits of a fingerprint */
#define HIST_BUCKETS         240         /* latency: 16 exact µs, then 8 per power of two */
#define RSS_SLACK_PCT        10          /* RSS bound: see rss_check */
#define RSS_SLACK_KB         (4L * 1024) /* RSS bound: see rss_check */
#define TOPO_MAX             2048        /* a publisher's JSON topology */
#define URL_MAX              1024
#define PROBE_EVERY_MS       20   /* probe: one GET /healthz per this many ms */
#define PROBE_HEALTH_P99_MS  50   /* probe: bound on the p99 of /healthz */
#define PROBE_PUBLISH_MAX_MS 1000 /* probe: bound on every publish */

typedef _Atomic uint64_t counter;

enum kind { K_READ, K_POLL, K_PUBLISH, K_ACTIVATE, K_HEALTH, K_COUNT };
static const char *const kind_names[K_COUNT] = {"read", "poll", "publish", "activate", "healthz"};

/* The answers to one kind of request, counted by every thread of that kind. */
typedef struct kind_stats {
    counter ok;                 /* 2xx */
    counter not_modified;       /* 304 */
    counter expected_4xx;       /* 404 before any activation (reads, polls), 409 (activations) */
    counter bad_4xx;            /* any other 4xx: a failure */
    counter server_err;         /* 5xx: a failure */
    counter other;              /* 1xx, 3xx other than 304: a failure */
    counter transport;          /* no HTTP answer (refused, reset, timeout): a failure in mixed */
    counter hist[HIST_BUCKETS]; /* latency, see hist_bucket */
    counter max_us;             /* slowest answer */
} kind_stats;

/* Options, then everything the threads share. */
typedef struct load_ctx {
    const char *mode;       /* "mixed", "storm", "verify" */
    const char *url;        /* http://127.0.0.1:PORT */
    const char *cluster;    /* the cluster loaded and verified */
    const char *acked_path; /* acknowledgements, appended */
    const char *token;      /* --token: sent with every write, for a server with --token-file */
    long seconds;           /* duration of mixed and storm */
    long readers;           /* GET /ring threads */
    long pollers;           /* GET /ring?wait threads */
    long publishers;        /* POST .../versions threads */
    long probers;           /* GET /healthz threads (probe) */
    long pid;               /* ringkeeperd, for VmRSS; 0: not sampled */
    long latency_factor;    /* probe: its latency bounds times this */
    bool storm;             /* storm: stop at the first unanswered request, no 3-way split */
    double start, deadline; /* CLOCK_MONOTONIC seconds */
    FILE *acked;            /* acked_path, open for appending during a run */
    pthread_mutex_t ack_mu; /* one line at a time into `acked` */
    kind_stats stats[K_COUNT];
    counter published;      /* 201 to a publish */
    counter activated;      /* acknowledged activations */
    counter max_activated;  /* highest acknowledged activation */
    counter max_seen;       /* highest version a reader or poller saw */
    counter backwards;      /* a reader or poller saw a lower version than before */
    counter bad_answers;    /* 200 without ETag, 201 without version, stale 200 to a poll... */
    counter ack_write_errs; /* lines that could not be written to `acked` */
    counter early_304;      /* polls answered 304 well before their ?wait= ended */
    long rss_kb[MAX_SECONDS + 1]; /* VmRSS of pid at second i (0: not read) */
} load_ctx;

/* One kept-alive connection (a libcurl easy handle) and its last answer. */
typedef struct conn {
    CURL *easy;
    char *body;       /* the last body when keep_body; NUL-terminated */
    size_t len;       /* bytes in body */
    size_t cap;       /* bytes allocated for body */
    bool keep_body;   /* false: bodies are read and dropped */
    long etag;        /* N of the last answer's ETag "vN.<store id>", -1 when it had none */
    char etag_id[34]; /* the store id and fingerprint of that ETag ("<id>.<fp>"), "" for none */
    uint64_t us;      /* how long the last request took, µs */
} conn;

/* One request: method, URL, POST body, optional If-None-Match version. */
typedef struct request {
    const char *method; /* "GET" or "POST" */
    const char *url;
    const char *data;       /* POST body ("" for none) */
    long if_none;           /* If-None-Match: "v<if_none>.<if_none_id>" when > 0 */
    const char *if_none_id; /* "<store id>.<fingerprint>" of the ETag it had; "" or NULL: none */
    long timeout_s;         /* whole request */
    long expect_4xx;        /* the 4xx counted as expected, 0 for none */
    const char *token;      /* Authorization: Bearer <token> when set */
} request;

/* One acknowledged version. */
typedef struct ack {
    long version;
    char fp[FP_LEN + 1];
} ack;

/* All versions of a cluster as listed by GET .../versions, newest first. */
typedef struct listing {
    long latest;            /* first version listed, 0 when none */
    long count;             /* versions listed */
    long gaps;              /* versions listed out of the expected latest, latest-1, ... order */
    long active;            /* the version in state "active", 0 when none */
    long actives;           /* versions in state "active" (1 once any was activated) */
    char (*fp)[FP_LEN + 1]; /* fp[v], "" when v was not listed; latest + 1 entries */
} listing;

typedef struct worker {
    load_ctx *ctx;
    int index;
    pthread_t thread;
    bool started;
} worker;

/* ---- time ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0 && now_s() < t)
        ;
}

static void sleep_ms(long ms)
{
    sleep_until(now_s() + (double)ms / 1e3);
}

static bool time_is_up(const load_ctx *x)
{
    return now_s() >= x->deadline;
}

/* In the publishers' pause of the mixed load: the last QUIET_S seconds of every QUIET_EVERY_S. */
static bool quiet_now(const load_ctx *x)
{
    long into = (long)((now_s() - x->start) * 1000) % (QUIET_EVERY_S * 1000);
    return into >= (QUIET_EVERY_S - QUIET_S) * 1000;
}

/* ---- counters ---- */

static void counter_max(counter *c, uint64_t v)
{
    uint64_t old = atomic_load(c);
    while (v > old && !atomic_compare_exchange_weak(c, &old, v))
        ;
}

/* Bucket of a latency: exact below 16 µs, then 8 buckets per power of two (12.5% wide). */
static unsigned hist_bucket(uint64_t us)
{
    unsigned octave = 4;
    if (us < 16)
        return (unsigned)us;
    while (octave < 63 && us >> (octave + 1))
        octave++;
    unsigned b = 16 + (octave - 4) * 8 + (unsigned)((us >> (octave - 3)) & 7);
    return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

/* The largest latency in bucket b (a percentile is reported as its bucket's upper end). */
static uint64_t hist_upper(unsigned b)
{
    if (b < 16)
        return b;
    unsigned octave = (b - 16) / 8 + 4, sub = (b - 16) % 8;
    return ((9ULL + sub) << (octave - 3)) - 1;
}

/* Latency (µs) at fraction p of the answers of s; 0 when there were none. */
static uint64_t hist_percentile(kind_stats *s, double p)
{
    uint64_t total = 0, seen = 0, max = atomic_load(&s->max_us);
    for (unsigned b = 0; b < HIST_BUCKETS; b++)
        total += atomic_load(&s->hist[b]);
    uint64_t want = (uint64_t)(p * (double)total + 0.999999);
    for (unsigned b = 0; b < HIST_BUCKETS && total; b++) {
        seen += atomic_load(&s->hist[b]);
        if (seen >= want)
            return hist_upper(b) < max ? hist_upper(b) : max;
    }
    return max;
}

static void stats_record(kind_stats *s, long status, long expect_4xx, uint64_t us)
{
    if (status == 0)
        atomic_fetch_add(&s->transport, 1);
    else if (status >= 200 && status < 300)
        atomic_fetch_add(&s->ok, 1);
    else if (status == 304)
        atomic_fetch_add(&s->not_modified, 1);
    else if (status == expect_4xx)
        atomic_fetch_add(&s->expected_4xx, 1);
    else if (status >= 400 && status < 500)
        atomic_fetch_add(&s->bad_4xx, 1);
    else if (status >= 500)
        atomic_fetch_add(&s->server_err, 1);
    else
        atomic_fetch_add(&s->other, 1);
    if (status == 0)
        return; /* no answer, no latency */
    atomic_fetch_add(&s->hist[hist_bucket(us)], 1);
    counter_max(&s->max_us, us);
}

/* ---- HTTP ---- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    conn *c = arg;
    size_t len = size * n;
    if (!c->keep_body)
        return len;
    if (c->len + len + 1 > (size_t)BODY_MAX)
        return 0; /* over the cap: curl fails the transfer */
    if (c->len + len + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + len + 1)
            cap *= 2;
        char *body = realloc(c->body, cap);
        if (!body)
            return 0;
        c->body = body;
        c->cap = cap;
    }
    memcpy(c->body + c->len, data, len);
    c->len += len;
    c->body[c->len] = '\0';
    return len;
}

/* Keeps N and the rest of an `ETag: "vN.<store id>.<fingerprint>"` header. */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    conn *c = arg;
    size_t len = size * n;
    char line[128];
    if (len < 6 || len >= sizeof line || strncasecmp(data, "etag:", 5) != 0)
        return len;
    memcpy(line, data, len);
    line[len] = '\0';
    long v;
    char id[34] = "";
    if (sscanf(line + 5, " \"v%ld.%33[0-9a-f.]\"", &v, id) >= 1 && v > 0) {
        c->etag = v;
        memcpy(c->etag_id, id, sizeof id);
    }
    return len;
}

static int conn_init(conn *c, bool keep_body)
{
    memset(c, 0, sizeof *c);
    c->keep_body = keep_body;
    c->easy = curl_easy_init();
    if (!c->easy)
        return -1;
    curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
    curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->easy, CURLOPT_HEADERDATA, c);
    return 0;
}

static void conn_deinit(conn *c)
{
    curl_easy_cleanup(c->easy);
    free(c->body);
    memset(c, 0, sizeof *c);
}

/* The request's headers; NULL when out of memory. Free with curl_slist_free_all. */
static struct curl_slist *request_headers(const request *r)
{
    char inm[96], auth[160];
    bool post = strcmp(r->method, "POST") == 0;
    /* "Expect:" stops libcurl waiting for a 100 Continue; an empty Content-Type drops its
     * form-encoded default on a POST without a body. */
    const char *type = post && r->data[0] ? "Content-Type: application/json" : "Content-Type:";
    struct curl_slist *h = curl_slist_append(NULL, "Expect:"), *next;
    next = h ? curl_slist_append(h, type) : NULL;
    if (next && r->if_none > 0) {
        bool id = r->if_none_id && r->if_none_id[0];
        snprintf(inm, sizeof inm, "If-None-Match: \"v%ld%s%s\"", r->if_none, id ? "." : "",
                 id ? r->if_none_id : "");
        next = curl_slist_append(next, inm);
    }
    if (next && r->token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %.120s", r->token);
        next = curl_slist_append(next, auth);
    }
    if (!next)
        curl_slist_free_all(h);
    return next ? h : NULL;
}

/* Performs r on c. Returns the HTTP status, or 0 when no answer came; c->us gets the latency. */
static long conn_perform(conn *c, const request *r)
{
    long status = 0;
    struct curl_slist *headers = request_headers(r);
    if (!headers)
        return 0;
    c->len = 0;
    c->etag = -1;
    if (c->body)
        c->body[0] = '\0';
    curl_easy_setopt(c->easy, CURLOPT_URL, r->url);
    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c->easy, CURLOPT_TIMEOUT, r->timeout_s);
    if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, r->data);
        curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(r->data));
    } else {
        curl_easy_setopt(c->easy, CURLOPT_HTTPGET, 1L);
    }
    double t0 = now_s();
    CURLcode rc = curl_easy_perform(c->easy);
    c->us = (uint64_t)((now_s() - t0) * 1e6);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    return status;
}

/* Performs r on c and counts it under kind k. */
static long timed(load_ctx *x, enum kind k, conn *c, const request *r)
{
    long status = conn_perform(c, r);
    stats_record(&x->stats[k], status, r->expect_4xx, c->us);
    return status;
}

/* ---- acknowledgements ---- */

static void ack_write(load_ctx *x, const ack *a, bool activated)
{
    pthread_mutex_lock(&x->ack_mu);
    int n = fprintf(x->acked, "%ld %s%s\n", a->version, a->fp, activated ? " A" : "");
    if (n < 0 || fflush(x->acked) != 0)
        atomic_fetch_add(&x->ack_write_errs, 1);
    pthread_mutex_unlock(&x->ack_mu);
    if (!activated)
        return;
    atomic_fetch_add(&x->activated, 1);
    counter_max(&x->max_activated, (uint64_t)a->version);
}

/* The version and fingerprint of a 201's version document; -1 when they are missing. */
static int ack_parse(const conn *c, ack *a)
{
    json_t *doc = c->body ? json_loadb(c->body, c->len, 0, NULL) : NULL;
    json_t *v = json_object_get(doc, "version");
    const char *fp = json_string_value(json_object_get(doc, "fingerprint"));
    int rc = -1;
    if (json_is_integer(v) && json_integer_value(v) > 0 && fp && strlen(fp) == FP_LEN) {
        a->version = (long)json_integer_value(v);
        memcpy(a->fp, fp, FP_LEN + 1);
        rc = 0;
    }
    json_decref(doc);
    return rc;
}

/* ---- workers ---- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static long rng_range(uint64_t *s, long lo, long hi)
{
    return lo + (long)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* A valid topology of docs/RING.md: 3..12 nodes, weights 1..3, vnode_factor 40..160, in one hash
 * (another hash over the active one moves every key: its activation would need force). */
static int topology_json(char *buf, size_t size, uint64_t *rng, int worker)
{
    long nodes = rng_range(rng, 3, 12);
    size_t off =
        (size_t)snprintf(buf, size,
                         "{\"hash\":\"xxh3_64\",\"vnode_factor\":%ld,\"comment\":\"rk_load "
                         "publisher %d\",\"nodes\":[",
                         rng_range(rng, 40, 160), worker);
    for (long i = 0; i < nodes && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off,
                                "%s{\"id\":\"n%ld\",\"addr\":\"10.%d.0.%ld:11211\",\"weight\":%ld}",
                                i ? "," : "", i, worker % 256, i, rng_range(rng, 1, 3));
    if (off < size)
        off += (size_t)snprintf(buf + off, size - off, "]}");
    return off < size ? 0 : -1;
}

/* POST .../versions/V/activate. -1 when the server did not answer. */
static int activate(load_ctx *x, conn *c, const ack *a)
{
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/v1/clusters/%s/versions/%ld/activate", x->url, x->cluster,
             a->version);
    request r = {.method = "POST",
                 .url = url,
                 .data = "",
                 .timeout_s = REQ_TIMEOUT_S,
                 .expect_4xx = 409, /* a newer version was activated first */
                 .token = x->token};
    long status = timed(x, K_ACTIVATE, c, &r);
    if (status == 200)
        ack_write(x, a, true);
    return status ? 0 : -1;
}

/* One publish: with ?activate=true, followed by an activation, or left staged, as the dice say
 * (storm: activate=true or staged, half each). -1 when the server did not answer. */
static int publish_once(load_ctx *x, conn *c, uint64_t *rng, int worker)
{
    char doc[TOPO_MAX], url[URL_MAX];
    long how = x->storm ? 2 * rng_range(rng, 0, 1) : rng_range(rng, 0, 2);
    ack a;
    if (topology_json(doc, sizeof doc, rng, worker) != 0)
        return 0;
    snprintf(url, sizeof url, "%s/v1/clusters/%s/versions%s", x->url, x->cluster,
             how == 0 ? "?activate=true" : "");
    /* One that activates checks the active version's ring first: under activations of the same
     * cluster racing it three times over, it is 409 (nothing stored; retry), as an activation. */
    request r = {.method = "POST",
                 .url = url,
                 .data = doc,
                 .timeout_s = REQ_TIMEOUT_S,
                 .expect_4xx = how == 0 ? 409 : 0,
                 .token = x->token};
    long status = timed(x, K_PUBLISH, c, &r);
    if (status != 201)
        return status ? 0 : -1;
    if (ack_parse(c, &a) != 0) {
        atomic_fetch_add(&x->bad_answers, 1);
        return 0;
    }
    atomic_fetch_add(&x->published, 1);
    ack_write(x, &a, how == 0);
    return how == 1 ? activate(x, c, &a) : 0;
}

static void *publisher_main(void *arg)
{
    worker *w = arg;
    load_ctx *x = w->ctx;
    uint64_t rng =
        (0x9e3779b97f4a7c15ULL * (uint64_t)(w->index + 1) ^ (uint64_t)(now_s() * 1e6)) | 1;
    conn c;
    if (conn_init(&c, true) != 0) {
        atomic_fetch_add(&x->stats[K_PUBLISH].transport, 1);
        return NULL;
    }
    for (long i = 0; i < MAX_LOOPS && !time_is_up(x); i++) {
        if (!x->storm && quiet_now(x)) {
            sleep_ms(20);
            continue;
        }
        if (publish_once(x, &c, &rng, w->index) == 0)
            continue;
        if (x->storm)
            break;     /* the server is gone: that is what a storm waits for */
        sleep_ms(100); /* no answer in the mixed load (a failure): do not spin */
    }
    conn_deinit(&c);
    return NULL;
}

/* A reader or poller got version `got` (-1: no ETag) after `last`; returns the new last. */
static long saw_version(load_ctx *x, long last, long got)
{
    if (got < 0) {
        atomic_fetch_add(&x->bad_answers, 1);
        return last;
    }
    if (got < last) {
        atomic_fetch_add(&x->backwards, 1);
        return last;
    }
    counter_max(&x->max_seen, (uint64_t)got);
    return got;
}

/* One GET /ring; returns the new last version, or -1 when time is up. */
static long read_once(load_ctx *x, conn *c, const char *ring_url, long last, const worker *w)
{
    (void)w;
    if (time_is_up(x))
        return -1;
    request r = {.method = "GET",
                 .url = ring_url,
                 .timeout_s = REQ_TIMEOUT_S,
                 .expect_4xx = last ? 0 : 404}; /* no active version yet */
    long status = timed(x, K_READ, c, &r);
    if (status == 200)
        return saw_version(x, last, c->etag);
    if (status == 0 || status == 404)
        sleep_ms(status ? 10 : 100); /* nothing to read yet, or no server: do not spin */
    return last;
}

/* One long poll (a plain GET while no version is known yet) of ?wait=10, or 1 for odd workers;
 * returns the new last version, or -1 when time is up. */
static long poll_once(load_ctx *x, conn *c, const char *ring_url, long last, const worker *w)
{
    long max_wait = w->index % 2 ? 1 : POLL_WAIT_S;
    char url[URL_MAX + 32];
    long wait = (long)(x->deadline - now_s()); /* never past the deadline */
    if (wait < 1)
        return -1;
    wait = wait < max_wait ? wait : max_wait;
    snprintf(url, sizeof url, "%s?wait=%ld", ring_url, wait);
    request r = {.method = "GET",
                 .url = last ? url : ring_url,
                 .if_none = last,
                 .if_none_id = c->etag_id,
                 .timeout_s = REQ_TIMEOUT_S + wait,
                 .expect_4xx = last ? 0 : 404};
    long status = timed(x, K_POLL, c, &r);
    if (status == 200 && c->etag == last)
        atomic_fetch_add(&x->bad_answers, 1); /* 200 to If-None-Match of the active version */
    if (status == 200)
        return saw_version(x, last, c->etag);
    if (status == 304 && last && c->us + EARLY_MARGIN_US < (uint64_t)wait * 1000000)
        atomic_fetch_add(&x->early_304, 1); /* not held for its wait: a failure */
    if (status == 0 || status == 404)
        sleep_ms(status ? 50 : 100);
    return last;
}

typedef long (*ring_step)(load_ctx *x, conn *c, const char *ring_url, long last, const worker *w);

/* A reader or a poller: one kept-alive connection, `step` after `step` until one returns -1. */
static void ring_worker(worker *w, enum kind k, ring_step step)
{
    load_ctx *x = w->ctx;
    char url[URL_MAX];
    conn c;
    snprintf(url, sizeof url, "%s/v1/clusters/%s/ring", x->url, x->cluster);
    if (conn_init(&c, false) != 0) {
        atomic_fetch_add(&x->stats[k].transport, 1);
        return;
    }
    long last = 0;
    for (long i = 0; i < MAX_LOOPS && last >= 0; i++)
        last = step(x, &c, url, last, w);
    conn_deinit(&c);
}

static void *reader_main(void *arg)
{
    ring_worker(arg, K_READ, read_once);
    return NULL;
}

static void *poller_main(void *arg)
{
    ring_worker(arg, K_POLL, poll_once);
    return NULL;
}

/* GET /healthz every PROBE_EVERY_MS until the deadline. */
static void *health_main(void *arg)
{
    worker *w = arg;
    load_ctx *x = w->ctx;
    char url[URL_MAX];
    conn c;
    snprintf(url, sizeof url, "%s/healthz", x->url);
    if (conn_init(&c, false) != 0) {
        atomic_fetch_add(&x->stats[K_HEALTH].transport, 1);
        return NULL;
    }
    request r = {.method = "GET", .url = url, .timeout_s = REQ_TIMEOUT_S};
    for (long i = 0; i < MAX_LOOPS && !time_is_up(x); i++) {
        timed(x, K_HEALTH, &c, &r);
        sleep_ms(PROBE_EVERY_MS);
    }
    conn_deinit(&c);
    return NULL;
}

/* VmRSS of pid in KiB; 0 when it cannot be read. */
static long read_rss_kb(long pid)
{
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    while (f && kb == 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) != 1)
            kb = 0;
    if (f)
        fclose(f);
    return kb;
}

static void *sampler_main(void *arg)
{
    worker *w = arg;
    load_ctx *x = w->ctx;
    x->rss_kb[0] = read_rss_kb(x->pid);
    for (long i = 1; i <= x->seconds; i++) {
        sleep_until(x->start + (double)i);
        x->rss_kb[i] = read_rss_kb(x->pid);
    }
    return NULL;
}

/* ---- verification ---- */

/* Takes in one listed version (they come newest first). -1 when it is malformed. */
static int listing_add(listing *l, json_t *item)
{
    json_t *jv = json_object_get(item, "version");
    const char *fp = json_string_value(json_object_get(item, "fingerprint"));
    const char *state = json_string_value(json_object_get(item, "state"));
    long v = json_is_integer(jv) ? (long)json_integer_value(jv) : 0;
    if (v < 1 || v > MAX_VERSIONS || !fp || strlen(fp) != FP_LEN || !state)
        return -1;
    if (l->count == 0) {
        l->latest = v;
        l->fp = calloc((size_t)v + 1, sizeof *l->fp);
        if (!l->fp)
            return -1;
    }
    if (v != l->latest - l->count)
        l->gaps++;
    if (v <= l->latest)
        memcpy(l->fp[v], fp, FP_LEN + 1);
    l->count++;
    if (strcmp(state, "active") == 0) {
        l->active = v;
        l->actives++;
    }
    return 0;
}

/* Takes in one page; *before gets its next_before (0 on the last page). -1 when malformed. */
static int listing_page(listing *l, const conn *c, long *before)
{
    json_t *doc = json_loadb(c->body ? c->body : "", c->len, 0, NULL);
    json_t *items = json_object_get(doc, "versions"), *item;
    json_t *next = json_object_get(doc, "next_before");
    size_t i;
    int rc = json_is_array(items) && (json_is_null(next) || json_is_integer(next)) ? 0 : -1;
    json_array_foreach(items, i, item)
    {
        if (rc == 0)
            rc = listing_add(l, item);
    }
    *before = json_is_integer(next) ? (long)json_integer_value(next) : 0;
    json_decref(doc);
    return rc;
}

/* Every version of the cluster, page by page. 0, or -1 with the reason printed. */
static int listing_load(listing *l, load_ctx *x, conn *c, int *failures)
{
    char url[URL_MAX];
    long before = 0;
    for (long page = 0; page <= MAX_VERSIONS / PAGE_LIMIT; page++) {
        int n = snprintf(url, sizeof url, "%s/v1/clusters/%s/versions?limit=%d", x->url, x->cluster,
                         PAGE_LIMIT);
        if (before > 0)
            snprintf(url + n, sizeof url - (size_t)n, "&before=%ld", before);
        request r = {.method = "GET", .url = url, .timeout_s = REQ_TIMEOUT_S};
        long status = conn_perform(c, &r);
        if (status == 404 && page == 0)
            return 0; /* no such cluster: no versions */
        if (status != 200) {
            fail(failures, "listing versions: HTTP %ld from %s", status, url);
            return -1;
        }
        if (listing_page(l, c, &before) != 0) {
            fail(failures, "listing versions: malformed page from %s", url);
            return -1;
        }
        if (before == 0)
            return 0;
    }
    fail(failures, "listing versions: more than %ld versions", MAX_VERSIONS);
    return -1;
}

/* What the acknowledgement file says, checked against a listing. */
typedef struct acked_check {
    long lines;         /* lines read */
    long malformed;     /* lines that are not "V FINGERPRINT [A]" */
    long missing;       /* acknowledged versions not listed */
    long changed;       /* acknowledged versions listed with another fingerprint */
    long activations;   /* "A" lines */
    long max_activated; /* highest "A" version */
    long max_version;   /* highest acknowledged version */
} acked_check;

static void acked_line(acked_check *k, const listing *l, const char *line)
{
    long v;
    char fp[FP_LEN + 1], flag[2] = "";
    int n = sscanf(line, "%ld %16s %1s", &v, fp, flag);
    k->lines++;
    if (n < 2 || v < 1 || strlen(fp) != FP_LEN || (n == 3 && strcmp(flag, "A") != 0)) {
        k->malformed++;
        return;
    }
    k->max_version = v > k->max_version ? v : k->max_version;
    if (n == 3) {
        k->activations++;
        k->max_activated = v > k->max_activated ? v : k->max_activated;
    }
    if (v > l->latest || l->fp[v][0] == '\0')
        k->missing++;
    else if (strcmp(l->fp[v], fp) != 0)
        k->changed++;
}

static int acked_load(acked_check *k, const listing *l, const char *path, int *failures)
{
    char line[256];
    FILE *f = fopen(path, "r");
    if (!f) {
        fail(failures, "cannot read the acknowledgement file %s", path);
        return -1;
    }
    for (long i = 0; i < 10 * MAX_VERSIONS && fgets(line, sizeof line, f); i++)
        acked_line(k, l, line);
    fclose(f);
    return 0;
}

/* The active version by GET /ring (its ETag), 0 before any activation, -1 on an error. */
static long ring_version(load_ctx *x, conn *c)
{
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/v1/clusters/%s/ring", x->url, x->cluster);
    request r = {.method = "GET", .url = url, .timeout_s = REQ_TIMEOUT_S};
    long status = conn_perform(c, &r);
    if (status == 404)
        return 0;
    return status == 200 ? c->etag : -1;
}

static void verify_report(const listing *l, const acked_check *k, long ring, int *failures)
{
    printf("verify: %ld versions listed, latest %ld, active %ld (GET /ring: %ld)\n", l->count,
           l->latest, l->active, ring);
    printf("verify: %ld acknowledgement lines, highest version %ld, %ld activations (highest %ld)"
           "; missing %ld, changed %ld\n",
           k->lines, k->max_version, k->activations, k->max_activated, k->missing, k->changed);
    if (l->gaps || l->count != l->latest)
        fail(failures, "numbering is not exactly 1..%ld: %ld listed, %ld out of order", l->latest,
             l->count, l->gaps);
    if (l->actives > 1)
        fail(failures, "%ld versions in state active", l->actives);
    if (ring != l->active)
        fail(failures, "GET /ring says v%ld, the listing says v%ld is active", ring, l->active);
    if (k->malformed)
        fail(failures, "%ld malformed lines in the acknowledgement file", k->malformed);
    if (k->missing || k->changed)
        fail(failures, "acknowledged versions lost: %ld missing, %ld with another fingerprint",
             k->missing, k->changed);
    if (l->active < k->max_activated)
        fail(failures, "active version %ld is older than the acknowledged activation of %ld",
             l->active, k->max_activated);
}

/* The checks of `verify`; the number of failures (each printed). */
static int verify(load_ctx *x)
{
    int failures = 0;
    listing l = {0};
    acked_check k = {0};
    conn c;
    if (conn_init(&c, true) != 0) {
        fail(&failures, "curl_easy_init failed");
        return failures;
    }
    if (listing_load(&l, x, &c, &failures) == 0 &&
        acked_load(&k, &l, x->acked_path, &failures) == 0)
        verify_report(&l, &k, ring_version(x, &c), &failures);
    free(l.fp);
    conn_deinit(&c);
    return failures;
}

/* ---- runs ---- */

typedef void *(*worker_fn)(void *);

/* Starts n workers of one role from ws; returns how many started. */
static long workers_start(load_ctx *x, worker *ws, long n, worker_fn fn)
{
    long started = 0;
    for (long i = 0; i < n; i++) {
        ws[i].ctx = x;
        ws[i].index = (int)i;
        ws[i].started = pthread_create(&ws[i].thread, NULL, fn, &ws[i]) == 0;
        started += ws[i].started;
    }
    return started;
}

static void workers_join(worker *ws, long n)
{
    for (long i = 0; i < n; i++)
        if (ws[i].started)
            pthread_join(ws[i].thread, NULL);
}

/* Runs readers, pollers, publishers, probers and (with a pid) the RSS sampler until the deadline.
 * -1 when a thread could not be started. */
static int run_workers(load_ctx *x)
{
    static const worker_fn fns[] = {reader_main, poller_main, publisher_main, health_main};
    enum { ROLES = sizeof fns / sizeof fns[0] };
    const long counts[ROLES] = {x->readers, x->pollers, x->publishers, x->probers};
    worker ws[ROLES][MAX_WORKERS], sampler = {.ctx = x};
    long started = 0, wanted = 0;
    x->start = now_s();
    x->deadline = x->start + (double)x->seconds;
    for (int role = 0; role < ROLES; role++) {
        started += workers_start(x, ws[role], counts[role], fns[role]);
        wanted += counts[role];
    }
    if (x->pid > 0)
        sampler.started = pthread_create(&sampler.thread, NULL, sampler_main, &sampler) == 0;
    for (int role = 0; role < ROLES; role++)
        workers_join(ws[role], counts[role]);
    if (sampler.started)
        pthread_join(sampler.thread, NULL);
    return started == wanted && (x->pid <= 0 || sampler.started) ? 0 : -1;
}

static void report_kinds(load_ctx *x)
{
    printf("%-9s %9s %8s %9s %8s %7s %7s %5s %9s %8s %8s %8s\n", "kind", "requests", "req/s", "2xx",
           "304", "4xx ok", "4xx bad", "5xx", "transport", "p50 ms", "p99 ms", "max ms");
    for (int k = 0; k < K_COUNT; k++) {
        kind_stats *s = &x->stats[k];
        uint64_t n = s->ok + s->not_modified + s->expected_4xx + s->bad_4xx + s->server_err +
                     s->other + s->transport;
        if (n == 0)
            continue; /* a kind this mode does not send */
        printf("%-9s %9llu %8.1f %9llu %8llu %7llu %7llu %5llu %9llu %8.2f %8.2f %8.2f\n",
               kind_names[k], (unsigned long long)n, (double)n / (double)x->seconds,
               (unsigned long long)s->ok, (unsigned long long)s->not_modified,
               (unsigned long long)s->expected_4xx, (unsigned long long)s->bad_4xx,
               (unsigned long long)s->server_err, (unsigned long long)s->transport,
               (double)hist_percentile(s, 0.50) / 1e3, (double)hist_percentile(s, 0.99) / 1e3,
               (double)atomic_load(&s->max_us) / 1e3);
    }
    printf("(poll latencies include the ?wait= hold, 1 or %d s, by design; \"4xx ok\" is 404 "
           "before the first activation and 409 to an activation overtaken by a newer one)\n",
           POLL_WAIT_S);
}

static int check_kinds(load_ctx *x, int *failures)
{
    for (int k = 0; k < K_COUNT; k++) {
        kind_stats *s = &x->stats[k];
        if (s->server_err)
            fail(failures, "%s: %llu answers 5xx", kind_names[k],
                 (unsigned long long)s->server_err);
        if (s->bad_4xx || s->other)
            fail(failures, "%s: %llu unexpected 4xx, %llu other unexpected statuses", kind_names[k],
                 (unsigned long long)s->bad_4xx, (unsigned long long)s->other);
        if (s->transport && !x->storm)
            fail(failures, "%s: %llu requests without an answer (refused, reset or timed out)",
                 kind_names[k], (unsigned long long)s->transport);
    }
    if (x->bad_answers)
        fail(failures,
             "%llu malformed answers (200 without ETag, 201 without version, or a "
             "200 to If-None-Match of the active version)",
             (unsigned long long)x->bad_answers);
    if (x->ack_write_errs)
        fail(failures, "%llu acknowledgements not written to %s",
             (unsigned long long)x->ack_write_errs, x->acked_path);
    return *failures;
}

/* The RSS bound: RSS at the end may exceed RSS at a third of the run (second 20 of 60) by at most
 * max(10%, 4 MiB). Measured here (docs/RELIABILITY.md, "Load test"): ringkeeperd's RSS climbs
 * from about 8 to 10 MiB in the first 5 s, while SQLite's page cache (2000 KiB by default, one
 * connection) and the malloc arenas of its threads fill, then moves by under 100 KiB to the end.
 * 4 MiB leaves room for that page cache to fill late on a slower machine, twice over, yet a leak
 * of 512 bytes per publish (about 9000 of them from 20 to 60 s) or of 4 bytes per read (about
 * 900000) goes over it. */
static void rss_check(load_ctx *x, int *failures)
{
    long s = x->seconds, third = s / 3 ? s / 3 : 1, max = 0;
    long at20 = x->rss_kb[third], end = x->rss_kb[s];
    for (long i = 0; i <= s; i++)
        max = x->rss_kb[i] > max ? x->rss_kb[i] : max;
    long slack =
        at20 / 100 * RSS_SLACK_PCT > RSS_SLACK_KB ? at20 / 100 * RSS_SLACK_PCT : RSS_SLACK_KB;
    printf("rss KiB: %ld s %ld, %ld s %ld, %ld s %ld, %ld s %ld, max %ld; bound at %ld s: %ld "
           "(%ld s + max(%d%%, %ld KiB))\n",
           s >= 1 ? 1L : 0L, x->rss_kb[s >= 1], third, at20, 2 * s / 3, x->rss_kb[2 * s / 3], s,
           end, max, s, at20 + slack, third, RSS_SLACK_PCT, RSS_SLACK_KB);
    printf("rss MiB by second:");
    for (long i = 1; i <= s; i++)
        printf(" %.1f", (double)x->rss_kb[i] / 1024.0);
    printf("\n");
    if (at20 <= 0 || end <= 0)
        fail(failures, "could not read VmRSS of pid %ld", x->pid);
    else if (end > at20 + slack)
        fail(failures, "RSS grew from %ld KiB at %ld s to %ld KiB at %ld s (bound %ld KiB)", at20,
             third, end, s, at20 + slack);
}

static int acked_open(load_ctx *x)
{
    x->acked = fopen(x->acked_path, "a");
    if (!x->acked)
        fprintf(stderr, "rk_load: cannot open %s for appending\n", x->acked_path);
    return x->acked ? 0 : -1;
}

static int acked_close(load_ctx *x)
{
    int rc = fclose(x->acked);
    x->acked = NULL;
    return rc;
}

/* Runs the workers with the acknowledgement file open: 0, or -1 when it cannot be opened. */
static int run_acked(load_ctx *x, int *failures)
{
    if (acked_open(x) != 0)
        return -1;
    if (run_workers(x) != 0)
        fail(failures, "not every thread could be started");
    if (acked_close(x) != 0)
        fail(failures, "writing %s failed", x->acked_path);
    return 0;
}

static int cmd_mixed(load_ctx *x)
{
    int failures = 0;
    printf("rk_load mixed: %s cluster %s, %ld s, %ld readers, %ld pollers, %ld publishers "
           "(pausing %d s of every %d), server pid %ld\n",
           x->url, x->cluster, x->seconds, x->readers, x->pollers, x->publishers, QUIET_S,
           QUIET_EVERY_S, x->pid);
    fflush(stdout);
    if (run_acked(x, &failures) != 0)
        return 1;
    report_kinds(x);
    printf("versions: %llu publishes acknowledged, %llu activations acknowledged (highest %llu), "
           "%llu activations overtaken (409)\n",
           (unsigned long long)x->published, (unsigned long long)x->activated,
           (unsigned long long)x->max_activated,
           (unsigned long long)x->stats[K_ACTIVATE].expected_4xx);
    printf("readers and pollers: highest version seen %llu, %llu times backwards\n",
           (unsigned long long)x->max_seen, (unsigned long long)x->backwards);
    printf("polls answered 304 at once although nothing new was active and their wait had not "
           "passed: %llu\n",
           (unsigned long long)x->early_304);
    check_kinds(x, &failures);
    if (x->early_304) /* docs/API.md: a held poll ends with 304 only when its wait is over */
        fail(&failures, "%llu long polls answered 304 before their wait ended",
             (unsigned long long)x->early_304);
    if (x->backwards)
        fail(&failures, "readers saw the active version go backwards %llu times",
             (unsigned long long)x->backwards);
    if (x->published == 0 || x->max_seen == 0)
        fail(&failures, "nothing was published or nothing was read: the run proves nothing");
    if (x->pid > 0)
        rss_check(x, &failures);
    failures += verify(x);
    printf("%s\n", failures ? "rk_load mixed: FAILED" : "rk_load mixed: all checks passed");
    return failures ? 1 : 0;
}

static int cmd_storm(load_ctx *x)
{
    int failures = 0;
    x->storm = true;
    x->readers = x->pollers = x->pid = 0;
    if (run_acked(x, &failures) != 0)
        return 1;
    kind_stats *s = &x->stats[K_PUBLISH];
    printf("rk_load storm: %llu publishes acknowledged, %llu with activation, %llu unanswered\n",
           (unsigned long long)x->published, (unsigned long long)x->activated,
           (unsigned long long)s->transport);
    check_kinds(x, &failures);
    return failures ? 1 : 0;
}

/* Latency bounds of the probe: p99 of /healthz, the slowest publish. */
static void probe_check(load_ctx *x, int *failures)
{
    uint64_t p99 = hist_percentile(&x->stats[K_HEALTH], 0.99);
    uint64_t slowest = atomic_load(&x->stats[K_PUBLISH].max_us);
    long health_ms = PROBE_HEALTH_P99_MS * x->latency_factor,
         publish_ms = PROBE_PUBLISH_MAX_MS * x->latency_factor;
    if (p99 >= (uint64_t)health_ms * 1000u)
        fail(failures, "/healthz p99 %.1f ms (bound %ld ms)", (double)p99 / 1e3, health_ms);
    if (slowest >= (uint64_t)publish_ms * 1000u)
        fail(failures, "a publish took %.1f ms (bound %ld ms)", (double)slowest / 1e3, publish_ms);
    if (x->published == 0 || x->stats[K_HEALTH].ok == 0)
        fail(failures, "nothing was published or no /healthz answered: the run proves nothing");
}

static int cmd_probe(load_ctx *x)
{
    int failures = 0;
    x->readers = x->pollers = 0, x->publishers = x->probers = 1;
    if (run_acked(x, &failures) != 0)
        return 1;
    report_kinds(x);
    check_kinds(x, &failures);
    probe_check(x, &failures);
    printf("%s\n", failures ? "rk_load probe: FAILED" : "rk_load probe: all checks passed");
    return failures ? 1 : 0;
}

static int cmd_verify(load_ctx *x)
{
    int failures = verify(x);
    printf("%s\n", failures ? "rk_load verify: FAILED" : "rk_load verify: all checks passed");
    return failures ? 1 : 0;
}

/* ---- command line ---- */

typedef struct option_def {
    const char *name;
    size_t offset; /* into load_ctx */
    bool is_long;  /* long, else const char * */
    long min, max; /* range of a long */
} option_def;

static const option_def options[] = {
    {"--url", offsetof(load_ctx, url), false, 0, 0},
    {"--cluster", offsetof(load_ctx, cluster), false, 0, 0},
    {"--acked", offsetof(load_ctx, acked_path), false, 0, 0},
    {"--token", offsetof(load_ctx, token), false, 0, 0},
    {"--seconds", offsetof(load_ctx, seconds), true, 1, MAX_SECONDS},
    {"--readers", offsetof(load_ctx, readers), true, 0, MAX_WORKERS},
    {"--pollers", offsetof(load_ctx, pollers), true, 0, MAX_WORKERS},
    {"--publishers", offsetof(load_ctx, publishers), true, 1, MAX_WORKERS},
    {"--pid", offsetof(load_ctx, pid), true, 1, 1L << 30},
    {"--latency-factor", offsetof(load_ctx, latency_factor), true, 1, 100},
};

static int usage(void)
{
    fprintf(stderr,
            "usage: rk_load mixed  --url URL --cluster C --seconds S --acked FILE\n"
            "                      [--readers N] [--pollers N] [--publishers N] [--pid PID]\n"
            "       rk_load storm  --url URL --cluster C --seconds S --acked FILE "
            "[--publishers N]\n"
            "       rk_load probe  --url URL --cluster C --seconds S --acked FILE "
            "[--latency-factor K] [--token T]\n"
            "       rk_load verify --url URL --cluster C --acked FILE\n");
    return 2;
}

static int set_option(load_ctx *x, const option_def *o, const char *value)
{
    char *end;
    if (!o->is_long) {
        *(const char **)((char *)x + o->offset) = value;
        return 0;
    }
    long v = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || v < o->min || v > o->max) {
        fprintf(stderr, "rk_load: %s wants a number in %ld..%ld\n", o->name, o->min, o->max);
        return -1;
    }
    *(long *)((char *)x + o->offset) = v;
    return 0;
}

static int parse_args(load_ctx *x, int argc, char **argv)
{
    size_t n = sizeof options / sizeof options[0], j;
    for (int i = 2; i < argc; i += 2) {
        for (j = 0; j < n && strcmp(argv[i], options[j].name) != 0; j++)
            ;
        if (j == n || i + 1 >= argc) {
            fprintf(stderr, "rk_load: unknown option or missing value: %s\n", argv[i]);
            return -1;
        }
        if (set_option(x, &options[j], argv[i + 1]) != 0)
            return -1;
    }
    bool timed_run = strcmp(x->mode, "verify") != 0;
    if (!x->url || !x->cluster || !x->acked_path || (timed_run && !x->seconds))
        return -1;
    if (strlen(x->url) > URL_MAX / 2 || strlen(x->cluster) > 63) {
        fprintf(stderr, "rk_load: --url or --cluster too long\n"); /* so every URL fits */
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    load_ctx *x = calloc(1, sizeof *x); /* large (RSS samples, histograms): not on the stack */
    int rc = 2;
    if (!x)
        return 1;
    x->mode = argc > 1 ? argv[1] : "";
    x->readers = 4, x->pollers = 8, x->publishers = 2, x->latency_factor = 1;
    if (parse_args(x, argc, argv) != 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        free(x);
        return usage();
    }
    pthread_mutex_init(&x->ack_mu, NULL); /* cannot fail for a default mutex on Linux */
    if (strcmp(x->mode, "mixed") == 0)
        rc = cmd_mixed(x);
    else if (strcmp(x->mode, "storm") == 0)
        rc = cmd_storm(x);
    else if (strcmp(x->mode, "probe") == 0)
        rc = cmd_probe(x);
    else if (strcmp(x->mode, "verify") == 0)
        rc = cmd_verify(x);
    else
        usage();
    pthread_mutex_destroy(&x->ack_mu);
    curl_global_cleanup();
    free(x);
    return rc;
}
