/* steps.c — packs a plan's arcs into ordered steps under a per-step cap (SPEC section 3). */
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

/* Round-robin over source nodes: each pass offers every source's next piece until none fits. */
static rk_step fill_step(const rk_arc *pieces, size_t *head, const size_t *end, size_t n_src,
                         u128 cap, rk_arc *out)
{
    size_t got = 0;
    int progress = 1;
    rk_step st = {0, 0, 0, 0};
    /* room only shrinks, so a source that gives nothing in the first pass gives nothing later: the
     * first pass's takers are the step's sources */
    for (int pass = 0; progress; pass++) {
        progress = 0;
        if (pass == 1)
            st.sources = got;
        for (size_t s = 0; s < n_src; s++) {
            if (head[s] == end[s] || arc_len(&pieces[head[s]]) > cap)
                continue;
            cap -= arc_len(&pieces[head[s]]);
            out[got++] = pieces[head[s]++];
            progress = 1;
        }
    }
    qsort(out, got, sizeof *out, by_first);
    for (size_t k = 0; k < got; k++)
        st.fraction += out[k].fraction;
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

int rki_plan_steps(const rk_arc *arcs, size_t n, unsigned bits, double max_step, rk_step **steps,
                   size_t *n_steps, rk_arc **out, size_t *n_out)
{
    double space = bits == 64 ? 18446744073709551616.0 : 4294967296.0;
    u128 cap = (u128)(max_step * space);
    cap = cap ? cap : 1;
    rk_arc *pieces = NULL;
    size_t *head = NULL, *end = NULL, n_src = 0, count = 0;
    *steps = NULL, *out = NULL, *n_steps = 0, *n_out = 0;
    int rc = split(arcs, n, cap, space, &pieces, &count);
    if (rc == RK_OK && count == 0)
        goto done;
    rc = rc ? rc : group_sources(pieces, count, &head, &end, &n_src);
    *out = rc ? NULL : malloc(count * sizeof **out);
    *steps = rc ? NULL : malloc(count * sizeof **steps);
    rc = rc ? rc : (*out && *steps ? RK_OK : RK_ENOMEM);
    while (rc == RK_OK && *n_out < count) {
        rk_step st = fill_step(pieces, head, end, n_src, cap, *out + *n_out);
        st.first_arc = *n_out;
        *n_out += st.arcs;
        (*steps)[(*n_steps)++] = st;
    }
done:
    free(pieces), free(head), free(end);
    return rc;
}
