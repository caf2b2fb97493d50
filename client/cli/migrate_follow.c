/* migrate_follow.c — `ringkeeper migrate run --follow`, a worker run as a service: it waits for a
 * migration window of the cluster (an operator's activation, or a rollout's step), runs that
 * window's job to its finish as `run --finish` does, and waits for the next, until SIGINT or
 * SIGTERM. A window whose job failed or was paused is left to a person: the worker says so once,
 * and goes on when the job is resumed, or cancelled (then it starts a new one). Also the signals
 * that stop a run. */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "migrate.h"

#define FOLLOW_POLL_MS 2000 /* a look at the cluster this often while nothing is to do */
#define FOLLOW_NAP_MS  100  /* the wait's step: a signal ends it within this */

static atomic_int *stop_flag; /* the running worker's r->stop, for the handler */
static atomic_int signalled;  /* a signal came: --follow ends */

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&signalled, 1);
    if (stop_flag)
        atomic_store(stop_flag, MIG_INTERRUPTED);
}

void mig_catch_signals(atomic_int *stop)
{
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    stop_flag = stop;
    if (atomic_load(&signalled))
        return; /* the first one was taken: a second ends the process */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Why nothing is to be done now, into why (empty: a run is due). */
static void idle_reason(const mig_run *r, char *why, size_t n)
{
    json_t *job = NULL;
    mig_cutover want;
    why[0] = '\0';
    if (mig_get_job(r->cmd, r->s, &job) != RK_EXIT_OK ||
        mig_cutover_now(r->cmd, r->s, r->o, &want) != RK_EXIT_OK)
        snprintf(why, n, "the server did not answer (above): trying again");
    else if (!want.from)
        snprintf(why, n, "no migration window is open: waiting for one");
    else if (job && mig_job_is_for(job, &want) &&
             (strcmp(mig_str(job, "state"), "failed") == 0 ||
              strcmp(mig_str(job, "state"), "paused") == 0))
        snprintf(why, n,
                 "job %lld of the window v%lld -> v%lld is %s: waiting for a person "
                 "(ringkeeper migrate status; resume it, or cancel it for a new job)",
                 (long long)mig_int(job, "id"), (long long)want.from, (long long)want.to,
                 mig_str(job, "state"));
    json_decref(job);
}

/* FOLLOW_POLL_MS, or less when a signal comes. */
static void wait_a_while(void)
{
    struct timespec ts = {0, FOLLOW_NAP_MS * 1000000L};
    for (int t = 0; t < FOLLOW_POLL_MS && !atomic_load(&signalled); t += FOLLOW_NAP_MS)
        nanosleep(&ts, NULL);
}

int mig_follow(const mig_run *base)
{
    char why[256], said[256] = "";
    mig_catch_signals(NULL);
    fprintf(stderr, "ringkeeper %s: following the migration windows until SIGINT or SIGTERM\n",
            base->cmd);
    while (!atomic_load(&signalled)) {
        mig_run r = {.cmd = base->cmd, .s = base->s, .o = base->o};
        idle_reason(&r, why, sizeof why);
        if (why[0] && strcmp(why, said) != 0)
            fprintf(stderr, "ringkeeper %s: %s\n", base->cmd, why);
        snprintf(said, sizeof said, "%s", why);
        if (!why[0])
            mig_run_job(&r); /* it says how it ended; the next look decides what follows */
        if (!atomic_load(&signalled))
            wait_a_while();
    }
    fprintf(stderr, "ringkeeper %s: stopped by a signal\n", base->cmd);
    return RK_EXIT_OK;
}
