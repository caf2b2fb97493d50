/* plan_warnings.c — the sentences a plan carries for its reader: a side out of balance, traffic
 * between servers that did not change, a small move that only an unbalanced ring explains, a low
 * vnode factor, a ring or table too small for its hosts. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

#define OVERLOAD  1.25 /* share / ideal above this is worth a warning */
#define UNDERLOAD 0.75 /* and below this */
#define LOW_VNODE 100  /* vnode factors under this make shares vary widely */
/* Ring entries a node needs for its share to stray by about 10% at most (a share over k random
 * entries strays by about 1/sqrt(k)); slots per host a Maglev table needs, as its paper sizes
 * M > 100 N for shares within about 1% of each other (Eisenbud et al., NSDI 2016, 3.4). */
#define FEW_ENTRIES 100

static int warn(rk_plan *p, const char *fmt, ...) RKI_PRINTF(2, 3);

static int warn(rk_plan *p, const char *fmt, ...)
{
    char buf[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (p->n_warnings == sizeof p->warnings / sizeof p->warnings[0])
        return RK_OK;
    p->warnings[p->n_warnings] = strdup(buf);
    return p->warnings[p->n_warnings++] ? RK_OK : RK_ENOMEM;
}

/* Balance of one side, ring `r`, named `name` in warnings, with warnings when it is off. */
static int balance(rk_plan *p, plan_side *side, const rk_ring *r, const char *name)
{
    uint32_t hi, lo;
    rki_ring_balance(r, &side->balance_max, &side->balance_min, &hi, &lo);
    const char *hi_id = rk_topology_node(r->topo, hi)->id;
    const char *lo_id = rk_topology_node(r->topo, lo)->id;
    int rc = RK_OK;
    if (side->balance_max > OVERLOAD)
        rc = warn(p, "%s: the most loaded node holds %.2fx its ideal share (%.64s)", name,
                  side->balance_max, hi_id);
    if (rc == RK_OK && side->balance_min < UNDERLOAD)
        rc = warn(p, "%s: the least loaded node holds %.2fx its ideal share (%.64s)", name,
                  side->balance_min, lo_id);
    return rc;
}

/* The fraction of the hash space that moves between nodes whose weight did not change: none in
 * the ringkeeper scheme, where a node's points depend on it alone, but under ketama every
 * server's point count depends on the server count and the total weight. */
static double traded_by_unchanged(const rk_plan *p)
{
    double f = 0;
    for (size_t i = 0; i < p->n_transfers; i++) {
        const rk_plan_node *from = &p->nodes[p->transfers[i].from],
                           *to = &p->nodes[p->transfers[i].to];
        if (from->weight_before && from->weight_before == from->weight_after && to->weight_before &&
            to->weight_before == to->weight_after)
            f += p->transfers[i].fraction;
    }
    return f;
}

/* The fewest points a live node of r has (r has live nodes): a table's slots or a ring's entries.
 */
static size_t least_points(const rk_ring *r, int *rc)
{
    size_t nodes = rk_topology_node_count(r->topo), least = SIZE_MAX;
    size_t *count = calloc(nodes, sizeof *count);
    if (!count) {
        *rc = RK_ENOMEM;
        return 0;
    }
    for (size_t i = 0; i < r->n; i++)
        count[rki_node_at(r, i)]++;
    for (size_t i = 0; i < nodes; i++)
        if (rk_topology_node(r->topo, i)->weight > 0 && count[i] < least)
            least = count[i];
    free(count);
    return least;
}

/* Advice on the size of ring `r` (the plan's after) in a scheme whose parameter sets it: a node
 * with fewer than FEW_ENTRIES entries holds a share that strays widely from its weight's (gRPC's
 * default cap of 4096 at 100 endpoints leaves each about 41), so say by how much, and what size
 * gives it FEW_ENTRIES; a Maglev table under FEW_ENTRIES slots a host. */
static int size_advice(rk_plan *p, const rk_ring *r)
{
    const char *param = r->scheme->size_param, *note = r->scheme->size_note;
    int rc = RK_OK;
    if (!param || !r->owners)
        return RK_OK;
    if (r->scheme->fill)
        return r->n >= (size_t)FEW_ENTRIES * r->owners
                   ? RK_OK
                   : warn(p,
                          "after: a table of %zu slots for %zu hosts holds under %d a host, the "
                          "least Maglev asks for to keep shares even and a change's disruption "
                          "small; give %s a prime of at least %zu",
                          r->n, r->owners, FEW_ENTRIES, param, (size_t)FEW_ENTRIES * r->owners);
    size_t least = least_points(r, &rc);
    if (rc != RK_OK || least >= FEW_ENTRIES)
        return rc;
    size_t want = least ? (r->n * FEW_ENTRIES + least - 1) / least : (size_t)FEW_ENTRIES * r->n;
    return warn(
        p,
        "after: a host has %zu ring entries at the least (%zu in all for %zu hosts), so its "
        "share strays from its weight's by about %.0f%% (1/sqrt of its entries); a %s of "
        "%zu (the maximum at least as large) gives it %d, about 10%%%s%s",
        least, r->n, r->owners, least ? 100 / sqrt((double)least) : 100.0, param, want, FEW_ENTRIES,
        note ? "; " : "", note ? note : "");
}

int rki_plan_warn(rk_plan *p, const rk_ring *a, const rk_ring *b)
{
    double traded = traded_by_unchanged(p);
    const char *why = rki_topology_scheme(b->topo)->trades_why;
    int rc = traded > 0 ? warn(p,
                               "%.2f%% of the hash space moves between servers that did not "
                               "change%s%s",
                               100 * traded, why ? ": " : "", why ? why : "")
                        : RK_OK;
    rc = rc ? rc : balance(p, &p->before, a, "before");
    rc = rc ? rc : balance(p, &p->after, b, "after");
    int unbalanced = p->after.balance_max > OVERLOAD || p->after.balance_min < UNDERLOAD;
    if (rc == RK_OK && unbalanced && p->moved < UNDERLOAD * p->minimal)
        rc = warn(p,
                  "moved_fraction %.4f is far below the minimal %.4f: the new ring moves little "
                  "because it is unbalanced, not because the change is cheap",
                  p->moved, p->minimal);
    uint32_t vf = rk_topology_vnode_factor(p->after.topo); /* 0: ketama, which fixes its points */
    if (rc == RK_OK && vf && vf < LOW_VNODE)
        rc = warn(p, "after: vnode_factor %u is under %d, so shares vary widely; use %d..%d", vf,
                  LOW_VNODE, LOW_VNODE, RK_MAX_VNODE_FACTOR);
    return rc ? rc : size_advice(p, b);
}
