/* api.h — the HTTP API of docs/API.md as plain functions: a request in, a response out, no
 * sockets. The HTTP layer (http.c) translates libmicrohttpd calls to these; tests and fuzzers call
 * them directly.
 *
 * Thread safety: rkd_api_handle may run on many threads at once for one rkd_app.
 */
#ifndef RKD_API_H
#define RKD_API_H

#include <stddef.h>
#include <stdint.h>

#include "api_errors.h"
#include "clients.h"
#include "metrics.h"
#include "store.h"

typedef struct rkd_app rkd_app;

/* A request as the HTTP layer received it; every pointer is borrowed for the call. */
typedef struct rkd_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* without the query string, percent-decoded */
    /* Value of query argument / header `name` (headers case-insensitive), or NULL when absent. */
    const char *(*query)(const struct rkd_request *req, const char *name);
    const char *(*header)(const struct rkd_request *req, const char *name);
    void *ctx;          /* for query() and header() */
    const char *body;   /* request body; not NUL-terminated */
    size_t body_len;    /* its length */
    const char *author; /* authenticated token name, or "anonymous" when no tokens are set */
    unsigned lacks;     /* the RKD_ROLE_* (auth.h) its token lacks: 0 with no token file, or for a
                           token given no roles; all of them for a read without a token */
    const char *client_token; /* the token's name when it has the client role and a token file
                                 is set: the client is authenticated (GET .../clients); or NULL */
    int resumed;              /* non-zero when re-run after a long-poll wait: answer now */
    const char *addr;         /* the client's numeric address, or NULL when unknown */
} rkd_request;

#define RKD_ETAG_MAX    64 /* "v<19 digits>+.<16 hex digits>.<16 hex digits>", quotes, NUL */
#define RKD_CLUSTER_MAX 64

/* What to answer. The body is owned by the response: rkd_response_clear frees it, or releases
 * its owner when it is shared. */
typedef struct rkd_response {
    int status;       /* HTTP status */
    char *body;       /* malloc'd, or shared (read-only) when body_owner is set; or NULL */
    size_t body_len;  /* its length */
    void *body_owner; /* a hold on what keeps a shared body alive, or NULL */
    void (*body_release)(void *owner); /* drops that hold */
    const char *content_type;          /* static string */
    const char *route;                 /* static route pattern for metrics and logs */
    char etag[RKD_ETAG_MAX];           /* "\"v4.<store id>.<fingerprint>\"", or "" for none */
    char location[160];                /* Location header, or "" */
    const char *allow;                 /* Allow header (405), static, or NULL */
    unsigned retry_after;              /* Retry-After seconds (a 503 worth retrying), or 0 */
    char stale[RKD_STORE_STALE_LEN];   /* RK-Stale header (rkd_store_stale), or "" */
    unsigned wait_seconds; /* > 0: hold the request (long poll), then call again resumed */
    char wait_cluster[RKD_CLUSTER_MAX]; /* ... woken early by an activation of this cluster */
    int wait_changes; /* ... or, non-zero, by any change of it (rkd_app_changed) */
} rkd_response;

/* Builds the application over an open store (borrowed; must outlive the app) and metrics
 * (borrowed, may be NULL). Sets the store's watch callback. Free with rkd_app_free. */
rkd_app *rkd_app_new(rkd_store *store, rkd_metrics *metrics, rk_error *err) RK_MUST_CHECK;
void rkd_app_free(rkd_app *app);

/* What one plan may cost (0: the default of each). A plan over max_arcs is refused before its arcs
 * are stored, one over max_rows (the arcs, transfers and step arcs it would render) before it is
 * rendered, both 422 plan_too_large; past `concurrency` plans at once, or all but one of them from
 * one client address, 503 unavailable. */
typedef struct rkd_plan_limits {
    size_t max_arcs, max_rows;
    unsigned concurrency;
} rkd_plan_limits;

#define RKD_PLAN_MAX_ARCS    1000000
#define RKD_PLAN_MAX_ROWS    50000
#define RKD_PLAN_CONCURRENCY 2

/* Sets the plan limits; call before serving. RK_OK, or RK_ENOMEM (the limits unchanged). */
int rkd_app_set_plan_limits(rkd_app *app, const rkd_plan_limits *limits) RK_MUST_CHECK;

/* Replaces the tables of clients (docs/API.md: the authenticated ones, and those seen without a
 * client token, kept apart unless limits->authenticated_only) by empty ones with these limits (0:
 * the default of each); call before serving. RK_ENOMEM leaves the old tables. */
int rkd_app_set_client_limits(rkd_app *app, const rkd_clients_limits *limits);

/* Called after every activation is committed and the app's caches are updated, on the committing
 * thread, and with version 0 after any other change of the cluster (rkd_app_changed); the HTTP
 * layer wakes long polls of `cluster` with it: ring polls at activations, watchers of its changes
 * at both. */
typedef void (*rkd_activation_fn)(void *arg, const char *cluster, int64_t version);
/* Returns once no call of the hook it replaces runs any more: after setting NULL, `arg` may be
 * freed (a thread of rollouts may be calling it until then). */
void rkd_app_set_activation_hook(rkd_app *app, rkd_activation_fn fn, void *arg);

/* Starts the thread that drives the running rollouts of the store (SPEC 11, docs/MIGRATE.md
 * "Rollouts"), looking at them every `tick_ms` (0: 500): RK_OK, or RK_ENOMEM. Call before the
 * HTTP layer starts its threads (its handlers read the app's driver) and stop it, with
 * rkd_app_stop_rollouts or rkd_app_free, once they have stopped; its activations wake long polls
 * through the activation hook while one is set. */
int rkd_app_start_rollouts(rkd_app *app, unsigned tick_ms, rk_error *err);
void rkd_app_stop_rollouts(rkd_app *app);

/* Answers `req` into `resp` (zeroed by the caller). Every outcome, errors included, is a response:
 * errors carry the JSON error object of docs/RING.md. */
void rkd_api_handle(rkd_app *app, const rkd_request *req, rkd_response *resp);

/* 1 when a route of this method and path reads a request body (a POST or PUT route), else 0: the
 * HTTP layer then drops any body sent unread, rather than buffer it for a 404, 405 or GET. */
int rkd_api_takes_body(const char *method, const char *path);

/* Frees (or releases) the body and zeroes the response. */
void rkd_response_clear(rkd_response *resp);

/* Makes `resp` the error `e` (api_errors.h: its status and code) with body {"error": {"code",
 * "message", "field"?}} (docs/RING.md), replacing any body it had; `field` names the one thing to
 * blame, or is NULL / "". The message is one printf-formatted sentence a person can act on. Falls
 * back to a fixed 500 body when out of memory. */
void rkd_response_error(rkd_response *resp, rkd_error_code e, const char *field, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

#endif
