/* main.c — ringkeeperd: flags, start-up (or `ringkeeperd backup`), and the signal loop (SIGHUP
 * reloads tokens, SIGTERM and SIGINT stop after the requests in flight). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backup_cmd.h"
#include "http.h"

#define DEFAULT_LISTEN          "127.0.0.1:7070"
#define DEFAULT_DB              "./ringkeeper.db"
#define DEFAULT_THREADS         4
#define DEFAULT_MAX_BODY        (8u << 20)
#define STOP_GRACE_MS           10000
#define DEFAULT_MAX_CONNECTIONS 1024
#define DEFAULT_MAX_PER_ADDRESS 256
#define DEFAULT_IDLE_TIMEOUT    30
#define MAX_PEM_BYTES           (1u << 20)

enum { EXIT_USAGE = 2, EXIT_DATABASE = 3 };

typedef struct options {
    const char *listen, *db, *token_file, *migrations;
    unsigned threads;
    size_t max_body;
    const char *tls_cert, *tls_key; /* file names */
    unsigned max_connections, max_per_address, idle_timeout;
} options;

static const char usage[] =
    "usage: ringkeeperd [--listen HOST:PORT] [--db FILE] [--token-file FILE] [--threads N]\n"
    "                   [--max-body BYTES] [--migrations DIR] [--tls-cert FILE --tls-key FILE]\n"
    "                   [--max-connections N] [--max-connections-per-address N]\n"
    "                   [--idle-timeout SECONDS]\n"
    "       ringkeeperd backup --db FILE --to FILE [--force]   (ringkeeperd backup --help)\n"
    "\n"
    "Serves versioned ring topologies over HTTP/JSON (routes: docs/API.md), stored in SQLite.\n"
    "\n"
    "  --listen HOST:PORT   address to serve on (default " DEFAULT_LISTEN
    "; port 0: any free port)\n"
    "  --db FILE            SQLite database, created when absent (default " DEFAULT_DB ")\n"
    "  --token-file FILE    \"name:token\" lines; writes then need Authorization: Bearer <token>\n"
    "                       (reloaded on SIGHUP); without it every write is \"anonymous\"\n"
    "  --threads N          worker threads, 1..256 (default 4)\n"
    "  --max-body BYTES     largest request body, answered 413 beyond (default 8388608)\n"
    "  --tls-cert FILE      PEM certificate (chain): serve HTTPS instead of HTTP; needs --tls-key\n"
    "  --tls-key FILE       PEM private key of --tls-cert\n"
    "  --max-connections N  open connections at most, 1..100000 (default 1024); more are closed\n"
    "  --max-connections-per-address N\n"
    "                       open connections from one client address at most, 1..100000\n"
    "                       (default 256); more are closed\n"
    "  --idle-timeout S     close a connection silent for S seconds, 1..3600 (default 30);\n"
    "                       held long polls (?wait=) are not cut\n"
    "  --migrations DIR     the SQL migrations; default: the installed ones next to this binary\n"
    "                       (BIN/" RK_MIGRATIONS_FROM_BIN "), else the source tree's;\n"
    "                       here that is %s\n"
    "\n"
    "Exit codes: 0 stopped by SIGTERM/SIGINT, 1 failure, 2 bad flags, 3 database refused\n"
    "(not a ringkeeper database, schema newer than this program, or a failed migration).\n";

/* The migrations installed with this binary (found through /proc/self/exe, so from any working
 * directory), else those of the source tree it was built from (a build tree keeps working). */
static const char *default_migrations(void)
{
    static char path[PATH_MAX];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return RK_MIGRATIONS_DIR;
    exe[n] = '\0';
    int len = snprintf(path, sizeof path, "%s/%s", dirname(exe), RK_MIGRATIONS_FROM_BIN);
    if (len < 0 || (size_t)len >= sizeof path || access(path, R_OK | X_OK) != 0)
        return RK_MIGRATIONS_DIR;
    return path;
}

static void print_usage(FILE *out)
{
    fprintf(out, usage, default_migrations());
}

static int parse_number(const char *s, unsigned long long lo, unsigned long long hi,
                        unsigned long long *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || v < lo || v > hi || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"db", required_argument, NULL, 'd'},
        {"token-file", required_argument, NULL, 't'},
        {"threads", required_argument, NULL, 'n'},
        {"max-body", required_argument, NULL, 'b'},
        {"migrations", required_argument, NULL, 'm'},
        {"tls-cert", required_argument, NULL, 'c'},
        {"tls-key", required_argument, NULL, 'k'},
        {"max-connections", required_argument, NULL, 'C'},
        {"max-connections-per-address", required_argument, NULL, 'A'},
        {"idle-timeout", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    unsigned long long v;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->listen = optarg;
            break;
        case 'd':
            o->db = optarg;
            break;
        case 't':
            o->token_file = optarg;
            break;
        case 'm':
            o->migrations = optarg;
            break;
        case 'n':
            if (parse_number(optarg, 1, 256, &v))
                return fprintf(stderr, "ringkeeperd: --threads: must be 1..256, got \"%s\"\n",
                               optarg),
                       EXIT_USAGE;
            o->threads = (unsigned)v;
            break;
        case 'b':
            if (parse_number(optarg, 1024, 1ull << 30, &v))
                return fprintf(
                           stderr,
                           "ringkeeperd: --max-body: must be 1024..1073741824 bytes, got \"%s\"\n",
                           optarg),
                       EXIT_USAGE;
            o->max_body = (size_t)v;
            break;
        case 'c':
            o->tls_cert = optarg;
            break;
        case 'k':
            o->tls_key = optarg;
            break;
        case 'C':
            if (parse_number(optarg, 1, 100000, &v))
                return fprintf(stderr,
                               "ringkeeperd: --max-connections: must be 1..100000, got \"%s\"\n",
                               optarg),
                       EXIT_USAGE;
            o->max_connections = (unsigned)v;
            break;
        case 'A':
            if (parse_number(optarg, 1, 100000, &v))
                return fprintf(stderr,
                               "ringkeeperd: --max-connections-per-address: must be 1..100000, "
                               "got \"%s\"\n",
                               optarg),
                       EXIT_USAGE;
            o->max_per_address = (unsigned)v;
            break;
        case 'i':
            if (parse_number(optarg, 1, 3600, &v))
                return fprintf(stderr,
                               "ringkeeperd: --idle-timeout: must be 1..3600 seconds, got \"%s\"\n",
                               optarg),
                       EXIT_USAGE;
            o->idle_timeout = (unsigned)v;
            break;
        case 'h':
            print_usage(stdout);
            exit(0);
        default:
            print_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    if (!o->tls_cert != !o->tls_key)
        return fprintf(stderr,
                       "ringkeeperd: %s needs %s as well: HTTPS takes both a certificate "
                       "and its private key\n",
                       o->tls_cert ? "--tls-cert" : "--tls-key",
                       o->tls_cert ? "--tls-key" : "--tls-cert"),
               EXIT_USAGE;
    return 0;
}

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
        fprintf(stderr, "ringkeeperd: %s %s: %s%s%s\n", flag, path, why, !f ? ": " : "",
                !f ? strerror(errno) : "");
        free(buf);
        return NULL;
    }
    return buf;
}

/* Many connections need as many descriptors: raise the soft limit toward the hard one. */
static void raise_fd_limit(unsigned max_connections)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_connections + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
        fprintf(stderr,
                "ringkeeperd: warning: only %llu file descriptors (ulimit -n) for "
                "--max-connections %u\n",
                (unsigned long long)rl.rlim_cur, max_connections);
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
            fprintf(stderr, "ringkeeperd: SIGHUP: tokens not reloaded, the old ones stay: %s\n",
                    err.message);
        else
            fprintf(stderr, "ringkeeperd: SIGHUP: tokens reloaded\n");
    }
}

static int serve(const options *o, const char *const pem[2], rkd_store *store, rkd_auth *auth,
                 rkd_metrics *metrics, const sigset_t *signals)
{
    rk_error err = {0};
    rkd_app *app = rkd_app_new(store, metrics, &err);
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
                           .idle_timeout = o->idle_timeout};
    rkd_http *http = app ? rkd_http_start(&cfg, &err) : NULL;
    if (!http) {
        fprintf(stderr, "ringkeeperd: %s\n", err.message);
        rkd_app_free(app);
        return 1;
    }
    fprintf(stderr, "ringkeeperd: listening on port %u (%s%s, db %s, %u threads%s)\n",
            rkd_http_port(http), o->listen, pem[0] ? ", https" : "", o->db, o->threads,
            rkd_auth_enabled(auth) ? ", tokens required for writes" : "");
    if (!rkd_auth_enabled(auth) && !is_loopback(o->listen))
        fprintf(stderr,
                "ringkeeperd: warning: listening beyond loopback without --token-file: "
                "anyone who reaches %s can publish and activate\n",
                o->listen);
    wait_for_stop(signals, auth);
    fprintf(stderr, "ringkeeperd: stopping: finishing the requests in flight\n");
    rkd_http_stop(http, STOP_GRACE_MS);
    rkd_app_free(app);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "backup") == 0)
        return rkd_backup_main(argc - 1, argv + 1);
    options o = {.listen = DEFAULT_LISTEN,
                 .db = DEFAULT_DB,
                 .threads = DEFAULT_THREADS,
                 .max_body = DEFAULT_MAX_BODY,
                 .max_connections = DEFAULT_MAX_CONNECTIONS,
                 .max_per_address = DEFAULT_MAX_PER_ADDRESS,
                 .idle_timeout = DEFAULT_IDLE_TIMEOUT};
    int rc = parse_options(argc, argv, &o);
    if (!o.migrations)
        o.migrations = default_migrations();
    if (rc)
        return rc;
    char *pem[2] = {NULL, NULL};
    if (o.tls_cert) {
        pem[0] = read_pem("--tls-cert", o.tls_cert);
        pem[1] = pem[0] ? read_pem("--tls-key", o.tls_key) : NULL;
        if (!pem[1]) {
            free(pem[0]);
            return EXIT_USAGE;
        }
    }
    raise_fd_limit(o.max_connections);
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
        fprintf(stderr, "ringkeeperd: %s\n", err.message);
        free(pem[0]);
        free(pem[1]);
        return EXIT_USAGE;
    }
    rkd_store *store = rkd_store_open(o.db, o.migrations, &err);
    if (!store) {
        fprintf(stderr, "ringkeeperd: %s: %s\n", o.db, err.message);
        rkd_auth_free(auth);
        free(pem[0]);
        free(pem[1]);
        return err.code == RKD_STORE_EUNAVAILABLE ? 1 : EXIT_DATABASE;
    }
    if (rkd_store_read_only(store))
        fprintf(stderr,
                "ringkeeperd: warning: %s is read-only: reads are served, publishes and "
                "activations get 503 until the file is writable again\n",
                o.db);
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
