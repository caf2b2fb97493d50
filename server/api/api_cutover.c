/* api_cutover.c — The cutover routes (docs/API.md): the policy, approvals, the audit of events, and
 * the finish of a migration window. The gate that activations pass is gate.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_cutover.h"
#include "auth.h"
#include "docs.h"
#include "migration_job.h"
#include "reply.h"
#include "request.h"
#include "version_doc.h"

#define EVENTS_LIMIT_DEFAULT 100

/* ---- Policy ---- */

static json_t *policy_json(const rkd_store_policy *p)
{
    json_t *balance = p->max_balance_after > 0 ? json_real(p->max_balance_after) : json_null();
    json_t *bytes = p->max_moved_bytes > 0 ? json_integer(p->max_moved_bytes) : json_null();
    return json_pack("{s:f, s:o, s:I, s:b, s:b, s:b, s:o}", "max_moved_fraction",
                     p->max_moved_fraction, "max_balance_after", balance, "approvals",
                     (json_int_t)p->approvals, "distinct_approver", p->distinct_approver,
                     "migration_window", p->migration_window, "prewarm", p->prewarm,
                     "max_moved_bytes", bytes);
}

void rkd_h_get_policy(rkd_call *c)
{
    rkd_store_policy p;
    rk_error err = {0};
    int rc = rkd_store_get_policy(c->app->store, c->cluster, &p, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        return;
    }
    rkd_answer_json(c->resp, 200, policy_json(&p));
}

/* Field `name` as a number (*out unchanged when absent; 0 for null where null_ok): 0, or -1
 * after answering 400 with what is allowed. */
static int number_field(rkd_call *c, json_t *doc, const char *name, int null_ok, double *out,
                        const char *allowed)
{
    json_t *v = json_object_get(doc, name);
    if (!v)
        return 0;
    if (json_is_number(v) || (null_ok && json_is_null(v))) {
        *out = json_is_null(v) ? 0 : json_number_value(v);
        return 0;
    }
    rkd_response_error(c->resp, RKD_E_INVALID_BODY, name, "%s must be %s", name, allowed);
    return -1;
}

static int bool_field(rkd_call *c, json_t *doc, const char *name, int *out)
{
    json_t *v = json_object_get(doc, name);
    if (!v || json_is_boolean(v)) {
        *out = v ? json_is_true(v) : *out;
        return 0;
    }
    rkd_response_error(c->resp, RKD_E_INVALID_BODY, name, "%s must be true or false", name);
    return -1;
}

/* The policy of `doc` over the current one `p`: fields left out keep their values. 0, or -1
 * after answering 400. */
static int parse_policy(rkd_call *c, json_t *doc, rkd_store_policy *p)
{
    static const char *const fields[] = {
        "max_moved_fraction", "max_balance_after", "approvals",       "distinct_approver",
        "migration_window",   "prewarm",           "max_moved_bytes", NULL};
    double approvals = (double)p->approvals;
    json_t *a = json_object_get(doc, "approvals");
    if (rkd_known_fields(c, doc, fields,
                         "max_moved_fraction, max_balance_after, approvals, distinct_approver, "
                         "migration_window, prewarm and max_moved_bytes") != 0 ||
        number_field(c, doc, "max_moved_fraction", 0, &p->max_moved_fraction,
                     "a number from 0 to 1") != 0 ||
        number_field(c, doc, "max_balance_after", 1, &p->max_balance_after,
                     "null or a number of at least 1") != 0 ||
        number_field(c, doc, "approvals", 0, &approvals, "a whole number from 0 to 100") != 0 ||
        bool_field(c, doc, "distinct_approver", &p->distinct_approver) != 0 ||
        bool_field(c, doc, "migration_window", &p->migration_window) != 0 ||
        bool_field(c, doc, "prewarm", &p->prewarm) != 0)
        return -1;
    if (a && !json_is_integer(a)) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "approvals",
                           "approvals must be a whole number from 0 to %d",
                           RKD_STORE_APPROVALS_MAX);
        return -1;
    }
    p->approvals = a ? json_integer_value(a) : p->approvals;
    json_t *b = json_object_get(doc, "max_moved_bytes");
    if (b && !json_is_null(b) && !(json_is_integer(b) && json_integer_value(b) > 0)) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "max_moved_bytes",
                           "max_moved_bytes must be null (no limit) or a whole number of bytes of "
                           "at least 1, as the cluster's load profile counts them");
        return -1;
    }
    p->max_moved_bytes = b ? json_integer_value(b) : p->max_moved_bytes; /* null reads as 0 */
    return 0;
}

/* The first of `p`'s guards that is looser than in `old` (its field), or NULL when none is: a
 * higher max_moved_fraction, max_balance_after or max_moved_bytes (0 is none), fewer approvals,
 * no distinct approver, no migration window or no pre-warm where there was one. */
static const char *loosened(const rkd_store_policy *old, const rkd_store_policy *p)
{
    if (p->max_moved_fraction > old->max_moved_fraction)
        return "max_moved_fraction";
    if (old->max_balance_after > 0 &&
        (p->max_balance_after == 0 || p->max_balance_after > old->max_balance_after))
        return "max_balance_after";
    if (p->approvals < old->approvals)
        return "approvals";
    if (old->distinct_approver && !p->distinct_approver)
        return "distinct_approver";
    if (old->migration_window && !p->migration_window)
        return "migration_window";
    if (old->max_moved_bytes > 0 &&
        (p->max_moved_bytes == 0 || p->max_moved_bytes > old->max_moved_bytes))
        return "max_moved_bytes";
    return old->prewarm && !p->prewarm ? "prewarm" : NULL;
}

/* 0, or -1 after answering 403: a guard loosened by a token without the admin role, which would
 * let the author of a version approve away the approvals it waits for. */
static int may_set(rkd_call *c, const rkd_store_policy *old, const rkd_store_policy *p)
{
    const char *field = loosened(old, p);
    if (!field || !(c->req->lacks & RKD_ROLE_ADMIN))
        return 0;
    rkd_response_error(c->resp, RKD_E_ADMIN_REQUIRED, field,
                       "this change loosens the policy's %s: it needs a token with the admin role, "
                       "and \"%s\" has none (a change that only tightens needs publish or approve)",
                       field, c->req->author ? c->req->author : "");
    return -1;
}

void rkd_h_put_policy(rkd_call *c)
{
    rkd_store_policy p, old;
    rk_error err = {0};
    char *detail = NULL;
    json_t *doc = rkd_body_object(c, 0);
    if (!doc)
        return;
    int rc = rkd_store_get_policy(c->app->store, c->cluster, &p, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    old = p;
    if (parse_policy(c, doc, &p) != 0 || may_set(c, &old, &p) != 0)
        goto done;
    json_t *set = policy_json(&p);
    detail = set ? rk_json_dumps(set, RKD_JSON_FLAGS) : NULL;
    json_decref(set);
    rc = detail ? rkd_store_put_policy(c->app->store, c->cluster, &p, c->req->author, detail, &err)
                : RK_ENOMEM;
    if (rc != RK_OK)
        rkd_fail(c, rc, &err);
    else
        rkd_answer_json(c->resp, 200, policy_json(&p));
done:
    free(detail);
    json_decref(doc);
}

/* ---- Approvals ---- */

/* {"digest", "comment", "dry_run"}: with dry_run true every check of an approval runs and nothing
 * is recorded, so a tool can say "you may not approve this" before showing the plan. */
void rkd_h_approve(rkd_call *c)
{
    static const char *const fields[] = {"digest", "comment", "dry_run", NULL};
    rk_error err = {0};
    const char *digest = NULL, *comment = NULL;
    int dry_run = 0;
    json_t *doc = rkd_body_object(c, 0);
    if (!doc || rkd_known_fields(c, doc, fields, "digest, comment and dry_run") != 0 ||
        rkd_text_field(c, doc, "digest", &digest) != 0 ||
        rkd_text_field(c, doc, "comment", &comment) != 0 || bool_field(c, doc, "dry_run", &dry_run))
        goto done;
    if (!digest) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "digest",
                           "digest is required: the plan's digest, as GET .../plan shows it");
        goto done;
    }
    rkd_store_approval_req a = {c->version, digest,  c->req->author,
                                comment,    dry_run, rkd_cached_active(c->app, c->cluster)};
    int rc = rkd_store_approve(c->app->store, c->cluster, &a, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    c->woken = dry_run; /* a dry run records nothing: no watcher need look */
    rkd_answer_json(c->resp, 200,
                    json_pack("{s:s, s:I, s:s, s:s, s:s*, s:b}", "cluster", c->cluster, "version",
                              (json_int_t)c->version, "digest", digest, "approver",
                              c->req->author ? c->req->author : "", "comment", comment, "dry_run",
                              dry_run));
done:
    json_decref(doc);
}

/* ---- Events ---- */

static json_t *event_json(const rkd_store_event *e)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:s*, s:s*, s:s*}", "event", (json_int_t)e->event,
                          "kind", e->kind, "at", e->at, "author", e->author, "digest",
                          e->digest[0] ? e->digest : NULL, "detail", e->detail);
    if (!o)
        return NULL;
    json_object_set_new(o, "version", e->version ? json_integer(e->version) : json_null());
    json_object_set_new(o, "from_version",
                        e->from_version ? json_integer(e->from_version) : json_null());
    json_object_set_new(o, "moved_fraction",
                        e->moved_fraction >= 0 ? json_real(e->moved_fraction) : json_null());
    return o;
}

void rkd_h_events(rkd_call *c)
{
    int64_t limit = EVENTS_LIMIT_DEFAULT, before = 0;
    rkd_store_event_list list = {0};
    rk_error err = {0};
    if (rkd_query_int(c, "limit", 1, RKD_STORE_LIST_MAX, &limit) < 0 ||
        rkd_query_int(c, "before", 1, INT64_MAX, &before) < 0)
        return;
    int rc = rkd_store_list_events(c->app->store, c->cluster, (size_t)limit, before, &list, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; items && i < list.count; i++)
        json_array_append_new(items, event_json(&list.items[i]));
    json_t *next = list.next_before ? json_integer(list.next_before) : json_null();
    rkd_answer_json(c->resp, 200, json_pack("{s:o, s:o}", "events", items, "next_before", next));
    rkd_store_event_list_free(&list);
}

/* ---- The migration window ---- */

/* The finish's body: a comment, or a force past an unverified job with its reason (admin). 0, or
 * -1 after answering. */
static int finish_body(rkd_call *c, json_t *doc, const char **comment, int *force)
{
    static const char *const fields[] = {"comment", "force", "reason", NULL};
    const char *reason = NULL;
    json_t *f = json_object_get(doc, "force");
    if (rkd_known_fields(c, doc, fields, "comment, force and reason (or send no body)") != 0 ||
        rkd_text_field(c, doc, "comment", comment) != 0 ||
        rkd_text_field(c, doc, "reason", &reason) != 0)
        return -1;
    *force = json_is_true(f);
    if (f && !json_is_boolean(f))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "force", "force must be true or false");
    else if (*force && (!reason || !reason[0]))
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "reason",
                           "finishing past an unverified migration job needs a reason: it is "
                           "recorded in the events");
    else if (*force && (c->req->lacks & RKD_ROLE_ADMIN))
        rkd_response_error(c->resp, RKD_E_ADMIN_REQUIRED, "force",
                           "finishing past an unverified migration job needs a token with the "
                           "admin role");
    else {
        *comment = *force ? reason : *comment;
        return 0;
    }
    return -1;
}

void rkd_h_finish(rkd_call *c)
{
    rkd_store_version *v = NULL;
    rk_error err = {0};
    const char *comment = NULL;
    int force = 0, for_job = 0;
    rkd_job_versions now;
    json_t *doc = rkd_body_object(c, 1);
    if (!doc || finish_body(c, doc, &comment, &force) != 0)
        goto done;
    int rc = rkd_job_versions_now(c, &now, &err);
    rc = rc ? rc : rkd_job_check_finish(c->app->store, c->cluster, &now, &for_job, &err);
    rc = rc == RKD_STORE_ENOTVERIFIED && force ? RK_OK : rc;
    rc = rc ? rc
            : rkd_store_finish_migration(c->app->store, c->cluster, c->req->author, comment, &v,
                                         &err);
    rk_error ignored; /* the window is closed either way; a job left "verified" says no less */
    if (rc == RK_OK && for_job)
        (void)rkd_job_window_finished(c->app->store, c->cluster, now.previous, now.active,
                                      &ignored);
    rkd_entry *e =
        rc == RK_OK ? rkd_on_window_closed(c->app, c->cluster, v->version, &rc, &err) : NULL;
    if (!e) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    c->woken = 1;
    rkd_format_etag(c->resp->etag, v->version, 0, rkd_store_id(c->app->store), v->fingerprint);
    rkd_answer_doc(c->resp, e); /* the ring document, now with "previous": null */
done:
    rkd_store_version_free(v);
    json_decref(doc);
}
