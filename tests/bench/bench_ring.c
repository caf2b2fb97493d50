/* bench_ring.c: lookup, build, plan and memory figures of the ring, and libmemcached's ketama.
 *
 * Not a test: it prints each figure (the median of RUNS timed runs, CLOCK_MONOTONIC) next to its
 * target from the performance issue, with PASS or MISS, and exits 0 unless something fails. The
 * command and the last results are in docs/PERFORMANCE.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <libmemcached/memcached.h>
#include <xxhash.h>

#include "ringkeeper.h"

#define RUNS    11        /* timed runs per figure; the median is reported */
#define KEYS    (1 << 20) /* 16-byte keys per lookup run */
#define KEY_LEN 16
#define BIG     1000 /* the 1M-point ring: BIG nodes x BIG vnodes */
#define PEER_N  100  /* servers of the ketama peer, as in the 100 x 160 ring */

static volatile uint64_t sink; /* results go here so no timed loop is dead code */
static int misses, checks;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const rk_error *err)
{
    fprintf(stderr, "bench_ring: %s: %s\n", what, err ? err->message : "failed");
    exit(1);
}

/* Prints one figure; `limit` > 0 is a target: at most (or, with at_least, at least) that value. */
static void report(const char *name, double value, const char *unit, double limit, int at_least)
{
    const char *verdict = "";
    char target[32] = "-";
    if (limit > 0) {
        int ok = at_least ? value >= limit : value <= limit;
        verdict = ok ? "PASS" : "MISS";
        snprintf(target, sizeof target, "%s %g", at_least ? ">=" : "<=", limit);
        misses += !ok;
        checks++;
    }
    printf("%-52s %9.2f %-7s %-9s %s\n", name, value, unit, target, verdict);
}

/* KEYS keys of KEY_LEN printable bytes from a fixed-seed splitmix64, so every run sees the same. */
static char *make_keys(void)
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char *keys = malloc((size_t)KEYS * KEY_LEN);
    uint64_t s = 42;
    if (!keys)
        die("keys", NULL);
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

/* `nodes` nodes "node-0000".. of weight 1 with `vf` vnodes each. */
static rk_topology *make_topology(rk_hash_alg alg, size_t nodes, uint32_t vf)
{
    rk_node *nd = calloc(nodes, sizeof *nd);
    char(*id)[32] = calloc(nodes, sizeof *id), (*addr)[80] = calloc(nodes, sizeof *addr);
    if (!nd || !id || !addr)
        die("topology", NULL);
    for (size_t i = 0; i < nodes; i++) {
        snprintf(id[i], sizeof id[i], "node-%04zu", i);
        snprintf(addr[i], sizeof addr[i], "10.%zu.%zu.%zu:11211", i >> 16, (i >> 8) & 255, i & 255);
        nd[i] = (rk_node){id[i], addr[i], 1};
    }
    rk_error err = {0};
    rk_topology *t = rk_hash_scheme(alg) == RK_SCHEME_KETAMA /* vf: ketama fixes its points */
                         ? rk_topology_new_ketama(alg, NULL, nd, nodes, NULL, &err)
                         : rk_topology_new(alg, vf, nd, nodes, NULL, &err);
    if (!t)
        die("rk_topology_new", &err);
    free(nd), free(id), free(addr);
    return t;
}

static rk_ring *make_ring(rk_hash_alg alg, size_t nodes, uint32_t vf)
{
    rk_error err = {0};
    rk_topology *t = make_topology(alg, nodes, vf);
    rk_ring *r = rk_ring_build(t, &err);
    if (!r)
        die("rk_ring_build", &err);
    rk_topology_free(t);
    return r;
}

/* Median ns per key of rk_ring_lookup over the keys, hashing included; one untimed warm-up pass. */
static double time_lookup(const rk_ring *r, const char *keys)
{
    double ns[RUNS];
    for (int run = -1; run < RUNS; run++) {
        uint64_t acc = 0;
        double t0 = now_ns();
        for (size_t i = 0; i < KEYS; i++)
            acc += rk_ring_lookup(r, keys + i * KEY_LEN, KEY_LEN);
        if (run >= 0)
            ns[run] = (now_ns() - t0) / KEYS;
        sink += acc;
    }
    return median(ns, RUNS);
}

/* Median ms of `runs` rk_ring_build on `t` (the topology is made once, outside the timing); the
 * first run's time goes to *first. */
static double time_builds(rk_topology *t, double *first, size_t runs)
{
    double *ms = calloc(runs, sizeof *ms); /* zeroed: GCC cannot tell that runs >= 1 */
    if (!ms)
        die("malloc", NULL);
    for (size_t run = 0; run < runs; run++) {
        rk_error err = {0};
        double t0 = now_ns();
        rk_ring *r = rk_ring_build(t, &err);
        ms[run] = (now_ns() - t0) / 1e6;
        if (!r)
            die("rk_ring_build", &err);
        sink += rk_ring_fingerprint(r);
        rk_ring_free(r);
    }
    *first = ms[0];
    double m = median(ms, runs);
    free(ms);
    return m;
}

static double time_build(rk_topology *t, double *first)
{
    return time_builds(t, first, RUNS);
}

/* Median ms of rk_plan_new between two built rings (no steps). */
static double time_plan(const rk_ring *a, const rk_ring *b, size_t *arcs)
{
    double ms[RUNS];
    for (int run = 0; run < RUNS; run++) {
        rk_error err = {0};
        double t0 = now_ns();
        rk_plan *p = rk_plan_new(a, b, NULL, &err);
        ms[run] = (now_ns() - t0) / 1e6;
        if (!p)
            die("rk_plan_new", &err);
        rk_plan_arcs(p, arcs);
        sink += *arcs;
        rk_plan_free(p);
    }
    return median(ms, RUNS);
}

/* libmemcached with PEER_N servers "10.0.0.N:11211" (hashing touches no network), keys hashed
 * with `key_hash`: the ketama continuum (MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA, KETAMA_HASH MD5;
 * 100 points a server, which libmemcached 1.1.4 hashes with the key hash) or, `weighted`,
 * libketama's own (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED: MD5, 4 points per digest, 156 a server). */
static memcached_st *make_peer(int weighted, memcached_hash_t key_hash)
{
    memcached_st *m = memcached_create(NULL);
    memcached_return_t rc = m ? MEMCACHED_SUCCESS : MEMCACHED_FAILURE;
    if (rc == MEMCACHED_SUCCESS && weighted)
        rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    if (rc == MEMCACHED_SUCCESS && !weighted)
        rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                    MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
    if (rc == MEMCACHED_SUCCESS && !weighted)
        rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_HASH, MEMCACHED_HASH_MD5);
    if (rc == MEMCACHED_SUCCESS)
        rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, key_hash);
    for (int i = 1; rc == MEMCACHED_SUCCESS && i <= PEER_N; i++) {
        char host[32];
        snprintf(host, sizeof host, "10.0.0.%d", i);
        rc = memcached_server_add(m, host, 11211);
    }
    if (rc != MEMCACHED_SUCCESS)
        die("libmemcached setup", NULL);
    return m;
}

/* Median ns per key of memcached_generate_hash, reported as `name`. */
static double time_peer(const char *name, int weighted, memcached_hash_t key_hash, const char *keys)
{
    memcached_st *m = make_peer(weighted, key_hash);
    double ns[RUNS];
    for (int run = -1; run < RUNS; run++) {
        uint64_t acc = 0;
        double t0 = now_ns();
        for (size_t i = 0; i < KEYS; i++)
            acc += memcached_generate_hash(m, keys + i * KEY_LEN, KEY_LEN);
        if (run >= 0)
            ns[run] = (now_ns() - t0) / KEYS;
        sink += acc;
    }
    char label[80];
    snprintf(label, sizeof label, "peer: %s (%u pts)", name, m->ketama.continuum_points_counter);
    report(label, median(ns, RUNS), "ns/key", 0, 0);
    memcached_free(m);
    return median(ns, RUNS);
}

static const rk_hash_alg algs[] = {RK_HASH_XXH3_64, RK_HASH_FNV1A_32, RK_HASH_MD5_32};
static const double small_target[] = {15, 25, 0}; /* ns/key on 16k points; none for md5_32 */
static const double big_target[] = {60, 60, 0};   /* ns/key on 1M points */
static const double build_target[] = {10, 20, 0}; /* ms for 1M points */

/* Lookup ns/key of each hash on 100 x 160 (kept in small[] for the peer ratios) and BIG x BIG. */
static void lookups(const char *keys, double *small)
{
    char name[64];
    for (size_t a = 0; a < 3; a++) {
        const char *h = rk_hash_name(algs[a]);
        rk_ring *r = make_ring(algs[a], 100, 160);
        snprintf(name, sizeof name, "lookup %s, 100 x 160 (%zu points)", h, rk_ring_point_count(r));
        report(name, small[a] = time_lookup(r, keys), "ns/key", small_target[a], 0);
        rk_ring_free(r);
        r = make_ring(algs[a], BIG, BIG);
        snprintf(name, sizeof name, "lookup %s, %d x %d (%zu points)", h, BIG, BIG,
                 rk_ring_point_count(r));
        report(name, time_lookup(r, keys), "ns/key", big_target[a], 0);
        rk_ring_free(r);
    }
}

static void memory(void)
{
    char name[64];
    size_t shape[2][2] = {{100, 160}, {BIG, BIG}};
    for (size_t s = 0; s < 2; s++) {
        for (size_t a = 0; a < 2; a++) { /* 32-bit hashes share one layout: md5_32 as fnv1a_32 */
            rk_ring *r = make_ring(algs[a], shape[s][0], (uint32_t)shape[s][1]);
            snprintf(name, sizeof name, "bytes per point, %s, %zu x %zu", rk_hash_name(algs[a]),
                     shape[s][0], shape[s][1]);
            report(name, (double)rk_ring_memory(r) / (double)rk_ring_point_count(r), "B", 12, 0);
            rk_ring_free(r);
        }
    }
}

typedef struct {
    uint64_t pos;
    uint32_t node;
} naive_point;

static int cmp_naive(const void *a, const void *b)
{
    const naive_point *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node); /* ids are in index order */
}

/* Median ms of the build anyone would write first: snprintf each point's name "<id>#<i>", hash
 * it, qsort the points; the peer of the build figure. */
static double time_naive_build(const rk_topology *t)
{
    size_t nn = rk_topology_node_count(t), vf = rk_topology_vnode_factor(t);
    double ms[RUNS];
    for (int run = 0; run < RUNS; run++) {
        double t0 = now_ns();
        naive_point *all = malloc(nn * vf * sizeof *all);
        if (!all)
            die("naive build", NULL);
        for (size_t k = 0; k < nn; k++)
            for (size_t i = 0; i < vf; i++) {
                char name[64];
                int len = snprintf(name, sizeof name, "%s#%zu", rk_topology_node(t, k)->id, i);
                all[k * vf + i] = (naive_point){XXH3_64bits(name, (size_t)len), (uint32_t)k};
            }
        qsort(all, nn * vf, sizeof *all, cmp_naive);
        ms[run] = (now_ns() - t0) / 1e6;
        sink += all[0].pos;
        free(all);
    }
    return median(ms, RUNS);
}

/* Run first: the first build of the process gets fresh pages from the kernel (page faults), later
 * ones mostly reuse memory the allocator kept. The xxh3_64 build is timed on two threads (the
 * default), on one, and against the naive build. */
static void builds(void)
{
    char name[64];
    for (size_t a = 0; a < 3; a++) {
        rk_topology *t = make_topology(algs[a], BIG, BIG);
        double first, ms = time_build(t, &first);
        snprintf(name, sizeof name, "build %s, %d x %d (1M points)", rk_hash_name(algs[a]), BIG,
                 BIG);
        report(name, ms, "ms", build_target[a], 0);
        if (a == 0) {
            report("  the first build of the process (fresh pages)", first, "ms", 14, 0);
            rk_ring_set_build_threads(1);
            double one = time_build(t, &first);
            rk_ring_set_build_threads(0);
            report("  on one thread", one, "ms", 0, 0);
            double naive = time_naive_build(t);
            report("  naive build (snprintf, hash, qsort)", naive, "ms", 0, 0);
            report("  ratio naive / ours", naive / ms, "x", 8, 1);
            report("  ratio naive / ours on one thread", naive / one, "x", 0, 0);
        }
        rk_topology_free(t);
    }
}

/* BIG x BIG (1,000,000 points) to the same plus one node of weight 1 (1,001,000 points). */
static void plan(void)
{
    rk_ring *a = make_ring(RK_HASH_XXH3_64, BIG, BIG),
            *b = make_ring(RK_HASH_XXH3_64, BIG + 1, BIG);
    size_t arcs = 0;
    double ms = time_plan(a, b, &arcs);
    char name[80];
    snprintf(name, sizeof name, "plan xxh3_64, %zu -> %zu points (+1 node)", rk_ring_point_count(a),
             rk_ring_point_count(b));
    report(name, ms, "ms", 10, 0);
    printf("  (%zu moving arcs)\n", arcs);
    rk_ring_free(a), rk_ring_free(b);
}

/* libmemcached's ketama as the peer, and our ratio (peer ns / our ns) on the 100 x 160 ring. The
 * peer of the target hashes keys with MD5, as ketama does; the others show what a cheaper key hash
 * on their side leaves of the ratio. */
static void peer(const char *keys, const double *small)
{
    printf("  (peer: libmemcached %s, %d servers)\n", memcached_lib_version(), PEER_N);
    double md5 = time_peer("ketama, md5 keys", 0, MEMCACHED_HASH_MD5, keys);
    double lib = time_peer("libketama-compatible", 1, MEMCACHED_HASH_MD5, keys);
    double oaat = time_peer("ketama, default keys (oaat)", 0, MEMCACHED_HASH_DEFAULT, keys);
    double fnv = time_peer("ketama, fnv1a_32 keys", 0, MEMCACHED_HASH_FNV1A_32, keys);
    report("ratio ketama(md5) / ours xxh3_64", md5 / small[0], "x", 10, 1);
    report("ratio ketama(md5) / ours fnv1a_32", md5 / small[1], "x", 10, 1);
    report("ratio ketama(md5) / ours md5_32", md5 / small[2], "x", 0, 0);
    report("ratio libketama-compatible / ours xxh3_64", lib / small[0], "x", 0, 0);
    report("ratio ketama(oaat) / ours xxh3_64", oaat / small[0], "x", 0, 0);
    report("ratio ketama(fnv1a_32) / ours fnv1a_32", fnv / small[1], "x", 0, 0);
}

/* The ketama scheme (docs/KETAMA.md) on 100 equal servers (160 points each) against the
 * ringkeeper scheme's 100 x 160 with the same key hash (target: at most 2x its time), and
 * libmemcached's own weighted ketama on as many servers with the same key hash. */
static void ketama(const char *keys, const double *small)
{
    static const struct {
        rk_hash_alg ours, same;
        memcached_hash_t theirs;
        size_t small_at;
    } pairs[] = {{RK_HASH_KETAMA_FNV1A_32, RK_HASH_FNV1A_32, MEMCACHED_HASH_FNV1A_32, 1},
                 {RK_HASH_KETAMA_MD5, RK_HASH_MD5_32, MEMCACHED_HASH_MD5, 2}};
    char name[80];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        rk_ring *r = make_ring(pairs[i].ours, 100, 0);
        double ns = time_lookup(r, keys);
        snprintf(name, sizeof name, "lookup ketama %s, 100 servers (%zu points)",
                 rk_hash_name(pairs[i].ours), rk_ring_point_count(r));
        report(name, ns, "ns/key", 0, 0);
        snprintf(name, sizeof name, "ratio ketama %s / ringkeeper %s", rk_hash_name(pairs[i].ours),
                 rk_hash_name(pairs[i].same));
        report(name, ns / small[pairs[i].small_at], "x", 2, 0);
        snprintf(name, sizeof name, "libketama-compatible, %s keys", rk_hash_name(pairs[i].ours));
        double lib = time_peer(name, 1, pairs[i].theirs, keys);
        snprintf(name, sizeof name, "ratio libmemcached / ours, ketama %s",
                 rk_hash_name(pairs[i].ours));
        report(name, lib / ns, "x", 0, 0);
        rk_ring_free(r);
    }
}

/* A balancer's ring of 100 servers and 16,000 points, as the 100 x 160 ring (the nginx scheme: 160
 * points per unit of weight; the haproxy scheme: 16, so weight 10), hashing keys with `hash`. */
static rk_ring *make_balancer(const char *scheme, const char *hash)
{
    int haproxy = strcmp(scheme, "haproxy") == 0;
    json_t *nodes = json_array();
    for (int i = 0; i < 100; i++) {
        char id[32], addr[32];
        snprintf(addr, sizeof addr, "10.0.%d.%d:80", i / 250, i % 250 + 1);
        snprintf(id, sizeof id, "%d", i + 1);
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:i}", "id", haproxy ? id : addr, "addr",
                                               addr, "weight", haproxy ? 10 : 1));
    }
    json_t *doc = json_pack("{s:s, s:s, s:o}", "scheme", scheme, "hash", hash, "nodes", nodes);
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(doc, &err);
    json_decref(doc);
    rk_ring *r = t ? rk_ring_build(t, &err) : NULL;
    if (!r)
        die(scheme, &err);
    rk_topology_free(t);
    return r;
}

/* Median ns per key of rk_ring_lookup_hash on `r` (a ringkeeper ring) of the keys hashed by
 * `ring`'s key hash: the ringkeeper scheme's lookup with a balancer's key hash. */
static double time_hashed(const rk_ring *r, const rk_ring *ring, const char *keys)
{
    double ns[RUNS];
    for (int run = -1; run < RUNS; run++) {
        uint64_t acc = 0;
        double t0 = now_ns();
        for (size_t i = 0; i < KEYS; i++)
            acc += rk_ring_lookup_hash(r, rk_ring_key_hash(ring, keys + i * KEY_LEN, KEY_LEN));
        if (run >= 0)
            ns[run] = (now_ns() - t0) / KEYS;
        sink += acc;
    }
    return median(ns, RUNS);
}

/* The nginx and haproxy schemes (docs/LOADBALANCERS.md) against the ringkeeper scheme's 100 x 160
 * ring looked up with the same key hash (target: at most 2x its time). The ringkeeper scheme has
 * no CRC-32 or sdbm of its own, so its lookup is timed on the balancer's key hash. */
static void balancers(const char *keys)
{
    static const char *const rings[][2] = {
        {"nginx", "crc32a"}, {"haproxy", "sdbm"}, {"haproxy", "crc32_avalanche"}};
    rk_ring *same = make_ring(RK_HASH_FNV1A_32, 100, 160);
    char name[80];
    for (size_t i = 0; i < sizeof rings / sizeof rings[0]; i++) {
        rk_ring *r = make_balancer(rings[i][0], rings[i][1]);
        double ns = time_lookup(r, keys), base = time_hashed(same, r, keys);
        snprintf(name, sizeof name, "lookup %s %s, 100 servers (%zu points)", rings[i][0],
                 rings[i][1], rk_ring_point_count(r));
        report(name, ns, "ns/key", 0, 0);
        snprintf(name, sizeof name, "ratio %s / ringkeeper, %s keys", rings[i][0], rings[i][1]);
        report(name, ns / base, "x", 2, 0);
        rk_ring_free(r);
    }
    rk_ring_free(same);
}

/* A topology of Envoy's or gRPC's schemes (docs/ENVOY.md): `head` its scheme fields, `hosts`
 * hosts of weight 1, ids as addresses. */
static rk_topology *make_envoy(const char *head, int hosts)
{
    char text[256];
    snprintf(text, sizeof text, "{%s, \"nodes\": []}", head);
    json_t *doc = json_loads(text, 0, NULL), *nodes = json_object_get(doc, "nodes");
    for (int i = 0; i < hosts; i++) {
        char addr[32];
        snprintf(addr, sizeof addr, "10.%d.%d.%d:8000", i / 62500, i / 250 % 250, i % 250 + 1);
        json_array_append_new(nodes,
                              json_pack("{s:s, s:s, s:i}", "id", addr, "addr", addr, "weight", 1));
    }
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(doc, &err);
    json_decref(doc);
    if (!t)
        die(head, &err);
    return t;
}

/* Envoy's Maglev table of 500 hosts at its default size (target 1 ms; Envoy reports about 2 ms),
 * an Envoy ring of 1024 x 256 = 262,144 entries (target 10 ms; Envoy took 43 ms, envoy#2574), and
 * a lookup on a 1000-host Envoy ring (target 30 ns), keys hashed as Envoy's header policy does. */
static void envoy(const char *keys)
{
    double first;
    rk_topology *t = make_envoy("\"scheme\": \"maglev\", \"hash\": \"xx_hash\"", 500);
    report("build maglev, 500 hosts, table 65537", time_build(t, &first), "ms", 1, 0);
    rk_topology_free(t);
    t = make_envoy("\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", "
                   "\"minimum_ring_size\": 262144",
                   1024);
    report("build envoy_ring_hash, 1024 hosts (262144 entries)", time_build(t, &first), "ms", 10,
           0);
    rk_topology_free(t);
    t = make_envoy("\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\"", 1000);
    rk_error err = {0};
    rk_ring *r = rk_ring_build(t, &err);
    if (!r)
        die("envoy_ring_hash", &err);
    char name[80];
    snprintf(name, sizeof name, "lookup envoy_ring_hash, 1000 hosts (%zu entries)",
             rk_ring_point_count(r));
    report(name, time_lookup(r, keys), "ns/key", 30, 0);
    rk_ring_free(r);
    rk_topology_free(t);
}

/* `bench_ring --builds N`: the 1M-point xxh3_64 build alone, N times, for a profiler or
 * `perf stat` around the process. */
static int builds_only(const char *n)
{
    char *end;
    unsigned long runs = strtoul(n, &end, 10);
    if (*end || runs == 0 || runs > 100000) {
        fprintf(stderr, "bench_ring: --builds takes a count from 1 to 100000, not \"%s\"\n", n);
        return 2;
    }
    rk_topology *t = make_topology(RK_HASH_XXH3_64, BIG, BIG);
    double first, ms = time_builds(t, &first, runs);
    printf("%lu builds of %d x %d xxh3_64: median %.2f ms, first %.2f ms\n", runs, BIG, BIG, ms,
           first);
    rk_topology_free(t);
    return 0;
}

/* `bench_ring --grpc HOSTS SIZE`: the median build of a grpc_ring_hash ring of HOSTS equal hosts
 * and SIZE entries (its minimum, maximum and cap), the peer of grpc-js-xds's own build in
 * tests/bench/bench_grpc.sh. */
static int grpc_only(const char *hosts, const char *size)
{
    char head[160];
    long h = strtol(hosts, NULL, 10), n = strtol(size, NULL, 10);
    if (h < 1 || h > 100000 || n < 1 || n > 8388608) {
        fprintf(stderr, "bench_ring: --grpc takes HOSTS 1..100000 and SIZE 1..8388608\n");
        return 2;
    }
    snprintf(head, sizeof head,
             "\"scheme\": \"grpc_ring_hash\", \"hash\": \"xx_hash\", \"minimum_ring_size\": %ld, "
             "\"maximum_ring_size\": %ld, \"ring_size_cap\": %ld",
             n, n, n);
    rk_topology *t = make_envoy(head, (int)h);
    double first, ms = time_build(t, &first);
    printf("grpc_ring_hash build, %ld hosts, %ld entries: median %.4f ms, first %.4f ms\n", h, n,
           ms, first);
    rk_topology_free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--builds") == 0)
        return builds_only(argv[2]);
    if (argc == 4 && strcmp(argv[1], "--grpc") == 0)
        return grpc_only(argv[2], argv[3]);
    if (argc != 1) {
        fprintf(stderr, "usage: bench_ring [--builds N | --grpc HOSTS SIZE]\n");
        return 2;
    }
    char *keys = make_keys();
    double small[3];
    printf("bench_ring: %d keys of %d bytes, median of %d runs\n", KEYS, KEY_LEN, RUNS);
    printf("%-52s %9s %-7s %-9s %s\n", "figure", "median", "unit", "target", "result");
    builds();
    lookups(keys, small);
    plan();
    memory();
    peer(keys, small);
    ketama(keys, small);
    balancers(keys);
    envoy(keys);
    printf("%d of %d targets met\n", checks - misses, checks);
    free(keys);
    return 0;
}
