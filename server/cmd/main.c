/* main.c — ringkeeperd: start-up (or the `backup` and `migrate-store` subcommands) from the flags
 * of daemon_flags.c, and the signal loop (SIGHUP reloads tokens, SIGTERM and SIGINT stop after the
 * requests in flight). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backup_cmd.h"
#include "daemon_flags.h"
#include "fleet_share.h"
#include "http.h"
#include "migrate_cmd.h"
#include "log.h"

#define STOP_GRACE_MS 10000
#define MAX_PEM_BYTES (1u << 20)
/* The whole of a PEM file (at most 1 MiB), NUL-terminated; NULL with the reason printed. */
static char *read_pem(const char *flag, const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(MAX_PEM_BYTES + 2) : NULL;
    size_t n = buf ? fread(buf, 1, MAX_PEM_BYTES + 1, f) : 0;
    if (buf)
        buf[n] = '\0';
    const char *why = !f                            ? "cannot be read"
                      : !buf                        ? "out of memory"
                      : ferror(f)                   ? "cannot be read"
                      : n > MAX_PEM_BYTES           ? "is over 1 MiB"
                      : !strstr(buf, "-----BEGIN ") ? "is not a PEM file"
                                                    : NULL;
    if (f)
        fclose(f);
    if (why) {
        rkd_log("%s %s: %s%s%s", flag, path, why, !f ? ": " : "", !f ? strerror(errno) : "");
        free(buf);
        return NULL;
    }
    return buf;
}

/* Every connection is a descriptor, held long polls included: raise the soft limit toward the
 * hard one. */
static void raise_fd_limit(const rkd_options *o)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)o->max_connections + o->max_polls + o->threads + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        rkd_log("warning: only %llu file descriptors (ulimit -n) for "
                "--max-connections %u and --max-polls %u",
                (unsigned long long)rl.rlim_cur, o->max_connections, o->max_polls);
}

static int is_loopback(const char *listen)
{
    return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]", 5) == 0 ||
           strncmp(listen, "localhost:", 10) == 0;
}

/* Blocks until SIGTERM or SIGINT; reloads the tokens on SIGHUP. */
static void wait_for_stop(const sigset_t *set, rkd_auth *auth)
{
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) != 0 || sig != SIGHUP)
            return;
        rk_error err = {0};
        if (rkd_auth_reload(auth, &err))
            rkd_log("SIGHUP: tokens not reloaded, the old ones stay: %s", err.message);
        else
            rkd_log("SIGHUP: tokens reloaded");
    }
}

/* Where the store is: --store, else --db. */
static const char *location(const rkd_options *o)
{
    return o->store ? o->store : o->db;
}

/* The store --store or --db names, given its backend's flags as they came (in the table's order)
 * and --migrations when its backend takes that; NULL with `err` set, or with err->message "" once
 * a refused flag was logged as it names itself. */
static rkd_store *open_store(const rkd_options *o, rk_error *err)
{
    rkd_store_param p[RKD_FLAGS_MAX + 1];
    size_t n = rkd_options_store_params(o, p);
    if (rkd_store_check(location(o), p, n, err) != RK_OK) {
        rkd_log("%s", err->message);
        err->message[0] = '\0';
        return NULL;
    }
    if (rkd_store_takes(location(o), "migrations"))
        p[n++] = (rkd_store_param){"migrations", o->migrations};
    return rkd_store_open_with(location(o), p, n, err);
}

static int serve(const rkd_options *o, const char *const pem[2], rkd_store *store, rkd_auth *auth,
                 rkd_metrics *metrics, const sigset_t *signals)
{
    rk_error err = {0};
    rkd_app *app = rkd_app_new(store, metrics, &err);
    rkd_plan_limits pl = {o->max_plan_arcs, o->max_plan_rows, o->plan_concurrency};
    if (app && rkd_app_set_plan_limits(app, &pl) != RK_OK) {
        rkd_app_free(app);
        app = NULL;
        rk_error_set(&err, RK_ENOMEM, "--plan-concurrency", "out of memory for the plan slots");
    }
    rkd_clients_limits cl = {o->max_clients, o->max_clients_per_cluster, o->clients_expiry,
                             strcmp(o->unauthenticated, "ignore") == 0};
    if (app && rkd_app_set_client_limits(app, &cl) != RK_OK) {
        rkd_app_free(app);
        app = NULL;
        rk_error_set(&err, RK_ENOMEM, "--max-clients", "out of memory for the table of clients");
    }
    if (app && rkd_store_fleet_shared(store) &&
        rkd_app_share_fleet(app, o->replica, &err) != RK_OK) {
        rkd_app_free(app);
        app = NULL;
    }
    rkd_http_config cfg = {.listen = o->listen,
                           .threads = o->threads,
                           .max_body = o->max_body,
                           .app = app,
                           .auth = auth,
                           .metrics = metrics,
                           .tls_cert = pem[0],
                           .tls_key = pem[1],
                           .max_connections = o->max_connections,
                           .max_per_address = o->max_per_address,
                           .idle_timeout = o->idle_timeout,
                           .header_timeout = o->header_timeout,
                           .body_budget = o->max_bodies,
                           .max_polls = o->max_polls,
                           .send_budget = o->max_send_buffers,
                           .header_buffer = o->header_buffer,
                           .allow_origins = o->allow_origin,
                           .public_names = o->public_name};
    /* The driver before the HTTP threads, which read app->driver; it stops in rkd_app_free, after
     * them. */
    int driving = app && rkd_app_start_rollouts(app, 0, &err) == RK_OK;
    rkd_http *http = driving ? rkd_http_start(&cfg, &err) : NULL;
    if (!http) {
        rkd_log("%s", err.message);
        rkd_app_free(app);
        return err.code == RK_EINVAL ? RKD_EXIT_USAGE
                                     : 1; /* a --listen host that does not resolve */
    }
    rkd_log("listening on port %u (%s%s, %s %s, %u threads, %u on the network%s)",
            rkd_http_port(http), o->listen, pem[0] ? ", https" : "", o->store ? "store" : "db",
            location(o), o->threads, rkd_http_network_threads(&cfg),
            rkd_auth_enabled(auth) ? ", tokens required for writes" : "");
    if (!rkd_auth_enabled(auth) && !is_loopback(o->listen))
        rkd_log("warning: listening beyond loopback without --token-file: "
                "anyone who reaches %s can publish and activate",
                o->listen);
    wait_for_stop(signals, auth);
    rkd_log("stopping: finishing the requests in flight");
    rkd_http_stop(http, STOP_GRACE_MS);
    rkd_app_free(app);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "backup") == 0)
        return rkd_backup_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "migrate-store") == 0)
        return rkd_migrate_main(argc - 1, argv + 1, rkd_default_migrations());
    rkd_options o = {0};
    int rc = rkd_options_parse(argc, argv, &o);
    if (rc)
        return rc;
    char *pem[2] = {NULL, NULL};
    if (o.tls_cert) {
        pem[0] = read_pem("--tls-cert", o.tls_cert);
        pem[1] = pem[0] ? read_pem("--tls-key", o.tls_key) : NULL;
        if (!pem[1]) {
            free(pem[0]);
            return RKD_EXIT_USAGE;
        }
    }
    raise_fd_limit(&o);
    /* block the signals before any thread starts, so only sigwait() sees them */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    rk_error err = {0};
    rkd_auth *auth = rkd_auth_new(o.token_file, &err);
    if (!auth) {
        rkd_log("%s", err.message);
        free(pem[0]);
        free(pem[1]);
        return RKD_EXIT_USAGE;
    }
    rkd_store *store = open_store(&o, &err);
    if (!store) {
        if (err.message[0])
            rkd_log("%s: %s", location(&o), err.message);
        rkd_auth_free(auth);
        free(pem[0]);
        free(pem[1]);
        return err.code == RKD_STORE_EUNAVAILABLE ? 1
               : err.code == RK_EINVAL            ? RKD_EXIT_USAGE
                                                  : RKD_EXIT_DATABASE;
    }
    rkd_store_set_max_clusters(store, o.max_clusters);
    if (rkd_store_read_only(store))
        rkd_log("warning: %s is read-only: reads are served, publishes and "
                "activations get 503 until the file is writable again",
                location(&o));
    rkd_metrics *metrics = rkd_metrics_new();
    rc = metrics ? serve(&o, (const char *const *)pem, store, auth, metrics, &signals) : 1;
    rkd_metrics_free(metrics);
    rkd_store_close(store);
    rkd_auth_free(auth);
    if (pem[1]) /* the key is secret: no copy left in freed memory */
        memset(pem[1], 0, strlen(pem[1]));
    free(pem[0]);
    free(pem[1]);
    return rc;
}
