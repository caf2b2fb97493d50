/* test_origin.c — the browser rules of server/http/http_origin.c, header by header: the JSON body,
 * the write's Origin, the browser's Host, the CORS allow list and the flags' lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http_origin.h"

static const rkd_origin_rules none = {NULL, NULL};
static const rkd_origin_rules configured = {"https://console.example.com, http://10.0.0.9:8080",
                                            "rk.example.com,Ring.Internal"};

/* The refusal's code for `r` under `rules`, or -1 when it passes. */
static int verdict(const rkd_origin_rules *rules, rkd_origin_request r)
{
    rkd_origin_refusal out;
    if (!r.method)
        r.method = "POST";
    return rkd_origin_check(rules, &r, &out) == 0 ? -1 : (int)out.code;
}

static void test_body_is_json(void **state)
{
    (void)state;
    const char *host = "127.0.0.1:7070";
    assert_int_equal(verdict(&none, (rkd_origin_request){.host = host,
                                                         .has_body = 1,
                                                         .content_type = "application/json"}),
                     -1);
    assert_int_equal(verdict(&none, (rkd_origin_request){.host = host,
                                                         .has_body = 1,
                                                         .content_type = "Application/JSON; "
                                                                         "charset=utf-8"}),
                     -1);
    const char *refused[] = {"text/plain",
                             "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x",
                             "application/jsonp",
                             "application/json-seq",
                             ""};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_int_equal(
            verdict(&none,
                    (rkd_origin_request){.host = host, .has_body = 1, .content_type = refused[i]}),
            RKD_E_UNSUPPORTED_MEDIA_TYPE);
    assert_int_equal(verdict(&none, (rkd_origin_request){.host = host, .has_body = 1}),
                     RKD_E_UNSUPPORTED_MEDIA_TYPE);
    /* no body (an activation), and reads, need no type */
    assert_int_equal(verdict(&none, (rkd_origin_request){.host = host}), -1);
    assert_int_equal(verdict(&none, (rkd_origin_request){.method = "GET",
                                                         .host = host,
                                                         .has_body = 1,
                                                         .content_type = "text/plain"}),
                     -1);
}

static void test_write_origin(void **state)
{
    (void)state;
    const char *host = "127.0.0.1:7070";
    /* the console's own origin, with either scheme (a TLS proxy in front) */
    assert_int_equal(
        verdict(&none, (rkd_origin_request){.host = host, .origin = "http://127.0.0.1:7070"}), -1);
    assert_int_equal(
        verdict(&none, (rkd_origin_request){.host = host, .origin = "https://127.0.0.1:7070"}), -1);
    const char *foreign[] = {"https://evil.example",
                             "http://127.0.0.1:7071",
                             "null",
                             "http://127.0.0.1:7070.evil.example",
                             "file://",
                             "127.0.0.1:7070"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        assert_int_equal(verdict(&none, (rkd_origin_request){.host = host, .origin = foreign[i]}),
                         RKD_E_CROSS_ORIGIN);
    /* an allowed origin, exactly as listed (case aside) */
    assert_int_equal(
        verdict(&configured,
                (rkd_origin_request){.host = host, .origin = "https://Console.example.com"}),
        -1);
    assert_int_equal(
        verdict(&configured, (rkd_origin_request){.host = host, .origin = "http://10.0.0.9:8080"}),
        -1);
    assert_int_equal(
        verdict(&configured,
                (rkd_origin_request){.host = host, .origin = "https://console.example.co"}),
        RKD_E_CROSS_ORIGIN);
    assert_int_equal(verdict(&configured, (rkd_origin_request){.host = host, .origin = "null"}),
                     RKD_E_CROSS_ORIGIN);
    /* reads with a foreign Origin: the browser keeps the answer from the page (no CORS) */
    assert_int_equal(verdict(&none, (rkd_origin_request){.method = "GET",
                                                         .host = host,
                                                         .origin = "https://evil.example"}),
                     -1);
}

static void test_browser_host(void **state)
{
    (void)state;
    const char *ok[] = {"127.0.0.1:7070", "10.1.2.3",  "[::1]:7070",         "[2001:db8::1]",
                        "localhost:7070", "LOCALHOST", "rk.example.com:443", "ring.internal"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_int_equal(verdict(&configured, (rkd_origin_request){.method = "GET",
                                                                   .host = ok[i],
                                                                   .fetch_site = "same-origin"}),
                         -1);
    const char *rebound[] = {"rebind.evil.example:7070",
                             "rk.example.com.evil.example",
                             "[::1",
                             "[nope]:1",
                             "127.0.0.1.nip.io",
                             ":7070",
                             ""};
    for (size_t i = 0; i < sizeof rebound / sizeof rebound[0]; i++) {
        char origin[128];
        snprintf(origin, sizeof origin, "http://%s", rebound[i]);
        assert_int_equal(
            verdict(&configured, (rkd_origin_request){.host = rebound[i], .origin = origin}),
            RKD_E_UNKNOWN_HOST);
    }
    assert_int_equal(verdict(&none, (rkd_origin_request){.origin = "http://x"}),
                     RKD_E_UNKNOWN_HOST);
    /* a program (no Origin, no Sec-Fetch-Site) may call the server by any name */
    assert_int_equal(verdict(&none, (rkd_origin_request){.host = "rk.corp:7070"}), -1);
}

static void test_allowed(void **state)
{
    (void)state;
    assert_true(rkd_origin_allowed(&configured, "https://console.example.com"));
    assert_false(rkd_origin_allowed(&configured, "https://console.example.com/"));
    assert_false(rkd_origin_allowed(&configured, NULL));
    assert_false(rkd_origin_allowed(&none, "https://console.example.com"));
}

static void test_lists(void **state)
{
    (void)state;
    char why[200];
    assert_int_equal(rkd_origin_list_check(NULL, 'o', why, sizeof why), 0);
    assert_int_equal(rkd_origin_list_check(configured.allow_origins, 'o', why, sizeof why), 0);
    assert_int_equal(rkd_origin_list_check("https://[::1]:8443", 'o', why, sizeof why), 0);
    assert_int_equal(rkd_origin_list_check(configured.public_names, 'n', why, sizeof why), 0);
    const char *bad_origins[] = {"console.example.com", "https://c.example/ui", "https://",
                                 "https://a,,https://b", "ftp://x"};
    for (size_t i = 0; i < sizeof bad_origins / sizeof bad_origins[0]; i++)
        assert_int_equal(rkd_origin_list_check(bad_origins[i], 'o', why, sizeof why), -1);
    assert_non_null(strstr(why, "is not an origin"));
    assert_int_equal(rkd_origin_list_check("rk.example.com:7070", 'n', why, sizeof why), -1);
    assert_int_equal(rkd_origin_list_check("a b", 'n', why, sizeof why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_is_json), cmocka_unit_test(test_write_origin),
        cmocka_unit_test(test_browser_host), cmocka_unit_test(test_allowed),
        cmocka_unit_test(test_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
