/* migration_job.c — the rules of SPEC 10's migration job over its JSON document (migration_job.h):
 * each change is a rule run by one compare-and-set loop, so a change that loses a race to another
 * is decided again on what won. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migration_job_internal.h"

const char *const rkj_copy_counters[] = {"scanned", "copied",  "present", "skipped",   "bytes",
                                         "errors",  "expired", "stay",    "not_owned", "later"};
/* "updated": keys a pre-warm's catch-up wrote over; "deleted": keys delete_source deleted */
const char *const rkj_verify_counters[] = {"scanned", "checked", "matched", "skipped",
                                           "missing", "value",   "ttl",     "errors",
                                           "expired", "updated", "deleted"};
const size_t rkj_n_copy = sizeof rkj_copy_counters / sizeof rkj_copy_counters[0];
const size_t rkj_n_verify = sizeof rkj_verify_counters / sizeof rkj_verify_counters[0];

/* ---- Small helpers over the document ---- */

const char *rkj_str(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v ? v : "";
}

int64_t rkj_num(const json_t *o, const char *name)
{
    return json_integer_value(json_object_get(o, name));
}

int rkj_is_state(const json_t *job, const char *state)
{
    return strcmp(rkj_str(job, "state"), state) == 0;
}

/* copying, paused, verifying: a job a worker may still work on, which blocks a new one. */
static int unfinished(const json_t *job)
{
    return job && (rkj_is_state(job, "copying") || rkj_is_state(job, "paused") ||
                   rkj_is_state(job, "verifying"));
}

json_t *rkj_zero_counters(const char *const *names, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, names[i], json_integer(0));
    return o;
}

/* Appends `item` (stolen) to list `name` of the job while it has fewer than RKD_JOB_LIST_MAX. */
void rkj_list_add(json_t *job, const char *name, json_t *item)
{
    json_t *list = json_object_get(job, name);
    if (json_is_array(list) && json_array_size(list) < RKD_JOB_LIST_MAX)
        json_array_append_new(list, item);
    else
        json_decref(item);
}

void rkj_set_event(rkj_change *c, const char *kind, const char *detail)
{
    c->event = (rkd_store_doc_event){.kind = kind,
                                     .version = rkj_num(c->doc, "to"),
                                     .from_version = rkj_num(c->doc, "from"),
                                     .detail = detail};
}

/* The phase a job's workers are in: "copy", "verify", or "" for none. */
const char *rkj_phase_of(const json_t *job)
{
    const char *state =
        rkj_is_state(job, "paused") ? rkj_str(job, "paused_from") : rkj_str(job, "state");
    return strcmp(state, "copying") == 0 ? "copy" : strcmp(state, "verifying") == 0 ? "verify" : "";
}

/* Fresh source entries for `phase` over the nodes of `ids` (strings). */
json_t *rkj_sources_of(const json_t *ids, const char *phase)
{
    json_t *out = json_array();
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id)
    {
        const char *const *names = phase[0] == 'c' ? rkj_copy_counters : rkj_verify_counters;
        json_array_append_new(
            out, json_pack("{sOsssssbsIso}", "node", id, "phase", phase, "cursor", "", "done", 0,
                           "seq", (json_int_t)0, "counters",
                           rkj_zero_counters(names, phase[0] == 'c' ? rkj_n_copy : rkj_n_verify)));
    }
    return out;
}

/* Every node of every step once, in order of first appearance: who verifies. */
json_t *rkj_all_sources(const json_t *plan_steps)
{
    json_t *ids = json_array();
    size_t i, j;
    json_t *step, *id;
    json_array_foreach(plan_steps, i, step)
    {
        json_array_foreach(json_object_get(step, "sources"), j, id)
        {
            size_t k;
            json_t *seen;
            int dup = 0;
            json_array_foreach(ids, k, seen) dup |= json_equal(seen, id);
            if (!dup)
                json_array_append(ids, id);
        }
    }
    return ids;
}

int rkd_job_get(rkd_store *s, const char *cluster, json_t **job, rk_error *err)
{
    int64_t rev;
    int rc = rkd_doc_read(s, RKD_DOC_JOB, cluster, job, &rev, err);
    if (rc == RK_OK && !*job)
        rc = rk_error_set(err, RKD_STORE_ENOJOB, NULL,
                          "cluster %s has no migration job yet; start one with POST "
                          "/v1/clusters/%s/migration or `ringkeeper migrate run`",
                          cluster, cluster);
    return rc;
}

/* ---- Start ---- */

static int rule_start(rkj_change *c, rk_error *err)
{
    const rkd_job_start *st = c->arg;
    if (unfinished(c->doc))
        return rk_error_set(err, RKD_STORE_EJOBSTATE, NULL,
                            "job %lld (%s, v%lld -> v%lld) is %s: pause, cancel or finish it "
                            "before starting another",
                            (long long)rkj_num(c->doc, "id"), rkj_str(c->doc, "mode"),
                            (long long)rkj_num(c->doc, "from"), (long long)rkj_num(c->doc, "to"),
                            rkj_str(c->doc, "state"));
    char now[RKD_STORE_TIME_LEN];
    rkd_doc_time(c->now, now);
    int64_t id = c->doc ? rkj_num(c->doc, "id") + 1 : 1;
    json_t *first = json_object_get(json_array_get(st->plan_steps, 0), "sources");
    json_t *job = json_pack(
        "{sIsssssIsIsssssosbsIsIsOs{sIsI}sos{sIsIso}sososososnsssssn}", "id", (json_int_t)id,
        "state", "copying", "mode", st->mode, "from", (json_int_t)st->from, "to",
        (json_int_t)st->to, "data", st->data, "digest", st->digest, "max_step",
        st->max_step > 0 ? json_real(st->max_step) : json_null(), "delete_source",
        st->delete_source != 0, "step", (json_int_t)1, "steps",
        (json_int_t)json_array_size(st->plan_steps), "plan_steps", st->plan_steps, "throttle",
        "keys_per_s", (json_int_t)st->keys_per_s, "bytes_per_s", (json_int_t)st->bytes_per_s,
        "counters", rkj_zero_counters(rkj_copy_counters, rkj_n_copy), "verify", "arcs",
        (json_int_t)st->arcs, "keys", (json_int_t)0, "mismatches", json_null(), "sources",
        rkj_sources_of(first, "copy"), "errors", json_array(), "skipped_keys", json_array(),
        "mismatch_keys", json_array(), "worker", "started_at", now, "started_by",
        st->author ? st->author : "", "paused_from");
    if (!job)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    json_decref(c->doc);
    c->doc = job;
    snprintf(c->detail, sizeof c->detail, "job %lld: %s, v%lld -> v%lld, %zu step(s), %s",
             (long long)id, st->mode, (long long)st->from, (long long)st->to,
             json_array_size(st->plan_steps), st->data);
    rkj_set_event(c, "migration_start", c->detail);
    c->event.author = st->author;
    return RK_OK;
}

int rkd_job_start_new(rkd_store *s, const char *cluster, const rkd_job_start *st, json_t **job,
                      rk_error *err)
{
    rkj_change c = {.rule = rule_start, .arg = st, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, job, err);
}

/* ---- Claim and versions ---- */

/* Whether the cluster's versions are still the job's; when not, the job fails (written) and the
 * caller is answered RKD_STORE_EVERSIONCHANGED after. RK_OK, or SAME-free: 1 when it failed. */
int rkj_versions_moved(rkj_change *c, const rkd_job_versions *now)
{
    int64_t from = rkj_num(c->doc, "from"), to = rkj_num(c->doc, "to");
    int window = strcmp(rkj_str(c->doc, "mode"), "window") == 0;
    int same = window ? now->previous == from && now->active == to : now->active == from;
    if (same)
        return 0;
    char why[256];
    if (window)
        snprintf(why, sizeof why,
                 "the job copies for the migration window v%lld -> v%lld, and the cluster now has "
                 "%s (active v%lld)",
                 (long long)from, (long long)to, now->previous ? "another window" : "none",
                 (long long)now->active);
    else
        snprintf(why, sizeof why,
                 "the job pre-warms v%lld from the active v%lld, and v%lld is active now",
                 (long long)to, (long long)from, (long long)now->active);
    json_object_set_new(c->doc, "state", json_string("failed"));
    json_object_set_new(c->doc, "worker", json_null());
    rkj_list_add(c->doc, "errors", json_pack("{ss}", "message", why));
    snprintf(c->detail, sizeof c->detail, "%s", why);
    rkj_set_event(c, "migration_failed", c->detail);
    c->after = RKD_STORE_EVERSIONCHANGED;
    rk_error_set(&c->after_err, RKD_STORE_EVERSIONCHANGED, NULL, "%s; the job stopped (failed)",
                 why);
    return 1;
}

static int need_job(rkj_change *c, rk_error *err)
{
    if (c->doc)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ENOJOB, NULL,
                        "the cluster has no migration job; start one first");
}

int rkj_need_unfinished(rkj_change *c, rk_error *err)
{
    int rc = need_job(c, err);
    if (rc == RK_OK && !unfinished(c->doc))
        rc = rk_error_set(err, RKD_STORE_EJOBSTATE, NULL,
                          "job %lld is %s: nothing is left to do in it",
                          (long long)rkj_num(c->doc, "id"), rkj_str(c->doc, "state"));
    return rc;
}

void rkj_lease(rkj_change *c, const char *worker)
{
    char until[RKD_STORE_TIME_LEN];
    rkd_doc_time(c->now + RKD_JOB_LEASE_S, until);
    json_object_set_new(c->doc, "worker", json_pack("{ssss}", "id", worker, "lease_until", until));
}

/* A window job remembers whether the fleet held its `to` at every claim (each run's first, and
 * each renewal): then every write since its copy began went to the new owners, and its verify
 * takes a value that differs there for the application's (migration_progress.c). */
static void note_fleet(rkj_change *c, const rkd_job_versions *now)
{
    if (strcmp(rkj_str(c->doc, "mode"), "window") != 0)
        return;
    json_t *had = json_object_get(c->doc, "fleet_held");
    int held =
        now->fleet_holds && now->active == rkj_num(c->doc, "to") && (!had || json_is_true(had));
    json_object_set_new(c->doc, "fleet_held", json_boolean(held));
}

typedef struct claim_arg {
    const char *worker;
    const rkd_job_versions *now;
} claim_arg;

static int rule_claim(rkj_change *c, rk_error *err)
{
    const claim_arg *a = c->arg;
    int rc = rkj_need_unfinished(c, err);
    if (rc != RK_OK || rkj_versions_moved(c, a->now))
        return rc;
    json_t *w = json_object_get(c->doc, "worker");
    const char *holder = rkj_str(w, "id");
    time_t until = rkd_doc_parse_time(rkj_str(w, "lease_until"));
    if (json_is_object(w) && strcmp(holder, a->worker) != 0 && until > c->now)
        return rk_error_set(err, RKD_STORE_ELEASED, NULL,
                            "worker %s holds job %lld until %s (%lld s more); only one worker "
                            "copies at a time",
                            holder, (long long)rkj_num(c->doc, "id"), rkj_str(w, "lease_until"),
                            (long long)(until - c->now));
    rkj_lease(c, a->worker);
    note_fleet(c, a->now);
    return RK_OK;
}

int rkd_job_claim(rkd_store *s, const char *cluster, const char *worker,
                  const rkd_job_versions *now, json_t **job, rk_error *err)
{
    claim_arg a = {worker, now};
    rkj_change c = {.rule = rule_claim, .arg = &a, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, job, err);
}

/* Only the holder lets go; anyone else's release changes nothing, whatever the job's state. */
static int rule_release(rkj_change *c, rk_error *err)
{
    int rc = need_job(c, err);
    const json_t *w = json_object_get(c->doc, "worker");
    if (rc != RK_OK || !json_is_object(w) || strcmp(rkj_str(w, "id"), c->arg) != 0)
        return rc ? rc : SAME;
    json_object_set_new(c->doc, "worker", json_null());
    return RK_OK;
}

int rkd_job_release(rkd_store *s, const char *cluster, const char *worker, json_t **job,
                    rk_error *err)
{
    rkj_change c = {.rule = rule_release, .arg = worker, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, job, err);
}

/* ---- Throttle, pause, resume, cancel ---- */

typedef struct throttle_arg {
    int64_t keys, bytes;
    const char *author;
} throttle_arg;

static int rule_throttle(rkj_change *c, rk_error *err)
{
    const throttle_arg *a = c->arg;
    int rc = rkj_need_unfinished(c, err);
    if (rc != RK_OK)
        return rc;
    json_t *t = json_object_get(c->doc, "throttle");
    if (a->keys >= 0)
        json_object_set_new(t, "keys_per_s", json_integer(a->keys));
    if (a->bytes >= 0)
        json_object_set_new(t, "bytes_per_s", json_integer(a->bytes));
    snprintf(c->detail, sizeof c->detail, "keys_per_s %lld, bytes_per_s %lld (0: unlimited)",
             (long long)rkj_num(t, "keys_per_s"), (long long)rkj_num(t, "bytes_per_s"));
    rkj_set_event(c, "migration_throttle", c->detail);
    c->event.author = a->author;
    return RK_OK;
}

int rkd_job_throttle(rkd_store *s, const char *cluster, int64_t keys_per_s, int64_t bytes_per_s,
                     const char *author, json_t **job, rk_error *err)
{
    throttle_arg a = {keys_per_s, bytes_per_s, author};
    rkj_change c = {.rule = rule_throttle, .arg = &a, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, job, err);
}

typedef struct control_arg {
    const char *action, *author, *comment;
} control_arg;

static int rule_control(rkj_change *c, rk_error *err)
{
    const control_arg *a = c->arg;
    /* a verified job not finished is cancelled too: a run or a finish then looks past it */
    int cancels_verified =
        strcmp(a->action, "cancel") == 0 && c->doc && rkj_is_state(c->doc, "verified");
    int rc = cancels_verified ? RK_OK : rkj_need_unfinished(c, err);
    if (rc != RK_OK)
        return rc;
    int paused = rkj_is_state(c->doc, "paused");
    if (strcmp(a->action, "pause") == 0 && paused)
        return SAME;
    if (strcmp(a->action, "resume") == 0 && !paused)
        return rk_error_set(err, RKD_STORE_EJOBSTATE, NULL, "job %lld is %s, not paused",
                            (long long)rkj_num(c->doc, "id"), rkj_str(c->doc, "state"));
    if (strcmp(a->action, "pause") == 0) {
        json_object_set(c->doc, "paused_from", json_object_get(c->doc, "state"));
        json_object_set_new(c->doc, "state", json_string("paused"));
    } else if (strcmp(a->action, "resume") == 0) {
        json_object_set(c->doc, "state", json_object_get(c->doc, "paused_from"));
        json_object_set_new(c->doc, "paused_from", json_null());
    } else {
        json_object_set_new(c->doc, "state", json_string("cancelled"));
        json_object_set_new(c->doc, "paused_from", json_null());
        json_object_set_new(c->doc, "worker", json_null());
    }
    snprintf(c->detail, sizeof c->detail, "%s", a->comment ? a->comment : "");
    const char *kind = a->action[0] == 'p'   ? "migration_pause"
                       : a->action[0] == 'r' ? "migration_resume"
                                             : "migration_cancel";
    rkj_set_event(c, kind, a->comment ? c->detail : NULL);
    c->event.author = a->author;
    return RK_OK;
}

int rkd_job_control(rkd_store *s, const char *cluster, const char *action, const char *author,
                    const char *comment, json_t **job, rk_error *err)
{
    control_arg a = {action, author, comment};
    rkj_change c = {.rule = rule_control, .arg = &a, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, job, err);
}

/* ---- Finish ---- */

static int for_window(const json_t *job, int64_t from, int64_t to)
{
    return job && strcmp(rkj_str(job, "mode"), "window") == 0 && rkj_num(job, "from") == from &&
           rkj_num(job, "to") == to;
}

/* Whether the window from `now->previous` to `now->active` moves keys the mover could copy: the
 * rings differ and the new version names its data. A version without data is none of the
 * mover's. */
static int window_moves(rkd_store *s, const char *cluster, const rkd_job_versions *now,
                        rk_error *err, int *rc)
{
    rkd_store_version *v[2] = {NULL, NULL};
    *rc = rkd_store_get(s, cluster, now->previous, &v[0], err);
    *rc = *rc ? *rc : rkd_store_get(s, cluster, now->active, &v[1], err);
    int moves = *rc == RK_OK && strcmp(v[0]->fingerprint, v[1]->fingerprint) != 0 &&
                rk_topology_data(v[1]->topology) != NULL;
    rkd_store_version_free(v[0]);
    rkd_store_version_free(v[1]);
    return moves;
}

/* SPEC 10: a cluster that runs the mover (it has a job) finishes a window only once that
 * window's own job is verified; a job of other versions (a pre-warm, an earlier window) says
 * nothing of the keys this one moves. */
int rkd_job_check_finish(rkd_store *s, const char *cluster, const rkd_job_versions *now,
                         int *is_for, rk_error *err)
{
    json_t *job = NULL;
    int64_t rev;
    int rc = rkd_doc_read(s, RKD_DOC_JOB, cluster, &job, &rev, err);
    int mine = rc == RK_OK && for_window(job, now->previous, now->active);
    if (is_for)
        *is_for = mine;
    if (mine && !rkj_is_state(job, "verified") && !rkj_is_state(job, "finished"))
        rc = rk_error_set(err, RKD_STORE_ENOTVERIFIED, NULL,
                          "job %lld copies the data of this window and is %s, not verified: let "
                          "it finish (ringkeeper migrate run), or finish with {\"force\": true, "
                          "\"reason\": \"...\"}",
                          (long long)rkj_num(job, "id"), rkj_str(job, "state"));
    else if (rc == RK_OK && job && !mine && now->previous &&
             window_moves(s, cluster, now, err, &rc))
        rc = rk_error_set(err, RKD_STORE_ENOTVERIFIED, NULL,
                          "job %lld is the %s job of v%lld -> v%lld, not this window's (v%lld -> "
                          "v%lld), whose keys no job has copied: run ringkeeper migrate run "
                          "--finish, or finish with {\"force\": true, \"reason\": \"...\"}",
                          (long long)rkj_num(job, "id"), rkj_str(job, "mode"),
                          (long long)rkj_num(job, "from"), (long long)rkj_num(job, "to"),
                          (long long)now->previous, (long long)now->active);
    json_decref(job);
    return rc;
}

typedef struct finished_arg {
    int64_t from, to;
} finished_arg;

static int rule_finished(rkj_change *c, rk_error *err)
{
    const finished_arg *a = c->arg;
    (void)err;
    if (!for_window(c->doc, a->from, a->to) || !rkj_is_state(c->doc, "verified"))
        return SAME;
    json_object_set_new(c->doc, "state", json_string("finished"));
    return RK_OK;
}

int rkd_job_window_finished(rkd_store *s, const char *cluster, int64_t from, int64_t to,
                            rk_error *err)
{
    finished_arg a = {from, to};
    rkj_change c = {.rule = rule_finished, .arg = &a, .now = time(NULL)};
    json_t *job = NULL;
    int rc = rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, &job, err);
    json_decref(job);
    return rc;
}
