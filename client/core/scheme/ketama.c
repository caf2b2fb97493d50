/* ketama.c — the ketama ring scheme of docs/KETAMA.md: the ring twemproxy (nutcracker) and
 * libmemcached build, point for point, and the way twemproxy hashes a key onto it.
 *
 * Points: over the n nodes with weight > 0 and their total weight W, a node of weight w gets
 * floorf(w / W * 160 / 4 * n + 1e-10) * 4 points, in single precision as twemproxy computes it
 * (its 1e-10 is a double that floorf's float argument rounds away, so it is left out here); they
 * are the four little-endian words of MD5("<id>-<j>") for j = 0, 1, ... Ties at one position go
 * to the node with the shorter id, then the lower id bytes (the order twemproxy keeps its servers
 * in). Keys: the part between the hash tag's two characters, when there is a non-empty one; the
 * empty key hashes to 0, whatever the function. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nettle/md5.h>

#include "internal.h"

#define POINTS_PER_SERVER 160 /* on average: 40 digests of 4 points */

uint32_t rki_ketama_point_count(uint32_t weight, uint32_t total_weight, uint32_t live)
{
    if (weight == 0)
        return 0;
    float pct = (float)weight / (float)total_weight;
    return (uint32_t)floorf(pct * (float)POINTS_PER_SERVER / 4.0f * (float)live) * 4;
}

/* n and W of the formula: the nodes with weight > 0 and their total weight. */
static void live_nodes(const rk_node *nodes, size_t n, uint32_t *live, uint32_t *total)
{
    *live = 0, *total = 0;
    for (size_t i = 0; i < n; i++) {
        *live += nodes[i].weight > 0;
        *total += (uint32_t)nodes[i].weight; /* an integer: topology.c checked */
    }
}

/* Decimal digits of v. */
static size_t digits(uint32_t v)
{
    size_t d = 1;
    while (v >= 10)
        v /= 10, d++;
    return d;
}

static const char *const fields[] = {"hash_tag", NULL};
static const rki_field_note misplaced[] = {
    {"vnode_factor", "the ketama scheme fixes each node's points (160 per server on average); "
                     "leave vnode_factor out"},
    {"request_key", "only the balancer schemes (nginx, haproxy) take keys from requests"},
    {NULL, NULL},
};

/* The scheme's parameters (rki_scheme.params_size). */
typedef struct params {
    const char *hash_tag; /* two characters, or NULL */
} params;

static const size_t strings[] = {offsetof(params, hash_tag), RKI_PARAMS_END};

static int ketama_read(const json_t *doc, void *block, rk_error *err)
{
    params *p = block;
    const json_t *v = json_object_get(doc, "hash_tag");
    return v ? rki_json_text(v, "hash_tag", "two characters, such as \"{}\"", &p->hash_tag, err)
             : RK_OK;
}

static int ketama_write(const void *block, json_t *doc)
{
    const char *tag = ((const params *)block)->hash_tag;
    return tag ? json_object_set_new(doc, "hash_tag", json_string(tag)) : 0;
}

/* twemproxy takes a hash tag of exactly two characters; printable ASCII keeps it typeable. */
static int ketama_check(const void *block, rk_error *err)
{
    const char *tag = ((const params *)block)->hash_tag;
    if (tag && (strlen(tag) != 2 || tag[0] <= ' ' || tag[0] > '~' || tag[1] <= ' ' || tag[1] > '~'))
        return rk_error_set(err, RK_ETOPOLOGY, "hash_tag",
                            "must be two printable ASCII characters, such as \"{}\"");
    return RK_OK;
}

/* twemproxy reads integer weights (the point counts follow the whole pool). */
static int integer_weights(const rk_node *nodes, size_t n, rk_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].weight != floor(nodes[i].weight)) {
            char path[64];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "must be an integer 0..%d in the ketama scheme, got %g",
                                RK_MAX_WEIGHT, nodes[i].weight);
        }
    }
    return RK_OK;
}

/* Integer weights, and the ring's point count, refused (naming the node) when a point name would
 * not fit RKI_KETAMA_NAME_MAX, or past RK_MAX_POINTS. */
static int ketama_count(const void *block, const rk_node *nodes, size_t n, uint64_t *points,
                        rk_error *err)
{
    (void)block;
    uint32_t live, total;
    *points = 0;
    if (integer_weights(nodes, n, err))
        return RK_ETOPOLOGY;
    live_nodes(nodes, n, &live, &total);
    *points = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t count = rki_ketama_point_count((uint32_t)nodes[i].weight, total, live);
        size_t name = strlen(nodes[i].id) + 1 + (count ? digits(count / 4 - 1) : 0);
        if (name > RKI_KETAMA_NAME_MAX) {
            char path[64];
            snprintf(path, sizeof path, "nodes[%zu].id", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "twemproxy hashes \"<id>-<n>\" in at most %d bytes, and this id "
                                "needs %zu for its %u points: shorten it",
                                RKI_KETAMA_NAME_MAX, name, count);
        }
        *points += count;
    }
    return *points > RK_MAX_POINTS
               ? rki_points_error(*points, "ketama",
                                  "ketama gives each node about 160 points: use fewer nodes", err)
               : RK_OK;
}

static int ketama_differ(const void *a, const void *b, rk_error *err)
{
    const char *ta = ((const params *)a)->hash_tag, *tb = ((const params *)b)->hash_tag;
    if ((ta || tb) && !(ta && tb && strcmp(ta, tb) == 0))
        return rk_error_set(err, RK_EHASHMISMATCH, "hash_tag",
                            "the versions use hash tags \"%s\" and \"%s\": tagged keys would move",
                            ta ? ta : "", tb ? tb : "");
    return RK_OK;
}

/* The part inside the hash tag when non-empty, the empty key at 0, else hash's. */
static uint64_t ketama_key_hash(const rki_hash *hash, const void *block, const void *key,
                                size_t len)
{
    const char *k = key, *tag = ((const params *)block)->hash_tag;
    if (tag) {
        const char *start = memchr(k, tag[0], len);
        const char *end = start ? memchr(start + 1, tag[1], len - (size_t)(start + 1 - k)) : NULL;
        if (end && end - start > 1)
            k = start + 1, len = (size_t)(end - k);
    }
    return len ? hash->key(k, len) : 0;
}

static unsigned ketama_bits(const rk_topology *t)
{
    (void)t;
    return 32;
}

static void ketama_point_counts(const rk_topology *t, uint32_t *count)
{
    size_t n = rk_topology_node_count(t);
    uint32_t live, total;
    live_nodes(rk_topology_node(t, 0), n, &live, &total); /* a topology's nodes are one array */
    for (size_t k = 0; k < n; k++)
        count[k] = rki_ketama_point_count((uint32_t)rk_topology_node(t, k)->weight, total, live);
}

/* The id order (already sorted bytewise) made stable by length: a counting pass over lengths keeps
 * the byte order within each length, with no comparator and so no shared state. */
static void ketama_tie_order(const rk_topology *t, uint32_t *order)
{
    size_t n = rk_topology_node_count(t);
    const uint32_t *by_bytes = rki_topology_order(t);
    size_t start[RK_MAX_ID_BYTES + 2] = {0};
    for (size_t k = 0; k < n; k++)
        start[strlen(rk_topology_node(t, by_bytes[k])->id) + 1]++;
    for (size_t len = 1; len < RK_MAX_ID_BYTES + 2; len++)
        start[len] += start[len - 1];
    for (size_t k = 0; k < n; k++)
        order[start[strlen(rk_topology_node(t, by_bytes[k])->id)]++] = by_bytes[k];
}

static void ketama_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    const char *id = rk_topology_node(t, node)->id;
    char name[RKI_KETAMA_NAME_MAX + 1];
    uint8_t d[MD5_DIGEST_SIZE];
    for (uint32_t j = 0; j < count / 4; j++) {
        int len = snprintf(name, sizeof name, "%s-%u", id, j);
        struct md5_ctx ctx;
        md5_init(&ctx);
        md5_update(&ctx, (size_t)len, (const uint8_t *)name);
        md5_digest(&ctx, sizeof d, d);
        for (unsigned w = 0; w < 4; w++)
            out[4 * j + w] = (uint64_t)d[4 * w] | (uint64_t)d[4 * w + 1] << 8 |
                             (uint64_t)d[4 * w + 2] << 16 | (uint64_t)d[4 * w + 3] << 24;
    }
}

const rki_scheme rki_scheme_ketama = {
    .name = "ketama",
    .id = RK_SCHEME_KETAMA,
    .hashes = rki_ketama_hashes,
    .n_hashes = RKI_KETAMA_N_HASHES,
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a ketama topology has scheme, hash, hash_tag, nodes, comment and "
               "data",
    .params_size = sizeof(params),
    .params_strings = strings,
    .read = ketama_read,
    .write = ketama_write,
    .check = ketama_check,
    .differ = ketama_differ,
    .count = ketama_count,
    .bits = ketama_bits,
    .point_counts = ketama_point_counts,
    .tie_order = ketama_tie_order,
    .positions = ketama_positions,
    .key_hash = ketama_key_hash,
    .trades_why = "ketama recounts every server's points when the server count or the total "
                  "weight changes",
};

rk_topology *rk_topology_new_ketama(rk_hash_alg hash, const char *hash_tag, const rk_node *nodes,
                                    size_t n_nodes, const char *comment, rk_error *err)
{
    params p = {.hash_tag = hash_tag};
    return rki_topology_make(&rki_scheme_ketama, hash, &p, nodes, n_nodes, comment, err);
}

const char *rk_topology_hash_tag(const rk_topology *t)
{
    return rki_topology_scheme(t) == &rki_scheme_ketama
               ? ((const params *)rki_topology_params(t))->hash_tag
               : NULL;
}
