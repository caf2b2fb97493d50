/* pass.c — the walk over one source's keys that a copy and a verify share (pass.h): the rule,
 * batches, the cursor, progress. */
#include <stdlib.h>
#include <string.h>

#include "pass.h"

/* What the rule says of one key. */
typedef enum fate {
    STAYS,     /* the source owns it under both rings */
    MOVES,     /* to another node under the new ring */
    NOT_OWNED, /* another node owns it under the old ring: not this source's to move */
    LATER,     /* it would move, but its hash is outside the config's arcs: another step's */
} fate;

static const char *node_id(const rk_ring *r, uint32_t i)
{
    return rk_topology_node(rk_ring_topology(r), i)->id;
}

/* Whether `hash` lies in one of the config's arcs: a binary search, since a step of a large plan
 * has thousands of arcs and every key of the source is looked up. */
static bool in_arcs(const rkm_copy_config *cfg, uint64_t hash)
{
    size_t lo = 0, hi = cfg->n_arcs; /* the arc is in [lo, hi) if anywhere */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hash < cfg->arcs[mid].first)
            hi = mid;
        else if (hash > cfg->arcs[mid].last)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* The rule of copy.h; *to is the new owner of a key that moves. Ids, not indexes, say whether
 * the owner changed: the two topologies number their nodes differently. */
static fate key_fate(const rkm_pass *p, const rkm_key *key, uint32_t *to)
{
    const rkm_copy_config *cfg = p->cfg;
    if (rk_ring_lookup(cfg->old_ring, key->key, key->len) != cfg->source)
        return NOT_OWNED;
    uint64_t hash = rk_ring_key_hash(cfg->new_ring, key->key, key->len);
    *to = rk_ring_lookup_hash(cfg->new_ring, hash);
    if (strcmp(node_id(cfg->new_ring, *to), p->source_id) == 0)
        return STAYS;
    return !cfg->arcs || in_arcs(cfg, hash) ? MOVES : LATER;
}

static int by_first(const void *a, const void *b)
{
    const rkm_arc *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

size_t rkm_arcs_normalize(rkm_arc *arcs, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) /* the empty ones out first */
        if (arcs[i].first <= arcs[i].last)
            arcs[kept++] = arcs[i];
    if (kept == 0)
        return 0;
    qsort(arcs, kept, sizeof *arcs, by_first);
    size_t out = 0;
    for (size_t i = 1; i < kept; i++) {
        bool joins = arcs[out].last == UINT64_MAX || arcs[i].first <= arcs[out].last + 1;
        if (joins && arcs[i].last > arcs[out].last)
            arcs[out].last = arcs[i].last;
        else if (!joins)
            arcs[++out] = arcs[i];
    }
    return out + 1;
}

/* Room for one more key of `len` bytes: the arrays doubled when full. */
static bool room_for_key(rkm_moving *m, size_t len)
{
    if (m->n == m->cap) {
        size_t more = m->cap ? m->cap * 2 : 64;
        rkm_key *keys = realloc(m->keys, more * sizeof *keys);
        m->keys = keys ? keys : m->keys;
        uint32_t *to = keys ? realloc(m->to, more * sizeof *to) : NULL;
        if (!to)
            return false;
        m->to = to;
        m->cap = more;
    }
    if (!m->bytes || m->used + len > m->room) { /* never NULL: a Redis key may be empty */
        size_t more = (m->used + len) * 2 + 64;
        char *bytes = realloc(m->bytes, more);
        if (!bytes)
            return false;
        m->bytes = bytes;
        m->room = more;
    }
    return true;
}

/* A moving key kept for the flush: its bytes copied, since the scan lends them. */
static int keep_moving(rkm_moving *m, const rkm_key *key, uint32_t to, rk_error *err)
{
    if (!room_for_key(m, key->len))
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    m->keys[m->n] = *key;
    m->keys[m->n].key = NULL; /* set at the flush: `bytes` may move until then */
    m->to[m->n++] = to;
    memcpy(m->bytes + m->used, key->key, key->len);
    m->used += key->len;
    return RK_OK;
}

/* The kept keys to the kind's flush, then forgotten. */
static int flush_moving(rkm_pass *p, rk_error *err)
{
    rkm_moving *m = &p->moving;
    size_t off = 0;
    for (size_t i = 0; i < m->n; i++) {
        m->keys[i].key = m->bytes + off;
        off += m->keys[i].len;
    }
    int rc = m->n ? p->ops->flush(p, m, err) : RK_OK;
    m->n = m->used = 0;
    return rc;
}

static void moving_free(rkm_moving *m)
{
    free(m->keys);
    free(m->to);
    free(m->bytes);
    *m = (rkm_moving){0};
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
        p->rule->later += f == LATER;
        return RK_OK;
    }
    if (!p->cfg->dest[to])
        return rk_error_set(err, RK_EINVAL, NULL,
                            "keys of node '%s' move to node '%s', which has no connection",
                            p->source_id, node_id(p->cfg->new_ring, to));
    if (p->ops->flush)
        return keep_moving(&p->moving, key, to, err);
    int rc = p->ops->move(p, key, p->cfg->dest[to], &why);
    if (rc != RK_OK && err)
        *err = why;
    return rc;
}

/* What only a verify may do, and never both: a pre-warm's sources still serve, and a window's
 * new owners take clients' writes that no catch-up may write over. */
static int check_writes(const rkm_copy_config *cfg, bool verifies, rk_error *err)
{
    if (!verifies && (cfg->delete_matched || cfg->catch_up))
        return rk_error_set(err, RK_EINVAL, NULL,
                            "a copy never deletes or writes over: delete_matched and catch_up "
                            "are a verify's");
    if (cfg->delete_matched && cfg->catch_up)
        return rk_error_set(err, RK_EINVAL, "delete_matched",
                            "a catch-up is a pre-warm's, whose sources still serve: it never "
                            "deletes from them");
    for (size_t i = 0; cfg->catch_up && i < cfg->n_dest; i++)
        if (cfg->dest[i] && !rkm_conn_may_overwrite(cfg->dest[i]))
            return rk_error_set(err, RK_EINVAL, "dest",
                                "a catch-up writes over its destinations: open them with "
                                "rkm_options.overwrite");
    return RK_OK;
}

static int check_config(const rkm_copy_config *cfg, bool verifies, rk_error *err)
{
    if (!cfg->old_ring || !cfg->new_ring || !cfg->src || !cfg->dest)
        return rk_error_set(err, RK_EINVAL, NULL, "a copy needs both rings, a source and dests");
    if (cfg->source >= rk_topology_node_count(rk_ring_topology(cfg->old_ring)))
        return rk_error_set(err, RK_EINVAL, "source", "source %u is not a node of the old ring",
                            (unsigned)cfg->source);
    if (cfg->n_dest != rk_topology_node_count(rk_ring_topology(cfg->new_ring)))
        return rk_error_set(err, RK_EINVAL, "dest", "one destination per node of the new ring");
    if (cfg->n_arcs && !cfg->arcs)
        return rk_error_set(err, RK_EINVAL, "arcs", "n_arcs without arcs");
    for (size_t i = 0; i < cfg->n_arcs; i++)
        if (cfg->arcs[i].first > cfg->arcs[i].last ||
            (i > 0 && cfg->arcs[i].first <= cfg->arcs[i - 1].last))
            return rk_error_set(err, RK_EINVAL, "arcs",
                                "arcs must be sorted and apart (rkm_arcs_normalize)");
    if (cfg->batch > RKM_SCAN_MAX)
        return rk_error_set(err, RK_EINVAL, "batch", "a batch is 1 to %d keys", RKM_SCAN_MAX);
    return check_writes(cfg, verifies, err);
}

/* One scan step from the cursor; the cursor moves only when all of it went through. */
static int batch(rkm_pass *p, rk_error *err)
{
    rkm_cursor at = *p->cursor;
    size_t n = p->cfg->batch ? p->cfg->batch : RKM_DEFAULT_BATCH;
    p->ops->mark(p);
    int rc = rkm_scan(p->cfg->src, &at, n, on_key, p, err);
    if (rc == RK_OK && p->ops->flush)
        rc = flush_moving(p, err);
    p->moving.n = p->moving.used = 0;
    if (rc != RK_OK) {
        p->ops->undo(p);
        return rc;
    }
    *p->cursor = at;
    return RK_OK;
}

int rkm_pass_run(rkm_pass *p, rk_error *err)
{
    int rc = check_config(p->cfg, p->verifies, err);
    *p->stopped = false;
    if (rc != RK_OK)
        return rc;
    p->source_id = node_id(p->cfg->old_ring, p->cfg->source);
    int failed = RK_OK; /* a batch's error, returned as it is */
    while (rc == RK_OK && failed == RK_OK && !p->cursor->done) {
        failed = batch(p, err);
        rc = failed == RK_OK ? p->ops->report(p) : RK_OK;
    }
    moving_free(&p->moving);
    if (failed != RK_OK)
        return failed;
    if (rc > 0) { /* RKM_STOP: at the boundary just reported */
        *p->stopped = true;
        return RK_OK;
    }
    if (rc < 0)
        rk_error_set(err, rc, NULL, "the progress callback stopped the pass: %s", rk_strerror(rc));
    return rc;
}

size_t rkm_pass_chunk_keys(const rkm_copy_config *cfg)
{
    size_t batch = cfg->batch ? cfg->batch : RKM_DEFAULT_BATCH;
    size_t n = RKM_CHUNK_GROWTH * (RKM_CHUNK_BYTES / rkm_conn_max_value(cfg->src));
    return n < 1 ? 1 : n > batch ? batch : n;
}

size_t rkm_pass_chunk_len(const rkm_copy_config *cfg, const rkm_moving *mv, size_t from, size_t max)
{
    size_t cap = rkm_conn_max_value(cfg->src), n = 0;
    uint64_t bytes = 0;
    while (from + n < mv->n && n < max) {
        uint64_t hint = mv->keys[from + n].size;
        bytes += hint && hint < cap ? hint : cap;
        if (n > 0 && bytes > RKM_CHUNK_BYTES)
            break;
        n++;
    }
    return n ? n : 1;
}

size_t rkm_pass_owner_keys(const rkm_moving *mv, size_t from, size_t n, size_t first, bool *taken,
                           rkm_key *keys, size_t *at)
{
    uint32_t to = mv->to[from + first];
    size_t m = 0;
    for (size_t i = first; i < n; i++)
        if (!taken[i] && mv->to[from + i] == to) {
            taken[i] = true;
            keys[m] = mv->keys[from + i];
            at[m++] = i;
        }
    return m;
}

int rkm_pass_key_failed(rkm_keylist *failed, uint64_t *errors, const rkm_key *key, int rc,
                        rk_error *err)
{
    if (rc != RK_EIO && rc != RK_EINVAL)
        return rc;
    (*errors)++;
    return rkm_keylist_add(failed, key->key, key->len, rc, err->message, err);
}
