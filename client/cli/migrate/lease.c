/* lease.c — a worker's hold on the job: the claim that takes its lease (waiting out the
 * lease of a worker that died), and its release when the worker stops. The heartbeat
 * (beat.c) renews it meanwhile. */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "migrate.h"

/* The holder of the lease, for the refusal's message. */
static int refused_leased(mig_run *r)
{
    json_t *job = NULL;
    mig_get_job(r->cmd, r->s, &job);
    json_t *w = json_object_get(job, "worker");
    rk_cli_fail(r->cmd, RK_EXIT_USAGE,
                "job %lld is being run by worker %s (lease until %s): only one worker runs a job; "
                "wait for it, or for its lease to run out 10 s after it stopped",
                (long long)mig_int(r->job, "id"), json_is_object(w) ? mig_str(w, "id") : "?",
                json_is_object(w) ? mig_str(w, "lease_until") : "?");
    json_decref(job);
    return RK_EXIT_USAGE;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One claim; *leased when another worker's lease refused it. */
static int claim_once(mig_run *r, int *leased)
{
    json_t *job = NULL;
    int rc = mig_call(r->cmd, r->s, "POST", "/migration/claim",
                      json_pack("{ss}", "worker", r->o->worker), &job, "leased", leased);
    if (rc == RK_EXIT_OK) {
        json_decref(r->job);
        r->job = job;
        r->claimed = 1;
    }
    return rc;
}

/* Claims the job. A lease left by a worker that died (kill -9) runs out within
 * MIG_LEASE_WAIT_MS: the run waits that long, saying so, unless --no-wait; a live worker renews
 * its lease meanwhile, and the run is refused then. */
int mig_claim(mig_run *r)
{
    int leased = 0;
    int rc = claim_once(r, &leased);
    if (leased && !r->o->no_wait) {
        fprintf(stderr,
                "ringkeeper %s: job %lld is leased to another worker (one killed keeps it for "
                "up to 10 s): waiting up to %d s for the lease to run out (--no-wait: fail at "
                "once)\n",
                r->cmd, (long long)mig_int(r->job, "id"), MIG_LEASE_WAIT_MS / 1000);
        for (int waited = 0; leased && waited < MIG_LEASE_WAIT_MS && !atomic_load(&r->stop);
             waited += MIG_POLL_MS) {
            nap_ms(MIG_POLL_MS);
            rc = claim_once(r, &leased);
        }
    }
    if (leased && atomic_load(&r->stop)) /* a signal, not the lease, ended the wait */
        return rk_cli_fail(r->cmd, RK_EXIT_FAIL,
                           "interrupted while waiting for job %lld's lease: nothing was done",
                           (long long)mig_int(r->job, "id"));
    return leased ? refused_leased(r) : rc;
}

/* A worker that stops lets go of its lease, so the next run need not wait it out. */
void mig_release(mig_run *r)
{
    int gone = 0;
    if (r->claimed)
        mig_call(r->cmd, r->s, "POST", "/migration/claim",
                 json_pack("{sssb}", "worker", r->o->worker, "release", 1), NULL, "no_migration",
                 &gone);
}
