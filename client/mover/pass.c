/* pass.c — the walk over one source's keys that a copy and a verify share (pass.h): the rule,
 * batches, the cursor, progress. */
#include <string.h>

#include "pass.h"

/* What the rule says of one key. */
typedef enum fate {
    STAYS,     /* the source owns it under both rings */
    MOVES,     /* to another node under the new ring */
    NOT_OWNED, /* another node owns it under the old ring: not this source's to move */
} fate;

static const char *node_id(const rk_ring *r, uint32_t i)
{
    return rk_topology_node(rk_ring_topology(r), i)->id;
}

/* The rule of copy.h; *to is the new owner of a key that moves. Ids, not indexes, say whether
 * the owner changed: the two topologies number their nodes differently. */
static fate key_fate(const rkm_pass *p, const rkm_key *key, uint32_t *to)
{
    const rkm_copy_config *cfg = p->cfg;
    if (rk_ring_lookup(cfg->old_ring, key->key, key->len) != cfg->source)
        return NOT_OWNED;
    *to = rk_ring_lookup_hash(cfg->new_ring, rk_ring_key_hash(cfg->new_ring, key->key, key->len));
    return strcmp(node_id(cfg->new_ring, *to), p->source_id) == 0 ? STAYS : MOVES;
}

/* The scan's callback: one key through the rule. */
static int on_key(void *ctx, const rkm_key *key, rk_error *err)
{
    rkm_pass *p = ctx;
    rk_error why = {0};
    uint32_t to = 0;
    p->rule->scanned++;
    fate f = key_fate(p, key, &to);
    if (f != MOVES) {
        p->rule->stay += f == STAYS;
        p->rule->not_owned += f == NOT_OWNED;
        return RK_OK;
    }
    if (!p->cfg->dest[to])
        return rk_error_set(err, RK_EINVAL, NULL,
                            "keys of node '%s' move to node '%s', which has no connection",
                            p->source_id, node_id(p->cfg->new_ring, to));
    int rc = p->ops->move(p, key, p->cfg->dest[to], &why);
    if (rc != RK_OK && err)
        *err = why;
    return rc;
}

static int check_config(const rkm_copy_config *cfg, rk_error *err)
{
    if (!cfg->old_ring || !cfg->new_ring || !cfg->src || !cfg->dest)
        return rk_error_set(err, RK_EINVAL, NULL, "a copy needs both rings, a source and dests");
    if (cfg->source >= rk_topology_node_count(rk_ring_topology(cfg->old_ring)))
        return rk_error_set(err, RK_EINVAL, "source", "source %u is not a node of the old ring",
                            (unsigned)cfg->source);
    if (cfg->n_dest != rk_topology_node_count(rk_ring_topology(cfg->new_ring)))
        return rk_error_set(err, RK_EINVAL, "dest", "one destination per node of the new ring");
    if (cfg->batch > RKM_SCAN_MAX)
        return rk_error_set(err, RK_EINVAL, "batch", "a batch is 1 to %d keys", RKM_SCAN_MAX);
    return RK_OK;
}

/* One scan step from the cursor; the cursor moves only when all of it went through. */
static int batch(rkm_pass *p, rk_error *err)
{
    rkm_cursor at = *p->cursor;
    size_t n = p->cfg->batch ? p->cfg->batch : RKM_DEFAULT_BATCH;
    p->ops->mark(p);
    int rc = rkm_scan(p->cfg->src, &at, n, on_key, p, err);
    if (rc != RK_OK) {
        p->ops->undo(p);
        return rc;
    }
    *p->cursor = at;
    return RK_OK;
}

int rkm_pass_run(rkm_pass *p, rk_error *err)
{
    int rc = check_config(p->cfg, err);
    *p->stopped = false;
    if (rc != RK_OK)
        return rc;
    p->source_id = node_id(p->cfg->old_ring, p->cfg->source);
    while (rc == RK_OK && !p->cursor->done) {
        rc = batch(p, err);
        if (rc != RK_OK)
            return rc;
        rc = p->ops->report(p);
    }
    if (rc > 0) { /* RKM_STOP: at the boundary just reported */
        *p->stopped = true;
        return RK_OK;
    }
    if (rc < 0)
        rk_error_set(err, rc, NULL, "the progress callback stopped the pass: %s", rk_strerror(rc));
    return rc;
}

int rkm_pass_key_failed(rkm_keylist *failed, uint64_t *errors, const rkm_key *key, int rc,
                        rk_error *err)
{
    if (rc != RK_EIO && rc != RK_EINVAL)
        return rc;
    (*errors)++;
    return rkm_keylist_add(failed, key->key, key->len, rc, err->message, err);
}
