/* cli.h — shared pieces of the ringkeeper command-line tool: exit codes, file reading, topologies.
 */
#ifndef RK_CLI_H
#define RK_CLI_H

#include <stdio.h>

#include "ringkeeper.h"

/* Exit codes, documented in `ringkeeper --help` and the README. */
enum {
    RK_EXIT_OK = 0,          /* success */
    RK_EXIT_FAIL = 1,        /* anything else: out of memory, write error */
    RK_EXIT_USAGE = 2,       /* bad input: unknown flag, unreadable file, invalid topology */
    RK_EXIT_REFUSED = 3,     /* a ring whose parameters differ from what was expected */
    RK_EXIT_UNREACHABLE = 4, /* the server could not be reached (and no usable cache) */
};

#define RK_CLI_MAX_FILE (64u << 20) /* largest topology or key file read into memory */

typedef struct rk_cli_remote rk_cli_remote;

typedef struct rk_cli_cmd {
    const char *name;
    int (*run)(const struct rk_cli_cmd *cmd, int argc, char **argv); /* cmd: this command */
    const char *usage;           /* printed by --help and after a usage error */
    const rk_cli_remote *remote; /* a one-request server command's request (remote_cmds.c) */
} rk_cli_cmd;

extern const rk_cli_cmd rk_cli_lookup, rk_cli_plan, rk_cli_simulate, rk_cli_publish,
    rk_cli_activate, rk_cli_versions, rk_cli_show;

/* How rk_cli_write_safe writes what a terminal would obey. */
typedef enum {
    RK_CLI_SAFE_LINE,  /* one line or table cell: every control escaped, \n too */
    RK_CLI_SAFE_LINES, /* a text of lines: \n kept */
    RK_CLI_SAFE_JSON,  /* a JSON document: \n kept, the rest as \u00XX, so it stays JSON */
} rk_cli_safe_mode;

/* Writes len bytes of s to f with C0 controls, DEL and C1 controls escaped visibly (\x1b, \r, \n,
 * \x7f, \u0085) and invalid UTF-8 bytes as \xNN: text from a server or a file may otherwise
 * recolour or clear the terminal and forge table rows or error lines. Returns EOF on error. */
int rk_cli_write_safe(FILE *f, const char *s, size_t len, rk_cli_safe_mode mode);
/* printf to f through rk_cli_write_safe; for any line holding a server's or a file's text. */
int rk_cli_print_safe(FILE *f, rk_cli_safe_mode mode, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints "ringkeeper <cmd>: <message>" to stderr, the message escaped (it may quote a server or a
 * file), and returns `code`. */
int rk_cli_fail(const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints the usage of `cmd` to stderr and returns RK_EXIT_USAGE. */
int rk_cli_usage(const rk_cli_cmd *cmd);
/* True when argv holds -h or --help. */
int rk_cli_wants_help(int argc, char **argv);

/* Reads a topology or version document from `path` and builds its ring; on failure prints why and
 * returns NULL. The caller frees the ring with rk_ring_free. */
rk_ring *rk_cli_load_ring(const char *cmd, const char *path);
/* The same for a document held in memory; `label` names it in errors. */
rk_ring *rk_cli_ring_from_text(const char *cmd, const char *label, const char *text, size_t len);
/* The whole file, NUL-terminated (free() it), or NULL with a message printed. */
char *rk_cli_read_file(const char *cmd, const char *path, size_t *len);

/* Parses a whole decimal number within lo..hi; returns 0 on success. */
int rk_cli_number(const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long *out);

/* Reads the next line of `f` without its "\n" into *line (getline buffer); returns its length, or
 * -1 at the end. A last line without "\n" counts as a line. */
long rk_cli_next_key(FILE *f, char **line, size_t *cap);

/* The offline and the server simulate share this: routes every key of `keys` with both rings
 * and prints the report; returns an exit code. */
int rk_cli_simulate_rings(const char *keys, const rk_ring *r[2]);

/* ---- The server commands (remote.c, http.c) ---- */

typedef struct rk_cli_server {
    const char *url;     /* --server, else $RINGKEEPER_SERVER */
    const char *cluster; /* --cluster */
    const char *token;   /* --token, else $RINGKEEPER_TOKEN; never printed */
    const char *ca_file; /* --ca-file, else $RINGKEEPER_CA_FILE: CA bundle for https, or NULL */
} rk_cli_server;

/* getopt_long entries of the four server options; rk_cli_server_option takes their values. */
#define RK_CLI_SERVER_OPTIONS                                                                      \
    {"server", required_argument, NULL, 'S'}, {"cluster", required_argument, NULL, 'C'},           \
        {"token", required_argument, NULL, 'T'},                                                   \
    {                                                                                              \
        "ca-file", required_argument, NULL, 'A'                                                    \
    }

/* Stores the value of server option `c` in s; returns 0 when `c` is not one of them. */
int rk_cli_server_option(rk_cli_server *s, int c, const char *arg);
/* Fills the environment defaults and checks server and cluster; returns an exit code. */
int rk_cli_server_check(const char *cmd, rk_cli_server *s);

typedef struct rk_cli_remote_args {
    rk_cli_server server;
    const char *flag;       /* in: the command's one extra option ("limit"), or NULL */
    int flag_has_arg;       /* in: no_argument or required_argument */
    const char *flag_value; /* out: its argument ("" without one), NULL when not given */
    const char *operand;    /* out: the positional argument (FILE, V), when the command takes one */
} rk_cli_remote_args;

/* Parses the server options, the extra option and exactly `operands` (0 or 1) positional
 * arguments, then checks them with rk_cli_server_check; returns an exit code. */
int rk_cli_remote_parse(const rk_cli_cmd *cmd, int argc, char **argv, int operands,
                        rk_cli_remote_args *a);

typedef struct rk_cli_body {
    char *data; /* NUL-terminated when received; free() it */
    size_t len;
} rk_cli_body;

typedef struct rk_cli_request {
    const char *method;
    const char *url;
    const char *token; /* bearer token or NULL */
    const char *body;  /* NULL: none */
    size_t body_len;
    const char *ca_file; /* CA bundle to verify an https server with, or NULL: the system's */
} rk_cli_request;

/* One HTTP exchange with timeouts and a size cap (RK_CLI_MAX_FILE). RK_EXIT_OK when the server
 * answered, whatever the status (in *status; the body in *response, free() it); otherwise prints
 * why and returns RK_EXIT_UNREACHABLE (no answer), RK_EXIT_USAGE (a bad URL) or RK_EXIT_FAIL. */
int rk_cli_http(const char *cmd, const rk_cli_request *rq, long *status, char **response,
                size_t *response_len);
/* The exit code of an HTTP status: 2xx ok, 4xx bad input (2), anything else failure (1). */
int rk_cli_status_exit(long status);
/* METHOD <server>/v1/clusters/<cluster><route> with `in` as body (may be NULL). On a 2xx, returns
 * RK_EXIT_OK with the body in *out; otherwise prints the server's error message (and field) and
 * returns the exit code of the status, or of the failed transfer. */
int rk_cli_call(const char *cmd, const rk_cli_server *s, const rk_cli_body *in, rk_cli_body *out,
                const char *method, const char *route_fmt, ...)
    __attribute__((format(printf, 6, 7)));
typedef enum { RK_CLI_ACTIVE, RK_CLI_LATEST } rk_cli_default_version;

/* The ring of version `version` (a decimal number) of the cluster, or when it is NULL of the
 * active or the latest version; NULL with *rc set (and the reason printed) on failure. */
rk_ring *rk_cli_fetch_ring(const char *cmd, const rk_cli_server *s, const char *version,
                           rk_cli_default_version dflt, int *rc);
/* Checks that a --from / --to / V argument is a version number; returns an exit code. */
int rk_cli_version_arg(const char *cmd, const char *flag, const char *v);

typedef struct rk_cli_lookup_server {
    rk_cli_server server;
    const char *cache_file;       /* --cache, or NULL */
    const char *expect_hash;      /* --expect-hash, or NULL */
    uint32_t expect_vnode_factor; /* --expect-vnode-factor, or 0 */
} rk_cli_lookup_server;

/* The active ring of the cluster, verified by the client library (or its last-known-good file,
 * with a note on stderr); a new snapshot reference in *out, release it. Returns an exit code. */
int rk_cli_lookup_snapshot(const rk_cli_lookup_server *ls, rk_snapshot **out);

/* Prints a JSON document indented, for people. */
int rk_cli_print_json(const char *cmd, const rk_cli_body *doc);

#endif
