/* watch.c — `ringkeeper watch`: a line for the cluster's active version, then one for each
 * activation, from the client library's long poll (its refresher thread: If-None-Match and
 * ?wait=S, every ring verified). The main thread only waits for a signal, a few times a second,
 * and prints what the refresher accepted; SIGINT and SIGTERM end it cleanly (exit 0). A server that
 * goes away is retried every second, said once on stderr, and given up after --timeout seconds
 * without an answer (exit 4). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define TICK_MS  200  /* how often the main thread looks at the refresher's snapshot */
#define RETRY_MS 1000 /* the refresher's pause after a failed poll */
#define MAX_WAIT 60   /* the server's longest long poll */

typedef struct {
    rk_cli_server server;
    unsigned long long count; /* --count: activations to wait for; 0: until a signal */
    unsigned long long wait;  /* --wait: seconds of one long poll */
} watch_args;

/* A line: version, fingerprint, nodes and when this watch saw it (RFC 3339, UTC); --quiet: the
 * version. */
static const rk_cli_view view = {"table", NULL, "version"};

static int print_snapshot(const rk_snapshot *s)
{
    const rk_ring *r = rk_snapshot_ring(s);
    char seen[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(seen, sizeof seen, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    json_t *doc =
        json_pack("{s:I, s:s, s:I, s:s}", "version", (json_int_t)rk_snapshot_version(s),
                  "fingerprint", rk_ring_fingerprint_hex(r), "nodes",
                  (json_int_t)rk_topology_node_count(rk_ring_topology(r)), "seen_at", seen);
    int rc = doc ? rk_cli_print_record("watch", doc)
                 : rk_cli_fail("watch", RK_EXIT_FAIL, "out of memory");
    json_decref(doc);
    return rc;
}

/* Prints the snapshot in service when its version is not *shown yet; returns 1 when it printed one,
 * -1 on a write error, else 0. */
static int show_new(rk_client *c, int64_t *shown)
{
    rk_snapshot *s = rk_client_acquire(c);
    int64_t v = s ? rk_snapshot_version(s) : 0;
    int rc = v > *shown ? (print_snapshot(s) == RK_EXIT_OK ? 1 : -1) : 0;
    if (rc == 1)
        *shown = v;
    if (s)
        rk_snapshot_release(s);
    return rc;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Follows the refresher's failures: the first one's reason on stderr, a line when a poll succeeds
 * again. Returns an exit code once they have lasted longer than --timeout, else RK_EXIT_OK. */
static int follow_failures(rk_client *c, const watch_args *a, double *since)
{
    rk_client_status st;
    rk_client_status_get(c, &st);
    if (st.last_error == RK_OK || st.last_error == RK_ECACHE) {
        if (*since > 0)
            rk_cli_fail("watch", RK_EXIT_OK, "the server answers again");
        *since = 0;
        return RK_EXIT_OK;
    }
    if (*since == 0) {
        *since = now_s();
        rk_cli_fail("watch", RK_EXIT_OK, "%s; retrying every %d s for up to %llu s (--timeout)",
                    st.last_message, RETRY_MS / 1000, a->server.timeout);
    }
    if (now_s() - *since <= (double)a->server.timeout)
        return RK_EXIT_OK;
    rk_error err = {0};
    rk_error_set(&err, st.last_error, NULL, "%s (failing for over %llu s: gave up)",
                 st.last_message, a->server.timeout);
    return rk_cli_client_failed("watch", NULL, &err);
}

/* Until a signal, --count activations, a write error or a lasting failure; returns an exit code. */
static int follow(rk_client *c, const watch_args *a, const sigset_t *stop, int64_t shown)
{
    struct timespec tick = {0, TICK_MS * 1000000L};
    double since = 0;
    unsigned long long seen = 0;
    int rc = RK_EXIT_OK;
    while (rc == RK_EXIT_OK && (a->count == 0 || seen < a->count)) {
        if (sigtimedwait(stop, NULL, &tick) > 0)
            break;
        int printed = show_new(c, &shown);
        seen += printed == 1;
        rc = printed < 0 ? RK_EXIT_FAIL : follow_failures(c, a, &since);
    }
    return rc;
}

static int parse_args(const rk_cli_cmd *cmd, int argc, char **argv, watch_args *a)
{
    const rk_cli_option opts[] = {
        RK_CLI_OPT("count", RK_CLI_NUMBER, &a->count, .lo = 1, .hi = 1000000),
        RK_CLI_OPT("wait", RK_CLI_NUMBER, &a->wait, .lo = 1, .hi = MAX_WAIT),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    return rc ? rc : rk_cli_server_check(cmd->name, &a->server);
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    watch_args a = {.wait = 30};
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    /* blocked here, so in every thread started from now on: only sigtimedwait takes them */
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    rk_client_config cfg = {.server = a.server.url,
                            .cluster = a.server.cluster,
                            .token = a.server.token,
                            .ca_file = a.server.ca_file,
                            .timeout_ms = (long)a.server.timeout * 1000};
    rk_error err = {0};
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c)
        return rk_cli_client_failed(cmd->name, NULL, &err);
    int64_t shown = 0;
    if (rk_client_fetch(c, &err) != RK_OK)
        rc = rk_cli_client_failed(cmd->name, c, &err);
    else if (show_new(c, &shown) < 0)
        rc = RK_EXIT_FAIL;
    else if (rk_client_start_refresher(c, (unsigned)a.wait, RETRY_MS, &err) != RK_OK)
        rc = rk_cli_client_failed(cmd->name, c, &err);
    else
        rc = follow(c, &a, &stop, shown);
    rk_client_free(c); /* stops the refresher, aborting its long poll */
    return rc;
}

const rk_cli_cmd rk_cli_watch = {
    "watch", run,
    "usage: ringkeeper watch --server URL --cluster C [--count N] [--wait S] [-o table|json]\n"
    "                        [--quiet] [--timeout S]\n"
    "\n"
    "Prints a line for the active version of cluster C, then one for each activation, as the\n"
    "server announces it (a long poll, each ring verified like lookup's). A line is\n"
    "\n"
    "  version=7 fingerprint=dbb9f9d3244ab4f7 nodes=5 seen_at=2026-01-02T03:04:05Z\n"
    "\n"
    "seen_at being when this watch saw it (UTC). -o json prints the same fields as one JSON "
    "object\n"
    "a line; --quiet only the version. Activations closer together than one poll may show as one\n"
    "line, the newest. Runs until SIGINT or SIGTERM (exit 0), or --count activations.\n"
    "\n"
    "When the server goes away, the reason is printed once on stderr and the poll retried every\n"
    "second; after --timeout seconds without an answer, watch gives up (exit 4; a refusal such as\n"
    "an unknown cluster, exit 2). It starts only when the cluster has an active version.\n"
    "\n"
    "  --count N      exit 0 after N activations (the first line does not count), 1..1000000\n"
    "  --wait S       seconds one long poll waits for a change, 1..60 (default "
    "30)\n" RK_CLI_OUTPUT_HELP("table") READ_OPTIONS_HELP,
    NULL, NULL};
