/* http.h — ringkeeperd's HTTP front: libmicrohttpd serving rkd_api_handle, with auth, body cap,
 * long polls held by suspend/resume (no worker thread per waiting client), metrics and one log line
 * per request. */
#ifndef RKD_HTTP_H
#define RKD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "auth.h"
#include "metrics.h"

typedef struct rkd_http rkd_http;

typedef struct rkd_http_config {
    const char *listen;        /* "127.0.0.1:7070", "[::1]:0", ... (port 0: any free port) */
    unsigned threads;          /* worker threads of the pool */
    size_t max_body;           /* bytes; a larger request body gets 413 before it is buffered */
    rkd_app *app;              /* borrowed */
    rkd_auth *auth;            /* borrowed */
    rkd_metrics *metrics;      /* borrowed, may be NULL */
    const char *tls_cert;      /* PEM text of the certificate (chain): serve HTTPS; NULL: HTTP */
    const char *tls_key;       /* PEM text of its private key; given with tls_cert */
    unsigned max_connections;  /* open connections at most: past it a new one takes the place of
                                  the one that has owed its headers longest, or is closed at once
                                  if none owes any; 0: default */
    unsigned max_per_address;  /* open connections from one address at most (more are closed at
                                  once); 0: no limit */
    unsigned idle_timeout;     /* seconds a connection may stay silent (held long polls excepted) */
    unsigned header_timeout;   /* seconds a connection may take to send a request's headers, from
                                  its start or its previous answer; 0: default */
    size_t body_budget;        /* request body bytes buffered at once, all connections together
                                  (one address: a quarter, or max_body if more); past it 503 busy;
                                  0: default */
    unsigned max_polls;        /* long polls held at once, beside max_connections (a held poll
                                  takes none of those); past it 503 busy; 0: default */
    size_t send_budget;        /* kernel send buffer bytes of answers sent at full speed at once,
                                  all connections (one address: a quarter); the others are sent
                                  through a small buffer; 0: default */
    size_t header_buffer;      /* bytes of each connection's libmicrohttpd memory pool, which the
                                  request line and headers must fit (past it 431, 414 for the
                                  line, or closed); libmicrohttpd zeroes all of it after each
                                  request, so a connection that served one holds all of it;
                                  0: default */
    const char *allow_origins; /* comma-separated origins whose pages may write (CORS), besides
                                  this server's own; NULL: none (http_origin.h) */
    const char *public_names;  /* comma-separated host names a browser may call this server by,
                                  besides IP addresses and localhost; NULL: none */
} rkd_http_config;

/* max_connections, body_budget, max_polls, send_budget, header_buffer and header_timeout when 0
 * is given. */
#define RKD_HTTP_MAX_CONNECTIONS 1024u
#define RKD_HTTP_HEADER_TIMEOUT  10u
#define RKD_HTTP_BODY_BUDGET     ((size_t)32 << 20)
#define RKD_HTTP_MAX_POLLS       4096u
#define RKD_HTTP_SEND_BUDGET     ((size_t)128 << 20)
#define RKD_HTTP_HEADER_BUFFER   ((size_t)16 << 10)

/* Starts serving; returns the server (stop with rkd_http_stop) or NULL with `err` set. */
rkd_http *rkd_http_start(const rkd_http_config *cfg, rk_error *err) RK_MUST_CHECK;
/* The port actually bound (useful with port 0). */
unsigned rkd_http_port(const rkd_http *h);

/* libmicrohttpd's own threads, which read, parse and send, and answer the ring and the health
 * routes themselves: as many as the online cores, at most cfg->threads (the pool answers all else).
 */
unsigned rkd_http_network_threads(const rkd_http_config *cfg);
/* Stops accepting, answers held long polls, waits (at most `grace_ms`) for requests in flight, then
 * stops and frees the server. */
void rkd_http_stop(rkd_http *h, unsigned grace_ms);

#endif
