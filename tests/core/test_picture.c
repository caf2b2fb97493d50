/* test_picture.c — the arc at a hash value (rk_ring_arc_at) and the binned pictures of rings and
 * plans (rk_ring_picture, rk_plan_picture; picture.c), on the golden vectors' rings and plans:
 * arcs against lookups and the vectors' shares, bins against the arcs that cover them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "golden.h"
#include "ringkeeper.h"

#define BINS 360 /* the smallest picture the server draws: bins wider than the vectors' arcs */

static uint64_t top_of(const rk_ring *r)
{
    return rk_ring_bits(r) == 64 ? UINT64_MAX : UINT32_MAX;
}

static const char *id_of(const rk_ring *r, uint32_t node)
{
    return rk_topology_node(rk_ring_topology(r), node)->id;
}

/* The arc at h agrees with the lookups at its ends, and end + 1 starts the next one. */
static void check_arc(const rk_ring *r, uint64_t h)
{
    rk_ring_arc a, next;
    uint64_t top = top_of(r);
    rk_ring_arc_at(r, h, &a);
    assert_int_equal(rk_ring_lookup_hash(r, h), a.node);
    assert_int_equal(rk_ring_lookup_hash(r, a.end), a.node);
    assert_int_equal(rk_ring_lookup_hash(r, a.start == top ? 0 : a.start + 1), a.node);
    rk_ring_arc_at(r, a.end == top ? 0 : a.end + 1, &next);
    assert_true(next.start == a.end);
    if (a.start < a.end) /* h inside, as the arc does not wrap */
        assert_true(a.start < h && h <= a.end);
}

/* Walks the ring arc by arc from zero: each arc's checks, and per node the fractions summed
 * against the vectors' shares. The arcs, in `arcs` (at most `max`); how many. */
static size_t walk(const rk_ring *r, const json_t *shares, rk_ring_arc *arcs, size_t max)
{
    size_t nn = rk_topology_node_count(rk_ring_topology(r)), n = 0;
    double *sum = calloc(nn, sizeof *sum);
    uint64_t h = 0, top = top_of(r);
    assert_non_null(sum);
    while (n < max) {
        rk_ring_arc_at(r, h, &arcs[n]);
        if (n > 0 && arcs[n].end < h)
            break; /* past the last point: the first arc again */
        check_arc(r, h);
        sum[arcs[n].node] += arcs[n].fraction;
        if (arcs[n++].end == top)
            break;
        h = arcs[n - 1].end + 1;
    }
    assert_true(n < max);
    for (size_t k = 0; k < nn; k++) {
        json_t *want = json_object_get(shares, id_of(r, (uint32_t)k));
        assert_true(fabs(sum[k] - rk_ring_share(r, k)) < 1e-12);
        if (want)
            assert_true(fabs(sum[k] - json_real_value(want)) < 1e-9);
    }
    free(sum);
    return n;
}

/* Bin b covers [b, b + 1) * space / bins; an arc [first, last] that covers it whole owns it. */
static int covers(uint64_t first, uint64_t last, size_t b, unsigned bits)
{
    double space = ldexp(1.0, (int)bits);
    return (double)first <= (double)b * space / BINS &&
           (double)last + 1.0 >= (double)(b + 1) * space / BINS;
}

static void test_ring_arcs_and_pictures(void **state)
{
    (void)state;
    json_t *cases = load("rings.json"), *c;
    size_t i;
    json_array_foreach(cases, i, c)
    {
        rk_ring *r = ring_of(json_object_get(c, "topology"));
        size_t max = rk_ring_point_count(r) + 2, n;
        rk_ring_arc *arcs = calloc(max, sizeof *arcs);
        uint32_t out[BINS];
        assert_non_null(arcs);
        n = walk(r, json_object_get(c, "shares"), arcs, max);
        for (size_t k = 0; k < rk_ring_point_count(r); k++) {
            uint64_t pos;
            uint32_t node;
            rk_ring_point(r, k, &pos, &node);
            check_arc(r, pos);
        }
        assert_int_equal(rk_ring_picture(r, BINS, out, NULL), RK_OK);
        size_t checked = 0;
        for (size_t a = 0; a < n; a++) /* the walk's first arc wraps, and is split at zero */
            for (size_t b = 0; b < BINS; b++)
                if (arcs[a].start < arcs[a].end &&
                    covers(arcs[a].start + 1, arcs[a].end, b, rk_ring_bits(r)))
                    assert_int_equal(out[b], arcs[a].node), checked++;
        assert_true(checked > 0);
        free(arcs);
        rk_ring_free(r);
    }
    json_decref(cases);
}

/* A ring whose every point is at one position: one arc, the whole space. */
static void test_one_position(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:s, s:i, s:[{s:s, s:s, s:i}]}", "hash", "xxh3_64", "vnode_factor", 1,
                            "nodes", "id", "only", "addr", "h:1", "weight", 1);
    rk_ring *r = ring_of(doc);
    rk_ring_arc a;
    rk_ring_arc_at(r, 12345, &a);
    assert_true(a.start == a.end);
    assert_true(a.fraction == 1.0);
    check_arc(r, 0);
    check_arc(r, UINT64_MAX);
    rk_ring_free(r);
    json_decref(doc);
}

static uint32_t plan_index(const rk_plan *p, const char *id)
{
    size_t nn;
    const rk_plan_node *nodes = rk_plan_nodes(p, &nn);
    for (size_t k = 0; k < nn; k++)
        if (strcmp(nodes[k].id, id) == 0)
            return (uint32_t)k;
    fail_msg("no node %s in the plan", id);
    return 0;
}

/* The circles before and after are the rings' pictures in plan node indexes, with the ring given
 * or rebuilt alike. */
static void check_side(const rk_plan *p, const rk_ring *r, rk_plan_circle circle)
{
    uint32_t given[BINS], rebuilt[BINS], own[BINS];
    assert_int_equal(rk_plan_picture(p, circle, r, BINS, given, NULL), RK_OK);
    assert_int_equal(rk_plan_picture(p, circle, NULL, BINS, rebuilt, NULL), RK_OK);
    assert_int_equal(rk_ring_picture(r, BINS, own, NULL), RK_OK);
    assert_memory_equal(given, rebuilt, sizeof given);
    for (size_t b = 0; b < BINS; b++)
        assert_int_equal(given[b], plan_index(p, id_of(r, own[b])));
}

/* The moving circle: bins a plan arc covers are its destination's, bins no arc touches empty. */
static void check_moving(const rk_plan *p, unsigned bits)
{
    uint32_t out[BINS];
    size_t na, covered = 0;
    const rk_arc *arcs = rk_plan_arcs(p, &na);
    double space = ldexp(1.0, (int)bits);
    assert_int_equal(rk_plan_picture(p, RK_PLAN_MOVING, NULL, BINS, out, NULL), RK_OK);
    for (size_t b = 0; b < BINS; b++) {
        int touched = 0;
        for (size_t k = 0; k < na; k++) {
            touched |= (double)arcs[k].first < (double)(b + 1) * space / BINS &&
                       (double)arcs[k].last + 1.0 > (double)b * space / BINS;
            if (covers(arcs[k].first, arcs[k].last, b, bits))
                assert_int_equal(out[b], arcs[k].to), covered++;
        }
        if (!touched)
            assert_int_equal(out[b], RK_NO_NODE);
    }
    assert_true(na == 0 || covered > 0);
}

/* The SVG drawn from the plan's own rings is the one drawn from rings rebuilt. */
static void check_svg(const rk_plan *p, const rk_ring *a, const rk_ring *b)
{
    rk_plan_meta meta = {.cluster = "c", .from_version = 1, .to_version = 2};
    char *given = rk_plan_to_svg_rings(p, &meta, a, b), *rebuilt = rk_plan_to_svg(p, &meta);
    assert_non_null(given);
    assert_non_null(rebuilt);
    assert_string_equal(given, rebuilt);
    free(given);
    free(rebuilt);
}

static void test_plan_pictures(void **state)
{
    (void)state;
    json_t *cases = load("plans.json"), *c;
    size_t i;
    json_array_foreach(cases, i, c)
    {
        rk_ring *a = ring_of(json_object_get(c, "from")), *b = ring_of(json_object_get(c, "to"));
        rk_error err = {0};
        rk_plan *p = rk_plan_new(a, b, &(rk_plan_options){0}, &err);
        assert_non_null(p);
        check_side(p, a, RK_PLAN_BEFORE);
        check_side(p, b, RK_PLAN_AFTER);
        check_moving(p, rk_ring_bits(a));
        check_svg(p, a, b);
        rk_plan_free(p);
        rk_ring_free(a);
        rk_ring_free(b);
    }
    json_decref(cases);
}

static void test_bins_refused(void **state)
{
    (void)state;
    json_t *cases = load("rings.json");
    rk_ring *r = ring_of(json_object_get(json_array_get(cases, 0), "topology"));
    rk_error err = {0};
    uint32_t out[1];
    assert_int_equal(rk_ring_picture(r, 0, out, &err), RK_EINVAL);
    assert_string_equal(err.field, "bins");
    rk_ring_free(r);
    json_decref(cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_arcs_and_pictures),
        cmocka_unit_test(test_one_position),
        cmocka_unit_test(test_plan_pictures),
        cmocka_unit_test(test_bins_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
