/* fleet.h — rk_fleet's fleet (tests/load/rk_fleet.c): N polls, each a libcurl easy handle, driven
 * by SLICES threads through epoll (fleet_net.c); the plain requests it asks the server; and its
 * peer, the same fleet revalidating a static file from nginx (fleet_peer.c). */
#ifndef RK_FLEET_H
#define RK_FLEET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <curl/curl.h>

#include "load_fail.h"

#define SLICES          16
#define RAMP_BATCH      250 /* polls opened at once ... */
#define RAMP_EVERY_MS   50  /* ... this often: a burst of 10000 SYNs would overflow the backlog */
#define PHASE_MAX_S     120 /* bound on the ramp and on the convergence */
#define URL_MAX         1024
#define STATUS_BODY_MAX (4L << 20)
#define REFUSAL                                                                                    \
    "vnode_factor: the server's ring has vnode_factor 160 but this application expects 40"

/* An answer's ETag: "v4.<store id>.<fingerprint>" with the quotes, and its version (0: none). */
typedef struct etag {
    long version;
    char tag[64];
} etag;

/* One client of the fleet: its long poll and what it got. */
typedef struct poller {
    CURL *easy;                 /* the poll */
    struct curl_slist *headers; /* If-None-Match, RK-Client, RK-Refused */
    etag got;                   /* the answer's */
    long status;                /* the answer's; 1000 + the CURLcode when there was none */
    long body_bytes;            /* bytes of body received, all rounds */
    double done_at;             /* CLOCK_MONOTONIC seconds of the answer; 0 while held */
    int again;                  /* it polls again after its answer (step 4) */
    etag again_got;             /* that poll's answer, if any comes */
    long connects;              /* connections its last request opened (0: it reused one) */
    long port;                  /* the local port of its last request's connection */
} poller;

typedef struct fleet fleet;

/* A thread's share of the polls, on its own multi handle. */
typedef struct slice {
    fleet *f;
    long from, to;    /* its pollers */
    CURLM *multi;     /* owned */
    int ep;           /* epoll set of its sockets and of `wake`, owned */
    int wake;         /* eventfd, owned: slices_wave() writes it */
    long wave;        /* the last fleet wave it ran */
    double due;       /* when libcurl wants its timeout action (CLOCK_MONOTONIC s); 0: never */
    pthread_t thread; /* drives it */
} slice;

struct fleet {
    const char *url, *cluster;
    const char
        *peer_file; /* --peer-file: the file nginx serves (fleet_peer.c); NULL: ringkeeperd */
    long n, pid, rss_max, refusers;
    poller *p;
    slice s[SLICES];
    etag before;         /* the ring the fleet held before the activation */
    int repoll;          /* answered 200: poll again (step 4); set while no slice runs */
    atomic_long done;    /* polls answered */
    atomic_long ended;   /* polls again of step 4 that ended before they were stopped */
    atomic_long end_why; /* the last one's HTTP status, or 1000 + its CURLcode */
    atomic_int stop;     /* the slices stop now */
    atomic_long wave;    /* bumped by slices_wave(): each slice adds all of its polls again */
    int failures;        /* FAIL lines printed */
};

/* Plain text of an answer, kept by request(). */
typedef struct text {
    char *data;
    size_t len;
} text;

double now_s(void);
/* qsort's order of doubles. */
int by_time(const void *a, const void *b);
/* CPU time `pid` used so far, user and system, in seconds; 0 when unreadable. */
double cpu_s(long pid);
/* The same for `pid` and its children (nginx's master and its workers). */
double cpu_tree_s(long pid);
/* VmRSS of `pid` in KiB, 0 when unreadable. */
long rss_kb(long pid);
/* `method` `path` (under --url) with `body` (or NULL): the status, the body into *out (free it),
 * the ETag into *tag (may be NULL); 0 when there was no answer. */
long request(const fleet *f, const char *method, const char *path, const char *body, text *out,
             etag *tag);
/* How many polls the server holds, and how many clients it counts at `version`. */
void server_counts(const fleet *f, long version, long *held, long *counted);
/* Sets poll `i` up, with no answer yet, as client fleet-<i> holding `tag`, waiting `wait` s,
 * refusing `refused` (NULL: none): 0, or -1 when out of memory. */
int poller_init(fleet *f, long i, const char *tag, int wait, const char *refused);
/* Sets poll `i` up, with no answer yet, as a plain GET of `url`, with If-None-Match: `tag` (NULL:
 * none), on a connection of its own when `fresh` (one kept from an earlier request otherwise): 0,
 * or -1 when out of memory. */
int peer_init(fleet *f, long i, const char *url, const char *tag, int fresh);
/* Prints when the polls were answered, `t0` the start of the wave; returns when the last was (s
 * after t0; PHASE_MAX_S when one was not). */
double answer_times(const fleet *f, double t0);
/* Starts the slices, which open their polls (RAMP_BATCH every RAMP_EVERY_MS) and drive them: 0,
 * or -1 when one could not be started. */
int slices_start(fleet *f);
/* Has each slice add all of its polls again at once, on its own thread (they are set up, none
 * running): 0, or -1 when a slice could not be woken. */
int slices_wave(fleet *f);
/* Stops and joins the slices (their connections close), ready for the next round. */
void slices_stop(fleet *f);
void pollers_free(fleet *f);
/* rk_fleet --peer-file (fleet_peer.c): 0 when every check passed, 1 with FAIL lines. */
int peer_run(fleet *f);

#endif
