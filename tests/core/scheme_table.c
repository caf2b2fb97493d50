/* scheme_table.c — a toy table scheme, registered only in a test build (cmake -DRK_TOY_SCHEME=ON):
 * the proof that a scheme which fills a table for every node at once (as Maglev does) is this one
 * file and its line in client/CMakeLists.txt, with a parameter of its own, which the API, the CLI
 * and the plan then serve unchanged (ctest scheme_toy).
 *
 * Maglev's population (Eisenbud et al., NSDI 2016, "Maglev", section 3.4) over a table of
 * "table_size" slots, a prime: each live node (weight 1) has its permutation of the slots, offset
 * xxh3_64("<id>#offset") mod M stepping by xxh3_64("<id>#skip") mod (M - 1) + 1, and the nodes, in
 * id order, take turns claiming the next free slot of their own permutation until the table is
 * full. A key's slot is xxh3_64(key) mod M. At most 64 nodes, weights 0 or 1. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

#define MIN_SIZE  7
#define MAX_SIZE  65537
#define MAX_NODES 64

typedef struct params {
    uint32_t table_size; /* M, a prime */
} params;

static const char *const fields[] = {"table_size", NULL};
static const rki_field_note misplaced[] = {
    {"vnode_factor", "the table scheme has one point per slot; set table_size instead"},
    {"hash_tag", "only the ketama scheme (\"scheme\": \"ketama\") has hash tags"},
    {NULL, NULL},
};
static const rki_hash *const hashes[] = {&rki_hash_xxh3_64};

static int table_read(const json_t *doc, void *block, rk_error *err)
{
    return rki_json_uint(json_object_get(doc, "table_size"), MIN_SIZE, MAX_SIZE, "table_size",
                         &((params *)block)->table_size, err);
}

static int table_write(const void *block, json_t *doc)
{
    return json_object_set_new(doc, "table_size",
                               json_integer(((const params *)block)->table_size));
}

static int is_prime(uint32_t m)
{
    for (uint32_t d = 2; d * d <= m; d++)
        if (m % d == 0)
            return 0;
    return m >= 2;
}

/* Every node must see every slot in its permutation: M prime. */
static int table_check(const void *block, rk_error *err)
{
    uint32_t m = ((const params *)block)->table_size;
    if (m < MIN_SIZE || m > MAX_SIZE || !is_prime(m))
        return rk_error_set(err, RK_ETOPOLOGY, "table_size",
                            "must be a prime %d..%d (every node's permutation must reach every "
                            "slot), got %u",
                            MIN_SIZE, MAX_SIZE, m);
    return RK_OK;
}

/* Two tables of different sizes put a key in unrelated slots. */
static int table_differ(const void *a, const void *b, rk_error *err)
{
    uint32_t ma = ((const params *)a)->table_size, mb = ((const params *)b)->table_size;
    if (ma != mb)
        return rk_error_set(err, RK_EHASHMISMATCH, "table_size",
                            "the versions have tables of %u and %u slots: keys would move "
                            "between unrelated slots",
                            ma, mb);
    return RK_OK;
}

static int table_count(const void *block, const rk_node *nodes, size_t n, uint64_t *points,
                       rk_error *err)
{
    size_t live = 0;
    if (n > MAX_NODES)
        return rk_error_set(err, RK_ETOPOLOGY, "nodes",
                            "must hold 1..%d nodes in the table scheme, got %zu", MAX_NODES, n);
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].weight != 0 && nodes[i].weight != 1) {
            char path[32];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "must be 0 or 1 in the table scheme, got %g", nodes[i].weight);
        }
        live += nodes[i].weight == 1;
    }
    if (!live)
        return rk_error_set(err, RK_ETOPOLOGY, "nodes", "need a node of weight 1 to own the slots");
    *points = ((const params *)block)->table_size;
    return RK_OK;
}

static unsigned table_bits(const rk_topology *t)
{
    (void)t;
    return 64;
}

static uint64_t id_hash(const char *id, const char *what)
{
    char name[RK_MAX_ID_BYTES + 16];
    int len = snprintf(name, sizeof name, "%s#%s", id, what);
    return rki_hash_xxh3_64.key(name, (size_t)len);
}

/* Maglev's population: the live nodes, in id order, claim in turn their next free slot. */
static int table_fill(const rk_topology *t, uint32_t *owner)
{
    uint32_t m = ((const params *)rki_topology_params(t))->table_size;
    const uint32_t *by_id = rki_topology_order(t);
    size_t n = rk_topology_node_count(t), live = 0;
    uint64_t offset[MAX_NODES], skip[MAX_NODES], next[MAX_NODES];
    uint32_t node[MAX_NODES];
    for (size_t k = 0; k < n; k++) {
        const rk_node *nd = rk_topology_node(t, by_id[k]);
        if (nd->weight != 1)
            continue;
        offset[live] = id_hash(nd->id, "offset") % m;
        skip[live] = id_hash(nd->id, "skip") % (m - 1) + 1;
        next[live] = 0;
        node[live++] = by_id[k];
    }
    for (uint32_t s = 0; s < m; s++)
        owner[s] = UINT32_MAX;
    for (uint32_t filled = 0; filled < m;) {
        for (size_t i = 0; i < live && filled < m; i++) {
            uint64_t c = (offset[i] + next[i] * skip[i]) % m;
            while (owner[c] != UINT32_MAX) /* ends: the permutation reaches every slot */
                c = (offset[i] + ++next[i] * skip[i]) % m;
            owner[c] = node[i];
            next[i]++, filled++;
        }
    }
    return RK_OK;
}

static uint64_t table_key_hash(const rki_hash *hash, const void *block, const void *key, size_t len)
{
    uint32_t m = ((const params *)block)->table_size;
    return rki_slot_position(hash->key(key, len) % m, m, 64);
}

const rki_scheme rki_scheme_table = {
    .name = "table",
    .id = (rk_scheme)101, /* a value of its own: the public enum names only real schemes */
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a table topology has scheme, hash, table_size, nodes, comment and "
               "data",
    .params_size = sizeof(params),
    .read = table_read,
    .write = table_write,
    .check = table_check,
    .differ = table_differ,
    .count = table_count,
    .bits = table_bits,
    .fill = table_fill,
    .key_hash = table_key_hash,
    .trades_why = "the table is filled anew, and a node's turns to claim slots change with the "
                  "nodes",
};
