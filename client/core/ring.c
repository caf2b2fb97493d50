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

#define DIGIT_BITS 8 /* radix digit of the ring build */
#define DIGITS     (1u << DIGIT_BITS)
#define PER_BUCKET 4  /* points per bucket of the lookup index: 4 to 8 on average */
#define WINDOW     16 /* a lookup searches this many positions from its bucket's first point */

/* Building a ring:
 *   0. the ring's scheme (internal.h, "ring schemes"; docs/RING.md is scheme/ringkeeper.c) says
 *      how many points each node gets and in which order nodes break ties;
 *   1. the scheme places every point into the ring's arrays, node by node in tie order, while the
 *      top digit (DIGIT_BITS) of the positions is counted;
 *   2. move every point, in place, into the part of the arrays for its top digit (an American flag
 *      sort);
 *   3. sort each part, which fits in the cache, by radix passes over the next digits, through a
 *      scratch copy of the largest part, until points sharing all the sorted bits are rare (a
 *      part of a few points, as in small rings, by insertion instead);
 *   4. an insertion sort finishes the order: by position, then by the nodes' tie order (node id for
 *      docs/RING.md; two points of one node at one position are interchangeable). Should it have
 *      more to do than that (positions made to collide), qsort orders the whole ring instead;
 *   4b. a scheme with a lookup rule of its own (HAProxy's nearest point) turns each point into
 *      the end of the keys it owns, which keeps the order;
 *   5. the lookup index, counted over the sorted positions.
 * Each pass keeps its 256 counters and write streams in the L1 cache (at 11 bits a pass costs three
 * times as much), and the only memory besides the ring's own is the scratch copy: fresh memory
 * costs page faults (about 0.5 ms per MB on the benchmark machine). */

typedef uint32_t digit_counts[DIGITS];

static inline void set_node(rk_ring *r, size_t i, uint32_t node)
{
    if (r->node16)
        r->node16[i] = (uint16_t)node;
    else
        r->node32[i] = node;
}

static inline unsigned digit(uint64_t pos, unsigned shift)
{
    return (unsigned)(pos >> shift) & (DIGITS - 1);
}

/* 2^b buckets over the top b bits of the positions, PER_BUCKET to 2 * PER_BUCKET points each. */
static void size_index(rk_ring *r)
{
    unsigned b = 1;
    while (b < r->bits && ((size_t)1 << (b + 1)) * PER_BUCKET <= r->n)
        b++;
    r->nbuckets = (size_t)1 << b;
    r->shift = r->bits - b;
}

/* Positions (with `pad` more entries) and nodes for n points, 16-bit nodes when they fit. */
static int alloc_points(rk_ring *a, size_t n, size_t pad, size_t nodes)
{
    a->n = n;
    a->pos = malloc((n + pad) * sizeof *a->pos);
    if (nodes > UINT16_MAX)
        a->node32 = malloc((n ? n : 1) * sizeof *a->node32);
    else
        a->node16 = malloc((n ? n : 1) * sizeof *a->node16);
    return a->pos && (a->node16 || a->node32) ? RK_OK : RK_ENOMEM;
}

/* Digits to sort: until 2^sorted bits >= 16 points, within the hash width. */
static unsigned digits_to_sort(const rk_ring *r)
{
    unsigned d = 1;
    while (d * DIGIT_BITS < r->bits && ((uint64_t)1 << (d * DIGIT_BITS)) < 16 * r->n)
        d++;
    return d;
}

/* Step 1: node order[k] gets points[order[k]] points; `count` counts their top digits. */
static void place_nodes(rk_ring *r, const rki_scheme *scheme, const uint32_t *order,
                        const uint32_t *points, uint32_t *count)
{
    size_t at = 0;
    for (size_t k = 0; k < rk_topology_node_count(r->topo); k++) {
        uint32_t m = points[order[k]];
        scheme->positions(r->topo, order[k], m, r->pos + at);
        for (size_t i = at; i < at + m; i++) {
            set_node(r, i, order[k]);
            count[digit(r->pos[i], r->bits - DIGIT_BITS)]++;
        }
        at += m;
    }
}

/* Step 2: part d is points start[d] .. start[d + 1] - 1. A point taken out goes in place of the
 * next unplaced point of its part, which is taken out in turn, until the chain comes back. */
static void partition(rk_ring *r, const uint32_t *count, uint32_t *start)
{
    unsigned shift = r->bits - DIGIT_BITS;
    uint32_t next[DIGITS];
    start[0] = 0;
    for (unsigned d = 0; d < DIGITS; d++)
        next[d] = start[d], start[d + 1] = start[d] + count[d];
    for (unsigned d = 0; d < DIGITS; d++) {
        for (; next[d] < start[d + 1]; next[d]++) {
            uint64_t p = r->pos[next[d]];
            uint32_t node = rki_node_at(r, next[d]);
            for (unsigned pd = digit(p, shift); pd != d; pd = digit(p, shift)) {
                uint32_t j = next[pd]++;
                uint64_t q = r->pos[j];
                uint32_t qnode = rki_node_at(r, j);
                r->pos[j] = p, set_node(r, j, node);
                p = q, node = qnode;
            }
            r->pos[next[d]] = p, set_node(r, next[d], node);
        }
    }
}

/* One stable pass from `a` to `b` (as many points) on the digit at bit `shift`. */
static void radix_pass(const rk_ring *a, rk_ring *b, unsigned shift, const uint32_t *count)
{
    uint32_t next[DIGITS], sum = 0;
    for (unsigned d = 0; d < DIGITS; d++)
        next[d] = sum, sum += count[d];
    for (size_t i = 0; i < a->n; i++) {
        uint32_t at = next[digit(a->pos[i], shift)]++;
        b->pos[at] = a->pos[i];
        set_node(b, at, rki_node_at(a, i));
    }
}

/* Parts this small are sorted in place by position: counting digits costs a pass over 256
 * counters per digit whatever the part's size, which is most of the build of a small ring. */
#define SMALL_PART 32

static void sort_small_part(rk_ring *part)
{
    for (size_t j = 1; j < part->n; j++) {
        uint64_t p = part->pos[j];
        uint32_t node = rki_node_at(part, j);
        size_t k = j;
        for (; k > 0 && part->pos[k - 1] > p; k--) {
            part->pos[k] = part->pos[k - 1];
            set_node(part, k, rki_node_at(part, k - 1));
        }
        part->pos[k] = p;
        set_node(part, k, node);
    }
}

/* Step 3 for one part: `passes` digits from bit `lowest` up, through `scratch`. */
static void sort_part(rk_ring *part, rk_ring *scratch, unsigned lowest, unsigned passes)
{
    if (part->n <= SMALL_PART) {
        sort_small_part(part);
        return;
    }
    digit_counts count[64 / DIGIT_BITS] = {{0}};
    for (size_t i = 0; i < part->n; i++)
        for (unsigned p = 0; p < passes; p++)
            count[p][digit(part->pos[i], lowest + p * DIGIT_BITS)]++;
    scratch->n = part->n;
    for (unsigned p = 0; p < passes; p++) {
        int forth = p % 2 == 0;
        radix_pass(forth ? part : scratch, forth ? scratch : part, lowest + p * DIGIT_BITS,
                   count[p]);
    }
    if (passes % 2) {
        memcpy(part->pos, scratch->pos, part->n * sizeof *part->pos);
        if (part->node16)
            memcpy(part->node16, scratch->node16, part->n * sizeof *part->node16);
        else
            memcpy(part->node32, scratch->node32, part->n * sizeof *part->node32);
    }
}

static int sort_parts(rk_ring *r, const uint32_t *start, unsigned passes)
{
    if (passes == 0)
        return RK_OK;
    uint32_t largest = 0;
    for (unsigned d = 0; d < DIGITS; d++)
        largest = start[d + 1] - start[d] > largest ? start[d + 1] - start[d] : largest;
    rk_ring scratch = {0};
    int rc = alloc_points(&scratch, largest, 0, rk_topology_node_count(r->topo));
    for (unsigned d = 0; rc == RK_OK && d < DIGITS; d++) {
        rk_ring part = {.pos = r->pos + start[d], .n = start[d + 1] - start[d]};
        part.node16 = r->node16 ? r->node16 + start[d] : NULL;
        part.node32 = r->node32 ? r->node32 + start[d] : NULL;
        sort_part(&part, &scratch, r->bits - (passes + 1) * DIGIT_BITS, passes);
    }
    free(scratch.pos), free(scratch.node16), free(scratch.node32);
    return rc;
}

/* Whether point i goes after a point (p, node): ring order is by position, then tie rank. */
static inline int goes_after(const rk_ring *r, const uint32_t *rank, size_t i, uint64_t p,
                             uint32_t node)
{
    return r->pos[i] > p || (r->pos[i] == p && rank[rki_node_at(r, i)] > rank[node]);
}

/* Step 4: 0 when the points are too far from sorted for an insertion sort (more than n moves);
 * they are then left in some order. */
static int insertion_sort(rk_ring *r, const uint32_t *rank)
{
    size_t moves = 0;
    for (size_t j = 1; j < r->n && moves <= r->n; j++) {
        uint64_t p = r->pos[j];
        if (r->pos[j - 1] < p)
            continue; /* nearly all of them */
        uint32_t node = rki_node_at(r, j);
        size_t k = j;
        for (; k > 0 && goes_after(r, rank, k - 1, p, node) && moves++ <= r->n; k--) {
            r->pos[k] = r->pos[k - 1];
            set_node(r, k, rki_node_at(r, k - 1));
        }
        r->pos[k] = p;
        set_node(r, k, node);
    }
    return moves <= r->n;
}

typedef struct {
    uint64_t pos;
    uint32_t rank, node;
} point;

static int cmp_point(const void *a, const void *b)
{
    const point *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The fallback of step 4, for positions that collide in their top bits by the thousand. */
static int sort_all(rk_ring *r, const uint32_t *rank)
{
    point *all = malloc(r->n * sizeof *all);
    if (!all)
        return RK_ENOMEM;
    for (size_t i = 0; i < r->n; i++)
        all[i] = (point){r->pos[i], rank[rki_node_at(r, i)], rki_node_at(r, i)};
    qsort(all, r->n, sizeof *all, cmp_point);
    for (size_t i = 0; i < r->n; i++)
        r->pos[i] = all[i].pos, set_node(r, i, all[i].node);
    free(all);
    return RK_OK;
}

/* Step 4; `order` is the scheme's tie order. */
static int finish_sort(rk_ring *r, const uint32_t *order)
{
    size_t nn = rk_topology_node_count(r->topo);
    uint32_t *rank = malloc(nn * sizeof *rank);
    if (!rank)
        return RK_ENOMEM;
    for (size_t k = 0; k < nn; k++)
        rank[order[k]] = (uint32_t)k;
    int rc = insertion_sort(r, rank) ? RK_OK : sort_all(r, rank);
    free(rank);
    return rc;
}

/* Step 4b, for a scheme with a lookup rule of its own: the end of what each point owns in place of
 * the point, and a last end that wrapped past the top moved to the front. */
static void owned_ends(rk_ring *r, const rki_scheme *scheme)
{
    scheme->owned_ends(r->pos, r->n, r->bits);
    if (r->n < 2 || r->pos[r->n - 1] >= r->pos[r->n - 2])
        return;
    uint64_t pos = r->pos[r->n - 1];
    uint32_t node = rki_node_at(r, r->n - 1);
    memmove(r->pos + 1, r->pos, (r->n - 1) * sizeof *r->pos);
    if (r->node16)
        memmove(r->node16 + 1, r->node16, (r->n - 1) * sizeof *r->node16);
    else
        memmove(r->node32 + 1, r->node32, (r->n - 1) * sizeof *r->node32);
    r->pos[0] = pos;
    set_node(r, 0, node);
}

/* Step 5: bucket[k] = the first point of bucket k; bucket[nbuckets] = n. */
static void index_buckets(rk_ring *r)
{
    for (size_t i = 0; i < r->n; i++)
        r->bucket[(r->pos[i] >> r->shift) + 1]++;
    for (size_t k = 0; k < r->nbuckets; k++)
        r->bucket[k + 1] += r->bucket[k];
    for (size_t i = r->n; i < r->n + WINDOW; i++)
        r->pos[i] = UINT64_MAX; /* sentinels above every hash: a lookup never passes them */
}

/* Steps 1 to 5, with the arrays for `n` points; `points` and `order` as the scheme gave them. */
static int sort_points(rk_ring *r, const rki_scheme *scheme, const uint32_t *points,
                       const uint32_t *order)
{
    uint32_t count[DIGITS] = {0}, start[DIGITS + 1];
    size_index(r);
    r->bucket = calloc(r->nbuckets + 1, sizeof *r->bucket);
    int rc = r->bucket ? alloc_points(r, r->n, WINDOW, rk_topology_node_count(r->topo)) : RK_ENOMEM;
    if (rc == RK_OK) {
        place_nodes(r, scheme, order, points, count);
        partition(r, count, start);
        rc = sort_parts(r, start, digits_to_sort(r) - 1);
    }
    rc = rc ? rc : finish_sort(r, order);
    if (rc == RK_OK && scheme->owned_ends)
        owned_ends(r, scheme);
    if (rc == RK_OK)
        index_buckets(r);
    return rc;
}

/* Step 0, then the rest: the ring of `scheme`'s points. */
static int place_points(rk_ring *r, const rki_scheme *scheme)
{
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

/* Hash values point 0 owns: from the last position + 1, around zero, to its own, as a fraction. */
static double first_arc(const rk_ring *r)
{
    if (r->pos[0] == r->pos[r->n - 1])
        return 1.0; /* every point at one position: the first owns the whole space */
    uint64_t mask = r->bits == 64 ? UINT64_MAX : 0xFFFFFFFFu;
    return (double)((r->pos[0] - r->pos[r->n - 1]) & mask) * per_value(r);
}

static int compute_shares(rk_ring *r)
{
    size_t nn = rk_topology_node_count(r->topo);
    r->share = calloc(nn, sizeof *r->share);
    r->ideal = calloc(nn, sizeof *r->ideal);
    if (!r->share || !r->ideal)
        return RK_ENOMEM;
    r->share[rki_node_at(r, 0)] += first_arc(r);
    for (size_t i = 1; i < r->n; i++) /* point i owns from the previous position + 1 to its own */
        r->share[rki_node_at(r, i)] += (double)(r->pos[i] - r->pos[i - 1]) * per_value(r);
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
    r->hash = rk_topology_hash(t);
    r->hash_tag = rk_topology_hash_tag(t);
    r->bits = scheme->bits(t);
    int rc = place_points(r, scheme);
    rc = rc ? rc : compute_shares(r);
    rc = rc ? rc : compute_fingerprint(r);
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

/* H(key) as the ring's scheme hashes keys; the ringkeeper scheme's XXH3 inlined here (one call
 * less per lookup on the fastest hash). */
static inline uint64_t key_hash(const rk_ring *r, const void *key, size_t len)
{
    if (r->hash == RK_HASH_XXH3_64 && r->scheme == &rki_scheme_ringkeeper)
        return XXH3_64bits(key, len);
    return r->scheme->key_hash(r->hash, r->hash_tag, key, len);
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
