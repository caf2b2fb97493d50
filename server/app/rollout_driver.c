/* rollout_driver.c — the thread that drives running rollouts (SPEC 11, docs/MIGRATE.md
 * "Rollouts"). Every tick it looks at the clusters whose rollout runs and moves each on by at
 * most one phase of its current step:
 *   publish  the step's topology becomes a staged version;
 *   prewarm  under a policy with prewarm (a cluster served by proxies) and a topology that names
 *            its data: until a worker's before_cutover job from the active version to the step's
 *            is verified (`ringkeeper migrate run --follow` starts and runs it);
 *   activate that version is activated in a migration window (its approvals are the rollout's;
 *            under prewarm, without a window unless the policy also asks for one);
 *   hold     until every client of the cluster holds it (SPEC 9: held, not sent);
 *   move     until the window is finished: by `ringkeeper migrate run --finish` when the topology
 *            names its data, else by the driver (nothing to move but the clients' dual reads);
 *   soak     until soak_s have passed; then the next step, or the rollout is done.
 * An abort with revert is one more step (step 0) walked the same way, after a first phase:
 *   close    the window the rollout left open is finished, whatever its data, so that the start's
 *            topology can be activated in a window of its own.
 * Each move is a compare-and-set of the rollout (rollout.c), after the side effect it records, so
 * a ringkeeperd killed at any point resumes where the document says: a publish not yet recorded is
 * made again (one more staged version, superseded at the next activation), an activation already
 * made is found active. One driver at a time drives a rollout: a lease in its document, for
 * several ringkeeperd on one etcd store. Clusters are found when a rollout starts or resumes here,
 * and by a scan of every cluster at start and every RESCAN_TICKS ticks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "changes.h"
#include "doc_change.h"
#include "docs.h"
#include "fleet.h"
#include "gate.h"
#include "migration_job.h"
#include "rollout.h"
#include "rollout_driver.h"
#ifdef RKD_GUARD
#include "guard.h"
#endif

#define RESCAN_TICKS    60   /* ticks between scans of every cluster (30 s at 500 ms) */
#define HOLD_MAX_S      600  /* a step's wait for the fleet to hold it before the rollout pauses */
#define DRIVER_CLUSTERS 1024 /* clusters with a running rollout one driver looks at */

struct rkd_driver {
    rkd_app *app;
    pthread_t thread;
    pthread_mutex_t mu; /* guards stop, the clusters */
    pthread_cond_t cv;
    int stop;
    unsigned tick_ms;
    char me[64]; /* this driver's name in leases */
    char clusters[DRIVER_CLUSTERS][RKD_CLUSTER_MAX];
    size_t n;
};

/* Adds `cluster` to the clusters looked at (d->mu held); a full table drops it (the next scan). */
static void add_locked(rkd_driver *d, const char *cluster)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->clusters[i], cluster) == 0)
            return;
    if (d->n < DRIVER_CLUSTERS)
        snprintf(d->clusters[d->n++], RKD_CLUSTER_MAX, "%s", cluster);
}

static void drop(rkd_driver *d, const char *cluster)
{
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->clusters[i], cluster) == 0) {
            memmove(d->clusters[i], d->clusters[d->n - 1], RKD_CLUSTER_MAX);
            d->n--;
            break;
        }
    }
    pthread_mutex_unlock(&d->mu);
}

void rkd_driver_wake(rkd_app *app, const char *cluster)
{
    rkd_driver *d = app->driver;
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    add_locked(d, cluster);
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Whether the driver moves rollout `r` on: running, or reverting. */
static int driven(const json_t *r)
{
    const char *state = json_string_value(json_object_get(r, "state"));
    return state && (strcmp(state, "running") == 0 || strcmp(state, "reverting") == 0);
}

/* Wakes the driver for cluster `c` when its rollout runs; a cluster it cannot read is passed. */
static int rescan_one(void *driver, const rkd_store_cluster *c, rk_error *err)
{
    rkd_driver *d = driver;
    json_t *r = NULL;
    int64_t rev;
    if (rkd_doc_read(d->app->store, RKD_DOC_ROLLOUT, c->name, &r, &rev, err) == RK_OK && driven(r))
        rkd_driver_wake(d->app, c->name);
    json_decref(r);
    return RK_OK;
}

/* Every cluster whose rollout runs. */
static void rescan(rkd_driver *d)
{
    rk_error err = {0};
    if (rkd_store_each_cluster(d->app->store, rescan_one, d, &err) != RK_OK)
        return; /* the store does not answer: the next scan */
}

/* ---- One step's phases: each says how the rollout moves on, or leaves m->phase NULL to wait ----
 */

typedef struct step_ctx {
    rkd_driver *d;
    const char *cluster;
    const json_t *rollout, *step;
    int64_t version; /* the step's, once published */
    char reason[RK_ERROR_MESSAGE_MAX + 64];
} step_ctx;

static void pause_with(step_ctx *x, rkd_rollout_move *m, const char *what, const rk_error *err)
{
    snprintf(x->reason, sizeof x->reason, "%s: %s", what, err->message);
    m->pause = x->reason;
}

/* Whether the step waits for its pre-warm: a policy with prewarm, and a topology with data. A
 * revert does not: it is how an operator gets out, at once (its keys go cold on proxies). */
static int needs_prewarm(step_ctx *x)
{
    rkd_store_policy pol;
    rk_error err = {0};
    return x->step != json_object_get(x->rollout, "revert") &&
           json_object_get(json_object_get(x->step, "topology"), "data") &&
           rkd_store_get_policy(x->d->app->store, x->cluster, &pol, &err) == RK_OK && pol.prewarm;
}

static void do_publish(step_ctx *x, rkd_rollout_move *m)
{
    rk_error err = {0};
    rkd_store_version *v = NULL;
    char author[48];
    snprintf(author, sizeof author, "rollout %lld", (long long)m->id);
    rk_topology *t = rk_topology_from_json(json_object_get(x->step, "topology"), &err);
    rkd_store_publish_opts opt = {author, RKD_STORE_ANY, 0, 0, -1, 0, NULL, NULL};
    if (t && rkd_store_publish(x->d->app->store, x->cluster, t, &opt, &v, &err) == RK_OK)
        m->to = needs_prewarm(x) ? "prewarm" : "activate", m->version = v->version;
    else
        pause_with(x, m, "publishing the step", &err);
    rkd_store_version_free(v);
    rk_topology_free(t);
}

/* The cluster's active version and its open window's previous (0: none). */
static int active_now(step_ctx *x, int64_t *active, int64_t *previous)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_active_entry(x->d->app, x->cluster, &rc, &err);
    const rkd_active_doc *doc = e ? e->value : NULL;
    *active = doc ? doc->version : 0;
    *previous = doc ? doc->previous : 0;
    rkd_cache_release(x->d->app->docs, e);
    return rc;
}

/* Until the cluster's job is the step's verified pre-warm from the active version; one that
 * failed pauses the rollout (a person looks: cancel it for a new one, or abort). */
static void do_prewarm(step_ctx *x, rkd_rollout_move *m)
{
    int64_t active = 0, previous = 0;
    json_t *job = NULL;
    rk_error err = {0};
    if (!needs_prewarm(x)) {
        m->to = "activate";
        return;
    }
    if (active_now(x, &active, &previous) != RK_OK ||
        rkd_job_get(x->d->app->store, x->cluster, &job, &err) != RK_OK)
        return; /* no job yet: a worker starts it */
    const char *mode = json_string_value(json_object_get(job, "mode"));
    const char *state = json_string_value(json_object_get(job, "state"));
    if (mode && state && strcmp(mode, "before_cutover") == 0 &&
        json_integer_value(json_object_get(job, "from")) == active &&
        json_integer_value(json_object_get(job, "to")) == x->version) {
        if (strcmp(state, "verified") == 0)
            m->to = "activate";
        else if (strcmp(state, "failed") == 0) {
            snprintf(x->reason, sizeof x->reason,
                     "the pre-warm of version %lld (job %lld) failed: see ringkeeper migrate "
                     "status; cancel it (a worker starts a new one) and resume, or abort",
                     (long long)x->version,
                     (long long)json_integer_value(json_object_get(job, "id")));
            m->pause = x->reason;
        }
    }
    json_decref(job);
}

/* A step's activation passes the gate of the policy in force at its commit: approvals and budget
 * (a step it refuses pauses the rollout, naming the rule). A revert (step 0) goes back to where
 * the rollout started, whatever the policy says now: it is how an operator gets out. */
static void do_activate(step_ctx *x, rkd_rollout_move *m)
{
    rk_error err = {0};
    rkd_store_version *v = NULL;
    char detail[96];
    int64_t active = 0, previous = 0;
    snprintf(detail, sizeof detail, "rollout %lld step %lld", (long long)m->id, (long long)m->step);
    rkd_call c = {.app = x->d->app};
    snprintf(c.cluster, sizeof c.cluster, "%s", x->cluster);
    rkd_gate g = {.to_version = x->version, .step = 1};
    rkd_gate_init(&g, &c);
    rkd_store_activation a = {
        RKD_STORE_ANY, "rollout", -1, NULL, detail, 0, m->step ? &g.check : NULL};
    int rc;
    do
        rc = rkd_store_activate(x->d->app->store, x->cluster, x->version, &a, &v, &err);
    while (rkd_gate_again(&g, &rc, &err));
    rkd_gate_done(&g);
    if (rc == RKD_STORE_ECONFLICT && active_now(x, &active, &previous) == RK_OK &&
        active == x->version)
        rc = RK_OK; /* activated before a restart, not yet recorded */
    if (rc == RK_OK)
        m->to = "hold";
    else
        pause_with(x, m, "activating the step", &err);
    rkd_store_version_free(v);
}

static void do_hold(step_ctx *x, rkd_rollout_move *m, time_t since)
{
    if (rkd_fleet_holds(x->d->app, x->cluster, x->version)) {
        m->to = "move";
        return;
    }
    int64_t refusing = rkd_fleet_refusing(x->d->app, x->cluster, x->version);
    if (!refusing && time(NULL) - since < HOLD_MAX_S)
        return;
    char waiting[200]; /* the pause's reason has room for this much of it */
    rkd_fleet_waiting(x->d->app, x->cluster, x->version, waiting, sizeof waiting);
    if (refusing) /* it will not hold the step while it is active: no use waiting */
        snprintf(x->reason, sizeof x->reason,
                 "%lld client(s) refuse version %lld (%s): fix them (restart them), then resume; "
                 "or abort",
                 (long long)refusing, (long long)x->version, waiting);
    else
        snprintf(x->reason, sizeof x->reason,
                 "the fleet did not hold version %lld within %d s (%s): see GET .../clients, "
                 "then resume",
                 (long long)x->version, HOLD_MAX_S, waiting);
    m->pause = x->reason;
}

/* Finishes the open window, saying `why`: nothing to copy without a data protocol (the window
 * only kept the clients' dual reads), or a revert's first phase. */
static int finish_window(step_ctx *x, rkd_rollout_move *m, const char *why)
{
    rk_error err = {0};
    rkd_store_version *v = NULL;
    int rc = RK_OK;
    char comment[128];
    snprintf(comment, sizeof comment, "rollout %lld step %lld: %s", (long long)m->id,
             (long long)m->step, why);
    if (rkd_store_finish_migration(x->d->app->store, x->cluster, "rollout", comment, &v, &err) ==
        RK_OK)
        rkd_cache_release(x->d->app->docs,
                          rkd_on_window_closed(x->d->app, x->cluster, v->version, &rc, &err));
    else
        pause_with(x, m, "finishing the step's window", &err);
    rkd_store_version_free(v);
    return rc;
}

static void do_move(step_ctx *x, rkd_rollout_move *m)
{
    int64_t active = 0, previous = 0;
    if (active_now(x, &active, &previous) != RK_OK)
        return;
    if (!previous || active != x->version) {
        int64_t soak =
            json_integer_value(json_object_get(json_object_get(x->rollout, "options"), "soak_s"));
        m->to = "soak";
        m->soak_until = time(NULL) + (time_t)soak;
        return;
    }
    if (!json_object_get(json_object_get(x->step, "topology"), "data"))
        finish_window(x, m, "no data protocol, nothing to move"); /* the next tick sees it closed */
}

static void do_close(step_ctx *x, rkd_rollout_move *m)
{
    int64_t active = 0, previous = 0;
    if (active_now(x, &active, &previous) != RK_OK)
        return;
    if (!previous)
        m->to = "publish";
    else
        finish_window(x, m, "aborted, going back to the start"); /* the next tick sees it closed */
}

/* A guard that fails pauses the rollout, saying why: a person looks, then resumes. */
static void guard(step_ctx *x, rkd_rollout_move *m)
{
    const json_t *g = json_object_get(json_object_get(x->rollout, "options"), "guard");
    if (!json_is_object(g))
        return;
#ifdef RKD_GUARD
    char why[200];
    if (rkd_guard_check(json_string_value(json_object_get(g, "url")),
                        json_string_value(json_object_get(g, "metric")),
                        json_number_value(json_object_get(g, "max")), why, sizeof why))
        return;
    snprintf(x->reason, sizeof x->reason, "the guard stopped it after step %lld: %.200s",
             (long long)m->step, why);
#else
    snprintf(x->reason, sizeof x->reason, "this ringkeeperd runs no guard (built without libcurl)");
#endif
    m->pause = x->reason;
}

static void do_soak(step_ctx *x, rkd_rollout_move *m)
{
    time_t until = rkd_doc_parse_time(json_string_value(json_object_get(x->rollout, "soak_until")));
    if (time(NULL) < until)
        return;
    m->to = NULL; /* the step is done, unless its guard says no */
    if (m->step)
        guard(x, m);
}

/* Moves the cluster's rollout on by one phase: 1 while it runs, 0 once it does not. */
static int drive(rkd_driver *d, const char *cluster)
{
    json_t *r = NULL;
    int64_t rev;
    rk_error err = {0};
    if (rkd_doc_read(d->app->store, RKD_DOC_ROLLOUT, cluster, &r, &rev, &err) != RK_OK ||
        !driven(r)) {
        json_decref(r);
        return 0;
    }
    if (!rkd_rollout_lease(d->app->store, cluster, d->me, &err)) {
        json_decref(r);
        return 1; /* another driver has it; look again when its lease may have run out */
    }
    int64_t n = json_integer_value(json_object_get(r, "step"));
    const char *phase = json_string_value(json_object_get(r, "phase"));
    step_ctx x = {.d = d, .cluster = cluster, .rollout = r};
    x.step = n ? json_array_get(json_object_get(r, "steps"), (size_t)n - 1)
               : json_object_get(r, "revert");
    x.version = json_integer_value(json_object_get(x.step, "version"));
    rkd_rollout_move m = {.id = json_integer_value(json_object_get(r, "id")),
                          .step = n,
                          .phase = phase ? phase : "",
                          .to = phase ? phase : ""}; /* "to" == "phase": wait */
    time_t since = rkd_doc_parse_time(json_string_value(json_object_get(r, "phase_since")));
    if (!x.step || !phase)
        m.pause = "the rollout's document has no current step";
    else if (strcmp(phase, "close") == 0)
        do_close(&x, &m);
    else if (strcmp(phase, "publish") == 0)
        do_publish(&x, &m);
    else if (strcmp(phase, "prewarm") == 0)
        do_prewarm(&x, &m);
    else if (strcmp(phase, "activate") == 0)
        do_activate(&x, &m);
    else if (strcmp(phase, "hold") == 0)
        do_hold(&x, &m, since);
    else if (strcmp(phase, "move") == 0)
        do_move(&x, &m);
    else if (strcmp(phase, "soak") == 0)
        do_soak(&x, &m);
    if ((m.pause || !m.to || strcmp(m.to, m.phase) != 0) &&
        rkd_rollout_advance(d->app->store, cluster, &m, &err) == RK_OK)
        rkd_app_changed(d->app, cluster); /* the console shows the rollout's steps live */
    json_decref(r);
    return 1;
}

/* ---- The thread ---- */

static void *run(void *arg)
{
    rkd_driver *d = arg;
    char cluster[RKD_CLUSTER_MAX];
    for (unsigned tick = 0;; tick++) {
        if (tick % RESCAN_TICKS == 0)
            rescan(d);
        for (size_t i = 0;; i++) {
            pthread_mutex_lock(&d->mu);
            int more = !d->stop && i < d->n;
            if (more)
                memcpy(cluster, d->clusters[i], sizeof cluster);
            pthread_mutex_unlock(&d->mu);
            if (!more)
                break;
            if (!drive(d, cluster))
                drop(d, cluster), i--;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)(d->tick_ms % 1000) * 1000000L;
        until.tv_sec += d->tick_ms / 1000 + until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&d->mu);
        if (!d->stop)
            pthread_cond_timedwait(&d->cv, &d->mu, &until);
        int stop = d->stop;
        pthread_mutex_unlock(&d->mu);
        if (stop)
            return NULL;
    }
}

int rkd_app_start_rollouts(rkd_app *app, unsigned tick_ms, rk_error *err)
{
    char host[32] = "";
    rkd_driver *d = calloc(1, sizeof *d);
    if (!d)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory for the rollout driver");
#ifdef RKD_GUARD
    if (rkd_guard_init() != 0) {
        free(d);
        return rk_error_set(err, RK_ENOMEM, NULL, "cannot set up libcurl for the rollouts' guards");
    }
#endif
    d->app = app;
    d->tick_ms = tick_ms ? tick_ms : 500;
    gethostname(host, sizeof host - 1);
    snprintf(d->me, sizeof d->me, "%s:%ld:%lx", host, (long)getpid(), (unsigned long)time(NULL));
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    app->driver = d; /* before the thread, which reads it */
    if (pthread_create(&d->thread, NULL, run, d) != 0) {
#ifdef RKD_GUARD
        rkd_guard_cleanup();
#endif
        app->driver = NULL;
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return rk_error_set(err, RK_ENOMEM, NULL, "cannot start the rollout driver's thread");
    }
    return RK_OK;
}

void rkd_app_stop_rollouts(rkd_app *app)
{
    rkd_driver *d = app->driver;
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    app->driver = NULL;
    free(d);
#ifdef RKD_GUARD
    rkd_guard_cleanup();
#endif
}
