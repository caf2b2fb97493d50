/* plan_int.h — the plan's insides, shared by plan.c, which finds its arcs and figures, and
 * plan_warnings.c, which reads them to warn its reader. Private to those two files. */
#ifndef RK_PLAN_INT_H
#define RK_PLAN_INT_H

#include "internal.h"

/* One side of a plan: the version it moves from (before) or the one it moves to (after). */
typedef struct plan_side {
    rk_topology *topo;    /* reference held; plan nodes' ids point into it */
    char fingerprint[17]; /* of its ring, 16 hex digits */
    double balance_max;   /* largest share / ideal over its nodes with weight > 0 */
    double balance_min;   /* and the smallest */
    uint32_t *map;        /* while planning: its topology's node index -> plan node index */
} plan_side;

struct rk_plan {
    plan_side before;    /* the ring the plan moves from */
    plan_side after;     /* the ring it moves to */
    unsigned bits;       /* hash space 2^bits */
    rk_plan_options opt; /* as asked */
    rk_plan_node *nodes; /* union of both topologies' nodes, by id */
    size_t n_nodes;
    rk_arc *arcs; /* moving arcs, by first */
    size_t n_arcs;
    rk_arc tail;            /* while planning: the last arc found */
    rk_transfer *transfers; /* per (from, to) */
    size_t n_transfers;
    rk_step *steps; /* with opt.max_step */
    size_t n_steps;
    rk_arc *step_arcs; /* the steps' arcs, split to fit */
    size_t n_step_arcs;
    double moved, minimal; /* fractions of the hash space */
    char *warnings[8];     /* sentences for people */
    size_t n_warnings;
};

/* Appends to p->warnings what a reader should know of the plan between rings a and b (balance,
 * trades between unchanged nodes, moved fraction against the minimal, vnode factor, ring size),
 * and fills the sides' balance. RK_OK, or RK_ENOMEM. */
int rki_plan_warn(rk_plan *p, const rk_ring *a, const rk_ring *b);

#endif
