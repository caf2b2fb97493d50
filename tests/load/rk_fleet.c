/* rk_fleet.c: a fleet of N clients long-polling one cluster of a ringkeeperd on loopback, each
 * with its own RK-Client id, then one activation: how much server memory a held client costs, and
 * how long until the fleet report counts the last client holding the new ring (tests/load/
 * test_fleet.sh; figures in docs/PERFORMANCE.md, "A fleet converging").
 *
 * rk_fleet --url URL --cluster C --clients N --pid SERVER_PID [--rss-per-client BYTES]
 *   1. GETs the ring of C (it must have an active version V) for its ETag;
 *   2. opens N long polls (?wait=60, If-None-Match: that ETag, RK-Client: fleet-<i>) with libcurl's
 *      multi interface on SLICES threads, each driving its share through epoll and
 *      curl_multi_socket_action (curl_multi_poll costs O(its transfers) per turn: with 1250 each,
 *      the fleet's own poll(2) calls were most of its time, and it read the last answers 300 ms
 *      after the server had sent them), RAMP_BATCH every
 *      RAMP_EVERY_MS, and waits until the server holds all N (ringkeeper_long_polls_waiting) and
 *      counts them at V (ringkeeper_clients);
 *   3. reads the server's VmRSS before and with the N held (and again in step 5);
 *   4. publishes and activates version V+1 (?activate=true) and times, from sending it, the answer
 *      of each poll; a client answered polls again at once, as the library does once it verified
 *      the ring: If-None-Match V+1, or, for the first K (--refusers, default 0), If-None-Match V
 * and RK-Refused V+1; meanwhile GET .../clients is asked over and over until it counts N-K clients
 * holding V+1 and K holding V and refusing: that time is the fleet's;
 *   5. checks: every poll answered 200 with V+1, the count above reached (the K refusers were sent
 *      V+1 and are counted at V: a ring sent is not a ring held), the RSS per held client at most
 *      BYTES (default RSS_PER_CLIENT_MAX), with the polls held and again once every client polls
 *      again after the wave (its connection has then served a request), and, once the fleet closed
 * its connections with their polls held, that the server lets go of them within GONE_MAX_S; times
 * what a client's own verification of the ring costs (parse, build, fingerprint), which each client
 * of a real fleet pays on its own CPU;
 *   6. CONFIRM_ROUNDS rounds of one more request of every client (SPEC 9, "Clients"): the first K
 *      still hold V and refuse V+1 (RK-Refused, a 1 s poll), the others
 *      hold V+1 (no wait); every answer must be a 304, and the bytes of ring sent to the refusers
 *      must stay 0; after each round GET .../clients counts N-K at V+1, K at V, K refusing, and
 *      converged only when K is 0.
 *
 * rk_fleet --url URL --peer-file PATH --clients N --pid NGINX_PID: the peer of the fan-out
 * (fleet_peer.c, tests/bench/bench_fanout.sh): the same fleet on the same threads revalidates the
 * file PATH, which nginx serves at URL/<its name>, each client on its own kept-alive connection.
 * Prints the figures; exit 0 when every check passed, 1 with "FAIL: ..." lines, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fleet.h"
#include "ringkeeper.h"

#define MAX_CLIENTS        50000
#define CHECK_EVERY_S      0.5 /* how often the ramp asks the server how many it holds */
#define REPORT_EVERY_MS    2   /* how often the fleet report is asked while the fleet converges */
#define VERIFY_ROUNDS      51  /* verifications of the ring timed (the median is printed) */
#define GONE_MAX_S         10  /* bound on the server letting go of the polls of clients gone */
#define RSS_PER_CLIENT_MAX 65536L
#define CONFIRM_ROUNDS     3
#define NEW_TOPOLOGY                                                                               \
    "{\"hash\":\"fnv1a_32\",\"vnode_factor\":160,\"nodes\":[{\"id\":\"f1\",\"addr\":\"10.9.0.1:"   \
    "1\","                                                                                         \
    "\"weight\":1},{\"id\":\"f2\",\"addr\":\"10.9.0.2:1\",\"weight\":1}]}"

/* Waits until the server holds the N polls and counts them at `version`. */
static int ramp(fleet *f, long version)
{
    long held = -1, counted = -1;
    double start = now_s();
    while (now_s() < start + PHASE_MAX_S && atomic_load(&f->done) == 0) {
        struct timespec pause = {0, (long)(CHECK_EVERY_S * 1e9)};
        nanosleep(&pause, NULL);
        server_counts(f, version, &held, &counted);
        if (held == f->n && counted == f->n)
            break;
    }
    long early = atomic_load(&f->done);
    printf("ramp: %ld polls opened in %.1f s; the server holds %ld and counts %ld at v%ld\n", f->n,
           now_s() - start, held, counted, version);
    if (held != f->n || counted != f->n || early)
        fail(&f->failures,
             "the server should hold and count %ld polls at v%ld (%ld answered early)", f->n,
             version, early);
    return held == f->n && counted == f->n && !early ? 0 : -1;
}

/* Waits until the server holds every poll again after the wave (each client polled again once it
 * had the new ring); 0 when it does. */
static int held_again(fleet *f, long version)
{
    long held = -1, counted = -1;
    double start = now_s();
    struct timespec pause = {0, (long)(CHECK_EVERY_S * 1e9)};
    while (held != f->n && now_s() < start + PHASE_MAX_S) {
        server_counts(f, version, &held, &counted);
        if (held != f->n)
            nanosleep(&pause, NULL);
    }
    if (held != f->n)
        fail(&f->failures, "the server should hold the %ld polls again, holds %ld", f->n, held);
    return held == f->n ? 0 : -1;
}

/* Prints the server's RSS per held client and checks it against --rss-per-client. Read twice: with
 * the polls held on fresh connections, then again after the wave, when every connection has served
 * a request: libmicrohttpd then zeroes all of its pool (ringkeeperd's --header-buffer), so the
 * second figure is what a fleet costs from its first activation on. */
static void rss_per_client(fleet *f, long before, const char *when)
{
    long now = rss_kb(f->pid), per = (now - before) * 1024 / f->n;
    printf("server RSS: %ld KiB before, %ld KiB %s: %ld bytes per client\n", before, now, when,
           per);
    if (per > f->rss_max)
        fail(&f->failures, "RSS per held client %s should be at most %ld bytes, got %ld", when,
             f->rss_max, per);
}

/* What GET .../clients counts after the activation of `version`. */
typedef struct report {
    long status, total, at, before, refusing;
    int converged;
} report;

static report fleet_report(const fleet *f, long version)
{
    char path[URL_MAX], v[24], before[24];
    text t = {0};
    report r = {0};
    snprintf(path, sizeof path, "/v1/clusters/%s/clients?limit=1", f->cluster);
    r.status = request(f, "GET", path, NULL, &t, NULL);
    json_t *doc = json_loads(t.data ? t.data : "", 0, NULL);
    json_t *s = json_object_get(doc, "summary"), *by = json_object_get(s, "by_version");
    snprintf(v, sizeof v, "%ld", version);
    snprintf(before, sizeof before, "%ld", version - 1);
    r.at = (long)json_integer_value(json_object_get(by, v));
    r.before = (long)json_integer_value(json_object_get(by, before));
    r.refusing = (long)json_integer_value(json_object_get(s, "refusing"));
    r.total = (long)json_integer_value(json_object_get(s, "total"));
    r.converged = json_is_true(json_object_get(s, "converged"));
    json_decref(doc);
    free(t.data);
    return r;
}

/* The report says every client answered: N-K hold `version`, the K refusers the one before. */
static int report_complete(const fleet *f, const report *r)
{
    return r->status == 200 && r->total == f->n && r->at == f->n - f->refusers &&
           r->before == f->refusers && r->refusing == f->refusers &&
           r->converged == (f->refusers == 0);
}

/* Step 5: the fleet closed its connections, its polls held: the server must let them go (and
 * free their slots) within GONE_MAX_S, not at their deadline. */
static void check_gone(fleet *f, long version)
{
    long held = -1, counted = -1;
    double t0 = now_s();
    struct timespec pause = {0, 50 * 1000 * 1000};
    for (server_counts(f, version, &held, &counted); held != 0 && now_s() < t0 + GONE_MAX_S;
         server_counts(f, version, &held, &counted))
        nanosleep(&pause, NULL);
    printf("the fleet closed its connections: the server holds %ld of their polls after %.1f s\n",
           held, now_s() - t0);
    if (held != 0)
        fail(&f->failures, "the server should let go of the polls of clients gone within %d s",
             GONE_MAX_S);
}

/* Checks GET .../clients after the activation of `version` (see report_complete). */
static void check_clients(fleet *f, long version)
{
    report r = fleet_report(f, version);
    printf("clients: %ld counted, %ld holding v%ld, %ld holding v%ld, %ld refusing, converged "
           "%s\n",
           r.total, r.at, version, r.before, version - 1, r.refusing,
           r.converged ? "true" : "false");
    if (!report_complete(f, &r))
        fail(&f->failures,
             "GET clients should count %ld: %ld holding v%ld, %ld holding v%ld, %ld refusing", f->n,
             f->n - f->refusers, version, f->refusers, version - 1, f->refusers);
}

/* Prints when the polls were answered, `t0` the activation's; counts those not answered 200 with
 * `version`. */
static void answers(fleet *f, long version, double t0)
{
    long wrong = 0;
    for (long i = 0; i < f->n; i++)
        wrong += f->p[i].status != 200 || f->p[i].got.version != version;
    answer_times(f, t0);
    if (wrong)
        fail(&f->failures, "%ld of %ld polls were not answered 200 with v%ld", wrong, f->n,
             version);
}

/* Activates V+1 (publishing it), asks the fleet report until it counts every client as step 4
 * says, then until every poll is answered; prints the times. */
static void converge(fleet *f, long version)
{
    char path[URL_MAX];
    text t = {0};
    report r = {0};
    snprintf(path, sizeof path, "/v1/clusters/%s/versions?activate=true", f->cluster);
    double cpu0 = cpu_s(f->pid), own0 = cpu_s((long)getpid()), t0 = now_s();
    long status = request(f, "POST", path, NEW_TOPOLOGY, &t, NULL);
    double acked = now_s() - t0, held = 0;
    json_t *doc = json_loads(t.data ? t.data : "", 0, NULL);
    long new_version = (long)json_integer_value(json_object_get(doc, "version"));
    json_decref(doc);
    free(t.data);
    if (status != 201 || new_version != version + 1) {
        fail(&f->failures, "the activation of v%ld should be 201, got %ld (version %ld)",
             version + 1, status, new_version);
        return;
    }
    struct timespec pause = {0, REPORT_EVERY_MS * 1000 * 1000};
    while (!held && now_s() < t0 + PHASE_MAX_S) {
        r = fleet_report(f, version + 1);
        held = report_complete(f, &r) ? now_s() - t0 : 0;
        nanosleep(&pause, NULL);
    }
    double cpu = cpu_s(f->pid) - cpu0, own = cpu_s((long)getpid()) - own0;
    while (atomic_load(&f->done) < f->n && now_s() < t0 + PHASE_MAX_S)
        nanosleep(&pause, NULL);
    printf("activation: v%ld acknowledged after %.1f ms; the fleet report counts every client "
           "holding it (the %ld refusers refusing) after %.1f ms; the server's CPU meanwhile "
           "%.0f ms, %.1f us per client (the fleet's own %.0f ms)\n",
           version + 1, acked * 1e3, f->refusers, held * 1e3, cpu * 1e3, cpu * 1e6 / f->n,
           own * 1e3);
    answers(f, version + 1, t0);
    if (!held)
        fail(&f->failures, "the fleet report never counted every client as it holds");
    if (atomic_load(&f->ended))
        fail(&f->failures,
             "%ld polls again ended while they should be held (the last: %ld, an HTTP status, "
             "or 1000 + a CURLcode)",
             atomic_load(&f->ended), atomic_load(&f->end_why));
}

/* The median cost of a client's own checks of the ring now active (a real fleet's clients pay it
 * each on its own CPU, after the answer and before polling again): parse, build, fingerprint. */
static void time_verification(fleet *f)
{
    char path[URL_MAX];
    double took[VERIFY_ROUNDS];
    text t = {0};
    int bad = 0;
    snprintf(path, sizeof path, "/v1/clusters/%s/ring", f->cluster);
    long status = request(f, "GET", path, NULL, &t, NULL);
    for (int i = 0; i < VERIFY_ROUNDS; i++) {
        double t0 = now_s();
        json_t *doc = json_loadb(t.data ? t.data : "", t.len, JSON_REJECT_DUPLICATES, NULL);
        rk_topology *topo = rk_topology_from_json(doc, NULL);
        rk_ring *ring = topo ? rk_ring_build(topo, NULL) : NULL;
        const char *want = json_string_value(json_object_get(doc, "fingerprint"));
        bad += !ring || !want || strcmp(rk_ring_fingerprint_hex(ring), want) != 0;
        rk_ring_free(ring);
        rk_topology_free(topo);
        json_decref(doc);
        took[i] = now_s() - t0;
    }
    qsort(took, VERIFY_ROUNDS, sizeof *took, by_time);
    printf("a client's verification of the ring (%zu bytes): %.1f us (median of %d)\n", t.len,
           took[VERIFY_ROUNDS / 2] * 1e6, VERIFY_ROUNDS);
    if (status != 200 || bad)
        fail(&f->failures, "GET %s should be 200 with a ring that verifies (status %ld, %d failed)",
             path, status, bad);
    free(t.data);
}

/* One round of one more request of every client after the activation of `now` (see the head). */
static void confirm_round(fleet *f, const etag *old, const etag *now, int round)
{
    long refusers_bytes = 0, not_304 = 0;
    for (long i = 0; i < f->n; i++) {
        int refuses = i < f->refusers;
        if (poller_init(f, i, refuses ? old->tag : now->tag, refuses, refuses ? now->tag : NULL)) {
            fail(&f->failures, "out of memory for poll %ld", i);
            return;
        }
    }
    double t0 = now_s();
    if (slices_start(f) != 0) {
        fail(&f->failures, "cannot start the threads of the fleet");
        return;
    }
    struct timespec pause = {0, 10 * 1000 * 1000};
    while (atomic_load(&f->done) < f->n && now_s() < t0 + PHASE_MAX_S)
        nanosleep(&pause, NULL);
    slices_stop(f);
    for (long i = 0; i < f->n; i++) {
        not_304 += f->p[i].status != 304;
        refusers_bytes += i < f->refusers ? f->p[i].body_bytes : 0;
    }
    printf("round %d: %ld requests in %.1f s, %ld not answered 304; ring bytes sent to the %ld "
           "refusers since they refused: %ld\n",
           round, f->n, now_s() - t0, not_304, f->refusers, refusers_bytes);
    if (not_304)
        fail(&f->failures, "round %d: %ld of %ld requests were not answered 304", round, not_304,
             f->n);
    if (refusers_bytes)
        fail(&f->failures, "round %d: the refusers were sent %ld bytes of the ring they refused",
             round, refusers_bytes);
    check_clients(f, now->version);
}

static int run(fleet *f)
{
    etag active = {0};
    text t = {0};
    char path[URL_MAX];
    snprintf(path, sizeof path, "/v1/clusters/%s/ring", f->cluster);
    long status = request(f, "GET", path, NULL, &t, &active);
    long version = active.version;
    free(t.data);
    if (status != 200 || version < 1) {
        fail(&f->failures, "GET %s should be 200 with an ETag, got %ld", path, status);
        return 1;
    }
    for (long i = 0; i < f->n; i++) {
        if (poller_init(f, i, active.tag, 60, NULL) != 0) {
            fail(&f->failures, "out of memory for poll %ld", i);
            return 1;
        }
    }
    long before = rss_kb(f->pid);
    f->before = active;
    f->repoll = 1;
    if (slices_start(f) != 0) {
        fail(&f->failures, "cannot start the threads of the fleet");
        return 1;
    }
    if (ramp(f, version) != 0)
        return 1;
    rss_per_client(f, before, "with the polls held");
    converge(f, version);
    if (held_again(f, version + 1) == 0)
        rss_per_client(f, before, "with them held again, after the wave");
    slices_stop(f);
    f->repoll = 0;
    check_gone(f, version + 1);
    check_clients(f, version + 1);
    time_verification(f);
    etag now = f->p[0].got;
    for (long i = 0; i < f->refusers; i++)
        f->p[i].body_bytes =
            0; /* the ring they are about to refuse came once: what follows counts */
    for (int round = 1; round <= CONFIRM_ROUNDS && now.version == version + 1; round++)
        confirm_round(f, &active, &now, round);
    return f->failures ? 1 : 0;
}

/* ---- options ---- */

static int usage(void)
{
    fprintf(stderr,
            "usage: rk_fleet --url URL --cluster C --clients N (1..%d) --pid SERVER_PID\n"
            "                [--rss-per-client BYTES (default %ld)] [--refusers K (default 0)]\n"
            "       rk_fleet --url URL --peer-file PATH --clients N --pid NGINX_PID\n",
            MAX_CLIENTS, RSS_PER_CLIENT_MAX);
    return 2;
}

/* A whole number in lo..hi into *out: 0, or -1. */
static int number(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(fleet *f, int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        int bad = 0;
        if (strcmp(k, "--url") == 0)
            f->url = v;
        else if (strcmp(k, "--cluster") == 0)
            f->cluster = v;
        else if (strcmp(k, "--peer-file") == 0)
            f->peer_file = v;
        else if (strcmp(k, "--clients") == 0)
            bad = number(v, 1, MAX_CLIENTS, &f->n);
        else if (strcmp(k, "--pid") == 0)
            bad = number(v, 1, 1L << 30, &f->pid);
        else if (strcmp(k, "--rss-per-client") == 0)
            bad = number(v, 1, 1L << 30, &f->rss_max);
        else if (strcmp(k, "--refusers") == 0)
            bad = number(v, 0, MAX_CLIENTS, &f->refusers);
        else
            bad = 1;
        if (bad)
            return -1;
    }
    return argc % 2 == 1 && f->url && !f->cluster != !f->peer_file && f->n && f->pid &&
                   f->refusers <= f->n
               ? 0
               : -1;
}

int main(int argc, char **argv)
{
    fleet f = {.rss_max = RSS_PER_CLIENT_MAX};
    if (parse_args(&f, argc, argv) != 0)
        return usage();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    atomic_init(&f.done, 0);
    atomic_init(&f.stop, 0);
    atomic_init(&f.wave, 0);
    f.p = calloc((size_t)f.n, sizeof *f.p);
    int rc = !f.p ? 1 : f.peer_file ? peer_run(&f) : run(&f);
    if (f.p) {
        slices_stop(&f);
        pollers_free(&f);
    }
    free(f.p);
    curl_global_cleanup();
    printf("%s\n", rc ? "FAILED" : "ok");
    return rc;
}
