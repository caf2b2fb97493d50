/* migrate_cmd.c — `ringkeeperd migrate-store --from STORE --to STORE`: opens both stores, copies
 * one into the other with rkd_store_copy (which verifies the copy), and prints a summary. The
 * stores are SQLite files or etcd:// locations, in either direction. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrate_cmd.h"
#include "store_copy.h"
#include "log.h"

enum { EXIT_USAGE = 2, EXIT_REFUSED = 3, PARAM_BASE = 256 };

/* The store backends' flags, as ringkeeperd's: passed through by name (rkd_store_param) to the
 * side whose backend takes them, which checks them. */
static const char *const param_flags[] = {"etcd-cacert", "etcd-cert", "etcd-key", "etcd-user",
                                          "etcd-password-file"};
#define N_PARAMS (sizeof param_flags / sizeof param_flags[0])

typedef struct migrate_options {
    const char *from;            /* --from, the store copied */
    const char *to;              /* --to, the empty store it goes into */
    const char *migrations;      /* --migrations, for a side whose backend takes it */
    const char *param[N_PARAMS]; /* param_flags' values, NULL when not given */
} migrate_options;

static const char usage[] =
    "usage: ringkeeperd migrate-store --from STORE --to STORE [--migrations DIR]\n"
    "                                 [--etcd-cacert FILE] [--etcd-cert FILE --etcd-key FILE]\n"
    "                                 [--etcd-user NAME --etcd-password-file FILE]\n"
    "\n"
    "Copies every cluster of --from into --to, each STORE an SQLite database FILE or\n"
    "etcd[s]://HOST:PORT[,HOST:PORT...][/prefix]: every version with its number, state, "
    "timestamps,\n"
    "author, comment and fingerprint, the events, approvals, policies and an open migration\n"
    "window; then reads each version back from both and compares fingerprint and document.\n"
    "--to keeps the store id of --from, so clients' ETags and last-known-good files stay valid:\n"
    "after the copy, serve from --to only and retire --from (docs/OPERATIONS.md).\n"
    "\n"
    "  --from STORE      the store to copy (a file must exist); nothing in it changes; stop\n"
    "                    its writers first\n"
    "  --to STORE        an empty store (an SQLite file is created); one holding any cluster is\n"
    "                    refused: histories are never merged\n"
    "  --migrations DIR  the SQL migrations for an SQLite side (default: ringkeeperd's)\n"
    "  --etcd-*          TLS and authentication for the etcd side(s), as ringkeeperd --help\n"
    "                    says\n"
    "\n"
    "Exit codes: 0 copied and verified, 1 failure (etcd or the file unavailable, or the copy\n"
    "differs), 2 bad flags, 3 refused (--to holds clusters, or a file is not a ringkeeper\n"
    "database).\n";

static int parse_migrate_options(int argc, char **argv, migrate_options *o)
{
    struct option opts[N_PARAMS + 5] = {{"from", required_argument, NULL, 'f'},
                                        {"to", required_argument, NULL, 't'},
                                        {"migrations", required_argument, NULL, 'm'},
                                        {"help", no_argument, NULL, 'h'}};
    for (size_t i = 0; i < N_PARAMS; i++)
        opts[4 + i] = (struct option){param_flags[i], required_argument, NULL, PARAM_BASE + (int)i};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            exit(0);
        }
        const char **field = c == 'f'   ? &o->from
                             : c == 't' ? &o->to
                             : c == 'm' ? &o->migrations
                             : c >= PARAM_BASE && c < PARAM_BASE + (int)N_PARAMS
                                 ? &o->param[c - PARAM_BASE]
                                 : NULL;
        if (!field) {
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
        *field = optarg;
    }
    if (optind != argc || !o->from || !o->to) {
        fputs(optind != argc ? usage : "ringkeeperd migrate-store: --from and --to are required\n",
              stderr);
        return EXIT_USAGE;
    }
    if (rkd_store_file(o->from) && access(rkd_store_file(o->from), F_OK) != 0) {
        rkd_log("--from %s: %s (an SQLite database to copy)", o->from, strerror(errno));
        return EXIT_USAGE;
    }
    if (strcmp(o->from, o->to) == 0) {
        rkd_log("--from and --to are both %s: give two stores", o->from);
        return EXIT_USAGE;
    }
    return 0;
}

/* The exit code of a store error: refusals 3, bad locations 2, the rest 1. */
static int exit_code(int code)
{
    return code == RKD_STORE_ECONFLICT || code == RKD_STORE_ENOTRK || code == RKD_STORE_ETOONEW
               ? EXIT_REFUSED
           : code == RK_EINVAL ? EXIT_USAGE
                               : EXIT_FAILURE;
}

/* The store at `location` given those of p[0 .. n) its backend takes, and --migrations when it
 * takes that. */
static rkd_store *open_side(const char *flag, const char *location, const rkd_store_param *p,
                            size_t n, const char *migrations, int *rc)
{
    rk_error err = {0};
    rkd_store_param mine[N_PARAMS + 1];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (rkd_store_takes(location, p[i].name))
            mine[k++] = p[i];
    if (rkd_store_takes(location, "migrations"))
        mine[k++] = (rkd_store_param){"migrations", migrations};
    rkd_store *s = rkd_store_open_with(location, mine, k, &err);
    if (!s) {
        rkd_log("%s %s: %s", flag, location, err.message);
        *rc = exit_code(err.code);
    }
    return s;
}

int rkd_migrate_main(int argc, char **argv, const char *migrations)
{
    rkd_log_set_name("ringkeeperd migrate-store");
    migrate_options o = {NULL, NULL, migrations, {0}};
    int rc = parse_migrate_options(argc, argv, &o);
    rkd_store_param p[N_PARAMS];
    size_t n = 0;
    for (size_t i = 0; i < N_PARAMS; i++)
        if (o.param[i])
            p[n++] = (rkd_store_param){param_flags[i], o.param[i]};
    /* the side the flags are for: --from when its backend takes them, else --to, which refuses
     * those it does not take */
    rk_error err = {0};
    if (rc == 0 && rkd_store_check(n && rkd_store_takes(o.from, p[0].name) ? o.from : o.to, p, n,
                                   &err) != RK_OK)
        rc = rkd_log_fail(EXIT_USAGE, "%s", err.message);
    rkd_store *from = rc ? NULL : open_side("--from", o.from, p, n, o.migrations, &rc);
    rkd_store *to = from ? open_side("--to", o.to, p, n, o.migrations, &rc) : NULL;
    if (to) {
        rk_error err = {0};
        rkd_copy_summary sum;
        int code = rkd_store_copy(from, to, stderr, &sum, &err);
        if (code == RK_OK)
            rkd_log("%s copied to %s and verified: %zu clusters, %zu "
                    "versions, %zu events, %zu approvals; store id %s",
                    o.from, o.to, sum.clusters, sum.versions, sum.events, sum.approvals,
                    rkd_store_id(to));
        else
            rkd_log("%s", err.message);
        rc = code == RK_OK ? 0 : exit_code(code);
    }
    rkd_store_close(to);
    rkd_store_close(from);
    return rc;
}
