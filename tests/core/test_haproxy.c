/* test_haproxy.c — the haproxy scheme's lookup rule against brute force: HAProxy's
 * chash_get_server_hash (the nearest point, the one before on a tie, an exact hit its own point)
 * over the points HAProxy places, on seeded random backends, probed at every point, around it, at
 * every gap's middle and across the wrap. The points themselves and the key hashes are checked
 * against the real HAProxy (tests/balancers/haproxy_oracle.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "ringkeeper.h"
#include "random_topology.h"

#define MAX_POINTS (64 * 256 * 16)

/* lb_chash.c's point j of server id: full_hash(id * 4096 + j) of HAProxy's tools.h, written
 * again here from its source as the test's reference. */
static uint32_t reference_point(uint32_t id, uint32_t j)
{
    uint32_t a = id * 4096 + j;
    a = (a + 0x7ed55d16) + (a << 12);
    a = (a ^ 0xc761c23c) ^ (a >> 19);
    a = (a + 0x165667b1) + (a << 5);
    a = (a + 0xd3a2646c) ^ (a << 9);
    a = (a + 0xfd7046c5) + (a << 3);
    a = (a ^ 0xb55a4f09) ^ (a >> 16);
    return a * 3221225473u;
}

typedef struct {
    uint32_t pos, id;
} point;

static int by_pos(const void *a, const void *b)
{
    const point *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* chash_get_server_hash: next = the first point >= h (else the first), prev = the one before it
 * (else the last); prev when h - prev <= next - h, in 32-bit arithmetic. */
static uint32_t reference_owner(const point *p, size_t n, uint32_t h)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].pos < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t next = lo == n ? 0 : lo, prev = next == 0 ? n - 1 : next - 1;
    uint32_t dp = h - p[prev].pos, dn = p[next].pos - h;
    return dp <= dn ? p[prev].id : p[next].id;
}

/* A backend of `n` servers of random ids (1..1048575, some at its ends) and weights 0..max. */
static rk_ring *random_backend(uint64_t *rng, size_t n, uint32_t max_weight, point *points,
                               size_t *n_points)
{
    json_t *nodes = json_array();
    *n_points = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t id = k == 0 ? 1 : k == 1 ? 1048575 : 2 + (uint32_t)rt_below(rng, 1048573);
        uint32_t w = (uint32_t)rt_below(rng, max_weight + 1);
        w = k == 0 && w == 0 ? 1 : w; /* one server at least owns something */
        char text[16], addr[32];
        snprintf(text, sizeof text, "%u", id);
        snprintf(addr, sizeof addr, "127.0.0.1:%zu", 9000 + k);
        if (json_array_append_new(
                nodes, json_pack("{s:s, s:s, s:i}", "id", text, "addr", addr, "weight", (int)w)))
            fail();
        for (uint32_t j = 0; j < 16 * w; j++)
            points[(*n_points)++] = (point){reference_point(id, j), id};
    }
    qsort(points, *n_points, sizeof *points, by_pos);
    json_t *doc = json_pack("{s:s, s:s, s:o}", "scheme", "haproxy", "hash", "sdbm", "nodes", nodes);
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(doc, &err);
    json_decref(doc);
    if (!t)
        fail_msg("%s: %s", err.field, err.message);
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    assert_non_null(r);
    return r;
}

static void check(const rk_ring *r, const point *p, size_t n, uint32_t h, uint64_t seed)
{
    uint32_t want = reference_owner(p, n, h);
    const char *got = rk_topology_node(rk_ring_topology(r), rk_ring_lookup_hash(r, h))->id;
    if ((uint32_t)strtoul(got, NULL, 10) != want)
        fail_msg("seed %llu, hash %u: ringkeeper says %s, HAProxy's rule %u",
                 (unsigned long long)seed, h, got, want);
}

static void test_nearest_point(void **state)
{
    (void)state;
    static point points[MAX_POINTS];
    static const struct {
        size_t servers;
        uint32_t max_weight;
    } shapes[] = {{1, 1}, {2, 1}, {3, 4}, {12, 8}, {64, 256}};
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t rng = seed;
        size_t n;
        rk_ring *r =
            random_backend(&rng, shapes[seed % 5].servers, shapes[seed % 5].max_weight, points, &n);
        for (size_t i = 0; i < n; i++) {
            uint32_t p = points[i].pos, gap = (i + 1 < n ? points[i + 1].pos : points[0].pos) - p;
            uint32_t probes[] = {p - 1, p, p + 1, p + gap / 2, p + gap / 2 + 1};
            for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++)
                check(r, points, n, probes[k], seed);
        }
        uint32_t edges[] = {0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
        for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
            check(r, points, n, edges[k], seed);
        for (int q = 0; q < 2000; q++)
            check(r, points, n, (uint32_t)rt_next(&rng), seed);
        rk_ring_free(r);
    }
}

/* What the scheme refuses: ids that are not HAProxy ids, weights HAProxy has not. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        double weight;
        const char *field;
    } bad[] = {{"0", 1, "nodes[0].id"},       {"01", 1, "nodes[0].id"},
               {"1048576", 1, "nodes[0].id"}, {"web1", 1, "nodes[0].id"},
               {"-3", 1, "nodes[0].id"},      {"7", 257, "nodes[0].weight"},
               {"7", 1.5, "nodes[0].weight"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *doc = json_pack("{s:s, s:s, s:[{s:s, s:s, s:f}]}", "scheme", "haproxy", "hash",
                                "wt6_avalanche", "nodes", "id", bad[i].id, "addr", "10.0.0.1:80",
                                "weight", bad[i].weight);
        rk_error err = {0};
        rk_topology *t = rk_topology_from_json(doc, &err);
        json_decref(doc);
        assert_null(t);
        assert_int_equal(err.code, RK_ETOPOLOGY);
        assert_string_equal(err.field, bad[i].field);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nearest_point),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
