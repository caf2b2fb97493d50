/* internal.h — declarations shared inside libringkeeper (rki_ prefix); not installed. */
#ifndef RK_INTERNAL_H
#define RK_INTERNAL_H

#include "ringkeeper.h"
#include "scheme/scheme.h" /* ring schemes: which points a ring has */

#if defined(__GNUC__)
#define RKI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RKI_PRINTF(f, a)
#endif

/* ---- scheme/registry.c: names for messages ---- */

/* The names of `scheme`'s hashes for a message, in its order: each between two `quote`s,
 * separated by ", ", the last two by `last_sep` ("fnv1a_32, md5_32 or xxh3_64"). Written into
 * buf; returns buf. */
#define RKI_HASH_NAMES_MAX 256 /* a buffer for rki_hash_names, as long as a message */
const char *rki_hash_names(rk_scheme scheme, char *buf, size_t size, const char *quote,
                           const char *last_sep);

/* ---- scheme/registry.c: a list of names for a message ---- */

/* `n` names, name(of, i) each, between `quote`s, the first followed by `first_note`, separated by
 * ", " and the last two by `last_sep` ("\"a\", \"b\" or \"c\""): into buf (cut to `size`);
 * returns buf. */
const char *rki_list_names(size_t n, const char *(*name)(const void *, size_t), const void *of,
                           const char *first_note, char *buf, size_t size, const char *quote,
                           const char *last_sep);

/* ---- topology.c ---- */

/* Node indexes sorted by id in ascending byte order (docs/RING.md); borrowed, node_count entries.
 */
const uint32_t *rki_topology_order(const rk_topology *t);

/* Gives `t` its data protocol (docs/RING.md): a static name topology_json.c checked, or NULL for
 * unknown. Only on a topology just made and not yet shared: the data protocol is no parameter of
 * the public constructors, whose signatures applications are built against. */
void rki_topology_set_data(rk_topology *t, const char *data);

/* The points of a node of `weight` under `vnode_factor` (a weight rk_topology_new accepted). */
uint32_t rki_weight_points(uint32_t vnode_factor, double weight);
/* RK_ETOOBIG (field "nodes") for a ring of `points` points, over RK_MAX_POINTS: `how` says how
 * they were counted, `advice` what to lower. */
int rki_points_error(uint64_t points, const char *how, const char *advice, rk_error *err);
/* A weight as JSON: an integer when it is one, else a number (new reference). */
struct json_t *rki_weight_json(double weight);

/* The scheme of `t`'s rings; static storage. */
const rki_scheme *rki_topology_scheme(const rk_topology *t);
/* A new topology of scheme `s` after every rule: its hash, its parameters (its block, NULL in a
 * scheme without; copied), the rules every
 * scheme shares, its rules for the nodes. The public constructors' work. */
rk_topology *rki_topology_make(const rki_scheme *s, rk_hash_alg hash, const void *params,
                               const rk_node *nodes, size_t n, const char *comment, rk_error *err);
/* `t`'s parameters: the block of its scheme's params_size bytes; borrowed from `t`. */
const void *rki_topology_params(const rk_topology *t);
/* A topology of `like`'s scheme, hash, parameters, comment and data over other nodes (copied), as
 * rki_topology_make checks it. */
rk_topology *rki_topology_with_nodes(const rk_topology *like, const rk_node *nodes, size_t n,
                                     rk_error *err);
/* The step a weight of `t` moves in: 1/vnode_factor where the scheme has one (docs/RING.md,
 * "Weights in steps"), else a whole weight. In scheme/ringkeeper.c, beside vnode_factor. */
double rki_weight_unit(const rk_topology *t);

/* ---- topology_json.c: reading a document's values, blaming the path ---- */

/* An integer lo..hi from `v` into *out, or RK_ETOPOLOGY on `path` saying what was found. */
int rki_json_uint(const struct json_t *v, long lo, long hi, const char *path, uint32_t *out,
                  rk_error *err);
/* A string without NUL from `v` into *out (borrowed from v), or RK_ETOPOLOGY on `path` saying
 * `what` it is for. */
int rki_json_text(const struct json_t *v, const char *path, const char *what, const char **out,
                  rk_error *err);

/* ---- ring.c ---- */

/* A built ring; immutable. Shared with plan.c, which walks two rings' points side by side. */
struct rk_ring {
    rk_topology *topo;        /* reference held */
    const rki_scheme *scheme; /* the topology's: how keys are hashed */
    const rki_hash *hash;     /* hash of the keys: the topology's */
    const void *params;       /* the scheme's parameters; the topology's */
    unsigned bits;            /* hash space is 2^bits */
    size_t n;                 /* number of points */
    uint64_t *pos;            /* n positions ascending, then 16 sentinels of UINT64_MAX */
    uint16_t *node16;         /* node index per point when there are < 65536 nodes, else NULL */
    uint32_t *node32;         /* node index per point otherwise */
    uint32_t *bucket;         /* first point of each top-bits bucket; nbuckets + 1 entries */
    size_t nbuckets;          /* a power of two */
    unsigned shift;           /* position >> shift = bucket */
    size_t owners;            /* nodes with weight > 0 */
    double *share;            /* per node: fraction of the hash space owned */
    double *ideal;            /* per node: weight / total weight */
    uint64_t fingerprint;     /* docs/RING.md */
    char fp_hex[17];          /* the same as 16 hex digits */
};

static inline uint32_t rki_node_at(const rk_ring *r, size_t i)
{
    return r->node16 ? r->node16[i] : r->node32[i];
}

/* The node of point i of r as `map` says (NULL: its topology index). */
static inline uint32_t rki_node_mapped(const rk_ring *r, const uint32_t *map, size_t i)
{
    return map ? map[rki_node_at(r, i)] : rki_node_at(r, i);
}

/* Receives one stretch of a walk: hash values first..last (inclusive) and their node. */
typedef void rki_stretch_fn(void *ctx, uint64_t first, uint64_t last, uint32_t node);

/* The owners' stretches of ring r in hash order to fn, each node as `map` says (NULL: its topology
 * index), stretches of one node left unmerged. Inline, so that a caller's fn is inlined in its
 * loop: a picture walks every point of a ring. */
static inline void rki_ring_walk(const rk_ring *r, const uint32_t *map, rki_stretch_fn *fn,
                                 void *ctx)
{
    uint64_t max = r->bits == 64 ? UINT64_MAX : (UINT64_C(1) << r->bits) - 1;
    fn(ctx, 0, r->pos[0], rki_node_mapped(r, map, 0));
    for (size_t i = 1; i < r->n; i++)
        if (r->pos[i] > r->pos[i - 1])
            fn(ctx, r->pos[i - 1] + 1, r->pos[i], rki_node_mapped(r, map, i));
    if (r->pos[r->n - 1] < max) /* past the last point wraps to the first */
        fn(ctx, r->pos[r->n - 1] + 1, max, rki_node_mapped(r, map, 0));
}

/* ---- ring_sort.c ---- */

/* Steps 1 to 4b of a build (ring.c): r->pos (r->n + pad entries, the pad left for the caller)
 * and r->node16 or r->node32 allocated and filled with `scheme`'s points in ring order, `points`
 * per node and ties broken by `order` (rki_scheme's point_counts and tie_order). RK_ENOMEM
 * leaves what was allocated for rk_ring_free. */
int rki_ring_place(rk_ring *r, const rki_scheme *scheme, const uint32_t *points,
                   const uint32_t *order, size_t pad);
/* The same for a table scheme (rki_scheme.fill): one point a slot, in slot order, already sorted.
 */
int rki_ring_place_table(rk_ring *r, size_t pad);
/* malloc, but a large block is aligned to and advised for huge pages (fewer page faults on
 * fresh memory); free() releases it. */
void *rki_big_alloc(size_t bytes);
/* Threads a build of `points` points runs on: 2 from 2^18 points (rk_ring_set_build_threads). */
unsigned rki_build_threads(size_t points);
/* fn(arg) on the calling thread and beside(beside_arg) on a second one, when `threaded` and the
 * thread starts, else after it; returns when both have. */
void rki_run_pair(void *(*fn)(void *), void *arg, void *(*beside)(void *), void *beside_arg,
                  int threaded);

/* rk_ring_balance, and the nodes with the largest and the smallest share / ideal; of nodes tied
 * there, the first in id byte order (so a plan names the same node whatever the document order). */
void rki_ring_balance(const rk_ring *r, double *max, double *min, uint32_t *max_node,
                      uint32_t *min_node);

/* ---- sort.c, steps.c, plan.c ---- */

/* Stable sort of n (key, val) pairs by key; may swap *key and *val for other buffers of the same
 * size (the caller frees whatever they point to afterwards). Input order breaks ties. Used by the
 * plan (grouping arcs by node pair and by source); the ring has its own in-place sort. */
int rki_radix_sort(uint64_t **key, uint32_t **val, size_t n);

/* Packs `arcs` (n, sorted by first) into steps that each move at most `max_step` of the hash space,
 * splitting arcs larger than that, and taking from as many source nodes as fit in each step. New
 * arrays go to *steps and *out (free both). RK_EINVAL when max_step would make too many pieces.
 * `visits` (may be NULL) gains the tree nodes and sources looked at: the work, for the tests. */
int rki_plan_steps(const rk_arc *arcs, size_t n, unsigned bits, double max_step, rk_step **steps,
                   size_t *n_steps, rk_arc **out, size_t *n_out, size_t *visits);

/* ---- load.c: for load_json.c and plan_load.c ---- */

/* RK_OK for a load rk_load_new takes, else RK_EINVAL naming "bits", "bins" or "sample_rate". */
int rki_load_check(unsigned bits, size_t bins, double sample_rate, rk_error *err);
/* RK_OK for amounts rk_load_add takes, else RK_EINVAL naming `path`, or when it is NULL the
 * amount's own name ("bytes"). */
int rki_load_amount_check(double keys, double bytes, double requests, const char *path,
                          rk_error *err);
/* Bin b's sample, as checked by rki_load_amount_check. */
void rki_load_set_bin(rk_load *l, size_t b, rk_load_amount a);
/* Each amount of *a times `by`. */
void rki_load_scale(rk_load_amount *a, double by);
/* Adds to *into what was sampled in hash values first..last (inclusive, first <= last, in the
 * load's space), a bin they cover in part pro rata by the hash values they share with it. */
void rki_load_spread(const rk_load *l, uint64_t first, uint64_t last, rk_load_amount *into);

/* ---- picture.c: binned pictures of rings and plans, for rk_*_picture and plan_svg.c ---- */

#define RKI_LAYER_MAX 1440 /* stretches a layer keeps exactly; plan_svg.c draws up to this many */

typedef struct rki_stretch {
    uint64_t first, last; /* hash values, inclusive */
    uint32_t node;        /* the owner, or a moving arc's destination */
} rki_stretch;

/* One circle of a picture while its stretches arrive in hash order. */
typedef struct rki_layer {
    double space;                     /* size of the hash space */
    size_t bins;                      /* equal bins of the space */
    rki_stretch exact[RKI_LAYER_MAX]; /* the first stretches, adjacent ones of one node merged */
    size_t n;                         /* used in exact */
    size_t stretches;                 /* all stretches seen (after merging) */
    double *best;      /* per bin: the longest stretch's fraction of the space; owned */
    uint32_t *best_of; /* and its node, RK_NO_NODE for an empty bin; owned */
} rki_layer;

/* An empty layer of `bins` bins for a space of 2^bits; RK_OK or RK_ENOMEM. rki_layer_deinit
 * frees its bins. */
int rki_layer_init(rki_layer *l, unsigned bits, size_t bins);
void rki_layer_deinit(rki_layer *l);
/* Adds the stretches of a plan's circle (rk_plan_picture) to l. RK_OK or an error code, err set. */
int rki_plan_layer(rki_layer *l, const rk_plan *p, rk_plan_circle circle, const rk_ring *ring,
                   rk_error *err);

/* One side of a plan as a ring, its nodes in plan node indexes. */
typedef struct rki_plan_ring {
    const rk_ring *ring; /* the side's ring: the caller's, or `built` */
    rk_ring *built;      /* rebuilt from the plan's topology when none was given; owned */
    uint32_t *map;       /* ring's topology node index -> plan node index; owned */
} rki_plan_ring;

/* Opens the ring before (after == 0) or after of p: `given` (borrowed) or else rebuilt. RK_OK, or
 * an error with err set and nothing to close; rki_plan_ring_close frees what it owns. */
int rki_plan_ring_open(rki_plan_ring *s, const rk_plan *p, const rk_ring *given, int after,
                       rk_error *err);
void rki_plan_ring_close(rki_plan_ring *s);

/* Accessors for plan_format.c. */
const rk_plan_options *rki_plan_options(const rk_plan *p);
const rk_topology *rki_plan_topology(const rk_plan *p, int after);
const char *rki_plan_fingerprint(const rk_plan *p, int after);

/* ---- plan_load.c ---- */

/* What a load profile says of itself (cluster, version, fingerprint, hash, measured_at,
 * measured_epoch_s, sample_rate) and how old it is at `now` ("age_s"): shown wherever its
 * figures are. A new object, NULL when out of memory. */
struct json_t *rki_profile_about(const struct json_t *profile, int64_t now);

#endif
