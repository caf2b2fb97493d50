/* scheme_rendezvous.c — a toy ring scheme, registered only in a test build (cmake
 * -DRK_TOY_SCHEME=ON): the proof that a scheme is this one file and its line in
 * client/CMakeLists.txt, which the API, the CLI and the plan then serve unchanged (ctest
 * scheme_toy).
 *
 * Rendezvous hashing over a table: the 64-bit hash space is cut into 256 equal slots, and slot s
 * belongs to the live node (weight 1) whose xxh3_64("<id>#<s>") is highest, ties to the lower id
 * bytes. Each slot is one point at its last position, so "the first point at or after the key's
 * hash" is the slot's owner: a table scheme needs no lookup rule of its own. At most 8 nodes,
 * weights 0 or 1; keys hash whole with xxh3_64, the hash the ringkeeper scheme names too. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define SLOTS      256
#define SLOT_SHIFT 56 /* 2^64 / SLOTS */
#define MAX_NODES  8

static const char *const fields[] = {NULL};
static const rki_field_note misplaced[] = {
    {"vnode_factor", "the rendezvous scheme has one point per slot; leave vnode_factor out"},
    {"hash_tag", "only the ketama scheme (\"scheme\": \"ketama\") has hash tags"},
    {NULL, NULL},
};
static const rki_hash *const hashes[] = {&rki_hash_xxh3_64};

static int rendezvous_count(const void *params, const rk_node *nodes, size_t n, uint64_t *points,
                            rk_error *err)
{
    (void)params;
    size_t live = 0;
    if (n > MAX_NODES)
        return rk_error_set(err, RK_ETOPOLOGY, "nodes",
                            "must hold 1..%d nodes in the rendezvous scheme, got %zu", MAX_NODES,
                            n);
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].weight != 0 && nodes[i].weight != 1) {
            char path[32];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "must be 0 or 1 in the rendezvous scheme, got %g", nodes[i].weight);
        }
        live += nodes[i].weight == 1;
    }
    if (!live)
        return rk_error_set(err, RK_ETOPOLOGY, "nodes", "need a node of weight 1 to own the slots");
    *points = SLOTS;
    return RK_OK;
}

static unsigned rendezvous_bits(const rk_topology *t)
{
    (void)t;
    return 64;
}

/* The owner of every slot, a node index of `t`. */
static void owners(const rk_topology *t, uint8_t *owner)
{
    const uint32_t *by_id = rki_topology_order(t);
    size_t n = rk_topology_node_count(t);
    for (unsigned s = 0; s < SLOTS; s++) {
        uint64_t best = 0;
        int found = 0;
        for (size_t k = 0; k < n; k++) {
            const rk_node *node = rk_topology_node(t, by_id[k]);
            char name[RK_MAX_ID_BYTES + 8];
            int len = snprintf(name, sizeof name, "%s#%u", node->id, s);
            uint64_t score = rk_hash(RK_HASH_XXH3_64, name, (size_t)len);
            if (node->weight == 1 && (!found || score > best))
                best = score, owner[s] = (uint8_t)by_id[k], found = 1;
        }
    }
}

static void rendezvous_point_counts(const rk_topology *t, uint32_t *count)
{
    uint8_t owner[SLOTS];
    owners(t, owner);
    memset(count, 0, rk_topology_node_count(t) * sizeof *count);
    for (unsigned s = 0; s < SLOTS; s++)
        count[owner[s]]++;
}

static void rendezvous_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    uint8_t owner[SLOTS];
    owners(t, owner);
    for (unsigned s = 0, j = 0; s < SLOTS && j < count; s++)
        if (owner[s] == node)
            out[j++] = (uint64_t)s << SLOT_SHIFT | (((uint64_t)1 << SLOT_SHIFT) - 1);
}

const rki_scheme rki_scheme_rendezvous = {
    .name = "rendezvous",
    .id = (rk_scheme)100, /* a value of its own: the public enum names only real schemes */
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a rendezvous topology has scheme, hash, nodes, comment and data",
    .count = rendezvous_count,
    .bits = rendezvous_bits,
    .point_counts = rendezvous_point_counts,
    .tie_order = rki_tie_order_by_id, /* every slot has its own position: no ties */
    .positions = rendezvous_positions,
    .key_hash = rki_key_hash_whole,
};
