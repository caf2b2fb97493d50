/* daemon_flags.h — ringkeeperd's flags: one table (daemon_flags.c) gives each its usage line,
 * default, parsing, range check and error message; main.c starts the daemon from what they say. */
#ifndef RKD_DAEMON_FLAGS_H
#define RKD_DAEMON_FLAGS_H

#include "store.h"

#define RKD_FLAGS_MAX 48 /* room in rkd_options for a value per flag */

enum { RKD_EXIT_USAGE = 2, RKD_EXIT_DATABASE = 3 };

typedef struct rkd_options {
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
    const char *store_param[RKD_FLAGS_MAX]; /* a STORE_PARAM flag's value by its row, or NULL */
} rkd_options;

/* The defaults, then the command line, into `o` (its strings point into argv or static storage):
 * 0, or RKD_EXIT_USAGE after logging why. Prints the usage and exits 0 for --help, the version for
 * --version. */
int rkd_options_parse(int argc, char **argv, rkd_options *o);

/* The store backends' flags given, by name, in the table's order, into p (room for
 * RKD_FLAGS_MAX): their count. The names are static; the values are o's. */
size_t rkd_options_store_params(const rkd_options *o, rkd_store_param *p);

/* The migrations installed with this binary, else the source tree's: a static string. */
const char *rkd_default_migrations(void);

#endif
