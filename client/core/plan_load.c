/* plan_load.c — a plan weighed by a load (docs/RING.md, "Load over the ring"): the load its moving
 * arcs carry and every node's load before and after, from the plan's arcs and the ring after. The
 * plan is only read, so a plan without a load is what it always was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* into += times * a */
static void add(rk_load_amount *into, rk_load_amount a, double times)
{
    into->keys += times * a.keys, into->bytes += times * a.bytes;
    into->requests += times * a.requests;
}

/* A walk over the ring after, for credit_after. */
typedef struct after_walk {
    const rk_load *load;
    rk_plan_node_load *nodes; /* by plan node index */
} after_walk;

/* The ring after, stretch by stretch: each node's load after. */
static void credit_after(void *walk, uint64_t first, uint64_t last, uint32_t node)
{
    after_walk *w = walk;
    rki_load_spread(w->load, first, last, &w->nodes[node].after);
}

/* The moving arcs: what moves, and what each node gives and takes; before = after - in + out,
 * floored at 0 against rounding. */
static void credit_moves(const rk_plan *p, const rk_load *l, rk_plan_load_figures *out,
                         rk_plan_node_load *nodes, size_t n_nodes)
{
    size_t n;
    const rk_arc *arcs = rk_plan_arcs(p, &n);
    for (size_t k = 0; k < n; k++) {
        rk_load_amount a = {0, 0, 0};
        rki_load_spread(l, arcs[k].first, arcs[k].last, &a);
        add(&out->moving, a, 1), add(&nodes[arcs[k].from].lost, a, 1);
        add(&nodes[arcs[k].to].gained, a, 1);
    }
    for (size_t k = 0; k < n_nodes; k++) {
        rk_load_amount *b = &nodes[k].before;
        *b = nodes[k].after;
        add(b, nodes[k].gained, -1), add(b, nodes[k].lost, 1);
        b->keys = fmax(0, b->keys), b->bytes = fmax(0, b->bytes);
        b->requests = fmax(0, b->requests);
    }
}

/* The largest share of `total` a node holds (its bytes or requests: `requests`) over its ideal
 * share, over nodes of weight > 0 on that side (`after`); 0 when there is no such load. */
static double balance(const rk_plan_node *pn, const rk_plan_node_load *nodes, size_t n,
                      double total, int requests, int after)
{
    double most = 0;
    for (size_t k = 0; total > 0 && k < n; k++) {
        const rk_load_amount *a = after ? &nodes[k].after : &nodes[k].before;
        double ideal = after ? pn[k].ideal_after : pn[k].ideal_before;
        double held = requests ? a->requests : a->bytes;
        if ((after ? pn[k].weight_after : pn[k].weight_before) > 0)
            most = fmax(most, held / total / ideal);
    }
    return most;
}

/* The most a node holds (bytes, or requests) over the mean of the nodes of weight > 0 on that side
 * (`after`): the imbalance whatever the weights; 0 when there is no such load. */
static double over_mean(const rk_plan_node *pn, const rk_plan_node_load *nodes, size_t n,
                        double total, int requests, int after)
{
    double most = 0, live = 0;
    for (size_t k = 0; total > 0 && k < n; k++) {
        const rk_load_amount *a = after ? &nodes[k].after : &nodes[k].before;
        if ((after ? pn[k].weight_after : pn[k].weight_before) > 0)
            live++, most = fmax(most, requests ? a->requests : a->bytes);
    }
    return live > 0 ? most / (total / live) : 0;
}

/* The estimates (the sample over the sample rate) and the balances. */
static void finish(const rk_plan *p, const rk_load *l, rk_plan_load_figures *out,
                   rk_plan_node_load *nodes)
{
    size_t n;
    const rk_plan_node *pn = rk_plan_nodes(p, &n);
    double by = 1 / rk_load_sample_rate(l);
    rki_load_scale(&out->moving, by);
    for (size_t k = 0; k < n; k++) {
        rki_load_scale(&nodes[k].before, by), rki_load_scale(&nodes[k].after, by);
        rki_load_scale(&nodes[k].gained, by), rki_load_scale(&nodes[k].lost, by);
    }
    out->total = rk_load_total(l);
    out->bytes_balance_before = balance(pn, nodes, n, out->total.bytes, 0, 0);
    out->bytes_balance_after = balance(pn, nodes, n, out->total.bytes, 0, 1);
    out->requests_balance_before = balance(pn, nodes, n, out->total.requests, 1, 0);
    out->requests_balance_after = balance(pn, nodes, n, out->total.requests, 1, 1);
    out->bytes_over_mean_before = over_mean(pn, nodes, n, out->total.bytes, 0, 0);
    out->bytes_over_mean_after = over_mean(pn, nodes, n, out->total.bytes, 0, 1);
    out->requests_over_mean_before = over_mean(pn, nodes, n, out->total.requests, 1, 0);
    out->requests_over_mean_after = over_mean(pn, nodes, n, out->total.requests, 1, 1);
}

/* RK_OK when l and `after` (may be NULL) fit plan p. */
static int check_fits(const rk_plan *p, const rk_ring *after, const rk_load *l, rk_error *err)
{
    const rk_topology *t = rki_plan_topology(p, 1);
    unsigned bits = rki_topology_scheme(t)->bits(t);
    if (rk_load_bits(l) != bits)
        return rk_error_set(err, RK_EINVAL, "bits",
                            "the load is over a hash space of 2^%u, the plan's rings over 2^%u",
                            rk_load_bits(l), bits);
    if (after && strcmp(rk_ring_fingerprint_hex(after), rki_plan_fingerprint(p, 1)) != 0)
        return rk_error_set(err, RK_EINVAL, "ring", "ring %s is not the one the plan moves to (%s)",
                            rk_ring_fingerprint_hex(after), rki_plan_fingerprint(p, 1));
    return RK_OK;
}

int rk_plan_load(const rk_plan *p, const rk_ring *after, const rk_load *l,
                 rk_plan_load_figures *out, rk_plan_node_load *nodes, rk_error *err)
{
    size_t n;
    rk_plan_nodes(p, &n);
    int rc = check_fits(p, after, l, err);
    if (rc)
        return rc;
    rk_plan_node_load *own = nodes ? NULL : malloc((n ? n : 1) * sizeof *own);
    rk_plan_node_load *use = nodes ? nodes : own;
    rki_plan_ring side = {0};
    rc = use ? rki_plan_ring_open(&side, p, after, 1, err)
             : rk_error_set(err, RK_ENOMEM, NULL, "out of memory weighing a plan");
    if (rc == RK_OK) {
        memset(out, 0, sizeof *out);
        memset(use, 0, n * sizeof *use);
        after_walk walk = {l, use};
        rki_ring_walk(side.ring, side.map, credit_after, &walk);
        credit_moves(p, l, out, use, n);
        finish(p, l, out, use);
        rki_plan_ring_close(&side);
    }
    free(own);
    return rc;
}

/* One node's figures: keys and bytes before and after, bytes gained and lost; requests too when
 * the load has them. */
static json_t *node_doc(const rk_plan_node *pn, const rk_plan_node_load *nl, int requests)
{
    json_t *d = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "id", pn->id, "keys_before",
                          nl->before.keys, "keys_after", nl->after.keys, "bytes_before",
                          nl->before.bytes, "bytes_after", nl->after.bytes, "bytes_gained",
                          nl->gained.bytes, "bytes_lost", nl->lost.bytes);
    if (d && requests &&
        (json_object_set_new(d, "requests_before", json_real(nl->before.requests)) ||
         json_object_set_new(d, "requests_after", json_real(nl->after.requests)))) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* The requests' figures into d, when the load has requests. 0, or -1 when out of memory. */
static int requests_doc(json_t *d, const rk_plan_load_figures *f)
{
    if (f->total.requests <= 0)
        return 0;
    return json_object_set_new(d, "requests", json_real(f->total.requests)) ||
                   json_object_set_new(d, "moving_requests", json_real(f->moving.requests)) ||
                   json_object_set_new(d, "requests_balance_before",
                                       json_real(f->requests_balance_before)) ||
                   json_object_set_new(d, "requests_balance_after",
                                       json_real(f->requests_balance_after)) ||
                   json_object_set_new(d, "requests_over_mean_before",
                                       json_real(f->requests_over_mean_before)) ||
                   json_object_set_new(d, "requests_over_mean_after",
                                       json_real(f->requests_over_mean_after))
               ? -1
               : 0;
}

json_t *rk_plan_load_to_json(const rk_plan *p, const rk_plan_load_figures *f,
                             const rk_plan_node_load *nodes)
{
    json_t *d =
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "keys", f->total.keys, "bytes",
                  f->total.bytes, "moving_keys", f->moving.keys, "moving_bytes", f->moving.bytes,
                  "bytes_balance_before", f->bytes_balance_before, "bytes_balance_after",
                  f->bytes_balance_after, "bytes_over_mean_before", f->bytes_over_mean_before,
                  "bytes_over_mean_after", f->bytes_over_mean_after);
    int bad = !d || requests_doc(d, f);
    size_t n;
    const rk_plan_node *pn = rk_plan_nodes(p, &n);
    json_t *list = !bad && nodes ? json_array() : NULL;
    bad = bad || (nodes && json_object_set_new(d, "nodes", list));
    for (size_t k = 0; !bad && list && k < n; k++)
        bad = json_array_append_new(list, node_doc(&pn[k], &nodes[k], f->total.requests > 0));
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

json_t *rki_profile_about(const json_t *profile, int64_t now)
{
    static const char *const kept[] = {"cluster",     "version",          "fingerprint", "hash",
                                       "measured_at", "measured_epoch_s", "sample_rate", NULL};
    json_t *d = json_object();
    int bad = !d;
    for (size_t i = 0; !bad && kept[i]; i++) {
        json_t *v = json_object_get(profile, kept[i]);
        bad = v && json_object_set(d, kept[i], v);
    }
    json_t *at = json_object_get(profile, "measured_epoch_s");
    if (!bad && json_is_integer(at))
        bad = json_object_set_new(d, "age_s", json_integer(now - json_integer_value(at)));
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

rk_load *rk_load_from_profile(const json_t *profile, const rk_ring *ring, rk_error *err)
{
    const char *hash = json_string_value(json_object_get(profile, "hash"));
    const char *want = rk_hash_name(rk_topology_hash(rk_ring_topology(ring)));
    if (hash && strcmp(hash, want) != 0) {
        rk_error_set(err, RK_EHASHMISMATCH, "hash",
                     "the profile placed keys with hash %s, the ring uses %s: measure the "
                     "cluster again",
                     hash, want);
        return NULL;
    }
    const json_t *doc = json_object_get(profile, "load");
    return rk_load_from_json(doc ? doc : profile, err); /* a profile, or a bare load */
}

int rk_plan_profile_json(const rk_plan *p, const rk_ring *after, const json_t *profile, int64_t now,
                         json_t **out, rk_error *err)
{
    *out = NULL;
    rk_load *l = rk_load_from_profile(profile, after, err);
    size_t n;
    rk_plan_nodes(p, &n);
    rk_plan_node_load *nodes = l ? calloc(n ? n : 1, sizeof *nodes) : NULL;
    rk_plan_load_figures f;
    int rc = !l ? err->code : !nodes ? rk_error_set(err, RK_ENOMEM, NULL, "out of memory") : RK_OK;
    rc = rc ? rc : rk_plan_load(p, after, l, &f, nodes, err);
    *out = rc ? NULL : rk_plan_load_to_json(p, &f, nodes);
    if (*out && json_object_set_new(*out, "profile", rki_profile_about(profile, now)))
        json_decref(*out), *out = NULL;
    if (rc == RK_OK && !*out)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    free(nodes);
    rk_load_free(l);
    return rc;
}
