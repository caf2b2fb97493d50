/* test_request_key.c — a balancer's key from a request (rk_request_key), case by case from
 * nginx's and HAProxy's sources: $uri's decoding and dot segments, $arg_/$cookie_/$http_ lookups,
 * joined headers, HAProxy's uri options and first header values; and the request_key field's
 * refusals. The real programs check the same on random requests (tests/balancers/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ringkeeper.h"

static rk_topology *topology(const char *scheme, const char *hash, const char *spec, rk_error *err)
{
    char doc[1024];
    snprintf(doc, sizeof doc,
             "{\"scheme\": \"%s\", \"hash\": \"%s\", \"request_key\": \"%s\", \"nodes\": "
             "[{\"id\": \"1\", \"addr\": \"127.0.0.1:1\", \"weight\": 1}]}",
             scheme, hash, spec);
    return rk_topology_parse(doc, strlen(doc), err);
}

typedef struct {
    const char *spec, *uri;
    const char *headers[4]; /* "Name: value" */
    const char *want;       /* NULL: refused (400) */
} req_case;

/* The key `c` gives, compared with c->want. */
static void check_case(const char *scheme, const char *hash, const req_case *c)
{
    rk_error err = {0};
    rk_topology *t = topology(scheme, hash, c->spec, &err);
    if (!t)
        fail_msg("%s: %s", c->spec, err.message);
    rk_header h[4];
    char names[4][64];
    size_t n = 0;
    for (; n < 4 && c->headers[n]; n++) {
        const char *colon = strchr(c->headers[n], ':');
        snprintf(names[n], sizeof names[n], "%.*s", (int)(colon - c->headers[n]), c->headers[n]);
        h[n] = (rk_header){names[n], colon + 1 + (colon[1] == ' ')};
    }
    rk_request req = {c->uri, h, n};
    char *key;
    size_t len;
    int rc = rk_request_key(t, &req, &key, &len, &err);
    if (!c->want) {
        if (rc != RK_EINVAL || strcmp(err.field, "uri") != 0)
            fail_msg("%s of %s: want 400, got %d", c->spec, c->uri, rc);
    } else if (rc != RK_OK || len != strlen(c->want) || memcmp(key, c->want, len) != 0) {
        fail_msg("%s of %s: want \"%s\", got %d \"%.*s\"", c->spec, c->uri, c->want, rc, (int)len,
                 rc == RK_OK ? key : "");
    }
    if (rc == RK_OK)
        free(key);
    rk_topology_free(t);
}

static void test_nginx(void **state)
{
    (void)state;
    static const req_case cases[] = {
        {"$request_uri", "/a//b/./c/../d%41?x=1&y=2", {NULL}, "/a//b/./c/../d%41?x=1&y=2"},
        {"$uri", "/a//b/./c/../d%41?x=1", {NULL}, "/a/b/dA"},
        {"$uri", "/a/%2e%2E/b", {NULL}, "/b"}, /* escaped dots are dots */
        {"$uri", "/a%2Fb/..", {NULL}, "/a/"},  /* an escaped slash is a slash */
        {"$uri", "/a%3Fb?c", {NULL}, "/a?b"},  /* an escaped '?' stays in the path */
        {"$uri", "/caf%C3%A9", {NULL}, "/caf\xC3\xA9"},
        {"$uri", "/a/...", {NULL}, "/a/..."},
        {"$uri", "/a/.", {NULL}, "/a/"},
        {"$uri", "/a/b/..", {NULL}, "/a/"},
        {"$uri", "/..", {NULL}, NULL},
        {"$uri", "/a%4", {NULL}, NULL},
        {"$uri", "/a%zz", {NULL}, NULL},
        {"$uri", "/a%00b", {NULL}, NULL},
        {"$uri",
         "/a%\x10"
         "0",
         {NULL},
         NULL},
        {"$arg_id", "/p?ID=7&id=8", {NULL}, "7"}, /* names in any case, the first one */
        {"$arg_id", "/p?xid=1&id=2", {NULL}, "2"},
        {"$arg_id", "/p?id", {NULL}, ""},
        {"$arg_id", "/p?a=1&id=", {NULL}, ""},
        {"$arg_id", "/p?id=3#frag", {NULL}, "3"},
        {"k-$arg_a-${arg_b}", "/p?a=1&b=2", {NULL}, "k-1-2"},
        {"$http_x_key", "/", {"X-Key: first", "x-key: second"}, "first"},
        {"$http_x_key", "/", {"X_Key: hidden", "X-Key: shown"}, "shown"},
        {"$http_x_forwarded_for", "/", {"X-Forwarded-For: a", "X-Forwarded-For: b, c"}, "a, b, c"},
        {"$http_cookie", "/", {"Cookie: a=1", "Cookie: b=2"}, "a=1; b=2"},
        {"$cookie_sid", "/", {"Cookie: x=1; SID = 42 ; y=2"}, "42 "},
        {"$cookie_sid", "/", {"Cookie: sid ;x=1, sid=9"}, "9"},
        {"$cookie_sid", "/", {"Cookie: a=1", "Cookie: sid=5"}, "5"},
        {"$cookie_sid", "/", {"Cookie: sidx=1"}, ""},
        {"$http_x_key", "/", {NULL}, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case("nginx", "crc32a", &cases[i]);
}

static void test_haproxy(void **state)
{
    (void)state;
    static const req_case cases[] = {
        {"uri", "/a/b?c=1", {NULL}, "/a/b"},
        {"uri whole", "/a/b?c=1", {NULL}, "/a/b?c=1"},
        {"uri path-only", "/a/b?c=1", {NULL}, "/a/b"},
        {"uri depth 1", "/a/b/c", {NULL}, "/a"},
        {"uri depth 2", "/a/b/c", {NULL}, "/a/b"},
        {"uri len 3", "/a/b/c", {NULL}, "/a/"},
        {"uri len 4 whole", "/a?bc", {NULL}, "/a?b"},
        {"uri", "/a%2Fb/../c", {NULL}, "/a%2Fb/../c"}, /* HAProxy hashes the target as sent */
        {"hdr(X-Key)", "/", {"x-key:  a , b", "X-Key: c"}, "a"},
        {"hdr(X-Key)", "/", {"X-Key: \"a,b\",c"}, "\"a,b\""},
        {"hdr(X-Key)", "/", {"X-Key: , b"}, ""},
        {"hdr(X-Key)", "/", {"X-Other: b"}, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case("haproxy", "sdbm", &cases[i]);
}

static void refused(const char *scheme, const char *hash, const char *spec, const char *says)
{
    rk_error err = {0};
    rk_topology *t = topology(scheme, hash, spec, &err);
    if (t || err.code != RK_ETOPOLOGY || strcmp(err.field, "request_key") != 0 ||
        !strstr(err.message, says))
        fail_msg("%s: %s (%s)", spec, t ? "accepted" : err.message, says);
    rk_topology_free(t);
}

static void test_refusals(void **state)
{
    (void)state;
    refused("nginx", "crc32a", "$remote_addr", "$remote_addr cannot be evaluated");
    refused("nginx", "crc32a", "$1", "regex capture $1");
    refused("nginx", "crc32a", "${uri", "invalid variable name");
    refused("nginx", "crc32a", "a$", "invalid variable name");
    refused("nginx", "crc32a", "$http_", "$http_ cannot be evaluated");
    refused("nginx", "crc32a", "$uri;", "without quotes");
    refused("nginx", "crc32a", "", "1..256 bytes");
    refused("haproxy", "sdbm", "source", "not evaluated offline");
    refused("haproxy", "sdbm", "url_param id", "not evaluated offline");
    refused("haproxy", "sdbm", "uri depth 0", "positive integer");
    refused("haproxy", "sdbm", "uri  whole", "one space apart");
    refused("haproxy", "sdbm", "hdr() x", "not evaluated offline");
    refused("haproxy", "sdbm", "hdr(x) y", "unknown hdr option");
    refused("haproxy", "sdbm", "hdr(Host) use_domain_only", "one byte past the header's value");
    refused("ketama", "md5", "$uri", "only the balancer schemes");
    /* a topology without request_key routes bare keys only */
    rk_error err = {0};
    const char *doc = "{\"scheme\": \"nginx\", \"hash\": \"crc32a\", \"nodes\": [{\"id\": \"1\", "
                      "\"addr\": \"a\", \"weight\": 1}]}";
    rk_topology *t = rk_topology_parse(doc, strlen(doc), &err);
    assert_non_null(t);
    rk_request req = {"/", NULL, 0};
    char *key;
    size_t len;
    assert_int_equal(rk_request_key(t, &req, &key, &len, &err), RK_EINVAL);
    assert_string_equal(err.field, "request_key");
    rk_topology_free(t);
}

/* Two versions that take keys differently are not comparable; one that does not say is. */
static void test_comparable(void **state)
{
    (void)state;
    rk_error err = {0};
    rk_topology *a = topology("nginx", "crc32a", "$uri", &err),
                *b = topology("nginx", "crc32a", "$request_uri", &err);
    const char *doc = "{\"scheme\": \"nginx\", \"hash\": \"crc32a\", \"nodes\": [{\"id\": \"1\", "
                      "\"addr\": \"127.0.0.1:1\", \"weight\": 1}]}";
    rk_topology *none = rk_topology_parse(doc, strlen(doc), &err);
    assert_int_equal(rk_topology_comparable(a, b, &err), RK_EHASHMISMATCH);
    assert_string_equal(err.field, "request_key");
    assert_int_equal(rk_topology_comparable(a, none, &err), RK_OK);
    /* the field survives a round trip through JSON */
    char *text = rk_topology_to_text(a);
    assert_non_null(strstr(text, "\"request_key\":\"$uri\""));
    free(text);
    rk_topology_free(a);
    rk_topology_free(b);
    rk_topology_free(none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nginx),
        cmocka_unit_test(test_haproxy),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_comparable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
