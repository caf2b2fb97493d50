/* verify.c — the verify pass (copy.h): each key that moves compared by checksum on the source and
 * its new owner, a chunk of a batch's keys at a time (rkm_checksum_many); it only reads, unless the
 * config asks it to delete what matched from the source (delete_source) or to write the source's
 * value over a copy that differs (a pre-warm's catch-up). */
#include <stdlib.h>

#include "pass.h"

/* One chunk's checksums, for `cap` keys, allocated once a run. */
typedef struct verify_sums {
    size_t cap;
    rkm_sum *src, *dst; /* each key's on the source and on its new owner */
    rkm_result *res;    /* each key's outcome: the first failure of its two reads */
    bool *done;         /* its new owner's checksum is asked for (or not needed) */
    rkm_key *keys;      /* one new owner's keys, for its batch */
    size_t *at;         /* their places in the chunk */
    rkm_sum *sub;       /* their checksums and outcomes, before they go to their places */
    rkm_result *sub_res;
} verify_sums;

typedef struct verify_run {
    rkm_pass pass;                   /* first: the walk's view of this run */
    rkm_verify_state *state;         /* the caller's */
    rkm_verify_progress_fn progress; /* the caller's, with ctx; may be NULL */
    void *ctx;
    rkm_value value;          /* a missing or caught-up key's source value */
    verify_sums sums;         /* the keys in hand */
    rkm_verify_counters mark; /* the counters at the batch boundary */
    size_t mark_mismatches;   /* and the lists' lengths */
    size_t mark_failed;
} verify_run;

static const char *const mismatch_names[] = {
    [RKM_MISSING] = "missing",
    [RKM_VALUE] = "value",
    [RKM_TTL] = "ttl",
};

static void sums_free(verify_sums *k)
{
    free(k->src);
    free(k->dst);
    free(k->res);
    free(k->done);
    free(k->keys);
    free(k->at);
    free(k->sub);
    free(k->sub_res);
    *k = (verify_sums){0};
}

static int sums_new(verify_sums *k, size_t cap, rk_error *err)
{
    k->cap = cap;
    k->src = calloc(cap, sizeof *k->src);
    k->dst = calloc(cap, sizeof *k->dst);
    k->res = calloc(cap, sizeof *k->res);
    k->done = calloc(cap, sizeof *k->done);
    k->keys = calloc(cap, sizeof *k->keys);
    k->at = calloc(cap, sizeof *k->at);
    k->sub = calloc(cap, sizeof *k->sub);
    k->sub_res = calloc(cap, sizeof *k->sub_res);
    if (k->src && k->dst && k->res && k->done && k->keys && k->at && k->sub && k->sub_res)
        return RK_OK;
    sums_free(k);
    return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
}

const char *rkm_mismatch_name(int reason)
{
    if (reason < RKM_MISSING || reason > RKM_TTL)
        return NULL;
    return mismatch_names[reason];
}

void rkm_verify_state_init(rkm_verify_state *s)
{
    *s = (rkm_verify_state){.cursor = {.pos = ""}};
    rkm_keylist_init(&s->mismatches);
    rkm_keylist_init(&s->failed);
}

void rkm_verify_state_deinit(rkm_verify_state *s)
{
    rkm_keylist_deinit(&s->mismatches);
    rkm_keylist_deinit(&s->failed);
}

/* Within RKM_TTL_TOLERANCE_MS or RKM_TTL_TOLERANCE_PCT of the source's: memcached rounds a copy's
 * TTL up to the second, and time passes between reading the two. */
static bool ttl_close(int64_t src, int64_t dst)
{
    if (src == RKM_TTL_NONE || dst == RKM_TTL_NONE)
        return src == dst;
    int64_t off = src > dst ? src - dst : dst - src, pct = src / 100 * RKM_TTL_TOLERANCE_PCT;
    return off <= (pct > RKM_TTL_TOLERANCE_MS ? pct : RKM_TTL_TOLERANCE_MS);
}

/* The reason the copy differs from the source (found), or 0 when it does not. A copy over the
 * cap differs from a source within it. */
static int compare(const rkm_sum *src, const rkm_sum *dst)
{
    if (dst->state == RKM_TOO_BIG)
        return RKM_VALUE;
    if (dst->state != RKM_FOUND)
        return RKM_MISSING;
    if (src->xxh3 != dst->xxh3 || src->len != dst->len)
        return RKM_VALUE;
    return ttl_close(src->ttl_ms, dst->ttl_ms) ? 0 : RKM_TTL;
}

static uint64_t *reason_counter(rkm_verify_counters *c, int reason)
{
    return reason == RKM_MISSING ? &c->missing : reason == RKM_VALUE ? &c->value : &c->ttl;
}

/* What a key's comparison found; the source's value (r->value, when `got`: read for a key
 * missing on the new owner, or for a catch-up) tells whether the copy skipped it (over the size
 * cap) or it was gone from the source meanwhile. */
static int tally(verify_run *r, const rkm_key *key, const rkm_sum *src, int reason, bool got,
                 rk_error *err)
{
    rkm_verify_counters *c = &r->state->counters;
    if (src->state == RKM_TOO_BIG) { /* never read: not compared, and the verdict says so */
        c->checked++;
        c->skipped++;
        return RK_OK;
    }
    if (src->state != RKM_FOUND || (got && r->value.state == RKM_ABSENT)) {
        c->expired++;
        return RK_OK;
    }
    c->checked++;
    if (reason == 0 || (reason == RKM_MISSING && r->value.state == RKM_TOO_BIG)) {
        c->matched += reason == 0;
        c->skipped += reason != 0;
        return RK_OK;
    }
    (*reason_counter(c, reason))++;
    return rkm_keylist_add(&r->state->mismatches, key->key, key->len, reason, NULL, err);
}

/* The checksums of `key` on the source and on `dest`, and why the copy differs (0: it does not,
 * or the source has the key no more). */
static int compare_key(const rkm_pass *p, const rkm_key *key, rkm_conn *dest, rkm_sum *src,
                       rkm_sum *dst, int *reason, rk_error *err)
{
    *src = (rkm_sum){.state = RKM_ABSENT};
    *dst = (rkm_sum){.state = RKM_ABSENT};
    *reason = 0;
    int rc = rkm_checksum(p->cfg->src, key->key, key->len, src, err);
    if (rc == RK_OK && src->state == RKM_FOUND)
        rc = rkm_checksum(dest, key->key, key->len, dst, err);
    if (rc == RK_OK && src->state == RKM_FOUND)
        *reason = compare(src, dst);
    return rc;
}

/* A pre-warm's catch-up of a key that differs: the source's value just read (r->value) written
 * over the new owner's, then both compared again, so that what is counted is what is there; a
 * value gone from the source or over the cap is not written. *updated when they match now. */
static int catch_up(verify_run *r, const rkm_key *key, rkm_conn *dest, rkm_sum *src, rkm_sum *dst,
                    int *reason, bool *updated, rk_error *err)
{
    if (r->value.state != RKM_FOUND)
        return RK_OK;
    int rc = rkm_put(dest, key->key, key->len, &r->value, err);
    if (rc == RK_OK)
        rc = compare_key(&r->pass, key, dest, src, dst, reason, err);
    *updated = rc == RK_OK && *reason == 0 && src->state == RKM_FOUND;
    return rc;
}

/* delete_source: a key just found matched leaves its source. A failure is that key's, listed and
 * never tried again: the key stays on the source, which is safe. */
static int delete_source(verify_run *r, const rkm_key *key, rk_error *err)
{
    int rc = rkm_delete(r->pass.cfg->src, key->key, key->len, err);
    if (rc != RK_OK)
        return rkm_pass_key_failed(&r->state->failed, &r->state->counters.errors, key, rc, err);
    r->state->counters.deleted++;
    return RK_OK;
}

/* What the checksums of a key (rc: how reading them went) say, and what follows: a missing key's
 * source read, a catch-up, the tally, delete_source. */
static int judge(verify_run *r, const rkm_key *key, rkm_conn *dest, rkm_sum *src, rkm_sum *dst,
                 int rc, rk_error *err)
{
    const rkm_copy_config *cfg = r->pass.cfg;
    int reason = rc == RK_OK && src->state == RKM_FOUND ? compare(src, dst) : 0;
    bool updated = false;
    bool got = rc == RK_OK && (reason == RKM_MISSING || (reason && cfg->catch_up));
    if (got)
        rc = rkm_get(cfg->src, key->key, key->len, &r->value, err);
    if (rc == RK_OK && got && cfg->catch_up)
        rc = catch_up(r, key, dest, src, dst, &reason, &updated, err);
    rkm_throttle_take(cfg->throttle, 1,
                      src->len + dst->len + (got && cfg->catch_up ? r->value.len : 0));
    if (rc != RK_OK)
        return rkm_pass_key_failed(&r->state->failed, &r->state->counters.errors, key, rc, err);
    r->state->counters.updated += updated;
    rc = tally(r, key, src, reason, got, err);
    if (rc == RK_OK && reason == 0 && src->state == RKM_FOUND && cfg->delete_matched)
        rc = delete_source(r, key, err);
    return rc;
}

/* The new owners' checksums of the chunk's keys that the source has, one batch per owner. */
static int sum_owners(verify_run *r, const rkm_moving *mv, size_t from, size_t n, rk_error *err)
{
    verify_sums *k = &r->sums;
    int rc = RK_OK;
    for (size_t i = 0; i < n; i++)
        k->done[i] = k->res[i].rc != RK_OK || k->src[i].state != RKM_FOUND;
    for (size_t first = 0; rc == RK_OK && first < n; first++) {
        if (k->done[first])
            continue;
        uint32_t to = mv->to[from + first];
        size_t m = rkm_pass_owner_keys(mv, from, n, first, k->done, k->keys, k->at);
        rc = rkm_checksum_many(r->pass.cfg->dest[to], k->keys, m, k->sub, k->sub_res, err);
        for (size_t j = 0; rc == RK_OK && j < m; j++) {
            k->dst[k->at[j]] = k->sub[j];
            if (k->sub_res[j].rc != RK_OK)
                k->res[k->at[j]] = k->sub_res[j];
        }
    }
    return rc;
}

/* n of the step's moving keys from `from` on: checksummed in one batch on the source and one per
 * new owner, then judged one by one. */
static int verify_chunk(verify_run *r, const rkm_moving *mv, size_t from, size_t n, rk_error *err)
{
    verify_sums *k = &r->sums;
    for (size_t i = 0; i < n; i++)
        k->dst[i] = (rkm_sum){.state = RKM_ABSENT, .ttl_ms = RKM_TTL_NONE};
    int rc = rkm_checksum_many(r->pass.cfg->src, mv->keys + from, n, k->src, k->res, err);
    if (rc == RK_OK)
        rc = sum_owners(r, mv, from, n, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        rk_error why = k->res[i].err;
        const rkm_key *key = &mv->keys[from + i];
        rc = judge(r, key, r->pass.cfg->dest[mv->to[from + i]], &k->src[i], &k->dst[i],
                   k->res[i].rc, &why);
        if (rc != RK_OK && err)
            *err = why;
    }
    return rc;
}

static int verify_flush(rkm_pass *p, const rkm_moving *mv, rk_error *err)
{
    verify_run *r = (verify_run *)p;
    int rc = r->sums.cap ? RK_OK : sums_new(&r->sums, rkm_pass_chunk_keys(p->cfg), err);
    for (size_t i = 0, n = 0; rc == RK_OK && i < mv->n; i += n) {
        n = rkm_pass_chunk_len(p->cfg, mv, i, r->sums.cap);
        rc = verify_chunk(r, mv, i, n, err);
    }
    return rc;
}

static void verify_mark(rkm_pass *p)
{
    verify_run *r = (verify_run *)p;
    r->mark = r->state->counters;
    r->mark_mismatches = r->state->mismatches.n;
    r->mark_failed = r->state->failed.n;
}

static void verify_undo(rkm_pass *p)
{
    verify_run *r = (verify_run *)p;
    r->state->counters = r->mark;
    rkm_keylist_truncate(&r->state->mismatches, r->mark_mismatches);
    rkm_keylist_truncate(&r->state->failed, r->mark_failed);
}

static int verify_report(rkm_pass *p)
{
    verify_run *r = (verify_run *)p;
    return r->progress ? r->progress(r->ctx, r->state) : RK_OK;
}

static const rkm_pass_ops verify_ops = {
    .flush = verify_flush, .mark = verify_mark, .undo = verify_undo, .report = verify_report};

int rkm_verify_run(const rkm_copy_config *cfg, rkm_verify_state *state,
                   rkm_verify_progress_fn progress, void *ctx, rk_error *err)
{
    verify_run r = {
        .pass = {.cfg = cfg,
                 .ops = &verify_ops,
                 .cursor = &state->cursor,
                 .rule = &state->counters.rule,
                 .stopped = &state->stopped,
                 .verifies = true},
        .state = state,
        .progress = progress,
        .ctx = ctx,
    };
    rkm_value_init(&r.value);
    int rc = rkm_pass_run(&r.pass, err);
    rkm_value_deinit(&r.value);
    sums_free(&r.sums);
    return rc;
}
