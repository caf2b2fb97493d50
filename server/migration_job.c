/* migration_job.c — the rules of SPEC 10's migration job over its JSON document (migration_job.h):
 * each change is a rule run by one compare-and-set loop, so a change that loses a race to another
 * is decided again on what won. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migration_job.h"

#define CHANGE_TRIES 16 /* compare-and-set rounds before giving up (503) */
#define SAME         1  /* a rule's answer: nothing to write, the job is answered as it is */

static const char *const copy_counters[] = {"scanned", "copied",  "present", "skipped",   "bytes",
                                            "errors",  "expired", "stay",    "not_owned", "later"};
/* "updated": keys a pre-warm's catch-up wrote over; "deleted": keys delete_source deleted */
static const char *const verify_counters[] = {"scanned", "checked", "matched", "skipped",
                                              "missing", "value",   "ttl",     "errors",
                                              "expired", "updated", "deleted"};
#define N_COPY   (sizeof copy_counters / sizeof copy_counters[0])
#define N_VERIFY (sizeof verify_counters / sizeof verify_counters[0])

/* One change in progress: the rule, its input, and what it decided. */
typedef struct change {
    int (*rule)(struct change *c, rk_error *err); /* RK_OK (write), SAME, or an error */
    const void *arg;
    time_t now;
    json_t *job;               /* the job as read (NULL: none), changed in place or replaced */
    rkd_store_job_event event; /* written with the change when event.kind is set */
    char detail[256];          /* the event's detail, when the rule writes one */
    int after;                 /* an error to answer once the change is written (0: none) */
    rk_error after_err;
} change;

/* ---- Small helpers over the document ---- */

static void format_time(time_t t, char out[RKD_STORE_TIME_LEN])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, RKD_STORE_TIME_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* format_time's text back to a time (0 when it is not that): days from the civil date, as in
 * Howard Hinnant's algorithm, since timegm is not POSIX. */
static time_t parse_time(const char *s)
{
    int y, m, d, hh, mm, ss, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &m, &d, &hh, &mm, &ss, &n) != 6 ||
        s[n] != '\0')
        return 0;
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400, doy = (153L * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return (time_t)(days * 86400 + hh * 3600 + mm * 60 + ss);
}

static const char *str(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v ? v : "";
}

static int64_t num(const json_t *o, const char *name)
{
    return json_integer_value(json_object_get(o, name));
}

static int is_state(const json_t *job, const char *state)
{
    return strcmp(str(job, "state"), state) == 0;
}

/* copying, paused, verifying: a job a worker may still work on, which blocks a new one. */
static int unfinished(const json_t *job)
{
    return job &&
           (is_state(job, "copying") || is_state(job, "paused") || is_state(job, "verifying"));
}

static json_t *zero_counters(const char *const *names, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, names[i], json_integer(0));
    return o;
}

/* Appends `item` (stolen) to list `name` of the job while it has fewer than RKD_JOB_LIST_MAX. */
static void list_add(json_t *job, const char *name, json_t *item)
{
    json_t *list = json_object_get(job, name);
    if (json_is_array(list) && json_array_size(list) < RKD_JOB_LIST_MAX)
        json_array_append_new(list, item);
    else
        json_decref(item);
}

static void set_event(change *c, const char *kind, const char *detail)
{
    c->event = (rkd_store_job_event){.kind = kind,
                                     .version = num(c->job, "to"),
                                     .from_version = num(c->job, "from"),
                                     .detail = detail};
}

/* The phase a job's workers are in: "copy", "verify", or "" for none. */
static const char *phase_of(const json_t *job)
{
    const char *state = is_state(job, "paused") ? str(job, "paused_from") : str(job, "state");
    return strcmp(state, "copying") == 0 ? "copy" : strcmp(state, "verifying") == 0 ? "verify" : "";
}

/* Fresh source entries for `phase` over the nodes of `ids` (strings). */
static json_t *sources_of(const json_t *ids, const char *phase)
{
    json_t *out = json_array();
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id)
    {
        const char *const *names = phase[0] == 'c' ? copy_counters : verify_counters;
        json_array_append_new(out,
                              json_pack("{sOsssssbsIso}", "node", id, "phase", phase, "cursor", "",
                                        "done", 0, "seq", (json_int_t)0, "counters",
                                        zero_counters(names, phase[0] == 'c' ? N_COPY : N_VERIFY)));
    }
    return out;
}

/* Every node of every step once, in order of first appearance: who verifies. */
static json_t *all_sources(const json_t *plan_steps)
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

/* ---- The compare-and-set loop ---- */

static int read_job(rkd_store *s, const char *cluster, json_t **job, int64_t *rev, rk_error *err)
{
    char *doc = NULL;
    *job = NULL;
    int rc = rkd_store_get_job(s, cluster, &doc, rev, err);
    if (rc == RK_OK && doc) {
        *job = json_loads(doc, 0, NULL);
        if (!json_is_object(*job))
            rc = rk_error_set(err, RK_EIO, NULL, "cluster %s: the stored migration job is damaged",
                              cluster);
    }
    free(doc);
    return rc;
}

static int run(rkd_store *s, const char *cluster, change *c, json_t **out, rk_error *err)
{
    int rc = RKD_STORE_ECONFLICT;
    *out = NULL;
    for (int i = 0; i < CHANGE_TRIES && rc == RKD_STORE_ECONFLICT; i++) {
        int64_t rev = 0;
        json_decref(c->job);
        c->event.kind = NULL;
        c->after = 0;
        rc = read_job(s, cluster, &c->job, &rev, err);
        rc = rc ? rc : c->rule(c, err);
        if (rc != RK_OK)
            break;
        char now[RKD_STORE_TIME_LEN];
        format_time(c->now, now);
        json_object_set_new(c->job, "updated_at", json_string(now));
        char *doc = json_dumps(c->job, JSON_COMPACT);
        rc = doc ? rkd_store_put_job(s, cluster, doc, rev, c->event.kind ? &c->event : NULL, err)
                 : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        free(doc);
    }
    if (rc == RKD_STORE_ECONFLICT)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "cluster %s: the migration job changed under %d tries in a row; retry",
                          cluster, CHANGE_TRIES);
    if (rc == SAME)
        rc = RK_OK;
    if (rc == RK_OK && c->after) {
        rc = c->after;
        *err = c->after_err;
    }
    if (rc == RK_OK || c->after)
        *out = json_incref(c->job);
    json_decref(c->job);
    c->job = NULL;
    return rc;
}

int rkd_job_get(rkd_store *s, const char *cluster, json_t **job, rk_error *err)
{
    int64_t rev;
    int rc = read_job(s, cluster, job, &rev, err);
    if (rc == RK_OK && !*job)
        rc = rk_error_set(err, RKD_STORE_ENOJOB, NULL,
                          "cluster %s has no migration job yet; start one with POST "
                          "/v1/clusters/%s/migration or `ringkeeper migrate run`",
                          cluster, cluster);
    return rc;
}

/* ---- Start ---- */

static int rule_start(change *c, rk_error *err)
{
    const rkd_job_start *st = c->arg;
    if (unfinished(c->job))
        return rk_error_set(err, RKD_STORE_EJOBSTATE, NULL,
                            "job %lld (%s, v%lld -> v%lld) is %s: pause, cancel or finish it "
                            "before starting another",
                            (long long)num(c->job, "id"), str(c->job, "mode"),
                            (long long)num(c->job, "from"), (long long)num(c->job, "to"),
                            str(c->job, "state"));
    char now[RKD_STORE_TIME_LEN];
    format_time(c->now, now);
    int64_t id = c->job ? num(c->job, "id") + 1 : 1;
    json_t *first = json_object_get(json_array_get(st->plan_steps, 0), "sources");
    json_t *job = json_pack(
        "{sIsssssIsIsssssosbsIsIsOs{sIsI}sos{sIsIso}sososososnsssssn}", "id", (json_int_t)id,
        "state", "copying", "mode", st->mode, "from", (json_int_t)st->from, "to",
        (json_int_t)st->to, "data", st->data, "digest", st->digest, "max_step",
        st->max_step > 0 ? json_real(st->max_step) : json_null(), "delete_source",
        st->delete_source != 0, "step", (json_int_t)1, "steps",
        (json_int_t)json_array_size(st->plan_steps), "plan_steps", st->plan_steps, "throttle",
        "keys_per_s", (json_int_t)st->keys_per_s, "bytes_per_s", (json_int_t)st->bytes_per_s,
        "counters", zero_counters(copy_counters, N_COPY), "verify", "arcs", (json_int_t)st->arcs,
        "keys", (json_int_t)0, "mismatches", json_null(), "sources", sources_of(first, "copy"),
        "errors", json_array(), "skipped_keys", json_array(), "mismatch_keys", json_array(),
        "worker", "started_at", now, "started_by", st->author ? st->author : "", "paused_from");
    if (!job)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    json_decref(c->job);
    c->job = job;
    snprintf(c->detail, sizeof c->detail, "job %lld: %s, v%lld -> v%lld, %zu step(s), %s",
             (long long)id, st->mode, (long long)st->from, (long long)st->to,
             json_array_size(st->plan_steps), st->data);
    set_event(c, "migration_start", c->detail);
    c->event.author = st->author;
    return RK_OK;
}

int rkd_job_start_new(rkd_store *s, const char *cluster, const rkd_job_start *st, json_t **job,
                      rk_error *err)
{
    change c = {.rule = rule_start, .arg = st, .now = time(NULL)};
    return run(s, cluster, &c, job, err);
}

/* ---- Claim and versions ---- */

/* Whether the cluster's versions are still the job's; when not, the job fails (written) and the
 * caller is answered RKD_STORE_EVERSIONCHANGED after. RK_OK, or SAME-free: 1 when it failed. */
static int versions_moved(change *c, const rkd_job_versions *now)
{
    int64_t from = num(c->job, "from"), to = num(c->job, "to");
    int window = strcmp(str(c->job, "mode"), "window") == 0;
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
    json_object_set_new(c->job, "state", json_string("failed"));
    json_object_set_new(c->job, "worker", json_null());
    list_add(c->job, "errors", json_pack("{ss}", "message", why));
    snprintf(c->detail, sizeof c->detail, "%s", why);
    set_event(c, "migration_failed", c->detail);
    c->after = RKD_STORE_EVERSIONCHANGED;
    rk_error_set(&c->after_err, RKD_STORE_EVERSIONCHANGED, NULL, "%s; the job stopped (failed)",
                 why);
    return 1;
}

static int need_job(change *c, rk_error *err)
{
    if (c->job)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ENOJOB, NULL,
                        "the cluster has no migration job; start one first");
}

static int need_unfinished(change *c, rk_error *err)
{
    int rc = need_job(c, err);
    if (rc == RK_OK && !unfinished(c->job))
        rc = rk_error_set(err, RKD_STORE_EJOBSTATE, NULL,
                          "job %lld is %s: nothing is left to do in it",
                          (long long)num(c->job, "id"), str(c->job, "state"));
    return rc;
}

static void lease(change *c, const char *worker)
{
    char until[RKD_STORE_TIME_LEN];
    format_time(c->now + RKD_JOB_LEASE_S, until);
    json_object_set_new(c->job, "worker", json_pack("{ssss}", "id", worker, "lease_until", until));
}

typedef struct claim_arg {
    const char *worker;
    const rkd_job_versions *now;
} claim_arg;

static int rule_claim(change *c, rk_error *err)
{
    const claim_arg *a = c->arg;
    int rc = need_unfinished(c, err);
    if (rc != RK_OK || versions_moved(c, a->now))
        return rc;
    json_t *w = json_object_get(c->job, "worker");
    const char *holder = str(w, "id");
    time_t until = parse_time(str(w, "lease_until"));
    if (json_is_object(w) && strcmp(holder, a->worker) != 0 && until > c->now)
        return rk_error_set(err, RKD_STORE_ELEASED, NULL,
                            "worker %s holds job %lld until %s (%lld s more); only one worker "
                            "copies at a time",
                            holder, (long long)num(c->job, "id"), str(w, "lease_until"),
                            (long long)(until - c->now));
    lease(c, a->worker);
    return RK_OK;
}

int rkd_job_claim(rkd_store *s, const char *cluster, const char *worker,
                  const rkd_job_versions *now, json_t **job, rk_error *err)
{
    claim_arg a = {worker, now};
    change c = {.rule = rule_claim, .arg = &a, .now = time(NULL)};
    return run(s, cluster, &c, job, err);
}

/* ---- Progress ---- */

typedef struct progress_arg {
    const json_t *report;
    const rkd_job_versions *now;
} progress_arg;

static int bad(rk_error *err, const char *field, const char *what)
{
    return rk_error_set(err, RK_EINVAL, field, "%s: %s", field, what);
}

static int check_text(const json_t *o, const char *name, int required, rk_error *err)
{
    const json_t *v = json_object_get(o, name);
    if (!v && !required)
        return RK_OK;
    if (!json_is_string(v) || json_string_length(v) > RKD_JOB_TEXT_MAX ||
        (required && json_string_length(v) == 0))
        return bad(err, name, "a non-empty string of at most 1024 bytes");
    return RK_OK;
}

/* A report's list `name`: at most RKD_JOB_LIST_MAX objects whose "key" is text. */
static int check_list(const json_t *report, const char *name, rk_error *err)
{
    const json_t *list = json_object_get(report, name);
    size_t i;
    json_t *item;
    if (!list)
        return RK_OK;
    if (!json_is_array(list) || json_array_size(list) > RKD_JOB_LIST_MAX)
        return bad(err, name, "an array of at most 100 objects");
    json_array_foreach(list, i, item)
    {
        if (!json_is_object(item) || check_text(item, "key", 1, err) != RK_OK ||
            check_text(item, "message", 0, err) != RK_OK ||
            check_text(item, "reason", 0, err) != RK_OK)
            return bad(err, name,
                       "objects with a \"key\" of at most 1024 bytes, and an optional "
                       "\"message\" or \"reason\"");
    }
    return RK_OK;
}

static int known_counter(const char *name, int copy)
{
    const char *const *names = copy ? copy_counters : verify_counters;
    size_t n = copy ? N_COPY : N_VERIFY;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* The report's counters against the source's: every name one of the phase's, whole, not below
 * what was reported before (counters count since the job started, over every run). A name the
 * source lacks counts from 0: a job stored before that counter existed. */
static int check_counters(const json_t *report, const json_t *had, int copy, rk_error *err)
{
    const json_t *got = json_object_get(report, "counters");
    const char *name;
    json_t *v;
    if (!json_is_object(got))
        return bad(err, "counters", "an object of whole numbers");
    json_object_foreach((json_t *)got, name, v)
    {
        json_t *before = json_object_get(had, name);
        if (!known_counter(name, copy))
            return rk_error_set(err, RK_EINVAL, "counters", "counters: unknown counter \"%s\"",
                                name);
        if (!json_is_integer(v) || json_integer_value(v) < json_integer_value(before))
            return rk_error_set(err, RK_EINVAL, "counters",
                                "counters.%s must be a whole number not below the %lld reported "
                                "before (counters count from the job's start)",
                                name, (long long)json_integer_value(before));
    }
    return RK_OK;
}

static int check_report(const json_t *r, rk_error *err)
{
    if (!json_is_object(r))
        return bad(err, "body", "a JSON object");
    int rc = check_text(r, "worker", 1, err);
    rc = rc ? rc : check_text(r, "node", 1, err);
    rc = rc ? rc : check_text(r, "cursor", 0, err);
    rc = rc ? rc : check_text(r, "error", 0, err);
    if (rc == RK_OK && (!json_is_integer(json_object_get(r, "seq")) || num(r, "seq") < 1))
        rc = bad(err, "seq", "a whole number of at least 1, one more for each report");
    if (rc == RK_OK && !json_is_integer(json_object_get(r, "step")))
        rc = bad(err, "step", "the job's step the report is of");
    if (rc == RK_OK && json_object_get(r, "done") && !json_is_boolean(json_object_get(r, "done")))
        rc = bad(err, "done", "true or false");
    const char *phase = str(r, "phase");
    if (rc == RK_OK && strcmp(phase, "copy") != 0 && strcmp(phase, "verify") != 0)
        rc = bad(err, "phase", "\"copy\" or \"verify\"");
    rc = rc ? rc : check_list(r, "errors", err);
    rc = rc ? rc : check_list(r, "skipped", err);
    return rc ? rc : check_list(r, "mismatches", err);
}

/* The job's source entry for the report's node, or NULL. */
static json_t *source_of(json_t *job, const char *node)
{
    size_t i;
    json_t *src;
    json_array_foreach(json_object_get(job, "sources"), i, src)
    {
        if (strcmp(str(src, "node"), node) == 0)
            return src;
    }
    return NULL;
}

/* Adds what each reported counter grew by to `totals`, and stores it in the source. */
static void add_counters(json_t *totals, json_t *had, const json_t *got)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)got, name, v)
    {
        json_int_t grew = json_integer_value(v) - json_integer_value(json_object_get(had, name));
        json_object_set_new(totals, name,
                            json_integer(json_integer_value(json_object_get(totals, name)) + grew));
        json_object_set(had, name, v);
    }
}

static void copy_lists(change *c, const json_t *report, const char *node)
{
    static const char *const from[] = {"errors", "skipped", "mismatches"};
    static const char *const to[] = {"errors", "skipped_keys", "mismatch_keys"};
    for (size_t k = 0; k < 3; k++) {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(report, from[k]), i, item)
        {
            json_t *copy = json_deep_copy(item);
            json_object_set_new(copy, "node", json_string(node));
            list_add(c->job, to[k], copy);
        }
    }
}

/* Every source of the phase done: the next step, verify, or the verdict. */
static void advance(change *c)
{
    size_t i;
    json_t *src;
    json_array_foreach(json_object_get(c->job, "sources"), i, src)
    {
        if (!json_is_true(json_object_get(src, "done")))
            return;
    }
    json_t *steps = json_object_get(c->job, "plan_steps");
    int64_t step = num(c->job, "step");
    int copying = strcmp(phase_of(c->job), "copy") == 0;
    if (copying && step < (int64_t)json_array_size(steps)) {
        json_object_set_new(c->job, "step", json_integer(step + 1));
        json_object_set_new(
            c->job, "sources",
            sources_of(json_object_get(json_array_get(steps, (size_t)step), "sources"), "copy"));
    } else if (copying) {
        json_t *ids = all_sources(steps);
        json_object_set_new(c->job, "sources", sources_of(ids, "verify"));
        json_decref(ids);
        json_object_set_new(json_object_get(c->job, "verify"), "counters",
                            zero_counters(verify_counters, N_VERIFY));
        json_object_set_new(c->job, is_state(c->job, "paused") ? "paused_from" : "state",
                            json_string("verifying"));
    } else {
        json_t *v = json_object_get(c->job, "verify");
        json_t *n = json_object_get(v, "counters");
        int64_t bad_keys = num(n, "missing") + num(n, "value") + num(n, "ttl");
        json_object_set_new(v, "mismatches", json_integer(bad_keys));
        json_object_set_new(c->job, "state", json_string(bad_keys ? "failed" : "verified"));
        json_object_set_new(c->job, "paused_from", json_null());
        json_object_set_new(c->job, "worker", json_null());
        snprintf(c->detail, sizeof c->detail, "verify: %lld keys checked, %lld mismatches",
                 (long long)num(v, "keys"), (long long)bad_keys);
        if (bad_keys)
            list_add(c->job, "errors", json_pack("{ss}", "message", c->detail));
        set_event(c, bad_keys ? "migration_failed" : "migration_verified", c->detail);
    }
}

/* A failure that stops the worker (a data server unreachable after its tries): the job pauses
 * with it, for a person to look at and resume. */
static void pause_for(change *c, const char *node, const char *message)
{
    list_add(c->job, "errors", json_pack("{ssss}", "node", node, "message", message));
    if (!is_state(c->job, "paused")) {
        json_object_set(c->job, "paused_from", json_object_get(c->job, "state"));
        json_object_set_new(c->job, "state", json_string("paused"));
    }
    snprintf(c->detail, sizeof c->detail, "paused by its worker: %s: %s", node, message);
    set_event(c, "migration_pause", c->detail);
}

static int rule_progress(change *c, rk_error *err)
{
    const progress_arg *a = c->arg;
    const json_t *r = a->report;
    int rc = need_unfinished(c, err);
    if (rc != RK_OK || versions_moved(c, a->now))
        return rc;
    const char *worker = str(r, "worker"), *node = str(r, "node");
    if (strcmp(str(json_object_get(c->job, "worker"), "id"), worker) != 0)
        return rk_error_set(err, RKD_STORE_ELEASED, "worker",
                            "worker %s does not hold job %lld's lease (lost it, or never "
                            "claimed): claim it again",
                            worker, (long long)num(c->job, "id"));
    if (num(r, "step") != num(c->job, "step") || strcmp(str(r, "phase"), phase_of(c->job)) != 0)
        return rk_error_set(err, RKD_STORE_EJOBSTATE, "step",
                            "the report is of step %lld (%s), and job %lld is at step %lld (%s)",
                            (long long)num(r, "step"), str(r, "phase"),
                            (long long)num(c->job, "id"), (long long)num(c->job, "step"),
                            phase_of(c->job));
    json_t *src = source_of(c->job, node);
    if (!src)
        return rk_error_set(err, RK_EINVAL, "node",
                            "node %s is not a source of job %lld's current step", node,
                            (long long)num(c->job, "id"));
    lease(c, worker);
    if (num(r, "seq") <= num(src, "seq"))
        return RK_OK; /* a retried report: counted already, only the lease is renewed */
    json_t *had = json_object_get(src, "counters");
    int copy = strcmp(str(r, "phase"), "copy") == 0;
    rc = check_counters(r, had, copy, err);
    if (rc != RK_OK)
        return rc;
    json_t *totals = copy ? json_object_get(c->job, "counters")
                          : json_object_get(json_object_get(c->job, "verify"), "counters");
    add_counters(totals, had, json_object_get(r, "counters"));
    if (!copy)
        json_object_set_new(json_object_get(c->job, "verify"), "keys",
                            json_integer(num(totals, "checked")));
    json_object_set_new(src, "seq", json_integer(num(r, "seq")));
    json_object_set_new(src, "cursor", json_string(str(r, "cursor")));
    json_object_set_new(src, "done", json_boolean(json_is_true(json_object_get(r, "done"))));
    copy_lists(c, r, node);
    if (json_object_get(r, "error"))
        pause_for(c, node, str(r, "error"));
    else
        advance(c);
    return RK_OK;
}

int rkd_job_progress(rkd_store *s, const char *cluster, const json_t *report,
                     const rkd_job_versions *now, json_t **job, rk_error *err)
{
    int rc = check_report(report, err);
    if (rc != RK_OK)
        return rc;
    progress_arg a = {report, now};
    change c = {.rule = rule_progress, .arg = &a, .now = time(NULL)};
    return run(s, cluster, &c, job, err);
}

/* ---- Throttle, pause, resume, cancel ---- */

typedef struct throttle_arg {
    int64_t keys, bytes;
    const char *author;
} throttle_arg;

static int rule_throttle(change *c, rk_error *err)
{
    const throttle_arg *a = c->arg;
    int rc = need_unfinished(c, err);
    if (rc != RK_OK)
        return rc;
    json_t *t = json_object_get(c->job, "throttle");
    if (a->keys >= 0)
        json_object_set_new(t, "keys_per_s", json_integer(a->keys));
    if (a->bytes >= 0)
        json_object_set_new(t, "bytes_per_s", json_integer(a->bytes));
    snprintf(c->detail, sizeof c->detail, "keys_per_s %lld, bytes_per_s %lld (0: unlimited)",
             (long long)num(t, "keys_per_s"), (long long)num(t, "bytes_per_s"));
    set_event(c, "migration_throttle", c->detail);
    c->event.author = a->author;
    return RK_OK;
}

int rkd_job_throttle(rkd_store *s, const char *cluster, int64_t keys_per_s, int64_t bytes_per_s,
                     const char *author, json_t **job, rk_error *err)
{
    throttle_arg a = {keys_per_s, bytes_per_s, author};
    change c = {.rule = rule_throttle, .arg = &a, .now = time(NULL)};
    return run(s, cluster, &c, job, err);
}

typedef struct control_arg {
    const char *action, *author, *comment;
} control_arg;

static int rule_control(change *c, rk_error *err)
{
    const control_arg *a = c->arg;
    int rc = need_unfinished(c, err);
    if (rc != RK_OK)
        return rc;
    int paused = is_state(c->job, "paused");
    if (strcmp(a->action, "pause") == 0 && paused)
        return SAME;
    if (strcmp(a->action, "resume") == 0 && !paused)
        return rk_error_set(err, RKD_STORE_EJOBSTATE, NULL, "job %lld is %s, not paused",
                            (long long)num(c->job, "id"), str(c->job, "state"));
    if (strcmp(a->action, "pause") == 0) {
        json_object_set(c->job, "paused_from", json_object_get(c->job, "state"));
        json_object_set_new(c->job, "state", json_string("paused"));
    } else if (strcmp(a->action, "resume") == 0) {
        json_object_set(c->job, "state", json_object_get(c->job, "paused_from"));
        json_object_set_new(c->job, "paused_from", json_null());
    } else {
        json_object_set_new(c->job, "state", json_string("cancelled"));
        json_object_set_new(c->job, "paused_from", json_null());
        json_object_set_new(c->job, "worker", json_null());
    }
    snprintf(c->detail, sizeof c->detail, "%s", a->comment ? a->comment : "");
    const char *kind = a->action[0] == 'p'   ? "migration_pause"
                       : a->action[0] == 'r' ? "migration_resume"
                                             : "migration_cancel";
    set_event(c, kind, a->comment ? c->detail : NULL);
    c->event.author = a->author;
    return RK_OK;
}

int rkd_job_control(rkd_store *s, const char *cluster, const char *action, const char *author,
                    const char *comment, json_t **job, rk_error *err)
{
    control_arg a = {action, author, comment};
    change c = {.rule = rule_control, .arg = &a, .now = time(NULL)};
    return run(s, cluster, &c, job, err);
}

/* ---- Finish ---- */

static int for_window(const json_t *job, int64_t from, int64_t to)
{
    return job && strcmp(str(job, "mode"), "window") == 0 && num(job, "from") == from &&
           num(job, "to") == to;
}

int rkd_job_check_finish(rkd_store *s, const char *cluster, const rkd_job_versions *now,
                         int *is_for, rk_error *err)
{
    json_t *job = NULL;
    int64_t rev;
    int rc = read_job(s, cluster, &job, &rev, err);
    int mine = rc == RK_OK && for_window(job, now->previous, now->active);
    if (is_for)
        *is_for = mine;
    if (mine && !is_state(job, "verified") && !is_state(job, "finished"))
        rc = rk_error_set(err, RKD_STORE_ENOTVERIFIED, NULL,
                          "job %lld copies the data of this window and is %s, not verified: let "
                          "it finish (ringkeeper migrate run), or finish with {\"force\": true, "
                          "\"reason\": \"...\"}",
                          (long long)num(job, "id"), str(job, "state"));
    json_decref(job);
    return rc;
}

typedef struct finished_arg {
    int64_t from, to;
} finished_arg;

static int rule_finished(change *c, rk_error *err)
{
    const finished_arg *a = c->arg;
    (void)err;
    if (!for_window(c->job, a->from, a->to) || !is_state(c->job, "verified"))
        return SAME;
    json_object_set_new(c->job, "state", json_string("finished"));
    return RK_OK;
}

int rkd_job_window_finished(rkd_store *s, const char *cluster, int64_t from, int64_t to,
                            rk_error *err)
{
    finished_arg a = {from, to};
    change c = {.rule = rule_finished, .arg = &a, .now = time(NULL)};
    json_t *job = NULL;
    int rc = run(s, cluster, &c, &job, err);
    json_decref(job);
    return rc;
}
