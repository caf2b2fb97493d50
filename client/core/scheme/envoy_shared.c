/* envoy_shared.c — what the schemes of Envoy's and gRPC's hashing balancers share
 * (docs/ENVOY.md): a key is the request's 64-bit hash, weights are integers and normalized over
 * the live hosts, a ring's entry counts are running sums over the hosts in their listed order, and
 * the use_hostname_for_hashing flag is read and written alike. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* The request hash written in decimal ("12510165605170634711", as Envoy's trace logs and the
 * vectors write it), else the xxHash64 of the key's bytes, which is what Envoy's and gRPC's header
 * and cookie hash policies compute from a single value. */
uint64_t rki_envoy_request_hash(const void *key, size_t len)
{
    const unsigned char *k = key;
    uint64_t h = 0;
    int decimal = len >= 1 && len <= 20 && (len == 1 || k[0] != '0');
    for (size_t i = 0; decimal && i < len; i++) {
        unsigned d = (unsigned)k[i] - '0';
        decimal = d <= 9 && h <= (UINT64_MAX - d) / 10;
        h = h * 10 + d;
    }
    return decimal ? h : rki_hash_xx_hash.key(key, len);
}

int rki_envoy_integer_weights(const rk_node *nodes, size_t n, const char *scheme, rk_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].weight != floor(nodes[i].weight)) {
            char path[64];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "must be an integer 0..%d in the %s scheme (an endpoint's "
                                "load_balancing_weight; 0: not in the cluster), got %g",
                                RK_MAX_WEIGHT, scheme, nodes[i].weight);
        }
    }
    return RK_OK;
}

double rki_envoy_weight_sum(const rk_node *nodes, size_t n)
{
    uint64_t sum = 0; /* integers, summed exactly as Envoy and grpc-js do */
    for (size_t i = 0; i < n; i++)
        sum += (uint64_t)nodes[i].weight;
    return (double)sum;
}

/* Envoy's Ring constructor (ring_hash_lb.cc) and grpc-js-xds's constructRing, step by step: the
 * scale makes the least-weighted host's share a whole number of entries at min_size unless that
 * passes max_size; a host then takes entries while the running count is below the running target
 * of scale x its normalized weight, which is ceil(target) - count of them. */
uint64_t rki_ring_hash_counts(const rk_node *nodes, size_t n, uint64_t min_size, uint64_t max_size,
                              uint32_t *count)
{
    double sum = rki_envoy_weight_sum(nodes, n), least = 1.0;
    for (size_t i = 0; i < n; i++)
        if (nodes[i].weight > 0 && nodes[i].weight / sum < least)
            least = nodes[i].weight / sum;
    double scale = ceil(least * (double)min_size) / least;
    if (scale > (double)max_size)
        scale = (double)max_size;
    double current = 0, target = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = 0;
        if (nodes[i].weight > 0) {
            target += scale * (nodes[i].weight / sum);
            c = target > current ? (uint32_t)(ceil(target) - current) : 0;
            current += c;
        }
        if (count)
            count[i] = c;
    }
    return (uint64_t)current;
}

void rki_tie_order_as_listed(const rk_topology *t, uint32_t *order)
{
    for (size_t k = 0; k < rk_topology_node_count(t); k++)
        order[k] = (uint32_t)k;
}

int rki_envoy_flag_read(const json_t *doc, const char *key, int *out, rk_error *err)
{
    const json_t *v = json_object_get(doc, key);
    if (v && !json_is_boolean(v))
        return rk_error_set(err, RK_ETOPOLOGY, key, "must be true or false");
    *out = json_is_true(v);
    return RK_OK;
}

int rki_envoy_size_read(const json_t *doc, const char *key, uint32_t lo, uint32_t hi,
                        uint32_t fallback, uint32_t *out, rk_error *err)
{
    const json_t *v = json_object_get(doc, key);
    *out = fallback;
    return v ? rki_json_uint(v, lo, hi, key, out, err) : RK_OK;
}
