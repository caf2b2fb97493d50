/* api.h — the HTTP API of docs/API.md as plain functions: a request in, a response out, no
 * sockets. The HTTP layer (http.c) translates libmicrohttpd calls to these; tests and fuzzers call
 * them directly. The app they answer with, and its life, are app.h's and rollout_driver.h's.
 *
 * Thread safety: rkd_api_handle may run on many threads at once for one rkd_app.
 */
#ifndef RKD_API_H
#define RKD_API_H

#include <stddef.h>
#include <stdint.h>

#include "api_errors.h"
#include "app.h" /* the app: rkd_app_new, its limits and hook */
#include "rollout_driver.h"

#define RKD_ETAG_MAX 64 /* "v<19 digits>+.<16 hex digits>.<16 hex digits>", quotes, NUL */

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
