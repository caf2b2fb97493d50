/* test_suggest.c — weights that balance a load (suggest.c): a ring whose first node holds half
 * again its share of bytes is brought within the target, moving no more than the budget, in the
 * scheme's weight units; its figures are the plan's own, recomputed here; a budget too small
 * stops it; bad options and loads are refused naming the field. */
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

#include "ringkeeper.h"
#include "random_topology.h"

#define BINS  4096
#define NODES 8

/* Eight nodes of weight 1, vnode_factor 100, over xxh3_64. */
static rk_ring *eight(void)
{
    rt_spec s;
    memset(&s, 0, sizeof s);
    s.hash = RK_HASH_XXH3_64, s.vnode_factor = 100;
    for (int i = 0; i < NODES; i++) {
        char id[8];
        snprintf(id, sizeof id, "n%d", i);
        rt_add_named(&s, id, 1);
    }
    return rt_ring(&s);
}

/* Every bin 1000 bytes, those whose start node 0 owns 1500, and no requests. */
static rk_load *skewed(const rk_ring *r)
{
    rk_error err = {0};
    rk_load *l = rk_load_new(64, BINS, 1, &err);
    assert_non_null(l);
    for (size_t b = 0; b < BINS; b++) {
        uint64_t at = (uint64_t)b << 52;
        double bytes = rk_ring_lookup_hash(r, at) == 0 ? 1500 : 1000;
        assert_int_equal(rk_load_add(l, at, 1, bytes, 0, &err), RK_OK);
    }
    return l;
}

/* The largest node's bytes over a node's fair share (equal weights: an eighth), and what moves,
 * recomputed from the plan of the start to the suggestion. */
static void recompute(const rk_ring *start, const rk_load *l, const rk_suggestion *s, double *worst,
                      double *moved)
{
    rk_error err = {0};
    rk_ring *end = rk_ring_build(s->topology, &err);
    assert_non_null(end);
    rk_plan *p = rk_plan_new(start, end, NULL, &err);
    assert_non_null(p);
    size_t n;
    rk_plan_nodes(p, &n);
    rk_plan_node_load *nodes = calloc(n, sizeof *nodes);
    rk_plan_load_figures f;
    assert_int_equal(rk_plan_load(p, end, l, &f, nodes, &err), RK_OK);
    *worst = 0;
    for (size_t i = 0; i < n; i++)
        *worst = fmax(*worst, nodes[i].after.bytes / (f.total.bytes / NODES));
    *moved = f.moving.bytes / f.total.bytes;
    free(nodes);
    rk_plan_free(p);
    rk_ring_free(end);
}

static void balances_within_the_budget(void **state)
{
    (void)state;
    rk_ring *r = eight();
    rk_load *l = skewed(r);
    rk_suggest_options opt = {.max_moved = 0.1, .target = 1.05};
    rk_suggestion s;
    rk_error err = {0};
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_OK);
    assert_true(s.worst_before > 1.3);
    assert_true(s.worst_after <= 1.05 + 1e-9);
    assert_int_equal(s.stopped, RK_SUGGEST_TARGET);
    assert_true(s.moved > 0 && s.moved <= 0.1);
    assert_true(s.rounds > 0 && s.points_built > 0);
    double worst, moved;
    recompute(r, l, &s, &worst, &moved);
    assert_true(fabs(worst - s.worst_after) < 1e-9);
    assert_true(fabs(moved - s.moved) < 1e-9);
    const rk_topology *t = s.topology;
    assert_true(rk_topology_node(t, 0)->weight < 1); /* the heavy node gave weight */
    for (size_t i = 0; i < rk_topology_node_count(t); i++) {
        double units = rk_topology_node(t, i)->weight * 100;
        assert_true(fabs(units - nearbyint(units)) < 1e-9); /* in units of 1/vnode_factor */
    }
    rk_topology_free(s.topology);
    rk_load_free(l);
    rk_ring_free(r);
}

static void a_small_budget_stops_it(void **state)
{
    (void)state;
    rk_ring *r = eight();
    rk_load *l = skewed(r);
    rk_suggest_options opt = {.max_moved = 0.002};
    rk_suggestion s;
    rk_error err = {0};
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_OK);
    assert_true(s.stopped == RK_SUGGEST_BUDGET || s.stopped == RK_SUGGEST_STUCK);
    assert_true(s.moved <= 0.002 && s.worst_after <= s.worst_before);
    rk_topology_free(s.topology);
    opt = (rk_suggest_options){.max_moved = 1, .max_points_built = 1};
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_OK);
    assert_int_equal(s.stopped, RK_SUGGEST_LIMIT); /* the first try passes a bound of one point */
    rk_topology_free(s.topology);
    rk_load_free(l);
    rk_ring_free(r);
}

static void refusals(void **state)
{
    (void)state;
    rk_ring *r = eight();
    rk_load *l = skewed(r);
    rk_suggestion s;
    rk_error err = {0};
    rk_suggest_options opt = {.max_moved = 0};
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_EINVAL);
    assert_string_equal(err.field, "max_moved");
    opt = (rk_suggest_options){.max_moved = 0.1, .target = 0.5};
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_EINVAL);
    assert_string_equal(err.field, "target");
    opt = (rk_suggest_options){.max_moved = 0.1, .by_requests = 1};
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_EINVAL); /* no requests to balance */
    assert_string_equal(err.field, "load");
    assert_null(s.topology);
    rk_load *narrow = rk_load_new(32, 16, 1, &err);
    assert_int_equal(rk_load_add(narrow, 5, 1, 10, 0, &err), RK_OK);
    opt = (rk_suggest_options){.max_moved = 0.1};
    assert_int_equal(rk_suggest(r, narrow, &opt, &s, &err), RK_EINVAL); /* another hash space */
    assert_string_equal(err.field, "bits");
    rk_load_free(narrow);
    rk_load_free(l);
    rk_ring_free(r);
}

/* A scheme's own bound on weights: HAProxy's 256. The least loaded node at 256 cannot take more,
 * so the search goes on with the others (the heavy node gives) instead of failing. */
static void a_scheme_bound_is_a_step_not_taken(void **state)
{
    (void)state;
    json_t *nodes = json_array();
    for (int i = 0; i < 4; i++) {
        char id[8], addr[24];
        snprintf(id, sizeof id, "%d", i + 1); /* HAProxy's ids are numbers */
        snprintf(addr, sizeof addr, "10.0.0.%d:11211", i + 1);
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:i}", "id", id, "addr", addr, "weight",
                                               i == 0 ? 200 : 256));
    }
    json_t *doc = json_pack("{s:s, s:s, s:o}", "scheme", "haproxy", "hash", "sdbm", "nodes", nodes);
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(doc, &err);
    json_decref(doc);
    assert_non_null(t);
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    assert_non_null(r);
    rk_load *l = rk_load_new(rk_ring_bits(r), 1024, 1, &err);
    assert_non_null(l);
    for (size_t b = 0; b < 1024; b++) { /* server 1, the lightest by weight, holds the most */
        uint64_t at = (uint64_t)b << (rk_ring_bits(r) - 10);
        assert_int_equal(
            rk_load_add(l, at, 1, rk_ring_lookup_hash(r, at) == 0 ? 3000 : 1000, 0, &err), RK_OK);
    }
    rk_suggest_options opt = {.max_moved = 0.2, .equal_capacity = 1};
    rk_suggestion s;
    assert_int_equal(rk_suggest(r, l, &opt, &s, &err), RK_OK);
    assert_true(s.worst_after < s.worst_before);
    for (size_t i = 0; i < rk_topology_node_count(s.topology); i++) {
        double w = rk_topology_node(s.topology, i)->weight;
        assert_true(w >= 1 && w <= 256 && w == nearbyint(w)); /* whole weights, within HAProxy's */
    }
    rk_topology_free(s.topology);
    rk_load_free(l);
    rk_ring_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(balances_within_the_budget),
        cmocka_unit_test(a_small_budget_stops_it),
        cmocka_unit_test(refusals),
        cmocka_unit_test(a_scheme_bound_is_a_step_not_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
