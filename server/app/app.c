/* app.c — the application the handlers share (app.h): its caches, the fleet's tables, the plan
 * limits and slots, the activation hook, made and freed here. */
#include <pthread.h>
#include <stdlib.h>

#include "app.h"
#include "changes.h"
#include "docs.h"
#include "fleet_share.h"
#include "rings.h"
#include "rollout_driver.h"

#define DOC_CACHE_ENTRIES  256                 /* clusters whose active document is kept */
#define DOC_CACHE_BYTES    ((size_t)64 << 20)  /* ... in at most this many bytes */
#define RING_CACHE_ENTRIES 8                   /* built rings kept for plans */
#define RING_CACHE_BYTES   ((size_t)512 << 20) /* ... in at most this many bytes of points */
#define REFUSAL_ENTRIES    256                 /* plans refused as too large remembered */
#define REFUSAL_BYTES      ((size_t)1 << 20)   /* ... in at most this many bytes (~0.6 KB each) */

/* The ring cache's value destructor (rk_ring_free takes an rk_ring *, not a void *). */
static void free_ring(void *ring)
{
    rk_ring_free(ring);
}

static int seed_one(void *metrics, const rkd_store_cluster *c, rk_error *err)
{
    (void)err;
    if (c->active_version > 0)
        rkd_metrics_active_version(metrics, c->name, c->active_version);
    return RK_OK;
}

/* Reports the active version of every cluster to the metrics, so they are right from the start. */
static int seed_metrics(rkd_app *app, rk_error *err)
{
    return app->metrics ? rkd_store_each_cluster(app->store, seed_one, app->metrics, err) : RK_OK;
}

rkd_app *rkd_app_new(rkd_store *store, rkd_metrics *metrics, rk_error *err)
{
    rkd_app *app = calloc(1, sizeof *app);
    if (!app || pthread_rwlock_init(&app->hook_mu, NULL) != 0) {
        free(app);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory creating the API");
        return NULL;
    }
    app->store = store;
    app->metrics = metrics;
    rkd_changes_init(app);
    app->docs = rkd_cache_new(DOC_CACHE_ENTRIES, DOC_CACHE_BYTES, free);
    app->rings = rkd_cache_new(RING_CACHE_ENTRIES, RING_CACHE_BYTES, free_ring);
    app->refusals = rkd_cache_new(REFUSAL_ENTRIES, REFUSAL_BYTES, free);
    app->clients = rkd_clients_new(NULL);
    app->strangers = rkd_clients_new(NULL);
    app->clients_expiry_s = RKD_CLIENTS_EXPIRY_S;
    int rc = app->docs && app->rings && app->refusals && app->clients && app->strangers
                 ? rkd_app_set_plan_limits(app, &(rkd_plan_limits){0})
                 : RK_ENOMEM;
    rc = rc == RK_OK ? seed_metrics(app, err) : rc;
    if (rc != RK_OK) {
        if (rc == RK_ENOMEM)
            rk_error_set(err, RK_ENOMEM, NULL, "out of memory creating the API");
        rkd_app_free(app);
        return NULL;
    }
    rkd_store_set_watch(store, rkd_on_store_change, app);
    return app;
}

int rkd_app_set_plan_limits(rkd_app *app, const rkd_plan_limits *limits)
{
    unsigned n = limits->concurrency ? limits->concurrency : RKD_PLAN_CONCURRENCY;
    /* at most n addresses hold a slot at once */
    rkd_budget *slots = rkd_budget_new(n, rkd_plan_share(n), n);
    if (!slots)
        return RK_ENOMEM;
    rkd_budget_free(app->plan_slots);
    app->plan_slots = slots;
    app->plan.max_arcs = limits->max_arcs ? limits->max_arcs : RKD_PLAN_MAX_ARCS;
    app->plan.max_rows = limits->max_rows ? limits->max_rows : RKD_PLAN_MAX_ROWS;
    app->plan.concurrency = n;
    return RK_OK;
}

int rkd_app_set_client_limits(rkd_app *app, const rkd_clients_limits *limits)
{
    rkd_clients *t = rkd_clients_new(limits);
    rkd_clients *apart = limits && limits->authenticated_only ? NULL : rkd_clients_new(limits);
    if (!t || (!apart && !(limits && limits->authenticated_only))) {
        rkd_clients_free(t);
        return RK_ENOMEM;
    }
    rkd_clients_free(app->clients);
    rkd_clients_free(app->strangers);
    app->clients = t;
    app->strangers = apart;
    app->clients_expiry_s = limits && limits->expiry_s ? limits->expiry_s : RKD_CLIENTS_EXPIRY_S;
    return RK_OK;
}

void rkd_app_free(rkd_app *app)
{
    if (!app)
        return;
    rkd_app_stop_rollouts(app);
    rkd_fleet_share_stop(app); /* before the tables it writes into */
    if (app->store)
        rkd_store_set_watch(app->store, NULL, NULL);
    rkd_cache_free(app->refusals);
    rkd_cache_free(app->rings);
    rkd_cache_free(app->docs);
    rkd_budget_free(app->plan_slots);
    rkd_clients_free(app->clients);
    rkd_clients_free(app->strangers);
    pthread_rwlock_destroy(&app->hook_mu);
    free(app);
}

void rkd_app_set_activation_hook(rkd_app *app, rkd_activation_fn fn, void *arg)
{
    pthread_rwlock_wrlock(&app->hook_mu); /* waits for the calls in flight: see rkd_app_wake */
    app->hook = fn;
    app->hook_arg = arg;
    pthread_rwlock_unlock(&app->hook_mu);
}