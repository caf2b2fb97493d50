/* haproxy.c — the haproxy ring scheme of docs/LOADBALANCERS.md: the ring HAProxy builds for a
 * backend with `hash-type consistent` (lb_chash.c), point for point, its key hashes, and its
 * lookup rule.
 *
 * A node's id is the server's numeric HAProxy id (its `id` keyword, or the number HAProxy gave it
 * by its place), 1..1048575. A server of integer weight w gets 16 * w points (BE_WEIGHT_SCALE),
 * point j at full_hash(id * 4096 + j): distinct ids below 2^20 never share a point, since
 * full_hash is a bijection of 32-bit values. A key is hashed whole by one of HAProxy's four hashes,
 * then full_hash again under `avalanche`. The lookup takes the *nearest* point, not the next one
 * clockwise: of the points before and after the key's hash, the one at the smaller distance, the
 * one before on a tie, an exact hit being its own point (chash_get_server_hash). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "internal.h"

#define POINTS_PER_WEIGHT 16   /* BE_WEIGHT_SCALE */
#define ID_STRIDE         4096 /* SRV_EWGHT_RANGE: the points of id i are those of i * 4096 + j */
#define MAX_ID            1048575 /* 2^32 / ID_STRIDE - 1: above it, ids wrap onto smaller ones */
#define MAX_WEIGHT        256     /* HAProxy's own limit on a server's weight */

static const rki_field_note misplaced[] = {
    {"vnode_factor", "HAProxy gives each server 16 points per unit of weight; leave vnode_factor "
                     "out"},
    {"hash_tag", "HAProxy hashes the whole key; leave hash_tag out"},
    {NULL, NULL},
};

static const char *const fields[] = {"request_key", NULL};

static int haproxy_check(const void *params, rk_error *err)
{
    const rki_request_key_params *p = params;
    return rki_request_key_check(&rki_haproxy_request_keys, p->request_key, err);
}

/* Bob Jenkins' full avalanche of HAProxy's tools.h, with its final multiplication. */
static inline uint32_t full_hash(uint32_t a)
{
    a = (a + 0x7ed55d16) + (a << 12);
    a = (a ^ 0xc761c23c) ^ (a >> 19);
    a = (a + 0x165667b1) + (a << 5);
    a = (a + 0xd3a2646c) ^ (a << 9);
    a = (a + 0xfd7046c5) + (a << 3);
    a = (a ^ 0xb55a4f09) ^ (a >> 16);
    return a * 3221225473u;
}

static uint64_t hp_sdbm(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 0;
    for (size_t i = 0; i < len; i++)
        h = p[i] + (h << 6) + (h << 16) - h;
    return h;
}

static uint64_t hp_djb2(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 5381;
    for (size_t i = 0; i < len; i++)
        h = (h << 5) + h + p[i];
    return h;
}

static inline uint32_t rotl(uint32_t v, unsigned s)
{
    return s ? v << s | v >> (32 - s) : v;
}

static uint64_t hp_wt6(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h0 = 0xa53c965a, h1 = 0x5ca6953a;
    unsigned step0 = 6, step1 = 18;
    for (size_t i = 0; i < len; i++) {
        h0 = ~(h0 ^ p[i]);
        h1 = ~(h1 + p[i]);
        uint32_t t = rotl(h1, step0);
        h1 = rotl(h0, step1);
        h0 = t;
        t = ((h0 >> 16) ^ h1) & 0xffff;
        step0 = t & 0x1f;
        step1 = t >> 11;
    }
    return h0 ^ h1;
}

static uint64_t hp_crc32(const void *key, size_t len)
{
    return (uint32_t)crc32_z(0, key, len); /* the standard CRC-32, as HAProxy's bitwise one */
}

#define AVALANCHE_(name)                                                                           \
    static uint64_t hp_##name##_avalanche(const void *key, size_t len)                             \
    {                                                                                              \
        return full_hash((uint32_t)hp_##name(key, len));                                           \
    }
AVALANCHE_(sdbm)
AVALANCHE_(djb2)
AVALANCHE_(wt6)
AVALANCHE_(crc32)
#undef AVALANCHE_

/* An id as HAProxy's `id` keyword writes it: 1..MAX_ID in decimal, no sign or leading zero (so
 * that one server has one id text). 0 when it is not one. */
static uint32_t parse_id(const char *id)
{
    uint32_t v = 0;
    if (id[0] < '1' || id[0] > '9' || strlen(id) > 7)
        return 0;
    for (const char *c = id; *c; c++) {
        if (*c < '0' || *c > '9')
            return 0;
        v = v * 10 + (uint32_t)(*c - '0');
    }
    return v <= MAX_ID ? v : 0;
}

static int node_error(size_t i, const char *field, rk_error *err, const char *why)
{
    char path[64];
    snprintf(path, sizeof path, "nodes[%zu].%s", i, field);
    return rk_error_set(err, RK_ETOPOLOGY, path, "%s", why);
}

static int haproxy_count(const void *params, const rk_node *nodes, size_t n, uint64_t *points,
                         rk_error *err)
{
    (void)params;
    *points = 0;
    for (size_t i = 0; i < n; i++) {
        char why[200];
        if (!parse_id(nodes[i].id)) {
            snprintf(why, sizeof why,
                     "must be the server's HAProxy id in the haproxy scheme: 1..1048575 in "
                     "decimal, no leading zero (docs/LOADBALANCERS.md), got \"%.40s\"",
                     nodes[i].id);
            return node_error(i, "id", err, why);
        }
        if (nodes[i].weight != floor(nodes[i].weight) || nodes[i].weight > MAX_WEIGHT) {
            snprintf(why, sizeof why,
                     "must be an integer 0..%d in the haproxy scheme (0: the server is left out of "
                     "the backend), got %g",
                     MAX_WEIGHT, nodes[i].weight);
            return node_error(i, "weight", err, why);
        }
        *points += (uint64_t)nodes[i].weight * POINTS_PER_WEIGHT;
    }
    return *points > RK_MAX_POINTS
               ? rki_points_error(*points, "haproxy (16 x weight)", "lower the weights", err)
               : RK_OK;
}

static unsigned haproxy_bits(const rk_topology *t)
{
    (void)t;
    return 32;
}

static void haproxy_point_counts(const rk_topology *t, uint32_t *count)
{
    for (size_t k = 0; k < rk_topology_node_count(t); k++)
        count[k] = (uint32_t)rk_topology_node(t, k)->weight * POINTS_PER_WEIGHT;
}

static void haproxy_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    uint32_t base = parse_id(rk_topology_node(t, node)->id) * ID_STRIDE;
    for (uint32_t j = 0; j < count; j++)
        out[j] = full_hash(base + j);
}

/* The nearest point owns a key: the keys after point i up to the middle of the gap to point
 * i + 1 (the middle itself too, a tie going to the point before), then those up to point i + 1
 * itself belong to point i + 1. So point i owns up to p[i] + (p[i + 1] - p[i]) / 2. */
static void haproxy_owned_ends(uint64_t *pos, size_t n, unsigned bits)
{
    (void)bits; /* HAProxy's ring is 32-bit */
    uint32_t first = n ? (uint32_t)pos[0] : 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t p = (uint32_t)pos[i], next = i + 1 < n ? (uint32_t)pos[i + 1] : first;
        pos[i] = (uint32_t)(p + (uint32_t)(next - p) / 2);
    }
}

/* HAProxy's four under its names, each also followed by its `avalanche` modifier, whose name here
 * ends in "_avalanche". Values from 32 (ringkeeper.h). */
#define HAPROXY_HASHES(H)                                                                          \
    H(SDBM, sdbm)                                                                                  \
    H(DJB2, djb2)                                                                                  \
    H(WT6, wt6)                                                                                    \
    H(CRC32, crc32)                                                                                \
    H(SDBM_AVALANCHE, sdbm_avalanche)                                                              \
    H(DJB2_AVALANCHE, djb2_avalanche)                                                              \
    H(WT6_AVALANCHE, wt6_avalanche)                                                                \
    H(CRC32_AVALANCHE, crc32_avalanche)
#define DEF_(suffix, name)                                                                         \
    static const rki_hash def_##name = {RK_HASH_HAPROXY_##suffix, #name, 32, hp_##name, NULL};
HAPROXY_HASHES(DEF_)
#undef DEF_
#define PTR_(suffix, name) &def_##name,
static const rki_hash *const hashes[] = {HAPROXY_HASHES(PTR_)};
#undef PTR_

const rki_scheme rki_scheme_haproxy = {
    .name = "haproxy",
    .id = RK_SCHEME_HAPROXY,
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a haproxy topology has scheme, hash, request_key, nodes, comment "
               "and data",
    .params_size = sizeof(rki_request_key_params),
    .params_strings = rki_request_key_strings,
    .read = rki_request_key_read,
    .write = rki_request_key_write,
    .check = haproxy_check,
    .differ = rki_request_key_differ,
    .count = haproxy_count,
    .bits = haproxy_bits,
    .point_counts = haproxy_point_counts,
    .tie_order = rki_tie_order_by_id, /* points never tie: full_hash is a bijection */
    .positions = haproxy_positions,
    .owned_ends = haproxy_owned_ends,
    .key_hash = rki_key_hash_whole,
    .request_keys = &rki_haproxy_request_keys,
};
