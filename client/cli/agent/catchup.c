/* catchup.c — the agent's catch-up (docs/AGENT.md, "--catch-up"): while its proxy is stopped,
 * every key that moves from the pool the proxy ran to the version is compared on its old and new
 * owner, and the new owner takes the old owner's value where they differ (the data mover's verify
 * with catch_up, client/mover/copy.h). Nothing writes through a stopped proxy, so when it starts
 * on the version its new owners hold no value older than the last write it passed: a pre-warmed
 * copy that a client wrote over since is written over in turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "copy.h"

typedef struct catch_up {
    const char *data;    /* the store (rkm_driver_find) */
    rk_ring *old;        /* the pool the proxy ran */
    const rk_ring *ring; /* the version's (borrowed) */
    rkm_conn **dest;     /* the version's nodes; NULL for one of weight 0, which no key goes to */
    size_t n_dest;
    rkm_verify_counters sum; /* over the sources */
} catch_up;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The new owners, opened to be written over. 0, or -1 with the node in msg. */
static int open_dests(catch_up *c, char msg[RK_CLI_AGENT_MSG])
{
    const rk_topology *t = rk_ring_topology(c->ring);
    rkm_options opt = {.overwrite = true};
    rk_error err = {0};
    for (size_t i = 0; i < c->n_dest; i++) {
        const rk_node *n = rk_topology_node(t, (uint32_t)i);
        if (n->weight > 0 && !(c->dest[i] = rkm_conn_new(c->data, n->addr, &opt, &err)))
            return snprintf(msg, RK_CLI_AGENT_MSG, "node %.64s (%.100s): %.300s", n->id, n->addr,
                            err.message),
                   -1;
    }
    return 0;
}

/* Source i of the pool the proxy ran: its moving keys caught up. 0, or -1 with why in msg: the
 * source or a new owner out of reach, or keys still different after their writes (listed). */
static int one_source(catch_up *c, uint32_t i, char msg[RK_CLI_AGENT_MSG])
{
    const rk_node *n = rk_topology_node(rk_ring_topology(c->old), i);
    rk_error err = {0};
    rkm_conn *src = rkm_conn_new(c->data, n->addr, NULL, &err);
    if (!src)
        return snprintf(msg, RK_CLI_AGENT_MSG, "node %.64s (%.100s): %.300s", n->id, n->addr,
                        err.message),
               -1;
    rkm_copy_config cfg = {.old_ring = c->old,
                           .new_ring = c->ring,
                           .source = i,
                           .src = src,
                           .dest = c->dest,
                           .n_dest = c->n_dest,
                           .catch_up = true};
    rkm_verify_state st;
    rkm_verify_state_init(&st);
    int rc = rkm_verify_run(&cfg, &st, NULL, NULL, &err);
    const rkm_verify_counters *k = &st.counters;
    uint64_t left = k->missing + k->value + k->ttl + k->errors;
    if (rc != RK_OK)
        snprintf(msg, RK_CLI_AGENT_MSG, "node %.64s (%.100s): %.300s", n->id, n->addr, err.message);
    else if (left > 0)
        snprintf(msg, RK_CLI_AGENT_MSG,
                 "node %.64s: %llu moving key(s) still differ on their new owners after the "
                 "catch-up (%llu failed: %.200s)",
                 n->id, (unsigned long long)left, (unsigned long long)k->errors,
                 st.failed.n ? st.failed.items[0].note : "none");
    c->sum.checked += k->checked;
    c->sum.updated += k->updated;
    c->sum.skipped += k->skipped;
    rkm_verify_state_deinit(&st);
    rkm_conn_free(src);
    return rc == RK_OK && left == 0 ? 0 : -1;
}

static void release(catch_up *c)
{
    for (size_t i = 0; c->dest && i < c->n_dest; i++)
        rkm_conn_free(c->dest[i]);
    free(c->dest);
    rk_ring_free(c->old);
}

int rk_cli_agent_catch_up(const rk_cli_agent_state *a, rk_topology *from, const rk_ring *to,
                          int64_t version, char msg[RK_CLI_AGENT_MSG])
{
    const rk_topology *t = rk_ring_topology(to);
    catch_up c = {.data = rk_topology_data(t), .ring = to};
    rk_error err = {0};
    double start = now_s();
    if (!c.data || !rkm_driver_find(c.data))
        return snprintf(msg, RK_CLI_AGENT_MSG,
                        "the version's data store is %.64s: the catch-up reads memcached or "
                        "redis servers (set the topology's \"data\")",
                        c.data ? c.data : "not said"),
               -1;
    c.old = rk_ring_build(from, &err);
    c.n_dest = rk_topology_node_count(t);
    c.dest = calloc(c.n_dest, sizeof *c.dest);
    int rc = -1;
    if (!c.old || !c.dest)
        snprintf(msg, RK_CLI_AGENT_MSG, "%.400s", c.old ? "out of memory" : err.message);
    else if (rk_ring_fingerprint(c.old) == rk_ring_fingerprint(to))
        rc = 0; /* the same ring (an agent started on the pool it runs): no scan, no key moves */
    else if (open_dests(&c, msg) == 0) {
        rc = 0;
        for (uint32_t i = 0; rc == 0 && i < rk_topology_node_count(from); i++)
            rc = one_source(&c, i, msg);
    }
    if (rc == 0)
        rk_cli_agent_log(a, version,
                         "caught up in %.2f s: %llu moving key(s) compared, %llu written to their "
                         "new owners, %llu over the size cap skipped",
                         now_s() - start, (unsigned long long)c.sum.checked,
                         (unsigned long long)c.sum.updated, (unsigned long long)c.sum.skipped);
    release(&c);
    return rc;
}
