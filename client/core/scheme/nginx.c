/* nginx.c — the nginx ring scheme of docs/LOADBALANCERS.md: the ring nginx builds for an upstream
 * with `hash <key> consistent` (ngx_http_upstream_hash_module), point for point, and the way it
 * hashes a request's key onto it.
 *
 * A node's id is the server's address as its `server` line writes it ("10.0.0.1:8080"), which
 * nginx splits at the last ':' followed only by digits into host and port ("unix:" paths have no
 * port). A node of integer weight w gets 160 * w points: the CRC-32 of host, one NUL byte, port
 * and the previous point's value as four little-endian bytes (0 before the first). Keys: the
 * CRC-32 of the key's bytes; the first point at or after it owns the key, wrapping past the last.
 * Ties at one position keep one point: nginx's the server written first in the upstream, the
 * lower id here (the configuration's order is not the topology's); two points of different
 * servers meet at one 32-bit value about once in 3,000 pools of ten servers, and only a key of
 * exactly that hash sees the difference. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define POINTS_PER_WEIGHT 160

static const rki_field_note misplaced[] = {
    {"vnode_factor", "nginx gives each server 160 points per unit of weight; leave vnode_factor "
                     "out"},
    {"hash_tag", "nginx hashes the whole key; leave hash_tag out"},
    {NULL, NULL},
};

static const char *const fields[] = {"request_key", NULL};

static int nginx_check(const void *params, rk_error *err)
{
    const rki_request_key_params *p = params;
    return rki_request_key_check(&rki_nginx_request_keys, p->request_key, err);
}

/* nginx reads integer weights; a node of weight 0 is a server left out of the upstream. */
static int nginx_count(const void *params, const rk_node *nodes, size_t n, uint64_t *points,
                       rk_error *err)
{
    (void)params;
    *points = 0;
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].weight != floor(nodes[i].weight)) {
            char path[64];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "must be an integer 0..%d in the nginx scheme (0: the server is "
                                "left out of the upstream), got %g",
                                RK_MAX_WEIGHT, nodes[i].weight);
        }
        *points += (uint64_t)nodes[i].weight * POINTS_PER_WEIGHT;
    }
    return *points > RK_MAX_POINTS
               ? rki_points_error(*points, "nginx (160 x weight)", "lower the weights", err)
               : RK_OK;
}

static unsigned nginx_bits(const rk_topology *t)
{
    (void)t;
    return 32;
}

static void nginx_point_counts(const rk_topology *t, uint32_t *count)
{
    for (size_t k = 0; k < rk_topology_node_count(t); k++)
        count[k] = (uint32_t)rk_topology_node(t, k)->weight * POINTS_PER_WEIGHT;
}

/* A server's address as nginx splits it: a "unix:" path is all host, else the host runs to the
 * last ':' that only digits follow, which start the port; else there is no port. */
typedef struct address {
    const char *host, *port;
    size_t host_len, port_len;
} address;

static address split(const char *id)
{
    size_t len = strlen(id);
    if (len >= 5 && strncasecmp(id, "unix:", 5) == 0)
        return (address){id + 5, "", len - 5, 0};
    for (size_t j = 0; j < len && id[len - j - 1] >= '0' && id[len - j - 1] <= '9'; j++)
        if (j + 1 < len && id[len - j - 2] == ':')
            return (address){id, id + len - j - 1, len - j - 2, j + 1};
    if (len > 0 && id[len - 1] == ':') /* "host:": an empty port */
        return (address){id, "", len - 1, 0};
    return (address){id, "", len, 0};
}

static void nginx_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out)
{
    address a = split(rk_topology_node(t, node)->id);
    unsigned char buf[RK_MAX_ID_BYTES + 8];
    /* host, NUL, port: the same for every point, then the previous point's four bytes */
    memcpy(buf, a.host, a.host_len);
    buf[a.host_len] = 0;
    memcpy(buf + a.host_len + 1, a.port, a.port_len);
    size_t at = a.host_len + 1 + a.port_len;
    uint32_t prev = 0;
    for (uint32_t j = 0; j < count; j++) {
        for (int b = 0; b < 4; b++)
            buf[at + (size_t)b] = (unsigned char)(prev >> (8 * b));
        prev = (uint32_t)rki_ketama_crc32a.key(buf, at + 4);
        out[j] = prev;
    }
}

static const rki_hash *const hashes[] = {&rki_ketama_crc32a};

const rki_scheme rki_scheme_nginx = {
    .name = "nginx",
    .id = RK_SCHEME_NGINX,
    .hashes = hashes,
    .n_hashes = sizeof hashes / sizeof hashes[0],
    .fields = fields,
    .misplaced = misplaced,
    .unknown = "unknown field; an nginx topology has scheme, hash, request_key, nodes, comment "
               "and data",
    .params_size = sizeof(rki_request_key_params),
    .params_strings = rki_request_key_strings,
    .read = rki_request_key_read,
    .write = rki_request_key_write,
    .check = nginx_check,
    .differ = rki_request_key_differ,
    .count = nginx_count,
    .bits = nginx_bits,
    .point_counts = nginx_point_counts,
    .tie_order = rki_tie_order_by_id,
    .positions = nginx_positions,
    .key_hash = rki_key_hash_whole /* the standard CRC-32 of the key's bytes */,
    .request_keys = &rki_nginx_request_keys,
};
