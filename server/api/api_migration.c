/* api_migration.c — the migration job's routes (SPEC 10, docs/MIGRATE.md "The job"): reading
 * it, starting one over the plan of the open window (or ahead of a cutover), a worker's claim and
 * progress reports, the throttle, pause, resume and cancel. The rules are migration_job.c's; this
 * file parses requests and builds what a start needs from the plan. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_migration.h"
#include "docs.h"
#include "fleet.h"
#include "migration_job.h"
#include "reply.h"
#include "request.h"
#include "rings.h"
#include "rollout_driver.h"

/* Shows the job in /metrics. */
static void note_metrics(rkd_call *c, const json_t *job)
{
    const json_t *counters = json_object_get(job, "counters");
    uint64_t keys[RKD_JOB_KINDS];
    for (size_t i = 0; i < RKD_JOB_KINDS; i++)
        keys[i] = (uint64_t)json_integer_value(json_object_get(counters, rkd_metrics_job_kind(i)));
    rkd_metrics_migration(c->app->metrics, c->cluster,
                          json_string_value(json_object_get(job, "state")), keys,
                          (uint64_t)json_integer_value(json_object_get(counters, "bytes")));
}

/* Answers `rc`: `ok` with the job, or the failure (the job, when given, still shows in /metrics:
 * a change that failed it). Takes `job`. */
static void answer(rkd_call *c, int ok, int rc, json_t *job, const rk_error *err)
{
    if (job)
        note_metrics(c, job);
    if (rc == RK_OK)
        rkd_answer_json(c->resp, ok, job);
    else {
        json_decref(job);
        rkd_fail(c, rc, err);
    }
}

void rkd_h_migration(rkd_call *c)
{
    json_t *job = NULL;
    rk_error err = {0};
    int rc = rkd_job_get(c->app->store, c->cluster, &job, &err);
    answer(c, 200, rc, job, &err);
}

/* ---- Start ---- */

/* Optional whole number `name` of `o` in 0..max into *out (kept when absent): 0, or -1 after
 * answering 400 naming `field`. */
static int whole_field(rkd_call *c, const json_t *o, const char *name, const char *field,
                       int64_t max, int64_t *out)
{
    const json_t *v = json_object_get(o, name);
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= max) {
        *out = json_integer_value(v);
        return 0;
    }
    rkd_response_error(c->resp, RKD_E_INVALID_BODY, field,
                       "%s is a whole number from 0 (unlimited) to %lld", field, (long long)max);
    return -1;
}

/* The throttle object {"keys_per_s", "bytes_per_s"}; an absent rate keeps *keys or *bytes. */
static int throttle_fields(rkd_call *c, const json_t *t, int64_t *keys, int64_t *bytes)
{
    static const char *const fields[] = {"keys_per_s", "bytes_per_s", NULL};
    if (!json_is_object(t)) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "throttle",
                           "throttle is an object: {\"keys_per_s\": N, \"bytes_per_s\": N}");
        return -1;
    }
    if (rkd_known_fields(c, (json_t *)t, fields, "keys_per_s and bytes_per_s") != 0)
        return -1;
    return whole_field(c, t, "keys_per_s", "keys_per_s", RKD_JOB_KEYS_MAX, keys) ||
                   whole_field(c, t, "bytes_per_s", "bytes_per_s", RKD_JOB_BYTES_MAX, bytes)
               ? -1
               : 0;
}

/* A start's body into st (mode, to, max_step, throttle, delete_source): 0, or -1 after answering.
 */
static int start_body(rkd_call *c, json_t *doc, rkd_job_start *st)
{
    static const char *const fields[] = {"mode",          "to", "max_step", "throttle",
                                         "delete_source", NULL};
    json_t *mode = json_object_get(doc, "mode"), *to = json_object_get(doc, "to");
    json_t *step = json_object_get(doc, "max_step"), *t = json_object_get(doc, "throttle");
    if (rkd_known_fields(c, doc, fields, "mode, to, max_step, throttle and delete_source") != 0)
        return -1;
    st->mode = mode ? json_string_value(mode) : "window";
    if (!st->mode || (strcmp(st->mode, "window") != 0 && strcmp(st->mode, "before_cutover") != 0))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "mode",
                           "mode is \"window\" (the open migration window's plan) or "
                           "\"before_cutover\" (from the active version to a staged \"to\")");
    else if (to && (!json_is_integer(to) || json_integer_value(to) < 1))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "to", "to is a version number");
    else if (st->mode[0] == 'b' && !to)
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "to",
                           "a before_cutover job needs \"to\": the staged version to pre-warm");
    else if (step &&
             !(json_is_number(step) && json_number_value(step) > 0 && json_number_value(step) <= 1))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "max_step",
                           "max_step is a fraction of the hash space above 0 and at most 1");
    else if (json_object_get(doc, "delete_source") &&
             !json_is_boolean(json_object_get(doc, "delete_source")))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "delete_source",
                           "delete_source is true or false");
    else if (st->mode[0] == 'b' && json_is_true(json_object_get(doc, "delete_source")))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "delete_source",
                           "delete_source is for a window job: before the cutover the sources "
                           "still serve their keys");
    else if (!t || throttle_fields(c, t, &st->keys_per_s, &st->bytes_per_s) == 0) {
        st->to = to ? json_integer_value(to) : 0;
        st->max_step = step ? json_number_value(step) : 0;
        st->delete_source = json_is_true(json_object_get(doc, "delete_source"));
        return 0;
    }
    return -1;
}

/* from and to of the job in st->mode, checked against the cluster now. */
static int start_versions(rkd_call *c, rkd_job_start *st, rk_error *err)
{
    rkd_job_versions now;
    int rc = rkd_job_versions_now(c, &now, err);
    if (rc != RK_OK)
        return rc;
    if (strcmp(st->mode, "window") == 0) {
        if (!now.previous)
            return rk_error_set(err, RKD_STORE_ENOWINDOW, NULL,
                                "cluster %s has no open migration window: a window job copies "
                                "the plan from the window's previous version to the active one "
                                "(set migration_window in the policy and activate), or start a "
                                "before_cutover job",
                                c->cluster);
        if (st->to && st->to != now.active)
            return rk_error_set(
                err, RK_EINVAL, "to", "the open window is v%lld -> v%lld: \"to\" is %lld or absent",
                (long long)now.previous, (long long)now.active, (long long)now.active);
        st->from = now.previous, st->to = now.active;
        return RK_OK;
    }
    if (!now.active)
        return rk_error_set(err, RKD_STORE_ENOACTIVE, NULL,
                            "cluster %s has no active version to pre-warm from", c->cluster);
    if (st->to <= now.active)
        return rk_error_set(err, RK_EINVAL, "to",
                            "a before_cutover job pre-warms a version newer than the active "
                            "v%lld",
                            (long long)now.active);
    st->from = now.active;
    return RK_OK;
}

/* The data protocol of both versions (they must agree) and the plan's digest. */
static int start_data(rkd_call *c, rkd_job_start *st, char digest[RK_PLAN_DIGEST_LEN],
                      rk_error *err)
{
    rkd_store_version *rec[2] = {NULL, NULL};
    char names[128];
    int rc = rkd_store_get(c->app->store, c->cluster, st->from, &rec[0], err);
    rc = rc ? rc : rkd_store_get(c->app->store, c->cluster, st->to, &rec[1], err);
    const char *d[2] = {rec[0] ? rk_topology_data(rec[0]->topology) : NULL,
                        rec[1] ? rk_topology_data(rec[1]->topology) : NULL};
    if (rc == RK_OK && !d[1])
        rc = rk_error_set(err, RKD_STORE_ENODATA, "data",
                          "version %lld does not say what its nodes serve: publish it with "
                          "\"data\": %s (ringkeeper import --nutcracker sets it)",
                          (long long)st->to, rk_data_protocol_names(names, sizeof names, "\""));
    else if (rc == RK_OK && !rk_data_protocol_find(d[1]))
        rc = rk_error_set(err, RKD_STORE_ENODATA, "data",
                          "version %lld serves \"%.64s\", which is no data protocol of this build: "
                          "%s",
                          (long long)st->to, d[1],
                          rk_data_protocol_names(names, sizeof names, "\""));
    else if (rc == RK_OK && d[0] && strcmp(d[0], d[1]) != 0)
        rc = rk_error_set(err, RKD_STORE_ENODATA, "data",
                          "version %lld serves %s and version %lld %s: the mover copies between "
                          "servers of one protocol",
                          (long long)st->from, d[0], (long long)st->to, d[1]);
    if (rc == RK_OK) {
        st->data = rk_data_protocol_find(d[1]); /* static: outlives rec */
        rk_plan_digest(st->from, rec[0]->fingerprint, st->to, rec[1]->fingerprint, digest);
    }
    rkd_store_version_free(rec[0]);
    rkd_store_version_free(rec[1]);
    return rc;
}

/* The ids of the nodes the arcs in[0 .. n) move from, each once, sorted (the plan's node order). */
static json_t *arc_sources(const rk_plan *p, const rk_arc *arcs, size_t n)
{
    size_t count;
    const rk_plan_node *nodes = rk_plan_nodes(p, &count);
    unsigned char *seen = calloc(count ? count : 1, 1);
    json_t *ids = seen ? json_array() : NULL;
    for (size_t i = 0; ids && i < n; i++)
        seen[arcs[i].from] = 1;
    for (size_t i = 0; ids && i < count; i++) {
        if (seen[i] && json_array_append_new(ids, json_string(nodes[i].id)) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    }
    free(seen);
    return ids;
}

/* [{"sources": [...], "arcs": n}] per step of the plan (one step without max_step), or none when
 * nothing moves. RKD_STORE_EJOBTOOBIG past RKD_JOB_SOURCES_MAX source entries. */
static int plan_steps(const rk_plan *p, json_t **out, rk_error *err)
{
    size_t n_steps, n_arcs, total = 0;
    const rk_step *steps = rk_plan_steps(p, &n_steps);
    const rk_arc *arcs = n_steps ? rk_plan_step_arcs(p, &n_arcs) : rk_plan_arcs(p, &n_arcs);
    rk_step whole = {.first_arc = 0, .arcs = n_arcs};
    size_t count = n_steps ? n_steps : n_arcs ? 1 : 0; /* nothing moves: no step */
    *out = json_array();
    for (size_t i = 0; *out && i < count; i++) {
        const rk_step *s = n_steps ? &steps[i] : &whole;
        json_t *ids = arc_sources(p, arcs + s->first_arc, s->arcs);
        total += json_array_size(ids);
        if (!ids || json_array_append_new(*out, json_pack("{sosI}", "sources", ids, "arcs",
                                                          (json_int_t)s->arcs)) != 0) {
            json_decref(*out);
            *out = NULL;
        }
    }
    if (!*out)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    if (total <= RKD_JOB_SOURCES_MAX)
        return RK_OK;
    json_decref(*out);
    *out = NULL;
    return rk_error_set(err, RKD_STORE_EJOBTOOBIG, "max_step",
                        "the job would have %zu sources over its steps, over this server's %d: "
                        "use fewer steps (a larger max_step), or move the change in parts",
                        total, RKD_JOB_SOURCES_MAX);
}

/* The plan's steps and arcs into st (st->plan_steps a new reference), under a plan slot. */
static int start_plan(rkd_call *c, rkd_job_start *st, rk_error *err, int *answered)
{
    rk_plan_options opt = {.max_step = st->max_step, .max_arcs = c->app->plan.max_arcs};
    rk_plan *p = NULL;
    size_t arcs;
    *answered = 0;
    if (!rkd_plan_slot(c)) {
        *answered = 1;
        return RKD_STORE_EUNAVAILABLE;
    }
    int rc = rkd_plan_between(c, st->from, st->to, &opt, &p, err);
    if (rc == RK_ETOOBIG && strcmp(err->field, "arcs") == 0) {
        rkd_fail_plan(c, rc, err);
        *answered = 1;
    }
    rc = rc ? rc : plan_steps(p, &st->plan_steps, err);
    if (p && rk_plan_arcs(p, &arcs))
        st->arcs = (int64_t)arcs;
    rk_plan_free(p);
    rkd_plan_slot_release(c);
    return rc;
}

void rkd_h_migration_start(rkd_call *c)
{
    rkd_job_start st = {.author = c->req->author};
    char digest[RK_PLAN_DIGEST_LEN] = "";
    rk_error err = {0};
    json_t *job = NULL;
    int answered = 0;
    json_t *doc = rkd_body_object(c, 1);
    if (!doc || start_body(c, doc, &st) != 0) {
        json_decref(doc);
        return;
    }
    st.digest = digest;
    int rc = start_versions(c, &st, &err);
    rc = rc ? rc : start_data(c, &st, digest, &err);
    rc = rc ? rc : start_plan(c, &st, &err, &answered);
    rc = rc ? rc : rkd_job_start_new(c->app->store, c->cluster, &st, &job, &err);
    if (!answered)
        answer(c, 201, rc, job, &err);
    else
        json_decref(job);
    json_decref(st.plan_steps);
    json_decref(doc);
}

/* ---- A worker's claim and progress ---- */

void rkd_h_migration_claim(rkd_call *c)
{
    static const char *const fields[] = {"worker", "release", NULL};
    rkd_job_versions now;
    rk_error err = {0};
    json_t *job = NULL;
    json_t *doc = rkd_body_object(c, 0);
    const char *worker = NULL;
    if (!doc || rkd_known_fields(c, doc, fields, "worker and release") != 0 ||
        rkd_text_field(c, doc, "worker", &worker) != 0) {
        json_decref(doc);
        return;
    }
    json_t *release = json_object_get(doc, "release");
    if (!worker || !worker[0] || (release && !json_is_boolean(release))) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, worker && worker[0] ? "release" : "worker",
                           worker && worker[0]
                               ? "release is true (let go of the lease) or false"
                               : "worker is the claiming worker's id, a non-empty string");
        json_decref(doc);
        return;
    }
    int rc = RK_OK;
    if (json_is_true(release)) {
        rc = rkd_job_release(c->app->store, c->cluster, worker, &job, &err);
    } else {
        rc = rkd_job_versions_now(c, &now, &err);
        now.fleet_holds = rc == RK_OK && rkd_fleet_holds(c->app, c->cluster, now.active);
        rc = rc ? rc : rkd_job_claim(c->app->store, c->cluster, worker, &now, &job, &err);
    }
    answer(c, 200, rc, job, &err);
    json_decref(doc);
}

void rkd_h_migration_progress(rkd_call *c)
{
    rkd_job_versions now;
    rk_error err = {0};
    json_t *job = NULL;
    json_t *doc = rkd_body_object(c, 0);
    if (!doc)
        return;
    int rc = rkd_job_versions_now(c, &now, &err);
    rc = rc ? rc : rkd_job_progress(c->app->store, c->cluster, doc, &now, &job, &err);
    const char *state = json_string_value(json_object_get(job, "state"));
    if (rc == RK_OK && state && strcmp(state, "verified") == 0)
        rkd_driver_wake(c->app, c->cluster); /* a rollout's step waiting in prewarm goes on now:
                                                 the keys written after the catch-up go stale */
    answer(c, 200, rc, job, &err);
    json_decref(doc);
}

/* ---- Throttle, pause, resume, cancel ---- */

void rkd_h_migration_throttle(rkd_call *c)
{
    int64_t keys = -1, bytes = -1;
    rk_error err = {0};
    json_t *job = NULL;
    json_t *doc = rkd_body_object(c, 0);
    if (!doc || throttle_fields(c, doc, &keys, &bytes) != 0) {
        json_decref(doc);
        return;
    }
    int rc = rkd_job_throttle(c->app->store, c->cluster, keys, bytes, c->req->author, &job, &err);
    answer(c, 200, rc, job, &err);
    json_decref(doc);
}

static void control(rkd_call *c, const char *action)
{
    static const char *const fields[] = {"comment", NULL};
    const char *comment = NULL;
    rk_error err = {0};
    json_t *job = NULL;
    json_t *doc = rkd_body_object(c, 1);
    if (!doc || rkd_known_fields(c, doc, fields, "comment (or send no body)") != 0 ||
        rkd_text_field(c, doc, "comment", &comment) != 0) {
        json_decref(doc);
        return;
    }
    int rc =
        rkd_job_control(c->app->store, c->cluster, action, c->req->author, comment, &job, &err);
    answer(c, 200, rc, job, &err);
    json_decref(doc);
}

void rkd_h_migration_pause(rkd_call *c)
{
    control(c, "pause");
}

void rkd_h_migration_resume(rkd_call *c)
{
    control(c, "resume");
}

void rkd_h_migration_cancel(rkd_call *c)
{
    control(c, "cancel");
}
