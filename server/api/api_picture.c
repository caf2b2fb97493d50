/* api_picture.c — a ring as the console draws it, computed by the library: GET .../picture (the
 * ring in equal bins, each the node of its longest stretch), GET .../arc (the exact arc holding a
 * hash value) and a plan's three circles (GET /plan?format=picture, through api_plan.c). The
 * browser draws and points; it never rebuilds a ring. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_internal.h"

/* ---- the bins of a picture, run-length encoded ---- */

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

/* The query's bins: 0, or -1 after answering 400. */
static int query_bins(rkd_call *c, int64_t *bins)
{
    *bins = RKD_PICTURE_BINS;
    return rkd_query_int(c, "bins", RKD_PICTURE_MIN_BINS, RKD_PICTURE_MAX_BINS, bins) < 0 ? -1 : 0;
}

/* 1 after answering 304 when If-None-Match names version v of this store: a version's ring, and
 * so its picture and arcs, never changes. Sets the ETag otherwise. */
static int not_modified(rkd_call *c, int64_t v)
{
    const char *s = c->req->header(c->req, "If-None-Match");
    rkd_format_etag(c->resp->etag, v, 0, rkd_store_id(c->app->store), NULL); /* v is v */
    if (!s || strcmp(s, c->resp->etag) != 0)
        return 0;
    c->resp->status = 304;
    return 1;
}

/* The call's version as a ring, held; NULL after answering. A ring not built yet costs what a
 * plan does, so building it takes a plan slot: a client asking for pictures of many versions
 * cannot build more rings at once than --plan-concurrency. */
static rkd_entry *version_ring(rkd_call *c)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_cache_get(c->app->rings, c->cluster, c->version);
    if (e || !rkd_plan_slot(c))
        return e;
    e = rkd_ring_entry(c, c->version, &rc, &err);
    rkd_plan_slot_release(c);
    if (!e)
        rkd_fail(c, rc, &err);
    return e;
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

/* The picture document of ring r in `bins` bins; NULL when out of memory. */
static json_t *picture_json(rkd_call *c, const rk_ring *r, size_t bins)
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
            json_pack("{s:s, s:I, s:s, s:s, s:i, s:I, s:I, s:I, s:o, s:o}", "cluster", c->cluster,
                      "version", (json_int_t)c->version, "fingerprint", rk_ring_fingerprint_hex(r),
                      "hash", rk_hash_name(rk_topology_hash(t)), "bits", (int)rk_ring_bits(r),
                      "points", (json_int_t)rk_ring_point_count(r), "node_count", (json_int_t)n,
                      "bins", (json_int_t)bins, "runs", runs, "nodes", drawn_nodes(r, rank, drawn));
    }
    free(owner), free(rank), free(drawn);
    return doc;
}

void rkd_h_picture(rkd_call *c)
{
    int64_t bins = 0;
    if (query_bins(c, &bins) != 0 || not_modified(c, c->version))
        return;
    rkd_entry *e = version_ring(c);
    if (!e)
        return;
    rkd_answer_json(c->resp, 200, picture_json(c, e->value, (size_t)bins));
    rkd_cache_release(c->app->rings, e);
}

/* ---- the arc at a hash value ---- */

/* A hash value of a 2^bits space: 16 hex digits as the API writes them (8 too on a 32-bit ring),
 * else decimal digits. 0, or -1. */
static int parse_hash(const char *s, unsigned bits, uint64_t *out)
{
    size_t len = strlen(s);
    int hex = len == 16 || (bits == 32 && len == 8);
    const char *digits = hex ? "0123456789abcdefABCDEF" : "0123456789";
    char *end = NULL;
    if (len == 0 || len > 20 || strspn(s, digits) != len)
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    *out = v;
    return errno == 0 && (bits == 64 || v <= UINT32_MAX) ? 0 : -1;
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

/* The arc document: the hash value asked (at), first and last (inclusive, 16 hex digits as plan
 * arcs have them; first > last when it wraps past the top of the space), owner and its rank
 * (its colour), the arc's fraction and the owner's share of the ring. */
static json_t *arc_json(rkd_call *c, const rk_ring *r, uint64_t h)
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
    return json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:f, s:f}", "cluster", c->cluster,
                     "version", (json_int_t)c->version, "at", at, "first", first, "last", last,
                     "owner", rk_topology_node(t, a.node)->id, "rank",
                     (json_int_t)id_rank(t, a.node), "fraction", a.fraction, "share",
                     rk_ring_share(r, a.node));
}

void rkd_h_arc(rkd_call *c)
{
    const char *s = c->req->query(c->req, "hash");
    uint64_t h = 0;
    if (!s) {
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "hash",
                           "query parameter hash is required: a hash value of the ring");
        return;
    }
    rkd_entry *e = version_ring(c);
    if (!e)
        return;
    unsigned bits = rk_ring_bits(e->value);
    if (parse_hash(s, bits, &h) != 0)
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "hash",
                           "query parameter hash must be a value of this ring's %u-bit hash space: "
                           "16 hex digits%s, or a decimal number (one of that many digits with a "
                           "leading 0)",
                           bits, bits == 32 ? " or 8" : "");
    else if (!not_modified(c, c->version))
        rkd_answer_json(c->resp, 200, arc_json(c, e->value, h));
    rkd_cache_release(c->app->rings, e);
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
