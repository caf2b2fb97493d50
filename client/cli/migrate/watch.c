/* watch.c — `ringkeeper migrate status --watch`: the job read again every MIG_WATCH_MS
 * until it ends (verified, finished, failed, cancelled) or SIGINT or SIGTERM. The job's route has
 * no long poll, so this polls, as a worker's heartbeat does; the job changes at most once a
 * report (MIG_REPORT_MS) anyway. On a terminal a one-line bar, then the job as status prints it;
 * otherwise a JSON line of the job at each change, the last one the job as it ended. */
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrate.h"

#define BAR_WIDTH 30

/* The phase the job is in, for its fraction: its sources say it (a paused job's too). */
static const char *job_phase(const json_t *job)
{
    const char *phase = mig_str(json_array_get(json_object_get(job, "sources"), 0), "phase");
    return *phase ? phase : strcmp(mig_str(job, "state"), "verifying") == 0 ? "verify" : "copy";
}

static void draw_bar(const json_t *job)
{
    static const char fill[] = "##############################",
                      gap[] = "..............................";
    const char *state = mig_str(job, "state");
    int ended_well = strcmp(state, "verified") == 0 || strcmp(state, "finished") == 0;
    double f = ended_well ? 1 : mig_job_fraction(job, job_phase(job), mig_int(job, "step"));
    int n = (int)(f * BAR_WIDTH + 0.5);
    n = n < 0 ? 0 : n > BAR_WIDTH ? BAR_WIDTH : n;
    fputs("\r\033[K", stdout);
    rk_cli_print_safe(
        stdout, RK_CLI_SAFE_LINE,
        "job %lld %s, step %lld/%lld [%.*s%.*s] %3.0f%%: %lld copied, %lld checked, "
        "%lld errors",
        (long long)mig_int(job, "id"), state, (long long)mig_int(job, "step"),
        (long long)mig_int(job, "steps"), n, fill, BAR_WIDTH - n, gap, f * 100,
        (long long)mig_int(json_object_get(job, "counters"), "copied"),
        (long long)mig_int(json_object_get(json_object_get(job, "verify"), "counters"), "checked"),
        (long long)mig_int(json_object_get(job, "counters"), "errors"));
    fflush(stdout);
}

/* The job shown: the bar each time, a JSON line only when it differs from the one read before
 * (`last`, NULL at first). Not by its updated_at: that counts whole seconds, and a job can change
 * more than once within one. */
static void show(const json_t *job, const json_t *last, int bar)
{
    if (bar)
        draw_bar(job);
    else if (!last || !json_equal((json_t *)last, (json_t *)job))
        mig_json_line(job);
}

/* How the watch ends for the job as last read: on a terminal the job as status prints it once it
 * ended; 0 for a verified or finished job, else 1, with why on stderr. */
static int verdict(const char *cmd, const json_t *job, int bar)
{
    const char *state = mig_str(job, "state");
    long long id = (long long)mig_int(job, "id");
    if (mig_unfinished(job))
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "interrupted: job %lld is still %s", id, state);
    int rc = bar ? mig_show_job(job) : RK_EXIT_OK;
    if (rc == RK_EXIT_OK && strcmp(state, "verified") != 0 && strcmp(state, "finished") != 0)
        rc = rk_cli_fail(cmd, RK_EXIT_FAIL, "job %lld ended %s", id, state);
    return rc;
}

int mig_watch_job(const char *cmd, const rk_cli_server *s, int json)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    /* blocked before the first request, so in any thread it starts: sigtimedwait takes them */
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    const struct timespec tick = {MIG_WATCH_MS / 1000, (MIG_WATCH_MS % 1000) * 1000000L};
    int bar = !json && isatty(STDOUT_FILENO), rc;
    json_t *job = NULL, *last = NULL;
    for (;;) {
        rc = mig_get_job(cmd, s, &job);
        if (rc == RK_EXIT_OK && !job)
            rc = rk_cli_fail(cmd, RK_EXIT_USAGE,
                             "cluster %s has no migration job: ringkeeper migrate run starts one",
                             s->cluster);
        if (rc != RK_EXIT_OK)
            break;
        show(job, last, bar);
        json_decref(last);
        last = job;
        job = NULL;
        if (!mig_unfinished(last) || sigtimedwait(&stop, NULL, &tick) > 0)
            break;
    }
    if (bar && last)
        putchar('\n');
    rc = rc == RK_EXIT_OK ? verdict(cmd, last, bar) : rc;
    json_decref(job);
    json_decref(last);
    return rc;
}
