/* daemon_flags.c — ringkeeperd's flags (daemon_flags.h): the table, the usage it prints, and the
 * parsing and checks of a command line against it. */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_flags.h"
#include "fleet_share.h"
#include "log.h"

#define FLAG_BASE      256 /* getopt_long's value of flags[0]; those below are short options */
#define SYNOPSIS_WIDTH 90  /* columns of the usage's first lines */
#define DEFAULT_DB     "./ringkeeper.db"

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
    size_t at;                   /* offset in rkd_options: a const char * or, a number, an unsigned;
                                    STORE_PARAM_AT: a store backend's, passed through */
    const char *help;            /* "{range}", "{default}" are replaced; "\n" continues the text */
} flag;

#define STRING(field)  0, 0, "", offsetof(rkd_options, field)
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
    {"threads", "N", "4", NULL, 1, 256, "", offsetof(rkd_options, threads),
     "worker threads, {range} (default {default})"},
    {"max-body", "BYTES", "8388608", NULL, 1024, 1u << 30, " bytes",
     offsetof(rkd_options, max_body),
     "largest request body, answered 413 beyond (default {default})"},
    {"max-bodies", "BYTES", "33554432", NULL, 1024, 1u << 31, " bytes",
     offsetof(rkd_options, max_bodies),
     "request body bytes buffered at once, all clients together, {range}\n"
     "(default {default}); one address gets a quarter (or --max-body);\n"
     "past it 503 busy with Retry-After"},
    {"max-send-buffers", "BYTES", "134217728", NULL, 1u << 20, 1u << 31, " bytes",
     offsetof(rkd_options, max_send_buffers),
     "kernel send buffers of answers sent at full speed at once, all\n"
     "clients, {range} (default {default}: 1024 of 128 KiB); the\n"
     "others are sent through 32 KiB (docs/RELIABILITY.md)"},
    {"tls-cert", "FILE", NULL, NULL, STRING(tls_cert),
     "PEM certificate (chain): serve HTTPS instead of HTTP; needs --tls-key"},
    {"tls-key", "FILE", NULL, NULL, STRING(tls_key), "PEM private key of --tls-cert"},
    {"max-connections", "N", "1024", NULL, 1, 100000, "", offsetof(rkd_options, max_connections),
     "open connections at most, {range} (default {default}); a new one\n"
     "takes the place of the one owing its request's headers longest,\n"
     "or is closed if none does"},
    {"max-connections-per-address", "N", "256", NULL, 1, 100000, "",
     offsetof(rkd_options, max_per_address),
     "open connections from one client address at most, {range}\n"
     "(default {default}); more are closed"},
    {"idle-timeout", "S", "30", NULL, 1, 3600, " seconds", offsetof(rkd_options, idle_timeout),
     "close a connection silent for S seconds, {range} (default {default});\n"
     "held long polls (?wait=) are not cut"},
    {"header-timeout", "S", "10", NULL, 1, 3600, " seconds", offsetof(rkd_options, header_timeout),
     "close a connection that has not sent a request's headers S seconds\n"
     "after it opened or got its last answer, {range} (default {default})"},
    {"max-polls", "N", "4096", NULL, 1, 100000, "", offsetof(rkd_options, max_polls),
     "long polls held at once, {range} (default {default}); they take none\n"
     "of --max-connections; more get 503 busy with Retry-After"},
    {"header-buffer", "BYTES", "16384", NULL, 4096, 65536, " bytes",
     offsetof(rkd_options, header_buffer),
     "each connection's buffer, {range} (default {default}): its request\n"
     "line and headers must fit (a 16384-byte one takes 15600 bytes of\n"
     "them), else 431; a connection that served a request holds all of it"},
    {"max-plan-arcs", "N", "1000000", NULL, 1, 1u << 24, "", offsetof(rkd_options, max_plan_arcs),
     "refuse (422) a plan moving more arcs, before they are stored, {range}\n"
     "(default {default}: ~80 MB and 0.2 s)"},
    {"max-plan-rows", "N", "50000", NULL, 1, 1u << 24, "", offsetof(rkd_options, max_plan_rows),
     "refuse (422) a plan rendering more nodes, arcs, transfers and steps,\n"
     "{range} (default {default}: ~90 MB and 0.7 s of JSON)"},
    {"plan-concurrency", "N", "3", NULL, 1, 256, "", offsetof(rkd_options, plan_concurrency),
     "plans computed at once, {range} (default {default}), all but one\n"
     "of them for one client address; more get 503"},
    {"max-clients", "N", "100000", NULL, 1, 1000000, "", offsetof(rkd_options, max_clients),
     "RK-Client ids tracked, all clusters, {range} (default {default}:\n"
     "~50 MB at most); past it the id seen longest ago is forgotten"},
    {"max-clients-per-cluster", "N", "50000", NULL, 1, 1000000, "",
     offsetof(rkd_options, max_clients_per_cluster),
     "RK-Client ids tracked in one cluster, {range} (default {default});\n"
     "past it the cluster's id seen longest ago is forgotten"},
    {"clients-expiry", "S", "180", NULL, 1, 86400, " seconds",
     offsetof(rkd_options, clients_expiry),
     "forget an RK-Client id silent for S seconds, {range} (default {default})"},
    {"replica-name", "NAME", NULL, default_replica, STRING(replica),
     "on a store replicas share (etcd), this one's name in the records of\n"
     "the clients it serves, which every replica counts (default here:\n"
     "{default}, HOST:PID)"},
    {"max-clusters", "N", "10000", NULL, 1, 10000000, "", offsetof(rkd_options, max_clusters),
     "clusters the store may hold, {range} (default {default}); a publish\n"
     "creating one more is refused (422 too_many_clusters), publishes to\n"
     "existing clusters go on (docs/RELIABILITY.md)"},
    {"migrations", "DIR", NULL, rkd_default_migrations, STRING(migrations),
     "the SQL migrations; default: the installed ones next to this binary\n"
     "(BIN/" RK_MIGRATIONS_FROM_BIN "), else the source tree's;\n"
     "here that is {default}"},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])
_Static_assert(N_FLAGS <= RKD_FLAGS_MAX, "rkd_options.store_param has a slot per flag");

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

/* --replica-name's default: HOST:PID, unique among the replicas of a shared store. */
static const char *default_replica(void)
{
    static char name[RKD_FLEET_REPLICA_MAX];
    char host[RKD_FLEET_REPLICA_MAX - 12] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "ringkeeperd");
    snprintf(name, sizeof name, "%s:%ld", host, (long)getpid());
    return name;
}

/* Found through /proc/self/exe, so from any working directory; the source tree's keeps a build
 * tree working. */
const char *rkd_default_migrations(void)
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

/* Stores `value` as flag f's: 0, or RKD_EXIT_USAGE after saying why. */
static int set_flag(rkd_options *o, const flag *f, const char *value)
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
        return RKD_EXIT_USAGE;
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
    return RKD_EXIT_USAGE;
}

int rkd_options_parse(int argc, char **argv, rkd_options *o)
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
            return RKD_EXIT_USAGE;
        }
        rc = set_flag(o, &flags[c - FLAG_BASE], optarg);
    }
    if (rc == 0 && optind != argc) {
        print_usage(stderr);
        return RKD_EXIT_USAGE;
    }
    if (rc == 0)
        rc = check_listen(o->listen);
    if (rc == 0 && o->db && o->store)
        return rkd_log_fail(RKD_EXIT_USAGE, "--db and --store name two stores: give one (--db for "
                                            "SQLite, --store etcd://... for etcd)");
    if (rc == 0 && o->store && !rkd_store_backend_name(o->store))
        return rkd_log_fail(
            RKD_EXIT_USAGE,
            "--store: must be sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...][/prefix] "
            "(etcds:// for TLS), got \"%s\"",
            o->store);
    if (rc == 0 && !o->store && !o->db)
        o->db = DEFAULT_DB;
    if (rc == 0 && strcmp(o->unauthenticated, "apart") != 0 &&
        strcmp(o->unauthenticated, "ignore") != 0)
        return rkd_log_fail(RKD_EXIT_USAGE,
                            "--unauthenticated-clients: \"apart\" or \"ignore\", not "
                            "\"%s\"",
                            o->unauthenticated);
    if (rc == 0 && o->max_bodies < o->max_body)
        return rkd_log_fail(RKD_EXIT_USAGE,
                            "--max-bodies %u is below --max-body %u: a body of the largest "
                            "size allowed would never fit",
                            o->max_bodies, o->max_body);
    if (rc == 0 && !o->tls_cert != !o->tls_key)
        return rkd_log_fail(RKD_EXIT_USAGE,
                            "%s needs %s as well: HTTPS takes both a certificate "
                            "and its private key",
                            o->tls_cert ? "--tls-cert" : "--tls-key",
                            o->tls_cert ? "--tls-key" : "--tls-cert");
    return rc;
}

size_t rkd_options_store_params(const rkd_options *o, rkd_store_param *p)
{
    size_t n = 0;
    for (size_t i = 0; i < N_FLAGS; i++)
        if (o->store_param[i])
            p[n++] = (rkd_store_param){flags[i].name, o->store_param[i]};
    return n;
}
