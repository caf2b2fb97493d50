/* http_origin.h — what a browser may ask of this server: the rules against cross-site writes and
 * DNS rebinding (docs/RELIABILITY.md, "Browsers"). A write with a body must say it is JSON (so a
 * page on another site cannot send it without a CORS preflight, which this server answers only
 * for --allow-origin); a request with an Origin (every browser write sends one) must come from this
 * server's own origin or an allowed one; and a browser's request must name in Host a name this
 * server answers to (an IP address, localhost, or a --public-name): a name that an attacker's DNS
 * points at this server is refused. curl and the client library send no Origin, and are held only
 * to the content type. Headers in, verdict out: no sockets. */
#ifndef RKD_HTTP_ORIGIN_H
#define RKD_HTTP_ORIGIN_H

#include <stddef.h>

#include "api_errors.h"

/* What the operator configured. Both lists are comma-separated; NULL or "" for none. */
typedef struct rkd_origin_rules {
    const char *allow_origins; /* origins that may write from another site, as browsers send them:
                                  "https://console.example.com" (scheme, host, port if not the
                                  default) */
    const char *public_names;  /* host names this server answers to besides IP addresses and
                                  localhost: "ringkeeper.example.com" */
} rkd_origin_rules;

/* The headers of one request that the rules read; NULL for a header not sent. */
typedef struct rkd_origin_request {
    const char *method;
    const char *origin;       /* Origin */
    const char *host;         /* Host */
    const char *fetch_site;   /* Sec-Fetch-Site: a browser's mark */
    const char *content_type; /* Content-Type */
    int has_body;             /* a Content-Length above 0, or a chunked body */
} rkd_origin_request;

/* A refusal: the error, the header to blame, and the message. */
typedef struct rkd_origin_refusal {
    rkd_error_code code;
    const char *field;
    char message[512];
} rkd_origin_refusal;

/* 0 when `r` may go on; -1 with *out set when it is refused. */
int rkd_origin_check(const rkd_origin_rules *rules, const rkd_origin_request *r,
                     rkd_origin_refusal *out);

/* Whether `origin` is one of rules->allow_origins: a CORS answer (Access-Control-Allow-Origin)
 * then names it. */
int rkd_origin_allowed(const rkd_origin_rules *rules, const char *origin);

/* Whether `list` (comma-separated, NULL for none) is well formed for its flag: each origin
 * "http[s]://host[:port]" (kind 'o'), each name a host name (kind 'n'). 0, or -1 with the bad
 * entry's reason in `why`. */
int rkd_origin_list_check(const char *list, char kind, char *why, size_t why_len);

#endif
