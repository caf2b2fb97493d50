/* random_topology.h — seeded random topologies for the unit tests (test_ring.c, test_plan.c).
 *
 * A test edits an rt_spec (plain arrays of ids and weights), then builds a topology or a ring from
 * it. The generator is splitmix64 with fixed seeds, so a failure reproduces; failures name the
 * seed. Include after <cmocka.h> and "ringkeeper.h". */
#ifndef RANDOM_TOPOLOGY_H
#define RANDOM_TOPOLOGY_H

#include <stdio.h>
#include <string.h>

#define RT_MAX_NODES 256
#define RT_ID_BYTES  72

typedef struct rt_spec {
    rk_hash_alg hash;                   /* hash algorithm */
    uint32_t vnode_factor;              /* points per unit of weight */
    size_t n;                           /* number of nodes */
    char id[RT_MAX_NODES][RT_ID_BYTES]; /* node ids, NUL-terminated */
    uint32_t weight[RT_MAX_NODES];      /* node weights */
    unsigned serial;                    /* number for the next new id */
} rt_spec;

/* splitmix64: the next value of the sequence in *state. */
static inline uint64_t rt_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A value in 0..n-1 (n > 0; the bias is negligible for the small n of the tests). */
static inline uint64_t rt_below(uint64_t *state, uint64_t n)
{
    return rt_next(state) % n;
}

/* Largest hash value of `alg`: 2^32 - 1 or 2^64 - 1. */
static inline uint64_t rt_hash_max(rk_hash_alg alg)
{
    return rk_hash_bits(alg) == 64 ? UINT64_MAX : 0xFFFFFFFFull;
}

/* Appends node `id` (shorter than RT_ID_BYTES). */
static inline void rt_add_named(rt_spec *s, const char *id, uint32_t weight)
{
    assert_true(s->n < RT_MAX_NODES && strlen(id) < RT_ID_BYTES);
    snprintf(s->id[s->n], RT_ID_BYTES, "%s", id);
    s->weight[s->n++] = weight;
}

/* Appends a node with a fresh id; ids vary in shape (prefixes of each other, UTF-8) on purpose. */
static inline void rt_add(rt_spec *s, uint32_t weight)
{
    static const char *const shapes[] = {"n%u", "node-%u.example", "\xe8\x8a\x82\xe7\x82\xb9-%u",
                                         "N%u"};
    char id[RT_ID_BYTES];
    unsigned k = s->serial++;
    snprintf(id, sizeof id, shapes[k % 4], k);
    rt_add_named(s, id, weight);
}

static inline void rt_remove(rt_spec *s, size_t i)
{
    memmove(s->id[i], s->id[i + 1], (s->n - i - 1) * sizeof s->id[0]);
    memmove(&s->weight[i], &s->weight[i + 1], (s->n - i - 1) * sizeof s->weight[0]);
    s->n--;
}

/* Makes sure at least one node has weight > 0, as docs/RING.md asks. */
static inline void rt_fix_weights(rt_spec *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->weight[i] > 0)
            return;
    s->weight[0] = 1;
}

/* A random weight: 0 (draining) about one time in five, else 1..max. */
static inline uint32_t rt_weight(uint64_t *rng, uint32_t max)
{
    return rt_below(rng, 5) == 0 ? 0 : 1 + (uint32_t)rt_below(rng, max);
}

/* A new spec: 1..max_nodes nodes with weights 0..max_weight, vnode_factor 1..max_vf. */
static inline void rt_random(rt_spec *s, uint64_t *rng, rk_hash_alg hash, size_t max_nodes,
                             uint32_t max_weight, uint32_t max_vf)
{
    memset(s, 0, sizeof *s);
    s->hash = hash;
    s->vnode_factor = 1 + (uint32_t)rt_below(rng, max_vf);
    s->serial = (unsigned)rt_below(rng, 1000);
    size_t n = 1 + rt_below(rng, max_nodes);
    for (size_t i = 0; i < n; i++)
        rt_add(s, rt_weight(rng, max_weight));
    rt_fix_weights(s);
}

/* One to three edits: add a node, remove one, reweight one or drain one. */
static inline void rt_mutate(rt_spec *s, uint64_t *rng, uint32_t max_weight)
{
    unsigned edits = 1 + (unsigned)rt_below(rng, 3);
    for (unsigned e = 0; e < edits; e++) {
        size_t i = rt_below(rng, s->n);
        switch (rt_below(rng, 4)) {
        case 0:
            if (s->n < RT_MAX_NODES)
                rt_add(s, 1 + (uint32_t)rt_below(rng, max_weight));
            break;
        case 1:
            if (s->n > 1)
                rt_remove(s, i);
            break;
        case 2:
            s->weight[i] = rt_weight(rng, max_weight);
            break;
        default:
            s->weight[i] = 0;
        }
    }
    rt_fix_weights(s);
}

/* The same nodes in another order (Fisher-Yates). */
static inline void rt_shuffle(rt_spec *s, uint64_t *rng)
{
    char id[RT_ID_BYTES];
    for (size_t i = s->n; i > 1; i--) {
        size_t j = rt_below(rng, i);
        uint32_t w = s->weight[i - 1];
        memcpy(id, s->id[i - 1], RT_ID_BYTES);
        memcpy(s->id[i - 1], s->id[j], RT_ID_BYTES);
        memcpy(s->id[j], id, RT_ID_BYTES);
        s->weight[i - 1] = s->weight[j];
        s->weight[j] = w;
    }
}

/* The topology of `s` (addr "<id>:11211"); fails the test when the library refuses it. */
static inline rk_topology *rt_topology(const rt_spec *s)
{
    rk_node nodes[RT_MAX_NODES];
    char addr[RT_MAX_NODES][RT_ID_BYTES + 8];
    for (size_t i = 0; i < s->n; i++) {
        snprintf(addr[i], sizeof addr[i], "%s:11211", s->id[i]);
        nodes[i] = (rk_node){s->id[i], addr[i], s->weight[i]};
    }
    rk_error err = {0};
    rk_topology *t = rk_topology_new(s->hash, s->vnode_factor, nodes, s->n, NULL, &err);
    if (!t)
        fail_msg("random topology refused: %s", err.message);
    return t;
}

/* The ring of `s`; it holds the only reference to its topology. */
static inline rk_ring *rt_ring(const rt_spec *s)
{
    rk_topology *t = rt_topology(s);
    rk_error err = {0};
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    if (!r)
        fail_msg("ring refused: %s", err.message);
    return r;
}

/* The id of the node of ring point i. */
static inline const char *rt_point_id(const rk_ring *r, size_t i, uint64_t *position)
{
    uint32_t node;
    rk_ring_point(r, i, position, &node);
    return rk_topology_node(rk_ring_topology(r), node)->id;
}

#endif
