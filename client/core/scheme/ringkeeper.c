/* ringkeeper.c — the ringkeeper ring scheme of docs/RING.md: vnode_factor * weight points
 * per node at H("<id>#<i>"), ties broken by node id bytes. The other schemes plug in beside it
 * (internal.h, "ring schemes"). */
#include <string.h>

#include "internal.h"

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

static void ringkeeper_tie_order(const rk_topology *t, uint32_t *order)
{
    memcpy(order, rki_topology_order(t), rk_topology_node_count(t) * sizeof *order);
}

static void ringkeeper_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    const char *id = rk_topology_node(t, node)->id;
    rki_hash_points(rk_topology_hash(t), id, strlen(id), count, out);
}

/* A key is hashed whole with the topology's hash; the scheme has no hash tag. */
static uint64_t ringkeeper_key_hash(rk_hash_alg hash, const char *hash_tag, const void *key,
                                    size_t len)
{
    (void)hash_tag;
    return rk_hash(hash, key, len);
}

const rki_scheme rki_scheme_ringkeeper = {
    .name = "ringkeeper",
    .bits = ringkeeper_bits,
    .point_counts = ringkeeper_point_counts,
    .tie_order = ringkeeper_tie_order,
    .positions = ringkeeper_positions,
    .key_hash = ringkeeper_key_hash,
};
