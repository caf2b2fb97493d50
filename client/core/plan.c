/* plan.c — the migration plan of docs/RING.md between two rings: arcs, figures, balance, steps;
 * its warnings are plan_warnings.c's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_int.h"

static double space_of(unsigned bits)
{
    return ldexp(1.0, (int)bits);
}

static double arc_fraction(const rk_arc *a, unsigned bits)
{
    return ((double)(a->last - a->first) + 1.0) / space_of(bits);
}

/* Walks the two id orders together: plan node k is the k-th id of their union, which map_a and
 * map_b give each topology's node index; `nodes` (NULL when not wanted, and the maps with it) gets
 * the plan nodes. Returns the number of plan nodes. */
static size_t join_ids(const rk_topology *before, const rk_topology *after, uint32_t *map_a,
                       uint32_t *map_b, rk_plan_node *nodes)
{
    size_t na = rk_topology_node_count(before), nb = rk_topology_node_count(after);
    const uint32_t *oa = rki_topology_order(before), *ob = rki_topology_order(after);
    size_t i = 0, j = 0, n = 0;
    for (; i < na || j < nb; n++) {
        const rk_node *a = i < na ? rk_topology_node(before, oa[i]) : NULL;
        const rk_node *b = j < nb ? rk_topology_node(after, ob[j]) : NULL;
        int c = !a ? 1 : !b ? -1 : strcmp(a->id, b->id);
        if (nodes) {
            nodes[n].id = c <= 0 ? a->id : b->id;
            nodes[n].weight_before = c <= 0 ? a->weight : 0;
            nodes[n].weight_after = c >= 0 ? b->weight : 0;
        }
        if (c <= 0 && map_a)
            map_a[oa[i]] = (uint32_t)n;
        if (c >= 0 && map_b)
            map_b[ob[j]] = (uint32_t)n;
        i += c <= 0, j += c >= 0;
    }
    return n;
}

/* The plan's node list and the two index maps. */
static int join_nodes(rk_plan *p)
{
    size_t na = rk_topology_node_count(p->before.topo), nb = rk_topology_node_count(p->after.topo);
    p->nodes = calloc(na + nb, sizeof *p->nodes);
    p->before.map = malloc(na * sizeof *p->before.map);
    p->after.map = malloc(nb * sizeof *p->after.map);
    if (!p->nodes || !p->before.map || !p->after.map)
        return RK_ENOMEM;
    p->n_nodes = join_ids(p->before.topo, p->after.topo, p->before.map, p->after.map, p->nodes);
    return RK_OK;
}

/* Records hash values first..last moving from -> to, merged with the previous arc when adjacent;
 * only counted while p->arcs is NULL. */
static void add_arc(rk_plan *p, uint64_t first, uint64_t last, uint32_t from, uint32_t to)
{
    rk_arc *prev = &p->tail;
    if (p->n_arcs && prev->last + 1 == first && prev->from == from && prev->to == to) {
        prev->last = last;
    } else {
        *prev = (rk_arc){first, last, from, to, 0};
        p->n_arcs++;
    }
    if (p->arcs)
        p->arcs[p->n_arcs - 1] = *prev;
}

/* Overlays the rings: every position of either is a cut; between cuts both owners are constant. */
static void overlay(rk_plan *p, const rk_ring *a, const rk_ring *b)
{
    size_t ia = 0, ib = 0;
    uint64_t start = 0, cut = 0;
    p->n_arcs = 0;
    while (ia < a->n || ib < b->n) {
        cut = ib == b->n || (ia < a->n && a->pos[ia] < b->pos[ib]) ? a->pos[ia] : b->pos[ib];
        uint32_t from = p->before.map[rki_node_at(a, ia < a->n ? ia : 0)];
        uint32_t to = p->after.map[rki_node_at(b, ib < b->n ? ib : 0)];
        if (from != to)
            add_arc(p, start, cut, from, to);
        while (ia < a->n && a->pos[ia] == cut)
            ia++;
        while (ib < b->n && b->pos[ib] == cut)
            ib++;
        start = cut + 1;
    }
    uint64_t max = p->bits == 64 ? UINT64_MAX : 0xFFFFFFFFu;
    uint32_t from = p->before.map[rki_node_at(a, 0)], to = p->after.map[rki_node_at(b, 0)];
    if (cut < max && from != to) /* the stretch past the last cut, up to the top */
        add_arc(p, start, max, from, to);
}

/* The arcs: counted in a first overlay (so a plan over opt.max_arcs allocates nothing), stored in
 * a second, then summed per node. */
static int find_arcs(rk_plan *p, const rk_ring *a, const rk_ring *b)
{
    overlay(p, a, b);
    if (p->opt.max_arcs && p->n_arcs > p->opt.max_arcs)
        return RK_ETOOBIG;
    p->arcs = malloc((p->n_arcs ? p->n_arcs : 1) * sizeof *p->arcs);
    if (!p->arcs)
        return RK_ENOMEM;
    overlay(p, a, b);
    for (size_t k = 0; k < p->n_arcs; k++) {
        p->arcs[k].fraction = arc_fraction(&p->arcs[k], p->bits);
        p->moved += p->arcs[k].fraction;
        p->nodes[p->arcs[k].from].lost += p->arcs[k].fraction;
        p->nodes[p->arcs[k].to].gained += p->arcs[k].fraction;
    }
    return RK_OK;
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
    for (size_t k = 0; k < rk_topology_node_count(a->topo); k++) {
        rk_plan_node *pn = &p->nodes[p->before.map[k]];
        pn->share_before = a->share[k];
        pn->ideal_before = a->ideal[k];
    }
    for (size_t k = 0; k < rk_topology_node_count(b->topo); k++) {
        rk_plan_node *pn = &p->nodes[p->after.map[k]];
        pn->share_after = b->share[k];
        pn->ideal_after = b->ideal[k];
    }
    for (size_t k = 0; k < p->n_nodes; k++)
        p->minimal += fmax(0.0, p->nodes[k].ideal_after - p->nodes[k].ideal_before);
}

/* A plan compares positions, so both rings must put a key at the same position (docs/RING.md,
 * KETAMA.md). */
static int check_comparable(const rk_topology *a, const rk_topology *b, rk_error *err)
{
    if (rk_topology_comparable(a, b, err) == RK_OK)
        return RK_OK;
    char why[RK_ERROR_MESSAGE_MAX], field[RK_ERROR_FIELD_MAX];
    size_t prefix = strlen(err->field) + 2; /* the message begins "<field>: " */
    snprintf(why, sizeof why, "%s", err->message + (strlen(err->message) >= prefix ? prefix : 0));
    char what[RK_ERROR_FIELD_MAX]; /* the field in words: "hash tag" */
    snprintf(field, sizeof field, "%s", err->field);
    for (size_t i = 0; (what[i] = field[i] == '_' ? ' ' : field[i]) != '\0'; i++)
        ;
    return rk_error_set(err, RK_EHASHMISMATCH, field,
                        "%s, so there is no plan; publish the new topology with the same %s", why,
                        what);
}

/* The points of one ring below a position, sorted as in the ring, each with its plan node. */
typedef struct slice {
    uint64_t *pos;  /* n positions ascending */
    uint32_t *node; /* plan node of each */
    size_t n;
    size_t cap; /* entries allocated */
} slice;

static int slice_push(slice *s, uint64_t pos, uint32_t node)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        uint64_t *p = realloc(s->pos, cap * sizeof *p);
        s->pos = p ? p : s->pos;
        uint32_t *n = p ? realloc(s->node, cap * sizeof *n) : NULL;
        s->node = n ? n : s->node;
        if (!n)
            return RK_ENOMEM;
        s->cap = cap;
    }
    s->pos[s->n] = pos, s->node[s->n++] = node;
    return RK_OK;
}

/* slice_below for a table scheme: its slots' points, already in ring order. */
static int table_slice_below(const rk_topology *t, const uint32_t *map, uint64_t limit, slice *s)
{
    size_t n = rk_topology_points(t);
    uint64_t *pos = malloc((n ? n : 1) * sizeof *pos);
    uint32_t *node = malloc((n ? n : 1) * sizeof *node);
    int rc = pos && node ? rki_table_points(t, pos, node) : RK_ENOMEM;
    for (size_t k = 0; rc == RK_OK && k < n && pos[k] < limit; k++)
        rc = slice_push(s, pos[k], map[node[k]]);
    free(pos), free(node);
    return rc;
}

/* The points of the ring of `t` below `limit` into s, nodes through `map`: placed node by node in
 * the scheme's tie order, so that the stable sort breaks ties as the ring does. */
static int slice_below(const rk_topology *t, const uint32_t *map, uint64_t limit, slice *s)
{
    const rki_scheme *scheme = rki_topology_scheme(t);
    if (scheme->fill)
        return table_slice_below(t, map, limit, s);
    size_t nn = rk_topology_node_count(t);
    uint32_t *count = malloc(nn * sizeof *count), *order = malloc(nn * sizeof *order), most = 0;
    uint64_t *buf = NULL;
    int rc = count && order ? RK_OK : RK_ENOMEM;
    if (rc == RK_OK) {
        scheme->point_counts(t, count);
        scheme->tie_order(t, order);
        for (size_t k = 0; k < nn; k++)
            most = count[k] > most ? count[k] : most;
        buf = malloc((most ? most : 1) * sizeof *buf);
        rc = buf ? RK_OK : RK_ENOMEM;
    }
    for (size_t k = 0; rc == RK_OK && k < nn; k++) {
        scheme->positions(t, order[k], count[order[k]], buf);
        for (uint32_t i = 0; rc == RK_OK && i < count[order[k]]; i++)
            rc = buf[i] < limit ? slice_push(s, buf[i], map[order[k]]) : RK_OK;
    }
    rc = rc ? rc : rki_radix_sort(&s->pos, &s->node, s->n);
    free(count), free(order), free(buf);
    return rc;
}

/* The arcs the overlay (as overlay() cuts and merges them) has up to the last cut below which both
 * slices' owners are known, at most max + 1: past a slice's last point its owner is not. Every arc
 * counted is, or starts, an arc of its own in the whole plan, so this is never above the plan's. */
static size_t count_slice_arcs(rk_plan *p, const slice *a, const slice *b, size_t max)
{
    size_t ia = 0, ib = 0;
    uint64_t start = 0;
    p->n_arcs = 0;
    while (ia < a->n && ib < b->n && p->n_arcs <= max) {
        uint64_t cut = a->pos[ia] < b->pos[ib] ? a->pos[ia] : b->pos[ib];
        if (a->node[ia] != b->node[ib])
            add_arc(p, start, cut, a->node[ia], b->node[ib]);
        while (ia < a->n && a->pos[ia] == cut)
            ia++;
        while (ib < b->n && b->pos[ib] == cut)
            ib++;
        start = cut + 1;
    }
    return p->n_arcs;
}

/* Whether the arcs below `limit` alone pass `max`; the plan's node maps are made for it. */
static int arcs_below(const rk_topology *a, const rk_topology *b, uint64_t limit, size_t max,
                      int *over)
{
    size_t na = rk_topology_node_count(a), nb = rk_topology_node_count(b);
    uint32_t *map_a = malloc(na * sizeof *map_a), *map_b = malloc(nb * sizeof *map_b);
    slice sa = {0}, sb = {0};
    rk_plan counter = {0}; /* only add_arc's count of merged arcs */
    int rc = map_a && map_b ? RK_OK : RK_ENOMEM;
    if (rc == RK_OK)
        join_ids(a, b, map_a, map_b, NULL);
    rc = rc ? rc : slice_below(a, map_a, limit, &sa);
    rc = rc ? rc : slice_below(b, map_b, limit, &sb);
    *over = rc == RK_OK && count_slice_arcs(&counter, &sa, &sb, max) > max;
    free(map_a), free(map_b), free(sa.pos), free(sa.node), free(sb.pos), free(sb.node);
    return rc;
}

size_t rk_plan_node_count(const rk_topology *a, const rk_topology *b)
{
    return join_ids(a, b, NULL, NULL, NULL);
}

/* Arcs are at most the cuts, points(a) + points(b), plus one: unrelated rings come near that, as
 * nearly every cut changes an owner. A prefix of the hash space holding twice max_arcs of the
 * points so holds about twice max_arcs arcs on such rings, and counting it hashes every point but
 * sorts only that share. Below 2 * max_arcs points, the prefix would be the whole space. */
int rk_plan_check(const rk_topology *a, const rk_topology *b, const rk_plan_options *opt,
                  rk_error *err)
{
    size_t max = opt ? opt->max_arcs : 0;
    double points = (double)rk_topology_points(a) + (double)rk_topology_points(b);
    int rc = check_comparable(a, b, err), over = 0;
    if (rc || !max || points <= 2.0 * (double)max)
        return rc;
    double share = 2.0 * (double)max / points;
    rc = arcs_below(a, b, (uint64_t)ldexp(share, (int)rki_topology_scheme(a)->bits(a)), max, &over);
    if (rc)
        return rk_error_set(err, rc, NULL, "out of memory checking a plan");
    if (over)
        return rk_error_set(err, RK_ETOOBIG, "arcs",
                            "the plan has more than %zu arcs in the first %.1f%% of the hash "
                            "space alone, over the limit of %zu",
                            max, 100 * share, max);
    return RK_OK;
}

rk_plan *rk_plan_new(const rk_ring *a, const rk_ring *b, const rk_plan_options *opt, rk_error *err)
{
    if (check_comparable(a->topo, b->topo, err))
        return NULL;
    /* max_step: a step limit in (0, 1], or 0 for no steps (rk_plan_options zeroed: the server and
     * the CLI pass 0 when their user gave no limit, and refuse a 0 that the user gave,
     * docs/API.md). NaN is refused too. */
    if (opt && !(opt->max_step == 0 || (opt->max_step > 0 && opt->max_step <= 1))) {
        rk_error_set(err, RK_EINVAL, "max_step", "must be a fraction in (0, 1], got %g",
                     opt->max_step);
        return NULL;
    }
    rk_plan *p = calloc(1, sizeof *p);
    if (!p) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory planning");
        return NULL;
    }
    p->before.topo = rk_topology_ref(a->topo);
    p->after.topo = rk_topology_ref(b->topo);
    p->bits = a->bits;
    memcpy(p->before.fingerprint, a->fp_hex, sizeof p->before.fingerprint);
    memcpy(p->after.fingerprint, b->fp_hex, sizeof p->after.fingerprint);
    if (opt)
        p->opt = *opt;
    int rc = join_nodes(p);
    rc = rc ? rc : find_arcs(p, a, b);
    rc = rc ? rc : group_transfers(p);
    if (rc == RK_OK) {
        node_figures(p, a, b);
        rc = rki_plan_warn(p, a, b);
    }
    if (rc == RK_OK && p->opt.max_step > 0)
        rc = rki_plan_steps(p->arcs, p->n_arcs, p->bits, p->opt.max_step, &p->steps, &p->n_steps,
                            &p->step_arcs, &p->n_step_arcs, NULL);
    free(p->before.map), free(p->after.map);
    p->before.map = p->after.map = NULL;
    if (rc == RK_ETOOBIG)
        rk_error_set(err, rc, "arcs", "the plan has %zu arcs, over the limit of %zu", p->n_arcs,
                     p->opt.max_arcs);
    else if (rc == RK_EINVAL)
        rk_error_set(err, rc, "max_step",
                     "%g would split the plan into too many steps to review; use a larger max_step",
                     p->opt.max_step);
    else if (rc)
        rk_error_set(err, rc, NULL, "out of memory planning");
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
    rk_topology_free(p->before.topo), rk_topology_free(p->after.topo);
    free(p->nodes), free(p->before.map), free(p->after.map), free(p->arcs), free(p->transfers);
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
    *before_max = p->before.balance_max, *before_min = p->before.balance_min;
    *after_max = p->after.balance_max, *after_min = p->after.balance_min;
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

const rk_topology *rki_plan_topology(const rk_plan *p, int after)
{
    return after ? p->after.topo : p->before.topo;
}

const char *rki_plan_fingerprint(const rk_plan *p, int after)
{
    return after ? p->after.fingerprint : p->before.fingerprint;
}
