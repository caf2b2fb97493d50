/* steps.c — packs a plan's arcs into ordered steps under a per-step cap (docs/RING.md). */
#include <stdlib.h>

#include "internal.h"

#define MAX_PIECES 100000 /* beyond this a step limit is too small to be reviewed by a person */

typedef unsigned __int128 u128; /* an arc may span all 2^64 hash values */

static u128 arc_len(const rk_arc *a)
{
    return (u128)(a->last - a->first) + 1;
}

/* Splits every arc into pieces of at most `cap` hash values, in order. */
static int split(const rk_arc *arcs, size_t n, u128 cap, double space, rk_arc **out, size_t *n_out)
{
    size_t count = 0;
    for (size_t k = 0; k < n; k++) {
        /* up to 2^64 (an arc over the whole 64-bit space, cap 1): compared before it is counted */
        u128 pieces = (arc_len(&arcs[k]) + cap - 1) / cap;
        if (pieces > MAX_PIECES + n - count)
            return RK_EINVAL;
        count += (size_t)pieces;
    }
    rk_arc *p = malloc((count ? count : 1) * sizeof *p);
    if (!p)
        return RK_ENOMEM;
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        rk_arc a = arcs[k];
        for (u128 left = arc_len(&a); left > 0;) {
            u128 take = left < cap ? left : cap;
            p[at] = a;
            p[at].last = a.first + (uint64_t)(take - 1);
            p[at].fraction = ((double)(p[at].last - p[at].first) + 1.0) / space; /* as plan.c */
            a.first = p[at++].last + 1;
            left -= take;
        }
    }
    *out = p, *n_out = count;
    return RK_OK;
}

static int by_first(const void *x, const void *y)
{
    const rk_arc *a = x, *b = y;
    return a->first < b->first ? -1 : a->first > b->first;
}

#define NO_PIECE  (~(u128)0) /* length of an exhausted source's next piece: fits no room */
#define NO_SOURCE SIZE_MAX

/* The sources' runs of pieces, and a min-tree over the length of each source's next piece, so
 * that the next source (in order) whose piece fits a step's room is found in O(log sources). */
typedef struct packer {
    const rk_arc *pieces; /* grouped by source, in order within each */
    size_t *head, *end;   /* per source: its next piece, and the end of its run */
    size_t n_src, leaves; /* sources; leaves of the tree, a power of two >= n_src */
    u128 *tree;           /* tree[1] the root, tree[leaves + s] source s's next piece length */
    size_t *takers;       /* the sources that gave in the last pass over a step */
    size_t *visits;       /* work done (tree nodes and sources looked at), or NULL */
} packer;

static void count_visit(packer *k)
{
    if (k->visits)
        ++*k->visits;
}

static u128 next_len(const packer *k, size_t s)
{
    return k->head[s] == k->end[s] ? NO_PIECE : arc_len(&k->pieces[k->head[s]]);
}

static u128 min128(u128 a, u128 b)
{
    return a < b ? a : b;
}

/* Sets source s's leaf to its next piece's length and mends the minimums above it. */
static void tree_update(packer *k, size_t s)
{
    size_t i = k->leaves + s;
    k->tree[i] = next_len(k, s);
    for (i >>= 1; i > 0; i >>= 1)
        k->tree[i] = min128(k->tree[2 * i], k->tree[2 * i + 1]);
}

/* The first source from `from` on whose next piece fits `room`, or NO_SOURCE. */
static size_t first_fit(packer *k, size_t from, u128 room)
{
    if (from >= k->n_src)
        return NO_SOURCE;
    size_t i = k->leaves + from;
    for (count_visit(k); k->tree[i] > room; count_visit(k)) {
        while (i & 1) /* a right child: its subtree is done, climb */
            i >>= 1;
        if (i == 0) /* climbed past the root: nothing to the right fits */
            return NO_SOURCE;
        i++; /* the right sibling's subtree lies wholly after `from` */
    }
    while (i < k->leaves) {
        count_visit(k);
        i = k->tree[2 * i] <= room ? 2 * i : 2 * i + 1;
    }
    return i - k->leaves;
}

/* Moves source s's next piece to *out; its length. */
static u128 take(packer *k, size_t s, rk_arc *out)
{
    *out = k->pieces[k->head[s]++];
    tree_update(k, s);
    return arc_len(out);
}

/* Round-robin over source nodes: each pass offers every source's next piece until none fits.
 * Room only shrinks, so a source that gives nothing in a pass gives nothing later: the first pass
 * is a search for fitting sources in order, each later pass offers only the last one's takers. */
static rk_step fill_step(packer *k, u128 room, rk_arc *out)
{
    size_t got = 0, n_takers = 0;
    rk_step st = {0, 0, 0, 0};
    for (size_t s = first_fit(k, 0, room); s != NO_SOURCE; s = first_fit(k, s + 1, room)) {
        room -= take(k, s, &out[got++]);
        k->takers[n_takers++] = s;
    }
    st.sources = got;
    while (n_takers > 0) {
        size_t kept = 0;
        for (size_t t = 0; t < n_takers; t++) {
            size_t s = k->takers[t];
            count_visit(k);
            if (next_len(k, s) > room)
                continue;
            room -= take(k, s, &out[got++]);
            k->takers[kept++] = s;
        }
        n_takers = kept;
    }
    qsort(out, got, sizeof *out, by_first);
    for (size_t j = 0; j < got; j++)
        st.fraction += out[j].fraction;
    st.arcs = got;
    return st;
}

/* Orders pieces by source node (stable) and finds where each source's run starts and ends. */
static int group_sources(rk_arc *pieces, size_t n, size_t **head, size_t **end, size_t *n_src)
{
    uint64_t *key = malloc(n * sizeof *key);
    uint32_t *idx = malloc(n * sizeof *idx);
    rk_arc *copy = malloc(n * sizeof *copy);
    *head = malloc(n * sizeof **head);
    *end = malloc(n * sizeof **end);
    int rc = key && idx && copy && *head && *end ? RK_OK : RK_ENOMEM;
    for (size_t k = 0; rc == RK_OK && k < n; k++)
        key[k] = pieces[k].from, idx[k] = (uint32_t)k, copy[k] = pieces[k];
    rc = rc ? rc : rki_radix_sort(&key, &idx, n);
    *n_src = 0;
    for (size_t k = 0; rc == RK_OK && k < n; k++) {
        pieces[k] = copy[idx[k]];
        if (k == 0 || key[k] != key[k - 1])
            (*head)[(*n_src)++] = k;
        (*end)[*n_src - 1] = k + 1;
    }
    free(key), free(idx), free(copy);
    return rc;
}

/* The tree over the sources of k->head and k->end, and room for a pass's takers. */
static int packer_init(packer *k)
{
    for (k->leaves = 1; k->leaves < k->n_src; k->leaves *= 2)
        ;
    k->tree = malloc(2 * k->leaves * sizeof *k->tree);
    k->takers = malloc(k->n_src * sizeof *k->takers);
    if (!k->tree || !k->takers)
        return RK_ENOMEM;
    for (size_t i = k->leaves; i < 2 * k->leaves; i++)
        k->tree[i] = i - k->leaves < k->n_src ? next_len(k, i - k->leaves) : NO_PIECE;
    for (size_t i = k->leaves - 1; i > 0; i--)
        k->tree[i] = min128(k->tree[2 * i], k->tree[2 * i + 1]);
    return RK_OK;
}

int rki_plan_steps(const rk_arc *arcs, size_t n, unsigned bits, double max_step, rk_step **steps,
                   size_t *n_steps, rk_arc **out, size_t *n_out, size_t *visits)
{
    double space = bits == 64 ? 18446744073709551616.0 : 4294967296.0;
    u128 cap = (u128)(max_step * space);
    cap = cap ? cap : 1;
    rk_arc *pieces = NULL;
    size_t count = 0;
    packer k = {.visits = visits};
    *steps = NULL, *out = NULL, *n_steps = 0, *n_out = 0;
    int rc = split(arcs, n, cap, space, &pieces, &count);
    if (rc == RK_OK && count == 0)
        goto done;
    rc = rc ? rc : group_sources(pieces, count, &k.head, &k.end, &k.n_src);
    k.pieces = pieces;
    rc = rc ? rc : packer_init(&k);
    *out = rc ? NULL : malloc(count * sizeof **out);
    *steps = rc ? NULL : malloc(count * sizeof **steps);
    rc = rc ? rc : (*out && *steps ? RK_OK : RK_ENOMEM);
    while (rc == RK_OK && *n_out < count) {
        rk_step st = fill_step(&k, cap, *out + *n_out);
        st.first_arc = *n_out;
        *n_out += st.arcs;
        (*steps)[(*n_steps)++] = st;
    }
done:
    free(pieces), free(k.head), free(k.end), free(k.tree), free(k.takers);
    return rc;
}
