/* http.h — ringkeeperd's HTTP front: libmicrohttpd serving rk_api_handle, with auth, body cap,
 * long polls held by suspend/resume (no worker thread per waiting client), metrics and one log line
 * per request. */
#ifndef RK_HTTP_H
#define RK_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "auth.h"
#include "metrics.h"

typedef struct rk_http rk_http;

typedef struct rk_http_config {
    const char *listen;       /* "127.0.0.1:7070", "[::1]:0", ... (port 0: any free port) */
    unsigned threads;         /* worker threads of the pool */
    size_t max_body;          /* bytes; a larger request body gets 413 before it is buffered */
    rk_app *app;              /* borrowed */
    rk_auth *auth;            /* borrowed */
    rk_metrics *metrics;      /* borrowed, may be NULL */
    const char *tls_cert;     /* PEM text of the certificate (chain): serve HTTPS; NULL: HTTP */
    const char *tls_key;      /* PEM text of its private key; given with tls_cert */
    unsigned max_connections; /* open connections at most (more are closed at once); 0: default */
    unsigned idle_timeout;    /* seconds a connection may stay silent (held long polls excepted) */
} rk_http_config;

/* Request line plus headers must fit in MHD's per-connection memory pool of this size; past it
 * the client gets 431 (or 414 for the request line) or is closed. */
#define RK_HTTP_CONN_MEMORY (32u * 1024u)

/* Starts serving; returns the server (stop with rk_http_stop) or NULL with `err` set. */
rk_http *rk_http_start(const rk_http_config *cfg, rk_error *err) RK_MUST_CHECK;
/* The port actually bound (useful with port 0). */
unsigned rk_http_port(const rk_http *h);
/* Stops accepting, answers held long polls, waits (at most `grace_ms`) for requests in flight, then
 * stops and frees the server. */
void rk_http_stop(rk_http *h, unsigned grace_ms);

#endif
