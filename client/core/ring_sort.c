/* ring_sort.c: a ring's points placed and sorted (steps 1 to 4b of a build; ring.c does the rest).
 *
 *   0. the ring's scheme (internal.h, "ring schemes"; docs/RING.md is scheme/ringkeeper.c) says
 *      how many points each node gets and in which order nodes break ties;
 *   1. the scheme hashes every point into a scratch array, node by node in tie order, while the
 *      top digit (DIGIT_BITS) of the positions is counted;
 *   2. a stable pass moves every point into the ring's arrays, into the part for its top digit:
 *      reads in order and 256 write streams, where an in-place permutation would wait on a cache
 *      miss per point;
 *   3. each part, which fits in the cache, is sorted by stable radix passes over the next digits,
 *      through the scratch array, until points sharing all the sorted bits are rare (a part of a
 *      few points, as in small rings, by insertion instead);
 *   4. an insertion sort finishes each part's order: by position, then by the nodes' tie order
 *      (points of one position are in tie order already, as every pass was stable). Should it have
 *      more to do than that (positions made to collide), qsort orders the part instead;
 *   4b. a scheme with a lookup rule of its own (HAProxy's nearest point) turns each point into
 *      the end of the keys it owns, which keeps the order.
 * Each pass keeps its 256 counters and write streams in the L1 cache (at 11 bits a pass costs three
 * times as much). Large arrays ask for huge pages: fresh memory costs a page fault per 4 KiB
 * (about 0.5 ms per MB on the benchmark machine), and a build of a million points touches 18 MB. */
#define _DEFAULT_SOURCE /* madvise */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define DIGIT_BITS 8 /* radix digit of the ring build */
#define DIGITS     (1u << DIGIT_BITS)
#define HUGE_PAGE  ((size_t)2 << 20)

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

/* Whole huge pages: a partial one at the end would be faulted in 4 KiB at a time. */
void *rki_big_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return malloc(bytes ? bytes : 1);
    size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = NULL;
    if (whole < bytes || posix_memalign(&p, HUGE_PAGE, whole))
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, whole, MADV_HUGEPAGE); /* advice: without it the pages are only smaller */
#endif
    return p;
}

/* Nodes for n points, 16-bit when they fit; positions for n + pad unless `pos` is already given. */
static int alloc_points(rk_ring *a, size_t n, size_t pad, size_t nodes)
{
    a->n = n;
    a->pos = a->pos ? a->pos : rki_big_alloc((n + pad) * sizeof *a->pos);
    if (nodes > UINT16_MAX)
        a->node32 = rki_big_alloc(n * sizeof *a->node32);
    else
        a->node16 = rki_big_alloc(n * sizeof *a->node16);
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

/* Steps 1 to 4 run in two halves, each on a thread of its own on a large ring: a half hashes
 * and moves the points of a run of nodes, then sorts a run of the parts. */
typedef struct {
    rk_ring *r;
    const rki_scheme *scheme;
    const uint32_t *order, *points;
    const uint32_t *rank;   /* each node's place in `order` (step 4) */
    uint64_t *hashed;       /* every point's position, in the order hashed */
    size_t first, end;      /* this half's nodes: order[first .. end - 1] */
    size_t at;              /* their first point in `hashed` */
    uint32_t count[DIGITS]; /* their top digits */
    uint32_t next[DIGITS];  /* where their next point of each part goes */
    const uint32_t *start;  /* part d is points start[d] .. start[d + 1] - 1 */
    unsigned part, parts;   /* this half's parts: part .. parts - 1 */
    unsigned passes;        /* radix passes of step 3 */
    rk_ring scratch;        /* step 3's, as large as the largest part */
    int own_scratch;        /* scratch was allocated for it, not lent by `hashed` */
    int rc;                 /* step 4's: RK_ENOMEM when qsort's copy of a part failed */
} half;

#define THREADED_POINTS ((size_t)1 << 18) /* a thread costs ~50 us: worth it from here */

static _Atomic unsigned build_threads; /* rk_ring_set_build_threads */

void rk_ring_set_build_threads(unsigned threads)
{
    build_threads = threads;
}

unsigned rki_build_threads(size_t points)
{
    return points >= THREADED_POINTS && build_threads != 1 ? 2 : 1;
}

void rki_run_pair(void *(*fn)(void *), void *arg, void *(*beside)(void *), void *beside_arg,
                  int threaded)
{
    pthread_t t;
    threaded = threaded && pthread_create(&t, NULL, beside, beside_arg) == 0;
    fn(arg);
    if (threaded)
        pthread_join(t, NULL);
    else
        beside(beside_arg);
}

/* fn on each half, the second on a thread of its own when there is one to be had. */
static void run_halves(void *(*fn)(void *), half *h, unsigned halves)
{
    if (halves == 2)
        rki_run_pair(fn, &h[0], fn, &h[1], 1);
    else
        fn(&h[0]);
}

/* Step 1: each node's positions into `hashed`, their top digits counted. */
static void *hash_nodes(void *arg)
{
    half *h = arg;
    unsigned shift = h->r->bits - DIGIT_BITS;
    for (size_t k = h->first, at = h->at; k < h->end; k++) {
        uint32_t m = h->points[h->order[k]];
        h->scheme->positions(h->r->topo, h->order[k], m, h->hashed + at);
        for (size_t i = at; i < at + m; i++)
            h->count[digit(h->hashed[i], shift)]++;
        at += m;
    }
    return NULL;
}

/* Step 2: each point to the next place of its part, so a part keeps the order of hashing. */
static void *scatter(void *arg)
{
    half *h = arg;
    unsigned shift = h->r->bits - DIGIT_BITS;
    for (size_t k = h->first, i = h->at; k < h->end; k++) {
        uint32_t node = h->order[k];
        for (size_t end = i + h->points[node]; i < end; i++) {
            uint32_t at = h->next[digit(h->hashed[i], shift)]++;
            h->r->pos[at] = h->hashed[i];
            set_node(h->r, at, node);
        }
    }
    return NULL;
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

/* Whether point i goes after a point (p, node): ring order is by position, then tie rank. */
static inline int goes_after(const rk_ring *r, const uint32_t *rank, size_t i, uint64_t p,
                             uint32_t node)
{
    return r->pos[i] > p || (r->pos[i] == p && rank[rki_node_at(r, i)] > rank[node]);
}

/* Step 4 for a part: 0 when its points are too far from sorted for an insertion sort (more
 * than n moves); they are then left in some order. */
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

/* The fallback of step 4, for a part whose positions collide in their next bits by the thousand. */
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

/* Steps 3 and 4 for a half's parts; h->scratch and h->rank are set. */
static void *sort_parts(void *arg)
{
    half *h = arg;
    rk_ring *r = h->r;
    for (unsigned d = h->part; d < h->parts && h->rc == RK_OK; d++) {
        rk_ring part = {.pos = r->pos + h->start[d], .n = h->start[d + 1] - h->start[d]};
        part.node16 = r->node16 ? r->node16 + h->start[d] : NULL;
        part.node32 = r->node32 ? r->node32 + h->start[d] : NULL;
        sort_part(&part, &h->scratch, r->bits - (h->passes + 1) * DIGIT_BITS, h->passes);
        if (!insertion_sort(&part, h->rank))
            h->rc = sort_all(&part, h->rank);
    }
    return NULL;
}

/* Scratch space for each half's step 3: its share of `hashed` (n positions, no longer needed by
 * then) when the largest part fits in it, else its own; 0 if that fails. */
static int give_scratch(half *h, unsigned halves, const uint32_t *start)
{
    rk_ring *r = h[0].r;
    uint32_t largest = 0;
    for (unsigned d = 0; d < DIGITS; d++)
        largest = start[d + 1] - start[d] > largest ? start[d + 1] - start[d] : largest;
    size_t node_size = r->node16 ? sizeof *r->node16 : sizeof *r->node32;
    size_t room = r->n / halves * sizeof *r->pos;
    for (unsigned k = 0; k < halves; k++) {
        rk_ring *s = &h[k].scratch;
        if ((size_t)largest * (sizeof *r->pos + node_size) > room) {
            h[k].own_scratch = 1;
            if (alloc_points(s, largest, 0, rk_topology_node_count(r->topo)))
                return 0;
            continue;
        }
        s->pos = h[k].hashed + k * (r->n / halves);
        if (r->node16)
            s->node16 = (uint16_t *)(s->pos + largest);
        else
            s->node32 = (uint32_t *)(s->pos + largest);
    }
    return 1;
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

/* The halves of steps 1 to 4: the nodes split where half the points are hashed, the parts at the
 * middle digit; one half alone for a small ring or when so set. */
static unsigned split(half *h, rk_ring *r, const rki_scheme *scheme, const uint32_t *points,
                      const uint32_t *order, const uint32_t *rank, uint64_t *hashed)
{
    size_t nn = rk_topology_node_count(r->topo), k = 0, at = 0;
    unsigned halves = rki_build_threads(r->n);
    for (unsigned i = 0; i < halves; i++)
        h[i] = (half){.r = r,
                      .scheme = scheme,
                      .order = order,
                      .points = points,
                      .rank = rank,
                      .hashed = hashed};
    for (; k < nn && (halves == 1 || 2 * at < r->n); k++)
        at += points[order[k]];
    h[0].end = h[1].first = k, h[1].at = at, h[1].end = nn;
    h[0].parts = h[1].part = halves == 2 ? DIGITS / 2 : DIGITS, h[1].parts = DIGITS;
    return halves;
}

/* Part d's points start at start[d]; each half's next of each part after the half before's. */
static void count_parts(half *h, unsigned halves, uint32_t *start)
{
    start[0] = 0;
    for (unsigned d = 0; d < DIGITS; d++) {
        start[d + 1] = start[d];
        for (unsigned i = 0; i < halves; i++) {
            h[i].next[d] = start[d + 1];
            start[d + 1] += h[i].count[d];
        }
    }
}

/* Each node's place in the tie order `order`; NULL when out of memory. */
static uint32_t *tie_ranks(const uint32_t *order, size_t nodes)
{
    uint32_t *rank = malloc(nodes * sizeof *rank);
    for (size_t k = 0; rank && k < nodes; k++)
        rank[order[k]] = (uint32_t)k;
    return rank;
}

int rki_ring_place(rk_ring *r, const rki_scheme *scheme, const uint32_t *points,
                   const uint32_t *order, size_t pad)
{
    half h[2];
    uint32_t start[DIGITS + 1];
    size_t nodes = rk_topology_node_count(r->topo);
    uint64_t *hashed = rki_big_alloc(r->n * sizeof *hashed);
    uint32_t *rank = tie_ranks(order, nodes);
    int rc = hashed && rank ? alloc_points(r, r->n, pad, nodes) : RK_ENOMEM;
    unsigned halves = split(h, r, scheme, points, order, rank, hashed);
    if (rc == RK_OK) {
        run_halves(hash_nodes, h, halves);
        count_parts(h, halves, start);
        run_halves(scatter, h, halves);
        for (unsigned i = 0; i < halves; i++)
            h[i].start = start, h[i].passes = digits_to_sort(r) - 1;
        rc = give_scratch(h, halves, start) ? RK_OK : RK_ENOMEM;
    }
    if (rc == RK_OK) {
        run_halves(sort_parts, h, halves);
        rc = h[0].rc ? h[0].rc : h[halves - 1].rc;
    }
    for (unsigned i = 0; i < halves; i++)
        if (h[i].own_scratch)
            free(h[i].scratch.pos), free(h[i].scratch.node16), free(h[i].scratch.node32);
    free(hashed), free(rank);
    if (rc == RK_OK && scheme->owned_ends)
        owned_ends(r, scheme);
    return rc;
}

int rki_ring_place_table(rk_ring *r, size_t pad)
{
    uint32_t *owner = malloc((r->n ? r->n : 1) * sizeof *owner);
    int rc = owner ? alloc_points(r, r->n, pad, rk_topology_node_count(r->topo)) : RK_ENOMEM;
    rc = rc ? rc : rki_table_points(r->topo, r->pos, owner);
    for (size_t i = 0; rc == RK_OK && i < r->n; i++)
        set_node(r, i, owner[i]);
    free(owner);
    return rc;
}
