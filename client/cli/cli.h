/* cli.h — shared pieces of the ringkeeper command-line tool: exit codes, file reading, topologies.
 */
#ifndef RK_CLI_H
#define RK_CLI_H

#include <stdio.h>

#include <jansson.h>

#include "ringkeeper.h"

/* Exit codes, documented in `ringkeeper --help` and the README. */
enum {
    RK_EXIT_OK = 0,          /* success */
    RK_EXIT_FAIL = 1,        /* anything else: out of memory, write error */
    RK_EXIT_USAGE = 2,       /* bad input: unknown flag, unreadable file, invalid topology */
    RK_EXIT_REFUSED = 3,     /* a ring whose parameters differ from what was expected */
    RK_EXIT_UNREACHABLE = 4, /* the server could not be reached (and no usable cache) */
};

#define RK_CLI_MAX_FILE    (64u << 20) /* largest topology or key file read into memory */
#define RK_CLI_TIMEOUT     30          /* default --timeout: seconds a server request may take */
#define RK_CLI_MAX_TIMEOUT 3600        /* largest --timeout */
/* The --timeout line of every server command's --help, after the option's column. */
#define RK_CLI_TIMEOUT_HELP "give up on the server after S seconds, 1..3600 (default 30)\n"

typedef struct rk_cli_remote rk_cli_remote;

typedef struct rk_cli_cmd {
    const char *name;
    int (*run)(const struct rk_cli_cmd *cmd, int argc, char **argv); /* cmd: this command */
    const char *usage;           /* printed by --help and after a usage error */
    const rk_cli_remote *remote; /* a one-request server command's request (remote_cmds.c) */
    const char *operand;         /* the name of its one operand ("FILE", "V"), NULL for none */
} rk_cli_cmd;

extern const rk_cli_cmd rk_cli_lookup, rk_cli_plan, rk_cli_simulate, rk_cli_publish,
    rk_cli_activate, rk_cli_revert, rk_cli_versions, rk_cli_show, rk_cli_import, rk_cli_export,
    rk_cli_approve, rk_cli_policy, rk_cli_events, rk_cli_migration, rk_cli_watch, rk_cli_rollouts;
extern const rk_cli_cmd rk_cli_clients, rk_cli_rollout, rk_cli_agent, rk_cli_suggest;

/* How rk_cli_write_safe writes what a terminal would obey. */
typedef enum {
    RK_CLI_SAFE_LINE,  /* one line or table cell: every control escaped, \n too */
    RK_CLI_SAFE_LINES, /* a text of lines: \n kept */
    RK_CLI_SAFE_JSON,  /* a JSON document: \n kept, the rest as \u00XX, so it stays JSON */
} rk_cli_safe_mode;

/* Writes len bytes of s to f with C0 controls, DEL and C1 controls escaped visibly (\x1b, \r, \n,
 * \x7f, \u0085), the marks a terminal hides or applies (rk_text_hidden: \u202E, \U000E0041) and
 * invalid UTF-8 bytes as \xNN: text from a server or a file may otherwise recolour or clear the
 * terminal, reorder a line, and forge table rows or error lines. Returns EOF on error. */
int rk_cli_write_safe(FILE *f, const char *s, size_t len, rk_cli_safe_mode mode);
/* printf to f through rk_cli_write_safe; for any line holding a server's or a file's text. */
int rk_cli_print_safe(FILE *f, rk_cli_safe_mode mode, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints "ringkeeper <cmd>: <message>" to stderr, the message escaped (it may quote a server or a
 * file), and returns `code`. */
int rk_cli_fail(const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A usage error: "ringkeeper <cmd>: <why>" and a pointer to --help on stderr; returns
 * RK_EXIT_USAGE. */
int rk_cli_usage_error(const rk_cli_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* True when argv holds -h or --help. */
int rk_cli_wants_help(int argc, char **argv);

/* Reads a topology or version document from `path` and builds its ring; on failure prints why and
 * returns NULL. The caller frees the ring with rk_ring_free. */
rk_ring *rk_cli_load_ring(const char *cmd, const char *path);
/* The same for a document held in memory; `label` names it in errors. */
rk_ring *rk_cli_ring_from_text(const char *cmd, const char *label, const char *text, size_t len);
/* The whole file, NUL-terminated (free() it), or NULL with a message printed. */
char *rk_cli_read_file(const char *cmd, const char *path, size_t *len);
/* The same with nothing printed: NULL with errno set (EFBIG past RK_CLI_MAX_FILE). */
char *rk_cli_slurp(const char *path, size_t *len);

/* Replaces (or creates) the file `path` with the len bytes of `data` atomically: a temporary file
 * beside it with the mode of the existing file `mode_of` (often `path` itself), fsync, rename; a
 * reader (or a crash) sees the old file or the new one, never a part. 0, or -1 with errno set and
 * `path` unchanged. */
int rk_cli_replace_file(const char *path, const char *mode_of, const char *data, size_t len);
/* Parses a whole decimal number within lo..hi; returns 0 on success. */
int rk_cli_number(const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long *out);

/* Reads the next line of `f` without its "\n" into *line (getline buffer); returns its length, or
 * -1 at the end. A last line without "\n" counts as a line. */
long rk_cli_next_key(FILE *f, char **line, size_t *cap);

/* The offline and the server simulate share this: routes every key of `keys` with both rings
 * and prints the report; returns an exit code. */
int rk_cli_simulate_rings(const char *keys, const rk_ring *r[2]);

/* plan --load (plan_load.c): the plan p (to ring `after`) weighed by the profile in file `path`,
 * into *out (rk_plan_load_to_json's document and the profile's "profile": who, when, how old);
 * returns an exit code, the reason printed. */
int rk_cli_plan_load(const char *path, const rk_plan *p, const rk_ring *after, json_t **out);
/* The load profile in file `path` (JSON; duplicate keys refused) into *out (json_decref it), or
 * the reason printed as command `cmd`'s ("--load PATH: ..."); returns an exit code. */
int rk_cli_read_profile(const char *cmd, const char *path, json_t **out);

/* ---- The server commands (remote.c, http.c) ---- */

typedef struct rk_cli_server {
    const char *url;     /* --server, else $RINGKEEPER_SERVER */
    const char *cluster; /* --cluster (-c), else $RINGKEEPER_CLUSTER */
    const char *token;   /* --token, else $RINGKEEPER_TOKEN; never printed */
    const char *ca_file; /* --ca-file, else $RINGKEEPER_CA_FILE: CA bundle for https, or NULL */
    unsigned long long timeout; /* --timeout: seconds per request, else RK_CLI_TIMEOUT */
    const char *if_match;       /* --if-match N of a write: sent as If-Match: "vN", or NULL */
} rk_cli_server;

/* The server options' lines of a command's usage; `token` says what --token is for. */
#define SERVER_OPTIONS_HELP_(token)                                                                \
    "  --server URL   the server (default $RINGKEEPER_SERVER)\n"                                   \
    "  -c, --cluster C  the cluster (default $RINGKEEPER_CLUSTER)\n"                               \
    "  --token T      " token " (default $RINGKEEPER_TOKEN)\n"                                     \
    "  --ca-file F    CA certificates for an https server (default $RINGKEEPER_CA_FILE)\n"         \
    "  --timeout S    " RK_CLI_TIMEOUT_HELP
/* ... of a command that writes, and of one that only reads (reads need no token). */
#define SERVER_OPTIONS_HELP SERVER_OPTIONS_HELP_("bearer token for this write")
#define READ_OPTIONS_HELP   SERVER_OPTIONS_HELP_("bearer token; this command only reads: none needed")

/* Fills the environment and --timeout defaults and checks server (http:// or https://, as the
 * client library wants it) and cluster; returns an exit code. */
int rk_cli_server_check(const char *cmd, rk_cli_server *s);
/* $RINGKEEPER_CLUSTER (borrowed from the environment), or NULL when it is unset or empty. It is
 * the cluster of a command that talks to a server, but never what makes it talk to one: a command
 * that is offline with a file (lookup --topology, export --file) stays offline. */
const char *rk_cli_env_cluster(void);

/* ---- Options (options.c) ---- */

typedef enum {
    RK_CLI_TEXT,     /* const char *: the value as given */
    RK_CLI_CHOICE,   /* const char *: one of `choices` */
    RK_CLI_VERSION,  /* const char *: a version number, kept as text for the URL */
    RK_CLI_NUMBER,   /* unsigned long long: a whole number in lo..hi */
    RK_CLI_FRACTION, /* double: in (0, 1] */
    RK_CLI_FLAG,     /* int: 1 when given; takes no value */
    RK_CLI_OUTPUT,   /* const rk_cli_view: the command prints a result; gives -o and --quiet */
} rk_cli_kind;

/* One --option of a command; a table of them ends with {0}. */
typedef struct rk_cli_option {
    const char *name; /* without the "--" */
    rk_cli_kind kind;
    void *value;                /* where the value goes, of the kind's type */
    int required;               /* missing: the usage, exit 2 */
    unsigned long long lo, hi;  /* RK_CLI_NUMBER's range */
    const char *const *choices; /* RK_CLI_CHOICE's values, NULL-terminated */
    const char *must;           /* for a bad value's message, when "lo..hi" does not say it */
    char letter;                /* its one-letter form (-o), or 0 */
} rk_cli_option;

/* A table row: RK_CLI_OPT("replicas", RK_CLI_NUMBER, &replicas, .lo = 1, .hi = 64). */
#define RK_CLI_OPT(option, type, where, ...)                                                       \
    {                                                                                              \
        .name = (option), .kind = (type), .value = (where), __VA_ARGS__                            \
    }

/* The row that gives a command -o json|table and --quiet: RK_CLI_OUTPUT_OPT(&view). */
#define RK_CLI_OUTPUT_OPT(view) RK_CLI_OPT("output", RK_CLI_OUTPUT, (void *)(view))

/* Parses argv by the table `opts`, plus the server options into *server when it is not NULL, and
 * exactly one operand into *operand when it is not NULL (else none). An unknown option, a missing
 * value or operand prints the usage, a bad value "--name: must be ..., got ..."; returns an exit
 * code. */
int rk_cli_parse(const rk_cli_cmd *cmd, int argc, char **argv, const rk_cli_option *opts,
                 rk_cli_server *server, const char **operand);
/* plan's and simulate's two sides: each a file (--from-file, --to-file) or a version of the
 * server's cluster (--from, --to, both optional); one file needs the other or --cluster. The usage
 * when they are mixed up. Returns an exit code. */
int rk_cli_two_sides(const rk_cli_cmd *cmd, const char *const file[2], const char *const version[2],
                     const rk_cli_server *s);
/* Checks that the V operand is a version number; returns an exit code. */
int rk_cli_version_arg(const char *cmd, const char *v);

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
    long timeout_s;      /* the whole exchange at most, seconds */
    const char *header;  /* one more request header line ("If-Match: ..."), or NULL */
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
/* As rk_cli_call, except that an error answer whose code is `code` (or one of its space-separated
 * words) is not printed: *had is set
 * (else cleared) and the status's exit code returned, for a caller that has another way. */
int rk_cli_call_except(const char *cmd, const rk_cli_server *s, const char *code, int *had,
                       const rk_cli_body *in, rk_cli_body *out, const char *method,
                       const char *route_fmt, ...) __attribute__((format(printf, 8, 9)));
typedef enum { RK_CLI_ACTIVE, RK_CLI_LATEST } rk_cli_default_version;

/* The ring of version `version` (a decimal number) of the cluster, or when it is NULL of the
 * active or the latest version; NULL with *rc set (and the reason printed) on failure. */
rk_ring *rk_cli_fetch_ring(const char *cmd, const rk_cli_server *s, const char *version,
                           rk_cli_default_version dflt, int *rc);

/* Both sides' rings: each from its file, else from the server: its version, or by default the
 * active one (from) or the latest (to). `label` gets each side's name for people (a file name, or
 * "C vN", "C (active)", "C (latest)"), 64 bytes each. Returns an exit code; on failure r[] may hold
 * a ring to free. */
int rk_cli_load_sides(const char *cmd, const char *const file[2], const char *const version[2],
                      rk_cli_server *s, rk_ring *r[2], char label[2][64]);

typedef struct rk_cli_lookup_server {
    rk_cli_server server;
    const char *cache_file;                 /* --cache, or NULL */
    int reset_cache;                        /* --reset-cache */
    const char *expect_hash;                /* --expect-hash, or NULL */
    const char *expect_scheme;              /* --expect-scheme, or NULL */
    unsigned long long expect_vnode_factor; /* --expect-vnode-factor, or 0 */
    const char *client_id;                  /* --client-id, or NULL: not counted (RK-Client) */
} rk_cli_lookup_server;

/* Prints why a client library call failed (c may be NULL; else also why its --cache file did not
 * help) and returns its exit code: 4 unreachable, 3 ring refused, 2 a 4xx or bad input, else 1. */
int rk_cli_client_failed(const char *cmd, rk_client *c, const rk_error *err);

/* The active ring of the cluster, verified by the client library (or its last-known-good file,
 * with a note on stderr); a new snapshot reference in *out, release it. Returns an exit code. */
int rk_cli_lookup_snapshot(const rk_cli_lookup_server *ls, rk_snapshot **out);

/* ---- Output (output.c): -o json|table and --quiet, chosen in one place for every command ---- */

/* How a command prints its result document. A command adopts -o and --quiet with one row in its
 * options, RK_CLI_OUTPUT_OPT(&view), and prints through rk_cli_print_result or rk_cli_print_body.
 */
typedef struct rk_cli_view {
    const char *dflt;                /* without -o: "json" or "table" */
    int (*table)(const json_t *doc); /* -o table, returns an exit code; NULL: the generic table
                                        (scalars as "key  value", lists of objects as columns) */
    const char *quiet; /* --quiet prints this field of the result ("a.field": of its object a),
                          "list[].field" that field of each element, one a line; NULL: nothing */
} rk_cli_view;

/* The -o and --quiet given to this process's one command; rk_cli_parse fills them. */
typedef struct rk_cli_output {
    const rk_cli_view *view; /* the command's, from its RK_CLI_OUTPUT_OPT row; NULL: none */
    const char *format;      /* -o: "json" or "table"; NULL: the view's default */
    int quiet;               /* --quiet: only the view's essential field */
} rk_cli_output;
extern rk_cli_output rk_cli_out;

/* The lines of -o and --quiet in a command's usage. */
#define RK_CLI_OUTPUT_HELP(dflt)                                                                   \
    "  -o, --output json|table   the result as JSON or as a table for people (default " dflt ")\n" \
    "  -q, --quiet    print only the essential (see ringkeeper --help)\n"

/* The format the command prints in: -o, else its view's default ("json" without a view). */
const char *rk_cli_format(void);
/* Prints `doc` (borrowed), the result of command `cmd`, as -o and --quiet chose: indented JSON,
 * the view's table, or only its essential field. Returns an exit code. */
int rk_cli_print_result(const char *cmd, const json_t *doc);
/* The same for a server's answer (JSON text); an answer that is not JSON is a failure (1). */
int rk_cli_print_body(const char *cmd, const rk_cli_body *body);
/* The end of a command that prints what the server answered: the answer when `rc` (rk_cli_call's)
 * is RK_EXIT_OK, else nothing. Frees `answer`'s data either way; returns the exit code. */
int rk_cli_print_answer(const char *cmd, int rc, rk_cli_body *answer);
/* One record of a stream (watch), on one line as -o and --quiet chose: compact JSON, key=value
 * pairs (logfmt; the view's table is not used), or the quiet field. Returns an exit code. */
int rk_cli_print_record(const char *cmd, const json_t *doc);
/* One value as text for a line or a cell: a string as it is, null as "-", others as compact JSON.
 * New string, free() it; NULL when out of memory. */
char *rk_cli_cell(const json_t *v);
/* A list of objects as columns under a header of their keys (in order of appearance), each as
 * wide as its widest cell (rk_cli_cell's text) but the last, which is not padded. */
void rk_cli_print_columns(const json_t *list);

#endif
