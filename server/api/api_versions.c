/* api_versions.c — the version routes of docs/API.md: publish, list, get, activate, revert. */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "api_versions.h"
#include "auth.h"
#include "cache.h"
#include "docs.h"
#include "gate.h"
#include "reply.h"
#include "request.h"
#include "version_doc.h"

#define LIST_LIMIT_DEFAULT 100

/* Answers a committed version `v` with `status` and its document; 201 adds Location. */
static void answer_version(rkd_call *c, int status, const rkd_store_version *v)
{
    if (status == 201)
        snprintf(c->resp->location, sizeof c->resp->location, "/v1/clusters/%s/versions/%lld",
                 v->cluster, (long long)v->version);
    rkd_answer_json(c->resp, status, rkd_version_json(v, 1));
}

/* The publish options of the request: its author, ?activate and If-Match. 0, or -1 after
 * answering 400. Read before any expensive work, so that a bad parameter costs little. */
static int publish_opts(rkd_call *c, rkd_store_publish_opts *opt)
{
    *opt = (rkd_store_publish_opts){c->req->author, RKD_STORE_ANY, 0, 0, -1, 0, NULL, NULL};
    if (rkd_query_bool(c, "activate", &opt->activate) != 0)
        return -1;
    return rkd_if_match(c, &opt->if_match_latest);
}

/* Publishes `t` (borrowed) and answers 201, through the gate when it activates too. Shared by
 * publish and revert. */
static void publish(rkd_call *c, rk_topology *t, rkd_store_publish_opts *opt)
{
    rkd_store_version *v = NULL;
    rk_error err = {0};
    rkd_gate g = {.publish = 1};
    rk_ring *ring = NULL;
    uint64_t gen = rkd_cache_gen(c->app->rings);
    int rc;
    rkd_gate_init(&g, c);
    opt->gate = opt->activate ? &g.check : NULL;
    opt->ring = opt->activate ? &ring : NULL;
    opt->active_hint = rkd_cached_active(c->app, c->cluster); /* a guess, never trusted */
    do
        rc = rkd_store_publish(c->app->store, c->cluster, t, opt, &v, &err);
    while (rkd_gate_again(&g, &rc, &err));
    rkd_gate_done(&g);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        return;
    }
    if (ring) /* the new active version's: the next activation's gate starts from it */
        rkd_cache_release(c->app->rings, rkd_cache_put(c->app->rings, c->cluster, v->version, 0,
                                                       ring, rk_ring_memory(ring), gen));
    rkd_count(c->app, RKD_COUNT_PUBLISHES);
    answer_version(c, 201, v);
    rkd_store_version_free(v);
}

void rkd_h_publish(rkd_call *c)
{
    rkd_store_publish_opts opt;
    rk_error err = {0};
    if (publish_opts(c, &opt) != 0)
        return;
    rk_topology *t = rk_topology_parse(c->req->body ? c->req->body : "", c->req->body_len, &err);
    if (!t) {
        rkd_fail(c, err.code, &err);
        return;
    }
    publish(c, t, &opt);
    rk_topology_free(t);
}

void rkd_h_list_versions(rkd_call *c)
{
    int64_t limit = LIST_LIMIT_DEFAULT, before = 0;
    rkd_store_version_list list = {0};
    rk_error err = {0};
    if (rkd_query_int(c, "limit", 1, RKD_STORE_LIST_MAX, &limit) < 0 ||
        rkd_query_int(c, "before", 1, INT64_MAX, &before) < 0)
        return;
    int rc = rkd_store_list(c->app->store, c->cluster, (size_t)limit, before, &list, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        return;
    }
    rkd_answer_json(c->resp, 200, rkd_versions_json(&list));
    rkd_store_version_list_free(&list);
}

/* From the document cache: a big version costs its serialization once, not on every GET. */
void rkd_h_get_version(rkd_call *c)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_version_entry(c->app, c->cluster, c->version, &rc, &err);
    if (!e) {
        rkd_fail(c, rc, &err);
        return;
    }
    rkd_answer_doc(c->resp, e);
}

/* The activation body ({} or {"force": true, "reason": "..."}): *reason is the force's reason or
 * NULL, borrowed from *doc (the caller decrefs it, also on failure). 0, or -1 after answering. */
static int activation_body(rkd_call *c, const char **reason, json_t **doc)
{
    static const char *const fields[] = {"force", "reason", NULL};
    json_t *force;
    *reason = NULL;
    *doc = rkd_body_object(c, 1);
    if (!*doc || rkd_known_fields(c, *doc, fields, "force and reason") != 0 ||
        rkd_text_field(c, *doc, "reason", reason) != 0)
        return -1;
    force = json_object_get(*doc, "force");
    if (force && !json_is_boolean(force)) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "force", "force must be true or false");
        return -1;
    }
    if (json_is_true(force) && (!*reason || !(*reason)[0])) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "reason",
                           "a forced activation needs a reason: it is recorded in the events");
        return -1;
    }
    if (json_is_true(force) && (c->req->lacks & RKD_ROLE_ADMIN)) {
        rkd_response_error(c->resp, RKD_E_ADMIN_REQUIRED, "force",
                           "a forced activation goes past the policy's budget: it needs a token "
                           "with the admin role, and \"%s\" has none",
                           c->req->author ? c->req->author : "");
        return -1;
    }
    *reason = json_is_true(force) ? *reason : NULL;
    return 0;
}

/* Through the gate, which the store's transaction runs (the rollout, the budget against the
 * plan from the version active at the commit), and the approvals, the store's own. */
void rkd_h_activate(rkd_call *c)
{
    rkd_store_version *v = NULL;
    rk_error err = {0};
    json_t *body = NULL;
    rkd_gate g = {.to_version = c->version};
    rkd_store_activation a = {RKD_STORE_ANY, c->req->author, -1, NULL, NULL, 0, &g.check};
    int rc;
    rkd_gate_init(&g, c);
    if (rkd_if_match(c, &a.if_match_active) != 0 || activation_body(c, &g.reason, &body) != 0)
        goto done;
    a.active_hint = rkd_cached_active(c->app, c->cluster); /* read with, never trusted */
    a.reason = g.reason;
    do
        rc = rkd_store_activate(c->app->store, c->cluster, c->version, &a, &v, &err);
    while (rkd_gate_again(&g, &rc, &err));
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    c->woken = 1; /* the store's watch did, at the commit */
    answer_version(c, 200, v);
    rkd_store_version_free(v);
done:
    rkd_gate_done(&g);
    json_decref(body);
}

/* Room for "revert to v<N>: " before a comment of RK_MAX_COMMENT bytes. */
#define REVERT_COMMENT_CAP (RK_MAX_COMMENT + 40)

/* "revert to v<N>" or "revert to v<N>: <comment>", cut to RK_MAX_COMMENT bytes on a UTF-8
 * character boundary (the comment must stay valid UTF-8). */
static void revert_comment(char out[REVERT_COMMENT_CAP], int64_t version, const char *original)
{
    int n = snprintf(out, REVERT_COMMENT_CAP, "revert to v%lld%s%s", (long long)version,
                     original ? ": " : "", original ? original : "");
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len <= RK_MAX_COMMENT)
        return;
    len = RK_MAX_COMMENT; /* out[len] is the first byte cut off: back up to a character start */
    while (len > 0 && ((unsigned char)out[len] & 0xC0) == 0x80)
        len--;
    out[len] = '\0';
}

void rkd_h_revert(rkd_call *c)
{
    rkd_store_publish_opts opt;
    rkd_store_version *v = NULL;
    rk_topology *copy = NULL;
    rk_error err = {0};
    char comment[REVERT_COMMENT_CAP];
    if (publish_opts(c, &opt) != 0)
        return;
    int rc = rkd_store_get(c->app->store, c->cluster, c->version, &v, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        goto done;
    }
    revert_comment(comment, v->version, v->comment);
    opt.revert_of = v->version;
    copy = rk_topology_with_comment(v->topology, comment, &err);
    if (!copy) {
        rkd_fail(c, err.code, &err);
        goto done;
    }
    publish(c, copy, &opt);
done:
    rk_topology_free(copy);
    rkd_store_version_free(v);
}
