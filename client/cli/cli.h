/* cli.h — shared pieces of the ringkeeper command-line tool: exit codes, file reading, topologies.
 */
#ifndef RK_CLI_H
#define RK_CLI_H

#include <stdio.h>

#include "ringkeeper.h"

/* Exit codes, documented in `ringkeeper --help` and the README. */
enum {
    RK_EXIT_OK = 0,      /* success */
    RK_EXIT_FAIL = 1,    /* anything else: out of memory, write error */
    RK_EXIT_USAGE = 2,   /* bad input: unknown flag, unreadable file, invalid topology */
    RK_EXIT_REFUSED = 3, /* a ring whose parameters differ from what was expected */
};

#define RK_CLI_MAX_FILE (64u << 20) /* largest topology or key file read into memory */

typedef struct rk_cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage; /* printed by --help and after a usage error */
} rk_cli_cmd;

extern const rk_cli_cmd rk_cli_lookup, rk_cli_plan, rk_cli_simulate;

/* Prints "ringkeeper <cmd>: <message>" to stderr and returns `code`. */
int rk_cli_fail(const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints the usage of `cmd` to stderr and returns RK_EXIT_USAGE. */
int rk_cli_usage(const rk_cli_cmd *cmd);
/* True when argv holds -h or --help. */
int rk_cli_wants_help(int argc, char **argv);

/* Reads a topology or version document from `path` and builds its ring; on failure prints why and
 * returns NULL. The caller frees the ring with rk_ring_free. */
rk_ring *rk_cli_load_ring(const char *cmd, const char *path);

/* Parses a whole decimal number within lo..hi; returns 0 on success. */
int rk_cli_number(const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long *out);

/* Reads the next line of `f` without its "\n" into *line (getline buffer); returns its length, or
 * -1 at the end. A last line without "\n" counts as a line. */
long rk_cli_next_key(FILE *f, char **line, size_t *cap);

#endif
