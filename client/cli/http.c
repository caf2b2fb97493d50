/* http.c — the CLI's one HTTP call (libcurl): timeouts, a size cap, failures mapped to exit codes.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli.h"
#include "http_easy.h"

#define CONNECT_TIMEOUT_MS 5000L /* at most; never more than the whole --timeout */

/* curl errors that mean "nobody answered": exit 4; the few that mean a bad --server: exit 2. */
static const struct {
    CURLcode code;
    int exit_code;
} curl_exits[] = {
    {CURLE_COULDNT_RESOLVE_HOST, RK_EXIT_UNREACHABLE},
    {CURLE_COULDNT_RESOLVE_PROXY, RK_EXIT_UNREACHABLE},
    {CURLE_COULDNT_CONNECT, RK_EXIT_UNREACHABLE},
    {CURLE_OPERATION_TIMEDOUT, RK_EXIT_UNREACHABLE},
    {CURLE_SEND_ERROR, RK_EXIT_UNREACHABLE},
    {CURLE_RECV_ERROR, RK_EXIT_UNREACHABLE},
    {CURLE_GOT_NOTHING, RK_EXIT_UNREACHABLE},
    {CURLE_SSL_CONNECT_ERROR, RK_EXIT_UNREACHABLE},
    {CURLE_PEER_FAILED_VERIFICATION, RK_EXIT_UNREACHABLE}, /* as the client library counts it */
    {CURLE_SSL_CACERT_BADFILE, RK_EXIT_USAGE},             /* --ca-file unreadable */
    {CURLE_URL_MALFORMAT, RK_EXIT_USAGE},
    {CURLE_UNSUPPORTED_PROTOCOL, RK_EXIT_USAGE},
};

static int curl_exit(CURLcode code)
{
    for (size_t i = 0; i < sizeof curl_exits / sizeof curl_exits[0]; i++)
        if (curl_exits[i].code == code)
            return curl_exits[i].exit_code;
    return RK_EXIT_FAIL;
}

static struct curl_slist *add_header(struct curl_slist *h, const char *line)
{
    struct curl_slist *more = curl_slist_append(h, line);
    if (!more)
        curl_slist_free_all(h);
    return more;
}

/* The request's headers (NULL when none or out of memory: *oom tells). The token is copied into
 * this list only. */
static struct curl_slist *headers(const char *token, const char *body, const char *extra, int *oom)
{
    struct curl_slist *h = body ? add_header(NULL, "Content-Type: application/json") : NULL;
    *oom = body && !h;
    if (!*oom && extra)
        *oom = !(h = add_header(h, extra));
    if (*oom || !token || !*token)
        return h;
    h = rki_http_bearer(h, token);
    *oom = !h;
    return h;
}

static CURLcode perform(CURL *curl, const rk_cli_request *rq, rki_http_body *b)
{
    const char *method = rq->method, *body = rq->body;
    long total_ms = rq->timeout_s * 1000L;
    if (rki_http_easy_setup(curl, b, total_ms < CONNECT_TIMEOUT_MS ? total_ms : CONNECT_TIMEOUT_MS,
                            rq->ca_file, NULL) != 0)
        return CURLE_OUT_OF_MEMORY;
    curl_easy_setopt(curl, CURLOPT_URL, rq->url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, total_ms);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    return curl_easy_perform(curl);
}

/* Why a request failed, for people; the URL is given, never the token. */
static int transfer_failed(const char *cmd, const rk_cli_request *rq, CURLcode code,
                           const rki_http_body *b)
{
    const char *url = rq->url;
    int over_cap = rki_http_body_over(b, code);
    int rc = over_cap ? RK_EXIT_FAIL : curl_exit(code);
    if (over_cap)
        return rk_cli_fail(cmd, rc, "%s: the response is over %u MiB", url, RK_CLI_MAX_FILE >> 20);
    if (code == CURLE_OPERATION_TIMEDOUT)
        return rk_cli_fail(cmd, rc, "server unreachable: %s: no answer within %ld s (--timeout)",
                           url, rq->timeout_s);
    if (rc == RK_EXIT_UNREACHABLE)
        return rk_cli_fail(cmd, rc, "server unreachable: %s: %s", url, curl_easy_strerror(code));
    return rk_cli_fail(cmd, rc, "%s: %s", url, curl_easy_strerror(code));
}

int rk_cli_http(const char *cmd, const rk_cli_request *rq, long *status, char **response,
                size_t *response_len)
{
    rki_http_body b = {.max = RK_CLI_MAX_FILE};
    int oom = 0;
    CURL *curl = curl_easy_init();
    struct curl_slist *h = curl ? headers(rq->token, rq->body, rq->header, &oom) : NULL;
    if (!curl || oom) {
        curl_easy_cleanup(curl);
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory");
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    CURLcode code = perform(curl, rq, &b);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(curl);
    curl_slist_free_all(h);
    if (code == CURLE_OK && !b.data)
        b.data = calloc(1, 1);
    if (code != CURLE_OK || !b.data) {
        int rc = code == CURLE_OK ? rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory")
                                  : transfer_failed(cmd, rq, code, &b);
        free(b.data);
        return rc;
    }
    *response = b.data;
    *response_len = b.len;
    return RK_EXIT_OK;
}
