/* app.h — the application the API's handlers share, one per ringkeeperd (app.c): its caches, the
 * fleet's tables, what plans may cost and the slots they take, the change counters with the wake
 * hook, and the rollout driver; and the call a service is asked for, the app and the cluster.
 * The daemon makes it (rkd_app_new) over a store and metrics it owns, and frees it after the HTTP
 * layer has stopped. Services read its fields; only app.c and the setters below write them.
 */
#ifndef RKD_APP_H
#define RKD_APP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "clients.h"
#include "http_budget.h"
#include "metrics.h"
#include "store.h"

typedef struct rkd_app rkd_app;

/* What one plan may cost (0: the default of each). A plan over max_arcs is refused before its arcs
 * are stored, one over max_rows (the arcs, transfers and step arcs it would render) before it is
 * rendered, both 422 plan_too_large; past `concurrency` plans at once, or all but one of them from
 * one client address, 503 unavailable. */
typedef struct rkd_plan_limits {
    size_t max_arcs, max_rows;
    unsigned concurrency;
} rkd_plan_limits;

#define RKD_PLAN_MAX_ARCS    1000000
#define RKD_PLAN_MAX_ROWS    50000
#define RKD_PLAN_CONCURRENCY 2

/* Called after every activation is committed and the app's caches are updated, on the committing
 * thread, and with version 0 after any other change of the cluster (rkd_app_changed); the HTTP
 * layer wakes long polls of `cluster` with it: ring polls at activations, watchers of its changes
 * at both. */
typedef void (*rkd_activation_fn)(void *arg, const char *cluster, int64_t version);

#define RKD_CHANGE_SLOTS 4096 /* change counters (changes.c): 32 KiB whatever the clusters */

struct rkd_app {
    rkd_store *store;          /* borrowed */
    rkd_metrics *metrics;      /* borrowed, may be NULL */
    rkd_cache *docs;           /* (cluster, 0) -> rkd_active_doc of the active version */
    rkd_cache *rings;          /* (cluster, version) -> rk_ring */
    rkd_cache *refusals;       /* (cluster, hash of what decided it) -> a plan refused as too
                                  large (api_plan.c) */
    pthread_rwlock_t hook_mu;  /* guards hook and hook_arg; held shared across each call */
    rkd_activation_fn hook;    /* called after each activation, or NULL */
    void *hook_arg;            /* its argument */
    rkd_plan_limits plan;      /* what one plan may cost */
    rkd_budget *plan_slots;    /* plans being computed now, per client address (rings.c) */
    rkd_clients *clients;      /* RK-Client ids seen, per cluster: authenticated by a client token
                                  when a token file is set, else all of them */
    rkd_clients *strangers;    /* with a token file, the ids seen without a client token: apart, so
                                  they can neither change nor evict an authenticated one; NULL when
                                  only authenticated ones are recorded */
    unsigned clients_expiry_s; /* the tables' expiry, also the lease of a shared fleet */
    struct rkd_fleet_share *share; /* writes and hears the fleet's records (fleet_share.h), or
                                      NULL: the fleet is this server's alone */
    struct rkd_driver *driver;     /* drives running rollouts (rkd_app_start_rollouts), or NULL */
    _Atomic uint64_t changes[RKD_CHANGE_SLOTS]; /* a change counter per slot of cluster names */
};

/* One call of the API: the app and the cluster a service works for (all a service reads), and for
 * a handler the request being answered (api.h; borrowed) and its response. The rollout driver
 * calls services with the app and the cluster alone. */
typedef struct rkd_call {
    rkd_app *app;
    const struct rkd_request *req;
    struct rkd_response *resp;
    char cluster[RKD_CLUSTER_MAX]; /* {c}, validated */
    int64_t version;               /* {v}, validated; 0 when the route has none */
    /* Set by a write whose watchers need no wake from the dispatcher: a dry run changed nothing;
     * an activation or a closed window woke them already (docs.c, ring_changed). */
    int woken;
} rkd_call;

/* Builds the application over an open store (borrowed; must outlive the app) and metrics
 * (borrowed, may be NULL). Sets the store's watch callback. Free with rkd_app_free. */
rkd_app *rkd_app_new(rkd_store *store, rkd_metrics *metrics, rk_error *err) RK_MUST_CHECK;
void rkd_app_free(rkd_app *app);

/* Sets the plan limits; call before serving. RK_OK, or RK_ENOMEM (the limits unchanged). */
int rkd_app_set_plan_limits(rkd_app *app, const rkd_plan_limits *limits) RK_MUST_CHECK;

/* Replaces the tables of clients (docs/API.md: the authenticated ones, and those seen without a
 * client token, kept apart unless limits->authenticated_only) by empty ones with these limits (0:
 * the default of each); call before serving. RK_ENOMEM leaves the old tables. */
int rkd_app_set_client_limits(rkd_app *app, const rkd_clients_limits *limits);

/* Returns once no call of the hook it replaces runs any more: after setting NULL, `arg` may be
 * freed (a thread of rollouts may be calling it until then). */
void rkd_app_set_activation_hook(rkd_app *app, rkd_activation_fn fn, void *arg);

/* Counts `which` when the app has metrics. */
static inline void rkd_count(rkd_app *app, rkd_counter which)
{
    if (app->metrics)
        rkd_metrics_count(app->metrics, which);
}

#endif
