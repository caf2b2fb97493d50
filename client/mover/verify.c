/* verify.c — the verify pass (copy.h): each key that moves compared by checksum on the source and
 * its new owner; it only reads, unless the config asks it to delete what matched from the source
 * (delete_source) or to write the source's value over a copy that differs (a pre-warm's
 * catch-up). */
#include "pass.h"

typedef struct verify_run {
    rkm_pass pass;                   /* first: the walk's view of this run */
    rkm_verify_state *state;         /* the caller's */
    rkm_verify_progress_fn progress; /* the caller's, with ctx; may be NULL */
    void *ctx;
    rkm_value value;          /* a missing or caught-up key's source value */
    rkm_verify_counters mark; /* the counters at the batch boundary */
    size_t mark_mismatches;   /* and the lists' lengths */
    size_t mark_failed;
} verify_run;

static const char *const mismatch_names[] = {
    [RKM_MISSING] = "missing",
    [RKM_VALUE] = "value",
    [RKM_TTL] = "ttl",
};

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

/* The reason the copy differs from the source (found), or 0 when it does not. */
static int compare(const rkm_sum *src, const rkm_sum *dst)
{
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

static int verify_key(rkm_pass *p, const rkm_key *key, rkm_conn *dest, rk_error *err)
{
    verify_run *r = (verify_run *)p;
    const rkm_copy_config *cfg = p->cfg;
    rkm_sum src, dst;
    int reason;
    bool updated = false;
    int rc = compare_key(p, key, dest, &src, &dst, &reason, err);
    bool got = rc == RK_OK && (reason == RKM_MISSING || (reason && cfg->catch_up));
    if (got)
        rc = rkm_get(cfg->src, key->key, key->len, &r->value, err);
    if (rc == RK_OK && got && cfg->catch_up)
        rc = catch_up(r, key, dest, &src, &dst, &reason, &updated, err);
    rkm_throttle_take(cfg->throttle, 1,
                      src.len + dst.len + (got && cfg->catch_up ? r->value.len : 0));
    if (rc != RK_OK)
        return rkm_pass_key_failed(&r->state->failed, &r->state->counters.errors, key, rc, err);
    r->state->counters.updated += updated;
    rc = tally(r, key, &src, reason, got, err);
    if (rc == RK_OK && reason == 0 && src.state == RKM_FOUND && cfg->delete_matched)
        rc = delete_source(r, key, err);
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
    .move = verify_key, .mark = verify_mark, .undo = verify_undo, .report = verify_report};

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
    return rc;
}
