/* verify.c — `ringkeeper migrate verify`: a read-only verify of the cluster's job, run
 * here over the job's two versions and reported to nobody: every key that moves, on each source
 * of the plan, compared with its new owner. Prints the mismatches by node, key and reason. */
#include <stdlib.h>
#include <string.h>

#include "migrate.h"

typedef struct local {
    const char *cmd;
    const char *data;
    rk_ring *ring[2];
    rkm_conn **dest;
    size_t n_dest;
    size_t batch;
    uint64_t checked, bad;
} local;

/* One source: its mismatches printed; an exit code for a failure that stopped it. */
static int verify_one(local *l, const char *id)
{
    long i = mig_node_index(l->ring[0], id);
    rk_error err = {0};
    if (i < 0)
        return rk_cli_fail(l->cmd, RK_EXIT_FAIL, "source %s is not in the job's from version", id);
    const rk_node *node = rk_topology_node(rk_ring_topology(l->ring[0]), (uint32_t)i);
    rkm_conn *src = rkm_conn_new(l->data, node->addr, NULL, &err);
    if (!src)
        return rk_cli_fail(l->cmd, RK_EXIT_FAIL, "node %s (%s): %s", id, node->addr, err.message);
    rkm_copy_config cfg = {.old_ring = l->ring[0],
                           .new_ring = l->ring[1],
                           .source = (uint32_t)i,
                           .src = src,
                           .dest = l->dest,
                           .n_dest = l->n_dest,
                           .batch = l->batch};
    rkm_verify_state st;
    rkm_verify_state_init(&st);
    int rc = rkm_verify_run(&cfg, &st, NULL, NULL, &err);
    char key[MIG_KEY_TEXT];
    for (size_t k = 0; k < st.mismatches.n; k++) {
        mig_encode_key(st.mismatches.items[k].key, st.mismatches.items[k].len, key);
        printf("%s\t%s\t%s\n", id, key, rkm_mismatch_name((int)st.mismatches.items[k].number));
    }
    const rkm_verify_counters *c = &st.counters;
    l->checked += c->checked;
    l->bad += c->missing + c->value + c->ttl + c->errors;
    fprintf(stderr, "%s: %llu checked, %llu matched, %llu missing, %llu value, %llu ttl\n", id,
            (unsigned long long)c->checked, (unsigned long long)c->matched,
            (unsigned long long)c->missing, (unsigned long long)c->value,
            (unsigned long long)c->ttl);
    rkm_verify_state_deinit(&st);
    rkm_conn_free(src);
    if (rc != RK_OK)
        return rk_cli_fail(l->cmd, RK_EXIT_FAIL, "node %s (%s): %s", id, node->addr, err.message);
    return RK_EXIT_OK;
}

/* Every source of the plan, each once, in the job's order. */
static int verify_all(local *l, const json_t *job)
{
    json_t *seen = json_object();
    size_t s, k;
    json_t *step, *id;
    int rc = seen ? RK_EXIT_OK : RK_EXIT_FAIL;
    json_array_foreach(json_object_get(job, "plan_steps"), s, step)
    {
        json_array_foreach(json_object_get(step, "sources"), k, id)
        {
            const char *node = json_string_value(id);
            if (rc != RK_EXIT_OK || !node || json_object_get(seen, node))
                continue;
            json_object_set_new(seen, node, json_true());
            rc = verify_one(l, node);
        }
    }
    json_decref(seen);
    return rc;
}

static int open_dests(local *l)
{
    rk_error err = {0};
    l->n_dest = rk_topology_node_count(rk_ring_topology(l->ring[1]));
    l->dest = calloc(l->n_dest, sizeof *l->dest);
    if (!l->dest)
        return rk_cli_fail(l->cmd, RK_EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < l->n_dest; i++) {
        const rk_node *n = rk_topology_node(rk_ring_topology(l->ring[1]), (uint32_t)i);
        if (!(l->dest[i] = rkm_conn_new(l->data, n->addr, NULL, &err)))
            return rk_cli_fail(l->cmd, RK_EXIT_FAIL, "node %s (%s): %s", n->id, n->addr,
                               err.message);
    }
    return RK_EXIT_OK;
}

int mig_verify_local(const char *cmd, rk_cli_server *s, size_t batch)
{
    json_t *job = NULL;
    local l = {.cmd = cmd, .batch = batch};
    int rc = mig_get_job(cmd, s, &job);
    if (rc == RK_EXIT_OK && !job)
        return rk_cli_fail(cmd, RK_EXIT_USAGE, "cluster %s has no migration job", s->cluster);
    l.data = mig_str(job, "data");
    l.ring[0] = rc ? NULL : mig_version_ring(cmd, s, mig_int(job, "from"), &rc);
    l.ring[1] = l.ring[0] ? mig_version_ring(cmd, s, mig_int(job, "to"), &rc) : NULL;
    rc = rc ? rc : open_dests(&l);
    rc = rc ? rc : verify_all(&l, job);
    for (size_t i = 0; l.dest && i < l.n_dest; i++)
        rkm_conn_free(l.dest[i]);
    free(l.dest);
    rk_ring_free(l.ring[0]);
    rk_ring_free(l.ring[1]);
    json_decref(job);
    if (rc == RK_EXIT_OK && l.bad)
        rc = rk_cli_fail(cmd, RK_EXIT_FAIL, "%llu of %llu keys do not match",
                         (unsigned long long)l.bad, (unsigned long long)l.checked);
    return fflush(stdout) ? RK_EXIT_FAIL : rc;
}
