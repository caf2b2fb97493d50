/* envoy_ring_hash.c — the envoy_ring_hash scheme of docs/ENVOY.md: the ring Envoy's `ring_hash`
 * load balancer builds (source/extensions/load_balancing_policies/ring_hash/ring_hash_lb.cc),
 * entry for entry, and its pick of a request hash.
 *
 * A node's key is its id (the endpoint's envoy.lb `hash_key`, or the address or hostname Envoy
 * would hash without one). The live nodes, in document order (the order of the cluster's hosts),
 * take entries by running sums (rki_ring_hash_counts) between minimum_ring_size and
 * maximum_ring_size; entry i of a node is at H("<key>_<i>"), H xxHash64 or MURMUR_HASH_2. A
 * request hash is owned by the first entry at or after it, wrapping past the last (Envoy's port of
 * ketama's search). Envoy's std::sort leaves entries at one position in no set order; here the
 * node listed first comes first. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

#define DEFAULT_MIN  1024
#define DEFAULT_MAX  8388608
#define LARGEST_RING 8388608 /* Envoy's bound on both sizes (cluster.proto) */

static const char *const fields[] = {"minimum_ring_size", "maximum_ring_size",
                                     "use_hostname_for_hashing", NULL};
static const rki_field_note misplaced[] = {
    {"vnode_factor", "Envoy sizes its ring from minimum_ring_size and maximum_ring_size; leave "
                     "vnode_factor out"},
    {"ring_size_cap", "only gRPC's ring (\"scheme\": \"grpc_ring_hash\") has a ring size cap"},
    {"table_size", "only Maglev (\"scheme\": \"maglev\") has a table"},
    {"hash_tag", "Envoy hashes the request's hash; leave hash_tag out"},
    {"request_key", "a key of this scheme is the request's hash, computed by Envoy's hash policy"},
    {NULL, NULL},
};

/* The scheme's parameters (rki_scheme.params_size). */
typedef struct params {
    uint32_t minimum_ring_size, maximum_ring_size;
    int use_hostname_for_hashing; /* the cluster's; the ids already say which key Envoy hashes */
} params;

static int envoy_read(const json_t *doc, void *block, rk_error *err)
{
    params *p = block;
    if (rki_envoy_size_read(doc, "minimum_ring_size", 1, LARGEST_RING, DEFAULT_MIN,
                            &p->minimum_ring_size, err) ||
        rki_envoy_size_read(doc, "maximum_ring_size", 1, LARGEST_RING, DEFAULT_MAX,
                            &p->maximum_ring_size, err))
        return RK_ETOPOLOGY;
    return rki_envoy_flag_read(doc, "use_hostname_for_hashing", &p->use_hostname_for_hashing, err);
}

static int envoy_write(const void *block, json_t *doc)
{
    const params *p = block;
    return json_object_set_new(doc, "minimum_ring_size", json_integer(p->minimum_ring_size)) ||
           json_object_set_new(doc, "maximum_ring_size", json_integer(p->maximum_ring_size)) ||
           json_object_set_new(doc, "use_hostname_for_hashing",
                               json_boolean(p->use_hostname_for_hashing));
}

int rki_ring_sizes_check(uint32_t min_size, uint32_t max_size, rk_error *err)
{
    if (min_size < 1 || min_size > LARGEST_RING)
        return rk_error_set(err, RK_ETOPOLOGY, "minimum_ring_size",
                            "must be an integer 1..%d, got %u", LARGEST_RING, min_size);
    if (max_size < min_size || max_size > LARGEST_RING)
        return rk_error_set(err, RK_ETOPOLOGY, "maximum_ring_size",
                            "must be an integer minimum_ring_size (%u)..%d, got %u", min_size,
                            LARGEST_RING, max_size);
    return RK_OK;
}

/* Envoy refuses a minimum above the maximum ("minimum_ring_size (...) > maximum_ring_size"). */
static int envoy_check(const void *block, rk_error *err)
{
    const params *p = block;
    return rki_ring_sizes_check(p->minimum_ring_size, p->maximum_ring_size, err);
}

int rki_ring_hash_count(const rk_node *nodes, size_t n, uint32_t min_size, uint32_t max_size,
                        const char *scheme, uint64_t *points, rk_error *err)
{
    *points = 0;
    if (rki_envoy_integer_weights(nodes, n, scheme, err))
        return RK_ETOPOLOGY;
    *points = rki_ring_hash_counts(nodes, n, min_size, max_size, NULL);
    return *points > RK_MAX_POINTS
               ? rki_points_error(*points, "the ring's entries",
                                  "lower maximum_ring_size, or the spread of the weights", err)
               : RK_OK;
}

static int envoy_count(const void *block, const rk_node *nodes, size_t n, uint64_t *points,
                       rk_error *err)
{
    const params *p = block;
    return rki_ring_hash_count(nodes, n, p->minimum_ring_size, p->maximum_ring_size,
                               "envoy_ring_hash", points, err);
}

unsigned rki_bits_64(const rk_topology *t)
{
    (void)t;
    return 64;
}

static void envoy_point_counts(const rk_topology *t, uint32_t *count)
{
    const params *p = rki_topology_params(t);
    /* a topology's nodes are one array, in document order */
    rki_ring_hash_counts(rk_topology_node(t, 0), rk_topology_node_count(t), p->minimum_ring_size,
                         p->maximum_ring_size, count);
}

/* Counts up the decimal number of `len` digits at d (room for one more): 9 -> 10, 199 -> 200. */
static void count_up(char *d, size_t *len)
{
    size_t i = *len;
    while (i > 0 && d[i - 1] == '9')
        d[--i] = '0';
    if (i > 0) {
        d[i - 1]++;
        return;
    }
    d[0] = '1';
    d[(*len)++] = '0';
}

/* The names "<id>_<i>" are written by counting up in place: a printf per entry was most of the
 * time of a large ring's build. */
void rki_ring_hash_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    const char *id = rk_topology_node(t, node)->id;
    const rki_hash *h = rki_hash_of(rk_topology_hash(t));
    char name[RK_MAX_ID_BYTES + 16];
    size_t id_len = strlen(id), digits = 1;
    memcpy(name, id, id_len);
    name[id_len] = '_';
    name[id_len + 1] = '0';
    for (uint32_t i = 0; i < count; i++, count_up(name + id_len + 1, &digits))
        out[i] = h->key(name, id_len + 1 + digits);
}

uint64_t rki_ring_hash_key(const rki_hash *hash, const void *params, const void *key, size_t len)
{
    (void)hash, (void)params;
    return rki_envoy_request_hash(key, len);
}

static const rki_hash *const hashes[] = {&rki_hash_xx_hash, &rki_hash_murmur_hash_2};

const rki_scheme rki_scheme_envoy_ring_hash = {
    .name = "envoy_ring_hash",
    .id = RK_SCHEME_ENVOY_RING_HASH,
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; an envoy_ring_hash topology has scheme, hash, minimum_ring_size, "
               "maximum_ring_size, use_hostname_for_hashing, nodes, comment and data",
    .params_size = sizeof(params),
    .read = envoy_read,
    .write = envoy_write,
    .check = envoy_check,
    .count = envoy_count,
    .bits = rki_bits_64,
    .point_counts = envoy_point_counts,
    .tie_order = rki_tie_order_as_listed,
    .positions = rki_ring_hash_positions,
    .key_hash = rki_ring_hash_key,
    .size_param = "minimum_ring_size",
    .size_note = NULL,
    .trades_why = "a host's entry count follows the ring's scale and the running sum of the "
                  "normalized weights of the hosts listed before it, so a change of one host adds "
                  "or drops entries of others",
};
