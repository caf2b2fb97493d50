/* haproxy.c — HAProxy for the agent (docs/AGENT.md, "HAProxy"): `haproxy -c` validates; its master
 * CLI (the socket of `-W -S`) reloads seamlessly (`reload`: the master starts a new worker on the
 * new file, the old one finishes its connections) and confirms: a new current worker (`show proc`)
 * whose runtime API (`show servers state BACKEND`) lists exactly the new version's servers (id,
 * address, weight). A reload that fails leaves the old worker current, with the old servers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

#define ASK_MS 5000 /* one question to the master CLI, at most */

/* The current worker's PID from the master's `show proc` (the first worker before "# old
 * workers"), or -1 with a sentence in msg. */
static long current_worker(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG])
{
    char *answer = rk_cli_agent_ask(a->where, "show proc\n", ASK_MS, msg), type[32];
    long pid = -1, p;
    for (char *l = answer; l && *l && pid < 0 && strncmp(l, "# old", 5) != 0;) {
        if (sscanf(l, "%ld %31s", &p, type) == 2 && strcmp(type, "worker") == 0)
            pid = p;
        l += strcspn(l, "\n");
        l += *l == '\n';
    }
    if (answer && pid < 0)
        snprintf(msg, RK_CLI_AGENT_MSG, "the master CLI %s lists no current worker", a->where);
    free(answer);
    return pid;
}

static int before(const rk_cli_agent_state *a, rk_cli_proxy_before *b, char msg[RK_CLI_AGENT_MSG])
{
    long pid = current_worker(a, msg);
    b->n_pids = pid > 0;
    b->pids[0] = pid;
    return pid > 0 ? 0 : -1;
}

static int reload_now(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG])
{
    /* the master execs itself again: it closes the connection and says nothing (HAProxy 2.6) */
    char *answer = rk_cli_agent_ask(a->where, "reload\n", ASK_MS, msg);
    free(answer);
    return answer ? 0 : -1;
}

/* Whether t has a node of id `id` (HAProxy's server id), address `addr` ("host:port") and weight
 * `weight` (as HAProxy shows it). */
static int has_server(const rk_topology *t, const char *id, const char *addr, const char *weight)
{
    for (size_t i = 0; i < rk_topology_node_count(t); i++) {
        const rk_node *n = rk_topology_node(t, i);
        if (strcmp(n->id, id) == 0 && strcmp(n->addr, addr) == 0 &&
            strtod(weight, NULL) == n->weight)
            return 1;
    }
    return 0;
}

/* How many servers of `state` (show servers state's lines: fields 3 the id, 5 the address, 8 the
 * configured weight, 19 the port) are the servers of t; *all counts every server listed. */
static size_t servers_of(char *state, const rk_topology *t, size_t *all)
{
    size_t match = 0;
    *all = 0;
    char *lines, *words;
    for (char *l = strtok_r(state, "\n", &lines); l; l = strtok_r(NULL, "\n", &lines)) {
        char addr[300], *f[20];
        size_t n = 0;
        for (char *w = strtok_r(l, " ", &words); w && n < 20; w = strtok_r(NULL, " ", &words))
            f[n++] = w;
        if (n < 19 || f[0][0] == '#')
            continue; /* the format's version line, the header */
        snprintf(addr, sizeof addr, "%s:%s", f[4], f[18]);
        (*all)++;
        match += has_server(t, f[2], addr, f[7]);
    }
    return match;
}

static int confirm(const rk_cli_agent_state *a, const rk_cli_proxy_before *b, const rk_topology *t,
                   char msg[RK_CLI_AGENT_MSG])
{
    long pid = current_worker(a, msg);
    if (pid < 0)
        return RK_CLI_CONFIRM_UNASKED;
    if (b->n_pids && pid == b->pids[0])
        return snprintf(msg, RK_CLI_AGENT_MSG,
                        "worker %ld is still the current one: the reload did not take (see "
                        "HAProxy's log)",
                        pid),
               RK_CLI_CONFIRM_UNCHANGED;
    char ask[RK_CLI_AGENT_MSG + 64];
    const char *backend = a->part ? a->part : a->chosen;
    snprintf(ask, sizeof ask, "@!%ld show servers state %s\n", pid, backend);
    char *state = rk_cli_agent_ask(a->where, ask, ASK_MS, msg);
    if (!state)
        return RK_CLI_CONFIRM_UNASKED;
    size_t all, match = servers_of(state, t, &all), want = rk_topology_node_count(t);
    free(state);
    snprintf(msg, RK_CLI_AGENT_MSG,
             "worker %ld lists %zu server(s) in backend %.200s, %zu of the version's %zu", pid, all,
             backend, match, want);
    return match == want && all == want ? RK_CLI_CONFIRM_RUNS : RK_CLI_CONFIRM_NOT_YET;
}

const rk_cli_proxy rk_cli_proxy_haproxy = {
    .name = "haproxy",
    .format = "haproxy",
    .validate = "haproxy -c -f \"$RK_AGENT_FILE\"", /* -q would hide its alerts */
    .reload_word = "reload",
    .where_option = "socket",
    .where_default = "/run/haproxy-master.sock",
    .before = before,
    .reload_now = reload_now,
    .confirm = confirm,
};
