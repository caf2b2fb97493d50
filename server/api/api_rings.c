/* api_rings.c — the built rings that plans, pictures and migration jobs share: the cache of
 * rings by version (built when missing, after rk_plan_check has refused what it surely would),
 * the plan between two versions over them, and the slots that bound how many are computed at once
 * (--plan-concurrency). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

#define PLAN_RETRY_AFTER_S                                                                         \
    2 /* a plan takes up to about a second at the caps: a retry then may pass */

/* Builds the ring of version v from its topology `t` and caches it. */
static rkd_entry *ring_put(rkd_call *c, int64_t v, rk_topology *t, int *rc, rk_error *err)
{
    rk_ring *ring = rk_ring_build(t, err);
    rkd_entry *e = ring ? rkd_cache_put(c->app->rings, c->cluster, v, 0, ring, rk_ring_memory(ring),
                                        rkd_cache_gen(c->app->rings))
                        : NULL;
    *rc = e ? RK_OK : ring ? RK_ENOMEM : err->code;
    return e;
}

rkd_entry *rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err)
{
    rkd_entry *e = rkd_cache_get(c->app->rings, c->cluster, v);
    rkd_store_version *rec = NULL;
    *rc = RK_OK;
    if (e)
        return e;
    *rc = rkd_store_get(c->app->store, c->cluster, v, &rec, err);
    e = *rc == RK_OK ? ring_put(c, v, rec->topology, rc, err) : NULL;
    rkd_store_version_free(rec);
    return e;
}

/* The rings of a plan between two versions, cached or built. When one is not cached yet,
 * rk_plan_check first refuses from the topologies what the plan would surely refuse, so such a
 * refusal builds no ring (two cold 4M-point rings cost 0.8 s to build besides the store reads). */
/* RK_ETOOBIG (field "nodes", saying how many) when a plan between `a` and `b` would list more
 * than `max` nodes (0: any): its node rows alone would pass --max-plan-rows. */
static int check_nodes(const rk_topology *a, const rk_topology *b, size_t max, rk_error *err)
{
    size_t n = max ? rk_plan_node_count(a, b) : 0;
    return n > max ? rk_error_set(err, RK_ETOOBIG, "nodes", "the plan has %zu rows to render", n)
                   : RK_OK;
}

int rkd_plan_rings(rkd_call *c, const int64_t v[2], const rk_plan_options *opt, size_t max_nodes,
                   rkd_entry *e[2], rk_error *err)
{
    rkd_store_version *rec[2] = {NULL, NULL};
    const rk_topology *t[2];
    int rc = RK_OK;
    if (v[0] == v[1]) { /* nothing moves: no arc to check, and one ring */
        e[0] = rkd_ring_entry(c, v[0], &rc, err);
        e[1] = e[0] ? rkd_ring_entry(c, v[1], &rc, err) : NULL;
        if (rc == RK_OK) {
            const rk_topology *one = rk_ring_topology(e[0]->value);
            rc = check_nodes(one, one, max_nodes, err);
        }
        return rc;
    }
    for (int k = 0; k < 2; k++) {
        e[k] = rkd_cache_get(c->app->rings, c->cluster, v[k]);
        if (!e[k] && rc == RK_OK)
            rc = rkd_store_get(c->app->store, c->cluster, v[k], &rec[k], err);
        t[k] = e[k] ? rk_ring_topology(e[k]->value) : rec[k] ? rec[k]->topology : NULL;
    }
    if (rc == RK_OK)
        rc = check_nodes(t[0], t[1], max_nodes, err);
    if (rc == RK_OK && (rec[0] || rec[1]))
        rc = rk_plan_check(t[0], t[1], opt, err);
    for (int k = 0; k < 2 && rc == RK_OK; k++)
        e[k] = e[k] ? e[k] : ring_put(c, v[k], rec[k]->topology, &rc, err);
    rkd_store_version_free(rec[0]), rkd_store_version_free(rec[1]);
    return rc;
}

int rkd_plan_between(rkd_call *c, int64_t from, int64_t to, const rk_plan_options *opt,
                     rk_plan **out, rk_error *err)
{
    rkd_entry *ring[2] = {NULL, NULL};
    int rc = rkd_plan_rings(c, (int64_t[2]){from, to}, opt, 0, ring, err);
    *out = rc == RK_OK ? rk_plan_new(ring[0]->value, ring[1]->value, opt, err) : NULL;
    rc = rc ? rc : *out ? RK_OK : err->code;
    rkd_cache_release(c->app->rings, ring[1]);
    rkd_cache_release(c->app->rings, ring[0]);
    return rc;
}

void rkd_fail_rows(rkd_call *c, const char *what, const char *fewer)
{
    rkd_response_error(c->resp, RKD_E_PLAN_TOO_LARGE, NULL,
                       "%s, over this server's limit of %zu (ringkeeperd --max-plan-rows); ask "
                       "for less (%s) or compute it offline: ringkeeper plan --from-file A.json "
                       "--to-file B.json",
                       what, c->app->plan.max_rows, fewer);
}

/* Answers a failed plan: over --max-plan-arcs or with more nodes than rows, each with the way
 * out, anything else as it is. */
void rkd_fail_plan(rkd_call *c, int rc, const rk_error *err)
{
    if (rc == RK_ETOOBIG && strcmp(err->field, "nodes") == 0) {
        rkd_fail_rows(c, err->message, "its nodes alone are as many: format=svg");
        return;
    }
    if (rc != RK_ETOOBIG || strcmp(err->field, "arcs") != 0) {
        rkd_fail(c, rc, err);
        return;
    }
    rkd_response_error(c->resp, RKD_E_PLAN_TOO_LARGE, NULL,
                       "%s of this server (ringkeeperd --max-plan-arcs); compute it offline: "
                       "ringkeeper plan --from-file A.json --to-file B.json",
                       err->message);
}

int rkd_plan_slot(rkd_call *c)
{
    unsigned running = atomic_fetch_add(&c->app->plans, 1);
    if (running < c->app->plan.concurrency)
        return 1;
    atomic_fetch_sub(&c->app->plans, 1);
    rkd_response_error(c->resp, RKD_E_UNAVAILABLE, NULL,
                       "%u plans or ring builds are being computed, this server's limit "
                       "(ringkeeperd --plan-concurrency); retry in a few seconds",
                       running);
    c->resp->retry_after = PLAN_RETRY_AFTER_S;
    return 0;
}

void rkd_plan_slot_release(rkd_call *c)
{
    atomic_fetch_sub(&c->app->plans, 1);
}
