/* internal.h — declarations shared inside libringkeeper (rki_ prefix); not installed. */
#ifndef RK_INTERNAL_H
#define RK_INTERNAL_H

#include "ringkeeper.h"

#if defined(__GNUC__)
#define RKI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RKI_PRINTF(f, a)
#endif

/* Fills `err` (may be NULL) with `code`, the blamed `field` ("" or NULL for none) and a message
 * that starts with "field: " when there is a field. Returns `code`. */
int rki_error_set(rk_error *err, int code, const char *field, const char *fmt, ...)
    RKI_PRINTF(4, 5);

/* Positions of points 0..count-1 of node `id`: out[i] = H("<id>#<i>"). Forms the names without
 * printf and, where the hash allows, continues from the state after "<id>#" so each point costs its
 * digits. */
void rki_hash_points(rk_hash_alg alg, const char *id, size_t id_len, uint32_t count, uint64_t *out);

/* Node indexes sorted by id in ascending byte order (SPEC section 2); borrowed, node_count entries.
 */
const uint32_t *rki_topology_order(const rk_topology *t);

/* A built ring; immutable. Shared with plan.c, which walks two rings' points side by side. */
struct rk_ring {
    rk_topology *topo;    /* reference held */
    unsigned bits;        /* hash space is 2^bits */
    size_t n;             /* number of points */
    uint64_t *pos;        /* n positions ascending, then 16 sentinels of UINT64_MAX */
    uint16_t *node16;     /* node index per point when there are < 65536 nodes, else NULL */
    uint32_t *node32;     /* node index per point otherwise */
    uint32_t *bucket;     /* first point of each top-bits bucket; nbuckets + 1 entries */
    size_t nbuckets;      /* a power of two */
    unsigned shift;       /* position >> shift = bucket */
    size_t owners;        /* nodes with weight > 0 */
    double *share;        /* per node: fraction of the hash space owned */
    double *ideal;        /* per node: weight / total weight */
    uint64_t fingerprint; /* SPEC section 2 */
    char fp_hex[17];      /* the same as 16 hex digits */
};

static inline uint32_t rki_node_at(const rk_ring *r, size_t i)
{
    return r->node16 ? r->node16[i] : r->node32[i];
}

/* Stable sort of n (key, val) pairs by key; may swap *key and *val for other buffers of the same
 * size (the caller frees whatever they point to afterwards). Input order breaks ties. Used by the
 * plan (grouping arcs by node pair and by source); the ring has its own in-place sort. */
int rki_radix_sort(uint64_t **key, uint32_t **val, size_t n);

/* Packs `arcs` (n, sorted by first) into steps that each move at most `max_step` of the hash space,
 * splitting arcs larger than that, and taking from as many source nodes as fit in each step. New
 * arrays go to *steps and *out (free both). RK_EINVAL when max_step would make too many pieces. */
int rki_plan_steps(const rk_arc *arcs, size_t n, unsigned bits, double max_step, rk_step **steps,
                   size_t *n_steps, rk_arc **out, size_t *n_out);

/* Accessors for plan_format.c. */
const rk_plan_options *rki_plan_options(const rk_plan *p);
unsigned rki_plan_bits(const rk_plan *p);
const rk_topology *rki_plan_topology(const rk_plan *p, int after);
const char *rki_plan_fingerprint(const rk_plan *p, int after);

#endif
