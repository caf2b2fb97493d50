/* test_rollout.c — a change in steps (docs/MIGRATE.md, "Rollouts"): the ramps, their totals against
 * the one-shot plan, the budget, the digest, and the refusals. */
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

static const char *const ids[] = {"n0", "n1", "n2", "n3", "n4",  "n5",
                                  "n6", "n7", "n8", "n9", "n10", "n11"};
static const char *const addrs[] = {"a:0", "a:1", "a:2", "a:3", "a:4",  "a:5",
                                    "a:6", "a:7", "a:8", "a:9", "a:10", "a:11"};

/* Nodes n0 .. n11 with these weights, a negative weight leaving the node out; vnode_factor 40
 * (0: the ketama scheme). */
static rk_topology *topo(rk_hash_alg hash, uint32_t vf, const double w[12])
{
    rk_node nodes[12];
    size_t n = 0;
    for (size_t i = 0; i < 12; i++)
        if (w[i] >= 0)
            nodes[n++] = (rk_node){ids[i], addrs[i], w[i]};
    rk_error err = {0};
    rk_topology *t = vf ? rk_topology_new(hash, vf, nodes, n, NULL, &err)
                        : rk_topology_new_ketama(hash, NULL, nodes, n, NULL, &err);
    if (!t)
        fail_msg("topology refused: %s", err.message);
    return t;
}

static const rk_hash_alg algs[] = {RK_HASH_FNV1A_32, RK_HASH_MD5_32, RK_HASH_XXH3_64};
static const double ten[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1};

/* rk_rollout_new over the rings of `a` and `b`, built here and freed (the rollout keeps the
 * topologies it needs). */
static rk_rollout *rollout_of(const rk_topology *a, const rk_topology *b, rk_rollout_options opt,
                              rk_error *err)
{
    rk_ring *ra = rk_ring_build((rk_topology *)a, err);
    rk_ring *rb = ra ? rk_ring_build((rk_topology *)b, err) : NULL;
    rk_rollout *r = rb ? rk_rollout_new(ra, rb, &opt, err) : NULL;
    rk_ring_free(ra);
    rk_ring_free(rb);
    return r;
}

static rk_rollout *rollout(const rk_topology *a, const rk_topology *b, uint32_t steps,
                           double budget)
{
    rk_rollout_options opt = {.steps = steps, .max_step_moved = budget, .from_version = 7};
    rk_error err = {0};
    rk_rollout *r = rollout_of(a, b, opt, &err);
    if (!r)
        fail_msg("rollout refused: %s", err.message);
    return r;
}

/* The steps chain from the start to the target, and their sum is total_moved. */
static void check_chain(const rk_rollout *r, const rk_topology *b)
{
    size_t n = rk_rollout_step_count(r);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += rk_plan_moved_fraction(rk_rollout_step_plan(r, i));
    assert_true(fabs(sum - rk_rollout_total_moved(r)) < 1e-12);
    assert_ptr_equal(rk_rollout_step_topology(r, n - 1), b);
    assert_null(rk_rollout_step_topology(r, n));
}

/* Draining n3, adding n10, and replacing n3 by n10: in 5 steps, the steps move what one shot
 * moves (to 1e-9). */
static void test_one_node_ramps(void **state)
{
    (void)state;
    double drain[12], add[12], replace[12];
    memcpy(drain, ten, sizeof ten), memcpy(add, ten, sizeof ten);
    drain[3] = -1, add[10] = 1;
    memcpy(replace, add, sizeof add);
    replace[3] = -1;
    const double *targets[] = {drain, add, replace};
    for (size_t h = 0; h < 3; h++) {
        for (size_t c = 0; c < 3; c++) {
            rk_topology *a = topo(algs[h], 40, ten), *b = topo(algs[h], 40, targets[c]);
            rk_rollout *r = rollout(a, b, 5, 0);
            assert_int_equal(rk_rollout_step_count(r), 5);
            check_chain(r, b);
            double one = rk_rollout_one_shot_moved(r);
            if (fabs(rk_rollout_total_moved(r) - one) > 1e-9)
                fail_msg("hash %zu case %zu: steps move %.15f, one shot %.15f", h, c,
                         rk_rollout_total_moved(r), one);
            for (size_t i = 0; i < 5; i++) /* uneven with 40 points a node, never empty */
                assert_true(rk_plan_moved_fraction(rk_rollout_step_plan(r, i)) > 0);
            rk_rollout_free(r);
            rk_topology_free(a);
            rk_topology_free(b);
        }
    }
}

/* With a budget, no step moves more, and one step fewer than found would need more. */
static void test_budget(void **state)
{
    (void)state;
    double add[12];
    memcpy(add, ten, sizeof ten);
    add[10] = 2, add[11] = 1;
    rk_topology *a = topo(RK_HASH_XXH3_64, 40, ten), *b = topo(RK_HASH_XXH3_64, 40, add);
    rk_rollout *r = rollout(a, b, 0, 0.03);
    size_t n = rk_rollout_step_count(r);
    assert_true(n >= (size_t)ceil(rk_rollout_one_shot_moved(r) / 0.03));
    for (size_t i = 0; i < n; i++)
        assert_true(rk_plan_moved_fraction(rk_rollout_step_plan(r, i)) <= 0.03 + 1e-12);
    check_chain(r, b);
    /* two nodes ramping together: a key can move twice, never less than once */
    assert_true(rk_rollout_total_moved(r) >= rk_rollout_one_shot_moved(r) - 1e-9);
    rk_rollout_free(r);
    rk_error err = {0};
    assert_null(rollout_of(a, b, (rk_rollout_options){.max_step_moved = 1e-6}, &err));
    assert_int_equal(err.code, RK_ETOOBIG);
    assert_string_equal(err.field, "max_step_moved");
    rk_topology_free(a);
    rk_topology_free(b);
}

/* The digest names the steps and the starting version, and the document says what the review
 * shows. */
static void test_digest_and_document(void **state)
{
    (void)state;
    double drain[12];
    memcpy(drain, ten, sizeof ten);
    drain[3] = 0;
    rk_topology *a = topo(RK_HASH_XXH3_64, 40, ten), *b = topo(RK_HASH_XXH3_64, 40, drain);
    rk_rollout *r1 = rollout(a, b, 4, 0), *r2 = rollout(a, b, 4, 0), *r3 = rollout(a, b, 5, 0);
    rk_error err = {0};
    rk_rollout *r4 = rollout_of(a, b, (rk_rollout_options){.steps = 4, .from_version = 8}, &err);
    assert_non_null(r4);
    assert_string_equal(rk_rollout_digest(r1), rk_rollout_digest(r2));
    assert_string_not_equal(rk_rollout_digest(r1), rk_rollout_digest(r3));
    assert_string_not_equal(rk_rollout_digest(r1), rk_rollout_digest(r4));
    assert_int_equal(strlen(rk_rollout_digest(r1)), 16);
    json_t *doc = rk_rollout_to_json(r1);
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "review");
    assert_string_equal(json_string_value(json_object_get(doc, "digest")), rk_rollout_digest(r1));
    json_t *steps = json_object_get(doc, "steps"), *s2 = json_array_get(steps, 1);
    assert_int_equal(json_array_size(steps), 4);
    assert_int_equal(json_integer_value(json_object_get(s2, "n")), 2);
    assert_true(json_is_null(json_object_get(s2, "version")));
    json_t *change = json_array_get(json_object_get(s2, "changes"), 0);
    assert_string_equal(json_string_value(json_object_get(change, "id")), "n3");
    assert_true(json_number_value(json_object_get(change, "weight_before")) == 0.75);
    assert_true(json_number_value(json_object_get(change, "weight_after")) == 0.5);
    json_t *n3 = json_array_get(json_object_get(json_object_get(s2, "topology"), "nodes"), 3);
    assert_true(json_real_value(json_object_get(n3, "weight")) == 0.5);
    json_decref(doc);
    rk_rollout_free(r1), rk_rollout_free(r2), rk_rollout_free(r3), rk_rollout_free(r4);
    rk_topology_free(a);
    rk_topology_free(b);
}

static void expect_refusal(const rk_topology *a, const rk_topology *b, rk_rollout_options opt,
                           int code, const char *field)
{
    rk_error err = {0};
    assert_null(rollout_of(a, b, opt, &err));
    assert_int_equal(err.code, code);
    assert_string_equal(err.field, field);
    assert_true(strlen(err.message) > 20);
}

static void test_refusals(void **state)
{
    (void)state;
    double small[12];
    memcpy(small, ten, sizeof ten);
    small[10] = 0.05; /* two points */
    rk_topology *a = topo(RK_HASH_XXH3_64, 40, ten), *b = topo(RK_HASH_XXH3_64, 40, small);
    rk_topology *other_hash = topo(RK_HASH_MD5_32, 40, small);
    rk_topology *other_vf = topo(RK_HASH_XXH3_64, 80, small);
    expect_refusal(a, other_hash, (rk_rollout_options){.steps = 2}, RK_EHASHMISMATCH, "target");
    expect_refusal(a, other_vf, (rk_rollout_options){.steps = 2}, RK_EHASHMISMATCH, "target");
    expect_refusal(a, b, (rk_rollout_options){.steps = 3}, RK_EINVAL, "steps");
    expect_refusal(a, b, (rk_rollout_options){0}, RK_EINVAL, "steps");
    expect_refusal(a, b, (rk_rollout_options){.steps = 2, .max_step_moved = 0.1}, RK_EINVAL,
                   "steps");
    expect_refusal(a, b, (rk_rollout_options){.steps = RK_ROLLOUT_MAX_STEPS + 1}, RK_EINVAL,
                   "steps");
    expect_refusal(a, b, (rk_rollout_options){.max_step_moved = 1.5}, RK_EINVAL, "max_step_moved");
    /* ten nodes of 40 points and one of 1: a 2-step review builds one ring of 401 points */
    expect_refusal(a, b, (rk_rollout_options){.steps = 2, .max_points_built = 400}, RK_ETOOBIG,
                   "steps");
    expect_refusal(a, b, (rk_rollout_options){.max_step_moved = 0.001, .max_points_built = 400},
                   RK_ETOOBIG, "max_step_moved");
    rk_rollout_options opt = {.steps = 2, .max_points_built = 401};
    rk_error err = {0};
    rk_rollout *r = rollout_of(a, b, opt, &err); /* exactly the bound */
    assert_non_null(r);
    rk_rollout_free(r);
    r = rollout(a, b, 2, 0); /* one point a step */
    check_chain(r, b);
    rk_rollout_free(r);
    rk_topology_free(a), rk_topology_free(b);
    rk_topology_free(other_hash), rk_topology_free(other_vf);
}

/* Under ketama a step changes every node's point count, so a ramp moves more than one shot. */
static void test_ketama_ramp_moves_more(void **state)
{
    (void)state;
    double heavy[12];
    memcpy(heavy, ten, sizeof ten);
    heavy[3] = 4;
    rk_topology *a = topo(RK_HASH_KETAMA_MD5, 0, ten), *b = topo(RK_HASH_KETAMA_MD5, 0, heavy);
    rk_rollout *r = rollout(a, b, 3, 0);
    assert_int_equal(rk_rollout_step_count(r), 3);
    check_chain(r, b);
    assert_true(rk_rollout_total_moved(r) > rk_rollout_one_shot_moved(r));
    assert_true(rk_topology_node(rk_rollout_step_topology(r, 0), 3)->weight == 2);
    rk_rollout_free(r);
    rk_topology_free(a);
    rk_topology_free(b);
}

/* The ring of the ten nodes with node `who` of weight `w` (absent below 0). */
static rk_ring *ramp_ring(rk_hash_alg hash, int who, double w)
{
    double weights[12];
    memcpy(weights, ten, sizeof ten);
    weights[who] = w;
    rk_topology *t = topo(hash, 40, weights);
    rk_error err = {0};
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    if (!r)
        fail_msg("ramp ring refused: %s", err.message);
    return r;
}

static double moved(const rk_ring *a, const rk_ring *b)
{
    rk_error err = {0};
    rk_plan *p = rk_plan_new(a, b, NULL, &err);
    if (!p)
        fail_msg("ramp plan refused: %s", err.message);
    double f = rk_plan_moved_fraction(p);
    rk_plan_free(p);
    return f;
}

/* docs/RING.md, "Weights in steps": ramping one node's weight in steps of 1/vnode_factor moves in
 * total what the one-shot change moves (to 1e-9), adding the new node n10 (absent, then 0.2 .. 1)
 * or draining n3 (1, 0.8 .. 0, then removed), in 5 steps and in 40 of one point each. */
static void test_ramps(void **state)
{
    (void)state;
    static const struct {
        int who;
        double from, to; /* weights; -1: absent */
    } cases[] = {{10, -1, 1}, {3, 1, -1}, {10, 0, 1}, {3, 1, 0}};
    for (size_t h = 0; h < 3; h++) {
        for (size_t c = 0; c < 4; c++) {
            for (int steps = 5; steps <= 40; steps += 35) {
                int who = cases[c].who;
                double a = cases[c].from < 0 ? 0 : cases[c].from;
                double b = cases[c].to < 0 ? 0 : cases[c].to;
                rk_ring *first = ramp_ring(algs[h], who, cases[c].from);
                rk_ring *last = ramp_ring(algs[h], who, cases[c].to);
                rk_ring *prev = ramp_ring(algs[h], who, cases[c].from);
                double total = 0;
                for (int k = 1; k <= steps; k++) {
                    double w = a + (b - a) * k / steps; /* a multiple of 1/40 at 5 and 40 steps */
                    rk_ring *next = k == steps ? ramp_ring(algs[h], who, cases[c].to)
                                               : ramp_ring(algs[h], who, w);
                    total += moved(prev, next);
                    rk_ring_free(prev);
                    prev = next;
                }
                double one_shot = moved(first, last);
                if (fabs(total - one_shot) > 1e-9)
                    fail_msg("hash %zu case %zu, %d steps: the steps move %.15f, one shot %.15f", h,
                             c, steps, total, one_shot);
                assert_true(one_shot > 0.01); /* something moved */
                rk_ring_free(prev);
                rk_ring_free(first);
                rk_ring_free(last);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ramps),    cmocka_unit_test(test_one_node_ramps),
        cmocka_unit_test(test_budget),   cmocka_unit_test(test_digest_and_document),
        cmocka_unit_test(test_refusals), cmocka_unit_test(test_ketama_ramp_moves_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
