/* copy.c — the copy pass (copy.h): each key that moves read from the source with its remaining
 * TTL and added to its new owner unless there, counted by outcome. */
#include "pass.h"

typedef struct copy_run {
    rkm_pass pass;                 /* first: the walk's view of this run */
    rkm_copy_state *state;         /* the caller's */
    rkm_copy_progress_fn progress; /* the caller's, with ctx; may be NULL */
    void *ctx;
    rkm_value value;        /* the key in hand: one buffer, reused */
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
static int tally(copy_run *r, const rkm_key *key, rkm_added added, rk_error *err)
{
    rkm_copy_counters *c = &r->state->counters;
    if (r->value.state == RKM_ABSENT) {
        c->expired++;
        return RK_OK;
    }
    if (r->value.state == RKM_TOO_BIG) {
        c->skipped++;
        return rkm_keylist_add(&r->state->skipped, key->key, key->len, (int64_t)r->value.len, NULL,
                               err);
    }
    c->copied += added == RKM_COPIED;
    c->present += added == RKM_PRESENT;
    c->bytes += added == RKM_COPIED ? r->value.len : 0;
    return RK_OK;
}

static int copy_key(rkm_pass *p, const rkm_key *key, rkm_conn *dest, rk_error *err)
{
    copy_run *r = (copy_run *)p;
    rkm_added added = RKM_PRESENT;
    int rc = rkm_get(p->cfg->src, key->key, key->len, &r->value, err);
    if (rc == RK_OK && r->value.state == RKM_FOUND)
        rc = rkm_add_if_absent(dest, key->key, key->len, &r->value, &added, err);
    rkm_throttle_take(p->cfg->throttle, 1, r->value.len);
    if (rc != RK_OK)
        return rkm_pass_key_failed(&r->state->failed, &r->state->counters.errors, key, rc, err);
    return tally(r, key, added, err);
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
    .move = copy_key, .mark = copy_mark, .undo = copy_undo, .report = copy_report};

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
    rkm_value_init(&r.value);
    int rc = rkm_pass_run(&r.pass, err);
    rkm_value_deinit(&r.value);
    return rc;
}
