/* test_ring.c — the ring of docs/RING.md against brute force: linear scans, walks and sums, on
 * seeded random rings of all three hashes (collisions, draining nodes and one-point rings
 * included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "internal.h" /* rki_ring_place, for a scheme of positions made to collide */
#include "ringkeeper.h"
#include "random_topology.h"

#define QUERIES    500 /* random hash values per ring */
#define MAX_PROBES 300 /* ring points whose position +-1 is probed, per ring */
#define KEYS       60  /* keys whose replicas are checked, per ring */

static const rk_hash_alg algs[] = {RK_HASH_FNV1A_32, RK_HASH_MD5_32, RK_HASH_XXH3_64};

static uint64_t position_of(const rk_ring *r, size_t i)
{
    uint64_t pos;
    uint32_t node;
    rk_ring_point(r, i, &pos, &node);
    return pos;
}

static uint32_t node_of(const rk_ring *r, size_t i)
{
    uint64_t pos;
    uint32_t node;
    rk_ring_point(r, i, &pos, &node);
    return node;
}

/* The point that owns hash h by a linear scan: the first at or after h, else the first of all. */
static size_t scan_owner(const rk_ring *r, uint64_t h)
{
    for (size_t i = 0; i < rk_ring_point_count(r); i++)
        if (position_of(r, i) >= h)
            return i;
    return 0;
}

static void check_lookup_at(const rk_ring *r, uint64_t h, const char *what)
{
    uint32_t want = node_of(r, scan_owner(r, h)), got = rk_ring_lookup_hash(r, h);
    if (got != want)
        fail_msg("%s: lookup_hash(0x%llx) = node %u, a linear scan says %u", what,
                 (unsigned long long)h, got, want);
}

/* Lookups at 0, the top of the hash space, points' positions +-1 and random values. */
static void check_lookups(const rk_ring *r, uint64_t *rng, const char *what)
{
    uint64_t max = rt_hash_max(rk_topology_hash(rk_ring_topology(r)));
    size_t n = rk_ring_point_count(r), stride = n / MAX_PROBES + 1;
    check_lookup_at(r, 0, what);
    check_lookup_at(r, max, what);
    for (size_t i = 0; i < n; i += stride) {
        uint64_t pos = position_of(r, i);
        check_lookup_at(r, pos, what);
        if (pos > 0)
            check_lookup_at(r, pos - 1, what);
        if (pos < max)
            check_lookup_at(r, pos + 1, what);
    }
    for (int q = 0; q < QUERIES; q++)
        check_lookup_at(r, rt_next(rng) & max, what);
}

/* Points sorted by (position, node id bytewise); each node has vnode_factor * weight of them. */
static void check_order(const rk_ring *r, const char *what)
{
    const rk_topology *t = rk_ring_topology(r);
    size_t nn = rk_topology_node_count(t), *count = calloc(nn, sizeof *count);
    assert_non_null(count);
    for (size_t i = 0; i < rk_ring_point_count(r); i++) {
        uint64_t pos, prev = 0;
        const char *id = rt_point_id(r, i, &pos), *prev_id = i ? rt_point_id(r, i - 1, &prev) : "";
        if (i > 0 && (prev > pos || (prev == pos && strcmp(prev_id, id) > 0)))
            fail_msg("%s: point %zu (%llx, %s) sorts before point %zu (%llx, %s)", what, i,
                     (unsigned long long)pos, id, i - 1, (unsigned long long)prev, prev_id);
        count[node_of(r, i)]++;
    }
    for (size_t k = 0; k < nn; k++)
        assert_int_equal(count[k],
                         (uint64_t)rk_topology_vnode_factor(t) * rk_topology_node(t, k)->weight);
    free(count);
}

static size_t owners(const rk_topology *t)
{
    size_t n = 0;
    for (size_t k = 0; k < rk_topology_node_count(t); k++)
        n += rk_topology_node(t, k)->weight > 0;
    return n;
}

/* The first `want` distinct nodes met walking clockwise from the owner of h; returns how many. */
static size_t walk_replicas(const rk_ring *r, uint64_t h, uint32_t *out, size_t want)
{
    size_t n = rk_ring_point_count(r), got = 0, i = scan_owner(r, h);
    for (size_t step = 0; step < n && got < want; step++, i = (i + 1) % n) {
        size_t k = 0;
        while (k < got && out[k] != node_of(r, i))
            k++;
        if (k == got)
            out[got++] = node_of(r, i);
    }
    return got;
}

static void check_replicas_of(const rk_ring *r, const char *key, size_t want, const char *what)
{
    const rk_topology *t = rk_ring_topology(r);
    uint32_t got[RT_MAX_NODES + 2], walked[RT_MAX_NODES + 2];
    uint64_t h = rk_hash(rk_topology_hash(t), key, strlen(key));
    size_t n = rk_ring_lookup_replicas(r, key, strlen(key), got, want);
    size_t expect = want < owners(t) ? want : owners(t);
    if (n != expect || walk_replicas(r, h, walked, want) != n)
        fail_msg("%s: %zu replicas of %s for %zu wanted, expected %zu", what, n, key, want, expect);
    assert_memory_equal(got, walked, n * sizeof got[0]);
    assert_int_equal(got[0], rk_ring_lookup(r, key, strlen(key)));
    assert_int_equal(rk_ring_lookup(r, key, strlen(key)), rk_ring_lookup_hash(r, h));
    assert_int_equal(rk_ring_key_hash(r, key, strlen(key)), h); /* as rk_hash, outside ketama */
}

static void check_replicas(const rk_ring *r, uint64_t *rng, const char *what)
{
    size_t most = owners(rk_ring_topology(r)) + 1, wants[] = {1, 2, 3, most};
    for (int k = 0; k < KEYS; k++) {
        char key[32];
        snprintf(key, sizeof key, "key-%llu", (unsigned long long)rt_next(rng));
        for (size_t w = 0; w < sizeof wants / sizeof wants[0]; w++)
            check_replicas_of(r, key, wants[w], what);
    }
}

/* Shares recomputed from the points' arcs; they sum to 1 and draining nodes own nothing. */
static void check_shares(const rk_ring *r, const char *what)
{
    const rk_topology *t = rk_ring_topology(r);
    size_t n = rk_ring_point_count(r), nn = rk_topology_node_count(t);
    uint64_t max = rt_hash_max(rk_topology_hash(t)), total_weight = 0;
    double space = (double)max + 1.0, *share = calloc(nn, sizeof *share), sum = 0;
    assert_non_null(share);
    /* the first point owns from past the last point, around zero, up to itself */
    share[node_of(r, 0)] =
        ((double)(max - position_of(r, n - 1)) + 1.0 + (double)position_of(r, 0)) / space;
    for (size_t i = 1; i < n; i++)
        share[node_of(r, i)] += (double)(position_of(r, i) - position_of(r, i - 1)) / space;
    for (size_t k = 0; k < nn; k++)
        total_weight += rk_topology_node(t, k)->weight;
    for (size_t k = 0; k < nn; k++) {
        uint32_t w = rk_topology_node(t, k)->weight;
        if (fabs(rk_ring_share(r, k) - share[k]) > 1e-12 || (w == 0 && rk_ring_share(r, k) != 0))
            fail_msg("%s: node %zu (weight %u) has share %.15f, its arcs cover %.15f", what, k, w,
                     rk_ring_share(r, k), share[k]);
        assert_true(fabs(rk_ring_ideal_share(r, k) - (double)w / (double)total_weight) < 1e-15);
        sum += rk_ring_share(r, k);
    }
    if (fabs(sum - 1.0) > 1e-9)
        fail_msg("%s: shares sum to %.15f", what, sum);
    free(share);
}

static void check_ring(const rk_ring *r, uint64_t *rng, const char *what)
{
    check_order(r, what);
    check_lookups(r, rng, what);
    check_replicas(r, rng, what);
    check_shares(r, what);
}

static void check_spec(const rt_spec *s, uint64_t *rng, const char *what)
{
    rk_ring *r = rt_ring(s);
    check_ring(r, rng, what);
    rk_ring_free(r);
}

static void test_random_rings(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        uint64_t rng = seed;
        rt_spec s;
        char what[64];
        snprintf(what, sizeof what, "random ring, seed %llu", (unsigned long long)seed);
        rt_random(&s, &rng, algs[seed % 3], 24, 4, 16);
        check_spec(&s, &rng, what);
    }
}

static void test_one_point(void **state)
{
    (void)state;
    for (size_t a = 0; a < 3; a++) {
        uint64_t rng = 100 + a;
        rt_spec s = {.hash = algs[a], .vnode_factor = 1};
        rt_add_named(&s, "only", 1);
        rk_ring *r = rt_ring(&s);
        assert_int_equal(rk_ring_point_count(r), 1);
        assert_true(rk_ring_share(r, 0) == 1.0);
        check_ring(r, &rng, rk_hash_name(algs[a]));
        rk_ring_free(r);
    }
}

/* Number of points at the same position as the point before them. */
static size_t collisions(const rk_ring *r)
{
    size_t c = 0;
    for (size_t i = 1; i < rk_ring_point_count(r); i++)
        c += position_of(r, i) == position_of(r, i - 1);
    return c;
}

/* Nodes whose points collide: fnv1a_32("n1605#61") == fnv1a_32("n2614#0") and nine more pairs;
 * md5_32("c21491#0") == md5_32("c90752#0"). Other nodes and a draining one around them. */
static void test_colliding_positions(void **state)
{
    (void)state;
    static const struct {
        rk_hash_alg hash;
        uint32_t vnode_factor;
        const char *a, *b;
    } cases[] = {{RK_HASH_FNV1A_32, 70, "n1605", "n2614"}, {RK_HASH_MD5_32, 1, "c21491", "c90752"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t rng = 200 + c;
        rt_spec s = {.hash = cases[c].hash, .vnode_factor = cases[c].vnode_factor};
        rt_add_named(&s, cases[c].b, 1);
        rt_add_named(&s, "drained", 0);
        rt_add_named(&s, cases[c].a, 1);
        rt_add(&s, 2);
        rk_ring *r = rt_ring(&s);
        assert_true(collisions(r) >= 1);
        check_ring(r, &rng, rk_hash_name(cases[c].hash));
        rk_ring_free(r);
    }
}

/* Many nodes on a 32-bit hash: some positions collide by chance. */
static void test_many_nodes(void **state)
{
    (void)state;
    for (size_t a = 0; a < 3; a++) {
        uint64_t rng = 300 + a;
        rt_spec s = {.hash = algs[a], .vnode_factor = 16};
        for (size_t i = 0; i < RT_MAX_NODES; i++)
            rt_add(&s, rt_weight(&rng, 3));
        rt_fix_weights(&s);
        check_spec(&s, &rng, rk_hash_name(algs[a]));
    }
}

/* The same ring from one thread and from two (a ring of 2^18 points or more), in order. */
static void check_threads_agree(rk_topology *t, const char *what)
{
    rk_error err = {0};
    rk_ring_set_build_threads(1);
    rk_ring *one = rk_ring_build(t, &err);
    rk_ring_set_build_threads(0);
    rk_ring *two = rk_ring_build(t, &err);
    assert_non_null(one);
    assert_non_null(two);
    assert_true(rk_ring_point_count(two) >= (1u << 18));
    assert_int_equal(rk_ring_point_count(one), rk_ring_point_count(two));
    for (size_t i = 0; i < rk_ring_point_count(one); i++)
        if (position_of(one, i) != position_of(two, i) || node_of(one, i) != node_of(two, i))
            fail_msg("%s: point %zu differs between one thread and two", what, i);
    assert_int_equal(rk_ring_fingerprint(one), rk_ring_fingerprint(two));
    for (size_t k = 0; k < rk_topology_node_count(t); k++)
        assert_true(rk_ring_share(one, k) == rk_ring_share(two, k));
    rk_ring_free(one);
    rk_ring_free(two);
}

static void test_two_threads(void **state)
{
    (void)state;
    for (size_t a = 0; a < 3; a++) { /* 240 nodes x 1100: 32-bit positions collide by chance */
        uint64_t rng = 400 + a;
        rt_spec s = {.hash = algs[a], .vnode_factor = 1100};
        for (size_t i = 0; i < 240; i++)
            rt_add(&s, rt_weight(&rng, 2));
        rk_topology *t = rt_topology(&s);
        check_threads_agree(t, rk_hash_name(algs[a]));
        rk_ring *r = rk_ring_build(t, &(rk_error){0});
        assert_non_null(r);
        check_order(r, rk_hash_name(algs[a]));
        check_shares(r, rk_hash_name(algs[a]));
        rk_ring_free(r);
        rk_topology_free(t);
    }
    /* 70,000 nodes x 4 (32-bit node numbers) */
    static rk_node nodes[70000];
    static char ids[70000][12], addrs[70000][24];
    for (size_t i = 0; i < 70000; i++) {
        snprintf(ids[i], sizeof ids[i], "n%zu", i);
        snprintf(addrs[i], sizeof addrs[i], "h%zu:11211", i);
        nodes[i] = (rk_node){ids[i], addrs[i], 1};
    }
    rk_error err = {0};
    rk_topology *t = rk_topology_new(RK_HASH_XXH3_64, 4, nodes, 70000, NULL, &err);
    if (!t)
        fail_msg("70,000 nodes refused: %s", err.message);
    check_threads_agree(t, "70,000 nodes");
    rk_topology_free(t);
}

/* Positions sharing all the bits the radix passes sort (a part's next 16), in no order below
 * them, and each one twice in a node and once in the other: the insertion sort gives up on every
 * part and qsort orders it. */
#define DENSE_POINTS 140000u
static uint64_t dense_position(uint32_t i)
{
    uint32_t v = i % (DENSE_POINTS / 2);
    return (uint64_t)(v & 255) << 56 | ((uint64_t)v * 0x9E3779B97F4A7C15u & 0xFFFFFFFFFFu);
}

static void dense_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    (void)t, (void)node;
    for (uint32_t i = 0; i < count; i++)
        out[i] = dense_position(count - 1 - i);
}

static int cmp_position_rank(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

static void test_sort_fallback(void **state)
{
    (void)state;
    rt_spec s = {.hash = RK_HASH_XXH3_64, .vnode_factor = 1};
    rt_add_named(&s, "a", 1);
    rt_add_named(&s, "b", 1);
    rk_topology *t = rt_topology(&s);
    const rki_scheme scheme = {.positions = dense_positions};
    uint32_t points[2] = {DENSE_POINTS, DENSE_POINTS}, order[2] = {1, 0}; /* b breaks ties first */
    uint64_t(*want)[2] = malloc(2 * DENSE_POINTS * sizeof *want);
    assert_non_null(want);
    for (uint32_t i = 0; i < 2 * DENSE_POINTS; i++)
        want[i][0] = dense_position(i % DENSE_POINTS), want[i][1] = i < DENSE_POINTS;
    qsort(want, 2 * DENSE_POINTS, sizeof *want, cmp_position_rank);
    for (unsigned threads = 0; threads < 2; threads++) { /* two halves (2^18 points), then one */
        rk_ring_set_build_threads(threads);
        rk_ring *r = calloc(1, sizeof *r);
        assert_non_null(r);
        *r = (rk_ring){.topo = rk_topology_ref(t), .bits = 64, .n = 2 * DENSE_POINTS};
        assert_int_equal(rki_ring_place(r, &scheme, points, order, 0), RK_OK);
        for (size_t i = 0; i < r->n; i++)
            if (r->pos[i] != want[i][0] || rki_node_at(r, i) != 1 - want[i][1])
                fail_msg("%u thread(s): point %zu out of order", threads ? 1 : 2, i);
        rk_ring_free(r);
    }
    rk_ring_set_build_threads(0);
    free(want);
    rk_topology_free(t);
}

static void test_draining_nodes(void **state)
{
    (void)state;
    for (size_t a = 0; a < 3; a++) {
        uint64_t rng = 400 + a;
        rt_spec s = {.hash = algs[a], .vnode_factor = 5};
        for (size_t i = 0; i < 8; i++)
            rt_add(&s, i % 3 == 0); /* three nodes of weight 1, five draining */
        rk_ring *r = rt_ring(&s);
        for (size_t i = 0; i < rk_ring_point_count(r); i++)
            assert_int_equal(node_of(r, i) % 3, 0);
        check_ring(r, &rng, rk_hash_name(algs[a]));
        rk_ring_free(r);
    }
}

/* Both rings hold the same points: positions and node ids. */
static void assert_same_points(const rk_ring *a, const rk_ring *b)
{
    assert_int_equal(rk_ring_point_count(a), rk_ring_point_count(b));
    for (size_t i = 0; i < rk_ring_point_count(a); i++) {
        uint64_t pa, pb;
        assert_string_equal(rt_point_id(a, i, &pa), rt_point_id(b, i, &pb));
        assert_true(pa == pb);
    }
}

static void check_fingerprint_hex(const rk_ring *r)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)rk_ring_fingerprint(r));
    assert_string_equal(rk_ring_fingerprint_hex(r), hex);
}

/* Same nodes in another order: same ring; a changed weight or an added draining node: another
 * fingerprint (drained ids are part of it). */
static void test_fingerprint(void **state)
{
    (void)state;
    for (uint64_t seed = 500; seed < 530; seed++) {
        uint64_t rng = seed;
        rt_spec s, t;
        rt_random(&s, &rng, algs[seed % 3], 12, 4, 8);
        t = s;
        rt_shuffle(&t, &rng);
        rk_ring *a = rt_ring(&s), *b = rt_ring(&t);
        check_fingerprint_hex(a);
        assert_true(rk_ring_fingerprint(a) == rk_ring_fingerprint(b));
        assert_same_points(a, b);
        rk_ring_free(b);
        t.weight[rt_below(&rng, t.n)] += 1;
        b = rt_ring(&t);
        assert_true(rk_ring_fingerprint(a) != rk_ring_fingerprint(b));
        rk_ring_free(b);
        t = s;
        rt_add(&t, 0);
        b = rt_ring(&t);
        assert_same_points(a, b);
        assert_true(rk_ring_fingerprint(a) != rk_ring_fingerprint(b));
        rk_ring_free(a), rk_ring_free(b);
    }
}

/* The hashes belong to the schemes: one hash a value in the build, each found back by its name
 * within every scheme that lists it, with its bits and key function. */
static void test_hash_registry(void **state)
{
    (void)state;
    size_t schemes = 0, hashes = 0;
    for (int id = 0; id < 256; id++) {
        const rki_scheme *s = rki_scheme_of((rk_scheme)id);
        for (size_t k = 0; s && k < s->n_hashes; k++, hashes++) {
            const rki_hash *h = s->hashes[k];
            rk_hash_alg back;
            assert_ptr_equal(rki_hash_of(h->value), h);
            assert_int_equal(rk_hash_from_scheme_name(s->id, h->name, &back), RK_OK);
            assert_int_equal(back, h->value);
            assert_string_equal(rk_hash_name(h->value), h->name);
            assert_int_equal(rk_hash_bits(h->value), h->bits);
            assert_true(h->bits == 32 || h->bits == 64);
            assert_non_null(h->key);
        }
        schemes += s != NULL;
    }
    assert_true(schemes >= 4);
    assert_true(hashes >= 3 + 12 + 1 + 8);
    assert_null(rk_hash_name((rk_hash_alg)3)); /* no hash has it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_rings),        cmocka_unit_test(test_one_point),
        cmocka_unit_test(test_colliding_positions), cmocka_unit_test(test_many_nodes),
        cmocka_unit_test(test_draining_nodes),      cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_two_threads),         cmocka_unit_test(test_sort_fallback),
        cmocka_unit_test(test_hash_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
