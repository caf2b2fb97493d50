/* migration_progress.c — a worker's progress report to the migration job (migration_job.h,
 * rkd_job_progress): its checks, counted once by its seq, the totals grown by what each counter
 * grew, and the job moved on when every source of a step, then of the verify, is done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migration_job_internal.h"

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
    const char *const *names = copy ? rkj_copy_counters : rkj_verify_counters;
    size_t n = copy ? rkj_n_copy : rkj_n_verify;
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
    if (rc == RK_OK && (!json_is_integer(json_object_get(r, "seq")) || rkj_num(r, "seq") < 1))
        rc = bad(err, "seq", "a whole number of at least 1, one more for each report");
    if (rc == RK_OK && !json_is_integer(json_object_get(r, "step")))
        rc = bad(err, "step", "the job's step the report is of");
    if (rc == RK_OK && json_object_get(r, "done") && !json_is_boolean(json_object_get(r, "done")))
        rc = bad(err, "done", "true or false");
    const char *phase = rkj_str(r, "phase");
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
        if (strcmp(rkj_str(src, "node"), node) == 0)
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

static void copy_lists(rkj_change *c, const json_t *report, const char *node)
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
            rkj_list_add(c->doc, to[k], copy);
        }
    }
}

/* The verdict's reasons (SPEC 10): every moving key the copy or the verify could not read, write
 * or compare counts, not only those found to differ; and a verify that compared nothing while the
 * copy met moving keys vouches for none of them ("unchecked"). `held`: the fleet wrote to the
 * new owners all along, so a copy that differs there holds the application's newer write. */
static json_t *reasons_of(const json_t *job, int held)
{
    const json_t *n = json_object_get(json_object_get(job, "verify"), "counters");
    const json_t *copy = json_object_get(job, "counters");
    int64_t moving = rkj_num(copy, "copied") + rkj_num(copy, "present") + rkj_num(copy, "skipped") +
                     rkj_num(copy, "errors");
    int64_t looked = rkj_num(n, "checked") + rkj_num(n, "expired") + rkj_num(n, "errors");
    return json_pack("{sIsIsIsIsIsIsI}", "missing", (json_int_t)rkj_num(n, "missing"), "value",
                     (json_int_t)(held ? 0 : rkj_num(n, "value")), "ttl",
                     (json_int_t)(held ? 0 : rkj_num(n, "ttl")), "errors",
                     (json_int_t)rkj_num(n, "errors"), "skipped", (json_int_t)rkj_num(n, "skipped"),
                     "copy_errors", (json_int_t)rkj_num(copy, "errors"), "unchecked",
                     (json_int_t)(looked == 0 ? moving : 0));
}

/* Every verify source done: `verified` only when no reason counts a key, else `failed`. */
static void verdict(rkj_change *c)
{
    json_t *v = json_object_get(c->doc, "verify");
    json_t *n = json_object_get(v, "counters");
    int held = json_is_true(json_object_get(c->doc, "fleet_held"));
    json_t *reasons = reasons_of(c->doc, held);
    int64_t bad_keys = 0;
    const char *name;
    json_t *count;
    json_object_foreach(reasons, name, count) bad_keys += json_integer_value(count);
    json_object_set_new(v, "reasons", reasons);
    json_object_set_new(v, "mismatches", json_integer(bad_keys));
    json_object_set_new(v, "written",
                        json_integer(held ? rkj_num(n, "value") + rkj_num(n, "ttl") : 0));
    json_object_set_new(c->doc, "state", json_string(bad_keys ? "failed" : "verified"));
    json_object_set_new(c->doc, "paused_from", json_null());
    json_object_set_new(c->doc, "worker", json_null());
    snprintf(c->detail, sizeof c->detail,
             "verify: %lld keys checked, %lld mismatches (missing %lld, value %lld, ttl %lld, "
             "unreadable %lld, skipped %lld, copy errors %lld, unchecked %lld)",
             (long long)rkj_num(v, "keys"), (long long)bad_keys,
             (long long)rkj_num(reasons, "missing"), (long long)rkj_num(reasons, "value"),
             (long long)rkj_num(reasons, "ttl"), (long long)rkj_num(reasons, "errors"),
             (long long)rkj_num(reasons, "skipped"), (long long)rkj_num(reasons, "copy_errors"),
             (long long)rkj_num(reasons, "unchecked"));
    if (bad_keys)
        rkj_list_add(c->doc, "errors", json_pack("{ss}", "message", c->detail));
    rkj_set_event(c, bad_keys ? "migration_failed" : "migration_verified", c->detail);
}

/* Every source of the phase done: the next step, verify, or the verdict. */
static void advance(rkj_change *c)
{
    size_t i;
    json_t *src;
    json_array_foreach(json_object_get(c->doc, "sources"), i, src)
    {
        if (!json_is_true(json_object_get(src, "done")))
            return;
    }
    json_t *steps = json_object_get(c->doc, "plan_steps");
    int64_t step = rkj_num(c->doc, "step");
    int copying = strcmp(rkj_phase_of(c->doc), "copy") == 0;
    if (copying && step < (int64_t)json_array_size(steps)) {
        json_object_set_new(c->doc, "step", json_integer(step + 1));
        json_object_set_new(
            c->doc, "sources",
            rkj_sources_of(json_object_get(json_array_get(steps, (size_t)step), "sources"),
                           "copy"));
    } else if (copying) {
        json_t *ids = rkj_all_sources(steps);
        json_object_set_new(c->doc, "sources", rkj_sources_of(ids, "verify"));
        json_decref(ids);
        json_object_set_new(json_object_get(c->doc, "verify"), "counters",
                            rkj_zero_counters(rkj_verify_counters, rkj_n_verify));
        json_object_set_new(c->doc, rkj_is_state(c->doc, "paused") ? "paused_from" : "state",
                            json_string("verifying"));
    } else {
        verdict(c);
    }
}

/* A failure that stops the worker (a data server unreachable after its tries): the job pauses
 * with it, for a person to look at and resume. */
static void pause_for(rkj_change *c, const char *node, const char *message)
{
    rkj_list_add(c->doc, "errors", json_pack("{ssss}", "node", node, "message", message));
    if (!rkj_is_state(c->doc, "paused")) {
        json_object_set(c->doc, "paused_from", json_object_get(c->doc, "state"));
        json_object_set_new(c->doc, "state", json_string("paused"));
    }
    snprintf(c->detail, sizeof c->detail, "paused by its worker: %s: %s", node, message);
    rkj_set_event(c, "migration_pause", c->detail);
}

static int rule_progress(rkj_change *c, rk_error *err)
{
    const progress_arg *a = c->arg;
    const json_t *r = a->report;
    int rc = rkj_need_unfinished(c, err);
    if (rc != RK_OK || rkj_versions_moved(c, a->now))
        return rc;
    const char *worker = rkj_str(r, "worker"), *node = rkj_str(r, "node");
    if (strcmp(rkj_str(json_object_get(c->doc, "worker"), "id"), worker) != 0)
        return rk_error_set(err, RKD_STORE_ELEASED, "worker",
                            "worker %s does not hold job %lld's lease (lost it, or never "
                            "claimed): claim it again",
                            worker, (long long)rkj_num(c->doc, "id"));
    if (rkj_num(r, "step") != rkj_num(c->doc, "step") ||
        strcmp(rkj_str(r, "phase"), rkj_phase_of(c->doc)) != 0)
        return rk_error_set(err, RKD_STORE_EJOBSTATE, "step",
                            "the report is of step %lld (%s), and job %lld is at step %lld (%s)",
                            (long long)rkj_num(r, "step"), rkj_str(r, "phase"),
                            (long long)rkj_num(c->doc, "id"), (long long)rkj_num(c->doc, "step"),
                            rkj_phase_of(c->doc));
    json_t *src = source_of(c->doc, node);
    if (!src)
        return rk_error_set(err, RK_EINVAL, "node",
                            "node %s is not a source of job %lld's current step", node,
                            (long long)rkj_num(c->doc, "id"));
    rkj_lease(c, worker);
    if (rkj_num(r, "seq") <= rkj_num(src, "seq"))
        return RK_OK; /* a retried report: counted already, only the lease is renewed */
    json_t *had = json_object_get(src, "counters");
    int copy = strcmp(rkj_str(r, "phase"), "copy") == 0;
    rc = check_counters(r, had, copy, err);
    if (rc != RK_OK)
        return rc;
    json_t *totals = copy ? json_object_get(c->doc, "counters")
                          : json_object_get(json_object_get(c->doc, "verify"), "counters");
    add_counters(totals, had, json_object_get(r, "counters"));
    if (!copy)
        json_object_set_new(json_object_get(c->doc, "verify"), "keys",
                            json_integer(rkj_num(totals, "checked")));
    json_object_set_new(src, "seq", json_integer(rkj_num(r, "seq")));
    json_object_set_new(src, "cursor", json_string(rkj_str(r, "cursor")));
    json_object_set_new(src, "done", json_boolean(json_is_true(json_object_get(r, "done"))));
    copy_lists(c, r, node);
    if (json_object_get(r, "error"))
        pause_for(c, node, rkj_str(r, "error"));
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
    rkj_change c = {.rule = rule_progress, .arg = &a, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_JOB, cluster, &c, job, err);
}
