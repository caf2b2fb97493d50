/* gate.c — the gate of an activation (gate.h): the rollout that may hold the cluster, the rings
 * of the plan from the active version, and the policy's budget, checked inside the store's
 * transaction over what it read (the approvals are the store's own). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "docs.h"
#include "gate.h"
#include "load_profile.h"
#include "migration_job.h"
#include "rings.h"
#include "rollout.h"

/* RK_OK when plan `p` moves at most the policy's max_moved_bytes by the cluster's load profile
 * (`v` names the version activated, `how` what to do instead). A byte budget with no profile, or
 * with one that cannot weigh the plan, refuses: it cannot be kept blind. */
static int within_bytes(const rkd_gate *g, const rk_plan *p, const rk_ring *to,
                        const rkd_store_policy *pol, const char *v, int64_t active, const char *how,
                        rk_error *err)
{
    json_t *load = NULL;
    rk_error why = {0};
    const char *cluster = g->c->cluster;
    if (pol->max_moved_bytes <= 0)
        return RK_OK;
    if (!g->profile)
        return rk_error_set(err, RKD_STORE_EBUDGET, "max_moved_bytes",
                            "the policy budgets the bytes an activation moves (max_moved_bytes) "
                            "and cluster %s has no load profile to count them by: measure it "
                            "(ringkeeper measure -c %s --store); %s",
                            cluster, cluster, how);
    int rc = rk_plan_profile_json(p, to, g->profile, (int64_t)time(NULL), &load, &why);
    if (rc != RK_OK)
        return rk_error_set(err, rc == RK_ENOMEM ? RK_ENOMEM : RKD_STORE_EBUDGET, "max_moved_bytes",
                            "the policy budgets the bytes an activation moves (max_moved_bytes) "
                            "and the load profile of cluster %s cannot weigh this plan (%s): "
                            "measure it again; %s",
                            cluster, why.message, how);
    double moving = json_number_value(json_object_get(load, "moving_bytes"));
    double age =
        (double)json_integer_value(json_object_get(json_object_get(load, "profile"), "age_s"));
    json_decref(load);
    if (moving <= (double)pol->max_moved_bytes)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_EBUDGET, "max_moved_bytes",
                        "activating %s over version %lld moves %.0f bytes by the load profile "
                        "(measured %.1f h ago), over the policy's max_moved_bytes of %lld; %s",
                        v, (long long)active, moving, age / 3600, (long long)pol->max_moved_bytes,
                        how);
}

/* RK_OK when plan `p` (of activating `to` over `active`) is within policy `pol`, else
 * RKD_STORE_EBUDGET with the figures. */
static int within_budget(const rkd_gate *g, const rk_plan *p, const rk_ring *to,
                         const rkd_store_policy *pol, int64_t active, rk_error *err)
{
    double bmax, bmin, amax, amin, moved = rk_plan_moved_fraction(p);
    rk_plan_balance(p, &bmax, &bmin, &amax, &amin);
    const char *how = g->step ? "the rollout pauses: loosen the policy (admin) and resume, or "
                                "abort and review smaller steps"
                              : "review a smaller change, or activate with {\"force\": true, "
                                "\"reason\": \"...\"}";
    char v[32];
    snprintf(v, sizeof v, g->to_version ? "version %lld" : "the new version",
             (long long)g->to_version);
    if (moved > pol->max_moved_fraction)
        return rk_error_set(err, RKD_STORE_EBUDGET, NULL,
                            "activating %s over version %lld moves %.4f%% of the hash space, over "
                            "the policy's max_moved_fraction of %.4f%%; %s",
                            v, (long long)active, 100 * moved, 100 * pol->max_moved_fraction, how);
    if (pol->max_balance_after > 0 && amax > pol->max_balance_after)
        return rk_error_set(err, RKD_STORE_EBUDGET, NULL,
                            "after activating %s the most loaded node holds %.3fx its ideal share, "
                            "over the policy's max_balance_after of %.3fx; %s",
                            v, amax, pol->max_balance_after, how);
    return within_bytes(g, p, to, pol, v, active, how, err);
}

/* Rings that put keys elsewhere (another scheme, hash or hash tag) move every key: that takes a
 * forced activation, whatever the budget (following the docs, an operator had switched a cluster
 * from nginx to haproxy without a word, while its plan was refused). Else, with a budget, the
 * plan from the active version's ring to `to`: its verdict, and *moved. */
static int check_plan(const rkd_gate *g, const rk_ring *to, const rkd_store_policy *pol,
                      int64_t active, double *moved, rk_error *err)
{
    if (rk_topology_comparable(rk_ring_topology(g->from->value), rk_ring_topology(to), err)) {
        *moved = 1;
        if (g->reason)
            return RK_OK;
        char why[RK_ERROR_MESSAGE_MAX], field[RK_ERROR_FIELD_MAX], v[32];
        snprintf(why, sizeof why, "%s", err->message);
        snprintf(field, sizeof field, "%s", err->field);
        snprintf(v, sizeof v, g->to_version ? "version %lld" : "the new version",
                 (long long)g->to_version);
        return rk_error_set(err, RKD_STORE_EBUDGET, field,
                            "activating %s over version %lld: %s; %sactivate it with {\"force\": "
                            "true, \"reason\": \"...\"} if that is meant",
                            v, (long long)active, why,
                            g->publish ? "publish it without activate=true, then " : "");
    }
    if (!g->budget)
        return RK_OK;
    rk_plan_options opt = {.max_arcs = g->c->app->plan.max_arcs};
    rk_plan *plan = rk_plan_new(g->from->value, to, &opt, err);
    if (!plan)
        return err->code;
    *moved = rk_plan_moved_fraction(plan);
    int rc = g->reason ? RK_OK : within_budget(g, plan, to, pol, active, err);
    rk_plan_free(plan);
    return rc;
}

/* Under a policy with prewarm (a cluster served by proxies, which read one ring): a version whose
 * topology names its data is activated over `active` only once a before_cutover job from
 * `active` to it is verified, since a proxy cannot read the keys still on their old owners. */
static int check_prewarm(const rkd_gate *g, const rk_ring *to, int64_t active, rk_error *err)
{
    if (g->reason || !rk_topology_data(rk_ring_topology(to)))
        return RK_OK;
    if (g->publish)
        return rk_error_set(err, RKD_STORE_ENOTVERIFIED, NULL,
                            "cluster %s is pre-warmed before each activation (the policy's "
                            "prewarm): publish the version without activate=true, pre-warm it "
                            "(ringkeeper migrate run --before-cutover --to V), then activate it",
                            g->c->cluster);
    if (g->warm_from == active && g->warm_to == g->to_version)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ENOTVERIFIED, NULL,
                        "cluster %s is pre-warmed before each activation (the policy's prewarm), "
                        "and no verified pre-warm of version %lld from version %lld is there: run "
                        "ringkeeper migrate run -c %s --before-cutover --to %lld, then activate; "
                        "or activate with {\"force\": true, \"reason\": \"...\"} to go "
                        "cold",
                        g->c->cluster, (long long)g->to_version, (long long)active, g->c->cluster,
                        (long long)g->to_version);
}

/* A hand's activation while a rollout holds the cluster is refused; a rollout step's answers to
 * the approvals the policy asks for now (one made before a restart is the store's to tell). */
static int check_rollout(const rkd_gate *g, const rkd_store_gate_view *v, rk_error *err)
{
    if (!g->step)
        return rkd_rollout_check_hand(v->cluster, v->rollout, err);
    if (g->to_version <= v->active)
        return RK_OK;
    return rkd_rollout_check_approvals(v->cluster, v->rollout, &v->policy, err);
}

/* The store's check (rkd_store_gate), inside the activation's transaction. */
static int gate_check(void *arg, const rkd_store_gate_view *v, double *moved, rk_error *err)
{
    rkd_gate *g = arg;
    const rkd_store_policy *pol = &v->policy;
    *moved = -1;
    int rc = check_rollout(g, v, err);
    g->budget =
        pol->max_moved_fraction < 1 || pol->max_balance_after > 0 || pol->max_moved_bytes > 0;
    if (rc != RK_OK || !v->active || (g->to_version && g->to_version <= v->active))
        return rc; /* refused, a first activation, or one the store refuses */
    /* No force helps while a window is open: say so before asking for rings. */
    if (v->previous)
        rc = rkd_store_check_window(v->cluster, v->active, v->previous, err);
    if (rc != RK_OK)
        return rc;
    g->need_job = pol->prewarm;
    g->need_load = pol->max_moved_bytes > 0 && !g->reason;
    if (g->from_version != v->active || (pol->prewarm && !g->job_read) ||
        (g->need_load && !g->load_read)) {
        g->want = v->active;
        return rk_error_set(err, RKD_STORE_EGATE, NULL, "the gate needs the ring of version %lld",
                            (long long)v->active);
    }
    const rk_ring *to = g->publish ? v->ring : g->to->value;
    rc = pol->prewarm ? check_prewarm(g, to, v->active, err) : RK_OK;
    return rc ? rc : check_plan(g, to, pol, v->active, moved, err);
}

void rkd_gate_init(rkd_gate *g, rkd_call *c)
{
    g->c = c;
    g->check = (rkd_store_gate){gate_check, g};
    /* The rings a reviewed plan or the last activation left in the cache: with them a budget is
     * checked on the first try (a publish's own ring is the one the store builds). */
    int64_t active = rkd_cached_active(c->app, c->cluster);
    g->from = active ? rkd_cache_get(c->app->rings, c->cluster, active) : NULL;
    g->to = g->from && !g->publish ? rkd_cache_get(c->app->rings, c->cluster, g->to_version) : NULL;
    g->from_version = g->from && (g->publish || g->to) ? active : 0;
}

/* The cluster's job, for check_prewarm: a verified pre-warm's versions, or none. */
static int fetch_job(rkd_gate *g, rk_error *err)
{
    json_t *job = NULL;
    int rc = rkd_job_get(g->c->app->store, g->c->cluster, &job, err);
    const char *mode = json_string_value(json_object_get(job, "mode"));
    const char *state = json_string_value(json_object_get(job, "state"));
    g->job_read = 1;
    g->warm_from = g->warm_to = 0;
    if (rc == RK_OK && mode && state && strcmp(mode, "before_cutover") == 0 &&
        strcmp(state, "verified") == 0) {
        g->warm_from = json_integer_value(json_object_get(job, "from"));
        g->warm_to = json_integer_value(json_object_get(job, "to"));
    }
    json_decref(job);
    return rc == RKD_STORE_ENOJOB ? RK_OK : rc;
}

/* The cluster's load profile, for within_bytes. */
static int fetch_load(rkd_gate *g, rk_error *err)
{
    json_decref(g->profile);
    g->profile = NULL;
    g->load_read = 1;
    return rkd_load_profile_get(g->c->app->store, g->c->cluster, time(NULL), &g->profile, err);
}

/* The rings of the plan from version g->want, the cluster's job and its load profile. */
static int fetch(rkd_gate *g, rk_error *err)
{
    int rc = g->need_job ? fetch_job(g, err) : RK_OK;
    rc = rc == RK_OK && g->need_load ? fetch_load(g, err) : rc;
    if (rc != RK_OK)
        return rc;
    rkd_cache_release(g->c->app->rings, g->from);
    g->from = rkd_ring_entry(g->c, g->want, &rc, err);
    g->from_version = g->from ? g->want : 0;
    if (g->from && !g->publish && !g->to)
        g->to = rkd_ring_entry(g->c, g->to_version, &rc, err);
    return rc;
}

int rkd_gate_again(rkd_gate *g, int *rc, rk_error *err)
{
    if (*rc != RKD_STORE_EGATE)
        return 0;
    if (++g->tries == 3) {
        *rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                           "cluster %s: the active version changed under three tries of this "
                           "activation; nothing was changed, retry",
                           g->c->cluster);
        return 0;
    }
    *rc = fetch(g, err);
    return *rc == RK_OK;
}

void rkd_gate_done(rkd_gate *g)
{
    json_decref(g->profile);
    g->profile = NULL;
    rkd_cache_release(g->c->app->rings, g->from);
    rkd_cache_release(g->c->app->rings, g->to);
}
