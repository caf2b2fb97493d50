/* etcd_http_internal.h — what the two files of the etcd gateway client share (etcd_http.c: the
 * members, one request and its failover, auth, base64; etcd_kv.c: reads, transactions and the
 * watch stream over it). Not used outside them. */
#ifndef RKE_HTTP_INTERNAL_H
#define RKE_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <curl/curl.h>

#include "etcd_http.h"

#define MAX_ENDPOINTS 16

struct rke_client {
    char *hosts[MAX_ENDPOINTS]; /* "HOST:PORT" */
    size_t n;                   /* how many */
    atomic_size_t preferred;    /* the last one that answered */
    rke_security sec;           /* copies of the caller's strings */
    pthread_mutex_t token_mu;   /* guards token */
    char *token;                /* etcd's auth token while we hold one, else NULL */
    CURLSH *pool;               /* the connections requests reuse */
    pthread_mutex_t pool_mu;    /* guards the pool */
};

/* ---- One request ---- */

typedef struct buffer {
    char *data;
    size_t len;
} buffer;

/* src[0 .. len) as a new NUL-terminated base64 string, or NULL when out of memory. */
char *rke_http_b64(const char *src, size_t len);
/* Decodes src into a new NUL-terminated *out of *len bytes; RK_EINVAL for bad base64. */
int rke_http_unb64(const char *src, char **out, size_t *len);
/* curl's write callback into a `buffer` (arg), bounded by the largest answer read. */
size_t rke_http_on_data(char *ptr, size_t size, size_t n, void *arg);
/* A handle POSTing `body` to `path` at `host`, with the headers every request carries (*headers
 * to free after the transfer) and curl's own account of a failure in `errbuf`, or NULL. */
CURL *rke_http_new_handle(rke_client *c, const char *host, const char *path, const char *body,
                          struct curl_slist **headers, char errbuf[CURL_ERROR_SIZE]);
/* Authenticates first when a user is set and no token is held yet. */
int rke_http_have_token(rke_client *c, rk_error *err);
/* POSTs `req` (borrowed) to `path` on the members in turn; a refused token is replaced once and the
 * request sent again. *resp: the answer (new reference); *unknown: a write whose fate is not
 * known (no answer after it was sent). */
int rke_http_call(rke_client *c, const char *path, json_t *req, int write, json_t **resp,
                  int *unknown, rk_error *err);

#endif
