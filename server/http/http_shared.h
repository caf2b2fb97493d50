/* http_shared.h — what the files of ringkeeperd's HTTP front share (http.c: the daemon and its
 * connections; http_poll.c: long polls and their timer; http_slow.c: connections owing headers;
 * http_request.c: each request, its body, its auth, the pool and the log): the state of the server
 * and of a request, and the calls from one file to another. Not used outside server/http*.c. */
#ifndef RKD_HTTP_SHARED_H
#define RKD_HTTP_SHARED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "http.h"
#include "http_budget.h"

#define TICK_MS 1000 /* longest sleep of the long-poll timer when no deadline is nearer */
/* Its shortest: 10,000 polls held with as many deadlines would wake it 10,000 times per period,
 * each waking a walk of the whole list; a poll answered 10 ms late costs nobody anything. */
#define TICK_MIN_NS      (10 * 1000 * 1000)
#define RETRY_AFTER_BUSY 2 /* seconds, in a 503 busy: bodies or polls at their bound */

/* Kernel socket buffers (SO_SNDBUF, SO_RCVBUF; Linux books twice the figure). Left to the kernel's
 * autotuning, 1000 clients that asked for a 5.9 MB ring and never read it queued 2.1 GB in
 * ringkeeperd's sockets (net.ipv4.tcp_mem's limit) and /healthz stalled 1.5 s. Capped, a connection
 * queues at most 2 * SNDBUF_FAST while it sends an answer of the send budget (cfg.send_budget; the
 * 5.9 MB ring in 9 ms on loopback), else 2 * SNDBUF_SLOW (the same in 3 s; 4 KiB took /healthz's
 * p99 to 44 ms), and a held long poll or a queued request, which is not read from meanwhile, keeps
 * at most 2 * RCVBUF_HELD of what its client sends. */
#define SNDBUF_FAST (64 * 1024)
#define SNDBUF_SLOW (16 * 1024)
#define RCVBUF_OPEN (64 * 1024) /* a 5.9 MB publish reads as fast as with autotuning */
#define RCVBUF_HELD 4096
/* A handler that worked this long (a plan, a big publish) may have freed hundreds of MiB that glibc
 * keeps in its thread's arena: 28 plans of 10000 nodes left RSS at 720 MiB from 324 MiB for good.
 * malloc_trim after it returns them (RSS back to 139 MiB) for 12 ms (73 ms at most) of its pool
 * thread; a quick request never pays it. */
#define TRIM_AFTER_S 0.1
/* Thousands of connections that came and went (a flood of polls or readers, a fleet reconnecting)
 * leave their freed pools spread over the heaps of MHD's threads, where glibc keeps them: RSS
 * stayed at 117 MiB from 36 MiB after CI's attack phase. The timer trims once that many have
 * closed. */
#define TRIM_AFTER_CLOSES 256

/* Blocks of this size or more come from mmap and go back to the system when freed. glibc's own
 * threshold rises to the largest block freed so far (up to 32 MiB), after which big response bodies
 * (a 15 MiB plan, freed by MHD's thread after sending) stay in the heap: 19 plans left RSS at
 * 156 MiB from 90 MiB. */
#define MMAP_FROM (1 << 20)

/* A long poll held by MHD_suspend_connection until an activation (or for a watcher of changes,
 * any change) of its cluster, or its deadline. */
enum { RKH_RING = 0, RKH_CHANGES = 1 }; /* the two lists of waiters, by what wakes them */

typedef struct waiter {
    struct waiter *next;           /* in rkd_http.waiters[kind] */
    struct MHD_Connection *conn;   /* suspended connection */
    char cluster[RKD_CLUSTER_MAX]; /* woken by an activation of this cluster */
    struct timespec deadline;      /* CLOCK_MONOTONIC */
    struct rkh_conn *sock;         /* its connection's state if in rkd_http.gone, else NULL */
    int gone;                      /* its client closed the connection: answer now */
} waiter;

/* What the front keeps of a connection for its life (libmicrohttpd's socket context), so that a
 * client that polls again and again pays once, not on every poll, for its place in the set of
 * leaving clients and for its small receive buffer: four syscalls per poll answered and held
 * again (an epoll_ctl and a setsockopt each way), 40,000 for a fleet of 10,000. */
typedef struct rkh_conn {
    struct waiter *held; /* its poll while held; under rkd_http.mu */
    int fd;              /* its socket */
    int watched;         /* in rkd_http.gone (from a hold until its client leaves); under mu */
    int rcvbuf_small;    /* SO_RCVBUF is RCVBUF_HELD; only its libmicrohttpd thread uses it */
    /* Under rkd_http.slow_mu (http_slow.c): */
    struct rkh_conn *prev, *next; /* in the list of connections owing a request's headers */
    struct timespec since;        /* CLOCK_MONOTONIC: when it began to owe them */
    int waiting;                  /* in that list */
    int evicted;                  /* shut down: 1 to make room for a new one, 2 past its time */
} rkh_conn;

/* Connections shut down to make room for new ones and not closed yet, at most: libmicrohttpd's own
 * limit leaves room for them above --max-connections. */
#define EVICT_SLACK 64

#define WHY_MAX 240 /* bytes of a 5xx answer's error body kept for its log line */

/* Per-request state (MHD's *req_cls): made on the first call, freed when the request completes. */
typedef struct req_state {
    struct rkd_http *h;    /* its server */
    struct timespec start; /* CLOCK_MONOTONIC, for the log and the latency histogram */
    char method[16];       /* for the log line */
    char path[256];        /* for the log line, cut */
    char author[72];       /* token name for writes and reads that send one, "-" for other reads */
    unsigned lacks;        /* the roles its token lacks (rkd_request.lacks) */
    int client;            /* its token has the client role (rkd_request.client_token) */
    char addr[64];         /* the client's numeric address (LOG_ADDR_BYTES), or "-" */
    char *body;            /* request body so far */
    size_t len, cap;       /* its length and allocation */
    int too_big;           /* the body passed the cap: answered 413, the rest is dropped */
    int discard;           /* no route reads this body: dropped unread, never buffered */
    size_t taken;          /* bytes of the body budget this request holds: its body's room */
    size_t sending;        /* bytes of the send budget its answer holds (2 * SNDBUF_FAST or 0) */
    int waiting;           /* a long poll: held at least once, `w.deadline` is its end */
    waiter w;              /* the long-poll registration while held */
    int status;            /* answered status, for the log */
    size_t bytes;          /* answered body bytes, for the log */
    char *why;             /* a 5xx answer's error body (cut to WHY_MAX), for the log: the
                              operator's first clue; NULL for other answers */
    const char *route;     /* route pattern, for metrics */
    int pooled;            /* 1: queued for or running on the pool; 2: answered there, in `out` */
    int cors;              /* its Origin is one of --allow-origin: 1, 2 for its preflight */
    rkd_response *out;     /* the pool's answer, sent by MHD's thread once resumed; allocated
                              only for a pooled request (a held poll, which is not, is the most
                              numerous state: 10,000 of them for a fleet) */
    struct MHD_Connection *conn; /* resumed by the pool */
    struct req_state *next_job;  /* in rkd_http.jobs */
} req_state;

struct rkd_http {
    struct MHD_Daemon *d;         /* the daemon */
    rkd_http_config cfg;          /* as started */
    unsigned port;                /* bound port */
    int listen_fd;                /* the listening socket (listen_socket), closed after MHD stops */
    atomic_long inflight;         /* requests started and not completed */
    atomic_long connections;      /* connections open now, for the --max-connections check */
    atomic_long held;             /* of them, held long polls: not counted against it */
    atomic_long closed;           /* connections closed since the start, for TRIM_AFTER_CLOSES */
    rkd_budget *bodies;           /* request body bytes buffered, cfg.body_budget in all */
    rkd_budget *sends;            /* kernel send buffers of answers sent fast, cfg.send_budget */
    _Atomic uint64_t wakes[2];    /* activations, changes: a hold sees any it missed */
    atomic_long listed[2];        /* waiters in each list (or about to be), read by a wake
                                     without mu (wake_now) */
    pthread_mutex_t mu;           /* guards waiters and stopping */
    pthread_cond_t cv;            /* wakes the timer thread */
    waiter *waiters[2];           /* held long polls: of rings (RKH_RING), of changes (a few
                                     consoles, apart so that a change never walks the fleet's) */
    int stopping;                 /* the timer thread exits */
    int gone;                     /* epoll set of the held sockets: their clients leaving */
    pthread_t timer;              /* resumes long polls whose deadline passed */
    struct timespec timer_due;    /* when it wakes next, under mu: a hold wakes it only if its
                                     deadline is sooner (each hold had made it walk every poll) */
    atomic_int started;           /* MHD's own messages are printed from then on (mhd_log) */
    pthread_mutex_t jobs_mu;      /* guards jobs, jobs_tail and pool_stopping */
    pthread_cond_t jobs_cv;       /* wakes the pool */
    req_state *jobs, **jobs_tail; /* requests waiting for the pool, oldest first */
    int pool_stopping;            /* the pool exits once the queue is empty */
    pthread_t *pool;              /* cfg.threads threads that answer what may work for long */
    unsigned pool_started;        /* how many of them run */
    pthread_mutex_t slow_mu;      /* guards the list below and its rkh_conn fields */
    rkh_conn *slow_head;          /* connections owing a request's headers, oldest first */
    rkh_conn *slow_tail;
    atomic_long evicting; /* of them, shut down for a newcomer and not closed yet */
};

static inline double rkh_elapsed(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - since->tv_sec) + (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

static inline int rkh_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Sets SO_SNDBUF or SO_RCVBUF (`which`) of the connection's socket to `bytes`; every file of the
 * front sizes them (a new connection, an answer sent fast, a held poll). */
static inline void rkh_set_buffer(struct MHD_Connection *c, int which, int bytes)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci) /* at worst the kernel's figure stays: a bound missed, nothing broken */
        (void)setsockopt(ci->connect_fd, SOL_SOCKET, which, &bytes, sizeof bytes);
}

/* The connection's state, NULL if there is none (out of memory at its start: its polls are then
 * ended by their deadline only, and its buffer set each time). */
static inline rkh_conn *rkh_conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* SO_RCVBUF to RCVBUF_HELD while the connection is not read (a request held or queued), back to
 * RCVBUF_OPEN when a request brings a body to read; left small in between, so a client that only
 * polls sets it once. */
static inline void rkh_set_rcvbuf(struct MHD_Connection *c, int small)
{
    rkh_conn *k = rkh_conn_of(c);
    if (k && k->rcvbuf_small == small)
        return;
    rkh_set_buffer(c, SO_RCVBUF, small ? RCVBUF_HELD : RCVBUF_OPEN);
    if (k)
        k->rcvbuf_small = small;
}

/* ---- http_poll.c ---- */

/* A connection's state, for libmicrohttpd's start and close notices (its socket context): new
 * returns NULL when out of memory; free takes it out of the set of leaving clients. */
rkh_conn *rkh_conn_new(struct MHD_Connection *c);
void rkh_conn_free(rkd_http *h, rkh_conn *k);

/* The lock, the condition and the set of leaving clients of the long polls (without a descriptor
 * for the set, a poll whose client left ends at its deadline). */
void rkh_polls_init(rkd_http *h);
void rkh_polls_deinit(rkd_http *h);

/* Holds the request until an activation of its cluster (or a change, r->wait_changes) or its
 * deadline, set by the first hold: a poll woken by an activation it already has waits on for the
 * rest of its time. Returns -1 when the server is stopping (answer at once), 1 when a wake of its
 * kind came since `seen` (look again), 2 when max_polls are held already (answer 503 busy). */
int rkh_hold(rkd_http *h, req_state *st, struct MHD_Connection *c, const rkd_response *r,
             uint64_t seen);
/* The app's wake hook (`arg` is the server): an activation (version > 0) wakes every poll of that
 * cluster, another change (version 0) its watchers of changes. On a pool thread between
 * rkh_defer_wakes and rkh_wake_deferred, the wakes wait for the latter (after the request's own
 * answer is resumed). */
void rkh_on_activation(void *arg, const char *cluster, int64_t version);
void rkh_defer_wakes(void);
void rkh_wake_deferred(rkd_http *h);
/* The timer thread: resumes polls whose deadline passed, trims after many closes. */
void *rkh_timer_main(void *arg);

/* ---- http_slow.c ---- */

/* The connection `k` (NULL: nothing is done) owes a request's headers from now on (its start, or
 * its previous answer sent): past cfg.header_timeout, rkh_slow_expire shuts it down. */
void rkh_slow_wait(rkd_http *h, rkh_conn *k);
/* It owes nothing more: its request's headers came, or it closes. */
void rkh_slow_done(rkd_http *h, rkh_conn *k);
/* At the connection limit: shuts down the connection that has owed headers longest, to make room
 * for a new one. 1 when one was, 0 when none owes any (or EVICT_SLACK are closing already). */
int rkh_slow_evict(rkd_http *h);
/* Shuts down every connection that has owed its headers for cfg.header_timeout; from the timer. */
void rkh_slow_expire(rkd_http *h, const struct timespec *now);

/* ---- http_request.c ---- */

/* Starts and stops the pool of cfg.threads threads. */
int rkh_pool_start(rkd_http *h);
void rkh_pool_free(rkd_http *h);
/* libmicrohttpd's request and completion callbacks. */
enum MHD_Result rkh_on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **req_cls);
void rkh_on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                      enum MHD_RequestTerminationCode toe);
/* Copies `in` to `out` with every byte a reader could mistake escaped as \xNN (controls, DEL,
 * bytes over 0x7f, the backslash, and in a `field` the space), cut to fit; `out` has room for 4
 * bytes per input byte plus the NUL. */
void rkh_log_escape(char *out, size_t size, const char *in, int field);

#endif
