/* follow.c — `ringkeeper migrate run --follow`, a worker run as a service: it waits for a
 * migration window of the cluster (an operator's activation, or a rollout's step), runs that
 * window's job to its finish as `run --finish` does, and waits for the next, until SIGINT or
 * SIGTERM. A rollout step waiting in its prewarm phase (a cluster whose policy pre-warms, as one
 * served by proxies) gets its pre-warm run as `run --before-cutover --to V` does. A window whose
 * job failed or was paused is left to a person: the worker says so once, and goes on when the job
 * is resumed, or cancelled (then it starts a new one). */
#include <string.h>
#include <time.h>

#include "migrate.h"

#define FOLLOW_POLL_MS 2000  /* a look at the cluster this often while nothing is to do */
#define FOLLOW_BACKOFF 30000 /* and at most this far apart while the server does not answer */
#define FOLLOW_NAP_MS  100   /* the wait's step: a signal ends it within this */

/* What the loop remembers of a run the server refused: its window and the job as it was after
 * it. A run is not tried again while both are the same (a version without data, say): that would
 * only be refused again, every FOLLOW_POLL_MS. */
typedef struct follow_state {
    mig_cutover failed; /* from 0: none */
    char job_at[64];    /* the job's updated_at then ("" without a job) */
} follow_state;

/* The job's updated_at, "" without a job. */
static const char *job_at(const json_t *job)
{
    return job ? mig_str(job, "updated_at") : "";
}

/* With no window open (*want's to is the active version): the pre-warm a running rollout's step
 * waits for, into *want and to (its version as text); 0 when none waits. */
static int rollout_prewarm(const mig_run *r, mig_cutover *want, char *to, size_t n)
{
    json_t *doc = NULL;
    if (mig_call(r->cmd, r->s, "GET", "/rollouts", NULL, &doc, NULL, NULL) != RK_EXIT_OK) {
        json_decref(doc);
        return 0;
    }
    const json_t *ro = json_array_get(json_object_get(doc, "rollouts"), 0);
    int64_t step = mig_int(ro, "step");
    const json_t *st =
        step > 0 ? json_array_get(json_object_get(ro, "steps"), (size_t)step - 1) : NULL;
    if (strcmp(mig_str(ro, "state"), "running") == 0 &&
        strcmp(mig_str(ro, "phase"), "prewarm") == 0 && mig_int(st, "version") > want->to) {
        *want = (mig_cutover){"before_cutover", want->to, mig_int(st, "version")};
        snprintf(to, n, "%lld", (long long)want->to);
    }
    json_decref(doc);
    return to[0] != '\0';
}

/* Why nothing is to be done now, into why (empty: a run is due); *want the window (or pre-warm)
 * in hand, `to` its version as text for a pre-warm (else ""), and *job the job now (the caller's
 * to decref). */
static void idle_reason(const mig_run *r, const follow_state *f, mig_cutover *want, json_t **job,
                        char *to, char *why, size_t n)
{
    int unknown = 0;
    why[0] = to[0] = '\0';
    *want = (mig_cutover){"window", 0, 0};
    if (mig_call(r->cmd, r->s, "GET", "/clients?limit=1", NULL, NULL, "unknown_cluster",
                 &unknown) != RK_EXIT_OK)
        snprintf(why, n,
                 unknown ? "the cluster has no version yet: waiting for its first"
                         : "no answer from the server (above): trying again");
    else if (mig_get_job(r->cmd, r->s, job) != RK_EXIT_OK ||
             mig_cutover_now(r->cmd, r->s, r->o, want) != RK_EXIT_OK)
        snprintf(why, n, "no answer from the server (above): trying again");
    else if (!want->from && !rollout_prewarm(r, want, to, 24))
        snprintf(why, n,
                 "no migration window is open, and no rollout step waits for its "
                 "pre-warm: waiting for one");
    else if (to[0] && *job && mig_job_is_for(*job, want) &&
             strcmp(mig_str(*job, "state"), "verified") == 0)
        snprintf(why, n, "job %lld pre-warmed v%lld: waiting for the rollout to activate it",
                 (long long)mig_int(*job, "id"), (long long)want->to);
    else if (*job && mig_job_is_for(*job, want) &&
             (strcmp(mig_str(*job, "state"), "failed") == 0 ||
              strcmp(mig_str(*job, "state"), "paused") == 0))
        snprintf(why, n,
                 "job %lld of the %s v%lld -> v%lld is %s: waiting for a person "
                 "(ringkeeper migrate status; resume it, or cancel it for a new job)",
                 (long long)mig_int(*job, "id"), want->mode, (long long)want->from,
                 (long long)want->to, mig_str(*job, "state"));
    else if (strcmp(f->failed.mode, want->mode) == 0 && f->failed.from == want->from &&
             f->failed.to == want->to && strcmp(f->job_at, job_at(*job)) == 0)
        snprintf(why, n,
                 "the last run for the %s v%lld -> v%lld failed (above): waiting for the job "
                 "or the %s to change",
                 want->mode, (long long)want->from, (long long)want->to,
                 want->mode[0] == 'w' ? "window" : "rollout's step");
}

/* `ms`, or less when a signal comes. */
static void wait_a_while(int ms)
{
    struct timespec ts = {0, FOLLOW_NAP_MS * 1000000L};
    for (int t = 0; t < ms && !mig_signalled(); t += FOLLOW_NAP_MS)
        nanosleep(&ts, NULL);
}

int mig_follow(const mig_run *base)
{
    char why[256], said[256] = "";
    int pause_ms = FOLLOW_POLL_MS; /* doubled while the server does not answer */
    follow_state f = {.failed = {"", 0, 0}};
    mig_catch_signals(NULL);
    fprintf(stderr,
            "ringkeeper %s: following the migration windows and the rollouts' pre-warms until "
            "SIGINT or SIGTERM\n",
            base->cmd);
    while (!mig_signalled()) {
        mig_run r = {.cmd = base->cmd, .s = base->s, .o = base->o};
        mig_opts warm = *base->o; /* a pre-warm's run: --before-cutover --to V */
        mig_cutover want;
        json_t *job = NULL;
        char to[24];
        idle_reason(&r, &f, &want, &job, to, why, sizeof why);
        warm.before_cutover = 1, warm.to = to;
        r.o = to[0] ? &warm : base->o;
        json_decref(job);
        if (why[0] && strcmp(why, said) != 0)
            fprintf(stderr, "ringkeeper %s: %s\n", base->cmd, why);
        snprintf(said, sizeof said, "%s", why);
        /* it says how it ended; one the server refused (exit 2: no data, say) waits for a change */
        if (!why[0] && mig_run_job(&r) == RK_EXIT_USAGE) {
            f.failed = want;
            job = NULL;
            mig_get_job(base->cmd, base->s, &job);
            snprintf(f.job_at, sizeof f.job_at, "%s", job_at(job));
            json_decref(job);
        }
        int silent = strncmp(why, "no answer", 9) == 0;
        pause_ms = silent ? (pause_ms * 2 > FOLLOW_BACKOFF ? FOLLOW_BACKOFF : pause_ms * 2)
                          : FOLLOW_POLL_MS;
        if (!mig_signalled())
            wait_a_while(pause_ms);
    }
    fprintf(stderr, "ringkeeper %s: stopped by a signal\n", base->cmd);
    return RK_EXIT_OK;
}
