/* haproxy_key.c — the key HAProxy 2.6 takes from a request for `balance`, as backend.c reads the
 * method's arguments and hashes (get_server_uh, get_server_hh): `uri` with `whole`, `len N`,
 * `depth N` and `path-only`, and `hdr(NAME)`. Other methods (url_param, a sample expression,
 * rdp-cookie, source) and `use_domain_only` are refused: a lookup of a request is never a guess.
 * A request_key is the method's words as a configuration writes them, one space apart. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

typedef struct method {
    int uri;            /* 1: uri, 0: hdr */
    int whole;          /* uri: hash the query too */
    unsigned long len;  /* uri: the first len bytes only (0: all) */
    unsigned long stop; /* uri: stop at the (depth + 1)th '/' (0: never) */
    const char *header; /* hdr: the field's name, header_len bytes */
    size_t header_len;
} method;

static int refuse(rk_error *err, const char *why, const char *word, size_t len)
{
    return rk_error_set(err, RK_ETOPOLOGY, "request_key", "%s \"%.*s\": %s", why, (int)len, word,
                        rki_haproxy_request_keys.allowed);
}

/* A number of `uri len` or `depth`: 1..2^31-1, digits only. */
static int number(const char *w, size_t n, unsigned long *out)
{
    *out = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9')
            return -1;
        *out = *out * 10 + (unsigned long)(w[i] - '0');
        if (*out > 0x7fffffff)
            return -1;
    }
    return n && *out ? 0 : -1;
}

/* The word at *at (words are one space apart), its length into *n; *at moves past it. */
static const char *word(const char *spec, size_t *at, size_t *n)
{
    const char *w = spec + *at;
    *n = strcspn(w, " ");
    *at += *n + (w[*n] == ' ');
    return w;
}

static int uri_options(const char *spec, size_t at, method *m, rk_error *err)
{
    size_t n;
    while (spec[at]) {
        const char *w = word(spec, &at, &n), *num = NULL;
        size_t k = 0;
        if (n == 5 && strncmp(w, "whole", 5) == 0)
            m->whole = 1;
        else if (n == 9 && strncmp(w, "path-only", 9) == 0)
            continue; /* a target in origin form is all path already */
        else if ((n == 3 && strncmp(w, "len", 3) == 0) || (n == 5 && strncmp(w, "depth", 5) == 0)) {
            num = word(spec, &at, &k);
            if (number(num, k, n == 3 ? &m->len : &m->stop))
                return refuse(err, "expects a positive integer after", w, n);
            m->stop += n == 5; /* the (depth + 1)th slash ends the key */
        } else
            return refuse(err, "has an unknown uri option", w, n);
    }
    return RK_OK;
}

static int parse(const char *spec, method *m, rk_error *err)
{
    size_t at = 0, n;
    const char *w = word(spec, &at, &n);
    *m = (method){0};
    if (n == 3 && strncmp(w, "uri", 3) == 0) {
        m->uri = 1;
        return uri_options(spec, at, m, err);
    }
    if (n < 6 || strncmp(w, "hdr(", 4) != 0 || w[n - 1] != ')' || memchr(w + 4, ')', n - 5))
        return refuse(err, "has a balance that is not evaluated offline,", w, n);
    m->header = w + 4;
    m->header_len = n - 5;
    w = word(spec, &at, &n);
    if (n == 15 && strncmp(w, "use_domain_only", 15) == 0)
        return refuse(err,
                      "cannot be evaluated offline: HAProxy 2.6 starts its search for the last dot "
                      "one byte past the header's value (get_server_hh), whatever its buffer holds "
                      "there, so one Host goes to two servers by the request's layout:",
                      w, n);
    if (n)
        return refuse(err, "has an unknown hdr option", w, n);
    return spec[at] ? refuse(err, "has more words after", w, n) : RK_OK;
}

static int haproxy_check(const char *spec, rk_error *err)
{
    method m;
    if (strstr(spec, "  ") || spec[0] == ' ' || spec[strlen(spec) - 1] == ' ')
        return refuse(err, "must have its words one space apart, not", spec, strlen(spec));
    return parse(spec, &m, err);
}

/* get_server_uh: the target up to its '?' (all of it with `whole`), cut at `len` bytes and at
 * the (depth + 1)th '/'. */
static int uri_key(const method *m, const char *uri, rki_key *out)
{
    size_t n = strlen(uri), end = 0, slashes = 0;
    if (m->len && m->len < n)
        n = m->len;
    for (; end < n; end++) {
        if (uri[end] == '/' ? ++slashes == m->stop : uri[end] == '?' && !m->whole)
            break;
    }
    return rki_key_add(out, uri, end);
}

static int lws(char c)
{
    return c == ' ' || c == '\t';
}

/* http_find_header without its full flag: the first field of that name, its first value (up to a
 * ',' outside double quotes), without the spaces around it. */
static void first_value(const method *m, const rk_request *req, const char **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    for (size_t i = 0; i < req->n_headers; i++) {
        const char *name = req->headers[i].name;
        if (strlen(name) != m->header_len || strncasecmp(name, m->header, m->header_len) != 0)
            continue;
        const char *s = req->headers[i].value;
        while (lws(*s))
            s++;
        size_t k = 0;
        for (int quoted = 0, pair = 0; s[k] && (quoted || s[k] != ','); k++) {
            if (pair)
                pair = 0;
            else if (quoted)
                pair = s[k] == '\\', quoted = s[k] != '"';
            else
                quoted = s[k] == '"';
        }
        while (k && lws(s[k - 1]))
            k--;
        *v = s;
        *n = k;
        return;
    }
}

static int haproxy_eval(const char *spec, const rk_request *req, rki_key *out, rk_error *err)
{
    method m;
    if (parse(spec, &m, err))
        return RK_ETOPOLOGY;
    if (m.uri)
        return uri_key(&m, req->uri, out);
    const char *v;
    size_t n;
    first_value(&m, req, &v, &n);
    return n ? rki_key_add(out, v, n) : RK_OK;
}

const rki_request_keys rki_haproxy_request_keys = {
    .allowed = "HAProxy's balance is evaluated for uri [whole] [len N] [depth N] [path-only] and "
               "hdr(NAME)",
    .check = haproxy_check,
    .eval = haproxy_eval,
};
