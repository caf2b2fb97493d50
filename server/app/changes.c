/* changes.c — a change counter per cluster (changes.h), which GET /v1/clusters/{c}/changes
 * (api_changes.c) waits on: the console's live panels (events, fleet, migration, rollout) long-poll
 * it instead of polling each route. Every write to a cluster that changed something, every
 * activation, every rollout or job document written and every change in its fleet report moves the
 * counter on and wakes its watchers (the activation hook with version 0, see api.h).
 *
 * The counters live in memory, in a fixed table of SLOTS indexed by a hash of the name: clusters
 * that share a slot share a counter, which costs a watcher a needless look, never a missed change.
 * They start at the boot's wall-clock milliseconds, so a watcher that outlived a restart sees a
 * change rather than a counter that happens to match. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "changes.h"

void rkd_changes_init(rkd_app *app)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t boot = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
    for (size_t i = 0; i < RKD_CHANGE_SLOTS; i++)
        atomic_init(&app->changes[i], boot);
}

static _Atomic uint64_t *slot(rkd_app *app, const char *cluster)
{
    uint32_t h = 2166136261u; /* FNV-1a: names are short and the table is only a hint */
    for (const unsigned char *s = (const unsigned char *)cluster; *s; s++)
        h = (h ^ *s) * 16777619u;
    return &app->changes[h % RKD_CHANGE_SLOTS];
}

void rkd_app_wake(rkd_app *app, const char *cluster, int64_t version)
{
    atomic_fetch_add(slot(app, cluster), 1);
    /* Shared across the call, so that the HTTP layer, which clears the hook before it frees what
     * the hook wakes, never has it called after: the rollouts' thread wakes until it stops. */
    pthread_rwlock_rdlock(&app->hook_mu);
    if (app->hook)
        app->hook(app->hook_arg, cluster, version);
    pthread_rwlock_unlock(&app->hook_mu);
}

void rkd_app_changed(rkd_app *app, const char *cluster)
{
    rkd_app_wake(app, cluster, 0);
}

uint64_t rkd_changes_seq(rkd_app *app, const char *cluster)
{
    return atomic_load(slot(app, cluster));
}
