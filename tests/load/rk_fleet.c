/* rk_fleet.c: a fleet of N clients long-polling one cluster of a ringkeeperd on loopback, each
 * with its own RK-Client id, then one activation: how much server memory a held client costs, and
 * how long until the last client holds the new ring (tests/load/test_fleet.sh; figures in
 * docs/PERFORMANCE.md, "A fleet converging").
 *
 * rk_fleet --url URL --cluster C --clients N --pid SERVER_PID [--rss-per-client BYTES]
 *   1. GETs the ring of C (it must have an active version V) for its ETag;
 *   2. opens N long polls (?wait=60, If-None-Match: that ETag, RK-Client: fleet-<i>) with libcurl's
 *      multi interface on SLICES threads (a multi handle costs O(its transfers) per turn: one for
 *      10000 took 3.8 s to read the answers the server had sent in 0.3 s), RAMP_BATCH every
 *      RAMP_EVERY_MS, and waits until the server holds all N (ringkeeper_long_polls_waiting) and
 *      counts them at V (ringkeeper_clients);
 *   3. reads the server's VmRSS before and with the N held;
 *   4. publishes and activates version V+1 (?activate=true) and times, from sending it, the answer
 *      of each poll;
 *   5. checks: every poll answered 200 with V+1 (sent, not yet held: GET .../clients still counts
 *      N at V), and the RSS per held client is at most BYTES (default RSS_PER_CLIENT_MAX);
 *   6. CONFIRM_ROUNDS rounds of one more request of every client (SPEC 9, "Clients"): the first K
 *      (--refusers, default 0) still hold V and refuse V+1 (RK-Refused, a 1 s poll), the others
 *      hold V+1 (no wait); every answer must be a 304, and the bytes of ring sent to the refusers
 *      must stay 0; after each round GET .../clients counts N-K at V+1, K at V, K refusing, and
 *      converged only when K is 0.
 * Prints the figures; exit 0 when every check passed, 1 with "FAIL: ..." lines, 2 bad usage. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#define MAX_CLIENTS        50000
#define SLICES             8
#define RAMP_BATCH         250 /* polls opened at once ... */
#define RAMP_EVERY_MS      50 /* ... this often: a burst of 10000 SYNs would overflow the backlog */
#define PHASE_MAX_S        120 /* bound on the ramp and on the convergence */
#define CHECK_EVERY_S      0.5 /* how often the ramp asks the server how many it holds */
#define RSS_PER_CLIENT_MAX 65536L
#define URL_MAX            1024
#define STATUS_BODY_MAX    (4L << 20)
#define CONFIRM_ROUNDS     3
#define REFUSAL                                                                                    \
    "vnode_factor: the server's ring has vnode_factor 160 but this application expects 40"
#define NEW_TOPOLOGY                                                                               \
    "{\"hash\":\"fnv1a_32\",\"vnode_factor\":160,\"nodes\":[{\"id\":\"f1\",\"addr\":\"10.9.0.1:"   \
    "1\","                                                                                         \
    "\"weight\":1},{\"id\":\"f2\",\"addr\":\"10.9.0.2:1\",\"weight\":1}]}"

/* An answer's ETag: "v4.<store id>" with the quotes, and its version (0: none). */
typedef struct etag {
    long version;
    char tag[64];
} etag;

/* One client of the fleet: its long poll and what it got. */
typedef struct poller {
    CURL *easy;                 /* the poll */
    struct curl_slist *headers; /* If-None-Match, RK-Client, RK-Refused */
    etag got;                   /* the answer's */
    long status;                /* the answer's; 1000 + the CURLcode when there was none */
    long body_bytes;            /* bytes of body received, all rounds */
    double done_at;             /* CLOCK_MONOTONIC seconds of the answer; 0 while held */
} poller;

typedef struct fleet fleet;

/* A thread's share of the polls, on its own multi handle. */
typedef struct slice {
    fleet *f;
    long from, to;    /* its pollers */
    CURLM *multi;     /* owned */
    pthread_t thread; /* drives it */
} slice;

struct fleet {
    const char *url, *cluster;
    long n, pid, rss_max, refusers;
    poller *p;
    slice s[SLICES];
    atomic_long done; /* polls answered */
    atomic_int stop;  /* the slices stop now */
    int failures;     /* FAIL lines printed */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(fleet *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    f->failures++;
}

/* VmRSS of `pid` in KiB, 0 when unreadable. */
static long rss_kb(long pid)
{
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *in = fopen(path, "r");
    while (in && fgets(line, sizeof line, in) && sscanf(line, "VmRSS: %ld kB", &kb) != 1)
        ;
    if (in)
        fclose(in);
    return kb;
}

/* ---- plain requests: the ring's ETag, the metrics, the clients ---- */

typedef struct text {
    char *data;
    size_t len;
} text;

static size_t keep_text(char *data, size_t size, size_t n, void *arg)
{
    text *t = arg;
    size_t add = size * n;
    char *grown =
        t->len + add < (size_t)STATUS_BODY_MAX ? realloc(t->data, t->len + add + 1) : NULL;
    if (!grown)
        return 0;
    memcpy(grown + t->len, data, add);
    t->data = grown;
    t->len += add;
    t->data[t->len] = '\0';
    return add;
}

static size_t count_body(char *data, size_t size, size_t n, void *arg)
{
    (void)data;
    ((poller *)arg)->body_bytes += (long)(size * n);
    return size * n;
}

/* Keeps the ETag of the header lines into the etag `arg`. */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    etag *e = arg;
    size_t len = size * n;
    if (len > 5 && strncasecmp(data, "ETag:", 5) == 0 &&
        sscanf(data + 5, " %63[^\r\n]", e->tag) == 1 && sscanf(e->tag, "\"v%ld", &e->version) != 1)
        e->version = 0;
    return len;
}

/* `method` `path` (under --url) with `body` (or NULL): the status, the body into *out (free it),
 * the ETag into *tag (may be NULL); 0 when there was no answer. */
static long request(const fleet *f, const char *method, const char *path, const char *body,
                    text *out, etag *tag)
{
    char url[URL_MAX];
    long status = 0;
    etag e_tag = {0};
    snprintf(url, sizeof url, "%s%s", f->url, path);
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!e || !h)
        goto out;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_text);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &e_tag);
    if (body)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    if (curl_easy_perform(e) == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
out:
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    if (tag)
        *tag = e_tag;
    return status;
}

/* The value of the first metrics line starting with `prefix`, -1 when there is none. */
static long metric(const text *t, const char *prefix)
{
    long v = -1;
    for (const char *p = t->data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            sscanf(p + strlen(prefix), " %ld", &v);
            break;
        }
    }
    return v;
}

/* How many polls the server holds, and how many clients it counts at `version`. */
static void server_counts(const fleet *f, long version, long *held, long *counted)
{
    char gauge[256];
    text t = {0};
    *held = *counted = -1;
    if (request(f, "GET", "/metrics", NULL, &t, NULL) == 200) {
        snprintf(gauge, sizeof gauge, "ringkeeper_clients{cluster=\"%s\",version=\"%ld\"}",
                 f->cluster, version);
        *held = metric(&t, "ringkeeper_long_polls_waiting");
        *counted = metric(&t, gauge);
    }
    free(t.data);
}

/* ---- the fleet ---- */

/* Sets poll `i` up as client fleet-<i> holding `tag`, waiting `wait` s, refusing `refused` (NULL:
 * none). */
static int poller_init(fleet *f, long i, const char *tag, int wait, const char *refused)
{
    char url[URL_MAX], line[256];
    poller *p = &f->p[i];
    curl_slist_free_all(p->headers);
    snprintf(url, sizeof url, "%s/v1/clusters/%s/ring?wait=%d", f->url, f->cluster, wait);
    snprintf(line, sizeof line, "If-None-Match: %s", tag);
    p->headers = curl_slist_append(NULL, line);
    snprintf(line, sizeof line, "RK-Client: fleet-%ld", i);
    if (p->headers && !curl_slist_append(p->headers, line))
        return -1;
    snprintf(line, sizeof line, "RK-Refused: %s %s", refused ? refused : "", REFUSAL);
    if (p->headers && refused && !curl_slist_append(p->headers, line))
        return -1;
    if (!p->easy)
        p->easy = curl_easy_init();
    if (!p->headers || !p->easy)
        return -1;
    p->got = (etag){0};
    p->status = 0;
    p->done_at = 0;
    curl_easy_setopt(p->easy, CURLOPT_URL, url);
    curl_easy_setopt(p->easy, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(p->easy, CURLOPT_TIMEOUT, (long)(60 + PHASE_MAX_S));
    curl_easy_setopt(p->easy, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, count_body);
    curl_easy_setopt(p->easy, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(p->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(p->easy, CURLOPT_HEADERDATA, &p->got);
    curl_easy_setopt(p->easy, CURLOPT_PRIVATE, p);
    return 0;
}

/* Runs the transfers of a slice a little, and notes the polls answered. */
static void drive(slice *s, int timeout_ms)
{
    int running = 0, left = 0;
    CURLMsg *m;
    curl_multi_perform(s->multi, &running);
    while ((m = curl_multi_info_read(s->multi, &left))) {
        poller *p = NULL;
        long status = 0;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&p);
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        p->done_at = now_s();
        p->status = m->data.result == CURLE_OK ? status : 1000 + (long)m->data.result;
        atomic_fetch_add(&s->f->done, 1);
        curl_multi_remove_handle(s->multi, m->easy_handle);
    }
    curl_multi_poll(s->multi, NULL, 0, timeout_ms, NULL);
}

/* A slice's thread: opens its polls, its share of RAMP_BATCH every RAMP_EVERY_MS, and drives them
 * until they are all answered, `stop` is set or the time is up. */
static void *slice_main(void *arg)
{
    slice *s = arg;
    long added = s->from, batch = RAMP_BATCH / SLICES;
    double start = now_s(), next_batch = start;
    while (!atomic_load(&s->f->stop) && now_s() < start + 2 * PHASE_MAX_S) {
        for (long b = 0; added < s->to && b < batch && now_s() >= next_batch; b++)
            curl_multi_add_handle(s->multi, s->f->p[added++].easy);
        if (now_s() >= next_batch)
            next_batch += RAMP_EVERY_MS / 1000.0;
        drive(s, 10);
    }
    return NULL;
}

/* Starts the slices; 0, or -1 when one could not be. */
static int slices_start(fleet *f)
{
    for (int i = 0; i < SLICES; i++) {
        slice *s = &f->s[i];
        *s = (slice){f, f->n * i / SLICES, f->n * (i + 1) / SLICES, curl_multi_init(), 0};
        if (!s->multi || pthread_create(&s->thread, NULL, slice_main, s) != 0) {
            curl_multi_cleanup(s->multi);
            s->multi = NULL;
            return -1;
        }
    }
    return 0;
}

/* Stops and joins the slices (their connections close), ready for the next round. */
static void slices_stop(fleet *f)
{
    atomic_store(&f->stop, 1);
    for (int i = 0; i < SLICES; i++) {
        slice *s = &f->s[i];
        if (!s->multi)
            continue;
        pthread_join(s->thread, NULL);
        for (long j = s->from; j < s->to; j++)
            curl_multi_remove_handle(s->multi, f->p[j].easy); /* fine when not added */
        curl_multi_cleanup(s->multi);
        s->multi = NULL;
    }
    atomic_store(&f->stop, 0);
    atomic_store(&f->done, 0);
}

static void pollers_free(fleet *f)
{
    for (long j = 0; j < f->n; j++) {
        curl_easy_cleanup(f->p[j].easy);
        curl_slist_free_all(f->p[j].headers);
    }
}

/* Waits until the server holds the N polls and counts them at `version`. */
static int ramp(fleet *f, long version)
{
    long held = -1, counted = -1;
    double start = now_s();
    while (now_s() < start + PHASE_MAX_S && atomic_load(&f->done) == 0) {
        struct timespec pause = {0, (long)(CHECK_EVERY_S * 1e9)};
        nanosleep(&pause, NULL);
        server_counts(f, version, &held, &counted);
        if (held == f->n && counted == f->n)
            break;
    }
    long early = atomic_load(&f->done);
    printf("ramp: %ld polls opened in %.1f s; the server holds %ld and counts %ld at v%ld\n", f->n,
           now_s() - start, held, counted, version);
    if (held != f->n || counted != f->n || early)
        fail(f, "the server should hold and count %ld polls at v%ld (%ld answered early)", f->n,
             version, early);
    return held == f->n && counted == f->n && !early ? 0 : -1;
}

static int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Activates V+1 (publishing it) and drives the polls until all are answered; prints the times. */
static void converge(fleet *f, long version)
{
    char path[URL_MAX];
    text t = {0};
    snprintf(path, sizeof path, "/v1/clusters/%s/versions?activate=true", f->cluster);
    double t0 = now_s();
    long status = request(f, "POST", path, NEW_TOPOLOGY, &t, NULL);
    double acked = now_s() - t0;
    json_t *doc = json_loads(t.data ? t.data : "", 0, NULL);
    long new_version = (long)json_integer_value(json_object_get(doc, "version"));
    json_decref(doc);
    free(t.data);
    if (status != 201 || new_version != version + 1) {
        fail(f, "the activation of v%ld should be 201, got %ld (version %ld)", version + 1, status,
             new_version);
        return;
    }
    struct timespec pause = {0, 10 * 1000 * 1000};
    while (atomic_load(&f->done) < f->n && now_s() < t0 + PHASE_MAX_S)
        nanosleep(&pause, NULL);
    double *at = calloc((size_t)f->n, sizeof *at);
    long wrong = 0;
    for (long i = 0; i < f->n; i++) {
        wrong += f->p[i].status != 200 || f->p[i].got.version != version + 1;
        if (at)
            at[i] = f->p[i].done_at ? f->p[i].done_at - t0 : PHASE_MAX_S;
    }
    if (at)
        qsort(at, (size_t)f->n, sizeof *at, by_time);
    printf("activation: v%ld acknowledged after %.1f ms; clients holding it: half after %.1f ms, "
           "99%% after %.1f ms, the last after %.1f ms\n",
           version + 1, acked * 1e3, at ? at[f->n / 2] * 1e3 : -1,
           at ? at[f->n * 99 / 100] * 1e3 : -1, at ? at[f->n - 1] * 1e3 : -1);
    free(at);
    if (wrong)
        fail(f, "%ld of %ld polls were not answered 200 with v%ld", wrong, f->n, version + 1);
}

/* GET .../clients after the activation of `version`: N-K hold it, the K refusers hold the version
 * before and refuse it; converged only with no refuser. With `sent`, no client has asked again
 * since it was sent `version`: all N still hold the one before. */
static void check_clients(fleet *f, long version, int sent)
{
    char path[URL_MAX], v[24], before[24];
    text t = {0};
    snprintf(path, sizeof path, "/v1/clusters/%s/clients?limit=1", f->cluster);
    long status = request(f, "GET", path, NULL, &t, NULL);
    json_t *doc = json_loads(t.data ? t.data : "", 0, NULL);
    json_t *s = json_object_get(doc, "summary"), *by = json_object_get(s, "by_version");
    snprintf(v, sizeof v, "%ld", version);
    snprintf(before, sizeof before, "%ld", version - 1);
    long at = (long)json_integer_value(json_object_get(by, v));
    long old = (long)json_integer_value(json_object_get(by, before));
    long refusing = (long)json_integer_value(json_object_get(s, "refusing"));
    long total = (long)json_integer_value(json_object_get(s, "total"));
    int converged = json_is_true(json_object_get(s, "converged"));
    long want_old = sent ? f->n : f->refusers, want_refusing = sent ? 0 : f->refusers;
    printf("clients: %ld counted, %ld holding v%ld, %ld holding v%ld, %ld refusing, converged "
           "%s\n",
           total, at, version, old, version - 1, refusing, converged ? "true" : "false");
    if (status != 200 || total != f->n || at != f->n - want_old || old != want_old ||
        refusing != want_refusing || converged != (want_old == 0))
        fail(f, "GET clients should count %ld: %ld holding v%ld, %ld holding v%ld, %ld refusing",
             f->n, f->n - want_old, version, want_old, version - 1, want_refusing);
    json_decref(doc);
    free(t.data);
}

/* One round of one more request of every client after the activation of `now` (see the head). */
static void confirm_round(fleet *f, const etag *old, const etag *now, int round)
{
    long refusers_bytes = 0, not_304 = 0;
    for (long i = 0; i < f->n; i++) {
        int refuses = i < f->refusers;
        if (poller_init(f, i, refuses ? old->tag : now->tag, refuses, refuses ? now->tag : NULL)) {
            fail(f, "out of memory for poll %ld", i);
            return;
        }
    }
    double t0 = now_s();
    if (slices_start(f) != 0) {
        fail(f, "cannot start the threads of the fleet");
        return;
    }
    struct timespec pause = {0, 10 * 1000 * 1000};
    while (atomic_load(&f->done) < f->n && now_s() < t0 + PHASE_MAX_S)
        nanosleep(&pause, NULL);
    slices_stop(f);
    for (long i = 0; i < f->n; i++) {
        not_304 += f->p[i].status != 304;
        refusers_bytes += i < f->refusers ? f->p[i].body_bytes : 0;
    }
    printf("round %d: %ld requests in %.1f s, %ld not answered 304; ring bytes sent to the %ld "
           "refusers since they refused: %ld\n",
           round, f->n, now_s() - t0, not_304, f->refusers, refusers_bytes);
    if (not_304)
        fail(f, "round %d: %ld of %ld requests were not answered 304", round, not_304, f->n);
    if (refusers_bytes)
        fail(f, "round %d: the refusers were sent %ld bytes of the ring they refused", round,
             refusers_bytes);
    check_clients(f, now->version, 0);
}

static int run(fleet *f)
{
    etag active = {0};
    text t = {0};
    char path[URL_MAX];
    snprintf(path, sizeof path, "/v1/clusters/%s/ring", f->cluster);
    long status = request(f, "GET", path, NULL, &t, &active);
    long version = active.version;
    free(t.data);
    if (status != 200 || version < 1) {
        fail(f, "GET %s should be 200 with an ETag, got %ld", path, status);
        return 1;
    }
    for (long i = 0; i < f->n; i++) {
        if (poller_init(f, i, active.tag, 60, NULL) != 0) {
            fail(f, "out of memory for poll %ld", i);
            return 1;
        }
    }
    long before = rss_kb(f->pid);
    if (slices_start(f) != 0) {
        fail(f, "cannot start the threads of the fleet");
        return 1;
    }
    if (ramp(f, version) != 0)
        return 1;
    long held = rss_kb(f->pid);
    printf("server RSS: %ld KiB before, %ld KiB with %ld polls held: %ld bytes per client\n",
           before, held, f->n, (held - before) * 1024 / f->n);
    if ((held - before) * 1024 / f->n > f->rss_max)
        fail(f, "RSS per held client should be at most %ld bytes", f->rss_max);
    converge(f, version);
    slices_stop(f);
    check_clients(f, version + 1, 1);
    etag now = f->p[0].got;
    for (long i = 0; i < f->refusers; i++)
        f->p[i].body_bytes =
            0; /* the ring they are about to refuse came once: what follows counts */
    for (int round = 1; round <= CONFIRM_ROUNDS && now.version == version + 1; round++)
        confirm_round(f, &active, &now, round);
    return f->failures ? 1 : 0;
}

/* ---- options ---- */

static int usage(void)
{
    fprintf(stderr,
            "usage: rk_fleet --url URL --cluster C --clients N (1..%d) --pid SERVER_PID\n"
            "                [--rss-per-client BYTES (default %ld)] [--refusers K (default 0)]\n",
            MAX_CLIENTS, RSS_PER_CLIENT_MAX);
    return 2;
}

/* A whole number in lo..hi into *out: 0, or -1. */
static int number(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(fleet *f, int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        int bad = 0;
        if (strcmp(k, "--url") == 0)
            f->url = v;
        else if (strcmp(k, "--cluster") == 0)
            f->cluster = v;
        else if (strcmp(k, "--clients") == 0)
            bad = number(v, 1, MAX_CLIENTS, &f->n);
        else if (strcmp(k, "--pid") == 0)
            bad = number(v, 1, 1L << 30, &f->pid);
        else if (strcmp(k, "--rss-per-client") == 0)
            bad = number(v, 1, 1L << 30, &f->rss_max);
        else if (strcmp(k, "--refusers") == 0)
            bad = number(v, 0, MAX_CLIENTS, &f->refusers);
        else
            bad = 1;
        if (bad)
            return -1;
    }
    return argc % 2 == 1 && f->url && f->cluster && f->n && f->pid && f->refusers <= f->n ? 0 : -1;
}

int main(int argc, char **argv)
{
    fleet f = {.rss_max = RSS_PER_CLIENT_MAX};
    if (parse_args(&f, argc, argv) != 0)
        return usage();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    atomic_init(&f.done, 0);
    atomic_init(&f.stop, 0);
    f.p = calloc((size_t)f.n, sizeof *f.p);
    int rc = f.p ? run(&f) : 1;
    if (f.p) {
        slices_stop(&f);
        pollers_free(&f);
    }
    free(f.p);
    curl_global_cleanup();
    printf("%s\n", rc ? "FAILED" : "ok");
    return rc;
}
