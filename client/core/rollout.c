/* rollout.c — a change broken into steps (docs/MIGRATE.md, "Rollouts"): the intermediate
 * topologies that ramp weights from one topology to another, each step's plan, their totals and
 * the digest a reviewer approves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <xxhash.h>

#include "internal.h"

#define RK_ROLLOUT_TRIES 8 /* splits tried for a budget */

/* One node of the change: its weight before and after in units (points over vnode_factor in the
 * ringkeeper scheme, whole weights under ketama), and where its id and addr come from. */
typedef struct {
    const rk_node *node; /* the target's node, or the starting one for a node the target drops */
    int64_t from, to;    /* units; 0 for a node absent on that side */
} ramp;

struct rk_rollout {
    size_t n;               /* steps */
    rk_topology **topo;     /* step i's target: references held; the last is the target itself */
    rk_plan **plan;         /* step i's plan, from step i - 1's target (or the start) */
    double total, one_shot; /* moved fractions: the steps' sum, and the plan straight to the end */
    char digest[RK_PLAN_DIGEST_LEN];
};

/* ---- the ramps ---- */

static int64_t units(const rk_topology *t, double weight)
{
    return (int64_t)nearbyint(weight / rki_weight_unit(t));
}

/* The target's nodes in its order, then the nodes only the start has, in the start's order; ids
 * are matched by merging both id orders. Returns the count, or 0 when out of memory. */
static size_t ramps_of(const rk_topology *a, const rk_topology *b, ramp **out)
{
    size_t na = rk_topology_node_count(a), nb = rk_topology_node_count(b), n = 0;
    const uint32_t *oa = rki_topology_order(a), *ob = rki_topology_order(b);
    ramp *r = calloc(na + nb, sizeof *r);
    int64_t *from = calloc(nb, sizeof *from);
    if (!r || !from) {
        free(r), free(from);
        return 0;
    }
    size_t end = nb; /* nodes only the start has go after the target's */
    for (size_t i = 0, j = 0; i < na;) {
        const rk_node *x = rk_topology_node(a, oa[i]);
        int c = j < nb ? strcmp(x->id, rk_topology_node(b, ob[j])->id) : -1;
        if (c == 0)
            from[ob[j]] = units(a, x->weight);
        if (c < 0)
            r[end++] = (ramp){x, units(a, x->weight), 0};
        i += c <= 0, j += c >= 0;
    }
    for (size_t k = 0; k < nb; k++) {
        const rk_node *y = rk_topology_node(b, k);
        r[n++] = (ramp){y, from[k], units(b, y->weight)};
    }
    free(from);
    *out = r;
    return end;
}

/* The growing nodes ramp over the first `grow` of `steps` steps, the shrinking ones over the rest:
 * a key then moves at most once when one node changes, or one node replaces another. */
static int64_t units_at(const ramp *r, size_t step, size_t grow, size_t steps)
{
    if (r->to > r->from)
        return r->from + (int64_t)nearbyint((double)(r->to - r->from) *
                                            (double)(step < grow ? step : grow) / (double)grow);
    if (r->to < r->from && step > grow)
        return r->from - (int64_t)nearbyint((double)(r->from - r->to) * (double)(step - grow) /
                                            (double)(steps - grow));
    return r->from;
}

/* The largest change of a growing and of a shrinking node, in units. */
static void largest_changes(const ramp *r, size_t n, int64_t *grow, int64_t *shrink)
{
    *grow = 0, *shrink = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t d = r[i].to - r[i].from;
        if (d > *grow)
            *grow = d;
        if (-d > *shrink)
            *shrink = -d;
    }
}

/* Of `steps`, how many the growing nodes take: in proportion to the largest changes, and no more
 * than a phase has units, so that every step changes some node. */
static size_t grow_steps(const ramp *r, size_t n, size_t steps)
{
    int64_t g, s;
    largest_changes(r, n, &g, &s);
    if (g == 0 || s == 0)
        return g ? steps : 0;
    size_t grow = (size_t)nearbyint((double)steps * (double)g / (double)(g + s));
    grow = grow < 1 ? 1 : grow > steps - 1 ? steps - 1 : grow;
    if (grow > (size_t)g)
        grow = (size_t)g;
    if (steps - grow > (size_t)s)
        grow = steps - (size_t)s;
    return grow;
}

/* The topology of step `step` (1 .. steps - 1) of the change: `to`'s scheme, hash, comment and
 * data, every node's weight at that step. */
static rk_topology *step_topology(const rk_topology *to, const ramp *r, size_t n, size_t step,
                                  size_t steps, rk_error *err)
{
    rk_node *nodes = malloc(n * sizeof *nodes);
    if (!nodes) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    size_t grow = grow_steps(r, n, steps);
    for (size_t i = 0; i < n; i++)
        nodes[i] = (rk_node){r[i].node->id, r[i].node->addr,
                             (double)units_at(&r[i], step, grow, steps) * rki_weight_unit(to)};
    rk_topology *t = rki_topology_with_nodes(to, nodes, n, err);
    free(nodes);
    return t;
}

/* ---- the steps and their plans ---- */

void rk_rollout_free(rk_rollout *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        rk_topology_free(r->topo[i]);
        rk_plan_free(r->plan[i]);
    }
    free(r->topo);
    free(r->plan);
    free(r);
}

/* XXH3-64 over the steps' plan digests in order; the first names the starting version. */
static void digest_steps(rk_rollout *r, int64_t from_version)
{
    char *text = r->n ? malloc(r->n * (RK_PLAN_DIGEST_LEN - 1) + 1) : NULL;
    size_t len = 0;
    for (size_t i = 0; text && i < r->n; i++) {
        rk_plan_digest(i ? 0 : from_version, rki_plan_fingerprint(r->plan[i], 0), 0,
                       rki_plan_fingerprint(r->plan[i], 1), text + len);
        len += RK_PLAN_DIGEST_LEN - 1;
    }
    snprintf(r->digest, sizeof r->digest, "%016llx",
             text ? (unsigned long long)XXH3_64bits(text, len) : 0ull);
    free(text);
}

/* What every split of one change shares: both ends and their rings, borrowed, and the ramps. */
typedef struct {
    const rk_ring *first, *last;
    const rk_topology *to;
    const ramp *ramps;
    size_t n;
    const rk_rollout_options *opt;
    uint64_t *built; /* points of the rings built so far, against opt->max_points_built */
} change;

/* RK_ETOOBIG when building `t`'s ring would pass the options' max_points_built. */
static int within_work(const change *c, const rk_topology *t, rk_error *err)
{
    uint64_t limit = c->opt->max_points_built;
    *c->built += rk_topology_points(t);
    if (!limit || *c->built <= limit)
        return RK_OK;
    return rk_error_set(err, RK_ETOOBIG, c->opt->steps ? "steps" : "max_step_moved",
                        "the review would build more than %llu ring points (its intermediate "
                        "rings): ask for fewer steps, a larger max_step_moved, or review it with "
                        "`ringkeeper rollout`, which has no such limit",
                        (unsigned long long)limit);
}

/* The change in exactly `steps` steps, or NULL with `err` set. Each intermediate ring is built
 * once, as one step's target and the next one's start. */
static rk_rollout *split(const change *c, size_t steps, rk_error *err)
{
    rk_rollout *r = calloc(1, sizeof *r);
    if (r && !((r->topo = calloc(steps, sizeof *r->topo)) &&
               (r->plan = calloc(steps, sizeof *r->plan)))) {
        rk_rollout_free(r);
        r = NULL;
    }
    if (!r) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    rk_ring *prev = NULL; /* the previous step's ring; NULL: c->first */
    for (size_t i = 0; i < steps; i++, r->n++) {
        int last = i + 1 == steps;
        rk_ring *next = NULL;
        r->topo[i] = last ? rk_topology_ref((rk_topology *)c->to)
                          : step_topology(c->to, c->ramps, c->n, i + 1, steps, err);
        if (r->topo[i] && !last && within_work(c, r->topo[i], err) == RK_OK)
            next = rk_ring_build(r->topo[i], err);
        if (last || next)
            r->plan[i] = rk_plan_new(prev ? prev : c->first, last ? c->last : next, NULL, err);
        rk_ring_free(prev);
        prev = next;
        if (!r->plan[i]) {
            rk_ring_free(prev);
            r->n += r->topo[i] != NULL;
            rk_rollout_free(r);
            return NULL;
        }
        r->total += rk_plan_moved_fraction(r->plan[i]);
    }
    return r;
}

static double worst_step(const rk_rollout *r)
{
    double worst = 0;
    for (size_t i = 0; i < r->n; i++)
        worst = fmax(worst, rk_plan_moved_fraction(r->plan[i]));
    return worst;
}

/* The fewest steps up to `most` in which no step moves more than `budget`: from the one-shot
 * fraction over the budget, then as many more as the worst step says (steps move about
 * 1/steps of the change each), at most RK_ROLLOUT_TRIES splits. */
static rk_rollout *split_within(const change *c, double one_shot, double budget, size_t most,
                                rk_error *err)
{
    size_t steps = (size_t)ceil(one_shot / budget - 1e-9);
    steps = steps < 1 ? 1 : steps > most ? most : steps;
    double worst = 0;
    for (int tries = 0; tries < RK_ROLLOUT_TRIES; tries++) {
        rk_rollout *r = split(c, steps, err);
        if (!r)
            return NULL;
        worst = worst_step(r);
        if (worst <= budget + 1e-12)
            return r;
        rk_rollout_free(r);
        if (steps == most)
            break;
        size_t more = (size_t)ceil((double)steps * worst / budget);
        steps = more <= steps ? steps + 1 : more > most ? most : more;
    }
    rk_error_set(err, RK_ETOOBIG, "max_step_moved",
                 "no split into at most %zu steps keeps each step's move at or below %g (the last "
                 "tried, %zu steps, moves %g in one); raise max_step_moved or vnode_factor",
                 most, budget, steps, worst);
    return NULL;
}

static int check_pair(const rk_topology *a, const rk_topology *b, const rk_rollout_options *opt,
                      rk_error *err)
{
    if (rk_topology_scheme(a) != rk_topology_scheme(b) ||
        rk_topology_hash(a) != rk_topology_hash(b) ||
        rk_topology_vnode_factor(a) != rk_topology_vnode_factor(b))
        return rk_error_set(err, RK_EHASHMISMATCH, "target",
                            "must keep the scheme, hash and vnode_factor of the start (%s, %s, %u)"
                            ": a rollout ramps weights, a new hash moves every key at once",
                            rk_scheme_name(rk_topology_scheme(a)),
                            rk_hash_name(rk_topology_hash(a)), rk_topology_vnode_factor(a));
    if ((opt->steps == 0) == !(opt->max_step_moved > 0))
        return rk_error_set(err, RK_EINVAL, "steps", "give steps or max_step_moved, one of them");
    if (opt->steps > RK_ROLLOUT_MAX_STEPS)
        return rk_error_set(err, RK_EINVAL, "steps", "must be 1..%d, got %u", RK_ROLLOUT_MAX_STEPS,
                            opt->steps);
    if (opt->max_step_moved > 1)
        return rk_error_set(err, RK_EINVAL, "max_step_moved",
                            "must be a fraction above 0 and at most 1, got %g",
                            opt->max_step_moved);
    return RK_OK;
}

rk_rollout *rk_rollout_new(const rk_ring *from, const rk_ring *to, const rk_rollout_options *opt,
                           rk_error *err)
{
    const rk_topology *a = rk_ring_topology(from), *b = rk_ring_topology(to);
    if (check_pair(a, b, opt, err))
        return NULL;
    uint64_t built = 0;
    change c = {from, to, b, NULL, 0, opt, &built};
    ramp *ramps = NULL;
    c.n = ramps_of(a, b, &ramps);
    c.ramps = ramps;
    rk_plan *one = c.n ? rk_plan_new(from, to, NULL, err) : NULL;
    if (!c.n)
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    int64_t g, s;
    largest_changes(ramps, c.n, &g, &s);
    size_t most = (size_t)(g + s) < RK_ROLLOUT_MAX_STEPS ? (size_t)(g + s) : RK_ROLLOUT_MAX_STEPS;
    most = most ? most : 1; /* only ids or addrs change: one step */
    rk_rollout *r = NULL;
    if (one && opt->steps > most)
        rk_error_set(err, RK_EINVAL, "steps",
                     "must be at most %zu here: more steps than the change has units (1/%u of a "
                     "weight) would leave some empty",
                     most, rk_topology_vnode_factor(b) ? rk_topology_vnode_factor(b) : 1);
    else if (one)
        r = opt->steps
                ? split(&c, opt->steps, err)
                : split_within(&c, rk_plan_moved_fraction(one), opt->max_step_moved, most, err);
    if (r) {
        r->one_shot = rk_plan_moved_fraction(one);
        digest_steps(r, opt->from_version);
    }
    rk_plan_free(one);
    free(ramps);
    return r;
}

/* ---- what it reads ---- */

size_t rk_rollout_step_count(const rk_rollout *r)
{
    return r->n;
}

const rk_topology *rk_rollout_step_topology(const rk_rollout *r, size_t i)
{
    return i < r->n ? r->topo[i] : NULL;
}

const rk_plan *rk_rollout_step_plan(const rk_rollout *r, size_t i)
{
    return i < r->n ? r->plan[i] : NULL;
}

double rk_rollout_total_moved(const rk_rollout *r)
{
    return r->total;
}

double rk_rollout_one_shot_moved(const rk_rollout *r)
{
    return r->one_shot;
}

const char *rk_rollout_digest(const rk_rollout *r)
{
    return r->digest;
}

/* The nodes whose weight the step changes: [{"id", "weight_before", "weight_after"}]. */
static json_t *changes_json(const rk_plan *p)
{
    size_t n;
    const rk_plan_node *x = rk_plan_nodes(p, &n);
    json_t *a = json_array();
    for (size_t k = 0; a && k < n; k++) {
        if (x[k].weight_before != x[k].weight_after &&
            json_array_append_new(a, json_pack("{s:s, s:o, s:o}", "id", x[k].id, "weight_before",
                                               rki_weight_json(x[k].weight_before), "weight_after",
                                               rki_weight_json(x[k].weight_after)))) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

static json_t *step_json(const rk_rollout *r, size_t i)
{
    double bmax, bmin, amax, amin;
    rk_plan_balance(r->plan[i], &bmax, &bmin, &amax, &amin);
    return json_pack("{s:I, s:o, s:f, s:f, s:n, s:s, s:o}", "n", (json_int_t)(i + 1), "topology",
                     rk_topology_to_json(r->topo[i]), "moved_fraction",
                     rk_plan_moved_fraction(r->plan[i]), "balance_after", amax, "version", "state",
                     "pending", "changes", changes_json(r->plan[i]));
}

json_t *rk_rollout_to_json(const rk_rollout *r)
{
    json_t *steps = json_array();
    for (size_t i = 0; steps && i < r->n; i++) {
        if (json_array_append_new(steps, step_json(r, i))) {
            json_decref(steps);
            steps = NULL;
        }
    }
    return steps ? json_pack("{s:s, s:s, s:o, s:f, s:f}", "state", "review", "digest", r->digest,
                             "steps", steps, "total_moved", r->total, "one_shot_moved", r->one_shot)
                 : NULL;
}
