/* main.c — ringkeeperd: flags, start-up (or the `backup` and `migrate-store` subcommands), and the
 * signal loop (SIGHUP reloads tokens, SIGTERM and SIGINT stop after the requests in flight). */
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
#include "fleet_share.h"
#include "http.h"
#include "migrate_cmd.h"
#include "log.h"

#define STOP_GRACE_MS  10000
#define MAX_PEM_BYTES  (1u << 20)
#define FLAG_BASE      256 /* getopt_long's value of flags[0]; those below are short options */
#define SYNOPSIS_WIDTH 90  /* columns of the usage's first lines */
#define DEFAULT_DB     "./ringkeeper.db"
#define FLAGS_MAX      48 /* room in `options` for a value per flag */

enum { EXIT_USAGE = 2, EXIT_DATABASE = 3 };

typedef struct options {
    const char *listen, *db, *store, *token_file, *migrations, *unauthenticated;
    const char *allow_origin, *public_name; /* comma-separated lists (http_origin.h) */
    unsigned threads, max_body, max_bodies, max_send_buffers;
    const char *tls_cert, *tls_key; /* file names */
    unsigned max_connections, max_per_address, idle_timeout, header_timeout, max_polls,
        header_buffer;
    unsigned max_plan_arcs, max_plan_rows, plan_concurrency;
    unsigned max_clients, max_clients_per_cluster, clients_expiry;
    const char *replica; /* --replica-name */
    unsigned max_clusters;
    const char *store_param[FLAGS_MAX]; /* a STORE_PARAM flag's value by its row, or NULL */
} options;

static const char *default_migrations(void);
static const char *default_replica(void);

/* One flag of ringkeeperd: its usage line, parsing, range check and error message all come from
 * here. A flag with max == 0 is a string kept as given; any other is a number in min..max. */
typedef struct flag {
    const char *name;            /* without the leading "--" */
    const char *arg;             /* the argument's name in the usage */
    const char *def;             /* the default, as it would be given; NULL for none */
    const char *(*def_fn)(void); /* ... or the function that finds it at run time */
    unsigned min, max;           /* a number's range */
    const char *unit;            /* after the range in an error: " bytes", " seconds" or "" */
    size_t at;                   /* offset in `options`: a const char * or, a number, an unsigned;
                                    STORE_PARAM_AT: a store backend's, passed through */
    const char *help;            /* "{range}", "{default}" are replaced; "\n" continues the text */
} flag;

#define STRING(field)  0, 0, "", offsetof(options, field)
#define STORE_PARAM_AT SIZE_MAX
/* A flag of the store backends, which ringkeeperd passes through by its name without reading it
 * (rkd_store_param): the backend --store names checks it, or refuses it when it is another's. */
#define STORE_PARAM 0, 0, "", STORE_PARAM_AT

static const flag flags[] = {
    {"listen", "HOST:PORT", "127.0.0.1:7070", NULL, STRING(listen),
     "address to serve on (default {default}; port 0: any free port)"},
    {"db", "FILE", NULL, NULL, STRING(db),
     "SQLite database, created when absent (default " DEFAULT_DB ")"},
    {"store", "URL", NULL, NULL, STRING(store),
     "the store instead of --db: etcd://HOST:PORT[,HOST:PORT...][/prefix]\n"
     "for replicas sharing one etcd cluster (docs/ETCD.md), etcds://... over\n"
     "TLS; sqlite:PATH for an SQLite file, as --db PATH"},
    {"etcd-cacert", "FILE", NULL, NULL, STORE_PARAM,
     "etcds://: PEM CA to verify etcd with (default: the system's CAs)"},
    {"etcd-cert", "FILE", NULL, NULL, STORE_PARAM,
     "etcds://: PEM client certificate for etcd --client-cert-auth"},
    {"etcd-key", "FILE", NULL, NULL, STORE_PARAM, "PEM private key of --etcd-cert"},
    {"etcd-user", "NAME", NULL, NULL, STORE_PARAM,
     "etcd user to authenticate as (etcd auth enabled); needs\n"
     "--etcd-password-file"},
    {"etcd-password-file", "FILE", NULL, NULL, STORE_PARAM,
     "the --etcd-user's password, its first line; refused when others\n"
     "can read it (chmod 600)"},
    {"token-file", "FILE", NULL, NULL, STRING(token_file),
     "\"name:token\" lines; writes then need Authorization: Bearer <token>\n"
     "(reloaded on SIGHUP); without it every write is \"anonymous\""},
    {"unauthenticated-clients", "HOW", "apart", NULL, STRING(unauthenticated),
     "with --token-file, clients whose ring requests carry no token of the\n"
     "client role: \"apart\" (listed apart, never counted with the others)\n"
     "or \"ignore\" (not recorded at all)"},
    {"allow-origin", "ORIGINS", NULL, NULL, STRING(allow_origin),
     "pages of these origins (comma-separated, as browsers send them:\n"
     "https://console.example.com) may write and read answers (CORS);\n"
     "without it only the server's own console may write from a browser"},
    {"public-name", "NAMES", NULL, NULL, STRING(public_name),
     "host names (comma-separated) browsers may reach this server by,\n"
     "besides IP addresses and localhost; another Host in a browser's\n"
     "request is refused (421): DNS rebinding"},
    {"threads", "N", "4", NULL, 1, 256, "", offsetof(options, threads),
     "worker threads, {range} (default {default})"},
    {"max-body", "BYTES", "8388608", NULL, 1024, 1u << 30, " bytes", offsetof(options, max_body),
     "largest request body, answered 413 beyond (default {default})"},
    {"max-bodies", "BYTES", "33554432", NULL, 1024, 1u << 31, " bytes",
     offsetof(options, max_bodies),
     "request body bytes buffered at once, all clients together, {range}\n"
     "(default {default}); one address gets a quarter (or --max-body);\n"
     "past it 503 busy with Retry-After"},
    {"max-send-buffers", "BYTES", "134217728", NULL, 1u << 20, 1u << 31, " bytes",
     offsetof(options, max_send_buffers),
     "kernel send buffers of answers sent at full speed at once, all\n"
     "clients, {range} (default {default}: 1024 of 128 KiB); the\n"
     "others are sent through 32 KiB (docs/RELIABILITY.md)"},
    {"tls-cert", "FILE", NULL, NULL, STRING(tls_cert),
     "PEM certificate (chain): serve HTTPS instead of HTTP; needs --tls-key"},
    {"tls-key", "FILE", NULL, NULL, STRING(tls_key), "PEM private key of --tls-cert"},
    {"max-connections", "N", "1024", NULL, 1, 100000, "", offsetof(options, max_connections),
     "open connections at most, {range} (default {default}); a new one\n"
     "takes the place of the one owing its request's headers longest,\n"
     "or is closed if none does"},
    {"max-connections-per-address", "N", "256", NULL, 1, 100000, "",
     offsetof(options, max_per_address),
     "open connections from one client address at most, {range}\n"
     "(default {default}); more are closed"},
    {"idle-timeout", "S", "30", NULL, 1, 3600, " seconds", offsetof(options, idle_timeout),
     "close a connection silent for S seconds, {range} (default {default});\n"
     "held long polls (?wait=) are not cut"},
    {"header-timeout", "S", "10", NULL, 1, 3600, " seconds", offsetof(options, header_timeout),
     "close a connection that has not sent a request's headers S seconds\n"
     "after it opened or got its last answer, {range} (default {default})"},
    {"max-polls", "N", "4096", NULL, 1, 100000, "", offsetof(options, max_polls),
     "long polls held at once, {range} (default {default}); they take none\n"
     "of --max-connections; more get 503 busy with Retry-After"},
    {"header-buffer", "BYTES", "16384", NULL, 4096, 65536, " bytes",
     offsetof(options, header_buffer),
     "each connection's buffer, {range} (default {default}): its request\n"
     "line and headers must fit (a 16384-byte one takes 15600 bytes of\n"
     "them), else 431; a connection that served a request holds all of it"},
    {"max-plan-arcs", "N", "1000000", NULL, 1, 1u << 24, "", offsetof(options, max_plan_arcs),
     "refuse (422) a plan moving more arcs, before they are stored, {range}\n"
     "(default {default}: ~80 MB and 0.2 s)"},
    {"max-plan-rows", "N", "50000", NULL, 1, 1u << 24, "", offsetof(options, max_plan_rows),
     "refuse (422) a plan rendering more nodes, arcs, transfers and steps,\n"
     "{range} (default {default}: ~90 MB and 0.7 s of JSON)"},
    {"plan-concurrency", "N", "3", NULL, 1, 256, "", offsetof(options, plan_concurrency),
     "plans computed at once, {range} (default {default}), all but one\n"
     "of them for one client address; more get 503"},
    {"max-clients", "N", "100000", NULL, 1, 1000000, "", offsetof(options, max_clients),
     "RK-Client ids tracked, all clusters, {range} (default {default}:\n"
     "~50 MB at most); past it the id seen longest ago is forgotten"},
    {"max-clients-per-cluster", "N", "50000", NULL, 1, 1000000, "",
     offsetof(options, max_clients_per_cluster),
     "RK-Client ids tracked in one cluster, {range} (default {default});\n"
     "past it the cluster's id seen longest ago is forgotten"},
    {"clients-expiry", "S", "180", NULL, 1, 86400, " seconds", offsetof(options, clients_expiry),
     "forget an RK-Client id silent for S seconds, {range} (default {default})"},
    {"replica-name", "NAME", NULL, default_replica, STRING(replica),
     "on a store replicas share (etcd), this one's name in the records of\n"
     "the clients it serves, which every replica counts (default here:\n"
     "{default}, HOST:PID)"},
    {"max-clusters", "N", "10000", NULL, 1, 10000000, "", offsetof(options, max_clusters),
     "clusters the store may hold, {range} (default {default}); a publish\n"
     "creating one more is refused (422 too_many_clusters), publishes to\n"
     "existing clusters go on (docs/RELIABILITY.md)"},
    {"migrations", "DIR", NULL, default_migrations, STRING(migrations),
     "the SQL migrations; default: the installed ones next to this binary\n"
     "(BIN/" RK_MIGRATIONS_FROM_BIN "), else the source tree's;\n"
     "here that is {default}"},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])
_Static_assert(N_FLAGS <= FLAGS_MAX, "options.store_param has a slot per flag");

static const char about[] =
    "       ringkeeperd --version\n"
    "       ringkeeperd backup --db FILE --to FILE [--force]   (ringkeeperd backup --help)\n"
    "       ringkeeperd migrate-store --from STORE --to STORE   (ringkeeperd migrate-store "
    "--help)\n"
    "\n"
    "Serves versioned ring topologies over HTTP/JSON (routes: docs/API.md), stored in SQLite\n"
    "(--db) or in etcd (--store), where any number of replicas share them.\n"
    "\n";

static const char exit_codes[] =
    "\n"
    "Exit codes: 0 stopped by SIGTERM/SIGINT, 1 failure (also: the address is in use), 2 bad\n"
    "flags, 3 database refused (not a ringkeeper database, schema newer than this program, or a\n"
    "failed migration).\n";

/* The migrations installed with this binary (found through /proc/self/exe, so from any working
 * directory), else those of the source tree it was built from (a build tree keeps working). */
static const char *default_replica(void)
{
    static char name[RKD_FLEET_REPLICA_MAX];
    char host[RKD_FLEET_REPLICA_MAX - 12] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "ringkeeperd");
    snprintf(name, sizeof name, "%s:%ld", host, (long)getpid());
    return name;
}

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

static const char *default_of(const flag *f)
{
    return f->def_fn ? f->def_fn() : f->def;
}

/* "--name ARG" of `f` into out. */
static int flag_head(char out[40], const flag *f)
{
    return snprintf(out, 40, "--%s %s", f->name, f->arg);
}

/* The synopsis: "[--name ARG]" of every flag, wrapped at SYNOPSIS_WIDTH under the first. */
static void print_synopsis(FILE *out)
{
    static const char start[] = "usage: ringkeeperd";
    char item[48];
    int col = fprintf(out, "%s", start);
    for (size_t i = 0; i < N_FLAGS; i++) {
        int len = snprintf(item, sizeof item, "[--%s %s]", flags[i].name, flags[i].arg);
        if (col + 1 + len > SYNOPSIS_WIDTH)
            col = fprintf(out, "\n%*s", (int)sizeof start - 1, "") - 1;
        col += fprintf(out, " %s", item);
    }
    fputc('\n', out);
}

/* One flag's line(s) of the usage: "  --name ARG", its help text in a column after `width`. */
static void print_flag(FILE *out, const flag *f, int width)
{
    static const char range[] = "{range}", def[] = "{default}";
    char head[40];
    flag_head(head, f);
    fprintf(out, "  %-*s  ", width, head);
    for (const char *p = f->help; *p; p++) {
        if (*p == '\n') {
            fprintf(out, "\n%*s", width + 4, "");
        } else if (strncmp(p, range, sizeof range - 1) == 0) {
            fprintf(out, "%u..%u", f->min, f->max);
            p += sizeof range - 2;
        } else if (strncmp(p, def, sizeof def - 1) == 0) {
            fputs(default_of(f), out);
            p += sizeof def - 2;
        } else {
            fputc(*p, out);
        }
    }
    fputc('\n', out);
}

static void print_usage(FILE *out)
{
    char head[40];
    int width = 0;
    for (size_t i = 0; i < N_FLAGS; i++) {
        int len = flag_head(head, &flags[i]);
        width = len > width ? len : width;
    }
    print_synopsis(out);
    fputs(about, out);
    for (size_t i = 0; i < N_FLAGS; i++)
        print_flag(out, &flags[i], width);
    fputs(exit_codes, out);
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

/* Stores `value` as flag f's: 0, or EXIT_USAGE after saying why. */
static int set_flag(options *o, const flag *f, const char *value)
{
    unsigned long long v;
    char *field = (char *)o + f->at;
    if (f->at == STORE_PARAM_AT) {
        o->store_param[f - flags] = value;
        return 0;
    }
    if (f->max == 0) {
        *(const char **)field = value;
        return 0;
    }
    if (parse_number(value, f->min, f->max, &v) != 0) {
        rkd_log("--%s: must be %u..%u%s, got \"%s\"", f->name, f->min, f->max, f->unit, value);
        return EXIT_USAGE;
    }
    *(unsigned *)field = (unsigned)v;
    return 0;
}

/* --listen before anything starts: "HOST:PORT" with a host and a port in 0..65535, else exit 2
 * and why (getaddrinfo would take port 70000 as 4464, and an empty host has no address). */
static int check_listen(const char *listen)
{
    unsigned long long port;
    const char *colon = strrchr(listen, ':');
    if (!colon)
        rkd_log("--listen: must be HOST:PORT (e.g. 127.0.0.1:7070 or [::1]:7070), "
                "got \"%s\"",
                listen);
    else if (colon == listen)
        rkd_log("--listen: \"%s\" has no host: give 127.0.0.1%s (this machine only) "
                "or 0.0.0.0%s (every interface)",
                listen, colon, colon);
    else if (parse_number(colon + 1, 0, 65535, &port) != 0)
        rkd_log("--listen: the port must be 0..65535, got \"%s\"", colon + 1);
    else
        return 0;
    return EXIT_USAGE;
}

/* The defaults, then the command line, into `o`: 0, or EXIT_USAGE after saying why. Exits 0 after
 * printing the usage for --help. */
static int parse_options(int argc, char **argv, options *o)
{
    struct option opts[N_FLAGS + 3] = {{"help", no_argument, NULL, 'h'},
                                       {"version", no_argument, NULL, 'V'}};
    int c, rc = 0;
    for (size_t i = 0; i < N_FLAGS; i++) {
        opts[i + 2] = (struct option){flags[i].name, required_argument, NULL, FLAG_BASE + (int)i};
        if (default_of(&flags[i]))
            rc = rc ? rc : set_flag(o, &flags[i], default_of(&flags[i]));
    }
    while (rc == 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h' || c == 'V') {
            if (c == 'h')
                print_usage(stdout);
            else
                printf("ringkeeperd %s\n", rk_version());
            exit(0);
        }
        if (c < FLAG_BASE) {
            print_usage(stderr);
            return EXIT_USAGE;
        }
        rc = set_flag(o, &flags[c - FLAG_BASE], optarg);
    }
    if (rc == 0 && optind != argc) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    if (rc == 0)
        rc = check_listen(o->listen);
    if (rc == 0 && o->db && o->store)
        return rkd_log_fail(EXIT_USAGE, "--db and --store name two stores: give one (--db for "
                                        "SQLite, --store etcd://... for etcd)");
    if (rc == 0 && o->store && !rkd_store_backend_name(o->store))
        return rkd_log_fail(
            EXIT_USAGE,
            "--store: must be sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...][/prefix] "
            "(etcds:// for TLS), got \"%s\"",
            o->store);
    if (rc == 0 && !o->store && !o->db)
        o->db = DEFAULT_DB;
    if (rc == 0 && strcmp(o->unauthenticated, "apart") != 0 &&
        strcmp(o->unauthenticated, "ignore") != 0)
        return rkd_log_fail(EXIT_USAGE,
                            "--unauthenticated-clients: \"apart\" or \"ignore\", not "
                            "\"%s\"",
                            o->unauthenticated);
    if (rc == 0 && o->max_bodies < o->max_body)
        return rkd_log_fail(EXIT_USAGE,
                            "--max-bodies %u is below --max-body %u: a body of the largest "
                            "size allowed would never fit",
                            o->max_bodies, o->max_body);
    if (rc == 0 && !o->tls_cert != !o->tls_key)
        return rkd_log_fail(EXIT_USAGE,
                            "%s needs %s as well: HTTPS takes both a certificate "
                            "and its private key",
                            o->tls_cert ? "--tls-cert" : "--tls-key",
                            o->tls_cert ? "--tls-key" : "--tls-cert");
    return rc;
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
        rkd_log("%s %s: %s%s%s", flag, path, why, !f ? ": " : "", !f ? strerror(errno) : "");
        free(buf);
        return NULL;
    }
    return buf;
}

/* Every connection is a descriptor, held long polls included: raise the soft limit toward the
 * hard one. */
static void raise_fd_limit(const options *o)
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
static const char *location(const options *o)
{
    return o->store ? o->store : o->db;
}

/* The store --store or --db names, given its backend's flags as they came (in the table's order)
 * and --migrations when its backend takes that; NULL with `err` set, or with err->message "" once
 * a refused flag was logged as it names itself. */
static rkd_store *open_store(const options *o, rk_error *err)
{
    rkd_store_param p[FLAGS_MAX + 1];
    size_t n = 0;
    for (size_t i = 0; i < N_FLAGS; i++)
        if (o->store_param[i])
            p[n++] = (rkd_store_param){flags[i].name, o->store_param[i]};
    if (rkd_store_check(location(o), p, n, err) != RK_OK) {
        rkd_log("%s", err->message);
        err->message[0] = '\0';
        return NULL;
    }
    if (rkd_store_takes(location(o), "migrations"))
        p[n++] = (rkd_store_param){"migrations", o->migrations};
    return rkd_store_open_with(location(o), p, n, err);
}

static int serve(const options *o, const char *const pem[2], rkd_store *store, rkd_auth *auth,
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
        return err.code == RK_EINVAL ? EXIT_USAGE : 1; /* a --listen host that does not resolve */
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
        return rkd_migrate_main(argc - 1, argv + 1, default_migrations());
    options o = {0};
    int rc = parse_options(argc, argv, &o);
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
        return EXIT_USAGE;
    }
    rkd_store *store = open_store(&o, &err);
    if (!store) {
        if (err.message[0])
            rkd_log("%s: %s", location(&o), err.message);
        rkd_auth_free(auth);
        free(pem[0]);
        free(pem[1]);
        return err.code == RKD_STORE_EUNAVAILABLE ? 1
               : err.code == RK_EINVAL            ? EXIT_USAGE
                                                  : EXIT_DATABASE;
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
