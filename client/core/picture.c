/* picture.c — rings and plans as pictures of equal bins of the hash space, each bin in the node of
 * its longest stretch: what plan_svg.c draws and what rk_ring_picture / rk_plan_picture hand a
 * caller that draws for itself (the console). Stretches below a bin merge into their neighbours,
 * so a picture costs one pass over the ring and its size is the bins', whatever the ring. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int rki_layer_init(rki_layer *l, unsigned bits, size_t bins)
{
    l->space = ldexp(1.0, (int)bits);
    l->bins = bins;
    l->n = l->stretches = 0;
    l->best = malloc(bins * sizeof *l->best);
    l->best_of = malloc(bins * sizeof *l->best_of);
    if (!l->best || !l->best_of) {
        rki_layer_deinit(l);
        return RK_ENOMEM;
    }
    for (size_t b = 0; b < bins; b++)
        l->best[b] = 0, l->best_of[b] = RK_NO_NODE;
    return RK_OK;
}

void rki_layer_deinit(rki_layer *l)
{
    free(l->best), free(l->best_of);
    l->best = NULL, l->best_of = NULL;
}

/* Credits each bin that [first, last] overlaps with the length of the overlap. */
static void layer_bins(rki_layer *l, uint64_t first, uint64_t last, uint32_t node)
{
    double f0 = (double)first / l->space, f1 = ((double)last + 1.0) / l->space, n = (double)l->bins;
    size_t b0 = (size_t)(f0 * n), b1 = (size_t)(f1 * n);
    for (size_t b = b0; b <= b1 && b < l->bins; b++) {
        double lo = fmax(f0, (double)b / n), hi = fmin(f1, (double)(b + 1) / n);
        if (hi - lo > l->best[b])
            l->best[b] = hi - lo, l->best_of[b] = node;
    }
}

/* Adds the stretch [first, last] of `node`; stretches must come in ascending hash order. */
static void layer_add(rki_layer *l, uint64_t first, uint64_t last, uint32_t node)
{
    rki_stretch *tail = l->n ? &l->exact[l->n - 1] : NULL;
    layer_bins(l, first, last, node);
    if (tail && tail->node == node && tail->last + 1 == first) {
        tail->last = last;
        return;
    }
    if (l->n < RKI_LAYER_MAX)
        l->exact[l->n++] = (rki_stretch){first, last, node};
    l->stretches++;
}

/* layer_add for rki_ring_walk. */
static void layer_stretch(void *l, uint64_t first, uint64_t last, uint32_t node)
{
    layer_add(l, first, last, node);
}

/* Plan node index of each of the topology's nodes: the plan's nodes are the union of both
 * topologies' nodes, sorted by id. New array, or NULL when out of memory. */
static uint32_t *node_map(const rk_plan *p, const rk_topology *t)
{
    size_t nn, n = rk_topology_node_count(t);
    const rk_plan_node *nodes = rk_plan_nodes(p, &nn);
    uint32_t *map = malloc(n * sizeof *map);
    for (size_t i = 0; map && i < n; i++) {
        const char *id = rk_topology_node(t, i)->id;
        size_t lo = 0, hi = nn;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(nodes[mid].id, id) <= 0)
                lo = mid;
            else
                hi = mid;
        }
        map[i] = (uint32_t)lo;
    }
    return map;
}

int rki_plan_ring_open(rki_plan_ring *s, const rk_plan *p, const rk_ring *given, int after,
                       rk_error *err)
{
    rk_error local = {0};
    /* the ring takes a reference, which changes only the topology's reference count */
    s->built = given ? NULL : rk_ring_build((rk_topology *)rki_plan_topology(p, after), &local);
    s->ring = given ? given : s->built;
    s->map = s->ring ? node_map(p, s->ring->topo) : NULL;
    if (s->map)
        return RK_OK;
    int rc = s->ring ? rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading a plan's ring")
                     : local.code;
    if (!s->ring && err)
        *err = local;
    rki_plan_ring_close(s);
    return rc;
}

void rki_plan_ring_close(rki_plan_ring *s)
{
    free(s->map);
    rk_ring_free(s->built);
    s->map = NULL, s->built = NULL;
}

/* The ring before or after of plan p into l, in plan node indexes: `given` when not NULL, else
 * rebuilt from the plan's topology (the plan keeps only the moving arcs). */
static int side_stretches(rki_layer *l, const rk_plan *p, const rk_ring *given, int after,
                          rk_error *err)
{
    rki_plan_ring side;
    int rc = rki_plan_ring_open(&side, p, given, after, err);
    if (rc == RK_OK)
        rki_ring_walk(side.ring, side.map, layer_stretch, l);
    rki_plan_ring_close(&side);
    return rc;
}

int rki_plan_layer(rki_layer *l, const rk_plan *p, rk_plan_circle circle, const rk_ring *ring,
                   rk_error *err)
{
    if (circle != RK_PLAN_MOVING)
        return side_stretches(l, p, ring, circle == RK_PLAN_AFTER, err);
    size_t na;
    const rk_arc *arcs = rk_plan_arcs(p, &na);
    for (size_t k = 0; k < na; k++)
        layer_add(l, arcs[k].first, arcs[k].last, arcs[k].to);
    return RK_OK;
}

/* A picture's bins: 1 and more; the caller's array holds that many. */
static int bins_valid(size_t bins, rk_error *err)
{
    if (bins >= 1 && bins <= RK_PICTURE_MAX_BINS)
        return 1;
    rk_error_set(err, RK_EINVAL, "bins", "a picture has 1 to %d bins, not %zu", RK_PICTURE_MAX_BINS,
                 bins);
    return 0;
}

/* The layer's bins into the caller's `out`. */
static void copy_bins(const rki_layer *l, uint32_t *out)
{
    memcpy(out, l->best_of, l->bins * sizeof *out);
}

int rk_ring_picture(const rk_ring *r, size_t bins, uint32_t *out, rk_error *err)
{
    rki_layer l;
    if (!bins_valid(bins, err))
        return RK_EINVAL;
    if (rki_layer_init(&l, r->bits, bins) != RK_OK) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory drawing a ring");
        return RK_ENOMEM;
    }
    rki_ring_walk(r, NULL, layer_stretch, &l);
    copy_bins(&l, out);
    rki_layer_deinit(&l);
    return RK_OK;
}

int rk_plan_picture(const rk_plan *p, rk_plan_circle circle, const rk_ring *ring, size_t bins,
                    uint32_t *out, rk_error *err)
{
    rki_layer l;
    const rk_topology *t = rki_plan_topology(p, 0);
    if (!bins_valid(bins, err))
        return RK_EINVAL;
    if (rki_layer_init(&l, rki_topology_scheme(t)->bits(t), bins) != RK_OK) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory drawing a plan");
        return RK_ENOMEM;
    }
    int rc = rki_plan_layer(&l, p, circle, ring, err);
    if (rc == RK_OK)
        copy_bins(&l, out);
    rki_layer_deinit(&l);
    return rc;
}
