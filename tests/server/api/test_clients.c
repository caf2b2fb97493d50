/* test_clients.c — the server's table of RK-Client ids (server/api/clients.c) on its own:
 * stragglers first, the caps and which id goes past them, ids outside the rule, and the memory it
 * holds at the default cap with the longest ids and user agents (printed, with the cost of a
 * listing). */
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

#define PER_ID_MAX_BYTES 620 /* a tracked id with the longest id and agent, all included */

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

/* A ring request of `id` holding `held`, answered (sent or confirmed) with it. */
static void seen(rkd_clients *t, const char *cluster, const char *id, int64_t held,
                 const char *addr, const char *agent)
{
    rkd_client_report r = {.id = id, .held = held, .offered = held, .addr = addr, .agent = agent};
    rkd_clients_seen(t, cluster, &r);
}

static json_int_t summary_int(json_t *doc, const char *key)
{
    return json_integer_value(json_object_get(summary(doc), key));
}

/* The count of `version` in the summary's table `table` (by_version, offered_by_version ...). */
static json_int_t count_of(json_t *doc, const char *table, const char *version)
{
    return json_integer_value(json_object_get(json_object_get(summary(doc), table), version));
}

/* The client listed in `doc` with `id`, or NULL. */
static json_t *listed(json_t *doc, const char *id)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "clients"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "id")), id) == 0)
            return c;
    }
    return NULL;
}

/* SPEC 9, "Clients": a client is counted on what its own latest request says it holds, never on
 * what it was sent; a refusal is shown with its reason and never counted as held. */
static void test_held_not_sent(void **state)
{
    (void)state;
    rkd_clients *t = rkd_clients_new(NULL);
    assert_non_null(t);
    rkd_client_report sent = {.id = "dead", .held = 3, .offered = 4};
    rkd_clients_seen(t, "a", &sent); /* answered v4, then killed before its next request */
    sent.id = "good";
    rkd_clients_seen(t, "a", &sent);
    rkd_client_report now = {.id = "good", .held = 4, .offered = 4};
    rkd_clients_seen(t, "a", &now); /* its next poll holds v4 */
    rkd_client_report refusing = {.id = "picky", .held = 3, .offered = 4};
    rkd_clients_seen(t, "a", &refusing);
    refusing.refused = 4;
    refusing.reason = "vnode_factor: the server's ring has vnode_factor 200\n but expects 160";
    rkd_clients_seen(t, "a", &refusing);
    refusing.offered = 0; /* held poll: keeps what it was last offered */
    rkd_clients_seen(t, "a", &refusing);
    rkd_client_report first = {.id = "fresh", .offered = 4}; /* a first fetch holds nothing */
    rkd_clients_seen(t, "a", &first);

    json_t *doc = rkd_clients_json(t, "a", 4, 10);
    assert_int_equal(count_of(doc, "by_version", "3"), 2);
    assert_int_equal(count_of(doc, "by_version", "4"), 1);
    assert_int_equal(summary_int(doc, "none"), 1);
    assert_int_equal(summary_int(doc, "refusing"), 1);
    assert_int_equal(count_of(doc, "offered_by_version", "4"), 4);
    assert_int_equal(count_of(doc, "refusing_by_version", "4"), 1);
    assert_false(json_is_true(json_object_get(summary(doc), "converged")));
    json_t *p = listed(doc, "picky");
    assert_int_equal(json_integer_value(json_object_get(p, "held")), 3);
    assert_int_equal(json_integer_value(json_object_get(p, "offered")), 4);
    assert_int_equal(json_integer_value(json_object_get(p, "refused")), 4);
    assert_string_equal(json_string_value(json_object_get(p, "reason")),
                        "vnode_factor: the server's ring has vnode_factor 200? but expects 160");
    assert_true(json_is_null(json_object_get(listed(doc, "fresh"), "held")));
    assert_true(json_is_null(json_object_get(listed(doc, "good"), "refused")));
    json_decref(doc);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    rkd_clients_metrics(t, f);
    fclose(f);
    assert_non_null(strstr(text, "ringkeeper_clients_refusing{cluster=\"a\",version=\"4\"} 1\n"));
    assert_non_null(strstr(text, "ringkeeper_clients{cluster=\"a\",version=\"none\"} 1\n"));
    assert_non_null(strstr(text, "ringkeeper_clients{cluster=\"a\",version=\"3\"} 2\n"));
    free(text);

    /* the refuser accepts v5; the dead one and the fresh one go quiet: converged needs them gone */
    rkd_client_report healed = {.id = "picky", .held = 5, .offered = 5};
    rkd_clients_seen(t, "a", &healed);
    doc = rkd_clients_json(t, "a", 5, 10);
    assert_int_equal(summary_int(doc, "refusing"), 0);
    assert_true(json_is_null(json_object_get(listed(doc, "picky"), "reason")));
    assert_false(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);
    rkd_clients_free(t);

    t = rkd_clients_new(NULL);
    rkd_clients_seen(t, "a", &healed);
    doc = rkd_clients_json(t, "a", 5, 10);
    assert_true(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);
    rkd_clients_free(t);
}

static void test_order_and_caps(void **state)
{
    (void)state;
    char ids[256];
    rkd_clients *t = rkd_clients_new(&(rkd_clients_limits){5, 3, 180, 0});
    assert_non_null(t);
    seen(t, "a", "x", 2, "127.0.0.1", "agent");
    seen(t, "a", "y", 1, NULL, NULL);
    seen(t, "a", "z", 2, NULL, NULL);
    json_t *doc = rkd_clients_json(t, "a", 2, 10);
    ids_of(doc, ids, sizeof ids);
    assert_string_equal(ids, "y x z "); /* the lowest version, then the one seen longest ago */
    assert_false(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);

    seen(t, "a", "x", 2, NULL, NULL); /* seen again: now the newest */
    seen(t, "a", "w", 2, NULL, NULL); /* the cluster's cap: y, seen longest ago, goes */
    doc = rkd_clients_json(t, "a", 2, 2);
    ids_of(doc, ids, sizeof ids);
    assert_string_equal(ids, "z x "); /* limit 2 of the 3 ... */
    assert_int_equal(json_integer_value(json_object_get(summary(doc), "total")), 3); /* all */
    assert_true(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);

    seen(t, "b", "p", 7, NULL, NULL);
    seen(t, "b", "q", 7, NULL, NULL);
    seen(t, "b", "r", 7, NULL, NULL); /* the total cap (5): z, the oldest of all */
    doc = rkd_clients_json(t, "a", 2, 10);
    ids_of(doc, ids, sizeof ids);
    assert_string_equal(ids, "x w ");
    json_decref(doc);
    rkd_clients_free(t);
}

/* The summary's counts, kept as ids change (clients.c), against a count of the full listing:
 * random reports of 400 ids over two clusters through caps (so ids are dropped), with a few
 * versions and, for some ids, one of their own (a row each, made and removed). */
static void check_counts(rkd_clients *t, const char *cluster)
{
    static const char *tables[] = {"by_version", "offered_by_version", "refusing_by_version"};
    static const char *fields[] = {"held", "offered", "refused"};
    json_t *doc = rkd_clients_json(t, cluster, 3, 1000), *c;
    size_t i, total = 0;
    for (int k = 0; k < 3; k++) {
        json_t *counted = json_object();
        json_array_foreach(json_object_get(doc, "clients"), i, c)
        {
            json_int_t version = json_integer_value(json_object_get(c, fields[k]));
            char name[24];
            snprintf(name, sizeof name, "%lld", (long long)version);
            json_t *n = json_object_get(counted, name);
            if (version > 0)
                json_object_set_new(counted, name, json_integer(json_integer_value(n) + 1));
            total += k == 0;
        }
        assert_true(json_equal(counted, json_object_get(summary(doc), tables[k])));
        json_decref(counted);
    }
    assert_int_equal(summary_int(doc, "total"), total);
    json_decref(doc);
}

static void test_counts(void **state)
{
    (void)state;
    char id[32];
    rkd_clients *t = rkd_clients_new(&(rkd_clients_limits){250, 150, 180, 0});
    assert_non_null(t);
    srand(7);
    for (int round = 1; round <= 4000; round++) {
        int n = rand() % 400, own = n % 10 == 0;
        int64_t held = own ? 100 + rand() % 1000 : rand() % 5, refused = rand() % 7 == 0 ? 4 : 0;
        snprintf(id, sizeof id, "id-%d", n);
        rkd_client_report r = {.id = id,
                               .held = held,
                               .offered = rand() % 2 ? held : 0,
                               .refused = refused,
                               .reason = refused ? "no" : NULL};
        rkd_clients_seen(t, n % 3 ? "a" : "b", &r);
        if (round % 250 == 0) {
            check_counts(t, "a");
            check_counts(t, "b");
        }
    }
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
        seen(t, "a", bad[i], 1, NULL, NULL);
    long_id[RK_CLIENT_ID_MAX] = '\0';
    seen(t, "a", long_id, 1, NULL, "ag\x1bnt\n");
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
        seen(t, i % 2 ? "odd" : "even", id, 1 + i % 7, "2001:db8::1234:5678", agent);
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
        seen(t, i % 2 ? "a" : "b", id, 1 + i % 3, "127.0.0.1", "hammer");
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
    rkd_clients *t = rkd_clients_new(&(rkd_clients_limits){150, 100, 180, 0});
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

/* An id is bound to the client token that registered it (SPEC section 9): another token naming it
 * changes nothing and is told so; without tokens nothing is bound. */
static void test_bound_to_token(void **state)
{
    (void)state;
    rkd_clients *t = rkd_clients_new(NULL);
    assert_non_null(t);
    rkd_client_report mine = {.id = "web-1", .held = 1, .offered = 1, .token = "web1"};
    rkd_client_report forged = {.id = "web-1", .held = 2, .offered = 2, .token = "web2"};
    assert_int_equal(rkd_clients_seen(t, "a", &mine), 1);
    assert_int_equal(rkd_clients_seen(t, "a", &forged), RKD_CLIENTS_FOREIGN);
    json_t *doc = rkd_clients_json(t, "a", 2, 10);
    assert_int_equal(json_integer_value(json_object_get(listed(doc, "web-1"), "held")), 1);
    assert_string_equal(json_string_value(json_object_get(listed(doc, "web-1"), "token")), "web1");
    assert_false(json_is_true(json_object_get(summary(doc), "converged")));
    json_decref(doc);
    mine.held = 2;
    assert_int_equal(rkd_clients_seen(t, "a", &mine), 1); /* its own token still speaks */
    rkd_client_report anonymous = {.id = "web-3", .held = 1};
    assert_int_equal(rkd_clients_seen(t, "a", &anonymous), 1);
    anonymous.held = 2;
    assert_int_equal(rkd_clients_seen(t, "a", &anonymous), 1); /* no token: nothing bound */
    rkd_clients_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_caps), cmocka_unit_test(test_held_not_sent),
        cmocka_unit_test(test_invalid_ids),    cmocka_unit_test(test_memory_at_cap),
        cmocka_unit_test(test_threads),        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_bound_to_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
