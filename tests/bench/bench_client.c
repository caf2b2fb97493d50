/* bench_client.c: startup time and lookup throughput of the network client (rk_client_*) against a
 * real ringkeeperd on 127.0.0.1.
 *
 * Not a test: it starts ringkeeperd (path compiled in as RK_SERVERD, or -s PATH) with a temporary
 * database on 127.0.0.1:0, publishes and activates rings of 100 nodes x 160 vnodes and 1000 nodes x
 * 1000 vnodes (xxh3_64, weight 1), and prints:
 *   - startup: rk_client_new + rk_client_fetch until the first rk_client_acquire succeeds, each run
 *     a fresh client, without a last-known-good file, with one already holding the active version,
 *     and with none yet (so the fetch writes and fsyncs it); and its parts: the HTTP GET on a new
 *     connection, rk_client_verify of the body (JSON, checks, ring build, fingerprint) and
 *     rk_ring_build alone. Median, min and max of RUNS runs (CLOCK_MONOTONIC), after one untimed
 * run.
 *   - lookups: keys/s of rk_snapshot_owner on 16-byte keys from 1, 2 and 4 threads for DURATION
 *     seconds, while a swapper thread publishes and activates two topologies in turn (each waits
 *     until the client's background refresher, a long poll, has accepted the previous one): one
 *     rk_client_acquire per batch of BATCH keys, the same asking for the previous owner too, and
 * one acquire per key; and the batch mode without swaps for comparison. The swaps the client
 *     accepted during each run are counted, and the versions each reader saw (a change of version
 *     between two of its acquires). One untimed run of 0.5 s on 4 threads warms each ring up.
 * The command and the last results are in docs/PERFORMANCE.md ("Client"). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <pthread.h>
#include <unistd.h>

#include "../lib/serverd.h"
#include "ringkeeper.h"

#define RUNS     11        /* timed startups per figure; the median is reported */
#define KEYS     (1 << 20) /* distinct 16-byte keys (16 MiB), shared by the lookup threads */
#define KEY_LEN  16
#define BATCH    1024 /* keys per rk_client_acquire in the batch modes */
#define MAX_THR  4
#define MAX_SWAP 1000000 /* bound on the swapper's loop */

static rk_serverd server;      /* the ringkeeperd measured */
static volatile uint64_t sink; /* results go here so no timed loop is dead code */
static char tmpdir[] = "/tmp/rk_bench_client.XXXXXX";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void cleanup(void)
{
    if (server.pid > 0)
        serverd_reap(&server);
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_client: %s: %s\n", what, why ? why : "failed");
    cleanup();
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v and returns its median. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the server ---- */

static void server_start(const char *serverd, const char *threads)
{
    char db[256];
    const char *const extra[] = {"--threads", threads, NULL};
    snprintf(db, sizeof db, "%s/bench.db", tmpdir);
    if (serverd_start(&server, serverd, db, extra) != 0)
        die("ringkeeperd", "did not start or did not say its port");
}

/* The status of `method path` with `data` (may be NULL) on handle `e` (reused: keep-alive); the
 * body into *out when out is set. */
static long http(CURL *e, const char *method, const char *path, const char *data, rk_body *out)
{
    return serverd_http(e, &server, method, path, data, out);
}

/* A topology of n nodes "node-0000".., the last one numbered `last` (n - 1 or n). */
static char *topology(unsigned vf, unsigned n, unsigned last)
{
    size_t size = 128 + 80 * (size_t)n, off;
    char *s = malloc(size);
    if (!s)
        die("topology", "out of memory");
    off = (size_t)snprintf(s, size, "{\"hash\":\"xxh3_64\",\"vnode_factor\":%u,\"nodes\":[", vf);
    for (unsigned i = 0; i < n; i++) {
        unsigned id = i + 1 == n ? last : i;
        off +=
            (size_t)snprintf(s + off, size - off,
                             "%s{\"id\":\"node-%04u\",\"addr\":\"10.0.%u.%u:11211\",\"weight\":1}",
                             i ? "," : "", id, id >> 8, id & 255);
    }
    snprintf(s + off, size - off, "]}");
    return s;
}

static void publish(CURL *e, const char *cluster, const char *doc)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/%s/versions?activate=true", cluster);
    long st = http(e, "POST", path, doc, NULL);
    if (st != 201) {
        char why[64];
        snprintf(why, sizeof why, "HTTP %ld", st);
        die("publish", why);
    }
}

/* ---- shapes ---- */

typedef struct shape {
    const char *name;    /* "100 x 160" */
    const char *cluster; /* for startup */
    const char *swap;    /* for lookups under swaps */
    unsigned nodes, vf;
    char *doc[2]; /* the two topologies published in turn */
} shape;

static shape shapes[] = {
    {"100 x 160", "start-small", "swap-small", 100, 160, {NULL, NULL}},
    {"1000 x 1000", "start-big", "swap-big", 1000, 1000, {NULL, NULL}},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static rk_client_config config_for(const shape *s, const char *cluster, const char *cache)
{
    return (rk_client_config){.server = server.url,
                              .cluster = cluster,
                              .expect_hash = "xxh3_64",
                              .expect_vnode_factor = s->vf,
                              .cache_file = cache,
                              .timeout_ms = 10000};
}

/* ---- output ---- */

static void row(const char *name, double *v, size_t n, const char *unit)
{
    double min, max, med = median(v, n);
    min = v[0], max = v[n - 1];
    printf("%-58s %10.2f %-6s (min %.2f, max %.2f)\n", name, med, unit, min, max);
}

/* ---- startup ---- */

enum { CACHE_NONE, CACHE_WARM, CACHE_FRESH };

/* One startup: ms of rk_client_new into *t_new and of rk_client_fetch + first acquire into
 * *t_fetch; returns the total. */
static double one_startup(const shape *s, const char *cache, double *t_new, double *t_fetch)
{
    rk_error err = {0};
    rk_client_config cfg = config_for(s, s->cluster, cache);
    double t0 = now_s();
    rk_client *c = rk_client_new(&cfg, &err);
    double t1 = now_s();
    if (!c)
        die("rk_client_new", err.message);
    int rc = rk_client_fetch(c, &err);
    rk_snapshot *snap = rc == RK_OK ? rk_client_acquire(c) : NULL;
    double t2 = now_s();
    if (!snap)
        die("rk_client_fetch", err.message);
    sink += (uint64_t)rk_snapshot_version(snap);
    rk_snapshot_release(snap);
    rk_client_free(c);
    *t_new = (t1 - t0) * 1e3;
    *t_fetch = (t2 - t1) * 1e3;
    return (t2 - t0) * 1e3;
}

static void startup(const shape *s, int mode)
{
    static const char *what[] = {"no cache file", "cache file holds the active version",
                                 "cache file absent, written (fsync)"};
    char cache[256], name[128];
    double total[RUNS], tnew[RUNS], tfetch[RUNS], a, b;
    snprintf(cache, sizeof cache, "%s/%s.lkg", tmpdir, s->cluster);
    const char *path = mode == CACHE_NONE ? NULL : cache;
    unlink(cache);
    one_startup(s, path, &a, &b); /* untimed: warms up, and writes the cache file for WARM */
    for (int run = 0; run < RUNS; run++) {
        if (mode == CACHE_FRESH)
            unlink(cache);
        total[run] = one_startup(s, path, &tnew[run], &tfetch[run]);
    }
    unlink(cache);
    snprintf(name, sizeof name, "startup %s, %s", s->name, what[mode]);
    row(name, total, RUNS, "ms");
    row("  rk_client_new", tnew, RUNS, "ms");
    row("  rk_client_fetch + first acquire", tfetch, RUNS, "ms");
}

/* The parts of a fetch: GET on a new connection, rk_client_verify, rk_ring_build alone. */
static void startup_parts(const shape *s)
{
    char path[128], name[128];
    double get[RUNS], verify[RUNS], build[RUNS];
    size_t len = 0;
    snprintf(path, sizeof path, "/v1/clusters/%s/ring", s->cluster);
    for (int run = -1; run < RUNS; run++) {
        rk_body b = {0};
        rk_error err = {0};
        rk_client_config cfg = config_for(s, s->cluster, NULL);
        double t0 = now_s();
        CURL *e = curl_easy_init();
        if (!e || http(e, "GET", path, NULL, &b) != 200)
            die("GET ring", NULL);
        curl_easy_cleanup(e);
        double t1 = now_s();
        rk_topology *t = rk_client_verify(&cfg, b.data, b.len, 0, NULL, &err);
        double t2 = now_s();
        if (!t)
            die("rk_client_verify", err.message);
        rk_ring *r = rk_ring_build(t, &err);
        double t3 = now_s();
        if (!r)
            die("rk_ring_build", err.message);
        sink += rk_ring_fingerprint(r);
        rk_ring_free(r);
        rk_topology_free(t);
        len = b.len;
        free(b.data);
        if (run >= 0) {
            get[run] = (t1 - t0) * 1e3;
            verify[run] = (t2 - t1) * 1e3;
            build[run] = (t3 - t2) * 1e3;
        }
    }
    snprintf(name, sizeof name, "  parts, %s: GET ring, new connection (%zu bytes)", s->name, len);
    row(name, get, RUNS, "ms");
    row("  parts: rk_client_verify (JSON, checks, build, fingerprint)", verify, RUNS, "ms");
    row("  parts: rk_ring_build alone", build, RUNS, "ms");
}

/* ---- lookups ---- */

enum { MODE_BATCH, MODE_BATCH_PREV, MODE_PER_KEY };

typedef struct reader {
    rk_client *c;
    const char *keys;
    int mode;
    size_t start;
    uint64_t done;     /* keys looked up */
    uint64_t versions; /* changes of version seen between acquires */
    char pad[64];      /* keeps the counters of two readers off one cache line */
} reader;

static atomic_int go, stop_readers;

static void *read_loop(void *arg)
{
    reader *r = arg;
    uint64_t done = 0, acc = 0, versions = 0;
    int64_t last = 0;
    size_t k = r->start;
    while (!atomic_load_explicit(&go, memory_order_acquire))
        ;
    while (!atomic_load_explicit(&stop_readers, memory_order_relaxed)) {
        if (r->mode == MODE_PER_KEY) {
            for (int i = 0; i < BATCH; i++) {
                rk_snapshot *s = rk_client_acquire(r->c);
                int64_t v = rk_snapshot_version(s);
                versions += v != last;
                last = v;
                acc += (uintptr_t)rk_snapshot_owner(s, r->keys + k * KEY_LEN, KEY_LEN, NULL);
                rk_snapshot_release(s);
                k = (k + 1) & (KEYS - 1);
            }
        } else {
            rk_snapshot *s = rk_client_acquire(r->c);
            int64_t v = rk_snapshot_version(s);
            versions += v != last;
            last = v;
            for (int i = 0; i < BATCH; i++) {
                const rk_node *prev = NULL;
                acc += (uintptr_t)rk_snapshot_owner(s, r->keys + k * KEY_LEN, KEY_LEN,
                                                    r->mode == MODE_BATCH_PREV ? &prev : NULL);
                acc += (uintptr_t)prev;
                k = (k + 1) & (KEYS - 1);
            }
            rk_snapshot_release(s);
        }
        done += BATCH;
    }
    sink += acc;
    r->done = done;
    r->versions = versions ? versions - 1 : 0;
    return NULL;
}

typedef struct swapper {
    rk_client *c;
    const shape *s;
    int next;               /* which of the two documents goes next */
    atomic_int stop;        /* set by the main thread */
    atomic_uint_fast64_t n; /* swaps the client accepted */
} swapper;

static uint64_t accepted(rk_client *c)
{
    rk_client_status st;
    rk_client_status_get(c, &st);
    return st.accepted;
}

/* Publishes the two topologies in turn, each after the client accepted the previous one. */
static void *swap_loop(void *arg)
{
    swapper *w = arg;
    CURL *e = curl_easy_init();
    if (!e)
        die("curl_easy_init", NULL);
    for (int i = 0; i < MAX_SWAP && !atomic_load(&w->stop); i++) {
        uint64_t before = accepted(w->c);
        publish(e, w->s->swap, w->s->doc[w->next]);
        w->next ^= 1;
        double until = now_s() + 5;
        while (accepted(w->c) == before && now_s() < until)
            sleep_ms(1);
        if (accepted(w->c) == before)
            die("swap", "the client did not accept a new ring within 5 s");
        atomic_fetch_add(&w->n, 1);
    }
    curl_easy_cleanup(e);
    return NULL;
}

/* Keys/s of `threads` readers for `seconds`, with the swapper running when `swapping`. */
static double lookup_run(rk_client *c, swapper *w, const char *keys, int mode, int threads,
                         int swapping, double seconds, double *swaps_s, double *seen)
{
    pthread_t th[MAX_THR], sw;
    reader rd[MAX_THR];
    atomic_store(&go, 0);
    atomic_store(&stop_readers, 0);
    atomic_store(&w->stop, 0);
    atomic_store(&w->n, 0);
    for (int i = 0; i < threads; i++) {
        rd[i] = (reader){.c = c, .keys = keys, .mode = mode, .start = (size_t)i * (KEYS / MAX_THR)};
        if (pthread_create(&th[i], NULL, read_loop, &rd[i]) != 0)
            die("pthread_create", NULL);
    }
    if (swapping && pthread_create(&sw, NULL, swap_loop, w) != 0)
        die("pthread_create", NULL);
    uint64_t acc0 = accepted(c);
    double t0 = now_s();
    atomic_store_explicit(&go, 1, memory_order_release);
    sleep_ms((long)(seconds * 1000));
    atomic_store(&stop_readers, 1);
    double t1 = now_s();
    uint64_t acc1 = accepted(c);
    uint64_t total = 0, versions = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += rd[i].done;
        versions += rd[i].versions;
    }
    if (swapping) {
        atomic_store(&w->stop, 1);
        pthread_join(sw, NULL);
    }
    *swaps_s = (double)(acc1 - acc0) / (t1 - t0);
    *seen = (double)versions / threads / (t1 - t0);
    return (double)total / (t1 - t0);
}

/* KEYS keys of KEY_LEN printable bytes from a fixed-seed splitmix64. */
static char *make_keys(void)
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char *keys = malloc((size_t)KEYS * KEY_LEN);
    uint64_t s = 42;
    if (!keys)
        die("keys", "out of memory");
    for (size_t i = 0; i < (size_t)KEYS * KEY_LEN; i += 8) {
        uint64_t z = (s += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        for (int k = 0; k < 8; k++)
            keys[i + k] = alphabet[(z >> (6 * k)) & 63];
    }
    return keys;
}

static void lookups(const shape *s, const char *keys, double seconds)
{
    static const struct {
        int mode, swapping;
        const char *name;
    } kinds[] = {
        {MODE_BATCH, 0, "acquire per 1024 keys, no swaps"},
        {MODE_BATCH, 1, "acquire per 1024 keys"},
        {MODE_BATCH_PREV, 0, "acquire per 1024 keys, + previous, no swaps"},
        {MODE_BATCH_PREV, 1, "acquire per 1024 keys, + previous owner"},
        {MODE_PER_KEY, 1, "acquire + release per key"},
    };
    static const int thread_counts[] = {1, 2, 4};
    rk_error err = {0};
    rk_client_config cfg = config_for(s, s->swap, NULL);
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c || rk_client_fetch(c, &err) != RK_OK)
        die("lookup client", err.message);
    if (rk_client_start_refresher(c, 30, 100, &err) != RK_OK)
        die("rk_client_start_refresher", err.message);
    swapper w = {.c = c, .s = s, .next = 1};
    double ignored, ignored_too;
    lookup_run(c, &w, keys, MODE_BATCH, MAX_THR, 0, 0.5, &ignored, &ignored_too); /* warm-up */
    printf("lookups on %s (%s), %.1f s per run, 16-byte keys:\n", s->name, s->swap, seconds);
    printf("  %-42s %7s %14s %12s %12s\n", "mode", "threads", "keys/s", "swaps/s", "seen/s/reader");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
            double swaps_s = 0, seen = 0;
            double rate = lookup_run(c, &w, keys, kinds[k].mode, thread_counts[t],
                                     kinds[k].swapping, seconds, &swaps_s, &seen);
            printf("  %-42s %7d %14.0f %12.1f %12.1f\n", kinds[k].name, thread_counts[t], rate,
                   swaps_s, seen);
            fflush(stdout);
        }
    }
    rk_client_status st;
    rk_client_status_get(c, &st);
    if (st.refused)
        die("lookups", "the client refused a ring");
    rk_client_free(c);
}

int main(int argc, char **argv)
{
    const char *serverd = RK_SERVERD, *threads = "4";
    double seconds = 2;
    int opt, skip_startup = 0, skip_lookups = 0;
    while ((opt = getopt(argc, argv, "s:t:d:SL")) != -1) {
        switch (opt) {
        case 's':
            serverd = optarg;
            break;
        case 't':
            threads = optarg;
            break;
        case 'd':
            seconds = atof(optarg);
            break;
        case 'S':
            skip_startup = 1;
            break;
        case 'L':
            skip_lookups = 1;
            break;
        default:
            fprintf(stderr,
                    "usage: bench_client [-s ringkeeperd] [-t server threads] [-d seconds per "
                    "lookup run] [-S (no startup)] [-L (no lookups)]\n");
            return 2;
        }
    }
    if (seconds <= 0 || seconds > 60)
        die("-d", "seconds must be in (0, 60]");
    if (!mkdtemp(tmpdir))
        die("mkdtemp", NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    server_start(serverd, threads);
    CURL *e = curl_easy_init();
    if (!e)
        die("curl_easy_init", NULL);
    for (size_t i = 0; i < NSHAPES; i++) {
        shape *s = &shapes[i];
        s->doc[0] = topology(s->vf, s->nodes, s->nodes - 1);
        s->doc[1] = topology(s->vf, s->nodes, s->nodes); /* the last node replaced */
        publish(e, s->cluster, s->doc[0]);
        publish(e, s->swap, s->doc[0]);
    }
    curl_easy_cleanup(e);
    char *keys = make_keys();
    printf("bench_client: ringkeeperd --threads %s at %s; startups: median of %d runs\n", threads,
           server.url, RUNS);
    if (!skip_startup) {
        for (size_t i = 0; i < NSHAPES; i++) {
            for (int mode = CACHE_NONE; mode <= CACHE_FRESH; mode++)
                startup(&shapes[i], mode);
            startup_parts(&shapes[i]);
            fflush(stdout);
        }
    }
    if (!skip_lookups)
        for (size_t i = 0; i < NSHAPES; i++)
            lookups(&shapes[i], keys, seconds);
    free(keys);
    for (size_t i = 0; i < NSHAPES; i++)
        free(shapes[i].doc[0]), free(shapes[i].doc[1]);
    serverd_stop(&server);
    curl_global_cleanup();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : 1;
}
