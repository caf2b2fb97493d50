/* suggest.c — weights that balance a load (docs/LOAD.md, "Suggest"). From a ring and a load over
 * its hash space, in weight units (1/vnode_factor; a whole weight where the scheme has no
 * vnode_factor), the most loaded node gives units or the least loaded takes them (the fewest that
 * help, up to STRIDE_MAX: a point may cover an arc with little load, and the next one more),
 * whichever brings the most loaded node nearer its fair share, as long as what moves from the
 * start stays within the budget. A unit moves one point of the ring, so each step moves little
 * and only between that node and its neighbours. Each try builds a ring and plans it from the
 * start: the cost is the points built, which the options bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SAME       1e-12 /* two scores closer than this are equal: the sums differ by rounding alone */
#define STRIDE_MAX 16    /* units a node gives or takes in one step at most */

/* How far a set of weights is from balance: the most loaded node's load over its fair share,
 * then the sum of every node's squared distance from it (to tell apart two sets whose worst
 * node is the same), and what it moves from the start. */
typedef struct {
    double worst, spread, moved;
    size_t hot, cold; /* topology indexes of the most and the least loaded live nodes */
} score;

typedef struct {
    const rk_ring *start;
    const rk_load *load;
    const rk_suggest_options *opt;
    size_t n;
    rk_node *nodes;           /* the weights being tried, in the start topology's order */
    double *fair;             /* each node's fair share of the total; 0 at weight 0: left out */
    uint32_t *plan_at;        /* topology index -> index among rk_plan_nodes (sorted by id) */
    rk_plan_node_load *loads; /* rk_plan_load's figures per plan node */
    double total;             /* the load's total: bytes, or requests */
    uint64_t built;           /* points built so far */
} search;

static double amount(const search *s, rk_load_amount a)
{
    return s->opt->by_requests ? a.requests : a.bytes;
}

/* The score of s->nodes' weights, from the plan of the start to their ring. */
static int try_weights(search *s, score *out, rk_error *err)
{
    const rk_topology *t0 = rk_ring_topology(s->start);
    rk_topology *t = rki_topology_with_nodes(t0, s->nodes, s->n, err);
    rk_ring *r = t ? rk_ring_build(t, err) : NULL;
    rk_plan *p = r ? rk_plan_new(s->start, r, NULL, err) : NULL;
    rk_plan_load_figures f;
    int rc = p ? rk_plan_load(p, r, s->load, &f, s->loads, err) : err->code;
    s->built += t ? rk_topology_points(t) : 0;
    rk_plan_free(p);
    rk_ring_free(r);
    rk_topology_free(t);
    if (rc != RK_OK)
        return rc;
    *out = (score){.worst = 0, .spread = 0, .moved = amount(s, f.moving) / s->total};
    double least = INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        if (s->fair[i] == 0)
            continue;
        double ratio = amount(s, s->loads[s->plan_at[i]].after) / (s->total * s->fair[i]);
        out->spread += (ratio - 1) * (ratio - 1);
        if (ratio > out->worst)
            out->worst = ratio, out->hot = i;
        if (ratio < least)
            least = ratio, out->cold = i;
    }
    return RK_OK;
}

static int better(const score *a, const score *b)
{
    return a->worst < b->worst - SAME ||
           (a->worst <= b->worst + SAME && a->spread < b->spread - SAME);
}

/* Node i's weight moved by `units` and scored into *out; the weight is put back. 0 when the move
 * is not allowed (below one unit, over RK_MAX_WEIGHT or the scheme's own bound, or a ring over
 * RK_MAX_POINTS), 1 when scored, or -error. */
static int try_step(search *s, size_t i, int units, score *out, rk_error *err)
{
    double unit = rki_weight_unit(rk_ring_topology(s->start)), w = s->nodes[i].weight;
    double next = w + units * unit;
    if (next < unit - SAME || next > RK_MAX_WEIGHT + SAME)
        return 0;
    s->nodes[i].weight = next;
    int rc = try_weights(s, out, err);
    s->nodes[i].weight = w;
    if (rc == RK_ETOPOLOGY || rc == RK_ETOOBIG) /* a weight the scheme has not (HAProxy's 256) */
        return 0;
    return rc == RK_OK ? 1 : -rc;
}

/* The smallest move of node i by `sign` units times 1, 2, 4 .. STRIDE_MAX that scores better than
 * *cur within the budget, into *out: a point removed or added may cover an arc with little load,
 * and the next one more. 1 when found (*units set), 0 when none, or -error. `over` is set when a
 * better one passed the budget. */
static int smallest_better(search *s, size_t i, int sign, const score *cur, score *out, int *units,
                           int *over, rk_error *err)
{
    for (int k = 1; k <= STRIDE_MAX; k *= 2) {
        int got = try_step(s, i, sign * k, out, err);
        if (got < 0)
            return got;
        if (got == 0)
            return 0; /* past a weight's bounds: a longer stride is too */
        if (!better(out, cur))
            continue;
        if (out->moved > s->opt->max_moved) {
            *over = 1;
            return 0;
        }
        *units = sign * k;
        return 1;
    }
    return 0;
}

/* One step: the better of the hot node giving units and the cold one taking them, within the
 * budget; 1 when taken (into *cur and s->nodes), 0 when neither improves, or -error. */
static int one_step(search *s, score *cur, int *over_budget, rk_error *err)
{
    score give, take;
    int gu = 0, tu = 0;
    size_t hot = cur->hot, cold = cur->cold;
    int g = smallest_better(s, hot, -1, cur, &give, &gu, over_budget, err);
    int t = g < 0 ? 0 : smallest_better(s, cold, +1, cur, &take, &tu, over_budget, err);
    if (g < 0 || t < 0)
        return g < 0 ? g : t;
    if (!g && !t)
        return 0;
    int use_give = g && (!t || better(&give, &take));
    double unit = rki_weight_unit(rk_ring_topology(s->start));
    s->nodes[use_give ? hot : cold].weight += (use_give ? gu : tu) * unit;
    *cur = use_give ? give : take;
    return 1;
}

static int check_options(const rk_suggest_options *o, rk_error *err)
{
    if (!(o->max_moved > 0 && o->max_moved <= 1))
        return rk_error_set(err, RK_EINVAL, "max_moved", "max_moved must be > 0 and <= 1, not %g",
                            o->max_moved);
    if (!(o->target == 0 || (o->target >= 1 && isfinite(o->target))))
        return rk_error_set(err, RK_EINVAL, "target", "target must be 0 or >= 1, not %g",
                            o->target);
    return RK_OK;
}

/* The search's arrays, from the start topology: its nodes, their fair shares, the plan's order. */
static int search_init(search *s, rk_error *err)
{
    const rk_topology *t = rk_ring_topology(s->start);
    s->n = rk_topology_node_count(t);
    s->nodes = malloc(s->n * sizeof *s->nodes);
    s->fair = calloc(s->n, sizeof *s->fair);
    s->plan_at = malloc(s->n * sizeof *s->plan_at);
    s->loads = malloc(s->n * sizeof *s->loads);
    if (!s->nodes || !s->fair || !s->plan_at || !s->loads)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    const uint32_t *order = rki_topology_order(t);
    double sum = 0;
    for (size_t i = 0; i < s->n; i++) {
        s->nodes[i] = *rk_topology_node(t, i);
        s->plan_at[order[i]] = (uint32_t)i; /* the plan lists the same ids, sorted */
        sum += s->opt->equal_capacity ? s->nodes[i].weight > 0 : s->nodes[i].weight;
    }
    for (size_t i = 0; i < s->n; i++)
        s->fair[i] =
            s->nodes[i].weight > 0 ? (s->opt->equal_capacity ? 1 : s->nodes[i].weight) / sum : 0;
    rk_load_amount all = rk_load_total(s->load);
    s->total = amount(s, all);
    if (!(s->total > 0))
        return rk_error_set(err, RK_EINVAL, "load", "the load holds no %s to balance",
                            s->opt->by_requests ? "requests" : "bytes");
    return RK_OK;
}

static void search_free(search *s)
{
    free(s->nodes);
    free(s->fair);
    free(s->plan_at);
    free(s->loads);
}

int rk_suggest(const rk_ring *start, const rk_load *load, const rk_suggest_options *opt,
               rk_suggestion *out, rk_error *err)
{
    memset(out, 0, sizeof *out);
    search s = {.start = start, .load = load, .opt = opt};
    score cur;
    int rc = check_options(opt, err);
    rc = rc ? rc : search_init(&s, err);
    rc = rc ? rc : try_weights(&s, &cur, err);
    out->worst_before = rc == RK_OK ? cur.worst : 0;
    out->stopped = RK_SUGGEST_TARGET;
    while (rc == RK_OK && cur.worst > (opt->target ? opt->target : 1) + SAME) {
        if (opt->max_points_built && s.built >= opt->max_points_built) {
            out->stopped = RK_SUGGEST_LIMIT;
            break;
        }
        int over = 0, took = one_step(&s, &cur, &over, err);
        if (took < 0)
            rc = -took;
        else if (took == 0) {
            out->stopped = over ? RK_SUGGEST_BUDGET : RK_SUGGEST_STUCK;
            break;
        }
        out->rounds++;
    }
    if (rc == RK_OK)
        out->topology = rki_topology_with_nodes(rk_ring_topology(start), s.nodes, s.n, err);
    rc = rc ? rc : out->topology ? RK_OK : err->code;
    out->worst_after = cur.worst;
    out->moved = rc == RK_OK ? cur.moved : 0;
    out->points_built = s.built;
    search_free(&s);
    return rc;
}
