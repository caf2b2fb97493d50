/* picture.c — rings and plans as the console draws them, computed by the library (picture.h):
 * a ring's picture in equal bins, each the node of its longest stretch, the exact arc at a hash
 * value, and a plan's three circles; nodes by rank in id byte order, which is their colour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "picture.h"

typedef struct by_id {
    const char *id;
    uint32_t node; /* topology index */
} by_id;

static int cmp_id(const void *a, const void *b)
{
    return strcmp(((const by_id *)a)->id, ((const by_id *)b)->id);
}

/* Per node of `t`, its rank in id byte order: its index among a plan's nodes, and so its colour
 * in the console and the SVG. New array, or NULL. */
static uint32_t *id_ranks(const rk_topology *t)
{
    size_t n = rk_topology_node_count(t);
    by_id *ids = malloc(n * sizeof *ids);
    uint32_t *rank = ids ? malloc(n * sizeof *rank) : NULL;
    for (size_t k = 0; rank && k < n; k++)
        ids[k] = (by_id){rk_topology_node(t, k)->id, (uint32_t)k};
    if (rank)
        qsort(ids, n, sizeof *ids, cmp_id);
    for (size_t k = 0; rank && k < n; k++)
        rank[ids[k].node] = (uint32_t)k;
    free(ids);
    return rank;
}

/* [[count, node], ...] over runs of equal bins; node null for an empty bin. Marks drawn[node]. */
static json_t *runs_json(const uint32_t *bins, size_t n, unsigned char *drawn)
{
    json_t *runs = json_array();
    for (size_t b = 0; runs && b < n;) {
        size_t e = b + 1;
        while (e < n && bins[e] == bins[b])
            e++;
        json_t *node = bins[b] == RK_NO_NODE ? json_null() : json_integer(bins[b]);
        if (bins[b] != RK_NO_NODE)
            drawn[bins[b]] = 1;
        json_array_append_new(runs, json_pack("[I, o]", (json_int_t)(e - b), node));
        b = e;
    }
    return runs;
}

/* The ring's nodes that `drawn` marks (by rank), in rank order: {rank, id, share, ideal}. */
static json_t *drawn_nodes(const rk_ring *r, const uint32_t *rank, const unsigned char *drawn)
{
    const rk_topology *t = rk_ring_topology(r);
    size_t n = rk_topology_node_count(t);
    uint32_t *at = malloc(n * sizeof *at); /* rank -> node */
    json_t *out = at ? json_array() : NULL;
    for (size_t k = 0; out && k < n; k++)
        at[rank[k]] = (uint32_t)k;
    for (size_t i = 0; out && i < n; i++)
        if (drawn[i])
            json_array_append_new(out, json_pack("{s:I, s:s, s:f, s:f}", "rank", (json_int_t)i,
                                                 "id", rk_topology_node(t, at[i])->id, "share",
                                                 rk_ring_share(r, at[i]), "ideal",
                                                 rk_ring_ideal_share(r, at[i])));
    free(at);
    return out;
}

json_t *rkd_ring_picture_json(const char *cluster, int64_t version, const rk_ring *r, size_t bins)
{
    const rk_topology *t = rk_ring_topology(r);
    size_t n = rk_topology_node_count(t);
    uint32_t *owner = malloc(bins * sizeof *owner), *rank = id_ranks(t);
    unsigned char *drawn = calloc(n, 1);
    json_t *doc = NULL;
    if (owner && rank && drawn && rk_ring_picture(r, bins, owner, NULL) == RK_OK) {
        for (size_t b = 0; b < bins; b++)
            owner[b] = rank[owner[b]];
        json_t *runs = runs_json(owner, bins, drawn);
        doc =
            json_pack("{s:s, s:I, s:s, s:s, s:i, s:I, s:I, s:I, s:o, s:o}", "cluster", cluster,
                      "version", (json_int_t)version, "fingerprint", rk_ring_fingerprint_hex(r),
                      "hash", rk_hash_name(rk_topology_hash(t)), "bits", (int)rk_ring_bits(r),
                      "points", (json_int_t)rk_ring_point_count(r), "node_count", (json_int_t)n,
                      "bins", (json_int_t)bins, "runs", runs, "nodes", drawn_nodes(r, rank, drawn));
    }
    free(owner), free(rank), free(drawn);
    return doc;
}

/* The rank of node k of t in id byte order: one pass, where id_ranks sorts them all. */
static uint32_t id_rank(const rk_topology *t, uint32_t k)
{
    const char *id = rk_topology_node(t, k)->id;
    uint32_t rank = 0;
    for (size_t i = 0; i < rk_topology_node_count(t); i++)
        rank += strcmp(rk_topology_node(t, i)->id, id) < 0;
    return rank;
}

json_t *rkd_ring_arc_json(const char *cluster, int64_t version, const rk_ring *r, uint64_t h)
{
    rk_ring_arc a;
    char at[17], first[17], last[17];
    uint64_t top = rk_ring_bits(r) == 64 ? UINT64_MAX : UINT32_MAX;
    rk_ring_arc_at(r, h, &a);
    snprintf(at, sizeof at, "%016llx", (unsigned long long)h);
    snprintf(first, sizeof first, "%016llx",
             (unsigned long long)(a.start == top ? 0 : a.start + 1));
    snprintf(last, sizeof last, "%016llx", (unsigned long long)a.end);
    const rk_topology *t = rk_ring_topology(r);
    return json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:f, s:f}", "cluster", cluster, "version",
                     (json_int_t)version, "at", at, "first", first, "last", last, "owner",
                     rk_topology_node(t, a.node)->id, "rank", (json_int_t)id_rank(t, a.node),
                     "fraction", a.fraction, "share", rk_ring_share(r, a.node));
}

/* ---- a plan's circles ---- */

/* The plan's nodes that `drawn` marks, in plan order: {rank, id}. */
static json_t *plan_nodes(const rk_plan *p, const unsigned char *drawn)
{
    size_t nn;
    const rk_plan_node *nodes = rk_plan_nodes(p, &nn);
    json_t *out = json_array();
    for (size_t k = 0; out && k < nn; k++)
        if (drawn[k])
            json_array_append_new(
                out, json_pack("{s:I, s:s}", "rank", (json_int_t)k, "id", nodes[k].id));
    return out;
}

json_t *rkd_plan_picture_json(const rk_plan *p, const rk_plan_meta *meta, const rk_ring *rings[2],
                              size_t bins)
{
    static const char *names[] = {"before", "moving", "after"};
    size_t nn;
    rk_plan_nodes(p, &nn);
    uint32_t *out = malloc(bins * sizeof *out);
    unsigned char *drawn = calloc(nn ? nn : 1, 1);
    json_t *circles = out && drawn ? json_object() : NULL;
    for (int k = RK_PLAN_BEFORE; circles && k <= RK_PLAN_AFTER; k++) {
        const rk_ring *side = k == RK_PLAN_MOVING ? NULL : rings[k == RK_PLAN_AFTER];
        if (rk_plan_picture(p, (rk_plan_circle)k, side, bins, out, NULL) != RK_OK) {
            json_decref(circles);
            circles = NULL;
        } else {
            json_object_set_new(circles, names[k], runs_json(out, bins, drawn));
        }
    }
    json_t *doc = circles ? json_pack("{s:s, s:I, s:I, s:s, s:i, s:I, s:o, s:o}", "cluster",
                                      meta->cluster, "from", (json_int_t)meta->from_version, "to",
                                      (json_int_t)meta->to_version, "hash",
                                      rk_hash_name(rk_topology_hash(rk_ring_topology(rings[0]))),
                                      "bits", (int)rk_ring_bits(rings[0]), "bins", (json_int_t)bins,
                                      "circles", circles, "nodes", plan_nodes(p, drawn))
                          : NULL;
    free(out), free(drawn);
    return doc;
}
