/* api_rollouts.c — the rollout's routes (SPEC 11, docs/MIGRATE.md "Rollouts"): a review of the
 * change from the active version to a target in steps, stored as the cluster's rollout, read,
 * and approved over its digest. The rules are rollout.c's; this file parses requests and computes
 * the review (rk_rollout_new) over the cached active ring, within the review's bounds. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api_rollouts.h"
#include "cache.h"
#include "doc_change.h"
#include "docs.h"
#include "fleet.h"
#include "load_profile.h"
#include "migration_job.h"
#include "reply.h"
#include "request.h"
#include "rings.h"
#include "rollout.h"
#include "rollout_driver.h"

/* Answers `rc`: `ok` with the rollout, or the failure. Takes `r`. */
static void answer(rkd_call *c, int ok, int rc, json_t *r, const rk_error *err)
{
    if (rc == RK_OK)
        rkd_answer_json(c->resp, ok, r);
    else {
        json_decref(r);
        rkd_fail(c, rc, err);
    }
}

/* What a create asks: the target (parsed), and the options as the document keeps them. */
typedef struct create_req {
    rk_topology *target;
    rk_rollout_options opt;
    json_t *options; /* {"steps" | "max_step_moved", "soak_s", "guard"} */
} create_req;

static int bad(rkd_call *c, const char *field, const char *message)
{
    rkd_response_error(c->resp, RKD_E_INVALID_BODY, field, "%s", message);
    return -1;
}

/* A guard: {"url": "http(s)://..."}, and for a Prometheus-style threshold "metric" and "max". */
static int check_guard(rkd_call *c, const json_t *g)
{
#ifdef RKD_GUARD
    const json_t *url = json_object_get(g, "url"), *metric = json_object_get(g, "metric");
    const char *u = json_string_value(url);
    size_t fields = 1 + (metric != NULL) + (json_object_get(g, "max") != NULL);
    if (!json_is_object(g) || json_object_size(g) != fields)
        return bad(c, "guard",
                   "a guard is {\"url\"}, or {\"url\", \"metric\", \"max\"} for a "
                   "threshold");
    if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) ||
        strlen(u) > RK_MAX_COMMENT)
        return bad(c, "guard.url", "must be an http:// or https:// URL of at most 1024 bytes");
    if (!metric != !json_object_get(g, "max") || (metric && !json_is_string(metric)) ||
        (metric && !json_is_number(json_object_get(g, "max"))))
        return bad(c, "guard.metric",
                   "a threshold is a metric (its name, and its labels as the "
                   "answer writes them) with its max (a number), both or neither");
    return 0;
#else
    (void)g;
    return bad(c, "guard",
               "this ringkeeperd was built without libcurl, so it runs no guard; "
               "leave guard out or null");
#endif
}

/* The step options: exactly one of steps (1..RK_ROLLOUT_MAX_STEPS) and max_step_moved (0..1]. */
static int step_options(rkd_call *c, json_t *doc, create_req *q)
{
    json_t *steps = json_object_get(doc, "steps"), *f = json_object_get(doc, "max_step_moved");
    if (!steps == !f)
        return bad(c, "steps", "give steps (a count) or max_step_moved (a fraction), one of them");
    if (steps && (!json_is_integer(steps) || json_integer_value(steps) < 1 ||
                  json_integer_value(steps) > RK_ROLLOUT_MAX_STEPS))
        return bad(c, "steps", "must be an integer 1..100");
    if (f && (!json_is_number(f) || !(json_number_value(f) > 0) || json_number_value(f) > 1))
        return bad(c, "max_step_moved", "must be a fraction above 0 and at most 1, such as 0.05");
    q->opt.steps = steps ? (uint32_t)json_integer_value(steps) : 0;
    q->opt.max_step_moved = f ? json_number_value(f) : 0;
    json_object_set(q->options, steps ? "steps" : "max_step_moved", steps ? steps : f);
    return 0;
}

/* err's field as a field of the body: "target.nodes[2].weight", or "target". */
static void prefix_target(rk_error *err)
{
    size_t n = strlen(err->field), room = sizeof err->field - sizeof "target.";
    n = n < room ? n : room;
    memmove(err->field + 7, err->field, n);
    memcpy(err->field, "target.", 7);
    err->field[n ? 7 + n : 6] = '\0';
}

static int parse_create(rkd_call *c, json_t *doc, create_req *q)
{
    static const char *const fields[] = {"target", "steps", "max_step_moved",
                                         "soak_s", "guard", NULL};
    rk_error err = {0};
    if (rkd_known_fields(c, doc, fields, "target, steps, max_step_moved, soak_s and guard") != 0)
        return -1;
    const json_t *soak = json_object_get(doc, "soak_s"), *guard = json_object_get(doc, "guard");
    if (soak && (!json_is_integer(soak) || json_integer_value(soak) < 0 ||
                 json_integer_value(soak) > RKD_ROLLOUT_SOAK_MAX))
        return bad(c, "soak_s", "must be whole seconds 0..86400 to wait after each step");
    if (guard && !json_is_null(guard) && check_guard(c, guard) != 0)
        return -1;
    q->options = json_pack("{sIsO}", "soak_s", (json_int_t)(soak ? json_integer_value(soak) : 0),
                           "guard", guard ? guard : json_null());
    if (!q->options || step_options(c, doc, q) != 0)
        return q->options ? -1 : (rkd_out_of_memory(c->resp), -1);
    const json_t *target = json_object_get(doc, "target");
    if (!json_is_object(target))
        return bad(c, "target", "target is required: the topology to roll out to (a JSON object)");
    if (!(q->target = rk_topology_from_json(target, &err))) {
        prefix_target(&err);
        rkd_fail(c, err.code, &err);
        return -1;
    }
    return 0;
}

/* The policy's budget bounds every step: max_step_moved at most the budget, and with a count of
 * steps, a step over it is refused (budget_exceeded), naming the step. */
static int over_budget(rkd_call *c, const json_t *review, double budget)
{
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(review, "steps"), i, step)
    {
        double moved = json_number_value(json_object_get(step, "moved_fraction"));
        if (moved > budget + 1e-12) {
            rkd_response_error(c->resp, RKD_E_BUDGET_EXCEEDED, "steps",
                               "step %zu moves %.6g of the hash space, over the policy's "
                               "max_moved_fraction %.6g: ask for more steps, or give "
                               "max_step_moved instead",
                               i + 1, moved, budget);
            return 1;
        }
    }
    return 0;
}

/* The review weighed by the cluster's stored load profile (docs/LOAD.md, "Rollouts by load"):
 * each step's "load", or "load_error" saying why not; nothing without a profile. RK_OK, or an
 * error of the store or of memory. */
static int weigh_review(rkd_call *c, const rk_rollout *ro, const rk_ring *from, json_t *doc,
                        rk_error *err)
{
    json_t *profile = NULL;
    time_t now = time(NULL);
    rk_error why = {0};
    int rc = rkd_load_profile_get(c->app->store, c->cluster, now, &profile, err);
    int got = rc == RK_OK && profile
                  ? rk_rollout_load_json(ro, from, profile, (int64_t)now, doc, &why)
                  : RK_OK;
    json_decref(profile);
    if (got == RK_ENOMEM ||
        (got != RK_OK && json_object_set_new(doc, "load_error", json_string(why.message))))
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    return rc;
}

/* The review from the active ring `from` (version v) to the target, stored as the new rollout. */
static void review(rkd_call *c, create_req *q, const rk_ring *from, int64_t v,
                   const rkd_store_policy *pol)
{
    rk_error err = {0};
    json_t *doc = NULL, *r = NULL;
    rk_ring *to = rk_ring_build(q->target, &err);
    rk_rollout *ro = NULL;
    q->opt.from_version = v;
    q->opt.max_points_built = RKD_ROLLOUT_POINTS_BUILT;
    if (q->opt.max_step_moved > pol->max_moved_fraction)
        q->opt.max_step_moved = pol->max_moved_fraction;
    int rc = to && (ro = rk_rollout_new(from, to, &q->opt, &err)) ? RK_OK : err.code;
    if (rc == RK_OK && !(doc = rk_rollout_to_json(ro)))
        rc = rk_error_set(&err, RK_ENOMEM, NULL, "out of memory");
    rc = rc ? rc : weigh_review(c, ro, from, doc, &err);
    if (rc == RK_ETOOBIG && to) /* past the review's bounds, or no split within the budget */
        rc = RKD_STORE_EROLLOUTTOOBIG;
    if (rc == RK_OK && over_budget(c, doc, pol->max_moved_fraction))
        goto done;
    rkd_rollout_new in = {.review = doc,
                          .from = v,
                          .from_fingerprint = rk_ring_fingerprint_hex(from),
                          .options = q->options,
                          .approvals_needed = pol->approvals > 1 ? pol->approvals : 1,
                          .author = c->req->author};
    rc = rc ? rc : rkd_rollout_create(c->app->store, c->cluster, &in, &r, &err);
    answer(c, 201, rc, r, &err);
done:
    json_decref(doc);
    rk_rollout_free(ro);
    rk_ring_free(to);
}

void rkd_h_rollout_create(rkd_call *c)
{
    create_req q = {0};
    rkd_store_policy pol;
    rkd_job_versions now;
    rk_error err = {0};
    json_t *doc = rkd_body_object(c, 0);
    if (!doc || parse_create(c, doc, &q) != 0)
        goto done;
    int rc = rkd_job_versions_now(c, &now, &err);
    if (rc == RK_OK && !now.active)
        rc =
            rk_error_set(&err, RKD_STORE_ENOACTIVE, NULL,
                         "cluster %s has no active version: a rollout starts from one", c->cluster);
    rc = rc ? rc : rkd_store_get_policy(c->app->store, c->cluster, &pol, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    if (!rkd_plan_slot(c))
        goto done;
    rkd_entry *from = rkd_ring_entry(c, now.active, &rc, &err);
    if (from)
        review(c, &q, from->value, now.active, &pol);
    else
        rkd_fail(c, rc, &err);
    rkd_cache_release(c->app->rings, from);
    rkd_plan_slot_release(c);
done:
    rk_topology_free(q.target);
    json_decref(q.options);
    json_decref(doc);
}

/* What the move phase (a window's job) or the prewarm phase (a before_cutover job) of the step to
 * version `v` waits for: the job, and its worker. */
static void job_waiting(rkd_call *c, const char *phase, int64_t v, char *out, size_t n)
{
    json_t *job = NULL;
    rk_error err = {0};
    const char *state = "";
    int move = strcmp(phase, "move") == 0;
    if (rkd_job_get(c->app->store, c->cluster, &job, &err) == RK_OK)
        state = json_string_value(json_object_get(job, "state"));
    const json_t *w = json_object_get(job, "worker");
    long long id = (long long)json_integer_value(json_object_get(job, "id"));
    char run[80];
    snprintf(run, sizeof run, move ? "--finish" : "--before-cutover --to %lld", (long long)v);
    if (!job || json_integer_value(json_object_get(job, "to")) != v ||
        strcmp(json_string_value(json_object_get(job, "mode")),
               move ? "window" : "before_cutover") != 0)
        snprintf(out, n,
                 "%s: no job %s v%lld yet: run ringkeeper migrate run %s (or a worker with "
                 "--follow)",
                 phase, move ? "copies the window to" : "pre-warms", (long long)v, run);
    else if (json_is_object(w))
        snprintf(out, n, "%s: worker %s runs job %lld (%s)", phase,
                 json_string_value(json_object_get(w, "id")), id, state);
    else if (strcmp(state, "verified") == 0)
        snprintf(out, n,
                 move ? "move: job %lld is verified: ringkeeper migrate run --finish "
                        "closes the window"
                      : "prewarm: job %lld is verified: the step is activated next",
                 id);
    else
        snprintf(out, n, "%s: no worker has claimed job %lld (%s): run ringkeeper migrate run %s",
                 phase, id, state, run);
    json_decref(job);
}

/* What a driven rollout's phase waits for, for people, as "waiting": read from this server's
 * view of the fleet and from the job as they are now, never stored. */
static void add_waiting(rkd_call *c, json_t *r)
{
    const char *state = json_string_value(json_object_get(r, "state"));
    const char *phase = json_string_value(json_object_get(r, "phase"));
    int64_t n = json_integer_value(json_object_get(r, "step"));
    const json_t *step = n ? json_array_get(json_object_get(r, "steps"), (size_t)n - 1)
                           : json_object_get(r, "revert");
    int64_t v = json_integer_value(json_object_get(step, "version"));
    char text[1280];
    if (!state || !phase || (strcmp(state, "running") != 0 && strcmp(state, "reverting") != 0))
        return;
    if (strcmp(phase, "hold") == 0)
        rkd_fleet_waiting(c->app, c->cluster, v, text, sizeof text);
    else if (strcmp(phase, "move") == 0 || strcmp(phase, "prewarm") == 0)
        job_waiting(c, phase, v, text, sizeof text);
    else
        return;
    json_object_set_new(r, "waiting", json_string(text));
}

void rkd_h_rollouts(rkd_call *c)
{
    rk_error err = {0};
    json_t *r = NULL;
    int64_t rev;
    int rc = rkd_doc_read(c->app->store, RKD_DOC_ROLLOUT, c->cluster, &r, &rev, &err);
    if (r)
        add_waiting(c, r);
    answer(c, 200, rc, rc ? NULL : json_pack("{s[o*]}", "rollouts", r), &err);
}

void rkd_h_rollout(rkd_call *c)
{
    rk_error err = {0};
    json_t *r = NULL;
    int rc = rkd_rollout_get(c->app->store, c->cluster, c->version, &r, &err);
    if (r)
        add_waiting(c, r);
    answer(c, 200, rc, r, &err);
}

void rkd_h_rollout_approve(rkd_call *c)
{
    static const char *const fields[] = {"digest", NULL};
    rkd_store_policy pol;
    rk_error err = {0};
    json_t *r = NULL;
    const char *digest = NULL;
    json_t *doc = rkd_body_object(c, 0);
    if (!doc || rkd_known_fields(c, doc, fields, "digest") != 0 ||
        rkd_text_field(c, doc, "digest", &digest) != 0)
        goto done;
    if (!digest) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "digest",
                           "digest is required: the rollout's digest, as GET .../rollouts/%lld "
                           "shows it",
                           (long long)c->version);
        goto done;
    }
    int rc = rkd_store_get_policy(c->app->store, c->cluster, &pol, &err);
    rc = rc ? rc
            : rkd_rollout_approve(c->app->store, c->cluster, c->version, digest, c->req->author,
                                  pol.distinct_approver, &r, &err);
    answer(c, 200, rc, r, &err);
done:
    json_decref(doc);
}

/* ---- Running it ---- */

void rkd_h_rollout_start(rkd_call *c)
{
    rkd_job_versions now;
    rk_error err = {0};
    json_t *r = NULL;
    int rc = rkd_job_versions_now(c, &now, &err);
    if (rc == RK_OK && now.previous) /* its first step opens a window of its own */
        rc = rkd_store_check_window(c->cluster, now.active, now.previous, &err);
    rc = rc ? rc
            : rkd_rollout_start(c->app->store, c->cluster, c->version, now.active, c->req->author,
                                &r, &err);
    if (rc == RK_OK)
        rkd_driver_wake(c->app, c->cluster);
    answer(c, 200, rc, r, &err);
}

/* The topology rollout `id` started from, as a revert publishes it again (comment saying so). */
static json_t *start_topology(rkd_call *c, rk_error *err, int *rc)
{
    json_t *r = NULL, *t = NULL;
    rkd_store_version *v = NULL;
    char comment[96];
    *rc = rkd_rollout_get(c->app->store, c->cluster, c->version, &r, err);
    int64_t from = json_integer_value(json_object_get(json_object_get(r, "from"), "version"));
    *rc = *rc ? *rc : rkd_store_get(c->app->store, c->cluster, from, &v, err);
    if (*rc == RK_OK && !(t = rk_topology_to_json(v->topology)))
        *rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    snprintf(comment, sizeof comment, "revert to v%lld: rollout %lld aborted", (long long)from,
             (long long)c->version);
    if (t)
        json_object_set_new(t, "comment", json_string(comment));
    rkd_store_version_free(v);
    json_decref(r);
    return t;
}

/* pause, resume: an empty body; abort: {} or {"revert": true}. */
static void control(rkd_call *c, const char *action)
{
    static const char *const none[] = {NULL}, *const revert_only[] = {"revert", NULL};
    rk_error err = {0};
    json_t *r = NULL, *back = NULL;
    json_t *doc = rkd_body_object(c, 1);
    int abort = strcmp(action, "abort") == 0, rc = RK_OK;
    if (!doc ||
        rkd_known_fields(c, doc, abort ? revert_only : none, abort ? "revert" : "no fields") != 0)
        goto done;
    const json_t *revert = json_object_get(doc, "revert");
    if (revert && !json_is_boolean(revert)) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "revert",
                           "revert is true (go back to the start) or false (stay where it is)");
        goto done;
    }
    if (json_is_true(revert) && !(back = start_topology(c, &err, &rc))) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    rc = rkd_rollout_control(c->app->store, c->cluster, c->version, back ? "revert" : action,
                             c->req->author, back, &r, &err);
    if (rc == RK_OK && (back || strcmp(action, "resume") == 0))
        rkd_driver_wake(c->app, c->cluster);
    answer(c, 200, rc, r, &err);
done:
    json_decref(back);
    json_decref(doc);
}

void rkd_h_rollout_pause(rkd_call *c)
{
    control(c, "pause");
}

void rkd_h_rollout_resume(rkd_call *c)
{
    control(c, "resume");
}

void rkd_h_rollout_abort(rkd_call *c)
{
    control(c, "abort");
}
