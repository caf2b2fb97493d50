/* reply.c — how every handler of the API answers (reply.h): response bodies, shared or not, JSON,
 * error bodies from the one table of api_errors.h, store and library failures mapped to them, and
 * the answers every plan may end in: too large, or no slot free. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "docs.h"
#include "reply.h"
#include "rings.h"
#include "version_doc.h"

/* ---- Responses ---- */

/* Frees the body, or drops the hold on its owner when it is shared. */
static void drop_body(rkd_response *resp)
{
    if (resp->body_owner)
        resp->body_release(resp->body_owner);
    else
        free(resp->body);
    resp->body = NULL;
    resp->body_owner = NULL;
    resp->body_release = NULL;
}

void rkd_response_clear(rkd_response *resp)
{
    drop_body(resp);
    memset(resp, 0, sizeof *resp);
}

void rkd_set_body(rkd_response *resp, int status, const char *ctype, char *body, size_t len)
{
    drop_body(resp);
    resp->status = status;
    resp->content_type = ctype;
    resp->body = body;
    resp->body_len = len;
}

void rkd_set_shared_body(rkd_response *resp, int status, const char *ctype, const char *body,
                         size_t len, void (*release)(void *owner), void *owner)
{
    rkd_set_body(resp, status, ctype, (char *)body, len); /* read-only from here on: see api.h */
    resp->body_owner = owner;
    resp->body_release = release;
}

/* Last resort when even an error body cannot be built. */
void rkd_out_of_memory(rkd_response *resp)
{
    static const char msg[] = "{\"error\":{\"code\":\"internal\",\"message\":\"the server is out "
                              "of memory; retry later\"}}";
    char *body = strdup(msg);
    rkd_set_body(resp, 500, RKD_CT_JSON, body, body ? strlen(body) : 0);
}

static const struct {
    int status;
    const char *name;
} errors[] = {
#define RKD_ERROR_ROW_(name, status, code) {status, code},
    RKD_API_ERRORS(RKD_ERROR_ROW_)
#undef RKD_ERROR_ROW_
};

int rkd_error_status(rkd_error_code e)
{
    return (unsigned)e < sizeof errors / sizeof errors[0] ? errors[e].status : 500;
}

const char *rkd_error_name(rkd_error_code e)
{
    return (unsigned)e < sizeof errors / sizeof errors[0] ? errors[e].name : "internal";
}

void rkd_response_error(rkd_response *resp, rkd_error_code e, const char *field, const char *fmt,
                        ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    field = field && field[0] ? field : NULL;
    json_t *doc = json_pack("{s:{s:s, s:s, s:s*}}", "error", "code", rkd_error_name(e), "message",
                            message, "field", field);
    rkd_answer_json(resp, rkd_error_status(e), doc);
}

void rkd_answer_json(rkd_response *resp, int status, json_t *doc)
{
    char *body = NULL;
    size_t len = 0;
    if (rkd_json_dump(doc, &body, &len) != RK_OK) {
        rkd_out_of_memory(resp);
        return;
    }
    rkd_set_body(resp, status, RKD_CT_JSON, body, len);
}

void rkd_answer_doc(rkd_response *resp, rkd_entry *e)
{
    const rkd_active_doc *doc = e->value;
    rkd_set_shared_body(resp, 200, RKD_CT_JSON, doc->body, doc->len, rkd_entry_release, e);
}

/* How a failure code from the store or the library becomes an HTTP error. */
typedef struct failure {
    int rc;              /* RK_* or RKD_STORE_* */
    rkd_error_code code; /* its status and machine code (api_errors.h) */
    int db_error;        /* counts as RKD_COUNT_DB_ERRORS */
} failure;

static const failure failures[] = {
    {RK_EJSON, RKD_E_MALFORMED_JSON, 0},
    {RK_ETOPOLOGY, RKD_E_INVALID_TOPOLOGY, 0},
    {RK_ETOOBIG, RKD_E_TOO_MANY_POINTS, 0},
    {RK_EHASHMISMATCH, RKD_E_HASH_MISMATCH, 0},
    {RKD_STORE_ENOCLUSTER, RKD_E_UNKNOWN_CLUSTER, 0},
    {RKD_STORE_ENOVERSION, RKD_E_UNKNOWN_VERSION, 0},
    {RKD_STORE_ENOACTIVE, RKD_E_NO_ACTIVE_VERSION, 0},
    {RKD_STORE_ECONFLICT, RKD_E_CONFLICT, 0},
    {RKD_STORE_EAPPROVAL, RKD_E_APPROVAL_REQUIRED, 0},
    {RKD_STORE_EPLANCHANGED, RKD_E_PLAN_CHANGED, 0},
    {RKD_STORE_ESELFAPPROVAL, RKD_E_SELF_APPROVAL, 0},
    {RKD_STORE_EWINDOWOPEN, RKD_E_MIGRATION_OPEN, 0},
    {RKD_STORE_ENOWINDOW, RKD_E_NO_MIGRATION_WINDOW, 0},
    {RKD_STORE_ENOJOB, RKD_E_NO_MIGRATION, 0},
    {RKD_STORE_EJOBSTATE, RKD_E_JOB_STATE, 0},
    {RKD_STORE_ELEASED, RKD_E_LEASED, 0},
    {RKD_STORE_ENOTVERIFIED, RKD_E_NOT_VERIFIED, 0},
    {RKD_STORE_EVERSIONCHANGED, RKD_E_VERSION_CHANGED, 0},
    {RKD_STORE_ENODATA, RKD_E_DATA_UNKNOWN, 0},
    {RKD_STORE_EJOBTOOBIG, RKD_E_JOB_TOO_LARGE, 0},
    {RKD_STORE_ENOROLLOUT, RKD_E_NO_ROLLOUT, 0},
    {RKD_STORE_EROLLOUTSTATE, RKD_E_ROLLOUT_STATE, 0},
    {RKD_STORE_EROLLOUTTOOBIG, RKD_E_ROLLOUT_TOO_LARGE, 0},
    {RKD_STORE_EROLLOUTRUNNING, RKD_E_ROLLOUT_RUNNING, 0},
    {RKD_STORE_EBUDGET, RKD_E_BUDGET_EXCEEDED, 0},
    {RKD_STORE_ETOOMANYCLUSTERS, RKD_E_TOO_MANY_CLUSTERS, 0},
    {RK_EINVAL, RKD_E_INVALID_BODY, 0},
    {RKD_STORE_EPRECONDITION, RKD_E_PRECONDITION_FAILED, 0},
    {RKD_STORE_EUNAVAILABLE, RKD_E_UNAVAILABLE, 1},
    {RK_EIO, RKD_E_UNAVAILABLE, 1},
    {RKD_STORE_ENOTRK, RKD_E_INTERNAL, 1},
    {RKD_STORE_ETOONEW, RKD_E_INTERNAL, 1},
    {RKD_STORE_EMIGRATION, RKD_E_INTERNAL, 1},
};

/* Answers the failure `rc` with its message from `err` (may be NULL for out of memory). */
void rkd_fail(rkd_call *c, int rc, const rk_error *err)
{
    const failure *f = NULL;
    for (size_t i = 0; i < sizeof failures / sizeof failures[0]; i++) {
        if (failures[i].rc == rc)
            f = &failures[i];
    }
    if (f && f->db_error)
        rkd_count(c->app, RKD_COUNT_DB_ERRORS);
    if (!f || !err || !err->message[0]) {
        rkd_response_error(c->resp, f ? f->code : RKD_E_INTERNAL, NULL,
                           "the server failed (%s); retry, and report it if it persists",
                           rkd_store_strerror(rc));
        return;
    }
    rkd_response_error(c->resp, f->code, err->field, "%s", err->message);
}

/* ---- Plans: their refusals, and the slots they take (rings.h) ---- */

#define PLAN_RETRY_AFTER_S                                                                         \
    2 /* a plan takes up to about a second at the caps: a retry then may pass */

void rkd_fail_rows(rkd_call *c, const char *what, const char *fewer)
{
    rkd_response_error(c->resp, RKD_E_PLAN_TOO_LARGE, NULL,
                       "%s, over this server's limit of %zu (ringkeeperd --max-plan-rows); ask "
                       "for less (%s) or compute it offline: ringkeeper plan --from-file A.json "
                       "--to-file B.json",
                       what, c->app->plan.max_rows, fewer);
}

/* Answers a failed plan: over --max-plan-arcs or with more nodes than rows, each with the way
 * out (1: the caller may remember it), anything else as it is (0). */
int rkd_fail_plan(rkd_call *c, int rc, const rk_error *err)
{
    if (rc == RK_ETOOBIG && strcmp(err->field, "nodes") == 0) {
        rkd_fail_rows(c, err->message, "its nodes alone are as many: nodes=false, format=svg");
        return 1;
    }
    if (rc != RK_ETOOBIG || strcmp(err->field, "arcs") != 0) {
        rkd_fail(c, rc, err);
        return 0;
    }
    rkd_response_error(c->resp, RKD_E_PLAN_TOO_LARGE, NULL,
                       "%s of this server (ringkeeperd --max-plan-arcs); compute it offline: "
                       "ringkeeper plan --from-file A.json --to-file B.json",
                       err->message);
    return 1;
}

int rkd_plan_slot(rkd_call *c)
{
    if (rkd_plan_slot_take(c->app, c->req->addr))
        return 1;
    unsigned running = (unsigned)rkd_budget_used(c->app->plan_slots);
    if (running < c->app->plan.concurrency)
        rkd_response_error(c->resp, RKD_E_UNAVAILABLE, NULL,
                           "this client address is computing its share of plans or ring builds: "
                           "%u of this server's %u (ringkeeperd --plan-concurrency, all but one "
                           "per client address); retry in a few seconds",
                           rkd_plan_share(c->app->plan.concurrency), c->app->plan.concurrency);
    else
        rkd_response_error(c->resp, RKD_E_UNAVAILABLE, NULL,
                           "%u plans or ring builds are being computed, this server's limit "
                           "(ringkeeperd --plan-concurrency); retry in a few seconds",
                           running);
    c->resp->retry_after = PLAN_RETRY_AFTER_S;
    return 0;
}

void rkd_plan_slot_release(rkd_call *c)
{
    rkd_plan_slot_give(c->app, c->req->addr);
}
