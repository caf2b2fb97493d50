/* ring.c — the consistent-hash ring of SPEC section 2: build, lookup, replicas, shares, fingerprint.
 *
 * Layout: positions sorted ascending in one array, the node of each point in a parallel array (16-bit
 * when the topology has fewer than 65536 nodes), and a bucket index over the top bits of the position
 * so a lookup is one or two cache misses instead of a ~20-step binary search. */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal.h"

#define RADIX_BITS  11
#define RADIX_SIZE  (1u << RADIX_BITS)
#define RADIX_PASS  6 /* ceil(64 / RADIX_BITS) */
#define PER_BUCKET  4 /* average points per bucket of the lookup index */

/* Passes whose digit is the same for every key are skipped, so 32-bit positions cost three passes. */
int rki_radix_sort(uint64_t **key, uint32_t **val, size_t n)
{
    uint32_t(*count)[RADIX_SIZE] = calloc(RADIX_PASS, sizeof *count);
    uint64_t *k2 = malloc(n * sizeof *k2);
    uint32_t *v2 = malloc(n * sizeof *v2);
    if (!count || !k2 || !v2) {
        free(count), free(k2), free(v2);
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned p = 0; p < RADIX_PASS; p++)
            count[p][((*key)[i] >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
    for (unsigned p = 0; p < RADIX_PASS; p++) {
        unsigned shift = p * RADIX_BITS;
        if (count[p][((*key)[0] >> shift) & (RADIX_SIZE - 1)] == n)
            continue;
        uint32_t sum = 0;
        for (unsigned d = 0; d < RADIX_SIZE; d++) {
            uint32_t c = count[p][d];
            count[p][d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t at = count[p][((*key)[i] >> shift) & (RADIX_SIZE - 1)]++;
            k2[at] = (*key)[i];
            v2[at] = (*val)[i];
        }
        uint64_t *tk = *key;
        uint32_t *tv = *val;
        *key = k2, *val = v2, k2 = tk, v2 = tv;
    }
    free(count), free(k2), free(v2);
    return RK_OK;
}

/* Points of every node, emitted in id order then index order, then sorted by position. */
static int place_points(rk_ring *r, uint32_t **nodes)
{
    const rk_topology *t = r->topo;
    const uint32_t *order = rki_topology_order(t);
    uint32_t vf = rk_topology_vnode_factor(t);
    r->pos = malloc(r->n * sizeof *r->pos);
    *nodes = malloc(r->n * sizeof **nodes);
    if (!r->pos || !*nodes)
        return RK_ENOMEM;
    size_t at = 0;
    for (size_t k = 0; k < rk_topology_node_count(t); k++) {
        const rk_node *nd = rk_topology_node(t, order[k]);
        uint32_t count = vf * nd->weight;
        rki_hash_points(rk_topology_hash(t), nd->id, strlen(nd->id), count, r->pos + at);
        for (uint32_t i = 0; i < count; i++)
            (*nodes)[at + i] = order[k];
        at += count;
    }
    return rki_radix_sort(&r->pos, nodes, r->n);
}

static int store_nodes(rk_ring *r, uint32_t *nodes)
{
    if (rk_topology_node_count(r->topo) > UINT16_MAX) {
        r->node32 = nodes;
        return RK_OK;
    }
    r->node16 = malloc(r->n * sizeof *r->node16);
    if (r->node16)
        for (size_t i = 0; i < r->n; i++)
            r->node16[i] = (uint16_t)nodes[i];
    free(nodes);
    return r->node16 ? RK_OK : RK_ENOMEM;
}

static int index_buckets(rk_ring *r)
{
    unsigned b = 1;
    while (b < r->bits && ((size_t)1 << (b + 1)) * PER_BUCKET <= r->n)
        b++;
    r->nbuckets = (size_t)1 << b;
    r->shift = r->bits - b;
    r->bucket = malloc((r->nbuckets + 1) * sizeof *r->bucket);
    if (!r->bucket)
        return RK_ENOMEM;
    size_t j = 0;
    for (size_t k = 0; k <= r->nbuckets; k++) {
        while (j < r->n && (r->pos[j] >> r->shift) < k)
            j++;
        r->bucket[k] = (uint32_t)j;
    }
    return RK_OK;
}

/* Hash values owned by point i: from the previous position + 1 to its own, as a fraction. */
static double arc_fraction(const rk_ring *r, size_t i)
{
    double space = r->bits == 64 ? 18446744073709551616.0 : 4294967296.0;
    if (i > 0)
        return (double)(r->pos[i] - r->pos[i - 1]) / space;
    if (r->pos[0] == r->pos[r->n - 1])
        return 1.0; /* every point at one position: the first owns the whole space */
    uint64_t mask = r->bits == 64 ? UINT64_MAX : 0xFFFFFFFFu;
    return (double)((r->pos[0] - r->pos[r->n - 1]) & mask) / space;
}

static int compute_shares(rk_ring *r)
{
    size_t nn = rk_topology_node_count(r->topo);
    r->share = calloc(nn, sizeof *r->share);
    r->ideal = calloc(nn, sizeof *r->ideal);
    if (!r->share || !r->ideal)
        return RK_ENOMEM;
    for (size_t i = 0; i < r->n; i++)
        r->share[rki_node_at(r, i)] += arc_fraction(r, i);
    uint64_t total = 0;
    for (size_t k = 0; k < nn; k++)
        total += rk_topology_node(r->topo, k)->weight;
    for (size_t k = 0; k < nn; k++) {
        uint32_t w = rk_topology_node(r->topo, k)->weight;
        r->ideal[k] = (double)w / (double)total;
        r->owners += w > 0;
    }
    return RK_OK;
}

static void put_le(unsigned char *p, uint64_t v, unsigned bytes)
{
    for (unsigned k = 0; k < bytes; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static int compute_fingerprint(rk_ring *r)
{
    size_t nn = rk_topology_node_count(r->topo);
    const uint32_t *order = rki_topology_order(r->topo);
    uint32_t *rank = malloc(nn * sizeof *rank);
    XXH3_state_t *st = XXH3_createState();
    if (!rank || !st) {
        free(rank), XXH3_freeState(st);
        return RK_ENOMEM;
    }
    XXH3_64bits_reset(st);
    for (size_t k = 0; k < nn; k++) {
        const char *id = rk_topology_node(r->topo, order[k])->id;
        XXH3_64bits_update(st, id, strlen(id) + 1); /* with its terminating zero byte */
        rank[order[k]] = (uint32_t)k;
    }
    unsigned char buf[12 * 256];
    for (size_t i = 0; i < r->n; i += 256) {
        size_t m = r->n - i < 256 ? r->n - i : 256;
        for (size_t j = 0; j < m; j++) {
            put_le(buf + 12 * j, r->pos[i + j], 8);
            put_le(buf + 12 * j + 8, rank[rki_node_at(r, i + j)], 4);
        }
        XXH3_64bits_update(st, buf, 12 * m);
    }
    r->fingerprint = XXH3_64bits_digest(st);
    static const char hex[] = "0123456789abcdef";
    for (int k = 0; k < 16; k++)
        r->fp_hex[k] = hex[(r->fingerprint >> (60 - 4 * k)) & 15];
    r->fp_hex[16] = '\0';
    free(rank), XXH3_freeState(st);
    return RK_OK;
}

rk_ring *rk_ring_build(rk_topology *t, rk_error *err)
{
    rk_ring *r = calloc(1, sizeof *r);
    if (!r) {
        rki_error_set(err, RK_ENOMEM, NULL, "out of memory building a ring");
        return NULL;
    }
    r->topo = rk_topology_ref(t);
    r->bits = rk_hash_bits(rk_topology_hash(t));
    r->n = (size_t)rk_topology_points(t);
    uint32_t *nodes = NULL;
    int rc = place_points(r, &nodes);
    if (rc)
        free(nodes);
    else
        rc = store_nodes(r, nodes); /* takes `nodes` */
    rc = rc ? rc : index_buckets(r);
    rc = rc ? rc : compute_shares(r);
    rc = rc ? rc : compute_fingerprint(r);
    if (rc) {
        rk_ring_free(r);
        rki_error_set(err, rc, NULL, "out of memory building a ring of %llu points",
                      (unsigned long long)rk_topology_points(t));
        return NULL;
    }
    return r;
}

void rk_ring_free(rk_ring *r)
{
    if (!r)
        return;
    rk_topology_free(r->topo);
    free(r->pos), free(r->node16), free(r->node32), free(r->bucket);
    free(r->share), free(r->ideal);
    free(r);
}

const rk_topology *rk_ring_topology(const rk_ring *r)
{
    return r->topo;
}

size_t rk_ring_point_count(const rk_ring *r)
{
    return r->n;
}

void rk_ring_point(const rk_ring *r, size_t i, uint64_t *position, uint32_t *node)
{
    *position = r->pos[i];
    *node = rki_node_at(r, i);
}

uint64_t rk_ring_fingerprint(const rk_ring *r)
{
    return r->fingerprint;
}

const char *rk_ring_fingerprint_hex(const rk_ring *r)
{
    return r->fp_hex;
}


/* Index of the first point at or after hash h, wrapping past the last. */
static inline size_t find_point(const rk_ring *r, uint64_t h)
{
    size_t lo = r->bucket[h >> r->shift], len = r->bucket[(h >> r->shift) + 1] - lo;
    const uint64_t *base = r->pos + lo;
    while (len > 0) {
        size_t half = len / 2;
        if (base[half] < h) {
            base += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    size_t i = (size_t)(base - r->pos);
    return i == r->n ? 0 : i;
}

uint32_t rk_ring_lookup_hash(const rk_ring *r, uint64_t hash)
{
    return rki_node_at(r, find_point(r, hash));
}

uint32_t rk_ring_lookup(const rk_ring *r, const void *key, size_t len)
{
    return rki_node_at(r, find_point(r, rk_hash(rk_topology_hash(r->topo), key, len)));
}

size_t rk_ring_lookup_replicas(const rk_ring *r, const void *key, size_t len, uint32_t *out,
                               size_t want)
{
    size_t got = 0, i = find_point(r, rk_hash(rk_topology_hash(r->topo), key, len));
    if (want > r->owners)
        want = r->owners;
    for (size_t step = 0; step < r->n && got < want; step++, i = i + 1 == r->n ? 0 : i + 1) {
        uint32_t nd = rki_node_at(r, i);
        size_t k = 0;
        while (k < got && out[k] != nd)
            k++;
        if (k == got)
            out[got++] = nd;
    }
    return got;
}

double rk_ring_share(const rk_ring *r, size_t node)
{
    return r->share[node];
}

double rk_ring_ideal_share(const rk_ring *r, size_t node)
{
    return r->ideal[node];
}

void rk_ring_balance(const rk_ring *r, double *max, double *min)
{
    *max = 0, *min = 0;
    int first = 1;
    for (size_t k = 0; k < rk_topology_node_count(r->topo); k++) {
        if (r->ideal[k] <= 0)
            continue;
        double ratio = r->share[k] / r->ideal[k];
        if (first || ratio > *max)
            *max = ratio;
        if (first || ratio < *min)
            *min = ratio;
        first = 0;
    }
}

size_t rk_ring_memory(const rk_ring *r)
{
    size_t per_node = r->node16 ? sizeof *r->node16 : sizeof *r->node32;
    return sizeof *r + r->n * (sizeof *r->pos + per_node) + (r->nbuckets + 1) * sizeof *r->bucket +
           rk_topology_node_count(r->topo) * 2 * sizeof(double);
}
