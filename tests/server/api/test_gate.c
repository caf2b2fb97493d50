/* test_gate.c — an activation's gate when the active version moves between the store's tries
 * (api_cutover.c, rkd_gate_again). The rings of the budget's plan are fetched outside the store's
 * transaction, so another activation can commit in between: the gate then asks for the new active
 * version's ring and tries again, and after three tries answers 409, changing nothing. The fetch,
 * rkd_ring_entry, is wrapped (-Wl,--wrap) so that another activation commits right after it, every
 * time or once: no timing of real requests lands there reliably. A publish that activates is
 * checked against the ring the store built for it, and under a budget leaves that ring in the
 * cache for the next one's plan (counted fetches). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmpdir.h"
#include <jansson.h>

#include "api_harness.h"
#include "gate.h"
#include "rings.h"

/* The other operator: the versions it activates, one per fetch of a ring other than the target's
 * (a publish's target is 0: it has no ring to fetch). */
typedef struct other_operator {
    rkd_app *app;
    int64_t target; /* the version whose activation is raced */
    int64_t next;   /* the next version the other operator activates ... */
    int64_t last;   /* ... up to this one */
    int inside;     /* in the other operator's own activation (its gate fetches too) */
    int fetches;    /* the raced request's fetches */
} other_operator;

static other_operator other;

rkd_entry *__real_rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err);

rkd_entry *__wrap_rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err)
{
    rkd_entry *e = __real_rkd_ring_entry(c, v, rc, err);
    other.fetches += !other.inside;
    if (other.inside || v == other.target || other.next == 0 || other.next > other.last)
        return e;
    other.inside = 1;
    json_decref(activate(other.app, "g", other.next++, NULL, 200));
    other.inside = 0;
    return e;
}

static void policy(rkd_app *app, const char *body)
{
    json_decref(expect_json(run(app, "PUT", "/v1/clusters/g/policy", NULL, NULL, body, 0), 200));
}

/* Cluster g: versions 1..5 of 2..6 nodes, version 1 active, a budget that every plan here meets;
 * the app is opened again on the store, as a restarted server, so that no ring is cached (each
 * publish leaves its ring in the cache of the app that made it). */
static rkd_app *setup(const char *name, rkd_store **store)
{
    rkd_app *app = app_open(tmpdir, name, store, NULL);
    for (size_t n = 2; n <= 6; n++)
        publish(app, "g", n, NULL);
    json_decref(activate(app, "g", 1, NULL, 200));
    policy(app, "{\"max_moved_fraction\":0.99}");
    app_close(app, *store);
    return app_open(tmpdir, name, store, NULL);
}

/* The newest event of g (a new reference). */
static json_t *newest_event(rkd_app *app)
{
    json_t *doc = expect_json(get(app, "/v1/clusters/g/events", "limit=1", NULL), 200);
    json_t *e = json_incref(json_array_get(json_object_get(doc, "events"), 0));
    json_decref(doc);
    assert_non_null(e);
    return e;
}

/* Event `e` (taken) is the activation of `to` over `from`, with the plan's moved_fraction. */
static void expect_event_moved(rkd_app *app, json_t *e, int64_t from, int64_t to)
{
    char query[64];
    snprintf(query, sizeof query, "from=%lld&to=%lld", (long long)from, (long long)to);
    json_t *plan = expect_json(get(app, "/v1/clusters/g/plan", query, NULL), 200);
    double want = json_real_value(json_object_get(plan, "moved_fraction"));
    assert_int_equal(int_at(e, "version"), to);
    assert_int_equal(int_at(e, "from_version"), from);
    assert_true(want > 0 && want < 0.99);
    assert_true(json_real_value(json_object_get(e, "moved_fraction")) == want);
    json_decref(plan);
    json_decref(e);
}

static void test_three_tries(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = setup("three", &store);
    char s[32];
    other = (other_operator){.app = app, .target = 5, .next = 2, .last = 4};
    rkd_response r = run(app, "POST", "/v1/clusters/g/versions/5/activate", NULL, NULL, NULL, 0);
    other.next = 0;
    json_t *doc = body_json(&r);
    const char *message =
        json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    assert_non_null(message);
    assert_non_null(strstr(message, "three tries"));
    json_decref(doc);
    expect_error(r, 409, "conflict", NULL);

    /* The other operator's two activations (the first try's fetch and the second's) are all that
     * happened: the third try found the active version moved again and gave up. */
    assert_string_equal(state_of(app, "g", 3, s, sizeof s), "active");
    assert_string_equal(state_of(app, "g", 5, s, sizeof s), "staged");
    json_t *e = newest_event(app);
    assert_string_equal(str_at(e, "kind"), "activate");
    assert_int_equal(int_at(e, "version"), 3);
    json_decref(e);

    /* Nothing stuck: with the active version left alone it passes at once. */
    json_decref(activate(app, "g", 5, NULL, 200));
    app_close(app, store);
}

static void test_moved_once(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = setup("once", &store);
    char s[32];
    other = (other_operator){.app = app, .target = 5, .next = 4, .last = 4};
    json_decref(activate(app, "g", 5, NULL, 200));
    other.next = 0;
    assert_string_equal(state_of(app, "g", 5, s, sizeof s), "active");

    /* Decided over the version active at the commit, 4, not the one the first try saw. */
    expect_event_moved(app, newest_event(app), 4, 5);
    app_close(app, store);
}

/* A publish with activate=true: the ring of the topology is the one the store built for its
 * fingerprint; the gate fetches only the active version's. */
static json_t *publish_activate(rkd_app *app, size_t n)
{
    char *body = topology(n, "fnv1a_32", NULL);
    rkd_response r = run(app, "POST", "/v1/clusters/g/versions", "activate=true", NULL, body, 0);
    free(body);
    return r.status == 201 ? expect_json(r, 201) : (expect_error(r, 409, "conflict", NULL), NULL);
}

static void test_publish(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = setup("publish", &store);
    /* The active version's ring not cached: fetched once, then the first publish passes. */
    other = (other_operator){.app = app};
    json_decref(publish_activate(app, 6));
    assert_int_equal(other.fetches, 1);
    json_t *first = newest_event(app);

    /* The publish left its ring in the cache: the next one fetches nothing, one try. */
    other = (other_operator){.app = app};
    json_decref(publish_activate(app, 4));
    assert_int_equal(other.fetches, 0);
    expect_event_moved(app, newest_event(app), 6, 7);
    expect_event_moved(app, first, 1, 6);

    /* Without a budget the ring is kept too (every activation compares the rings' scheme, hash
     * and tag): under the budget again, the next publish fetches nothing. */
    policy(app, "{\"max_moved_fraction\":1}");
    json_decref(publish_activate(app, 5));
    policy(app, "{\"max_moved_fraction\":0.99}");
    other = (other_operator){.app = app};
    json_decref(publish_activate(app, 3));
    assert_int_equal(other.fetches, 0);
    app_close(app, store);
}

static void test_publish_three_tries(void **state)
{
    (void)state;
    rkd_store *store;
    rkd_app *app = setup("publish_three", &store);
    char s[32];
    other = (other_operator){.app = app, .next = 2, .last = 4};
    assert_null(publish_activate(app, 6));
    other.next = 0;
    assert_int_equal(other.fetches, 2);
    assert_string_equal(state_of(app, "g", 3, s, sizeof s), "active");
    json_t *list = expect_json(get(app, "/v1/clusters/g/versions", "limit=1", NULL), 200);
    assert_int_equal(int_at(json_array_get(json_object_get(list, "versions"), 0), "version"), 5);
    json_decref(list);
    app_close(app, store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_tries),
        cmocka_unit_test(test_moved_once),
        cmocka_unit_test(test_publish),
        cmocka_unit_test(test_publish_three_tries),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
