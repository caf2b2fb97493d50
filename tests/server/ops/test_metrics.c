/* test_metrics.c — ringkeeperd's metrics (server/ops/metrics.h): every metric in the exposition,
 * exact counts from concurrent threads, cumulative histograms, label escaping and series caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "metrics.h"
#include "ringkeeper.h"

#define THREADS    4
#define PER_THREAD 20000

static const char *const all_buckets[] = {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
                                          "0.05",   "0.1",   "0.25",   "0.5",   "1",    "2.5",
                                          "5",      "10",    "30",     "60",    "+Inf"};
#define N_LE (sizeof all_buckets / sizeof all_buckets[0])

static char *render_ok(rkd_metrics *m)
{
    char *text = rkd_metrics_render(m);
    assert_non_null(text);
    return text;
}

/* The value of the sample line that starts with `series` followed by a space; fails when absent. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    fail_msg("no sample %s in:\n%s", series, text);
    return -1;
}

/* Lines of `text` that start with `prefix`. */
static size_t count_lines(const char *text, const char *prefix)
{
    size_t n = 0, len = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += strncmp(p, prefix, len) == 0;
    return n;
}

static void assert_header(const char *text, const char *name, const char *type)
{
    char help[160], typeline[160];
    snprintf(help, sizeof help, "# HELP %s ", name);
    snprintf(typeline, sizeof typeline, "# TYPE %s %s\n", name, type);
    if (!strstr(text, help) || !strstr(text, typeline))
        fail_msg("no HELP/TYPE %s for %s in:\n%s", type, name, text);
}

static void test_every_metric(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    rkd_metrics_request(m, "GET", "/healthz", 200, 0.001);
    rkd_metrics_count(m, RKD_COUNT_PUBLISHES);
    rkd_metrics_count(m, RKD_COUNT_ACTIVATIONS);
    rkd_metrics_count(m, RKD_COUNT_ACTIVATIONS);
    rkd_metrics_count(m, RKD_COUNT_DB_ERRORS);
    rkd_metrics_active_version(m, "cache", 3);
    rkd_metrics_active_version(m, "cache", 4);
    rkd_metrics_active_version(m, "db", 1);
    rkd_metrics_waiting(m, +1);
    rkd_metrics_waiting(m, +1);
    rkd_metrics_waiting(m, -1);
    char *text = render_ok(m);
    assert_header(text, "ringkeeper_http_requests_total", "counter");
    assert_header(text, "ringkeeper_http_request_duration_seconds", "histogram");
    assert_header(text, "ringkeeper_publishes_total", "counter");
    assert_header(text, "ringkeeper_activations_total", "counter");
    assert_header(text, "ringkeeper_database_errors_total", "counter");
    assert_header(text, "ringkeeper_active_version", "gauge");
    assert_header(text, "ringkeeper_long_polls_waiting", "gauge");
    assert_true(
        sample(text,
               "ringkeeper_http_requests_total{method=\"GET\",route=\"/healthz\",code=\"200\"}") ==
        1);
    assert_true(sample(text, "ringkeeper_publishes_total") == 1);
    assert_true(sample(text, "ringkeeper_activations_total") == 2);
    assert_true(sample(text, "ringkeeper_database_errors_total") == 1);
    assert_true(sample(text, "ringkeeper_active_version{cluster=\"cache\"}") == 4);
    assert_true(sample(text, "ringkeeper_active_version{cluster=\"db\"}") == 1);
    assert_int_equal(count_lines(text, "ringkeeper_active_version{"), 2);
    assert_true(sample(text, "ringkeeper_long_polls_waiting") == 1);
    assert_int_equal(text[strlen(text) - 1], '\n');
    free(text);
    rkd_metrics_free(m);
}

static void test_empty_render(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    char *text = render_ok(m);
    assert_header(text, "ringkeeper_http_requests_total", "counter");
    assert_int_equal(count_lines(text, "ringkeeper_http_requests_total{"), 0);
    assert_true(sample(text, "ringkeeper_long_polls_waiting") == 0);
    free(text);
    rkd_metrics_free(m);
}

/* Each thread records PER_THREAD requests over two series and bumps a counter and the gauge. */
static void *record_many(void *arg)
{
    rkd_metrics *m = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        if (i % 2)
            rkd_metrics_request(m, "POST", "/v1/clusters/{c}/versions", 201, 0.003);
        else
            rkd_metrics_request(m, "GET", "/v1/clusters/{c}/ring", 304, 0.0002);
        if (i % 100 == 0)
            rkd_metrics_count(m, RKD_COUNT_PUBLISHES);
        rkd_metrics_waiting(m, +1);
        rkd_metrics_waiting(m, -1);
    }
    return NULL;
}

static void *render_many(void *arg)
{
    for (int i = 0; i < 50; i++)
        free(render_ok(arg));
    return NULL;
}

static void test_counts_from_threads(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    pthread_t t[THREADS + 1];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, record_many, m), 0);
    assert_int_equal(pthread_create(&t[THREADS], NULL, render_many, m), 0);
    for (int i = 0; i <= THREADS; i++)
        pthread_join(t[i], NULL);
    char *text = render_ok(m);
    double half = THREADS * PER_THREAD / 2;
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"POST\",route=\"/v1/"
                             "clusters/{c}/versions\",code=\"201\"}") == half);
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"GET\",route=\"/v1/"
                             "clusters/{c}/ring\",code=\"304\"}") == half);
    assert_true(sample(text, "ringkeeper_http_request_duration_seconds_count{route=\"/v1/"
                             "clusters/{c}/ring\"}") == half);
    assert_true(sample(text, "ringkeeper_publishes_total") == THREADS * PER_THREAD / 100);
    assert_true(sample(text, "ringkeeper_long_polls_waiting") == 0);
    free(text);
    rkd_metrics_free(m);
}

static void test_histogram_cumulative(void **state)
{
    (void)state;
    static const double seconds[] = {0.0001, 0.0005, 0.003, 0.003, 0.2, 7, 100, -1};
    static const double expect[N_LE] = {3, 3, 3, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 7, 8};
    size_t n = sizeof seconds / sizeof seconds[0];
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    for (size_t i = 0; i < n; i++)
        rkd_metrics_request(m, "GET", "/v1/clusters", 200, seconds[i]);
    rkd_metrics_request(m, "GET", "/healthz", 200, 0.02);
    char *text = render_ok(m);
    char series[160];
    for (size_t b = 0; b < N_LE; b++) {
        snprintf(
            series, sizeof series,
            "ringkeeper_http_request_duration_seconds_bucket{route=\"/v1/clusters\",le=\"%s\"}",
            all_buckets[b]);
        if (sample(text, series) != expect[b])
            fail_msg("%s: %g, expected %g", series, sample(text, series), expect[b]);
    }
    const char *count = "ringkeeper_http_request_duration_seconds_count{route=\"/v1/clusters\"}";
    const char *sum = "ringkeeper_http_request_duration_seconds_sum{route=\"/v1/clusters\"}";
    assert_true(sample(text, count) == (double)n);
    assert_float_equal(sample(text, sum), 0.0001 + 0.0005 + 0.006 + 0.2 + 107, 1e-9);
    assert_true(sample(text, "ringkeeper_http_request_duration_seconds_bucket{route=\"/healthz\","
                             "le=\"0.01\"}") == 0);
    assert_true(sample(text, "ringkeeper_http_request_duration_seconds_bucket{route=\"/healthz\","
                             "le=\"0.025\"}") == 1);
    free(text);
    rkd_metrics_free(m);
}

static void test_label_escaping(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    rkd_metrics_request(m, "GET", "/a\"b\\c\nd", 404, 0.001);
    rkd_metrics_active_version(m, "x\"y\\z\n", 2);
    char *text = render_ok(m);
    assert_true(sample(text,
                       "ringkeeper_http_requests_total{method=\"GET\",route=\"/a\\\"b\\\\c\\nd"
                       "\",code=\"404\"}") == 1);
    assert_true(sample(text, "ringkeeper_active_version{cluster=\"x\\\"y\\\\z\\n\"}") == 2);
    /* No raw newline inside a sample: every line starts with '#' or a metric name. */
    for (const char *p = text; *p; p = strchr(p, '\n') + 1)
        assert_true(*p == '#' || strncmp(p, "ringkeeper_", 11) == 0 ||
                    strncmp(p, "process_", 8) == 0);
    free(text);
    rkd_metrics_free(m);
}

static void test_unknown_method_and_long_route(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    char route[300];
    memset(route, 'r', sizeof route - 1);
    route[sizeof route - 1] = '\0';
    rkd_metrics_request(m, "BREW", "/pot", 405, 0.001);
    rkd_metrics_request(m, NULL, NULL, 400, 0.001);
    rkd_metrics_request(m, "GET", route, 404, 0.001);
    char *text = render_ok(m);
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"other\",route=\"/pot\","
                             "code=\"405\"}") == 1);
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"other\",route=\"other\","
                             "code=\"400\"}") == 1);
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"GET\",route=\"other\","
                             "code=\"404\"}") == 1);
    assert_null(strstr(text, "rrrrrrrr"));
    free(text);
    rkd_metrics_free(m);
}

/* 600 distinct routes: 512 request series, the rest in the "other" series; histograms keep 63
 * routes and "other"; nothing is lost from the totals. */
static void test_series_cap(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    char route[32];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 600; i++) {
            snprintf(route, sizeof route, "/r/%d", i);
            rkd_metrics_request(m, "GET", route, 200, 0.001);
        }
    }
    for (int i = 0; i < 5000; i++) {
        snprintf(route, sizeof route, "c%d", i);
        rkd_metrics_active_version(m, route, i + 1);
    }
    char *text = render_ok(m);
    assert_int_equal(count_lines(text, "ringkeeper_http_requests_total{"), 513);
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"GET\",route=\"/r/511\","
                             "code=\"200\"}") == 2);
    assert_true(sample(text, "ringkeeper_http_requests_total{method=\"other\",route=\"other\","
                             "code=\"other\"}") == 2 * 88);
    assert_int_equal(count_lines(text, "ringkeeper_http_request_duration_seconds_count{"), 64);
    assert_true(sample(text, "ringkeeper_http_request_duration_seconds_count{route=\"other\"}") ==
                2 * (600 - 63));
    assert_int_equal(count_lines(text, "ringkeeper_active_version{"), 4096);
    free(text);
    rkd_metrics_free(m);
}

/* A migration job's series: one per key kind, the bytes, and a 1 for its state among 0s; an
 * unknown state is not recorded; a cluster known by its job alone has no active version line. */
static void test_migration_job(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    const uint64_t keys[RKD_JOB_KINDS] = {100, 40, 3, 1, 2, 5};
    rkd_metrics_migration(m, "mc", "copying", keys, 4096);
    rkd_metrics_migration(m, "mc", "paused", keys, 8192);
    rkd_metrics_migration(m, "other", "bogus", keys, 1);
    char *text = render_ok(m);
    assert_true(sample(text, "ringkeeper_migration_keys_total{cluster=\"mc\",kind=\"copied\"}") ==
                40);
    assert_true(sample(text, "ringkeeper_migration_keys_total{cluster=\"mc\",kind=\"expired\"}") ==
                5);
    assert_true(sample(text, "ringkeeper_migration_bytes_total{cluster=\"mc\"}") == 8192);
    assert_true(sample(text, "ringkeeper_migration_state{cluster=\"mc\",state=\"paused\"}") == 1);
    assert_true(sample(text, "ringkeeper_migration_state{cluster=\"mc\",state=\"copying\"}") == 0);
    assert_int_equal(count_lines(text, "ringkeeper_migration_state{"), 7);
    assert_int_equal(count_lines(text, "ringkeeper_migration_keys_total{"), RKD_JOB_KINDS);
    assert_int_equal(count_lines(text, "ringkeeper_active_version{"), 0);
    free(text);
    rkd_metrics_free(m);
}

/* NULL stands for "no metrics" (the API runs without them): every call takes it and records
 * nothing anywhere, so a live set of metrics renders the same before and after. */
/* `text` without the process_* families, which change between two renders (RSS, open fds). */
static void drop_process_lines(char *text)
{
    char *out = text;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        int process = strncmp(line, "process_", 8) == 0 ||
                      strncmp(line, "# HELP process_", 15) == 0 ||
                      strncmp(line, "# TYPE process_", 15) == 0;
        if (!process) {
            memmove(out, line, len);
            out += len;
        }
        line += len;
    }
    *out = '\0';
}

static void test_null_metrics(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    rkd_metrics_request(m, "GET", "/healthz", 200, 0.1);
    rkd_metrics_active_version(m, "c", 1);
    char *before = render_ok(m);
    rkd_metrics_request(NULL, "GET", "/healthz", 200, 0.1);
    rkd_metrics_count(NULL, RKD_COUNT_PUBLISHES);
    rkd_metrics_active_version(NULL, "c", 2);
    rkd_metrics_waiting(NULL, 1);
    rkd_metrics_free(NULL);
    char *after = render_ok(m);
    drop_process_lines(before);
    drop_process_lines(after);
    assert_string_equal(after, before);
    assert_true(sample(after, "ringkeeper_long_polls_waiting") == 0);
    free(after);
    free(before);
    rkd_metrics_free(m);
}

/* build_info carries the library's version; the process metrics are this process's, from /proc. */
static void test_build_and_process(void **state)
{
    (void)state;
    rkd_metrics *m = rkd_metrics_new();
    assert_non_null(m);
    char *text = render_ok(m);
    char build[64];
    snprintf(build, sizeof build, "ringkeeper_build_info{version=\"%s\"}", rk_version());
    assert_true(sample(text, build) == 1);
    assert_header(text, "ringkeeper_build_info", "gauge");
    double rss = sample(text, "process_resident_memory_bytes");
    assert_true(rss > 1e5 && rss < 1e10);
    int fd = dup(1); /* one more open descriptor shows in the next render */
    double fds = sample(text, "process_open_fds");
    char *again = render_ok(m);
    assert_true(fds >= 3 && sample(again, "process_open_fds") == fds + 1);
    close(fd);
    double start = sample(text, "process_start_time_seconds"), now = (double)time(NULL);
    assert_true(start > now - 600 && start <= now + 1);
    free(again);
    free(text);
    rkd_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_metric),
        cmocka_unit_test(test_empty_render),
        cmocka_unit_test(test_counts_from_threads),
        cmocka_unit_test(test_histogram_cumulative),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_unknown_method_and_long_route),
        cmocka_unit_test(test_series_cap),
        cmocka_unit_test(test_migration_job),
        cmocka_unit_test(test_null_metrics),
        cmocka_unit_test(test_build_and_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
