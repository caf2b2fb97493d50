/* plan.c — the migration plan of SPEC section 3 between two rings: arcs, figures, balance, steps.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OVERLOAD  1.25 /* share / ideal above this is worth a warning */
#define UNDERLOAD 0.75 /* and below this */
#define LOW_VNODE 100  /* vnode factors under this make shares vary widely */

struct rk_plan {
    rk_topology *ta, *tb; /* references held; the nodes' ids point into them */
    unsigned bits;        /* hash space 2^bits */
    rk_plan_options opt;  /* as asked */
    rk_plan_node *nodes;  /* union of both topologies' nodes, by id */
    size_t n_nodes;
    uint32_t *map_a, *map_b; /* topology node index -> plan node index */
    rk_arc *arcs;            /* moving arcs, by first */
    size_t n_arcs, cap_arcs;
    rk_transfer *transfers; /* per (from, to) */
    size_t n_transfers;
    rk_step *steps; /* with opt.max_step */
    size_t n_steps;
    rk_arc *step_arcs; /* the steps' arcs, split to fit */
    size_t n_step_arcs;
    double moved, minimal; /* fractions of the hash space */
    double bal[4];         /* before max, before min, after max, after min */
    char fp[2][17];        /* fingerprints of the two rings */
    char *warnings[8];     /* sentences for people */
    size_t n_warnings;
};

static double space_of(unsigned bits)
{
    return ldexp(1.0, (int)bits);
}

static double arc_fraction(const rk_arc *a, unsigned bits)
{
    return ((double)(a->last - a->first) + 1.0) / space_of(bits);
}

/* Merges the two id orders into the plan's node list and the two index maps. */
static int join_nodes(rk_plan *p)
{
    size_t na = rk_topology_node_count(p->ta), nb = rk_topology_node_count(p->tb);
    const uint32_t *oa = rki_topology_order(p->ta), *ob = rki_topology_order(p->tb);
    p->nodes = calloc(na + nb, sizeof *p->nodes);
    p->map_a = malloc(na * sizeof *p->map_a);
    p->map_b = malloc(nb * sizeof *p->map_b);
    if (!p->nodes || !p->map_a || !p->map_b)
        return RK_ENOMEM;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        const rk_node *a = i < na ? rk_topology_node(p->ta, oa[i]) : NULL;
        const rk_node *b = j < nb ? rk_topology_node(p->tb, ob[j]) : NULL;
        int c = !a ? 1 : !b ? -1 : strcmp(a->id, b->id);
        rk_plan_node *pn = &p->nodes[p->n_nodes];
        pn->id = c <= 0 ? a->id : b->id;
        if (c <= 0) {
            pn->weight_before = a->weight;
            p->map_a[oa[i++]] = (uint32_t)p->n_nodes;
        }
        if (c >= 0) {
            pn->weight_after = b->weight;
            p->map_b[ob[j++]] = (uint32_t)p->n_nodes;
        }
        p->n_nodes++;
    }
    return RK_OK;
}

/* Records hash values first..last moving from -> to, merged with the previous arc when adjacent. */
static int add_arc(rk_plan *p, uint64_t first, uint64_t last, uint32_t from, uint32_t to)
{
    rk_arc *prev = p->n_arcs ? &p->arcs[p->n_arcs - 1] : NULL;
    if (prev && prev->last + 1 == first && prev->from == from && prev->to == to) {
        prev->last = last;
        return RK_OK;
    }
    if (p->n_arcs == p->cap_arcs) {
        size_t cap = p->cap_arcs ? 2 * p->cap_arcs : 64;
        rk_arc *grown = realloc(p->arcs, cap * sizeof *grown);
        if (!grown)
            return RK_ENOMEM;
        p->arcs = grown, p->cap_arcs = cap;
    }
    p->arcs[p->n_arcs++] = (rk_arc){first, last, from, to, 0};
    return RK_OK;
}

/* Overlays the rings: every position of either is a cut; between cuts both owners are constant. */
static int overlay(rk_plan *p, const rk_ring *a, const rk_ring *b)
{
    size_t ia = 0, ib = 0;
    uint64_t start = 0, cut = 0;
    int rc = RK_OK;
    while (rc == RK_OK && (ia < a->n || ib < b->n)) {
        cut = ib == b->n || (ia < a->n && a->pos[ia] < b->pos[ib]) ? a->pos[ia] : b->pos[ib];
        uint32_t from = p->map_a[rki_node_at(a, ia < a->n ? ia : 0)];
        uint32_t to = p->map_b[rki_node_at(b, ib < b->n ? ib : 0)];
        if (from != to)
            rc = add_arc(p, start, cut, from, to);
        while (ia < a->n && a->pos[ia] == cut)
            ia++;
        while (ib < b->n && b->pos[ib] == cut)
            ib++;
        start = cut + 1;
    }
    uint64_t max = p->bits == 64 ? UINT64_MAX : 0xFFFFFFFFu;
    uint32_t from = p->map_a[rki_node_at(a, 0)], to = p->map_b[rki_node_at(b, 0)];
    if (rc == RK_OK && cut < max && from != to) /* the stretch past the last cut, up to the top */
        rc = add_arc(p, start, max, from, to);
    for (size_t k = 0; k < p->n_arcs; k++) {
        p->arcs[k].fraction = arc_fraction(&p->arcs[k], p->bits);
        p->moved += p->arcs[k].fraction;
        p->nodes[p->arcs[k].from].lost += p->arcs[k].fraction;
        p->nodes[p->arcs[k].to].gained += p->arcs[k].fraction;
    }
    return rc;
}

/* Groups the arcs by (from, to); plan node indexes are in id order, so this is (from, to) id order.
 */
static int group_transfers(rk_plan *p)
{
    size_t n = p->n_arcs;
    uint64_t *key = malloc((n ? n : 1) * sizeof *key);
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    p->transfers = malloc((n ? n : 1) * sizeof *p->transfers);
    int rc = key && idx && p->transfers ? RK_OK : RK_ENOMEM;
    for (size_t k = 0; rc == RK_OK && k < n; k++) {
        key[k] = (uint64_t)p->arcs[k].from << 32 | p->arcs[k].to;
        idx[k] = (uint32_t)k;
    }
    if (rc == RK_OK && n)
        rc = rki_radix_sort(&key, &idx, n);
    for (size_t k = 0; rc == RK_OK && k < n; k++) {
        const rk_arc *a = &p->arcs[idx[k]];
        rk_transfer *t = &p->transfers[p->n_transfers - (p->n_transfers > 0)];
        if (!p->n_transfers || t->from != a->from || t->to != a->to) {
            t = &p->transfers[p->n_transfers++];
            *t = (rk_transfer){a->from, a->to, 0, 0};
        }
        t->fraction += a->fraction;
        t->arcs++;
    }
    free(key), free(idx);
    return rc;
}

/* Shares, ideals and the minimal fraction, per plan node. */
static void node_figures(rk_plan *p, const rk_ring *a, const rk_ring *b)
{
    for (size_t k = 0; k < rk_topology_node_count(p->ta); k++) {
        rk_plan_node *pn = &p->nodes[p->map_a[k]];
        pn->share_before = a->share[k];
        pn->ideal_before = a->ideal[k];
    }
    for (size_t k = 0; k < rk_topology_node_count(p->tb); k++) {
        rk_plan_node *pn = &p->nodes[p->map_b[k]];
        pn->share_after = b->share[k];
        pn->ideal_after = b->ideal[k];
    }
    for (size_t k = 0; k < p->n_nodes; k++)
        p->minimal += fmax(0.0, p->nodes[k].ideal_after - p->nodes[k].ideal_before);
}

static int warn(rk_plan *p, const char *fmt, ...) RKI_PRINTF(2, 3);

static int warn(rk_plan *p, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (p->n_warnings == sizeof p->warnings / sizeof p->warnings[0])
        return RK_OK;
    p->warnings[p->n_warnings] = strdup(buf);
    return p->warnings[p->n_warnings++] ? RK_OK : RK_ENOMEM;
}

/* Balance of one side (after != 0: the new ring), with warnings when it is off. */
static int balance(rk_plan *p, int after)
{
    const char *side = after ? "after" : "before", *hi = NULL, *lo = NULL;
    double *mx = &p->bal[2 * after], *mn = &p->bal[2 * after + 1];
    for (size_t k = 0; k < p->n_nodes; k++) {
        const rk_plan_node *pn = &p->nodes[k];
        double ideal = after ? pn->ideal_after : pn->ideal_before;
        if (ideal <= 0)
            continue;
        double ratio = (after ? pn->share_after : pn->share_before) / ideal;
        if (!hi || ratio > *mx)
            *mx = ratio, hi = pn->id;
        if (!lo || ratio < *mn)
            *mn = ratio, lo = pn->id;
    }
    int rc = RK_OK;
    if (*mx > OVERLOAD)
        rc = warn(p, "%s: the most loaded node holds %.2fx its ideal share (%.64s)", side, *mx, hi);
    if (rc == RK_OK && *mn < UNDERLOAD)
        rc =
            warn(p, "%s: the least loaded node holds %.2fx its ideal share (%.64s)", side, *mn, lo);
    return rc;
}

static int warnings(rk_plan *p)
{
    int rc = balance(p, 0);
    rc = rc ? rc : balance(p, 1);
    int unbalanced = p->bal[2] > OVERLOAD || p->bal[3] < UNDERLOAD;
    if (rc == RK_OK && unbalanced && p->moved < UNDERLOAD * p->minimal)
        rc = warn(p,
                  "moved_fraction %.4f is far below the minimal %.4f: the new ring moves little "
                  "because it is unbalanced, not because the change is cheap",
                  p->moved, p->minimal);
    uint32_t vf = rk_topology_vnode_factor(p->tb);
    if (rc == RK_OK && vf < LOW_VNODE)
        rc = warn(p, "after: vnode_factor %u is under %d, so shares vary widely; use %d..%d", vf,
                  LOW_VNODE, LOW_VNODE, RK_MAX_VNODE_FACTOR);
    return rc;
}

rk_plan *rk_plan_new(const rk_ring *a, const rk_ring *b, const rk_plan_options *opt, rk_error *err)
{
    if (rk_topology_hash(a->topo) != rk_topology_hash(b->topo)) {
        rki_error_set(
            err, RK_EHASHMISMATCH, "hash",
            "the versions hash with %s and %s: every key would be rehashed, so there is no "
            "plan; publish the new topology with the same hash",
            rk_hash_name(rk_topology_hash(a->topo)), rk_hash_name(rk_topology_hash(b->topo)));
        return NULL;
    }
    if (opt && (!(opt->max_step >= 0 && opt->max_step <= 1))) {
        rki_error_set(err, RK_EINVAL, "max_step", "must be a fraction in (0, 1], got %g",
                      opt->max_step);
        return NULL;
    }
    rk_plan *p = calloc(1, sizeof *p);
    if (!p) {
        rki_error_set(err, RK_ENOMEM, NULL, "out of memory planning");
        return NULL;
    }
    p->ta = rk_topology_ref(a->topo);
    p->tb = rk_topology_ref(b->topo);
    p->bits = a->bits;
    memcpy(p->fp[0], a->fp_hex, sizeof p->fp[0]);
    memcpy(p->fp[1], b->fp_hex, sizeof p->fp[1]);
    if (opt)
        p->opt = *opt;
    int rc = join_nodes(p);
    rc = rc ? rc : overlay(p, a, b);
    rc = rc ? rc : group_transfers(p);
    if (rc == RK_OK) {
        node_figures(p, a, b);
        rc = warnings(p);
    }
    if (rc == RK_OK && p->opt.max_step > 0)
        rc = rki_plan_steps(p->arcs, p->n_arcs, p->bits, p->opt.max_step, &p->steps, &p->n_steps,
                            &p->step_arcs, &p->n_step_arcs);
    free(p->map_a), free(p->map_b);
    p->map_a = p->map_b = NULL;
    if (rc == RK_EINVAL)
        rki_error_set(
            err, rc, "max_step",
            "%g would split the plan into too many steps to review; use a larger max_step",
            p->opt.max_step);
    else if (rc)
        rki_error_set(err, rc, NULL, "out of memory planning");
    if (rc) {
        rk_plan_free(p);
        return NULL;
    }
    return p;
}

void rk_plan_free(rk_plan *p)
{
    if (!p)
        return;
    rk_topology_free(p->ta), rk_topology_free(p->tb);
    free(p->nodes), free(p->map_a), free(p->map_b), free(p->arcs), free(p->transfers);
    free(p->steps), free(p->step_arcs);
    for (size_t k = 0; k < p->n_warnings; k++)
        free(p->warnings[k]);
    free(p);
}

double rk_plan_moved_fraction(const rk_plan *p)
{
    return p->moved;
}

double rk_plan_minimal_fraction(const rk_plan *p)
{
    return p->minimal;
}

const rk_arc *rk_plan_arcs(const rk_plan *p, size_t *n)
{
    *n = p->n_arcs;
    return p->arcs;
}

const rk_plan_node *rk_plan_nodes(const rk_plan *p, size_t *n)
{
    *n = p->n_nodes;
    return p->nodes;
}

const rk_transfer *rk_plan_transfers(const rk_plan *p, size_t *n)
{
    *n = p->n_transfers;
    return p->transfers;
}

const rk_step *rk_plan_steps(const rk_plan *p, size_t *n)
{
    *n = p->n_steps;
    return p->steps;
}

const rk_arc *rk_plan_step_arcs(const rk_plan *p, size_t *n)
{
    *n = p->n_step_arcs;
    return p->step_arcs;
}

void rk_plan_balance(const rk_plan *p, double *before_max, double *before_min, double *after_max,
                     double *after_min)
{
    *before_max = p->bal[0], *before_min = p->bal[1];
    *after_max = p->bal[2], *after_min = p->bal[3];
}

const char *const *rk_plan_warnings(const rk_plan *p, size_t *n)
{
    *n = p->n_warnings;
    return (const char *const *)p->warnings;
}

const rk_plan_options *rki_plan_options(const rk_plan *p)
{
    return &p->opt;
}

unsigned rki_plan_bits(const rk_plan *p)
{
    return p->bits;
}

const rk_topology *rki_plan_topology(const rk_plan *p, int after)
{
    return after ? p->tb : p->ta;
}

const char *rki_plan_fingerprint(const rk_plan *p, int after)
{
    return p->fp[after != 0];
}
