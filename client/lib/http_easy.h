/* http_easy.h — what every libcurl transfer of the client library and the CLI shares (library
 * internals, rki_ prefix; the CLI links the static library and includes this too): a body buffer
 * that stops the transfer past its cap, the options of a safe easy handle, and the bearer token
 * header. The etcd store keeps its own (server/store/etcd/etcd_http.c): ringkeeperd links the ring
 * math only, so that a build without libcurl has it nowhere (docs/OPERATIONS.md). */
#ifndef RKI_HTTP_EASY_H
#define RKI_HTTP_EASY_H

#include <stddef.h>

#include <curl/curl.h>

/* A response body: at most `max` bytes, NUL-terminated. Zero it, set max, then hand it to
 * rki_http_easy_setup; rki_http_body_reset between transfers keeps its memory. */
typedef struct rki_http_body {
    char *data;   /* owned; NULL until the first byte */
    size_t len;   /* bytes in data, the NUL not counted */
    size_t cap;   /* bytes allocated, never over max + 1 */
    size_t max;   /* the cap */
    int over_cap; /* the body went past max: the transfer was stopped */
} rki_http_body;

/* Empties `b` for the next transfer. */
void rki_http_body_reset(rki_http_body *b);
/* Frees the data; `b` may be reused after rki_http_body_reset. */
void rki_http_body_free(rki_http_body *b);
/* Whether a transfer that ended with `rc` went over the body's cap. */
int rki_http_body_over(const rki_http_body *b, CURLcode rc);

/* Sets on `e` what every transfer of ours does: http and https only, no redirect followed, no
 * signal, the body into `body` under its cap, the connect timeout, `ca_file` to verify with (NULL:
 * the system's) and `agent` as User-Agent (NULL: libcurl sends none). 0, or -1 when libcurl
 * refused an option. */
int rki_http_easy_setup(CURL *e, rki_http_body *body, long connect_timeout_ms, const char *ca_file,
                        const char *agent);

/* Appends "Authorization: Bearer <token>" to `h` (NULL: a new list), the token's temporary line
 * wiped; the longer list, or NULL when out of memory, `h` then freed. */
struct curl_slist *rki_http_bearer(struct curl_slist *h, const char *token);

#endif /* RKI_HTTP_EASY_H */
