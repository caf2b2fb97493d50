/* fleet.h — rk_fleet's fleet (tests/load/rk_fleet.c): N polls, each a libcurl easy handle, driven
 * by SLICES threads through epoll (fleet_net.c); and the plain requests it asks the server. */
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
} poller;

typedef struct fleet fleet;

/* A thread's share of the polls, on its own multi handle. */
typedef struct slice {
    fleet *f;
    long from, to;    /* its pollers */
    CURLM *multi;     /* owned */
    int ep;           /* epoll set of its sockets, owned */
    double due;       /* when libcurl wants its timeout action (CLOCK_MONOTONIC s); 0: never */
    pthread_t thread; /* drives it */
} slice;

struct fleet {
    const char *url, *cluster;
    long n, pid, rss_max, refusers;
    poller *p;
    slice s[SLICES];
    etag before;         /* the ring the fleet held before the activation */
    int repoll;          /* answered 200: poll again (step 4); set while no slice runs */
    atomic_long done;    /* polls answered */
    atomic_long ended;   /* polls again of step 4 that ended before they were stopped */
    atomic_long end_why; /* the last one's HTTP status, or 1000 + its CURLcode */
    atomic_int stop;     /* the slices stop now */
    int failures;        /* FAIL lines printed */
};

/* Plain text of an answer, kept by request(). */
typedef struct text {
    char *data;
    size_t len;
} text;

double now_s(void);
/* CPU time `pid` used so far, user and system, in seconds; 0 when unreadable. */
double cpu_s(long pid);
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
/* Starts the slices, which open their polls (RAMP_BATCH every RAMP_EVERY_MS) and drive them: 0,
 * or -1 when one could not be started. */
int slices_start(fleet *f);
/* Stops and joins the slices (their connections close), ready for the next round. */
void slices_stop(fleet *f);
void pollers_free(fleet *f);

#endif
