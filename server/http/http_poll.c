/* http_poll.c — long polls: a request held (suspended) until an activation of its cluster (a ring
 * poll) or any change of it (a console watching), or its deadline; the hook that wakes them, and
 * the timer that ends them. */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_shared.h"

/* ---- long polls ---- */

/* Unlinks `w` from the list of `kind` and resumes its connection; the caller holds h->mu. */
static void release(rkd_http *h, int kind, waiter **link)
{
    waiter *w = *link;
    *link = w->next;
    atomic_fetch_sub(&h->listed[kind], 1);
    if (w->sock)
        w->sock->held = NULL; /* it stays in the set: its next hold costs no epoll_ctl */
    atomic_fetch_sub(&h->held, 1);
    MHD_resume_connection(w->conn);
    rkd_metrics_waiting(h->cfg.metrics, -1);
}

/* A suspended connection is not read, so a client that closes it would not be seen until the
 * poll's deadline and would keep its slots (a poll's, a connection's) that long: a fleet that
 * restarts would find them taken. So each held socket is also in an epoll set of its own, asking
 * only for the client's FIN (EPOLLRDHUP) or an error; the timer looks at it on each wake. Looking
 * costs nothing while no client leaves: poll(2) over 10,000 held sockets had held the lock 25 ms,
 * recv(2) on each 30 ms. A socket joins the set at its connection's first hold and stays until
 * its client leaves or it closes (an event then names a connection whose poll may not be held). */

void rkh_polls_init(rkd_http *h)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&h->mu, NULL);
    h->gone = epoll_create1(EPOLL_CLOEXEC); /* -1 (no descriptor left): deadlines only */
}

void rkh_polls_deinit(rkd_http *h)
{
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    if (h->gone >= 0)
        close(h->gone);
}

rkh_conn *rkh_conn_new(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    rkh_conn *k = ci ? calloc(1, sizeof *k) : NULL;
    if (k)
        k->fd = ci->connect_fd; /* its SO_RCVBUF is the listening socket's, RCVBUF_OPEN */
    return k;
}

/* Under h->mu, which the timer holds while it reads the set's events: once out of the set, no
 * event names `k` again. */
void rkh_conn_free(rkd_http *h, rkh_conn *k)
{
    if (!k)
        return;
    rkh_slow_done(h, k);
    pthread_mutex_lock(&h->mu);
    if (k->watched)
        epoll_ctl(h->gone, EPOLL_CTL_DEL, k->fd, NULL);
    pthread_mutex_unlock(&h->mu);
    free(k);
}

/* Puts w's socket into the set of clients that may leave, if not there yet (if that fails, or the
 * connection has no state, its deadline ends it). The caller holds h->mu. */
static void watch_gone(rkd_http *h, waiter *w, rkh_conn *k)
{
    if (k && !k->watched && h->gone >= 0) {
        struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = k};
        k->watched = epoll_ctl(h->gone, EPOLL_CTL_ADD, k->fd, &ev) == 0;
    }
    w->sock = k && k->watched ? k : NULL;
    if (w->sock)
        k->held = w;
}

/* Releases the held polls whose client left (MHD then reads the close and frees the connection).
 * The caller holds h->mu. A socket that reports its client's leaving leaves the set (the report
 * would come again on every look): its connection is about to close, and a hold on it meanwhile
 * puts it back, which reports at once. */
static void release_gone(rkd_http *h)
{
    struct epoll_event ev[64];
    int n, marked = 0;
    do {
        n = h->gone >= 0 ? epoll_wait(h->gone, ev, 64, 0) : 0;
        for (int i = 0; i < n; i++) {
            rkh_conn *k = ev[i].data.ptr;
            epoll_ctl(h->gone, EPOLL_CTL_DEL, k->fd, NULL);
            k->watched = 0;
            if (k->held) {
                k->held->gone = 1; /* the resumed handler answers, as at the deadline */
                k->held->sock = NULL;
                k->held = NULL;
                marked++;
            }
        }
    } while (n == 64);
    for (int kind = RKH_RING; marked && kind <= RKH_CHANGES; kind++) {
        for (waiter **link = &h->waiters[kind]; *link;) {
            if ((*link)->gone)
                release(h, kind, link);
            else
                link = &(*link)->next;
        }
    }
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
    atomic_fetch_add(&h->listed[kind], 1); /* before wakes is read: see wake_now */
    int full = atomic_load(&h->held) >= (long)h->cfg.max_polls;
    if (h->stopping || full || atomic_load(&h->wakes[kind]) != seen) {
        int rc = h->stopping ? -1 : full ? 2 : 1;
        atomic_fetch_sub(&h->listed[kind], 1);
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
    watch_gone(h, &st->w, rkh_conn_of(c));
    snprintf(st->w.cluster, sizeof st->w.cluster, "%s", r->wait_cluster);
    rkh_set_rcvbuf(c, 1);
    MHD_suspend_connection(c); /* before it is listed, so no resume can come first */
    st->w.next = h->waiters[kind];
    h->waiters[kind] = &st->w;
    if (rkh_before(&st->w.deadline, &h->timer_due)) /* else the timer's walk finds it in time */
        pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    rkd_metrics_waiting(h->cfg.metrics, +1);
    return 0;
}

/* Resumes the polls of `cluster` in one list; the caller holds h->mu. */
static void wake(rkd_http *h, int kind, const char *cluster)
{
    for (waiter **link = &h->waiters[kind]; *link;) {
        if (strcmp((*link)->cluster, cluster) == 0)
            release(h, kind, link);
        else
            link = &(*link)->next;
    }
}

/* A change nobody waits for takes no lock: each client of a fleet that moves to a new version is a
 * change (of the fleet report, for consoles), and taking h->mu for each made the network threads
 * queue on it behind the polls being held. A wake counts itself, then reads how many are listed; a
 * hold counts itself listed, then reads the wakes (both sequentially consistent): a wake that reads
 * none listed was counted before the hold read, and the hold looks again instead of waiting. */
static void wake_now(rkd_http *h, const char *cluster, int64_t version)
{
    int first = version > 0 ? RKH_RING : RKH_CHANGES;
    long listed = 0;
    for (int kind = first; kind <= RKH_CHANGES; kind++) {
        atomic_fetch_add(&h->wakes[kind], 1);
        listed += atomic_load(&h->listed[kind]);
    }
    if (!listed)
        return;
    pthread_mutex_lock(&h->mu);
    for (int kind = first; kind <= RKH_CHANGES; kind++)
        wake(h, kind, cluster);
    pthread_mutex_unlock(&h->mu);
}

/* The wakes a request on a pool thread caused, done once its answer is on its way: else the 201 of
 * an activation waits behind the answers of every poll it woke (250-300 ms for 10,000). A poll that
 * looks meanwhile finds the new version itself; one that holds is woken a moment later. */
#define DEFERRED_MAX 4 /* clusters one request changes, at most (a rollout's step: one) */
static _Thread_local struct {
    int on; /* this thread runs a request of the pool */
    int n;
    struct {
        char cluster[RKD_CLUSTER_MAX];
        int64_t version; /* > 0 if any of them was an activation */
    } w[DEFERRED_MAX];
} deferred;

void rkh_defer_wakes(void)
{
    deferred.on = 1;
    deferred.n = 0;
}

void rkh_wake_deferred(rkd_http *h)
{
    deferred.on = 0;
    for (int i = 0; i < deferred.n; i++)
        wake_now(h, deferred.w[i].cluster, deferred.w[i].version);
    deferred.n = 0;
}

/* Wake hook of the app: an activation answers every long poll of that cluster, another change
 * only those watching its changes; now, or after the answer of the pool's request that made it. */
void rkh_on_activation(void *arg, const char *cluster, int64_t version)
{
    int i = 0;
    while (deferred.on && i < deferred.n && strcmp(deferred.w[i].cluster, cluster) != 0)
        i++;
    if (!deferred.on || i == DEFERRED_MAX || strlen(cluster) >= RKD_CLUSTER_MAX) {
        wake_now(arg, cluster, version);
        return;
    }
    if (i == deferred.n) {
        snprintf(deferred.w[i].cluster, RKD_CLUSTER_MAX, "%s", cluster);
        deferred.w[deferred.n++].version = 0;
    }
    if (version > deferred.w[i].version)
        deferred.w[i].version = version;
}

/* Resumes the polls of one list whose deadline passed; *wake becomes the next deadline if sooner.
 * The caller holds h->mu. */
static void expire(rkd_http *h, int kind, const struct timespec *now, struct timespec *next)
{
    for (waiter **link = &h->waiters[kind]; *link;) {
        if (!rkh_before(now, &(*link)->deadline)) {
            release(h, kind, link);
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
        release_gone(h);
        rkh_slow_expire(h, &now);
        if (rkh_before(&wake, &soonest))
            wake = soonest;
        h->timer_due = wake;
        pthread_cond_timedwait(&h->cv, &h->mu, &wake);
    }
    for (int kind = RKH_RING; kind <= RKH_CHANGES; kind++)
        while (h->waiters[kind]) /* stopping: every held poll answers now (304 or the new ring) */
            release(h, kind, &h->waiters[kind]);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}
