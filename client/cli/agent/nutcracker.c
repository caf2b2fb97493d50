/* nutcracker.c — twemproxy (nutcracker) for the agent (docs/AGENT.md, "nutcracker"): `nutcracker
 * -t` validates; nutcracker cannot reload its configuration, so the reload is a restart, by a
 * command (default: systemctl restart nutcracker), which drops its connections; with --catch-up
 * a stop and a start (systemctl stop / start nutcracker) around the catch-up; its stats port
 * confirms: the pool lists exactly the new version's servers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent.h"

#define ASK_MS 3000 /* the stats port answers at once */

/* Whether a stats server name is node `n`: nutcracker names a server by its configured name, else
 * by host:port; the ketama id of an unnamed server on port 11211 is its host alone. */
static int names(const rk_node *n, const char *name)
{
    return strcmp(n->id, name) == 0 || strcmp(n->addr, name) == 0;
}

/* The nodes of t a pool lists: a drained one (weight 0) is left out of it, as nutcracker refuses
 * weight 0 (formats/nutcracker.c). */
static int listed(const rk_node *n)
{
    return n->weight > 0;
}

static size_t listed_count(const rk_topology *t)
{
    size_t n = 0;
    for (size_t i = 0; i < rk_topology_node_count(t); i++)
        n += (size_t)listed(rk_topology_node(t, i));
    return n;
}

/* How many of the pool's servers (its members that are objects) are listed nodes of t; *all
 * counts them all. */
static size_t servers_of(const json_t *pool, const rk_topology *t, size_t *all)
{
    const char *key;
    json_t *v;
    size_t match = 0;
    *all = 0;
    json_object_foreach((json_t *)pool, key, v)
    {
        if (!json_is_object(v))
            continue;
        (*all)++;
        for (size_t i = 0; i < rk_topology_node_count(t); i++)
            if (listed(rk_topology_node(t, i)) && names(rk_topology_node(t, i), key)) {
                match++;
                break;
            }
    }
    return match;
}

static int confirm(const rk_cli_agent_state *a, const rk_cli_proxy_before *b, const rk_topology *t,
                   char msg[RK_CLI_AGENT_MSG])
{
    (void)b; /* a restarted nutcracker is a new process: its servers are the proof */
    char *text = rk_cli_agent_ask(a->where, "", ASK_MS, msg);
    if (!text)
        return RK_CLI_CONFIRM_NOT_YET; /* restarting: not listening yet */
    json_t *doc = json_loads(text, 0, NULL);
    free(text);
    const char *pool = a->part ? a->part : a->chosen;
    json_t *p = json_object_get(doc, pool);
    size_t all = 0, match = p ? servers_of(p, t, &all) : 0, want = listed_count(t);
    int ok = match == want && all == want;
    if (!p)
        snprintf(msg, RK_CLI_AGENT_MSG, "the stats of %.200s have no pool %.200s", a->where, pool);
    else
        snprintf(msg, RK_CLI_AGENT_MSG, "pool %.200s lists %zu server(s), %zu of the version's %zu",
                 pool, all, match, want);
    json_decref(doc);
    return ok ? RK_CLI_CONFIRM_RUNS : RK_CLI_CONFIRM_NOT_YET;
}

const rk_cli_proxy rk_cli_proxy_nutcracker = {
    .name = "nutcracker",
    .format = "nutcracker",
    .validate = "nutcracker -t -c \"$RK_AGENT_FILE\"",
    .reload = "systemctl restart nutcracker",
    .reload_word = "restart",
    .stop = "systemctl stop nutcracker",
    .start = "systemctl start nutcracker",
    .where_option = "stats",
    .where_default = "127.0.0.1:22222",
    .confirm = confirm,
};
