/* test_load.c — a load over the ring (load.c, load_json.c) and plans weighed by it (plan_load.c):
 * exact figures on small rings, the JSON profile read back and refused field by field, and random
 * pairs of rings and loads whose totals must add up. */
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

#define ROUNDS 40 /* random pairs of rings and loads in the conservation check */

/* Two rings, the plan between them, and room for its nodes' load. */
typedef struct {
    rk_ring *a, *b;
    rk_plan *p;
    size_t n;                 /* plan nodes */
    rk_plan_node_load *nodes; /* per plan node, filled by weigh() */
    rk_plan_load_figures f;
} pair;

static pair pair_of(const rt_spec *sa, const rt_spec *sb)
{
    pair x;
    memset(&x, 0, sizeof x);
    x.a = rt_ring(sa), x.b = rt_ring(sb);
    rk_error err = {0};
    x.p = rk_plan_new(x.a, x.b, NULL, &err);
    if (!x.p)
        fail_msg("plan refused: %s", err.message);
    rk_plan_nodes(x.p, &x.n);
    x.nodes = calloc(x.n, sizeof *x.nodes);
    assert_non_null(x.nodes);
    return x;
}

static void pair_free(pair *x)
{
    rk_plan_free(x->p), rk_ring_free(x->a), rk_ring_free(x->b), free(x->nodes);
}

static void weigh(pair *x, const rk_load *l)
{
    rk_error err = {0};
    if (rk_plan_load(x->p, x->b, l, &x->f, x->nodes, &err) != RK_OK)
        fail_msg("rk_plan_load: %s", err.message);
}

/* got == want but for rounding in sums of about `scale` */
static void assert_within(double got, double want, double scale)
{
    if (!(fabs(got - want) <= 1e-9 * fmax(1.0, fmax(fabs(want), scale))))
        fail_msg("got %.17g, want %.17g", got, want);
}

static void assert_near(double got, double want)
{
    assert_within(got, want, 0);
}

static rk_load *load_of(unsigned bits, size_t bins, double rate)
{
    rk_error err = {0};
    rk_load *l = rk_load_new(bits, bins, rate, &err);
    if (!l)
        fail_msg("load refused: %s", err.message);
    return l;
}

/* The first hash value of bin b of a load of `bins` bins over 2^bits. */
static uint64_t bin_start(unsigned bits, size_t bins, size_t b)
{
    return (uint64_t)(ldexp((double)b, (int)bits) / (double)bins);
}

/* Every bin of l gets `keys`, 10 * keys bytes and 2 * keys requests. */
static void fill(rk_load *l, double keys)
{
    for (size_t b = 0; b < rk_load_bins(l); b++)
        assert_int_equal(rk_load_add(l, bin_start(rk_load_bits(l), rk_load_bins(l), b), keys,
                                     10 * keys, 2 * keys, NULL),
                         RK_OK);
}

/* Three nodes, then a fourth: the plan moves about a quarter. */
static void grow(rt_spec *a, rt_spec *b, rk_hash_alg hash, uint32_t vf)
{
    memset(a, 0, sizeof *a);
    a->hash = hash, a->vnode_factor = vf;
    rt_add_named(a, "a", 1), rt_add_named(a, "b", 1), rt_add_named(a, "c", 1);
    *b = *a;
    rt_add_named(b, "d", 1);
}

/* A uniform load moves exactly the plan's moved fraction, spread as the shares, and balances by
 * bytes as the hash space does; at a sample rate of 1/4 every figure is four times the sample. */
static void uniform_moves_the_moved_fraction(void **state)
{
    (void)state;
    static const rk_hash_alg hashes[] = {RK_HASH_FNV1A_32, RK_HASH_XXH3_64};
    for (size_t h = 0; h < 2; h++) {
        rt_spec sa, sb;
        grow(&sa, &sb, hashes[h], 100);
        pair x = pair_of(&sa, &sb);
        rk_load *l = load_of(rk_hash_bits(hashes[h]), 1024, 0.25);
        fill(l, 3);
        weigh(&x, l);
        double moved = rk_plan_moved_fraction(x.p), bmax, bmin, amax, amin;
        assert_near(x.f.total.keys, 4 * 3 * 1024);
        assert_near(x.f.total.bytes, 4 * 30 * 1024);
        assert_near(x.f.moving.keys / x.f.total.keys, moved);
        assert_near(x.f.moving.requests / x.f.total.requests, moved);
        size_t n;
        const rk_plan_node *pn = rk_plan_nodes(x.p, &n);
        for (size_t k = 0; k < n; k++) {
            assert_near(x.nodes[k].after.bytes / x.f.total.bytes, pn[k].share_after);
            assert_near(x.nodes[k].before.bytes / x.f.total.bytes, pn[k].share_before);
            assert_near(x.nodes[k].lost.keys / x.f.total.keys, pn[k].lost);
        }
        rk_plan_balance(x.p, &bmax, &bmin, &amax, &amin);
        assert_near(x.f.bytes_balance_after, amax);
        assert_near(x.f.bytes_balance_before, bmax);
        assert_near(x.f.requests_balance_after, amax);
        rk_load_free(l);
        pair_free(&x);
    }
}

/* The figures as a document: each figure of rk_plan_load under its name, a node per plan node in
 * its order; the requests' figures only when the load has requests. */
static void figures_as_json(void **state)
{
    (void)state;
    rt_spec sa, sb;
    grow(&sa, &sb, RK_HASH_XXH3_64, 100);
    pair x = pair_of(&sa, &sb);
    rk_load *l = load_of(64, 1024, 0.25);
    fill(l, 3);
    weigh(&x, l);
    json_t *d = rk_plan_load_to_json(x.p, &x.f, x.nodes);
    assert_non_null(d);
    assert_near(json_real_value(json_object_get(d, "moving_bytes")), x.f.moving.bytes);
    assert_near(json_real_value(json_object_get(d, "bytes_balance_after")),
                x.f.bytes_balance_after);
    assert_near(json_real_value(json_object_get(d, "requests")), x.f.total.requests);
    const json_t *nodes = json_object_get(d, "nodes");
    assert_int_equal(json_array_size(nodes), x.n);
    size_t n;
    const rk_plan_node *pn = rk_plan_nodes(x.p, &n);
    for (size_t k = 0; k < n; k++) {
        const json_t *nd = json_array_get(nodes, k);
        assert_string_equal(json_string_value(json_object_get(nd, "id")), pn[k].id);
        assert_near(json_real_value(json_object_get(nd, "bytes_lost")), x.nodes[k].lost.bytes);
        assert_near(json_real_value(json_object_get(nd, "keys_after")), x.nodes[k].after.keys);
    }
    json_decref(d);
    rk_load_free(l);
    /* bytes alone, and no node list: no requests' figures, no "nodes" */
    l = load_of(64, 1024, 1);
    rk_error err = {0};
    assert_int_equal(rk_load_add(l, 1, 1, 100, 0, &err), RK_OK);
    weigh(&x, l);
    d = rk_plan_load_to_json(x.p, &x.f, NULL);
    assert_non_null(d);
    assert_null(json_object_get(d, "requests"));
    assert_null(json_object_get(d, "nodes"));
    assert_near(json_real_value(json_object_get(d, "bytes")), 100);
    json_decref(d);
    rk_load_free(l);
    pair_free(&x);
}

/* A profile of measure: the same figures as the load alone, what it says of itself with its age,
 * and a profile of another hash refused naming it. */
static void profile_as_json(void **state)
{
    (void)state;
    rt_spec sa, sb;
    grow(&sa, &sb, RK_HASH_XXH3_64, 100);
    pair x = pair_of(&sa, &sb);
    rk_load *l = load_of(64, 1024, 0.25);
    fill(l, 3);
    weigh(&x, l);
    json_t *profile = json_pack("{s:i, s:s, s:s, s:I, s:f, s:o}", "profile", 1, "hash", "xxh3_64",
                                "cluster", "c", "measured_epoch_s", (json_int_t)1000, "sample_rate",
                                0.25, "load", rk_load_to_json(l));
    assert_non_null(profile);
    json_t *d = NULL;
    rk_error err = {0};
    assert_int_equal(rk_plan_profile_json(x.p, x.b, profile, 1600, &d, &err), RK_OK);
    assert_near(json_real_value(json_object_get(d, "moving_bytes")), x.f.moving.bytes);
    const json_t *about = json_object_get(d, "profile");
    assert_string_equal(json_string_value(json_object_get(about, "cluster")), "c");
    assert_int_equal(json_integer_value(json_object_get(about, "age_s")), 600);
    assert_null(json_object_get(about, "load"));
    json_decref(d);
    json_object_set_new(profile, "hash", json_string("fnv1a_64"));
    assert_int_equal(rk_plan_profile_json(x.p, x.b, profile, 1600, &d, &err), RK_EHASHMISMATCH);
    assert_null(d);
    assert_string_equal(err.field, "hash");
    /* a load of another bin space is refused naming its field */
    json_object_set_new(profile, "hash", json_string("xxh3_64"));
    json_object_set_new(json_object_get(profile, "load"), "bins", json_integer(3));
    assert_int_equal(rk_plan_profile_json(x.p, x.b, profile, 1600, &d, &err), RK_EINVAL);
    assert_string_equal(err.field, "bins");
    json_decref(profile);
    rk_load_free(l);
    pair_free(&x);
}

/* All the load in one bin inside a moving arc: all of it moves, from that arc's node to its new
 * one, and the new owner holds all the bytes: 1 / its ideal share, whatever the hash space says. */
static void hot_bin_moves(void **state)
{
    (void)state;
    rt_spec sa, sb;
    grow(&sa, &sb, RK_HASH_FNV1A_32, 10);
    pair x = pair_of(&sa, &sb);
    size_t na, bins = 65536, b = 0;
    const rk_arc *arcs = rk_plan_arcs(x.p, &na), *hot = NULL;
    for (size_t k = 0; k < na && !hot; k++) {
        b = (size_t)(arcs[k].first >> 16) + 1;
        if (b < bins && ((uint64_t)(b + 1) << 16) - 1 <= arcs[k].last)
            hot = &arcs[k];
    }
    assert_non_null(hot);
    rk_load *l = load_of(32, bins, 1);
    assert_int_equal(rk_load_add(l, (uint64_t)b << 16 | 77, 5, 1000, 40, NULL), RK_OK);
    weigh(&x, l);
    assert_near(x.f.moving.bytes, 1000);
    assert_near(x.f.moving.keys, 5);
    assert_near(x.nodes[hot->from].lost.bytes, 1000);
    assert_near(x.nodes[hot->to].gained.requests, 40);
    assert_near(x.nodes[hot->to].after.bytes, 1000);
    assert_near(x.nodes[hot->from].before.bytes, 1000);
    size_t n;
    const rk_plan_node *pn = rk_plan_nodes(x.p, &n);
    double bmax, bmin, amax, amin;
    rk_plan_balance(x.p, &bmax, &bmin, &amax, &amin);
    assert_near(x.f.bytes_balance_after, 1 / pn[hot->to].ideal_after);
    assert_near(x.f.bytes_balance_before, 1 / pn[hot->from].ideal_before);
    assert_true(x.f.bytes_balance_after > amax + 1); /* 4x by bytes, nearer 1x by hash space */
    rk_load_free(l);
    pair_free(&x);
}

/* Bins that arcs cover in part count pro rata: one bin weighs by the moved fraction, two bins by
 * each arc's halves, summed here arc by arc. */
static void bins_count_pro_rata(void **state)
{
    (void)state;
    rt_spec sa, sb;
    grow(&sa, &sb, RK_HASH_XXH3_64, 7);
    pair x = pair_of(&sa, &sb);
    rk_load *one = load_of(64, 1, 1), *two = load_of(64, 2, 1);
    assert_int_equal(rk_load_add(one, UINT64_MAX, 1, 800, 0, NULL), RK_OK);
    assert_int_equal(rk_load_add(two, 5, 0, 100, 0, NULL), RK_OK);
    assert_int_equal(rk_load_add(two, UINT64_MAX - 5, 0, 700, 0, NULL), RK_OK);
    weigh(&x, one);
    assert_near(x.f.moving.bytes, 800 * rk_plan_moved_fraction(x.p));
    assert_near(x.f.requests_balance_after, 0); /* no requests: nothing to balance */
    weigh(&x, two);
    size_t na;
    const rk_arc *arcs = rk_plan_arcs(x.p, &na);
    double want = 0, half = ldexp(1, 63), space = ldexp(1, 64);
    for (size_t k = 0; k < na; k++) {
        double lo = (double)arcs[k].first, hi = (double)arcs[k].last + 1;
        want += 100 * fmax(0, fmin(hi, half) - lo) / half;
        want += 700 * fmax(0, hi - fmax(lo, half)) / (space - half);
    }
    assert_near(x.f.moving.bytes, want);
    rk_load_free(one), rk_load_free(two);
    pair_free(&x);
}

/* Random pairs of rings and random loads: what moves is what nodes lose and what they gain; the
 * load after and before each sum to the total; staying (after less gained) plus moving is the
 * total; and the load before is the reverse plan's load after. The ring rebuilt from the plan gives
 * the same figures as the ring given. */
static void totals_are_conserved(void **state)
{
    (void)state;
    uint64_t rng = 55;
    for (int round = 0; round < ROUNDS; round++) {
        rt_spec sa, sb;
        rk_hash_alg hash = round % 2 ? RK_HASH_XXH3_64 : RK_HASH_MD5_32;
        rt_random(&sa, &rng, hash, 12, 5, 50);
        sb = sa;
        rt_mutate(&sb, &rng, 5);
        pair x = pair_of(&sa, &sb), back = pair_of(&sb, &sa);
        rk_load *l = load_of(rk_hash_bits(hash), (size_t)1 << rt_below(&rng, 17), 0.5);
        for (int s = 0; s < 300; s++)
            assert_int_equal(rk_load_add(l, rt_next(&rng) & rt_hash_max(hash),
                                         (double)rt_below(&rng, 9), (double)rt_below(&rng, 1 << 20),
                                         0.25 * (double)rt_below(&rng, 100), NULL),
                             RK_OK);
        weigh(&x, l);
        weigh(&back, l);
        rk_load_amount after, before, lost, gained, staying;
        memset(&after, 0, sizeof after), before = lost = gained = staying = after;
        for (size_t k = 0; k < x.n; k++) {
            after.bytes += x.nodes[k].after.bytes, before.bytes += x.nodes[k].before.bytes;
            lost.bytes += x.nodes[k].lost.bytes, gained.bytes += x.nodes[k].gained.bytes;
            staying.bytes += x.nodes[k].after.bytes - x.nodes[k].gained.bytes;
            assert_within(x.nodes[k].before.bytes, back.nodes[k].after.bytes, x.f.total.bytes);
            assert_within(x.nodes[k].before.keys, back.nodes[k].after.keys, x.f.total.keys);
        }
        assert_near(after.bytes, x.f.total.bytes);
        assert_near(before.bytes, x.f.total.bytes);
        assert_near(lost.bytes, x.f.moving.bytes);
        assert_near(gained.bytes, x.f.moving.bytes);
        assert_near(staying.bytes + x.f.moving.bytes, x.f.total.bytes);
        assert_near(x.f.moving.requests, back.f.moving.requests);
        rk_plan_load_figures rebuilt;
        assert_int_equal(rk_plan_load(x.p, NULL, l, &rebuilt, NULL, NULL), RK_OK);
        assert_memory_equal(&rebuilt, &x.f, sizeof rebuilt);
        rk_load_free(l);
        pair_free(&x), pair_free(&back);
    }
}

/* A load over another space, and a ring not the plan's, are refused by name. */
static void plan_load_refusals(void **state)
{
    (void)state;
    rt_spec sa, sb;
    grow(&sa, &sb, RK_HASH_FNV1A_32, 10);
    pair x = pair_of(&sa, &sb);
    rk_load *wide = load_of(64, 4, 1), *l = load_of(32, 4, 1);
    rk_error err = {0};
    assert_int_equal(rk_plan_load(x.p, x.b, wide, &x.f, NULL, &err), RK_EINVAL);
    assert_string_equal(err.field, "bits");
    assert_int_equal(rk_plan_load(x.p, x.a, l, &x.f, NULL, &err), RK_EINVAL);
    assert_string_equal(err.field, "ring");
    rk_load_free(wide), rk_load_free(l);
    pair_free(&x);
}

/* rk_load_new and rk_load_add refuse bad values, naming them, and add nothing. */
static void load_refusals(void **state)
{
    (void)state;
    static const struct {
        unsigned bits;
        size_t bins;
        double rate;
        const char *field;
    } bad[] = {{16, 4, 1, "bits"},         {32, 0, 1, "bins"},        {32, 3, 1, "bins"},
               {64, 131072, 1, "bins"},    {32, 4, 0, "sample_rate"}, {32, 4, 1.5, "sample_rate"},
               {32, 4, NAN, "sample_rate"}};
    rk_error err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(rk_load_new(bad[i].bits, bad[i].bins, bad[i].rate, &err));
        assert_int_equal(err.code, RK_EINVAL);
        assert_string_equal(err.field, bad[i].field);
    }
    rk_load *l = load_of(32, 4, 1);
    assert_int_equal(rk_load_add(l, UINT64_C(1) << 32, 1, 1, 1, &err), RK_EINVAL);
    assert_string_equal(err.field, "hash");
    assert_int_equal(rk_load_add(l, 0, NAN, 1, 1, &err), RK_EINVAL);
    assert_string_equal(err.field, "keys");
    assert_int_equal(rk_load_add(l, 0, 1, -1, 1, &err), RK_EINVAL);
    assert_string_equal(err.field, "bytes");
    assert_int_equal(rk_load_add(l, 0, 1, 1, INFINITY, &err), RK_EINVAL);
    assert_string_equal(err.field, "requests");
    rk_load_amount t = rk_load_total(l);
    assert_true(t.keys == 0 && t.bytes == 0 && t.requests == 0);
    rk_load_free(l);
}

/* A profile written as JSON text reads back bin for bin, reals and all. */
static void json_round_trip(void **state)
{
    (void)state;
    uint64_t rng = 7;
    rk_load *l = load_of(64, 256, 0.01);
    for (int s = 0; s < 1000; s++)
        assert_int_equal(rk_load_add(l, rt_next(&rng), 1, (double)rt_below(&rng, 1 << 30),
                                     (double)rt_below(&rng, 1000) / 7.0, NULL),
                         RK_OK);
    json_t *doc = rk_load_to_json(l);
    char *text = rk_json_dumps(doc, JSON_COMPACT);
    json_t *again = json_loads(text, 0, NULL);
    rk_error err = {0};
    rk_load *back = rk_load_from_json(again, &err);
    if (!back)
        fail_msg("profile refused: %s", err.message);
    assert_int_equal(rk_load_bits(back), 64);
    assert_int_equal(rk_load_bins(back), 256);
    assert_true(rk_load_sample_rate(back) == 0.01);
    for (size_t b = 0; b < 256; b++) {
        rk_load_amount x = rk_load_bin(l, b), y = rk_load_bin(back, b);
        assert_memory_equal(&x, &y, sizeof x);
    }
    json_decref(doc), json_decref(again), free(text);
    rk_load_free(l), rk_load_free(back);
}

/* Profiles refused, each naming its field. */
static void json_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *doc;
        const char *field;
    } bad[] = {
        {"[]", ""},
        {"{\"bits\":32,\"bins\":1,\"sample_rate\":1,\"keys\":[0],\"bytes\":[0],\"requests\":[0],"
         "\"when\":1}",
         "when"},
        {"{\"bits\":16,\"bins\":1,\"sample_rate\":1,\"keys\":[0],\"bytes\":[0],\"requests\":[0]}",
         "bits"},
        {"{\"bins\":1,\"sample_rate\":1,\"keys\":[0],\"bytes\":[0],\"requests\":[0]}", "bits"},
        {"{\"bits\":32,\"bins\":3,\"sample_rate\":1,\"keys\":[0],\"bytes\":[0],\"requests\":[0]}",
         "bins"},
        {"{\"bits\":32,\"bins\":131072,\"sample_rate\":1}", "bins"},
        {"{\"bits\":32,\"bins\":1,\"sample_rate\":0,\"keys\":[0],\"bytes\":[0],\"requests\":[0]}",
         "sample_rate"},
        {"{\"bits\":32,\"bins\":1,\"sample_rate\":\"1\",\"keys\":[0],\"bytes\":[0],"
         "\"requests\":[0]}",
         "sample_rate"},
        {"{\"bits\":32,\"bins\":2,\"sample_rate\":1,\"keys\":[0],\"bytes\":[0,0],"
         "\"requests\":[0,0]}",
         "keys"},
        {"{\"bits\":32,\"bins\":2,\"sample_rate\":1,\"keys\":[0,0],\"bytes\":[0,-1],"
         "\"requests\":[0,0]}",
         "bytes[1]"},
        {"{\"bits\":32,\"bins\":2,\"sample_rate\":1,\"keys\":[0,0],\"bytes\":[0,0],"
         "\"requests\":[\"x\",0]}",
         "requests[0]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *doc = json_loads(bad[i].doc, 0, NULL);
        rk_error err = {0};
        assert_non_null(doc);
        assert_null(rk_load_from_json(doc, &err));
        assert_int_equal(err.code, RK_EINVAL);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("case %zu: field \"%s\", want \"%s\" (%s)", i, err.field, bad[i].field,
                     err.message);
        json_decref(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uniform_moves_the_moved_fraction),
        cmocka_unit_test(hot_bin_moves),
        cmocka_unit_test(bins_count_pro_rata),
        cmocka_unit_test(totals_are_conserved),
        cmocka_unit_test(plan_load_refusals),
        cmocka_unit_test(load_refusals),
        cmocka_unit_test(json_round_trip),
        cmocka_unit_test(json_refusals),
        cmocka_unit_test(figures_as_json),
        cmocka_unit_test(profile_as_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
