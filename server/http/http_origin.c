/* http_origin.c — the rules of http_origin.h: Origin, Host and Content-Type against cross-site
 * writes and DNS rebinding. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http_origin.h"

#define HOST_MAX 256 /* a DNS name is at most 253 bytes; an IPv6 literal 45 */

/* The next item of the comma-separated list at *p (moved past it), spaces around it aside: its
 * start, and its length in *n; NULL at the end. */
static const char *next_item(const char **p, size_t *n)
{
    const char *s = *p + strspn(*p, " ");
    if (!*s)
        return NULL;
    size_t len = strcspn(s, ",");
    for (*n = len; *n > 0 && s[*n - 1] == ' ';)
        (*n)--;
    *p = s + len + (s[len] == ',');
    return s;
}

/* Whether s[0..n) is an item of the comma-separated `list` (NULL: none), ASCII case aside. */
static int in_list(const char *list, const char *s, size_t n)
{
    const char *p = list ? list : "", *item;
    size_t len;
    while ((item = next_item(&p, &len)))
        if (len == n && n > 0 && strncasecmp(item, s, n) == 0)
            return 1;
    return 0;
}

/* The host of a Host header ("h", "h:port", "[v6]:port") into out, without port or brackets; 1
 * when it was bracketed (an IPv6 literal), 0 when not, -1 when it cannot be a host. */
static int host_of(const char *host, char out[HOST_MAX])
{
    int v6 = host[0] == '[';
    const char *at = host + v6;
    size_t n = v6 ? strcspn(at, "]") : strcspn(at, ":");
    if (n == 0 || n >= HOST_MAX || (v6 && at[n] != ']'))
        return -1;
    memcpy(out, at, n);
    out[n] = '\0';
    return v6;
}

/* Whether the Host header names this server without anyone's DNS: an IP address (nobody else's
 * name can point at it), localhost (browsers resolve it themselves), or a --public-name. */
static int answers_to(const rkd_origin_rules *rules, const char *host)
{
    char name[HOST_MAX];
    unsigned char addr[16];
    int v6 = host ? host_of(host, name) : -1;
    if (v6 < 0)
        return 0;
    if (v6)
        return inet_pton(AF_INET6, name, addr) == 1;
    return inet_pton(AF_INET, name, addr) == 1 || strcasecmp(name, "localhost") == 0 ||
           in_list(rules->public_names, name, strlen(name));
}

/* The host[:port] of an http or https origin, or NULL. */
static const char *authority_of(const char *origin)
{
    if (strncasecmp(origin, "http://", 7) == 0)
        return origin + 7;
    if (strncasecmp(origin, "https://", 8) == 0)
        return origin + 8;
    return NULL;
}

/* A media type of application/json, parameters (charset) aside. */
static int is_json(const char *type)
{
    if (!type)
        return 0;
    type += strspn(type, " \t");
    size_t n = strlen("application/json");
    return strncasecmp(type, "application/json", n) == 0 &&
           (type[n] == '\0' || type[n] == ';' || type[n] == ' ' || type[n] == '\t');
}

static int is_write(const char *method)
{
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
}

static int refuse(rkd_origin_refusal *out, rkd_error_code code, const char *field, const char *fmt,
                  const char *a, const char *b)
{
    out->code = code;
    out->field = field;
    snprintf(out->message, sizeof out->message, fmt, a, b);
    return -1;
}

int rkd_origin_allowed(const rkd_origin_rules *rules, const char *origin)
{
    return origin && in_list(rules->allow_origins, origin, strlen(origin));
}

/* A write's Origin: this server's own (the authority is the Host the browser connected to, so the
 * scheme is left aside: a TLS proxy in front serves https for this http server), or an allowed
 * one. "null" (a sandboxed page, a file, some form posts) is nobody's. */
static int origin_ok(const rkd_origin_rules *rules, const char *origin, const char *host)
{
    const char *authority = authority_of(origin);
    return rkd_origin_allowed(rules, origin) ||
           (authority && host && strcasecmp(authority, host) == 0);
}

int rkd_origin_check(const rkd_origin_rules *rules, const rkd_origin_request *r,
                     rkd_origin_refusal *out)
{
    if ((r->origin || r->fetch_site) && !answers_to(rules, r->host))
        return refuse(out, RKD_E_UNKNOWN_HOST, "Host",
                      "a browser's request names Host %.80s%s, which is not a name this server "
                      "answers to: an IP address, localhost, or a name given with ringkeeperd "
                      "--public-name (a name pointed here by someone else's DNS is how a web page "
                      "reaches a server on a private network)",
                      r->host ? r->host : "(none)", "");
    if (!is_write(r->method))
        return 0;
    if (r->origin && !origin_ok(rules, r->origin, r->host))
        return refuse(out, RKD_E_CROSS_ORIGIN, "Origin",
                      "a page from %.80s may not write to this server, only its own pages may: "
                      "to let a console on another origin write, start ringkeeperd with "
                      "--allow-origin %.80s",
                      r->origin, strcmp(r->origin, "null") == 0 ? "<its origin>" : r->origin);
    if (r->has_body && !is_json(r->content_type))
        return refuse(out, RKD_E_UNSUPPORTED_MEDIA_TYPE, "Content-Type",
                      "a request body must be JSON, sent with Content-Type: application/json "
                      "(curl: -H 'Content-Type: application/json', or --json); got %.80s%s",
                      r->content_type ? r->content_type : "none", "");
    return 0;
}

/* One entry of a list, its length n: an origin (kind 'o') or a host name (kind 'n'). */
static int entry_ok(const char *s, size_t n, char kind)
{
    char name[HOST_MAX];
    if (n == 0 || n >= HOST_MAX)
        return 0;
    memcpy(name, s, n);
    name[n] = '\0';
    const char *host = name;
    if (kind == 'o') {
        host = authority_of(name);
        if (!host || !*host || strchr(host, '/'))
            return 0;
        return strspn(host,
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:[]") ==
               strlen(host);
    }
    return strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == n;
}

int rkd_origin_list_check(const char *list, char kind, char *why, size_t why_len)
{
    const char *p = list ? list : "", *item;
    size_t n;
    while ((item = next_item(&p, &n))) {
        if (entry_ok(item, n, kind))
            continue;
        snprintf(why, why_len, "\"%.*s\" is not %s", (int)(n < 80 ? n : 80), item,
                 kind == 'o' ? "an origin such as https://console.example.com (a scheme, a host "
                               "and a port, no path)"
                             : "a host name such as ringkeeper.example.com");
        return -1;
    }
    return 0;
}
