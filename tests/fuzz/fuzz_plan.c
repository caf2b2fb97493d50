/* fuzz_plan.c — libFuzzer harness: the migration plan between two small topologies drawn from the
 * input must agree with key-by-key lookups in both rings; any disagreement aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringkeeper.h"

#define POOL       8 /* node ids both topologies draw from */
#define VNODES_MAX 16
#define WEIGHT_MAX 3
#define PROBES     16 /* hash values taken from the input's tail */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct input {
    const uint8_t *at;
    size_t left;
} input;

static unsigned take(input *in)
{
    if (in->left == 0)
        return 0;
    in->left--;
    return *in->at++;
}

/* A topology of up to POOL nodes: a mask of pool ids present, then a weight for each. */
static rk_topology *draw(input *in, rk_hash_alg hash, uint32_t vnodes)
{
    static char ids[POOL][8], addrs[POOL][16];
    rk_node nodes[POOL];
    size_t n = 0;
    unsigned mask = take(in);
    for (unsigned i = 0; i < POOL; i++) {
        if (!(mask & (1u << i)))
            continue;
        snprintf(ids[i], sizeof ids[i], "n%u", i);
        snprintf(addrs[i], sizeof addrs[i], "h%u:1", i);
        nodes[n++] = (rk_node){ids[i], addrs[i], take(in) % (WEIGHT_MAX + 1)};
    }
    return rk_topology_new(hash, vnodes, nodes, n, NULL, NULL);
}

/* Id of the owner of `x` in ring `r`. */
static const char *owner(const rk_ring *r, uint64_t x)
{
    return rk_topology_node(rk_ring_topology(r), rk_ring_lookup_hash(r, x))->id;
}

/* The arc holding `x`, or NULL; arcs are sorted by first and do not overlap. */
static const rk_arc *find_arc(const rk_arc *arcs, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (arcs[mid].last < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && arcs[lo].first <= x ? &arcs[lo] : NULL;
}

/* `x` moves from node `from` to node `to` (plan ids) when it is in an arc, else stays put. */
static void check_point(const rk_ring *a, const rk_ring *b, const rk_plan *p, uint64_t x)
{
    size_t n_arcs, n_nodes;
    const rk_arc *arcs = rk_plan_arcs(p, &n_arcs);
    const rk_plan_node *nodes = rk_plan_nodes(p, &n_nodes);
    const rk_arc *arc = find_arc(arcs, n_arcs, x);
    const char *before = owner(a, x), *after = owner(b, x);
    if (!arc) {
        if (strcmp(before, after) != 0)
            abort(); /* a key moves but no arc says so */
        return;
    }
    if (arc->from >= n_nodes || arc->to >= n_nodes || strcmp(nodes[arc->from].id, before) != 0 ||
        strcmp(nodes[arc->to].id, after) != 0 || strcmp(before, after) == 0)
        abort();
}

static void check_plan(const rk_ring *a, const rk_ring *b, const rk_plan *p, input *in)
{
    size_t n;
    const rk_arc *arcs = rk_plan_arcs(p, &n);
    uint64_t top = rk_hash_bits(rk_topology_hash(rk_ring_topology(a))) == 64 ? UINT64_MAX
                                                                             : (uint64_t)UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        const rk_arc *arc = &arcs[i];
        if (arc->last < arc->first || arc->last > top || (i > 0 && arcs[i - 1].last >= arc->first))
            abort();
        uint64_t span = arc->last - arc->first;
        check_point(a, b, p, arc->first);
        check_point(a, b, p, arc->last);
        check_point(a, b, p, arc->first + span / 2);
        check_point(a, b, p, arc->first + span / 3);
        if (arc->first > 0)
            check_point(a, b, p, arc->first - 1);
        if (arc->last < top)
            check_point(a, b, p, arc->last + 1);
    }
    check_point(a, b, p, 0);
    check_point(a, b, p, top);
    for (int i = 0; i < PROBES && in->left > 0; i++) {
        uint64_t x = 0;
        for (int k = 0; k < 8; k++)
            x = x << 8 | take(in);
        check_point(a, b, p, x & top);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    rk_hash_alg hash = (rk_hash_alg)(take(&in) % 3);
    uint32_t vnodes = take(&in) % VNODES_MAX + 1;
    rk_topology *ta = draw(&in, hash, vnodes);
    rk_topology *tb = draw(&in, hash, take(&in) % VNODES_MAX + 1);
    rk_ring *a = ta ? rk_ring_build(ta, NULL) : NULL;
    rk_ring *b = tb ? rk_ring_build(tb, NULL) : NULL;
    rk_plan_options opt = {.max_step = (take(&in) % 4) / 4.0, .keys = take(&in)};
    rk_plan *p = a && b ? rk_plan_new(a, b, &opt, NULL) : NULL;
    if (a && b && !p)
        abort(); /* same hash, valid rings: a plan must exist */
    if (p)
        check_plan(a, b, p, &in);
    rk_plan_free(p);
    rk_ring_free(a);
    rk_ring_free(b);
    rk_topology_free(ta);
    rk_topology_free(tb);
    return 0;
}
