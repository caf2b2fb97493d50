/* report.c — the copy engine's state at a batch boundary as a progress report (POST
 * .../migration/progress), and what the answer says: go on, stop (paused, cancelled), or a new
 * throttle. A report is idempotent by its seq, so one that got no answer is sent again as it is. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrate.h"

json_t *mig_copy_counters(const rkm_copy_counters *c)
{
    return json_pack("{sIsIsIsIsIsIsIsIsIsI}", "scanned", (json_int_t)c->rule.scanned, "copied",
                     (json_int_t)c->copied, "present", (json_int_t)c->present, "skipped",
                     (json_int_t)c->skipped, "bytes", (json_int_t)c->bytes, "errors",
                     (json_int_t)c->errors, "expired", (json_int_t)c->expired, "stay",
                     (json_int_t)c->rule.stay, "not_owned", (json_int_t)c->rule.not_owned, "later",
                     (json_int_t)c->rule.later);
}

/* "updated" and "deleted" only when not 0: a job stored by an older server has no such counter
 * in its sources, and is never asked to catch up or delete. */
json_t *mig_verify_counters(const rkm_verify_counters *c)
{
    json_t *o = json_pack("{sIsIsIsIsIsIsIsIsI}", "scanned", (json_int_t)c->rule.scanned, "checked",
                          (json_int_t)c->checked, "matched", (json_int_t)c->matched, "skipped",
                          (json_int_t)c->skipped, "missing", (json_int_t)c->missing, "value",
                          (json_int_t)c->value, "ttl", (json_int_t)c->ttl, "errors",
                          (json_int_t)c->errors, "expired", (json_int_t)c->expired);
    if (o && c->updated)
        json_object_set_new(o, "updated", json_integer((json_int_t)c->updated));
    if (o && c->deleted)
        json_object_set_new(o, "deleted", json_integer((json_int_t)c->deleted));
    return o;
}

/* The entries of `l` from `from` on as report items: {"key", `what`: the note, the number or the
 * mismatch's name}. */
static json_t *list_items(const rkm_keylist *l, size_t from, const char *what)
{
    json_t *out = json_array();
    char key[MIG_KEY_TEXT];
    for (size_t i = from; out && i < l->n; i++) {
        const rkm_listed *e = &l->items[i];
        mig_encode_key(e->key, e->len, key);
        json_t *v = strcmp(what, "bytes") == 0    ? json_integer(e->number)
                    : strcmp(what, "reason") == 0 ? json_string(rkm_mismatch_name((int)e->number))
                                                  : json_string(e->note);
        json_array_append_new(out, json_pack("{sssO}", "key", key, what, v));
        json_decref(v);
    }
    return out;
}

void mig_take_throttle(mig_run *r, const json_t *job)
{
    json_t *t = json_object_get(job, "throttle");
    if (!json_is_object(t))
        return;
    int64_t keys = mig_int(t, "keys_per_s"), bytes = mig_int(t, "bytes_per_s");
    rkm_throttle_set(r->throttle, (uint64_t)keys, (uint64_t)bytes);
    atomic_store(&r->keys_per_s, keys);
}

/* A batch is at most about a second of the throttle's rate, so that a pause or a new rate waits
 * for no more than that. */
static void fit_batch(mig_run *r)
{
    long long keys = atomic_load(&r->keys_per_s);
    size_t batch = r->o->batch;
    if (keys > 0 && (unsigned long long)keys < batch)
        batch = (size_t)keys;
    r->cfg.batch = batch ? batch : 1;
}

/* What an answer says of the run: MIG_GO, or why to stop. */
static int verdict(const json_t *job)
{
    const char *state = mig_str(job, "state");
    if (strcmp(state, "paused") == 0)
        return MIG_PAUSED;
    if (strcmp(state, "cancelled") == 0)
        return MIG_CANCELLED;
    return strcmp(state, "copying") == 0 || strcmp(state, "verifying") == 0 ? MIG_GO : MIG_ENDED;
}

/* A report refused as job_state: the job was cancelled (or ended) since the last answer, which
 * is a reason to stop, not a failure; the job as it is now into r->job. */
static int job_moved_on(mig_run *r)
{
    json_t *job = NULL;
    int rc = mig_get_job(r->cmd, r->s, &job);
    if (rc != RK_EXIT_OK || !job || mig_unfinished(job)) {
        json_decref(job);
        return rc ? rc
                  : rk_cli_fail(r->cmd, RK_EXIT_FAIL,
                                "the server refused the report of step "
                                "%lld (%s)",
                                (long long)r->step, r->phase);
    }
    json_decref(r->job);
    r->job = job;
    return RK_EXIT_OK;
}

/* After a refused report: whether another worker holds the job's lease now (the refusal was
 * 409 leased, printed with the server's message). */
static int lease_lost(mig_run *r)
{
    json_t *job = NULL;
    mig_get_job(r->cmd, r->s, &job);
    const char *holder = mig_str(json_object_get(job, "worker"), "id");
    int lost = job && strcmp(holder, r->o->worker) != 0;
    json_decref(job);
    if (lost)
        atomic_store(&r->stop, MIG_LEASE_LOST);
    return lost;
}

/* Sends `report` (stolen) until it gets an answer: the answer into r->job. A report that got no
 * answer is sent again as it is (its seq makes it count once). An exit code. */
static int send_report(mig_run *r, json_t *report)
{
    int rc = RK_EXIT_FAIL, ended = 0;
    for (int t = 0; t < MIG_REPORT_TRIES; t++) {
        json_t *answer = NULL;
        if (t > 0)
            sleep(1);
        rc = mig_call(r->cmd, r->s, "POST", "/migration/progress", json_incref(report), &answer,
                      "job_state", &ended);
        if (ended)
            rc = job_moved_on(r);
        else if (rc == RK_EXIT_OK) {
            json_decref(r->job);
            r->job = answer;
        } else if (rc == RK_EXIT_USAGE && lease_lost(r))
            rc = rk_cli_fail(r->cmd, RK_EXIT_FAIL,
                             "worker %s lost job %lld's lease (another worker claimed it): stopped",
                             r->o->worker, (long long)mig_int(r->job, "id"));
        if (rc != RK_EXIT_UNREACHABLE)
            break;
    }
    json_decref(report);
    return rc;
}

/* The report of the source running: its cursor, absolute counters and the new list entries. */
static json_t *report_of(mig_run *r, const rkm_cursor *c, json_t *counters, json_t *lists[2],
                         const char *const names[2])
{
    json_t *rep =
        json_pack("{sssIsIsssssssbso}", "worker", r->o->worker, "seq", (json_int_t)++r->seq, "step",
                  (json_int_t)r->step, "phase", r->phase, "node", r->node, "cursor", c->pos, "done",
                  c->done, "counters", counters);
    for (int i = 0; i < 2; i++)
        if (rep && lists[i] && json_array_size(lists[i]))
            json_object_set(rep, names[i], lists[i]);
    for (int i = 0; i < 2; i++)
        json_decref(lists[i]);
    return rep;
}

/* Whether this batch boundary is reported: a source's end, a stop asked for, new list entries,
 * or MIG_REPORT_MS since the last report. In between, the server's cursor lags by less than that,
 * which is what a killed worker redoes (finding its copies present). */
static int report_due(mig_run *r, const rkm_cursor *c, const rkm_keylist *l0, const rkm_keylist *l1)
{
    fit_batch(r);
    return c->done || atomic_load(&r->stop) != MIG_GO || l0->n > r->sent[0] || l1->n > r->sent[1] ||
           mig_now_ms() - r->reported_ms >= MIG_REPORT_MS;
}

/* Reports, shows and decides: RK_OK, RKM_STOP, or an error (r->cb_exit says which). */
static int after_report(mig_run *r, json_t *report, const rkm_keylist *l0, const rkm_keylist *l1)
{
    if (!report) {
        r->cb_exit = rk_cli_fail(r->cmd, RK_EXIT_FAIL, "out of memory");
        return RK_ENOMEM;
    }
    json_t *counters = json_incref(json_object_get(report, "counters"));
    int rc = send_report(r, report);
    if (rc != RK_EXIT_OK) {
        json_decref(counters);
        r->cb_exit = rc;
        return RK_EHTTP;
    }
    r->sent[0] = l0->n;
    r->sent[1] = l1->n;
    r->reported_ms = mig_now_ms();
    mig_take_throttle(r, r->job);
    fit_batch(r);
    mig_show_progress(r, counters);
    json_decref(counters);
    int why = verdict(r->job);
    if (why == MIG_GO)
        why = atomic_load(&r->stop);
    return why == MIG_GO || why == MIG_ENDED ? RK_OK : RKM_STOP;
}

uint64_t mig_copy_keys(const rkm_copy_counters *c)
{
    return c->copied + c->present + c->skipped + c->errors + c->expired;
}

uint64_t mig_verify_keys(const rkm_verify_counters *c)
{
    return c->checked + c->expired + c->errors;
}

void mig_count_keys(mig_run *r, uint64_t keys)
{
    r->run_keys += keys > r->src_keys ? keys - r->src_keys : 0;
    r->src_keys = keys;
}

int mig_on_copy(void *ctx, const rkm_copy_state *st)
{
    mig_run *r = ctx;
    static const char *const names[2] = {"errors", "skipped"};
    const rkm_copy_counters *c = &st->counters;
    if (!report_due(r, &st->cursor, &st->failed, &st->skipped))
        return RK_OK;
    json_t *lists[2] = {list_items(&st->failed, r->sent[0], "message"),
                        list_items(&st->skipped, r->sent[1], "bytes")};
    mig_count_keys(r, mig_copy_keys(c));
    json_t *rep = report_of(r, &st->cursor, mig_copy_counters(c), lists, names);
    return after_report(r, rep, &st->failed, &st->skipped);
}

int mig_on_verify(void *ctx, const rkm_verify_state *st)
{
    mig_run *r = ctx;
    static const char *const names[2] = {"errors", "mismatches"};
    if (!report_due(r, &st->cursor, &st->failed, &st->mismatches))
        return RK_OK;
    json_t *lists[2] = {list_items(&st->failed, r->sent[0], "message"),
                        list_items(&st->mismatches, r->sent[1], "reason")};
    mig_count_keys(r, mig_verify_keys(&st->counters));
    json_t *rep = report_of(r, &st->cursor, mig_verify_counters(&st->counters), lists, names);
    return after_report(r, rep, &st->failed, &st->mismatches);
}

int mig_report_fatal(mig_run *r, json_t *counters, const char *cursor, int done,
                     const char *message)
{
    rkm_cursor c = {.done = done != 0};
    snprintf(c.pos, sizeof c.pos, "%s", cursor);
    json_t *none[2] = {NULL, NULL};
    static const char *const names[2] = {"errors", "skipped"};
    json_t *rep = report_of(r, &c, counters, none, names);
    if (rep)
        json_object_set_new(rep, "error", json_string(message));
    return rep ? send_report(r, rep) : rk_cli_fail(r->cmd, RK_EXIT_FAIL, "out of memory");
}
