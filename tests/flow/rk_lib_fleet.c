/* rk_lib_fleet.c — N real libringkeeper clients in one process, for the cutover flow test
 * (tests/flow/test_flow.sh): what a fleet of applications does during a cutover, seen from inside.
 *
 * usage: rk_lib_fleet --server URL --cluster C --clients N --state FILE --seconds S [--token T]
 *
 * Each client has its own RK-Client id ("fleet-<i>") and the fleet's token, if any (a server with
 * tokens counts only clients that send one of the client role), fetches the active ring, then keeps
 * a background refresher long-polling. Every 100 ms the process rewrites FILE (a temporary file
 * then rename, so a reader never sees half of it): one line per client, <id> <version> <previous
 * version or 0> <dual> where <dual> counts, of the keys "key-0" .. "key-999", those whose owner
 * under the previous ring differs from the owner now: the keys an application reads from both
 * owners while data moves. It runs until SIGTERM or SIGINT or S seconds pass, then stops and frees
 * every client (exit 0), or exits 1 when a client cannot be made or cannot fetch its first ring. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringkeeper.h"

#define MAX_CLIENTS 1000
#define KEYS        1000
#define TICK_NS     100000000L /* 100 ms */
#define WAIT_S      10         /* each refresher's long poll */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

typedef struct fleet {
    const char *server, *cluster, *state, *token;
    long clients, seconds;
    rk_client *c[MAX_CLIENTS];
} fleet;

static long number(const char *s, long min, long max)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v >= min && v <= max ? v : -1;
}

static int parse(fleet *f, int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--server") == 0)
            f->server = v;
        else if (strcmp(k, "--cluster") == 0)
            f->cluster = v;
        else if (strcmp(k, "--state") == 0)
            f->state = v;
        else if (strcmp(k, "--token") == 0)
            f->token = v;
        else if (strcmp(k, "--clients") == 0)
            f->clients = number(v, 1, MAX_CLIENTS);
        else if (strcmp(k, "--seconds") == 0)
            f->seconds = number(v, 1, 3600);
        else
            return -1;
    }
    return argc % 2 == 1 && f->server && f->cluster && f->state && f->clients > 0 && f->seconds > 0
               ? 0
               : -1;
}

static int start_client(fleet *f, long i)
{
    char id[32];
    rk_error err = {0};
    snprintf(id, sizeof id, "fleet-%ld", i);
    rk_client_config cfg = {
        .server = f->server, .cluster = f->cluster, .client_id = id, .token = f->token};
    f->c[i] = rk_client_new(&cfg, &err);
    if (!f->c[i] || rk_client_fetch(f->c[i], &err) != RK_OK ||
        rk_client_start_refresher(f->c[i], WAIT_S, 100, &err) != RK_OK) {
        fprintf(stderr, "rk_lib_fleet: client %s: %s\n", id, err.message);
        return -1;
    }
    return 0;
}

/* The keys of this client's snapshot whose previous owner is another node. */
static int dual_keys(const rk_snapshot *s)
{
    int n = 0;
    for (int k = 0; k < KEYS; k++) {
        char key[16];
        const rk_node *before = NULL;
        int len = snprintf(key, sizeof key, "key-%d", k);
        const rk_node *now = rk_snapshot_owner(s, key, (size_t)len, &before);
        n += before && now != before && strcmp(now->id, before->id) != 0;
    }
    return n;
}

static int write_state(const fleet *f)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", f->state);
    FILE *out = fopen(tmp, "w");
    if (!out)
        return -1;
    for (long i = 0; i < f->clients; i++) {
        rk_snapshot *s = rk_client_acquire(f->c[i]);
        fprintf(out, "fleet-%ld %lld %lld %d\n", i, (long long)rk_snapshot_version(s),
                (long long)rk_snapshot_previous_version(s), dual_keys(s));
        rk_snapshot_release(s);
    }
    return fclose(out) == 0 && rename(tmp, f->state) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    static fleet f;
    int rc = 0;
    if (parse(&f, argc, argv) != 0) {
        fprintf(stderr,
                "usage: rk_lib_fleet --server URL --cluster C --clients N (1..%d) "
                "--state FILE --seconds S\n",
                MAX_CLIENTS);
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    for (long i = 0; i < f.clients && rc == 0; i++)
        rc = start_client(&f, i);
    for (long t = 0; rc == 0 && !stop && t < f.seconds * 10; t++) {
        if (write_state(&f) != 0) {
            perror("rk_lib_fleet: state file");
            rc = -1;
        }
        nanosleep(&(struct timespec){0, TICK_NS}, NULL);
    }
    for (long i = 0; i < f.clients; i++)
        rk_client_free(f.c[i]); /* stops its refresher; NULL when it was never made */
    return rc == 0 ? 0 : 1;
}
