/* http_slow.c — connections that owe a request's headers: the deadline to send them, and their
 * eviction when the connection limit is reached, so that slow clients cannot lock others out. */
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>

#include "http_shared.h"

/* The wait is counted from the connection's start or its previous answer, not from the first
 * byte of the request (libmicrohttpd does not tell that): an idle keep-alive connection owes its
 * next request's headers too. The list is kept in the order the waits began, so the oldest is at
 * its head: the deadline and the eviction both take from there. */

static void unlink_waiting(rkd_http *h, rkh_conn *k)
{
    *(k->prev ? &k->prev->next : &h->slow_head) = k->next;
    *(k->next ? &k->next->prev : &h->slow_tail) = k->prev;
    k->prev = k->next = NULL;
    k->waiting = 0;
}

/* Shuts the socket down: libmicrohttpd then reads its end and closes the connection itself (the
 * descriptor stays open until then, and `k` listed until its close notice, which takes slow_mu:
 * so it is never another connection's descriptor). */
static void cut(rkd_http *h, rkh_conn *k, int evicted)
{
    unlink_waiting(h, k);
    k->evicted = evicted;
    if (evicted)
        atomic_fetch_add(&h->evicting, 1);
    shutdown(k->fd, SHUT_RDWR);
}

void rkh_slow_wait(rkd_http *h, rkh_conn *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&h->slow_mu);
    if (k->waiting)
        unlink_waiting(h, k);
    clock_gettime(CLOCK_MONOTONIC, &k->since);
    k->waiting = 1;
    k->prev = h->slow_tail;
    *(h->slow_tail ? &h->slow_tail->next : &h->slow_head) = k;
    h->slow_tail = k;
    pthread_mutex_unlock(&h->slow_mu);
}

void rkh_slow_done(rkd_http *h, rkh_conn *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&h->slow_mu);
    if (k->waiting)
        unlink_waiting(h, k);
    if (k->evicted == 1)
        atomic_fetch_sub(&h->evicting, 1);
    k->evicted = 0;
    pthread_mutex_unlock(&h->slow_mu);
}

int rkh_slow_evict(rkd_http *h)
{
    int done = 0;
    pthread_mutex_lock(&h->slow_mu);
    if (h->slow_head && atomic_load(&h->evicting) < EVICT_SLACK) {
        cut(h, h->slow_head, 1);
        done = 1;
    }
    pthread_mutex_unlock(&h->slow_mu);
    return done;
}

void rkh_slow_expire(rkd_http *h, const struct timespec *now)
{
    pthread_mutex_lock(&h->slow_mu);
    for (rkh_conn *k; (k = h->slow_head) != NULL;) {
        struct timespec due = {k->since.tv_sec + (time_t)h->cfg.header_timeout, k->since.tv_nsec};
        if (rkh_before(now, &due))
            break;
        cut(h, k, 2);
    }
    pthread_mutex_unlock(&h->slow_mu);
}
