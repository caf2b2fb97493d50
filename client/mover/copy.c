/* copy.c — the copy pass (copy.h): each key that moves read from the source with its remaining
 * TTL and added to its new owner unless there, counted by outcome. The moving keys of a scan step
 * travel together: read from the source in one pipelined batch (rkm_get_many), then added to each
 * new owner in one (rkm_add_many), a chunk of keys at a time so that the values held stay
 * bounded. */
#include <stdlib.h>

#include "pass.h"

/* One chunk's storage, for `cap` keys, allocated once a run. */
typedef struct copy_chunk {
    size_t cap;
    rkm_value *values; /* read from the source */
    rkm_result *got;   /* each get's outcome */
    rkm_result *put;   /* each add's, and what it did */
    rkm_added *added;
    bool *written;       /* its add is done (or there is none to do) */
    rkm_key *keys;       /* one new owner's keys, for its add */
    rkm_value *to_write; /* their values (borrowed from `values`); direct: what the source had */
    size_t *at;          /* their places in the chunk */
    rkm_result *sub_put; /* their outcomes, before they go back to their places */
    rkm_added *sub_added;
} copy_chunk;

typedef struct copy_run {
    rkm_pass pass;                 /* first: the walk's view of this run */
    rkm_copy_state *state;         /* the caller's */
    rkm_copy_progress_fn progress; /* the caller's, with ctx; may be NULL */
    void *ctx;
    copy_chunk chunk;       /* the keys in hand */
    bool direct;            /* copied server to server (rkm_copy_many), not through the worker */
    rkm_copy_counters mark; /* the counters at the batch boundary */
    size_t mark_skipped;    /* and the lists' lengths */
    size_t mark_failed;
} copy_run;

void rkm_copy_state_init(rkm_copy_state *s)
{
    *s = (rkm_copy_state){.cursor = {.pos = ""}};
    rkm_keylist_init(&s->skipped);
    rkm_keylist_init(&s->failed);
}

void rkm_copy_state_deinit(rkm_copy_state *s)
{
    rkm_keylist_deinit(&s->skipped);
    rkm_keylist_deinit(&s->failed);
}

/* What became of a key whose get and add went through. */
static int tally(copy_run *r, const rkm_key *key, const rkm_value *v, rkm_added added,
                 rk_error *err)
{
    rkm_copy_counters *c = &r->state->counters;
    if (v->state == RKM_ABSENT) {
        c->expired++;
        return RK_OK;
    }
    if (v->state == RKM_TOO_BIG) {
        c->skipped++;
        return rkm_keylist_add(&r->state->skipped, key->key, key->len, (int64_t)v->len, NULL, err);
    }
    c->copied += added == RKM_COPIED;
    c->present += added == RKM_PRESENT;
    c->bytes += added == RKM_COPIED ? v->len : 0;
    return RK_OK;
}

static void chunk_free(copy_chunk *k)
{
    for (size_t i = 0; k->values && i < k->cap; i++)
        rkm_value_deinit(&k->values[i]);
    free(k->values);
    free(k->got);
    free(k->put);
    free(k->added);
    free(k->written);
    free(k->keys);
    free(k->to_write);
    free(k->at);
    free(k->sub_put);
    free(k->sub_added);
    *k = (copy_chunk){0};
}

/* Room for `cap` keys (zeroed: a zero rkm_value is an absent one, which chunk_free may free). */
static int chunk_new(copy_chunk *k, size_t cap, rk_error *err)
{
    k->cap = cap;
    k->values = calloc(cap, sizeof *k->values);
    k->got = calloc(cap, sizeof *k->got);
    k->put = calloc(cap, sizeof *k->put);
    k->added = calloc(cap, sizeof *k->added);
    k->written = calloc(cap, sizeof *k->written);
    k->keys = calloc(cap, sizeof *k->keys);
    k->to_write = calloc(cap, sizeof *k->to_write);
    k->at = calloc(cap, sizeof *k->at);
    k->sub_put = calloc(cap, sizeof *k->sub_put);
    k->sub_added = calloc(cap, sizeof *k->sub_added);
    if (k->values && k->got && k->put && k->added && k->written && k->keys && k->to_write &&
        k->at && k->sub_put && k->sub_added)
        return RK_OK;
    chunk_free(k);
    return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
}

/* The chunk's values not written yet whose new owner is that of key `first` (of n, mv's from
 * `from` on), added to it in one batch; their outcomes to their places. */
static int add_to_owner(copy_run *r, const rkm_moving *mv, size_t from, size_t n, size_t first,
                        rk_error *err)
{
    copy_chunk *k = &r->chunk;
    size_t m = rkm_pass_owner_keys(mv, from, n, first, k->written, k->keys, k->at);
    for (size_t j = 0; j < m; j++)
        k->to_write[j] = k->values[k->at[j]];
    int rc = rkm_add_many(r->pass.cfg->dest[mv->to[from + first]], k->keys, k->to_write, m,
                          k->sub_added, k->sub_put, err);
    for (size_t j = 0; rc == RK_OK && j < m; j++) {
        k->put[k->at[j]] = k->sub_put[j];
        k->added[k->at[j]] = k->sub_added[j];
    }
    return rc;
}

/* What became of key i of the chunk: counted, listed when it failed alone; paid to the throttle. */
static int chunk_tally(copy_run *r, const rkm_key *key, size_t i, rk_error *err)
{
    copy_chunk *k = &r->chunk;
    const rkm_result *res = k->got[i].rc != RK_OK ? &k->got[i] : &k->put[i];
    rkm_throttle_take(r->pass.cfg->throttle, 1, k->values[i].len);
    if (res->rc != RK_OK) {
        rk_error why = res->err;
        int rc =
            rkm_pass_key_failed(&r->state->failed, &r->state->counters.errors, key, res->rc, &why);
        if (rc != RK_OK && err)
            *err = why;
        return rc;
    }
    return tally(r, key, &k->values[i], k->added[i], err);
}

/* Through the worker: the chunk read in one batch, added in one per new owner. */
static int copy_relayed(copy_run *r, const rkm_moving *mv, size_t from, size_t n, rk_error *err)
{
    copy_chunk *k = &r->chunk;
    int rc = rkm_get_many(r->pass.cfg->src, mv->keys + from, n, k->values, k->got, err);
    for (size_t i = 0; i < n; i++) { /* a value not found has no add, and is counted as read */
        k->written[i] = k->got[i].rc != RK_OK || k->values[i].state != RKM_FOUND;
        k->put[i] = (rkm_result){.rc = RK_OK};
        k->added[i] = RKM_PRESENT;
    }
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        if (!k->written[i])
            rc = add_to_owner(r, mv, from, n, i, err);
    return rc;
}

/* Server to server: one rkm_copy_many per new owner; what the source had (sizes, no data) and
 * each outcome to their places. */
static int copy_direct(copy_run *r, const rkm_moving *mv, size_t from, size_t n, rk_error *err)
{
    copy_chunk *k = &r->chunk;
    int rc = RK_OK;
    for (size_t i = 0; i < n; i++) {
        k->written[i] = false;
        k->put[i] = (rkm_result){.rc = RK_OK};
    }
    for (size_t first = 0; rc == RK_OK && first < n; first++) {
        if (k->written[first])
            continue;
        size_t m = rkm_pass_owner_keys(mv, from, n, first, k->written, k->keys, k->at);
        rc = rkm_copy_many(r->pass.cfg->src, r->pass.cfg->dest[mv->to[from + first]], k->keys, m,
                           k->to_write, k->sub_added, k->sub_put, err);
        for (size_t j = 0; rc == RK_OK && j < m; j++) {
            k->values[k->at[j]] = k->to_write[j];
            k->added[k->at[j]] = k->sub_added[j];
            k->got[k->at[j]] = k->sub_put[j];
        }
    }
    return rc;
}

/* n of the step's moving keys from `from` on: copied, then each counted. */
static int copy_chunk_of(copy_run *r, const rkm_moving *mv, size_t from, size_t n, rk_error *err)
{
    copy_chunk *k = &r->chunk;
    int rc = r->direct ? copy_direct(r, mv, from, n, err) : copy_relayed(r, mv, from, n, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        rc = chunk_tally(r, &mv->keys[from + i], i, err);
    for (size_t i = 0; i < n; i++)
        rkm_value_deinit(&k->values[i]);
    return rc;
}

/* Whether every new owner takes the source's keys server to server. */
static bool copies_direct(const rkm_copy_config *cfg)
{
    bool direct = true;
    for (size_t i = 0; i < cfg->n_dest; i++)
        direct = direct && (!cfg->dest[i] || rkm_conn_copies_direct(cfg->src, cfg->dest[i]));
    return direct;
}

/* A chunk holds no values when copying server to server: then it is a whole batch. */
static int copy_flush(rkm_pass *p, const rkm_moving *mv, rk_error *err)
{
    copy_run *r = (copy_run *)p;
    int rc = RK_OK;
    if (!r->chunk.cap) {
        r->direct = copies_direct(p->cfg);
        size_t batch = p->cfg->batch ? p->cfg->batch : RKM_DEFAULT_BATCH;
        rc = chunk_new(&r->chunk, r->direct ? batch : rkm_pass_chunk_keys(p->cfg), err);
    }
    for (size_t i = 0, n = 0; rc == RK_OK && i < mv->n; i += n) {
        n = r->direct ? (mv->n - i < r->chunk.cap ? mv->n - i : r->chunk.cap)
                      : rkm_pass_chunk_len(p->cfg, mv, i, r->chunk.cap);
        rc = copy_chunk_of(r, mv, i, n, err);
    }
    return rc;
}

static void copy_mark(rkm_pass *p)
{
    copy_run *r = (copy_run *)p;
    r->mark = r->state->counters;
    r->mark_skipped = r->state->skipped.n;
    r->mark_failed = r->state->failed.n;
}

static void copy_undo(rkm_pass *p)
{
    copy_run *r = (copy_run *)p;
    r->state->counters = r->mark;
    rkm_keylist_truncate(&r->state->skipped, r->mark_skipped);
    rkm_keylist_truncate(&r->state->failed, r->mark_failed);
}

static int copy_report(rkm_pass *p)
{
    copy_run *r = (copy_run *)p;
    return r->progress ? r->progress(r->ctx, r->state) : RK_OK;
}

static const rkm_pass_ops copy_ops = {
    .flush = copy_flush, .mark = copy_mark, .undo = copy_undo, .report = copy_report};

int rkm_copy_run(const rkm_copy_config *cfg, rkm_copy_state *state, rkm_copy_progress_fn progress,
                 void *ctx, rk_error *err)
{
    copy_run r = {
        .pass = {.cfg = cfg,
                 .ops = &copy_ops,
                 .cursor = &state->cursor,
                 .rule = &state->counters.rule,
                 .stopped = &state->stopped},
        .state = state,
        .progress = progress,
        .ctx = ctx,
    };
    int rc = rkm_pass_run(&r.pass, err);
    chunk_free(&r.chunk);
    return rc;
}
