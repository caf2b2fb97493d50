/* ring.c: the ring of docs/RING.md (build, lookup, replicas, shares, fingerprint).
 *
 * Layout: positions sorted ascending in one array, the node of each point in a parallel array
 * (16-bit when the topology has fewer than 65536 nodes), and a bucket index over the top bits of
 * the position, so a lookup is one or two cache misses instead of a ~20-step binary search. */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal.h"

#if defined(__GNUC__)
#define PREFETCH(addr) __builtin_prefetch(addr)
#else
#define PREFETCH(addr) ((void)(addr))
#endif

#define PER_BUCKET 4  /* points per bucket of the lookup index: 4 to 8 on average */
#define WINDOW     16 /* a lookup searches this many positions from its bucket's first point */

/* Building a ring: the scheme's points placed and sorted (ring_sort.c, steps 1 to 4b), then
 *   5. the lookup index, counted over the sorted positions;
 *   6. each node's share of the hash space, and the fingerprint: on a large ring, the fingerprint
 *      (one pass that cannot be split) on a second thread while the first does the rest. */

/* 2^b buckets over the top b bits of the positions, PER_BUCKET to 2 * PER_BUCKET points each. */
static void size_index(rk_ring *r)
{
    unsigned b = 1;
    while (b < r->bits && ((size_t)1 << (b + 1)) * PER_BUCKET <= r->n)
        b++;
    r->nbuckets = (size_t)1 << b;
    r->shift = r->bits - b;
}

/* Step 5: bucket[k] = the first point of bucket k; bucket[nbuckets] = n. Counted, then summed:
 * walking the sorted points instead branches on every point, and mispredicts one in four. */
static void index_buckets(rk_ring *r)
{
    const uint64_t *pos = r->pos;
    uint32_t *bucket = r->bucket;
    unsigned shift = r->shift;
    memset(bucket, 0, (r->nbuckets + 1) * sizeof *bucket);
    for (size_t i = 0; i < r->n; i++)
        bucket[(pos[i] >> shift) + 1]++;
    for (size_t k = 0; k < r->nbuckets; k++)
        bucket[k + 1] += bucket[k];
    for (size_t i = r->n; i < r->n + WINDOW; i++)
        r->pos[i] = UINT64_MAX; /* sentinels above every hash: a lookup never passes them */
}

/* Steps 1 to 4b, with the arrays for `n` points and its index; `points` and `order` as the
 * scheme gave them (NULL for a table scheme). */
static int sort_points(rk_ring *r, const rki_scheme *scheme, const uint32_t *points,
                       const uint32_t *order)
{
    size_index(r);
    r->bucket = rki_big_alloc((r->nbuckets + 1) * sizeof *r->bucket);
    if (!r->bucket)
        return RK_ENOMEM;
    return scheme->fill ? rki_ring_place_table(r, WINDOW)
                        : rki_ring_place(r, scheme, points, order, WINDOW);
}

/* Step 0, then the rest: the ring of `scheme`'s points. */
static int place_points(rk_ring *r, const rki_scheme *scheme)
{
    if (scheme->fill) { /* a table scheme: a point a slot */
        r->n = rk_topology_points(r->topo);
        return sort_points(r, scheme, NULL, NULL);
    }
    size_t nn = rk_topology_node_count(r->topo);
    uint32_t *points = malloc(nn * sizeof *points), *order = malloc(nn * sizeof *order);
    int rc = points && order ? RK_OK : RK_ENOMEM;
    if (rc == RK_OK) {
        scheme->point_counts(r->topo, points);
        scheme->tie_order(r->topo, order);
        r->n = 0;
        for (size_t k = 0; k < nn; k++)
            r->n += points[k];
        rc = sort_points(r, scheme, points, order);
    }
    free(points), free(order);
    return rc;
}

/* 2^-bits: a power of two, so multiplying by it is exact, as dividing by 2^bits would be */
static double per_value(const rk_ring *r)
{
    return r->bits == 64 ? 1.0 / 18446744073709551616.0 : 1.0 / 4294967296.0;
}

/* Each node's hash values, summed exactly: point i owns from the previous position + 1 to its own,
 * point 0 from the last position + 1, around zero. The sums are modulo 2^64, which only a node
 * owning the whole 64-bit space reaches; every sum is then 0 and point 0's node is that one, as it
 * is when all points are at one position. */
static int compute_shares(rk_ring *r)
{
    size_t nn = rk_topology_node_count(r->topo);
    uint64_t *owned = calloc(nn, sizeof *owned), mask = r->bits == 64 ? UINT64_MAX : 0xFFFFFFFFu;
    r->share = calloc(nn, sizeof *r->share);
    r->ideal = calloc(nn, sizeof *r->ideal);
    if (!owned || !r->share || !r->ideal) {
        free(owned);
        return RK_ENOMEM;
    }
    const uint64_t *pos = r->pos;
    owned[rki_node_at(r, 0)] = (pos[0] - pos[r->n - 1]) & mask;
    for (size_t i = 1; i < r->n; i++)
        owned[rki_node_at(r, i)] += pos[i] - pos[i - 1];
    int whole = 1;
    for (size_t k = 0; k < nn; k++)
        r->share[k] = (double)owned[k] * per_value(r), whole &= owned[k] == 0;
    if (whole)
        r->share[rki_node_at(r, 0)] = 1.0;
    free(owned);
    double total = 0;
    for (size_t k = 0; k < nn; k++)
        total += rk_topology_node(r->topo, k)->weight;
    for (size_t k = 0; k < nn; k++) {
        double w = rk_topology_node(r->topo, k)->weight;
        r->ideal[k] = w / total;
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

typedef struct {
    rk_ring *r;
    int rc;
} step;

static void *index_and_shares(void *arg)
{
    step *s = arg;
    index_buckets(s->r);
    s->rc = compute_shares(s->r);
    return NULL;
}

static void *fingerprint(void *arg)
{
    step *s = arg;
    s->rc = compute_fingerprint(s->r);
    return NULL;
}

/* Steps 5 and 6: they read the sorted points and write parts of the ring of their own. */
static int finish(rk_ring *r)
{
    step rest = {r, RK_OK}, fp = {r, RK_OK};
    rki_run_pair(index_and_shares, &rest, fingerprint, &fp, rki_build_threads(r->n) == 2);
    return rest.rc ? rest.rc : fp.rc;
}

rk_ring *rk_ring_build(rk_topology *t, rk_error *err)
{
    rk_ring *r = calloc(1, sizeof *r);
    if (!r) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory building a ring");
        return NULL;
    }
    const rki_scheme *scheme = rki_topology_scheme(t);
    r->topo = rk_topology_ref(t);
    r->scheme = scheme;
    r->hash = rki_hash_of(rk_topology_hash(t));
    r->params = rki_topology_params(t);
    r->bits = scheme->bits(t);
    int rc = place_points(r, scheme);
    rc = rc ? rc : finish(r);
    if (rc) {
        rk_ring_free(r);
        rk_error_set(err, rc, NULL, "out of memory building a ring of %llu points",
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

unsigned rk_ring_bits(const rk_ring *r)
{
    return r->bits;
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

/* Index of the first point at or after hash h, wrapping past the last. The bucket of h gives the
 * first point at or after h's top bits; the answer is among the next WINDOW points (the following
 * buckets and the sentinels are all above h), found by a binary search without branches. A bucket
 * larger than WINDOW, which real hashes rarely make, takes an ordinary binary search. */
static inline size_t find_point(const rk_ring *r, uint64_t h)
{
    size_t b = (size_t)(h >> r->shift);
    b = b < r->nbuckets ? b : r->nbuckets; /* a 32-bit ring asked about h >= 2^32: wraps */
    size_t lo = r->bucket[b], len = r->bucket[b + (b < r->nbuckets)] - lo;
    const uint64_t *p = r->pos + lo;
    /* On a large ring these lines are cache misses: start them together, not one after another. */
    PREFETCH(p), PREFETCH(p + WINDOW / 2), PREFETCH(p + WINDOW - 1);
    PREFETCH(r->node16 ? (const void *)(r->node16 + lo) : (const void *)(r->node32 + lo));
    if (len <= WINDOW) {
        for (size_t half = WINDOW / 2; half > 0; half /= 2)
            p += half & -(size_t)(p[half - 1] < h); /* arithmetic, not a branch */
        p += *p < h;
    } else {
        while (len > 0) {
            size_t half = len / 2;
            if (p[half] < h)
                p += half + 1, len -= half + 1;
            else
                len = half;
        }
    }
    size_t i = (size_t)(p - r->pos);
    return i == r->n ? 0 : i;
}

uint32_t rk_ring_lookup_hash(const rk_ring *r, uint64_t hash)
{
    return rki_node_at(r, find_point(r, hash));
}

void rk_ring_arc_at(const rk_ring *r, uint64_t hash, rk_ring_arc *out)
{
    size_t i = find_point(r, hash), prev = i ? i - 1 : r->n - 1;
    uint64_t mask = r->bits == 64 ? UINT64_MAX : 0xFFFFFFFFu;
    /* i is the first point of a tie, so the point before it is below it, or all are at one place */
    out->start = r->pos[prev];
    out->end = r->pos[i];
    out->node = rki_node_at(r, i);
    out->fraction =
        out->start == out->end ? 1.0 : (double)((out->end - out->start) & mask) * per_value(r);
}

/* H(key) as the ring's scheme hashes keys; XXH3 inlined here (one call less per lookup on the
 * fastest hash), and a hash of the whole key called at once. */
static inline uint64_t key_hash(const rk_ring *r, const void *key, size_t len)
{
    if (r->scheme->key_hash != rki_key_hash_whole)
        return r->scheme->key_hash(r->hash, r->params, key, len);
    if (r->hash == &rki_hash_xxh3_64)
        return XXH3_64bits(key, len);
    return r->hash->key(key, len);
}

uint64_t rk_ring_key_hash(const rk_ring *r, const void *key, size_t len)
{
    return key_hash(r, key, len);
}

uint32_t rk_ring_lookup(const rk_ring *r, const void *key, size_t len)
{
    return rki_node_at(r, find_point(r, key_hash(r, key, len)));
}

size_t rk_ring_lookup_replicas(const rk_ring *r, const void *key, size_t len, uint32_t *out,
                               size_t want)
{
    size_t got = 0, i = find_point(r, key_hash(r, key, len));
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

void rki_ring_balance(const rk_ring *r, double *max, double *min, uint32_t *max_node,
                      uint32_t *min_node)
{
    const uint32_t *order = rki_topology_order(r->topo);
    int first = 1;
    *max = 0, *min = 0, *max_node = 0, *min_node = 0;
    for (size_t k = 0; k < rk_topology_node_count(r->topo); k++) {
        uint32_t node = order[k];
        if (r->ideal[node] <= 0)
            continue;
        double ratio = r->share[node] / r->ideal[node];
        if (first || ratio > *max)
            *max = ratio, *max_node = node;
        if (first || ratio < *min)
            *min = ratio, *min_node = node;
        first = 0;
    }
}

void rk_ring_balance(const rk_ring *r, double *max, double *min)
{
    uint32_t max_node, min_node;
    rki_ring_balance(r, max, min, &max_node, &min_node);
}

size_t rk_ring_memory(const rk_ring *r)
{
    size_t per_node = r->node16 ? sizeof *r->node16 : sizeof *r->node32;
    return sizeof *r + r->n * (sizeof *r->pos + per_node) + WINDOW * sizeof *r->pos +
           (r->nbuckets + 1) * sizeof *r->bucket +
           rk_topology_node_count(r->topo) * 2 * sizeof(double);
}
