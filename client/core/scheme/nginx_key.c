/* nginx_key.c — the key nginx 1.22 takes from a request for `hash EXPR consistent`: EXPR as its
 * script compiler reads it (ngx_http_script.c: literal text and $name or ${name} variables), each
 * variable as ngx_http_variables.c gives it. Evaluated: $request_uri, $uri, $arg_NAME, $http_NAME,
 * $cookie_NAME. Refused: every other variable (an address, a time, a map, a regex capture: what
 * a configuration alone cannot tell), so that a lookup of a request is never a guess. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

typedef enum { V_REQUEST_URI, V_URI, V_ARG, V_HTTP, V_COOKIE } var_kind;

/* One part of an expression: literal text, or a variable and the name after its prefix. */
typedef struct part {
    int is_var;
    var_kind kind;
    const char *text; /* the literal, or the variable's name after its prefix (any case) */
    size_t len;
} part;

static const struct {
    const char *name;
    var_kind kind;
    int prefix; /* a prefix that a name follows, not a whole variable */
} vars[] = {
    {"request_uri", V_REQUEST_URI, 0}, {"uri", V_URI, 0}, {"arg_", V_ARG, 1}, {"http_", V_HTTP, 1},
    {"cookie_", V_COOKIE, 1},
};

static int name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int refuse(rk_error *err, const char *what, const char *name, size_t len)
{
    return rk_error_set(err, RK_ETOPOLOGY, "request_key", "%s%.*s cannot be evaluated: %s", what,
                        (int)len, name, rki_nginx_request_keys.allowed);
}

/* The variable named name[0..len) (nginx reads names in any case). */
static int variable(const char *name, size_t len, part *p, rk_error *err)
{
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        size_t n = strlen(vars[i].name);
        if (vars[i].prefix ? len > n && strncasecmp(name, vars[i].name, n) == 0
                           : len == n && strncasecmp(name, vars[i].name, n) == 0) {
            *p = (part){1, vars[i].kind, name + n, len - n};
            return RK_OK;
        }
    }
    return refuse(err, "$", name, len);
}

/* The part of `spec` at *at, as ngx_http_script_compile reads it; *at moves past it. */
static int next_part(const char *spec, size_t *at, part *p, rk_error *err)
{
    const char *s = spec + *at;
    if (*s != '$') {
        size_t n = strcspn(s, "$");
        *p = (part){0, V_REQUEST_URI, s, n};
        *at += n;
        return RK_OK;
    }
    if (s[1] >= '1' && s[1] <= '9')
        return refuse(err, "a regex capture $", s + 1, 1);
    int bracket = s[1] == '{';
    const char *name = s + 1 + bracket;
    size_t n = 0;
    while (name_char(name[n]))
        n++;
    if (n == 0 || (bracket && name[n] != '}'))
        return rk_error_set(err, RK_ETOPOLOGY, "request_key",
                            "has an invalid variable name at byte %zu (nginx reads $name or "
                            "${name}, name of letters, digits and '_')",
                            *at);
    *at += (size_t)(name - s) + n + (size_t)bracket;
    return variable(name, n, p, err);
}

static int nginx_check(const char *spec, rk_error *err)
{
    part p = {0};
    for (size_t at = 0; spec[at];)
        if (next_part(spec, &at, &p, err))
            return RK_ETOPOLOGY;
    return RK_OK;
}

/* ---- the request as nginx reads it ---- */

enum { S_USUAL, S_SLASH, S_DOT, S_DOT_DOT, S_QUOTED, S_QUOTED_SECOND };

typedef struct parsed {
    char *path; /* $uri: decoded, slashes merged, dot segments applied */
    size_t path_len;
    const char *args; /* the query string as sent, or NULL */
    size_t args_len;
} parsed;

static int hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* u (the path written so far, `*len` bytes) back to just after the '/' before its last segment,
 * as nginx applies "..": -1 above the root (nginx answers 400). */
static int up(const char *u, size_t *len)
{
    long at = (long)*len - 4;
    while (at >= 0 && u[at] != '/')
        at--;
    if (at < 0)
        return -1;
    *len = (size_t)at + 1;
    return 0;
}

/* One character `ch` of the target in state *state (ngx_http_parse_complex_uri, merge_slashes on,
 * not Windows): 1 to take the next character, 0 to read `ch` again in the new state, 2 at a '?'
 * (the query follows), 3 at a '#', -1 for a target nginx answers 400. */
static int step(unsigned char *ch, int *state, int *quoted_state, int *decoded, char *u,
                size_t *len)
{
    unsigned char c = *ch;
    int st = *state;
    if (st == S_QUOTED) {
        if ((*decoded = hex(c)) < 0)
            return -1;
        *state = S_QUOTED_SECOND;
        return 1;
    }
    if (st == S_QUOTED_SECOND) {
        int h = hex(c);
        if (h < 0)
            return -1;
        *ch = (unsigned char)(*decoded * 16 + h);
        if (*ch == 0)
            return -1;
        *state = *quoted_state;
        /* these stay as they are, read as ordinary characters; the rest is read again */
        if (*ch == '%' || *ch == '#' || *ch == '?') {
            u[(*len)++] = (char)*ch;
            *state = S_USUAL;
            return 1;
        }
        return 0;
    }
    if (c == '%') {
        *quoted_state = st;
        *state = S_QUOTED;
        return 1;
    }
    if (c == '?' || c == '#' || (c == '/' && st != S_USUAL && st != S_SLASH)) {
        if (st == S_DOT)
            (*len)--;
        else if (st == S_DOT_DOT && up(u, len))
            return -1;
        *state = S_SLASH;
        return c == '?' ? 2 : c == '#' ? 3 : 1;
    }
    if (c == '/') {
        if (st == S_USUAL)
            u[(*len)++] = '/';
        *state = S_SLASH; /* a slash after a slash is merged */
        return 1;
    }
    u[(*len)++] = (char)c;
    /* a dot right after a slash may start "." or ".."; "..." and any other character is a name */
    *state = c != '.' ? S_USUAL : st == S_SLASH ? S_DOT : st == S_DOT ? S_DOT_DOT : S_USUAL;
    return 1;
}

/* The target as nginx parses it; RK_EINVAL where nginx answers 400. */
static int parse_target(const char *uri, parsed *out, rk_error *err)
{
    size_t n = strlen(uri), i = 0, len = 0;
    char *u = malloc(n + 1);
    if (!u)
        return RK_ENOMEM;
    int state = S_USUAL, quoted_state = S_USUAL, decoded = 0, r = 1;
    unsigned char ch = 0;
    while (i < n || r == 0) {
        if (r != 0)
            ch = (unsigned char)uri[i++];
        if ((r = step(&ch, &state, &quoted_state, &decoded, u, &len)) < 0 || r >= 2)
            break;
    }
    if (r >= 0 && r < 2 && (state == S_QUOTED || state == S_QUOTED_SECOND))
        r = -1;
    else if (r >= 0 && r < 2 && state == S_DOT)
        len--;
    else if (r >= 0 && r < 2 && state == S_DOT_DOT && up(u, &len))
        r = -1;
    if (r < 0) {
        free(u);
        return rk_error_set(err, RK_EINVAL, "uri",
                            "nginx answers 400 to this target: a bad percent escape, %%00, or "
                            "\"..\" above the root");
    }
    *out = (parsed){u, len, NULL, 0};
    if (r == 2) { /* the query runs to a '#', else to the end */
        out->args = uri + i;
        out->args_len = strcspn(out->args, "#");
    }
    return RK_OK;
}

/* Non-zero when nginx reads the header field `name` as $http_<var>: its name lowercased, '-' as
 * '_'. A name holding '_' or anything but letters, digits and '-' nginx ignores, as its defaults
 * say (underscores_in_headers off, ignore_invalid_headers on). */
static int header_is(const char *name, const char *var, size_t var_len)
{
    size_t i = 0;
    for (; name[i]; i++) {
        char c = name[i], lower = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
        char want = (char)(var[i] >= 'A' && var[i] <= 'Z' ? var[i] | 0x20 : var[i]);
        int valid = (lower >= 'a' && lower <= 'z') || (c >= '0' && c <= '9') || c == '-';
        if (!valid || i >= var_len || (c == '-' ? '_' : lower) != want)
            return 0;
    }
    return i > 0 && i == var_len;
}

/* Every field named `var` joined by `sep`, as nginx gives $http_cookie and
 * $http_x_forwarded_for; else the first one's value. Not there: nothing. */
static int http_var(const rk_request *req, const char *var, size_t len, rki_key *out)
{
    const char *sep = len == 6 && strncasecmp(var, "cookie", 6) == 0              ? "; "
                      : len == 15 && strncasecmp(var, "x_forwarded_for", 15) == 0 ? ", "
                                                                                  : NULL;
    int rc = RK_OK, found = 0;
    for (size_t i = 0; rc == RK_OK && i < req->n_headers; i++) {
        if (!header_is(req->headers[i].name, var, len))
            continue;
        if (found++ && !sep)
            break;
        if (found > 1)
            rc = rki_key_add(out, sep, 2);
        if (rc == RK_OK)
            rc = rki_key_add(out, req->headers[i].value, strlen(req->headers[i].value));
    }
    return rc;
}

/* The value of cookie `name` in one Cookie field `v`, found as ngx_http_parse_multi_header_lines
 * finds it (names in any case; a pair it cannot read skipped to the next ';' or ','). */
static int cookie_in(const char *v, const char *name, size_t n, const char **val, size_t *len)
{
    const char *start = v, *end = v + strlen(v);
    if (n > (size_t)(end - start))
        return 0;
    while (start < end) {
        if ((size_t)(end - start) >= n && strncasecmp(start, name, n) == 0) {
            for (start += n; start < end && *start == ' '; start++)
                ;
            if (start < end && *start++ == '=') {
                while (start < end && *start == ' ')
                    start++;
                *val = start;
                *len = strcspn(start, ";");
                return 1;
            }
        }
        while (start < end) {
            char ch = *start++;
            if (ch == ';' || ch == ',')
                break;
        }
        while (start < end && *start == ' ')
            start++;
    }
    return 0;
}

static int cookie_var(const rk_request *req, const char *name, size_t n, rki_key *out)
{
    const char *val;
    size_t len;
    for (size_t i = 0; i < req->n_headers; i++)
        if (header_is(req->headers[i].name, "cookie", 6) &&
            cookie_in(req->headers[i].value, name, n, &val, &len))
            return rki_key_add(out, val, len);
    return RK_OK;
}

/* The value of argument `name` in the query `a` (n bytes), as ngx_http_arg finds it: the first
 * "name=" (in any case) at the start or after a '&', to the next '&'. Not there: nothing. */
static int arg_var(const char *a, size_t n, const char *name, size_t len, rki_key *out)
{
    for (size_t p = 0; a && p + len < n; p++) {
        if (strncasecmp(a + p, name, len) != 0 || (p > 0 && a[p - 1] != '&') || a[p + len] != '=')
            continue;
        const char *v = a + p + len + 1, *amp = memchr(v, '&', n - (size_t)(v - a));
        return rki_key_add(out, v, amp ? (size_t)(amp - v) : n - (size_t)(v - a));
    }
    return RK_OK;
}

static int append(const part *p, const rk_request *req, const parsed *t, rki_key *out)
{
    if (!p->is_var)
        return rki_key_add(out, p->text, p->len);
    switch (p->kind) {
    case V_REQUEST_URI:
        return rki_key_add(out, req->uri, strlen(req->uri));
    case V_URI:
        return rki_key_add(out, t->path, t->path_len);
    case V_ARG:
        return arg_var(t->args, t->args_len, p->text, p->len, out);
    case V_HTTP:
        return http_var(req, p->text, p->len, out);
    case V_COOKIE:
        return cookie_var(req, p->text, p->len, out);
    }
    return RK_OK;
}

static int nginx_eval(const char *spec, const rk_request *req, rki_key *out, rk_error *err)
{
    parsed t = {0};
    int rc = parse_target(req->uri, &t, err);
    part p = {0};
    for (size_t at = 0; rc == RK_OK && spec[at];)
        if ((rc = next_part(spec, &at, &p, err)) == RK_OK)
            rc = append(&p, req, &t, out);
    free(t.path);
    return rc;
}

const rki_request_keys rki_nginx_request_keys = {
    .allowed = "nginx's hash key is evaluated from $request_uri, $uri, $arg_NAME, $http_NAME, "
               "$cookie_NAME and literal text",
    .check = nginx_check,
    .eval = nginx_eval,
};
