/* grpc_ring_hash.c — the grpc_ring_hash scheme of docs/ENVOY.md: the ring of proxyless gRPC's
 * xDS `ring_hash` policy (gRFC A42, A76) as grpc-js-xds 1.14 builds it
 * (packages/grpc-js-xds/src/load-balancer-ring-hash.ts, constructRing and RingHashPicker).
 *
 * Envoy's ring (scheme/envoy_ring_hash.c) with gRPC's differences: both ring sizes are first
 * capped by the channel's ring size cap (grpc.lb.ring_hash.ring_size_cap, 4096 by default), whose
 * default maximum is 4096 rather than 8388608; the hash is xxHash64 only (grpc-js-xds refuses
 * any other hash_function); there is no use_hostname_for_hashing. Entries at one position keep the
 * order they were made in (JavaScript's sort is stable): the node listed first comes first. */
#include <jansson.h>

#include "internal.h"

#define DEFAULT_MIN  1024
#define DEFAULT_MAX  4096
#define DEFAULT_CAP  4096
#define LARGEST_RING 8388608 /* grpc-js-xds's ABSOLUTE_MAX_RING_SIZE */

static const char *const fields[] = {"minimum_ring_size", "maximum_ring_size", "ring_size_cap",
                                     NULL};
static const rki_field_note misplaced[] = {
    {"vnode_factor", "gRPC sizes its ring from minimum_ring_size, maximum_ring_size and "
                     "ring_size_cap; leave vnode_factor out"},
    {"use_hostname_for_hashing", "gRPC hashes the endpoint's hash_key or address, never a "
                                 "hostname; leave use_hostname_for_hashing out"},
    {"table_size", "only Maglev (\"scheme\": \"maglev\") has a table"},
    {"hash_tag", "gRPC hashes the request's hash; leave hash_tag out"},
    {"request_key", "a key of this scheme is the request's hash, computed by gRPC's hash policy"},
    {NULL, NULL},
};

/* The scheme's parameters (rki_scheme.params_size). */
typedef struct params {
    uint32_t minimum_ring_size, maximum_ring_size;
    uint32_t ring_size_cap; /* the channel's, not the cluster's */
} params;

static int grpc_read(const json_t *doc, void *block, rk_error *err)
{
    params *p = block;
    if (rki_envoy_size_read(doc, "minimum_ring_size", 1, LARGEST_RING, DEFAULT_MIN,
                            &p->minimum_ring_size, err) ||
        rki_envoy_size_read(doc, "maximum_ring_size", 1, LARGEST_RING, DEFAULT_MAX,
                            &p->maximum_ring_size, err))
        return RK_ETOPOLOGY;
    return rki_envoy_size_read(doc, "ring_size_cap", 1, LARGEST_RING, DEFAULT_CAP,
                               &p->ring_size_cap, err);
}

static int grpc_write(const void *block, json_t *doc)
{
    const params *p = block;
    return json_object_set_new(doc, "minimum_ring_size", json_integer(p->minimum_ring_size)) ||
           json_object_set_new(doc, "maximum_ring_size", json_integer(p->maximum_ring_size)) ||
           json_object_set_new(doc, "ring_size_cap", json_integer(p->ring_size_cap));
}

static int grpc_check(const void *block, rk_error *err)
{
    const params *p = block;
    if (p->ring_size_cap < 1 || p->ring_size_cap > LARGEST_RING)
        return rk_error_set(err, RK_ETOPOLOGY, "ring_size_cap", "must be an integer 1..%d, got %u",
                            LARGEST_RING, p->ring_size_cap);
    return rki_ring_sizes_check(p->minimum_ring_size, p->maximum_ring_size, err);
}

/* The sizes the ring is built with: each capped. */
static uint32_t capped(uint32_t size, const params *p)
{
    return size < p->ring_size_cap ? size : p->ring_size_cap;
}

static int grpc_count(const void *block, const rk_node *nodes, size_t n, uint64_t *points,
                      rk_error *err)
{
    const params *p = block;
    return rki_ring_hash_count(nodes, n, capped(p->minimum_ring_size, p),
                               capped(p->maximum_ring_size, p), "grpc_ring_hash", points, err);
}

static void grpc_point_counts(const rk_topology *t, uint32_t *count)
{
    const params *p = rki_topology_params(t);
    /* a topology's nodes are one array, in document order */
    rki_ring_hash_counts(rk_topology_node(t, 0), rk_topology_node_count(t),
                         capped(p->minimum_ring_size, p), capped(p->maximum_ring_size, p), count);
}

static const rki_hash *const hashes[] = {&rki_hash_xx_hash};

const rki_scheme rki_scheme_grpc_ring_hash = {
    .name = "grpc_ring_hash",
    .id = RK_SCHEME_GRPC_RING_HASH,
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; a grpc_ring_hash topology has scheme, hash, minimum_ring_size, "
               "maximum_ring_size, ring_size_cap, nodes, comment and data",
    .params_size = sizeof(params),
    .read = grpc_read,
    .write = grpc_write,
    .check = grpc_check,
    .count = grpc_count,
    .bits = rki_bits_64,
    .point_counts = grpc_point_counts,
    .tie_order = rki_tie_order_as_listed,
    .positions = rki_ring_hash_positions,
    .key_hash = rki_ring_hash_key,
    .size_param = "minimum_ring_size",
    .size_note = "gRPC clients also need their ring_size_cap (4096 by default: "
                 "grpc.lb.ring_hash.ring_size_cap) raised past it",
    .trades_why = "an endpoint's entry count follows the ring's scale and the running sum of the "
                  "normalized weights of the endpoints listed before it, so a change of one "
                  "endpoint adds or drops entries of others",
};
