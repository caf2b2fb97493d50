/* remote.c — one call to a cluster's route for the server commands: the URL, the HTTP exchange, and
 * the server's errors printed and mapped to exit codes. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

#define MAX_URL 4096

/* What to do about a 401 or a 403: where the token comes from. */
#define TOKEN_MISSING "writes need a token: give --token T or set RINGKEEPER_TOKEN"
#define TOKEN_REFUSED "the token was refused: check --token or RINGKEEPER_TOKEN"

/* HTTP statuses to exit codes, first match wins: the request was refused as given (2), or the
 * server failed (1). */
static const struct {
    long lo, hi;
    int exit_code;
} status_exits[] = {
    {200, 299, RK_EXIT_OK},
    {400, 499, RK_EXIT_USAGE},
    {500, 599, RK_EXIT_FAIL},
};

int rk_cli_status_exit(long status)
{
    for (size_t i = 0; i < sizeof status_exits / sizeof status_exits[0]; i++)
        if (status >= status_exits[i].lo && status <= status_exits[i].hi)
            return status_exits[i].exit_code;
    return RK_EXIT_FAIL;
}

/* <server>/v1/clusters/<cluster><route> into url; the route is printf-formatted. */
static int cluster_url(char url[MAX_URL], const rk_cli_server *s, const char *fmt, va_list ap)
{
    size_t base = strlen(s->url);
    while (base > 0 && s->url[base - 1] == '/')
        base--;
    int n = snprintf(url, MAX_URL, "%.*s/v1/clusters/%s", (int)base, s->url, s->cluster);
    if (n < 0 || n >= MAX_URL)
        return -1;
    int m = vsnprintf(url + n, MAX_URL - (size_t)n, fmt, ap);
    return m < 0 || m >= MAX_URL - n ? -1 : 0;
}

/* Prints the server's error ("message (field: f)") or, when the body is not one, the status. */
static int server_error(const char *cmd, long status, const char *body, size_t len)
{
    int rc = rk_cli_status_exit(status);
    json_t *doc = json_loadb(body, len, 0, NULL);
    json_t *error = json_object_get(doc, "error");
    const char *message = json_string_value(json_object_get(error, "message"));
    const char *field = json_string_value(json_object_get(error, "field"));
    const char *code = json_string_value(json_object_get(error, "code"));
    if (!message)
        rk_cli_fail(cmd, rc, "the server answered HTTP %ld", status);
    else if (field)
        rk_cli_fail(cmd, rc, "server: %s (field: %s; HTTP %ld)", message, field, status);
    else
        rk_cli_fail(cmd, rc, "server: %s (HTTP %ld)", message, status);
    /* a 403 of the cutover policy (self_approval) is about who, not about the token */
    if (status == 401 || (status == 403 && (!code || strcmp(code, "forbidden") == 0)))
        rk_cli_fail(cmd, rc, "%s", status == 401 ? TOKEN_MISSING : TOKEN_REFUSED);
    json_decref(doc);
    return rc;
}

/* The error code of an error body, or "". */
static const char *error_code(const char *body, size_t len, char out[64])
{
    json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
    const char *code = json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
    snprintf(out, 64, "%s", code ? code : "");
    json_decref(doc);
    return out;
}

/* Whether `code` is one of the space-separated words of `list`. */
static int code_in(const char *list, const char *code)
{
    size_t n = strlen(code);
    for (const char *p = list; n && (p = strstr(p, code)) != NULL; p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

/* rk_cli_call and rk_cli_call_except: an error answer whose code is one of `quiet`'s words
 * (NULL: none) sets *had and is not printed. */
static int vcall(const char *cmd, const rk_cli_server *s, const rk_cli_body *in, rk_cli_body *out,
                 const char *quiet, int *had, const char *method, const char *route_fmt, va_list ap)
{
    char url[MAX_URL], code[64];
    int bad_url = cluster_url(url, s, route_fmt, ap);
    if (bad_url)
        return rk_cli_fail(cmd, RK_EXIT_USAGE, "--server: the URL is too long");
    char if_match[64];
    if (s->if_match)
        snprintf(if_match, sizeof if_match, "If-Match: \"v%s\"", s->if_match);
    rk_cli_request rq = {
        method,           url,        s->token,         in ? in->data : NULL,
        in ? in->len : 0, s->ca_file, (long)s->timeout, s->if_match ? if_match : NULL};
    long status = 0;
    int rc = rk_cli_http(cmd, &rq, &status, &out->data, &out->len);
    if (rc != RK_EXIT_OK)
        return rc;
    rc = rk_cli_status_exit(status);
    if (rc != RK_EXIT_OK && quiet && code_in(quiet, error_code(out->data, out->len, code)))
        *had = 1;
    else if (rc != RK_EXIT_OK)
        server_error(cmd, status, out->data, out->len);
    if (rc != RK_EXIT_OK) {
        free(out->data);
        out->data = NULL;
    }
    return rc;
}

int rk_cli_call(const char *cmd, const rk_cli_server *s, const rk_cli_body *in, rk_cli_body *out,
                const char *method, const char *route_fmt, ...)
{
    va_list ap;
    va_start(ap, route_fmt);
    int rc = vcall(cmd, s, in, out, NULL, NULL, method, route_fmt, ap);
    va_end(ap);
    return rc;
}

int rk_cli_call_except(const char *cmd, const rk_cli_server *s, const char *code, int *had,
                       const rk_cli_body *in, rk_cli_body *out, const char *method,
                       const char *route_fmt, ...)
{
    va_list ap;
    *had = 0;
    va_start(ap, route_fmt);
    int rc = vcall(cmd, s, in, out, code, had, method, route_fmt, ap);
    va_end(ap);
    return rc;
}
