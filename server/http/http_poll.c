/* http_poll.c — long polls: a request held (suspended) until an activation of its cluster (a ring
 * poll) or any change of it (a console watching), or its deadline; the hook that wakes them, and
 * the timer that ends them. */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "http_shared.h"

/* ---- long polls ---- */

/* Unlinks `w` and resumes its connection; the caller holds h->mu. */
static void release(rkd_http *h, waiter **link)
{
    waiter *w = *link;
    *link = w->next;
    atomic_fetch_sub(&h->held, 1);
    MHD_resume_connection(w->conn);
    rkd_metrics_waiting(h->cfg.metrics, -1);
}

/* Holds the request until an activation of its cluster or its deadline, set by the first rkh_hold:
 * a poll woken by an activation it already has waits on for the rest of its time. Returns -1 when
 * the server is stopping (answer at once), 1 when an activation came since `seen` (look again), 2
 * when max_polls are held already (answer 503 busy). */
int rkh_hold(rkd_http *h, req_state *st, struct MHD_Connection *c, const rkd_response *r,
             uint64_t seen)
{
    int kind = r->wait_changes ? RKH_CHANGES : RKH_RING;
    pthread_mutex_lock(&h->mu);
    int full = atomic_load(&h->held) >= (long)h->cfg.max_polls;
    if (h->stopping || full || atomic_load(&h->wakes[kind]) != seen) {
        int rc = h->stopping ? -1 : full ? 2 : 1;
        pthread_mutex_unlock(&h->mu);
        return rc;
    }
    atomic_fetch_add(&h->held, 1); /* before the suspend: its slot is the poll share's from now */
    if (!st->waiting) {
        st->waiting = 1;
        clock_gettime(CLOCK_MONOTONIC, &st->w.deadline);
        st->w.deadline.tv_sec += r->wait_seconds;
    }
    st->w.conn = c;
    snprintf(st->w.cluster, sizeof st->w.cluster, "%s", r->wait_cluster);
    rkh_set_buffer(c, SO_RCVBUF, RCVBUF_HELD);
    MHD_suspend_connection(c); /* before it is listed, so no resume can come first */
    st->w.next = h->waiters[kind];
    h->waiters[kind] = &st->w;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    rkd_metrics_waiting(h->cfg.metrics, +1);
    return 0;
}

/* Resumes the polls of `cluster` in one list; the caller holds h->mu. */
static void wake(rkd_http *h, int kind, const char *cluster)
{
    atomic_fetch_add(&h->wakes[kind], 1);
    for (waiter **link = &h->waiters[kind]; *link;) {
        if (strcmp((*link)->cluster, cluster) == 0)
            release(h, link);
        else
            link = &(*link)->next;
    }
}

/* Wake hook of the app: an activation answers every long poll of that cluster now, another change
 * only those watching its changes. */
void rkh_on_activation(void *arg, const char *cluster, int64_t version)
{
    rkd_http *h = arg;
    pthread_mutex_lock(&h->mu);
    if (version > 0)
        wake(h, RKH_RING, cluster);
    wake(h, RKH_CHANGES, cluster);
    pthread_mutex_unlock(&h->mu);
}

/* Resumes the polls of one list whose deadline passed; *wake becomes the next deadline if sooner.
 * The caller holds h->mu. */
static void expire(rkd_http *h, int kind, const struct timespec *now, struct timespec *next)
{
    for (waiter **link = &h->waiters[kind]; *link;) {
        if (!rkh_before(now, &(*link)->deadline)) {
            release(h, link);
            continue;
        }
        if (rkh_before(&(*link)->deadline, next))
            *next = (*link)->deadline;
        link = &(*link)->next;
    }
}

/* malloc_trim, outside the lock, when TRIM_AFTER_CLOSES connections closed since the last one:
 * non-zero when it ran. The caller holds h->mu. */
static int trim_after_closes(rkd_http *h, long *trimmed)
{
    long closed = atomic_load(&h->closed);
    if (closed - *trimmed < TRIM_AFTER_CLOSES)
        return 0;
    *trimmed = closed;
    pthread_mutex_unlock(&h->mu);
    malloc_trim(0);
    pthread_mutex_lock(&h->mu);
    return 1;
}

void *rkh_timer_main(void *arg)
{
    rkd_http *h = arg;
    long trimmed = 0;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        if (trim_after_closes(h, &trimmed))
            continue;
        struct timespec now, wake, soonest;
        clock_gettime(CLOCK_MONOTONIC, &now);
        wake = soonest = now;
        wake.tv_sec += TICK_MS / 1000;
        soonest.tv_nsec += TICK_MIN_NS;
        if (soonest.tv_nsec >= 1000000000L)
            soonest.tv_sec++, soonest.tv_nsec -= 1000000000L;
        expire(h, RKH_RING, &now, &wake);
        expire(h, RKH_CHANGES, &now, &wake);
        if (rkh_before(&wake, &soonest))
            wake = soonest;
        pthread_cond_timedwait(&h->cv, &h->mu, &wake);
    }
    for (int kind = RKH_RING; kind <= RKH_CHANGES; kind++)
        while (h->waiters[kind]) /* stopping: every held poll answers now (304 or the new ring) */
            release(h, &h->waiters[kind]);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}
