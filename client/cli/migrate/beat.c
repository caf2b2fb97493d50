/* beat.c — the worker's heartbeat: a thread that renews the job's lease (re-claims it
 * every MIG_LEASE_RENEW_MS) and reads the job every MIG_POLL_MS, so that a pause, a cancel or a
 * new throttle takes effect within a second even while a slow batch runs (the throttle is
 * thread-safe; the stop flag is read at the next batch boundary). It never touches r->job, which
 * is the main thread's. */
#include <string.h>
#include <time.h>

#include "migrate.h"

#define NAP_MS 100 /* the thread's sleep between looks at r->over */

static void nap(void)
{
    struct timespec ts = {0, NAP_MS * 1000000L};
    nanosleep(&ts, NULL);
}

/* r->stop becomes `to` only while it is `from`: a signal's stop or a lost lease is never undone
 * by what the job says. */
static void swap_stop(mig_run *r, int from, int to)
{
    atomic_compare_exchange_strong(&r->stop, &from, to);
}

/* What a fresh job document says for the running copy. */
static void look(mig_run *r, const json_t *job)
{
    const char *state = mig_str(job, "state");
    mig_take_throttle(r, job);
    if (strcmp(state, "paused") == 0) {
        swap_stop(r, MIG_GO, MIG_PAUSED);
    } else if (strcmp(state, "cancelled") == 0) {
        swap_stop(r, MIG_GO, MIG_CANCELLED);
        swap_stop(r, MIG_PAUSED, MIG_CANCELLED);
    } else if (strcmp(state, "copying") == 0 || strcmp(state, "verifying") == 0) {
        swap_stop(r, MIG_PAUSED, MIG_GO); /* resumed again before the boundary: go on */
    }
}

static void poll_job(mig_run *r)
{
    json_t *job = NULL;
    if (mig_get_job(r->cmd, r->s, &job) == RK_EXIT_OK && job)
        look(r, job);
    json_decref(job);
}

/* A claim renews the lease; one refused as leased means another worker has the job now. An
 * ended job (job_state: the last report verified it meanwhile) is for the main thread to see in
 * its next answer, and no error of this run. */
static void renew(mig_run *r)
{
    int refused = 0;
    json_t *body = json_pack("{ss}", "worker", r->o->worker), *job = NULL;
    mig_call(r->cmd, r->s, "POST", "/migration/claim", body, &job, "leased job_state", &refused);
    if (refused && mig_get_job(r->cmd, r->s, &job) == RK_EXIT_OK && mig_unfinished(job))
        atomic_store(&r->stop, MIG_LEASE_LOST); /* refused while under way: leased */
    json_decref(job);
}

/* Runs until the main thread sets r->over: one pass a nap, so it ends within NAP_MS. */
static void *beat(void *arg)
{
    mig_run *r = arg;
    int64_t polled = mig_now_ms(), renewed = polled;
    while (!atomic_load(&r->over)) {
        nap();
        int64_t now = mig_now_ms();
        if (atomic_load(&r->stop) == MIG_LEASE_LOST)
            continue;
        if (now - renewed >= MIG_LEASE_RENEW_MS) {
            renew(r);
            renewed = now;
        }
        if (now - polled >= MIG_POLL_MS) {
            poll_job(r);
            polled = now;
        }
    }
    return NULL;
}

int mig_beat_start(mig_run *r)
{
    atomic_store(&r->over, 0);
    if (pthread_create(&r->beat, NULL, beat, r) != 0)
        return rk_cli_fail(r->cmd, RK_EXIT_FAIL, "cannot start the heartbeat thread");
    r->beating = 1;
    return RK_EXIT_OK;
}

void mig_beat_stop(mig_run *r)
{
    if (!r->beating)
        return;
    atomic_store(&r->over, 1);
    pthread_join(r->beat, NULL);
    r->beating = 0;
}
