/* agent.h — `ringkeeper agent` (docs/AGENT.md): a process beside a proxy (nginx, HAProxy,
 * nutcracker) that long-polls its cluster's ring like a library client and cuts the proxy over to
 * each new version: writes it into the proxy's file with the format's --into, validates, reloads,
 * confirms that the proxy runs it, and only then holds it; on any failure it restores the file and
 * the running configuration and refuses the version with the reason. What its files share:
 * agent.c is the command (options, config file, start checks, the loop), apply.c the five steps,
 * exec.c runs the proxies' commands, ask.c asks a socket, metrics.c serves /metrics, catchup.c
 * writes the new owners while a stopped proxy passes nothing (--catch-up), and
 * nginx.c, haproxy.c, nutcracker.c each hold one proxy behind rk_cli_proxy. */
#ifndef RK_CLI_AGENT_H
#define RK_CLI_AGENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../cli.h"
#include "../formats/format.h"

#define RK_CLI_AGENT_MSG        RK_CLI_FORMAT_MSG_MAX /* a step's sentence */
#define RK_CLI_AGENT_PATH       4096                  /* a path the agent builds */
#define RK_CLI_AGENT_MAX_PIDS   64                    /* an nginx master's workers, at most */
#define RK_CLI_AGENT_POLL_MS    200                   /* confirm asks this often */
#define RK_CLI_AGENT_ANSWER_MAX (8u << 20)            /* a socket's answer, at most */

typedef struct rk_cli_agent_state rk_cli_agent_state;

/* What a proxy ran before a reload, for its confirm to tell the new generation from the old. */
typedef struct rk_cli_proxy_before {
    long pids[RK_CLI_AGENT_MAX_PIDS]; /* nginx: the master's workers; HAProxy: its worker */
    size_t n_pids;
} rk_cli_proxy_before;

/* What a proxy's built-in confirm says. */
enum {
    RK_CLI_CONFIRM_UNASKED = -1,  /* the proxy cannot be asked (why in its sentence) */
    RK_CLI_CONFIRM_NOT_YET = 0,   /* it runs something else than the version */
    RK_CLI_CONFIRM_RUNS = 1,      /* it runs the version */
    RK_CLI_CONFIRM_UNCHANGED = 2, /* it still runs the generation of before the reload: the
                                     reload did not take, nothing changed */
};

/* One proxy: its format, default commands and built-in steps. A step that is NULL has no
 * built-in way: its command must be given (agent.c says so at start). */
typedef struct rk_cli_proxy {
    const char *name;        /* --proxy NAME */
    const char *format;      /* its configuration format (formats/format.h) */
    const char *validate;    /* default validate command, run by sh with $RK_AGENT_FILE set */
    const char *reload;      /* default reload command, or NULL: the built-in reload below */
    const char *reload_word; /* "reload", or "restart" for a proxy that cannot reload */
    /* For a proxy that restarts: the default stop and start commands that --catch-up runs
     * instead of the restart, the catch-up between them; NULL for one that reloads (its old
     * workers serve on while the new start: there is no moment when nothing passes). */
    const char *stop, *start;
    /* Where the built-in steps ask the proxy: the option that says it ("pid-file", "socket",
     * "stats") and its default; the agent's `where`. */
    const char *where_option, *where_default;
    /* Notes what runs now into *b; 0, or -1 with a sentence in msg. */
    int (*before)(const rk_cli_agent_state *a, rk_cli_proxy_before *b, char msg[RK_CLI_AGENT_MSG]);
    /* The built-in reload: 0, or -1 with a sentence in msg. */
    int (*reload_now)(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG]);
    /* Whether the running proxy runs topology t now: an RK_CLI_CONFIRM_ value, and what it shows
     * in msg. */
    int (*confirm)(const rk_cli_agent_state *a, const rk_cli_proxy_before *b, const rk_topology *t,
                   char msg[RK_CLI_AGENT_MSG]);
} rk_cli_proxy;

extern const rk_cli_proxy rk_cli_proxy_nginx, rk_cli_proxy_haproxy, rk_cli_proxy_nutcracker;

/* The agent: its configuration (borrowed from argv and the config file, which outlive it) and
 * what it counts, which metrics.c reads from its own thread. */
struct rk_cli_agent_state {
    const rk_cli_proxy *proxy;
    const rk_cli_conf_format *format;
    const char *file;    /* the proxy's configuration file */
    const char *part;    /* the pool, upstream or backend; NULL: the file's only one */
    const char *cluster; /* for the logs */
    const char *client_id;
    const char *validate, *reload, *confirm; /* the commands (NULL: the proxy's default) */
    const char *stop, *start;                /* --catch-up's (NULL: the proxy's default) */
    /* --catch-up: rk_cli_agent_catch_up, run between the stop and the start; NULL: a restart */
    int (*catch_up)(const rk_cli_agent_state *a, rk_topology *from, const rk_ring *to,
                    int64_t version, char msg[RK_CLI_AGENT_MSG]);
    const char *where;                  /* what the built-in steps ask (where_option) */
    unsigned long long command_timeout; /* seconds a command may run */
    unsigned long long confirm_timeout; /* seconds the proxy has to show the new version */
    char previous[RK_CLI_AGENT_PATH];   /* FILE.rk-previous: the file before the last write */
    char chosen[RK_CLI_AGENT_MSG];      /* the part's name, when the file's only one */
    int admitted_once;                  /* a ring was admitted (or refused) since start */
    char fatal_why[RK_CLI_AGENT_MSG];   /* why the first ring cannot go into the file ... */
    atomic_int fatal;                   /* ... set after it: exit 2 */
    atomic_llong applied, refused;      /* versions cut over, and refused, since start */
    atomic_llong held, refusing;        /* the version held (0: none) and refused last (0: none) */
};

/* ---- apply.c ---- */

/* The topology of the file's part, as `ringkeeper import` reads it (a new one, free it), or NULL
 * with a sentence naming the file in msg: it cannot be read, or has no such part. */
rk_topology *rk_cli_agent_file_topology(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG]);

/* The admit check the agent gives the client library (rk_client_set_admit): the five steps for
 * ring `ring` of `version`. `arg` is the rk_cli_agent_state. */
int rk_cli_agent_admit(void *arg, const rk_ring *ring, int64_t version, rk_error *why);
/* "[agent] <cluster> v<N>: <sentence>" on stderr, escaped (it may quote a file or a proxy). */
void rk_cli_agent_log(const rk_cli_agent_state *a, int64_t version, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- catchup.c (built with the data mover) ---- */

/* With the proxy stopped: every key that moves from `from` (the topology of the pool the proxy
 * ran) to `to` written to its new owner with its old owner's value where the two differ
 * (client/mover/copy.h, catch_up), on the store the version's "data" names; logged with its
 * counts. 0, or -1 with the node and the reason in msg. */
int rk_cli_agent_catch_up(const rk_cli_agent_state *a, rk_topology *from, const rk_ring *to,
                          int64_t version, char msg[RK_CLI_AGENT_MSG]);

/* ---- exec.c ---- */

/* Runs `command` with sh -c, $RK_AGENT_FILE, $RK_AGENT_VERSION and $RK_AGENT_PREVIOUS set, for at
 * most the agent's command timeout (then its process group is killed). 0 when it exits 0; else -1
 * with "exit N: <its last line of output>" (or "killed after S s") in msg. */
int rk_cli_agent_exec(const rk_cli_agent_state *a, const char *command, int64_t version,
                      char msg[RK_CLI_AGENT_MSG]);

/* ---- ask.c ---- */

/* Connects to `where` (a unix socket path starting with '/', else HOST:PORT), sends `request`
 * (may be ""), and reads the answer until the peer closes, for at most timeout_ms in all: a new
 * NUL-terminated text (free() it), or NULL with a sentence in msg. */
char *rk_cli_agent_ask(const char *where, const char *request, long timeout_ms,
                       char msg[RK_CLI_AGENT_MSG]);

/* ---- metrics.c ---- */

typedef struct rk_cli_agent_metrics rk_cli_agent_metrics;
/* Serves GET /metrics of `a` on `listen` (HOST:PORT of a loopback address) from a thread: NULL
 * with a sentence in msg when it cannot. Free (stop) with rk_cli_agent_metrics_free. */
rk_cli_agent_metrics *rk_cli_agent_metrics_new(const rk_cli_agent_state *a, const char *listen,
                                               char msg[RK_CLI_AGENT_MSG]);
void rk_cli_agent_metrics_free(rk_cli_agent_metrics *m);

#endif
