/* ringkeeper.c — the ringkeeper ring scheme of docs/RING.md: vnode_factor * weight points
 * per node at H("<id>#<i>"), ties broken by node id bytes. The other schemes plug in beside it
 * (internal.h, "ring schemes"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* vnode_factor * weight within this of an integer is that many points: a decimal weight such as
 * 0.00625 (1/160) is not exact in binary, and the largest point count (4096000) keeps a double's
 * own error far below it. */
#define POINTS_SLACK 1e-6

static const char *const fields[] = {"vnode_factor", NULL};
static const rki_field_note misplaced[] = {
    {"hash_tag", "only the ketama scheme (\"scheme\": \"ketama\") has hash tags"},
    {"request_key", "only the balancer schemes (nginx, haproxy) take keys from requests"},
    {NULL, NULL},
};

/* The scheme's parameters (rki_scheme.params_size). */
typedef struct params {
    uint32_t vnode_factor; /* points per unit of weight */
} params;

static int ringkeeper_read(const json_t *doc, void *block, rk_error *err)
{
    params *p = block;
    return rki_json_uint(json_object_get(doc, "vnode_factor"), 1, RK_MAX_VNODE_FACTOR,
                         "vnode_factor", &p->vnode_factor, err);
}

static int ringkeeper_write(const void *block, json_t *doc)
{
    const params *p = block;
    return json_object_set_new(doc, "vnode_factor", json_integer(p->vnode_factor));
}

static int ringkeeper_check(const void *block, rk_error *err)
{
    const params *p = block;
    if (p->vnode_factor < 1 || p->vnode_factor > RK_MAX_VNODE_FACTOR)
        return rk_error_set(err, RK_ETOPOLOGY, "vnode_factor", "must be an integer 1..%d, got %u",
                            RK_MAX_VNODE_FACTOR, p->vnode_factor);
    return RK_OK;
}

/* Each weight a whole number of points (docs/RING.md, "Weights in steps"), and vnode_factor x
 * the total weight within RK_MAX_POINTS. */
static int ringkeeper_count(const void *block, const rk_node *nodes, size_t n, uint64_t *points,
                            rk_error *err)
{
    uint32_t vf = ((const params *)block)->vnode_factor;
    *points = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t count = rki_weight_points(vf, nodes[i].weight);
        if (fabs((double)vf * nodes[i].weight - count) > POINTS_SLACK ||
            (count == 0 && nodes[i].weight > 0)) {
            char path[64];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "must be a multiple of 1/vnode_factor (1/%u = %g), got %g", vf,
                                1.0 / vf, nodes[i].weight);
        }
        *points += count;
    }
    return *points > RK_MAX_POINTS ? rki_points_error(*points, "vnode_factor x total weight",
                                                      "lower vnode_factor or the weights", err)
                                   : RK_OK;
}

/* Each weight exactly its points over vnode_factor, so that equal rings have equal weights. */
static double ringkeeper_weight(const void *block, double weight)
{
    uint32_t vf = ((const params *)block)->vnode_factor;
    return (double)rki_weight_points(vf, weight) / vf;
}

static unsigned ringkeeper_bits(const rk_topology *t)
{
    return rk_hash_bits(rk_topology_hash(t));
}

static void ringkeeper_point_counts(const rk_topology *t, uint32_t *count)
{
    uint32_t vf = rk_topology_vnode_factor(t);
    for (size_t k = 0; k < rk_topology_node_count(t); k++)
        count[k] = rki_weight_points(vf, rk_topology_node(t, k)->weight);
}

static void ringkeeper_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    const char *id = rk_topology_node(t, node)->id;
    rki_hash_of(rk_topology_hash(t))->points(id, strlen(id), count, out);
}

static const rki_hash *const hashes[] = {&rki_hash_fnv1a_32, &rki_hash_md5_32, &rki_hash_xxh3_64};

const rki_scheme rki_scheme_ringkeeper = {
    .name = "ringkeeper",
    .id = RK_SCHEME_RINGKEEPER,
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a topology has hash, vnode_factor, nodes, comment and data",
    .params_size = sizeof(params),
    .read = ringkeeper_read,
    .write = ringkeeper_write,
    .check = ringkeeper_check,
    .weight = ringkeeper_weight,
    .count = ringkeeper_count,
    .bits = ringkeeper_bits,
    .point_counts = ringkeeper_point_counts,
    .tie_order = rki_tie_order_by_id,
    .positions = ringkeeper_positions,
    .key_hash = rki_key_hash_whole,
};

rk_topology *rk_topology_new(rk_hash_alg hash, uint32_t vnode_factor, const rk_node *nodes,
                             size_t n_nodes, const char *comment, rk_error *err)
{
    params p = {.vnode_factor = vnode_factor};
    return rki_topology_make(&rki_scheme_ringkeeper, hash, &p, nodes, n_nodes, comment, err);
}

uint32_t rk_topology_vnode_factor(const rk_topology *t)
{
    return rki_topology_scheme(t) == &rki_scheme_ringkeeper
               ? ((const params *)rki_topology_params(t))->vnode_factor
               : 0;
}

double rki_weight_unit(const rk_topology *t)
{
    uint32_t vf = rk_topology_vnode_factor(t);
    return vf ? 1.0 / vf : 1.0;
}
