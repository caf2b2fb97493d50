/* api.c — the router of docs/API.md's API: the route table, path matching and dispatch to the
 * handlers, a file per resource (api_admin.c, api_versions.c, api_ring.c, api_plan.c,
 * api_picture.c, api_cutover.c, api_clients.c, api_migration.c, api_rollouts.c, api_changes.c,
 * api_load.c, api_ui.c), each declared in its own header. A new route is a line of `routes` and a
 * handler of the api_<resource>.c it belongs to, declared in api_<resource>.h. Handlers read and
 * answer with request.h and reply.h, and call only down, into the services of server/app/. Request
 * in, response out, no sockets.
 *
 * Error codes (the "code" of every error body; "field" is set where one thing is to blame):
 *
 * | status | code                | when                                                          |
 * |--------|---------------------|---------------------------------------------------------------|
 * | 400    | malformed_json      | the request body is not JSON                                  |
 * | 400    | invalid_topology    | a topology rule is broken; field: its JSON path               |
 * | 400    | invalid_parameter   | a query parameter is out of range; field: its name            |
 * | 400    | invalid_header      | If-Match is not "v<N>"; field: the header's name              |
 * | 400    | invalid_cluster     | the cluster name in the path breaks the rule of docs/RING.md |
 * | 400    | invalid_version     | the version in the path is not a positive integer             |
 * | 400    | invalid_path        | (http.c) a control character or malformed %-escape in the path|
 * | 400    | invalid_body        | a field of a policy, approval, activation or finish body      |
 * | 401    | unauthorized        | (http.c) no usable credentials                                |
 * | 403    | forbidden           | (http.c) a token that is not configured                       |
 * | 403    | self_approval       | the policy wants a distinct approver and this is the author   |
 * | 403    | role_required       | the token has none of the roles the route needs               |
 * | 403    | admin_required      | loosening a policy's guard, or forcing past it, needs admin   |
 * | 403    | cross_origin        | (http.c) a browser's write from another origin (--allow-origin)|
 * | 404    | not_found           | no such path                                                  |
 * | 404    | unknown_cluster     | no cluster of that name                                       |
 * | 404    | unknown_version     | the cluster has no such version                               |
 * | 404    | no_active_version   | the cluster has no active version yet (ring, default plan)    |
 * | 404    | no_migration        | the cluster has no migration job yet                          |
 * | 404    | no_rollout          | the cluster has no rollout of that id (only its latest is kept)|
 * | 404    | no_load_profile     | the cluster has no load profile stored (ringkeeper measure)   |
 * | 405    | method_not_allowed  | known path, other method; the Allow header lists the methods  |
 * | 409    | conflict            | activation not newer than the active one, or raced three times |
 * | 409    | approval_required   | the policy wants more approvals of the plan from the active v |
 * | 409    | plan_changed        | an approval's digest is not the plan from the active version  |
 * | 409    | migration_open      | an activation while a migration window is open: finish it     |
 * | 409    | no_migration_window | finishing a migration, or starting a window job, with no window|
 * | 409    | job_state           | the job's state does not allow it (one running; not paused...) |
 * | 409    | leased              | another worker holds the job's lease, or this one lost it     |
 * | 409    | not_verified        | a window's job not verified at its finish; no pre-warm (policy)|
 * | 409    | version_changed     | the cluster's versions are no longer the job's: it failed     |
 * | 409    | rollout_state       | the rollout's state does not allow it (approved, running ...) |
 * | 409    | rollout_running     | an activation by hand while a rollout runs or is paused       |
 * | 412    | precondition_failed | If-Match names another version than the latest / active one   |
 * | 413    | body_too_large      | (http.c) request body over the limit                          |
 * | 415    | unsupported_media_type | (http.c) a write's body is not application/json         |
 * | 421    | unknown_host        | (http.c) a browser's Host: not an IP, localhost, --public-name|
 * | 422    | too_many_points     | the topology's total points are over the cap                  |
 * | 422    | hash_mismatch       | a plan between versions with different hash algorithms        |
 * | 422    | plan_too_large      | a plan over --max-plan-arcs or --max-plan-rows                |
 * | 422    | budget_exceeded     | an activation moves more, balances worse, or changes the hash |
 * | 422    | data_unknown        | a job for a topology without "data" (memcached or redis)      |
 * | 422    | job_too_large       | a job of more sources over its steps than the server keeps    |
 * | 422    | rollout_too_large   | a rollout review over its work or document bound, or no split  |
 * | 422    | too_many_clusters   | a publish creating a cluster past --max-clusters              |
 * | 500    | internal            | out of memory, a damaged database, a bug                      |
 * | 503    | unavailable         | the database does not answer now, or too many plans at once   |
 * | 503    | busy                | (http.c) bodies or long polls in flight are at their bound    |
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_admin.h"
#include "api_changes.h"
#include "api_clients.h"
#include "api_cutover.h"
#include "api_load.h"
#include "api_migration.h"
#include "api_picture.h"
#include "api_plan.h"
#include "api_ring.h"
#include "api_rollouts.h"
#include "api_ui.h"
#include "api_versions.h"
#include "auth.h"
#include "changes.h"
#include "request.h"

#define MAX_SEGMENTS 6 /* path segments of the longest route */

/* ---- Routing ---- */

typedef struct route {
    const char *method;           /* "GET" (HEAD is answered as GET), "POST" or "PUT" */
    const char *pattern;          /* segments; "{c}" a cluster name, "{v}" a version, "{r}" a
                                     rollout's id */
    const char *allow;            /* every method of this pattern, for 405 */
    void (*handler)(rkd_call *c); /* answers */
    unsigned roles;               /* RKD_ROLE_* of which a token needs one; 0: anyone (reads) */
} route;

#define PUB   RKD_ROLE_PUBLISH
#define APPR  RKD_ROLE_APPROVE
#define ANY_W (RKD_ROLE_PUBLISH | RKD_ROLE_APPROVE | RKD_ROLE_ADMIN) /* loosening needs admin */
#define READ  0                                                      /* anyone, a token or not */

static const route routes[] = {
    {"GET", "/healthz", "GET", rkd_h_healthz, READ},
    {"GET", "/readyz", "GET", rkd_h_readyz, READ},
    {"GET", "/metrics", "GET", rkd_h_metrics, READ},
    {"GET", "/v1/clusters", "GET", rkd_h_clusters, READ},
    {"POST", "/v1/clusters/{c}/versions", "GET, POST", rkd_h_publish, PUB},
    {"GET", "/v1/clusters/{c}/versions", "GET, POST", rkd_h_list_versions, READ},
    {"GET", "/v1/clusters/{c}/versions/{v}", "GET", rkd_h_get_version, READ},
    {"GET", "/v1/clusters/{c}/versions/{v}/picture", "GET", rkd_h_picture, READ},
    {"GET", "/v1/clusters/{c}/versions/{v}/arc", "GET", rkd_h_arc, READ},
    {"POST", "/v1/clusters/{c}/versions/{v}/activate", "POST", rkd_h_activate, PUB},
    {"POST", "/v1/clusters/{c}/versions/{v}/revert", "POST", rkd_h_revert, PUB},
    {"GET", "/v1/clusters/{c}/ring", "GET", rkd_h_ring, READ},
    {"GET", "/v1/clusters/{c}/plan", "GET", rkd_h_plan, READ},
    {"GET", "/", "GET", rkd_h_ui_redirect, READ},
    {"GET", "/ui", "GET", rkd_h_ui_redirect, READ},
    {"GET", "/ui/{file}", "GET", rkd_h_ui_file, READ},
    {"GET", "/v1/clusters/{c}/policy", "GET, PUT", rkd_h_get_policy, READ},
    {"PUT", "/v1/clusters/{c}/policy", "GET, PUT", rkd_h_put_policy, ANY_W},
    {"POST", "/v1/clusters/{c}/versions/{v}/approve", "POST", rkd_h_approve, APPR},
    {"GET", "/v1/clusters/{c}/events", "GET", rkd_h_events, READ},
    {"POST", "/v1/clusters/{c}/migration/finish", "POST", rkd_h_finish, PUB},
    {"GET", "/v1/clusters/{c}/migration", "GET, POST", rkd_h_migration, READ},
    {"POST", "/v1/clusters/{c}/migration", "GET, POST", rkd_h_migration_start, PUB},
    {"POST", "/v1/clusters/{c}/migration/claim", "POST", rkd_h_migration_claim, PUB},
    {"POST", "/v1/clusters/{c}/migration/progress", "POST", rkd_h_migration_progress, PUB},
    {"PUT", "/v1/clusters/{c}/migration/throttle", "PUT", rkd_h_migration_throttle, PUB},
    {"POST", "/v1/clusters/{c}/migration/pause", "POST", rkd_h_migration_pause, PUB},
    {"POST", "/v1/clusters/{c}/migration/resume", "POST", rkd_h_migration_resume, PUB},
    {"POST", "/v1/clusters/{c}/migration/cancel", "POST", rkd_h_migration_cancel, PUB},
    {"GET", "/v1/clusters/{c}/clients", "GET", rkd_h_clients, READ},
    {"GET", "/v1/clusters/{c}/changes", "GET", rkd_h_changes, READ},
    {"POST", "/v1/clusters/{c}/rollouts", "GET, POST", rkd_h_rollout_create, PUB},
    {"GET", "/v1/clusters/{c}/rollouts", "GET, POST", rkd_h_rollouts, READ},
    {"GET", "/v1/clusters/{c}/rollouts/{r}", "GET", rkd_h_rollout, READ},
    {"POST", "/v1/clusters/{c}/rollouts/{r}/approve", "POST", rkd_h_rollout_approve, APPR},
    {"POST", "/v1/clusters/{c}/rollouts/{r}/start", "POST", rkd_h_rollout_start, PUB},
    {"POST", "/v1/clusters/{c}/rollouts/{r}/pause", "POST", rkd_h_rollout_pause, PUB},
    {"POST", "/v1/clusters/{c}/rollouts/{r}/resume", "POST", rkd_h_rollout_resume, PUB},
    {"POST", "/v1/clusters/{c}/rollouts/{r}/abort", "POST", rkd_h_rollout_abort, PUB},
    {"GET", "/v1/clusters/{c}/load", "GET, PUT", rkd_h_get_load, READ},
    {"PUT", "/v1/clusters/{c}/load", "GET, PUT", rkd_h_put_load, PUB},
};

/* Path segments: a pointer to each and its length. */
typedef struct segments {
    const char *at[MAX_SEGMENTS + 1];
    size_t len[MAX_SEGMENTS + 1];
    size_t n; /* MAX_SEGMENTS + 1 means "too many for any route" */
} segments;

static void split(const char *path, segments *out)
{
    out->n = 0;
    if (path[0] != '/')
        return;
    for (const char *p = path + 1; out->n <= MAX_SEGMENTS; out->n++) {
        size_t len = strcspn(p, "/");
        out->at[out->n] = p;
        out->len[out->n] = len;
        if (p[len] == '\0') {
            out->n++;
            return;
        }
        p += len + 1;
    }
}

/* Non-zero when `pattern` matches the segments; placeholders match any segment. */
static int matches(const char *pattern, const segments *s)
{
    segments ps;
    split(pattern, &ps);
    if (ps.n != s->n)
        return 0;
    for (size_t i = 0; i < ps.n; i++) {
        if (ps.at[i][0] == '{')
            continue;
        if (ps.len[i] != s->len[i] || memcmp(ps.at[i], s->at[i], ps.len[i]) != 0)
            return 0;
    }
    return 1;
}

/* Fills c->cluster and c->version from the placeholders of r's pattern: 0, or -1 after answering
 * 400. */
static int bind(rkd_call *c, const route *r, const segments *s)
{
    segments ps;
    split(r->pattern, &ps);
    for (size_t i = 0; i < ps.n; i++) {
        if (strncmp(ps.at[i], "{c}", 3) == 0) {
            int fits = s->len[i] < sizeof c->cluster;
            snprintf(c->cluster, sizeof c->cluster, "%.*s", (int)s->len[i], s->at[i]);
            if (!fits || !rk_cluster_name_valid(c->cluster)) {
                rkd_response_error(c->resp, RKD_E_INVALID_CLUSTER, NULL,
                                   "a cluster name is 1 to 63 bytes of a-z, 0-9, '.', '_' and "
                                   "'-', starting with a letter or digit");
                return -1;
            }
        }
        int id = strncmp(ps.at[i], "{r}", 3) == 0; /* a rollout's id, numbered as versions */
        if (id || strncmp(ps.at[i], "{v}", 3) == 0) {
            char digits[24];
            snprintf(digits, sizeof digits, "%.*s", (int)s->len[i], s->at[i]);
            if (s->len[i] >= sizeof digits || rkd_parse_int(digits, &c->version) != 0 ||
                c->version < 1) {
                rkd_response_error(c->resp, RKD_E_INVALID_VERSION, NULL,
                                   "a %s in the path is a positive integer such as 4",
                                   id ? "rollout id" : "version");
                return -1;
            }
        }
    }
    return 0;
}

/* Non-zero when the request's token has one of the route's roles; else answers 403. */
static int allowed(rkd_call *c, const route *r)
{
    char needs[64];
    if (!r->roles || (r->roles & ~c->req->lacks))
        return 1;
    rkd_roles_text(r->roles, needs, sizeof needs);
    rkd_response_error(
        c->resp, RKD_E_ROLE_REQUIRED, NULL,
        "the token \"%s\" has no role for %s %s: it needs one of %s (the roles after "
        "its line in the token file; docs/API.md, \"Tokens and roles\")",
        c->req->author ? c->req->author : "", r->method, r->pattern, needs);
    return 0;
}

static int method_is(const route *r, const char *method)
{
    return strcmp(r->method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0);
}

void rkd_api_handle(rkd_app *app, const rkd_request *req, rkd_response *resp)
{
    rkd_call c = {.app = app, .req = req, .resp = resp};
    const route *path_match = NULL;
    segments s;
    split(req->path ? req->path : "", &s);
    resp->route = "other";
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!matches(routes[i].pattern, &s))
            continue;
        path_match = &routes[i];
        resp->route = path_match->pattern;
        if (!method_is(&routes[i], req->method))
            continue;
        if (allowed(&c, &routes[i]) && bind(&c, &routes[i], &s) == 0)
            routes[i].handler(&c);
        /* a write that took: the console's watchers of the cluster look again */
        if (strcmp(routes[i].method, "GET") != 0 && resp->status < 300 && c.cluster[0] && !c.woken)
            rkd_app_changed(app, c.cluster);
        return;
    }
    if (!path_match) {
        rkd_response_error(resp, RKD_E_NOT_FOUND, NULL,
                           "there is no such path; see docs/API.md for the routes");
        return;
    }
    resp->allow = path_match->allow;
    rkd_response_error(resp, RKD_E_METHOD_NOT_ALLOWED, NULL, "%s is not allowed here; use %s",
                       req->method, path_match->allow);
}

int rkd_api_takes_body(const char *method, const char *path)
{
    segments s;
    split(path ? path : "", &s);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(routes[i].method, method) == 0 && strcmp(method, "GET") != 0 &&
            matches(routes[i].pattern, &s))
            return 1;
    }
    return 0;
}
