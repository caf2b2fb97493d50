/* maglev.c — the maglev scheme of docs/ENVOY.md: the lookup table Envoy's `maglev` load balancer
 * fills (source/extensions/load_balancing_policies/maglev/maglev_lb.cc), slot for slot, and its
 * pick of a request hash: slot hash mod table_size. A table scheme (table.c).
 *
 * The live nodes, in the byte order of their keys (their ids: the endpoint's envoy.lb hash_key, or
 * the address or hostname Envoy would hash without one), each have a permutation of the M slots,
 * offset xxHash64(key, seed 0) mod M stepping by xxHash64(key, seed 1) mod (M - 1) + 1. Rounds
 * 1, 2, ... pass over them; a node of normalized weight w takes a turn in round r unless r x w
 * is below its target (which starts at 0 and grows by the largest normalized weight at each turn
 * taken), and a turn claims the next free slot of its permutation, until the table is full. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal.h"

#define DEFAULT_TABLE 65537

static const char *const fields[] = {"table_size", "use_hostname_for_hashing", NULL};
static const rki_field_note misplaced[] = {
    {"vnode_factor", "Maglev has one point per slot of its table; set table_size instead"},
    {"minimum_ring_size", "Maglev has a table, not a ring; set table_size instead"},
    {"maximum_ring_size", "Maglev has a table, not a ring; set table_size instead"},
    {"ring_size_cap", "only gRPC's ring (\"scheme\": \"grpc_ring_hash\") has a ring size cap"},
    {"hash_tag", "Maglev hashes the request's hash; leave hash_tag out"},
    {"request_key", "a key of this scheme is the request's hash, computed by Envoy's hash policy"},
    {NULL, NULL},
};

/* The scheme's parameters (rki_scheme.params_size). */
typedef struct params {
    uint32_t table_size;          /* M, a prime */
    int use_hostname_for_hashing; /* the cluster's; the ids already say which key Envoy hashes */
} params;

static int maglev_read(const json_t *doc, void *block, rk_error *err)
{
    params *p = block;
    if (rki_envoy_size_read(doc, "table_size", 2, RK_MAX_POINTS, DEFAULT_TABLE, &p->table_size,
                            err))
        return RK_ETOPOLOGY;
    return rki_envoy_flag_read(doc, "use_hostname_for_hashing", &p->use_hostname_for_hashing, err);
}

static int maglev_write(const void *block, json_t *doc)
{
    const params *p = block;
    return json_object_set_new(doc, "table_size", json_integer(p->table_size)) ||
           json_object_set_new(doc, "use_hostname_for_hashing",
                               json_boolean(p->use_hostname_for_hashing));
}

static int is_prime(uint32_t m)
{
    for (uint32_t d = 2; (uint64_t)d * d <= m; d++)
        if (m % d == 0)
            return 0;
    return m >= 2;
}

/* Envoy refuses a table size that is not prime ("The table size of maglev must be prime number"):
 * a permutation must reach every slot. Its bound is 5000011; a ring here holds RK_MAX_POINTS. */
static int maglev_check(const void *block, rk_error *err)
{
    uint32_t m = ((const params *)block)->table_size;
    if (m < 2 || m > RK_MAX_POINTS || !is_prime(m))
        return rk_error_set(err, RK_ETOPOLOGY, "table_size",
                            "must be a prime 2..%u (Envoy's default is 65537), got %u",
                            RK_MAX_POINTS, m);
    return RK_OK;
}

/* Two tables of different sizes put a request hash in unrelated slots. */
static int maglev_differ(const void *a, const void *b, rk_error *err)
{
    uint32_t ma = ((const params *)a)->table_size, mb = ((const params *)b)->table_size;
    if (ma != mb)
        return rk_error_set(err, RK_EHASHMISMATCH, "table_size",
                            "the versions have tables of %u and %u slots: a request hash falls in "
                            "unrelated slots",
                            ma, mb);
    return RK_OK;
}

static int maglev_count(const void *block, const rk_node *nodes, size_t n, uint64_t *points,
                        rk_error *err)
{
    *points = 0;
    if (rki_envoy_integer_weights(nodes, n, "maglev", err))
        return RK_ETOPOLOGY;
    *points = ((const params *)block)->table_size;
    return RK_OK;
}

/* A live node's place in the population (Envoy's TableBuildEntry). */
typedef struct entry {
    uint64_t slot, skip; /* slot: (offset + skip * next) mod M, Envoy's permutation(), stepped */
    uint64_t inverse;    /* skip^-1 mod M once a turn has needed it (nearest), else 0 */
    double weight, target;
    uint32_t node;
} entry;

/* The live nodes in key byte order, as Envoy sorts them: n of them into e. */
static size_t entries(const rk_topology *t, uint32_t m, entry *e)
{
    const uint32_t *by_id = rki_topology_order(t);
    size_t nodes = rk_topology_node_count(t), n = 0;
    double sum = rki_envoy_weight_sum(rk_topology_node(t, 0), nodes);
    for (size_t k = 0; k < nodes; k++) {
        const rk_node *nd = rk_topology_node(t, by_id[k]);
        if (nd->weight == 0)
            continue;
        size_t len = strlen(nd->id);
        e[n] = (entry){.slot = XXH64(nd->id, len, 0) % m,
                       .skip = XXH64(nd->id, len, 1) % (m - 1) + 1,
                       .weight = nd->weight / sum,
                       .node = by_id[k]};
        n++;
    }
    return n;
}

/* The next slot of a permutation: an addition where Envoy multiplies and divides. */
static inline uint64_t next_slot(uint64_t slot, uint64_t skip, uint32_t m)
{
    slot += skip;
    return slot >= m ? slot - m : slot;
}

/* Arithmetic modulo the table size m <= RK_MAX_POINTS < 2^23 by Barrett's reduction (r is
 * floor((2^64 - 1) / m)): a product of factors below 2^24 comes within 2m of its remainder with
 * one multiplication, where a division would cost as much as the walk it replaces. */
typedef struct modulus {
    uint64_t m, r;
} modulus;

static inline uint64_t mul_mod(modulus md, uint64_t x, uint64_t y)
{
    uint64_t p = x * y, q = (uint64_t)(((unsigned __int128)p * md.r) >> 64);
    p -= q * md.m;
    return p >= md.m ? p - md.m : p;
}

/* a^-1 mod m, m prime (maglev_check): a^(m-2), Fermat's little theorem. */
static uint64_t inverse_mod(modulus md, uint64_t a)
{
    uint64_t r = 1;
    for (uint64_t e = md.m - 2; e; e >>= 1, a = mul_mod(md, a, a))
        if (e & 1)
            r = mul_mod(md, r, a);
    return r;
}

/* The first free slot of a permutation from `c` on. */
static inline uint64_t walk(const uint64_t *taken, uint64_t c, uint64_t skip, uint32_t m)
{
    while (taken[c / 64] >> (c % 64) & 1) /* ends: m is prime, so every slot comes */
        c = next_slot(c, skip, m);
    return c;
}

/* The free slots, in slot order, into `free` (which has room for all of them). */
static size_t free_slots(const uint64_t *taken, uint32_t m, uint32_t *free)
{
    size_t n = 0;
    for (uint32_t w = 0; w < (m + 63) / 64; w++)
        for (uint64_t bits = ~taken[w]; bits; bits &= bits - 1) {
            uint32_t s = w * 64 + (uint32_t)__builtin_ctzll(bits);
            if (s < m)
                free[n++] = s;
        }
    return n;
}

/* The table's filling (Envoy's OriginalMaglevTable::constructImplementationInternals): rounds
 * of turns, each claiming the next free slot of the node's permutation, until the table is full. */
typedef struct filling {
    entry *e;
    size_t n;
    double most; /* the largest normalized weight */
    modulus md;
    /* a bitmap (8 KiB at M = 65537, in the first-level cache): the walks read it */
    uint64_t *taken;
    uint32_t *owner;
    uint32_t *free; /* the last free slots, n_free of them, once the walks have left `late` */
    size_t n_free, late;
} filling;

/* The free slot a walk from e->slot would reach first: the one whose distance along e's
 * permutation, (slot - e->slot) x skip^-1 mod m, is least. Taken out of f->free. */
static uint64_t nearest(filling *f, entry *e)
{
    modulus md = f->md;
    if (!e->inverse)
        e->inverse = inverse_mod(md, e->skip);
    size_t best = 0;
    uint64_t least = UINT64_MAX;
    for (size_t k = 0; k < f->n_free; k++) {
        uint64_t d = mul_mod(md, f->free[k] + md.m - e->slot, e->inverse);
        if (d < least)
            least = d, best = k;
    }
    uint64_t c = f->free[best];
    f->free[best] = f->free[--f->n_free];
    return c;
}

/* Where the turn of e claims a slot with `left` slots free. A walk takes about m / left probes;
 * once `late` or fewer are left, a turn weighs each free slot instead (nearest), as cheap as two
 * probes: below about sqrt(m / 2) free slots that is less work. Either way the same slot. */
static uint64_t turn(filling *f, entry *e, uint64_t left)
{
    if (left <= f->late)
        return nearest(f, e);
    uint32_t m = (uint32_t)f->md.m;
    uint64_t c = walk(f->taken, e->slot, e->skip, m);
    f->taken[c / 64] |= (uint64_t)1 << (c % 64);
    if (left - 1 == f->late)
        f->n_free = free_slots(f->taken, m, f->free);
    return c;
}

static void claim(filling *f)
{
    uint64_t m = f->md.m, filled = 0;
    for (uint32_t round = 1; filled < m; round++) {
        for (size_t i = 0; i < f->n && filled < m; i++) {
            entry *e = &f->e[i];
            if ((double)round * e->weight < e->target)
                continue;
            e->target += f->most;
            uint64_t c = turn(f, e, m - filled);
            f->owner[c] = e->node;
            e->slot = next_slot(c, e->skip, (uint32_t)m);
            filled++;
        }
    }
}

static int maglev_fill(const rk_topology *t, uint32_t *owner)
{
    uint32_t m = ((const params *)rki_topology_params(t))->table_size;
    filling f = {.md = {m, UINT64_MAX / m}, .owner = owner, .late = 1};
    while ((f.late + 1) * (f.late + 1) <= m / 2)
        f.late++;
    f.e = malloc(rk_topology_node_count(t) * sizeof *f.e);
    f.taken = calloc((m + 63) / 64, sizeof *f.taken);
    f.free = malloc(f.late * sizeof *f.free);
    if (!f.e || !f.taken || !f.free) {
        free(f.e), free(f.taken), free(f.free);
        return RK_ENOMEM;
    }
    f.n = entries(t, m, f.e);
    for (size_t i = 0; i < f.n; i++)
        f.most = f.e[i].weight > f.most ? f.e[i].weight : f.most;
    claim(&f);
    free(f.e), free(f.taken), free(f.free);
    return RK_OK;
}

static uint64_t maglev_key_hash(const rki_hash *hash, const void *block, const void *key,
                                size_t len)
{
    (void)hash;
    uint32_t m = ((const params *)block)->table_size;
    return rki_slot_position(rki_envoy_request_hash(key, len) % m, m, 64);
}

static const rki_hash *const hashes[] = {&rki_hash_xx_hash};

const rki_scheme rki_scheme_maglev = {
    .name = "maglev",
    .id = RK_SCHEME_MAGLEV,
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a maglev topology has scheme, hash, table_size, "
               "use_hostname_for_hashing, nodes, comment and data",
    .params_size = sizeof(params),
    .read = maglev_read,
    .write = maglev_write,
    .check = maglev_check,
    .differ = maglev_differ,
    .count = maglev_count,
    .bits = rki_bits_64,
    .fill = maglev_fill,
    .key_hash = maglev_key_hash,
    .size_param = "table_size",
    .size_note = NULL,
    .trades_why = "the table is filled anew, and a host's turns to claim slots change with the "
                  "hosts and their weights",
};
