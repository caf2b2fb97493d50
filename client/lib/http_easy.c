/* http_easy.c — the parts of a libcurl transfer the client library and the CLI share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_easy.h"

void rki_http_body_reset(rki_http_body *b)
{
    b->len = 0;
    b->over_cap = 0;
    if (b->data)
        b->data[0] = '\0';
}

void rki_http_body_free(rki_http_body *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int rki_http_body_over(const rki_http_body *b, CURLcode rc)
{
    return b->over_cap || rc == CURLE_FILESIZE_EXCEEDED;
}

/* Grows data to hold `need` bytes plus the NUL, doubling from 16 KiB, never past max + 1. */
static int reserve(rki_http_body *b, size_t need)
{
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < need + 1)
        cap *= 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    rki_http_body *b = arg;
    size_t n = size * nmemb;
    if (n > b->max - b->len) {
        b->over_cap = 1;
        return 0; /* CURLE_WRITE_ERROR: stops the transfer */
    }
    if (reserve(b, b->len + n) != 0)
        return 0;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

int rki_http_easy_setup(CURL *e, rki_http_body *body, long connect_timeout_ms, const char *ca_file,
                        const char *agent)
{
    int bad = 0;
    bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
#else
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) !=
           CURLE_OK;
#endif
    bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, body) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)body->max) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms) != CURLE_OK;
    if (ca_file)
        bad |= curl_easy_setopt(e, CURLOPT_CAINFO, ca_file) != CURLE_OK;
    if (agent) /* curl copies it */
        bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, agent) != CURLE_OK;
    return bad ? -1 : 0;
}

struct curl_slist *rki_http_bearer(struct curl_slist *h, const char *token)
{
    size_t n = sizeof "Authorization: Bearer " + strlen(token);
    char *line = malloc(n);
    struct curl_slist *more = NULL;
    if (line) {
        snprintf(line, n, "Authorization: Bearer %s", token);
        more = curl_slist_append(h, line); /* copies it */
        memset(line, 0, n);
        free(line);
    }
    if (!more)
        curl_slist_free_all(h);
    return more;
}
