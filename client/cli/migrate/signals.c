/* signals.c — the signals that stop a worker: SIGINT and SIGTERM ask a run (run.c) to stop at
 * its next batch boundary and end --follow's loop (follow.c); a second one ends the process. Its
 * own file so that both use it and neither calls the other back. */
#include <signal.h>

#include "migrate.h"

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

int mig_signalled(void)
{
    return atomic_load(&signalled);
}
