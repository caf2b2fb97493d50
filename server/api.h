/* api.h — the HTTP API of SPEC section 4 as plain functions: a request in, a response out, no
 * sockets. The HTTP layer (http.c) translates libmicrohttpd calls to these; tests and fuzzers call
 * them directly.
 *
 * Thread safety: rk_api_handle may run on many threads at once for one rk_app.
 */
#ifndef RK_API_H
#define RK_API_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "store.h"

typedef struct rk_app rk_app;

/* A request as the HTTP layer received it; every pointer is borrowed for the call. */
typedef struct rk_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* without the query string, percent-decoded */
    /* Value of query argument / header `name` (headers case-insensitive), or NULL when absent. */
    const char *(*query)(const struct rk_request *req, const char *name);
    const char *(*header)(const struct rk_request *req, const char *name);
    void *ctx;          /* for query() and header() */
    const char *body;   /* request body; not NUL-terminated */
    size_t body_len;    /* its length */
    const char *author; /* authenticated token name, or "anonymous" when no tokens are set */
    int resumed;        /* non-zero when re-run after a long-poll wait: answer now */
} rk_request;

#define RK_ETAG_MAX    32
#define RK_CLUSTER_MAX 64

/* What to answer. The body is owned by the response: rk_response_clear frees it. */
typedef struct rk_response {
    int status;               /* HTTP status */
    char *body;               /* malloc'd, or NULL for none */
    size_t body_len;          /* its length */
    const char *content_type; /* static string */
    const char *route;        /* static route pattern for metrics and logs */
    char etag[RK_ETAG_MAX];   /* "\"v4\"", or "" for none */
    char location[160];       /* Location header, or "" */
    const char *allow;        /* Allow header (405), static, or NULL */
    unsigned wait_seconds;    /* > 0: hold the request (long poll), then call again resumed */
    char wait_cluster[RK_CLUSTER_MAX]; /* ... woken early by an activation of this cluster */
} rk_response;

/* Builds the application over an open store (borrowed; must outlive the app) and metrics
 * (borrowed, may be NULL). Sets the store's watch callback. Free with rk_app_free. */
rk_app *rk_app_new(rk_store *store, rk_metrics *metrics, rk_error *err) RK_MUST_CHECK;
void rk_app_free(rk_app *app);

/* Called after every activation is committed and the app's caches are updated, on the committing
 * thread; the HTTP layer wakes long polls of `cluster` with it. */
typedef void (*rk_activation_fn)(void *arg, const char *cluster, int64_t version);
void rk_app_set_activation_hook(rk_app *app, rk_activation_fn fn, void *arg);

/* Answers `req` into `resp` (zeroed by the caller). Every outcome, errors included, is a response:
 * errors carry the JSON error object of SPEC section 4. */
void rk_api_handle(rk_app *app, const rk_request *req, rk_response *resp);

/* Frees the body and zeroes the response. */
void rk_response_clear(rk_response *resp);

/* Makes `resp` the error `status` with body {"error": {"code", "message", "field"?}} (SPEC section
 * 4), replacing any body it had. `code` is a lowercase snake_case machine word (the table at the
 * top of api.c; the HTTP layer uses "unauthorized" 401, "forbidden" 403, "body_too_large" 413);
 * `field` names the one thing to blame, or is NULL / "". The message is one printf-formatted
 * sentence a person can act on. Falls back to a fixed 500 body when out of memory. */
void rk_response_error(rk_response *resp, int status, const char *code, const char *field,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
