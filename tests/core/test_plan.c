/* test_plan.c — the migration plan of docs/RING.md on seeded random pairs of topologies: its arcs
 * against key-by-key lookups in both rings, its sums, its steps, and its JSON and text forms. */
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

#include "internal.h" /* rki_plan_steps, to count its work */
#include "ringkeeper.h"
#include "random_topology.h"

#define PAIRS     12     /* random pairs of topologies per hash */
#define KEYS      100000 /* random keys checked on the first pairs of each hash */
#define FEW_KEYS  2000   /* on the other pairs, besides every arc and point boundary */
#define KEY_PAIRS 2      /* pairs per hash that get KEYS */
#define EPS       1e-12

static const rk_hash_alg algs[] = {RK_HASH_FNV1A_32, RK_HASH_MD5_32, RK_HASH_XXH3_64};
static const double limits[] = {0.01, 0.05, 1.0};

/* Two rings and the plan between them (with `opt`). */
typedef struct {
    rk_ring *a, *b;
    rk_plan *p;
    const char *what; /* names the case in failures */
} pair;

static pair pair_of(const rt_spec *sa, const rt_spec *sb, const rk_plan_options *opt,
                    const char *what)
{
    pair x = {rt_ring(sa), rt_ring(sb), NULL, what};
    rk_error err = {0};
    x.p = rk_plan_new(x.a, x.b, opt, &err);
    if (!x.p)
        fail_msg("%s: plan refused: %s", what, err.message);
    return x;
}

static void pair_free(pair *x)
{
    rk_plan_free(x->p);
    rk_ring_free(x->a);
    rk_ring_free(x->b);
}

static uint64_t hash_max(const pair *x)
{
    return rt_hash_max(rk_topology_hash(rk_ring_topology(x->a)));
}

static double space_of(const pair *x)
{
    return (double)hash_max(x) + 1.0;
}

/* The arc holding h, or NULL: binary search over sorted, disjoint arcs. */
static const rk_arc *arc_at(const rk_arc *arcs, size_t n, uint64_t h)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (arcs[mid].last < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && arcs[lo].first <= h ? &arcs[lo] : NULL;
}

static const char *owner_id(const rk_ring *r, uint64_t h)
{
    return rk_topology_node(rk_ring_topology(r), rk_ring_lookup_hash(r, h))->id;
}

/* h changes owner exactly when an arc holds it, and that arc names both owners. */
static void check_hash(const pair *x, uint64_t h)
{
    size_t n, nn;
    const rk_arc *arcs = rk_plan_arcs(x->p, &n), *arc = arc_at(arcs, n, h);
    const rk_plan_node *nodes = rk_plan_nodes(x->p, &nn);
    const char *from = owner_id(x->a, h), *to = owner_id(x->b, h);
    const char *arc_from = arc ? nodes[arc->from].id : "-", *arc_to = arc ? nodes[arc->to].id : "-";
    if ((strcmp(from, to) != 0) != (arc != NULL) || (arc && strcmp(arc_from, from)) ||
        (arc && strcmp(arc_to, to)))
        fail_msg("%s: hash %llx moves %s -> %s, the plan's arc there: %s -> %s", x->what,
                 (unsigned long long)h, from, to, arc_from, arc_to);
}

/* A hash value and its two neighbours, where they exist. */
static void check_around(const pair *x, uint64_t h)
{
    check_hash(x, h);
    if (h > 0)
        check_hash(x, h - 1);
    if (h < hash_max(x))
        check_hash(x, h + 1);
}

/* Every edge where an owner can change: arc ends, ring positions, 0 and the top. */
static void check_boundaries(const pair *x)
{
    size_t n;
    const rk_arc *arcs = rk_plan_arcs(x->p, &n);
    check_around(x, 0);
    check_around(x, hash_max(x));
    for (size_t k = 0; k < n; k++) {
        check_around(x, arcs[k].first);
        check_around(x, arcs[k].last);
    }
    const rk_ring *rings[] = {x->a, x->b};
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < rk_ring_point_count(rings[r]); i++) {
            uint64_t pos;
            rt_point_id(rings[r], i, &pos);
            check_around(x, pos);
        }
    }
}

static void check_keys(const pair *x, uint64_t *rng, int count)
{
    rk_hash_alg alg = rk_topology_hash(rk_ring_topology(x->a));
    for (int k = 0; k < count; k++) {
        char key[32];
        int len = snprintf(key, sizeof key, "key:%llx", (unsigned long long)rt_next(rng));
        check_hash(x, rk_hash(alg, key, (size_t)len));
    }
}

/* Arcs sorted, disjoint, not wrapping, merged where adjacent with the same (from, to). */
static void check_arc_shape(const pair *x)
{
    size_t n;
    const rk_arc *a = rk_plan_arcs(x->p, &n);
    for (size_t k = 0; k < n; k++) {
        assert_true(a[k].first <= a[k].last && a[k].last <= hash_max(x));
        assert_int_not_equal(a[k].from, a[k].to);
        double f = ((double)(a[k].last - a[k].first) + 1.0) / space_of(x);
        assert_true(fabs(a[k].fraction - f) <= 1e-15);
        if (k == 0)
            continue;
        assert_true(a[k - 1].last < a[k].first);
        if (a[k - 1].last + 1 == a[k].first && a[k - 1].from == a[k].from && a[k - 1].to == a[k].to)
            fail_msg("%s: arcs %zu and %zu touch and move %u -> %u: not merged", x->what, k - 1, k,
                     a[k].from, a[k].to);
    }
}

static void assert_close(double got, double want, const char *what, const char *figure)
{
    if (fabs(got - want) > EPS)
        fail_msg("%s: %s %.17g, expected %.17g", what, figure, got, want);
}

/* Transfers are sorted by (from, to) id and each sums its arcs. */
static void check_transfers(const pair *x)
{
    size_t n, na, nn;
    const rk_transfer *t = rk_plan_transfers(x->p, &n);
    const rk_arc *arcs = rk_plan_arcs(x->p, &na);
    const rk_plan_node *nodes = rk_plan_nodes(x->p, &nn);
    for (size_t k = 0; k < n; k++) {
        int order = k ? strcmp(nodes[t[k - 1].from].id, nodes[t[k].from].id) : -1;
        if (order == 0)
            order = strcmp(nodes[t[k - 1].to].id, nodes[t[k].to].id);
        assert_true(order < 0);
        size_t count = 0;
        double sum = 0;
        for (size_t i = 0; i < na; i++) {
            if (arcs[i].from == t[k].from && arcs[i].to == t[k].to)
                count++, sum += arcs[i].fraction;
        }
        assert_int_equal(t[k].arcs, count);
        assert_close(t[k].fraction, sum, x->what, "transfer fraction");
    }
}

/* moved_fraction == arcs == transfers == gained == lost; minimal_fraction and ideals from weights;
 * each node's gain minus loss is its change of share. */
static void check_sums(const pair *x)
{
    size_t na, nt, nn;
    const rk_arc *arcs = rk_plan_arcs(x->p, &na);
    const rk_transfer *t = rk_plan_transfers(x->p, &nt);
    const rk_plan_node *nodes = rk_plan_nodes(x->p, &nn);
    double arc_sum = 0, transfer_sum = 0, gained = 0, lost = 0, minimal = 0, wb = 0, wa = 0;
    for (size_t k = 0; k < na; k++)
        arc_sum += arcs[k].fraction;
    for (size_t k = 0; k < nt; k++)
        transfer_sum += t[k].fraction;
    for (size_t k = 0; k < nn; k++)
        wb += nodes[k].weight_before, wa += nodes[k].weight_after;
    for (size_t k = 0; k < nn; k++) {
        const rk_plan_node *d = &nodes[k];
        gained += d->gained, lost += d->lost;
        minimal += fmax(0.0, d->weight_after / wa - d->weight_before / wb);
        assert_close(d->ideal_after, d->weight_after / wa, x->what, "ideal_after");
        assert_close(d->gained - d->lost, d->share_after - d->share_before, x->what,
                     "gained - lost");
    }
    double moved = rk_plan_moved_fraction(x->p);
    assert_close(arc_sum, moved, x->what, "sum of arcs");
    assert_close(transfer_sum, moved, x->what, "sum of transfers");
    assert_close(gained, moved, x->what, "sum of gained");
    assert_close(lost, moved, x->what, "sum of lost");
    assert_close(rk_plan_minimal_fraction(x->p), minimal, x->what, "minimal_fraction");
}

static int by_first(const void *p, const void *q)
{
    const rk_arc *a = p, *b = q;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* The steps' pieces, sorted and joined where they touch with the same (from, to), are the arcs. */
static void check_union(const pair *x, const rk_arc *pieces, size_t n)
{
    size_t na, m = 0;
    const rk_arc *arcs = rk_plan_arcs(x->p, &na);
    rk_arc *u = malloc((n ? n : 1) * sizeof *u);
    assert_non_null(u);
    if (n)
        memcpy(u, pieces, n * sizeof *u);
    qsort(u, n, sizeof *u, by_first);
    for (size_t k = 0; k < n; k++) {
        rk_arc *prev = m ? &u[m - 1] : NULL;
        if (prev && prev->last + 1 == u[k].first && prev->from == u[k].from && prev->to == u[k].to)
            prev->last = u[k].last;
        else
            u[m++] = u[k];
    }
    assert_int_equal(m, na);
    for (size_t k = 0; k < na; k++) {
        if (u[k].first != arcs[k].first || u[k].last != arcs[k].last || u[k].from != arcs[k].from ||
            u[k].to != arcs[k].to)
            fail_msg("%s: the steps' arc %zu is %llx..%llx, the plan's %llx..%llx", x->what, k,
                     (unsigned long long)u[k].first, (unsigned long long)u[k].last,
                     (unsigned long long)arcs[k].first, (unsigned long long)arcs[k].last);
    }
    free(u);
}

static size_t distinct_sources(const rk_arc *a, size_t n)
{
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        size_t j = 0;
        while (j < k && a[j].from != a[k].from)
            j++;
        count += j == k;
    }
    return count;
}

/* Steps move at most max_step each, partition the step arcs in order, and add up to the plan. */
static void check_steps(const pair *x, double max_step)
{
    size_t ns, np, na;
    const rk_step *s = rk_plan_steps(x->p, &ns);
    const rk_arc *pieces = rk_plan_step_arcs(x->p, &np);
    double total = 0;
    size_t next = 0;
    rk_plan_arcs(x->p, &na);
    for (size_t k = 0; k < ns; k++) {
        double sum = 0;
        assert_int_equal(s[k].first_arc, next);
        assert_true(s[k].arcs > 0 && s[k].first_arc + s[k].arcs <= np);
        for (size_t i = s[k].first_arc; i < s[k].first_arc + s[k].arcs; i++)
            sum += pieces[i].fraction;
        if (s[k].fraction > max_step + EPS)
            fail_msg("%s: step %zu moves %.17g, over %g", x->what, k + 1, s[k].fraction, max_step);
        assert_close(s[k].fraction, sum, x->what, "step fraction");
        assert_int_equal(s[k].sources, distinct_sources(pieces + s[k].first_arc, s[k].arcs));
        next += s[k].arcs;
        total += s[k].fraction;
    }
    assert_int_equal(next, np);
    assert_close(total, rk_plan_moved_fraction(x->p), x->what, "sum of steps");
    if (max_step == 1.0)
        assert_int_equal(ns, na > 0);
    check_union(x, pieces, np);
}

/* rk_plan_node_count, from the topologies alone, is the plan's own node count. */
static void check_node_count(const pair *x)
{
    size_t n;
    rk_plan_nodes(x->p, &n);
    assert_int_equal(rk_plan_node_count(rk_ring_topology(x->a), rk_ring_topology(x->b)), n);
}

static void check_plan(const pair *x, uint64_t *rng, int keys)
{
    check_node_count(x);
    check_arc_shape(x);
    check_boundaries(x);
    check_keys(x, rng, keys);
    check_transfers(x);
    check_sums(x);
}

/* The same pair planned with each step limit: same arcs, and steps that fit. */
static void check_stepped(const rt_spec *sa, const rt_spec *sb, const pair *plain)
{
    size_t n, m;
    const rk_arc *arcs = rk_plan_arcs(plain->p, &n);
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        rk_plan_options opt = {.max_step = limits[l]};
        pair x = pair_of(sa, sb, &opt, plain->what);
        const rk_arc *same = rk_plan_arcs(x.p, &m);
        assert_int_equal(m, n);
        if (n)
            assert_memory_equal(same, arcs, n * sizeof *arcs);
        check_steps(&x, limits[l]);
        pair_free(&x);
    }
}

static void test_random_pairs(void **state)
{
    (void)state;
    for (size_t a = 0; a < 3; a++) {
        for (uint64_t i = 0; i < PAIRS; i++) {
            uint64_t seed = 1000 * (a + 1) + i, rng = seed;
            char what[64];
            rt_spec sa, sb;
            snprintf(what, sizeof what, "%s pair, seed %llu", rk_hash_name(algs[a]),
                     (unsigned long long)seed);
            rt_random(&sa, &rng, algs[a], 16, 4, 24);
            sb = sa;
            rt_mutate(&sb, &rng, 4);
            if (i % 4 == 3)
                sb.vnode_factor = 1 + (uint32_t)rt_below(&rng, 24);
            pair x = pair_of(&sa, &sb, NULL, what);
            check_plan(&x, &rng, i < KEY_PAIRS ? KEYS : FEW_KEYS);
            check_stepped(&sa, &sb, &x);
            pair_free(&x);
        }
    }
}

/* Every hash value moves: one arc from 0 to the top, split across steps. */
static void test_whole_space(void **state)
{
    (void)state;
    for (size_t a = 0; a < 3; a++) {
        uint64_t rng = 2000 + a;
        rt_spec sa = {.hash = algs[a], .vnode_factor = 3}, sb = sa;
        rt_add_named(&sa, "x", 1);
        rt_add_named(&sb, "y", 2);
        pair x = pair_of(&sa, &sb, NULL, rk_hash_name(algs[a]));
        size_t n;
        const rk_arc *arcs = rk_plan_arcs(x.p, &n);
        assert_int_equal(n, 1);
        assert_true(arcs[0].first == 0 && arcs[0].last == hash_max(&x));
        assert_true(rk_plan_moved_fraction(x.p) == 1.0);
        check_plan(&x, &rng, FEW_KEYS);
        check_stepped(&sa, &sb, &x);
        rk_plan_options tiny = {.max_step = 1e-20}; /* 2^64 pieces of one hash value: refused */
        rk_error err = {0};
        assert_null(rk_plan_new(x.a, x.b, &tiny, &err));
        assert_int_equal(err.code, RK_EINVAL);
        assert_string_equal(err.field, "max_step");
        pair_free(&x);
    }
}

/* Nothing moves between a topology and itself, nodes listed in any order. */
static void test_identical(void **state)
{
    (void)state;
    for (uint64_t seed = 3000; seed < 3009; seed++) {
        uint64_t rng = seed;
        rt_spec sa, sb;
        rt_random(&sa, &rng, algs[seed % 3], 16, 4, 24);
        sb = sa;
        rt_shuffle(&sb, &rng);
        rk_plan_options opt = {.max_step = 0.05, .keys = 1000};
        pair x = pair_of(&sa, &sb, &opt, "identical");
        size_t n, ns, nt;
        rk_plan_arcs(x.p, &n);
        rk_plan_steps(x.p, &ns);
        rk_plan_transfers(x.p, &nt);
        assert_int_equal(n + ns + nt, 0);
        assert_true(rk_plan_moved_fraction(x.p) == 0 && rk_plan_minimal_fraction(x.p) == 0);
        check_plan(&x, &rng, FEW_KEYS);
        pair_free(&x);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    rt_spec sa = {.hash = RK_HASH_FNV1A_32, .vnode_factor = 4}, sb;
    rt_add_named(&sa, "a", 1);
    sb = sa;
    sb.hash = RK_HASH_MD5_32;
    rk_ring *a = rt_ring(&sa), *b = rt_ring(&sb);
    rk_error err = {0};
    assert_null(rk_plan_new(a, b, NULL, &err));
    assert_int_equal(err.code, RK_EHASHMISMATCH);
    assert_string_equal(err.field, "hash");
    const double bad[] = {-0.01, 1.000001, 2, NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        rk_plan_options opt = {.max_step = bad[k]};
        memset(&err, 0, sizeof err);
        assert_null(rk_plan_new(a, a, &opt, &err));
        assert_int_equal(err.code, RK_EINVAL);
        assert_string_equal(err.field, "max_step");
    }
    rk_ring_free(a);
    rk_ring_free(b);
}

/* ---- the step packer against its first, quadratic form ---- */

typedef unsigned __int128 u128;

static u128 len_of(const rk_arc *a)
{
    return (u128)(a->last - a->first) + 1;
}

/* By source node, then by position in the plan (a stable grouping). */
static int by_source(const void *p, const void *q)
{
    const rk_arc *a = p, *b = q;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Splits arcs (sorted by first) into pieces of at most cap, grouped by source: a new array. */
static rk_arc *model_pieces(const rk_arc *arcs, size_t n, u128 cap, double space, size_t *count)
{
    size_t total = 0, at = 0;
    for (size_t k = 0; k < n; k++)
        total += (size_t)((len_of(&arcs[k]) + cap - 1) / cap);
    rk_arc *p = malloc((total ? total : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t k = 0; k < n; k++) {
        for (rk_arc a = arcs[k];; a.first = p[at++].last + 1) {
            u128 take = len_of(&a) < cap ? len_of(&a) : cap;
            p[at] = a;
            p[at].last = a.first + (uint64_t)(take - 1);
            p[at].fraction = ((double)(p[at].last - p[at].first) + 1.0) / space;
            if (p[at].last == a.last) {
                at++;
                break;
            }
        }
    }
    qsort(p, total, sizeof *p, by_source);
    *count = total;
    return p;
}

/* Every pass of a step offers every source's next piece, in source order, until none fits. */
static void model_step(const rk_arc *pieces, size_t *head, const size_t *end, size_t n_src,
                       u128 room, rk_arc *out, rk_step *st)
{
    size_t got = 0;
    for (int pass = 0, progress = 1; progress; pass++) {
        progress = 0;
        if (pass == 1)
            st->sources = got;
        for (size_t s = 0; s < n_src; s++) {
            if (head[s] == end[s] || len_of(&pieces[head[s]]) > room)
                continue;
            room -= len_of(&pieces[head[s]]);
            out[got++] = pieces[head[s]++];
            progress = 1;
        }
    }
    qsort(out, got, sizeof *out, by_first);
    st->arcs = got;
    for (size_t k = 0; k < got; k++)
        st->fraction += out[k].fraction;
}

/* rki_plan_steps gives exactly the steps of the quadratic packer; its work goes to *visits. */
static void check_packer(const rk_arc *arcs, size_t n, unsigned bits, double max_step,
                         size_t *visits, size_t *n_pieces, size_t *n_steps)
{
    double space = bits == 64 ? 18446744073709551616.0 : 4294967296.0;
    u128 cap = (u128)(max_step * space) ? (u128)(max_step * space) : 1;
    size_t count, n_src = 0, ns, np, done = 0, step = 0;
    rk_arc *pieces = model_pieces(arcs, n, cap, space, &count), *out;
    size_t *head = calloc(count + 1, sizeof *head), *end = calloc(count + 1, sizeof *end);
    rk_arc *want = malloc((count + 1) * sizeof *want);
    rk_step *steps;
    assert_true(head && end && want);
    for (size_t k = 0; k < count; k++) {
        if (k == 0 || pieces[k].from != pieces[k - 1].from)
            head[n_src++] = k;
        end[n_src - 1] = k + 1;
    }
    *visits = 0;
    assert_int_equal(rki_plan_steps(arcs, n, bits, max_step, &steps, &ns, &out, &np, visits),
                     RK_OK);
    assert_int_equal(np, count);
    for (; done < count; step++) {
        rk_step st = {0, done, 0, 0};
        model_step(pieces, head, end, n_src, cap, want + done, &st);
        assert_true(step < ns);
        assert_int_equal(steps[step].first_arc, done);
        assert_int_equal(steps[step].arcs, st.arcs);
        assert_int_equal(steps[step].sources, st.sources);
        assert_true(steps[step].fraction == st.fraction);
        done += st.arcs;
    }
    assert_int_equal(step, ns);
    if (count)
        assert_memory_equal(out, want, count * sizeof *out);
    *n_pieces = count, *n_steps = ns;
    free(pieces), free(head), free(end), free(want), free(steps), free(out);
}

/* Arcs of `n_src` sources over a 32-bit space, `per` arcs each, sorted by first, random lengths. */
static rk_arc *synthetic_arcs(size_t n_src, size_t per, uint64_t *rng, size_t *n)
{
    uint64_t slot = (1ull << 32) / (n_src * per);
    rk_arc *a = malloc(n_src * per * sizeof *a);
    assert_non_null(a);
    for (size_t k = 0; k < n_src * per; k++) {
        uint64_t first = k * slot;
        a[k] = (rk_arc){first, first + rt_below(rng, slot), (uint32_t)rt_below(rng, n_src),
                        (uint32_t)n_src, 0};
        a[k].fraction = ((double)(a[k].last - a[k].first) + 1.0) / 4294967296.0;
    }
    *n = n_src * per;
    return a;
}

/* The plans' own arcs, with every step limit and some far below an arc's length. */
static void test_packer_model(void **state)
{
    (void)state;
    const double tiny[] = {0.01, 0.05, 1.0, 1e-3, 2e-5};
    for (uint64_t seed = 4000; seed < 4012; seed++) {
        uint64_t rng = seed;
        rt_spec sa, sb;
        rt_random(&sa, &rng, algs[seed % 3], 64, 4, 24);
        sb = sa;
        rt_mutate(&sb, &rng, 4);
        pair x = pair_of(&sa, &sb, NULL, "packer");
        size_t n, visits, np, ns;
        const rk_arc *arcs = rk_plan_arcs(x.p, &n);
        unsigned bits = rk_hash_bits(algs[seed % 3]);
        for (size_t l = 0; l < sizeof tiny / sizeof tiny[0]; l++)
            check_packer(arcs, n, bits, tiny[l], &visits, &np, &ns);
        pair_free(&x);
    }
    uint64_t rng = 4100;
    size_t n, visits, np, ns;
    rk_arc *arcs = synthetic_arcs(3000, 2, &rng, &n);
    check_packer(arcs, n, 32, 1e-4, &visits, &np, &ns);
    free(arcs);
}

/* A tiny step limit over many sources: the work grows with pieces times log(sources), where the
 * first packer looked at every source for every step (steps * sources). */
static void test_packer_work(void **state)
{
    (void)state;
    uint64_t rng = 4200;
    size_t n_src = 40000, n, ns, np, visits = 0, log2_src = 16;
    rk_arc *arcs = synthetic_arcs(n_src, 1, &rng, &n), *out;
    rk_step *steps;
    assert_int_equal(rki_plan_steps(arcs, n, 32, 2.5e-5, &steps, &ns, &out, &np, &visits), RK_OK);
    assert_true(ns > n_src / 4); /* so the first packer would have looked 4 * 10^8 times */
    if (visits > 4 * (np + ns) * (log2_src + 2))
        fail_msg("%zu visits for %zu pieces in %zu steps over %zu sources", visits, np, ns, n_src);
    free(arcs), free(steps), free(out);
}

/* A plan of more arcs than max_arcs is refused, naming the count; one of exactly that many is not.
 */
static void test_arc_limit(void **state)
{
    (void)state;
    uint64_t rng = 3100;
    rt_spec sa, sb;
    rt_random(&sa, &rng, RK_HASH_XXH3_64, 16, 4, 24);
    sb = sa;
    rt_mutate(&sb, &rng, 4);
    pair x = pair_of(&sa, &sb, NULL, "arc limit");
    size_t n;
    rk_plan_arcs(x.p, &n);
    assert_true(n > 1);
    rk_plan_options at = {.max_arcs = n}, under = {.max_step = 0.01, .max_arcs = n - 1};
    rk_error err = {0};
    rk_plan *p = rk_plan_new(x.a, x.b, &at, &err);
    assert_non_null(p);
    rk_plan_free(p);
    assert_null(rk_plan_new(x.a, x.b, &under, &err));
    assert_int_equal(err.code, RK_ETOOBIG);
    assert_string_equal(err.field, "arcs");
    char want[64];
    snprintf(want, sizeof want, "has %zu arcs, over the limit of %zu", n, n - 1);
    assert_non_null(strstr(err.message, want));
    pair_free(&x);
}

/* ---- the plan document and the table ---- */

static void assert_fields(const json_t *o, const char *const *names, size_t n, const char *what)
{
    assert_true(json_is_object(o));
    for (size_t k = 0; k < n; k++)
        if (!json_object_get(o, names[k]))
            fail_msg("%s has no \"%s\"", what, names[k]);
}

#define ASSERT_FIELDS(o, what, ...)                                                                \
    do {                                                                                           \
        static const char *const names_[] = {__VA_ARGS__};                                         \
        assert_fields(o, names_, sizeof names_ / sizeof names_[0], what);                          \
    } while (0)

/* keys_estimate is there exactly when keys were given, and rounds fraction * keys. */
static void check_keys_estimate(const json_t *o, uint64_t keys)
{
    json_t *est = json_object_get(o, "keys_estimate");
    assert_int_equal(est != NULL, keys > 0);
    if (est)
        assert_int_equal(json_integer_value(est),
                         llround(json_number_value(json_object_get(o, "fraction")) * keys));
    assert_true(json_is_number(json_object_get(o, "fraction")));
}

static void check_arcs_json(const json_t *arr, const rk_arc *arcs, size_t n)
{
    size_t i;
    json_t *v;
    assert_int_equal(json_array_size(arr), n);
    json_array_foreach(arr, i, v)
    {
        char first[17];
        ASSERT_FIELDS(v, "arc", "first", "last", "from", "to", "fraction");
        snprintf(first, sizeof first, "%016llx", (unsigned long long)arcs[i].first);
        assert_string_equal(json_string_value(json_object_get(v, "first")), first);
        assert_int_equal(strlen(json_string_value(json_object_get(v, "last"))), 16);
        assert_true(json_is_number(json_object_get(v, "fraction")));
    }
}

static void check_parts_json(const json_t *doc, const rk_plan *p, uint64_t keys)
{
    size_t i, n;
    json_t *v;
    json_array_foreach(json_object_get(doc, "transfers"), i, v)
    {
        ASSERT_FIELDS(v, "transfer", "from", "to", "fraction", "arcs");
        check_keys_estimate(v, keys);
    }
    json_array_foreach(json_object_get(doc, "nodes"), i, v)
        ASSERT_FIELDS(v, "node", "id", "weight_before", "weight_after", "share_before",
                      "share_after", "ideal_after", "gained", "lost");
    const rk_step *steps = rk_plan_steps(p, &n);
    const rk_arc *pieces = rk_plan_step_arcs(p, &n);
    json_array_foreach(json_object_get(doc, "steps"), i, v)
    {
        ASSERT_FIELDS(v, "step", "step", "fraction", "arcs");
        assert_int_equal(json_integer_value(json_object_get(v, "step")), i + 1);
        check_keys_estimate(v, keys);
        check_arcs_json(json_object_get(v, "arcs"), pieces + steps[i].first_arc, steps[i].arcs);
    }
}

/* The document of docs/RING.md with every field, as the plan's figures say. */
static void check_json(const pair *x, const rk_plan_meta *meta, uint64_t keys)
{
    size_t na, ns;
    json_t *doc = rk_plan_to_json(x->p, meta, 0);
    assert_non_null(doc);
    ASSERT_FIELDS(doc, "plan", "cluster", "digest", "hash", "from", "to", "moved_fraction",
                  "minimal_fraction", "transfers", "nodes", "balance", "warnings", "arcs", "steps");
    ASSERT_FIELDS(json_object_get(doc, "from"), "from", "version", "fingerprint");
    ASSERT_FIELDS(json_object_get(doc, "to"), "to", "version", "fingerprint");
    ASSERT_FIELDS(json_object_get(json_object_get(doc, "balance"), "after"), "balance", "max",
                  "min");
    ASSERT_FIELDS(json_object_get(json_object_get(doc, "balance"), "before"), "balance", "max",
                  "min");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "from"), "fingerprint")),
        rk_ring_fingerprint_hex(x->a));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "to"), "version")),
                     meta->to_version);
    char digest[RK_PLAN_DIGEST_LEN];
    rk_plan_digest(meta->from_version, rk_ring_fingerprint_hex(x->a), meta->to_version,
                   rk_ring_fingerprint_hex(x->b), digest);
    assert_string_equal(json_string_value(json_object_get(doc, "digest")), digest);
    assert_true(json_number_value(json_object_get(doc, "moved_fraction")) ==
                rk_plan_moved_fraction(x->p));
    const rk_arc *arcs = rk_plan_arcs(x->p, &na);
    rk_plan_steps(x->p, &ns);
    check_arcs_json(json_object_get(doc, "arcs"), arcs, na);
    assert_int_equal(json_array_size(json_object_get(doc, "steps")), ns);
    check_parts_json(doc, x->p, keys);
    json_decref(doc);
    doc = rk_plan_to_json(x->p, meta, RK_PLAN_NO_ARCS);
    assert_null(json_object_get(doc, "arcs"));
    assert_non_null(json_object_get(doc, "transfers"));
    json_decref(doc);
}

/* The table names every node in full. */
static void check_text(const pair *x, const rk_plan_meta *meta)
{
    size_t n;
    const rk_plan_node *nodes = rk_plan_nodes(x->p, &n);
    char *text = rk_plan_to_text(x->p, meta);
    char digest[RK_PLAN_DIGEST_LEN];
    assert_non_null(text);
    rk_plan_digest(meta->from_version, rk_ring_fingerprint_hex(x->a), meta->to_version,
                   rk_ring_fingerprint_hex(x->b), digest);
    if (!strstr(text, digest))
        fail_msg("the table does not show the digest %s:\n%s", digest, text);
    for (size_t k = 0; k < n; k++)
        if (!strstr(text, nodes[k].id))
            fail_msg("the table does not name %s:\n%s", nodes[k].id, text);
    free(text);
}

static void test_documents(void **state)
{
    (void)state;
    const rk_plan_meta meta = {.cluster = "cache", .from_version = 3, .to_version = 4};
    const uint64_t keys[] = {0, 1000000};
    uint64_t rng = 4000;
    rt_spec sa, sb;
    rt_random(&sa, &rng, RK_HASH_XXH3_64, 6, 3, 40);
    rt_add_named(&sa, "a-node-with-an-id-longer-than-forty-bytes-number-1", 2);
    sb = sa;
    rt_add_named(&sb, "a-node-with-an-id-longer-than-forty-bytes-number-2", 3);
    rt_mutate(&sb, &rng, 3);
    for (size_t k = 0; k < 2; k++) {
        rk_plan_options opt = {.max_step = 0.05, .keys = keys[k]};
        pair x = pair_of(&sa, &sb, &opt, "documents");
        check_json(&x, &meta, keys[k]);
        check_text(&x, &meta);
        pair_free(&x);
    }
    pair x = pair_of(&sa, &sb, NULL, "no steps");
    json_t *doc = rk_plan_to_json(x.p, NULL, 0);
    assert_null(json_object_get(doc, "steps"));
    assert_null(json_object_get(doc, "cluster"));
    json_decref(doc);
    pair_free(&x);
}

/* The plan digest (docs/RING.md), against values computed independently with xxhsum 0.8.1:
 * printf '3:6fd8c4088bbca473>4:0123456789abcdef' | xxhsum -H3. */
static void test_digest(void **state)
{
    (void)state;
    char out[RK_PLAN_DIGEST_LEN];
    rk_plan_digest(3, "6fd8c4088bbca473", 4, "0123456789abcdef", out);
    assert_string_equal(out, "73177d0bfef08053");
    rk_plan_digest(0, "7bb0b9b16b5a8abe", 0, "dbb9f9d3244ab4f7", out);
    assert_string_equal(out, "dcc59b5641a7b8c8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_pairs), cmocka_unit_test(test_whole_space),
        cmocka_unit_test(test_identical),    cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_documents),    cmocka_unit_test(test_packer_model),
        cmocka_unit_test(test_packer_work),  cmocka_unit_test(test_arc_limit),
        cmocka_unit_test(test_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
