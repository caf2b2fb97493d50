/* test_clients.c — the server's table of RK-Client ids (server/clients.c) on its own: stragglers
 * first, the caps and which id goes past them, ids outside the rule, and the memory it holds at the
 * default cap with the longest ids and user agents (printed, with the cost of a listing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <malloc.h>
#include <pthread.h>

#include "clients.h"

#define PER_ID_MAX_BYTES 600 /* a tracked id with the longest id and agent, all included */

/* The ids listed in `doc`, space-separated, into out. */
static void ids_of(const json_t *doc, char *out, size_t size)
{
    size_t i, n = 0;
    json_t *c;
    out[0] = '\0';
    json_array_foreach(json_object_get(doc, "clients"), i, c)
    {
        n +=
            (size_t)snprintf(out + n, size - n, "%s ", json_string_value(json_object_get(c, "id")));
    }
}

static json_t *summary(json_t *doc)
{
    return json_object_get(doc, "summary");
}

static void test_order_and_caps(void **state)
{
    (void)state;
    char ids[256];
    rkd_clients *t = rkd_clients_new(&(rkd_clients_limits){5, 3, 180});
    assert_non_null(t);
    rkd_clients_seen(t, "a", "x", 2, "127.0.0.1", "agent");
    rkd_clients_seen(t, "a", "y", 1, NULL, NULL);
    rkd_clients_seen(t, "a", "z", 2, NULL, NULL);
    json_t *doc = rkd_clients_json(t, "a", 2, 10);
    ids_of(doc, ids, sizeof ids);
    assert_string_equal(ids, "y x z "); /* the lowest version, then the one seen longest ago */
    assert_false(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);

    rkd_clients_seen(t, "a", "x", 2, NULL, NULL); /* seen again: now the newest */
    rkd_clients_seen(t, "a", "w", 2, NULL, NULL); /* the cluster's cap: y, seen longest ago, goes */
    doc = rkd_clients_json(t, "a", 2, 2);
    ids_of(doc, ids, sizeof ids);
    assert_string_equal(ids, "z x "); /* limit 2 of the 3 ... */
    assert_int_equal(json_integer_value(json_object_get(summary(doc), "total")), 3); /* all */
    assert_true(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);

    rkd_clients_seen(t, "b", "p", 7, NULL, NULL);
    rkd_clients_seen(t, "b", "q", 7, NULL, NULL);
    rkd_clients_seen(t, "b", "r", 7, NULL, NULL); /* the total cap (5): z, the oldest of all */
    doc = rkd_clients_json(t, "a", 2, 10);
    ids_of(doc, ids, sizeof ids);
    assert_string_equal(ids, "x w ");
    json_decref(doc);
    rkd_clients_free(t);
}

/* Ids outside 1..RK_CLIENT_ID_MAX bytes of 0x21..0x7e are not tracked. */
static void test_invalid_ids(void **state)
{
    (void)state;
    char long_id[RK_CLIENT_ID_MAX + 2];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    const char *const bad[] = {"", "a b", "tab\t", "del\x7f", "caf\xc3\xa9", long_id, NULL};
    rkd_clients *t = rkd_clients_new(NULL);
    assert_non_null(t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        rkd_clients_seen(t, "a", bad[i], 1, NULL, NULL);
    long_id[RK_CLIENT_ID_MAX] = '\0';
    rkd_clients_seen(t, "a", long_id, 1, NULL, "ag\x1bnt\n");
    json_t *doc = rkd_clients_json(t, "a", 1, 10);
    json_t *only = json_array_get(json_object_get(doc, "clients"), 0);
    assert_int_equal(json_integer_value(json_object_get(summary(doc), "total")), 1);
    assert_string_equal(json_string_value(json_object_get(only, "id")), long_id);
    assert_string_equal(json_string_value(json_object_get(only, "user_agent")), "ag?nt?");
    json_decref(doc);
    rkd_clients_free(t);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* At the default caps, with the longest ids and agents: the memory per id is bounded, and the cost
 * of the listing and of the gauges at a full cluster is printed (docs/RELIABILITY.md). */
static void test_memory_at_cap(void **state)
{
    (void)state;
    char id[RK_CLIENT_ID_MAX + 1], agent[RKD_CLIENTS_AGENT_MAX + 1];
    memset(agent, 'u', sizeof agent - 1);
    agent[sizeof agent - 1] = '\0';
    size_t before = mallinfo2().uordblks;
    rkd_clients *t = rkd_clients_new(NULL);
    assert_non_null(t);
    for (long i = 0; i < RKD_CLIENTS_MAX_TOTAL + RKD_CLIENTS_MAX_PER_CLUSTER; i++) {
        snprintf(id, sizeof id, "%0*ld", RK_CLIENT_ID_MAX, i);
        rkd_clients_seen(t, i % 2 ? "odd" : "even", id, 1 + i % 7, "2001:db8::1234:5678", agent);
    }
    size_t used = mallinfo2().uordblks - before;
    double t0 = now_ms();
    json_t *doc = rkd_clients_json(t, "even", 7, RKD_CLIENTS_LIST_MAX);
    double list_ms = now_ms() - t0;
    assert_int_equal(json_integer_value(json_object_get(summary(doc), "total")),
                     RKD_CLIENTS_MAX_PER_CLUSTER);
    json_decref(doc);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    t0 = now_ms();
    rkd_clients_metrics(t, f);
    double metrics_ms = now_ms() - t0;
    fclose(f);
    free(text);
    printf("# %d ids at the cap, %d-byte ids and agents: %zu bytes, %zu per id; listing a full "
           "cluster (%d, limit %d) %.1f ms; the gauges %.1f ms\n",
           RKD_CLIENTS_MAX_TOTAL, RK_CLIENT_ID_MAX, used, used / RKD_CLIENTS_MAX_TOTAL,
           RKD_CLIENTS_MAX_PER_CLUSTER, RKD_CLIENTS_LIST_MAX, list_ms, metrics_ms);
    assert_true(used / RKD_CLIENTS_MAX_TOTAL <= PER_ID_MAX_BYTES);
    rkd_clients_free(t);
}

/* Recorders and readers at once (ring requests on libmicrohttpd's threads, listings on the pool, a
 * scrape of /metrics): run under ThreadSanitizer by .ci/extra-checks.sh. */
#define THREADS 4
#define ROUNDS  2000

static void *hammer(void *arg)
{
    rkd_clients *t = ((void **)arg)[0];
    long me = (long)(intptr_t)((void **)arg)[1];
    char id[32], *text = NULL;
    size_t len = 0;
    for (long i = 0; i < ROUNDS; i++) {
        snprintf(id, sizeof id, "t%ld-%ld", me, i % 50);
        rkd_clients_seen(t, i % 2 ? "a" : "b", id, 1 + i % 3, "127.0.0.1", "hammer");
        if (i % 100 == 0)
            json_decref(rkd_clients_json(t, "a", 3, 10));
        if (i % 500 == 0) {
            FILE *f = open_memstream(&text, &len);
            rkd_clients_metrics(t, f);
            fclose(f);
            free(text);
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    void *args[THREADS][2];
    rkd_clients *t = rkd_clients_new(&(rkd_clients_limits){150, 100, 180});
    assert_non_null(t);
    for (long i = 0; i < THREADS; i++) {
        args[i][0] = t;
        args[i][1] = (void *)(intptr_t)i;
        assert_int_equal(pthread_create(&th[i], NULL, hammer, args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    json_t *a = rkd_clients_json(t, "a", 3, 1), *b = rkd_clients_json(t, "b", 3, 1);
    json_int_t total = json_integer_value(json_object_get(summary(a), "total")) +
                       json_integer_value(json_object_get(summary(b), "total"));
    assert_int_equal(total, 150); /* 200 ids went through a table of 150 */
    json_decref(a);
    json_decref(b);
    rkd_clients_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_caps),
        cmocka_unit_test(test_invalid_ids),
        cmocka_unit_test(test_memory_at_cap),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
