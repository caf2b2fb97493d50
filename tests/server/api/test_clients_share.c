/* test_clients_share.c — the table of clients shared between replicas (server/app/clients_share.c)
 * on its own: two or three tables stand for replicas, and a store of records in memory stands for
 * etcd (a revision per write, a delete only while the revision is the one given, every change told
 * to the other tables as the watch tells it). Each replica counts every client once; a client that
 * moves is taken over; a version merely offered is not written; a forgotten client's record is
 * deleted, unless another replica wrote it since; a record gone from the store is forgotten, or
 * taken over by a replica the client polled within the expiry; a full reading forgets what it did
 * not read; a lost lease writes everything again. The etcd side is
 * tests/etcd/test_fleet_replicas.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clients.h"

#define STORED_MAX 64

/* The store: the records as last written, by key (cluster, id). */
typedef struct stored {
    char cluster[64], id[RK_CLIENT_ID_MAX + 1], replica[16];
    int64_t held, offered, refused, rev;
    int live;
} stored;

static stored store[STORED_MAX];
static int64_t revision;

typedef struct replica {
    const char *name;
    rkd_clients *t;
} replica;

static stored *find(const char *cluster, const char *id)
{
    for (int i = 0; i < STORED_MAX; i++)
        if (store[i].live && !strcmp(store[i].cluster, cluster) && !strcmp(store[i].id, id))
            return &store[i];
    return NULL;
}

static stored *slot(void)
{
    for (int i = 0; i < STORED_MAX; i++)
        if (!store[i].live)
            return &store[i];
    fail_msg("the test's store is full");
    return NULL;
}

/* What the watch tells the other replicas of a change of s (deleted: a deletion at `rev`). */
static void tell(replica *all, size_t n, const char *writer, const stored *s, int deleted,
                 int64_t rev)
{
    rkd_fleet_record r = {.cluster = s->cluster,
                          .id = s->id,
                          .held = s->held,
                          .offered = s->offered,
                          .refused = s->refused,
                          .at = time(NULL),
                          .replica = writer,
                          .rev = rev,
                          .deleted = deleted};
    for (size_t i = 0; i < n; i++)
        if (deleted || strcmp(all[i].name, writer) != 0) /* a replica skips its own puts */
            rkd_clients_heard(all[i].t, &r);
}

/* Replica `from` writes what it has queued, one revision a write, and every replica hears it. */
static size_t sync_one(replica *all, size_t n, replica *from)
{
    static rkd_clients_out out[RKD_CLIENTS_BATCH];
    size_t k = rkd_clients_take(from->t, out, RKD_CLIENTS_BATCH);
    int64_t rev = ++revision;
    for (size_t i = 0; i < k; i++) {
        rkd_fleet_record *r = &out[i].rec;
        stored *s = find(r->cluster, r->id);
        if (r->deleted && s && s->rev == r->rev) {
            s->live = 0;
            tell(all, n, from->name, s, 1, rev);
        } else if (!r->deleted) {
            s = s ? s : slot();
            *s = (stored){.held = r->held,
                          .offered = r->offered,
                          .refused = r->refused,
                          .rev = rev,
                          .live = 1};
            snprintf(s->cluster, sizeof s->cluster, "%s", r->cluster);
            snprintf(s->id, sizeof s->id, "%s", r->id);
            snprintf(s->replica, sizeof s->replica, "%s", from->name);
            r->rev = rev;
            tell(all, n, from->name, s, 0, rev);
        }
    }
    rkd_clients_written(from->t, out, k, 1);
    return k;
}

static void sync_all(replica *all, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sync_one(all, n, &all[i]);
}

/* Client `id` of cluster "c" asks replica r, holding `held`, offered `offered`. */
static void poll(replica *r, const char *id, int64_t held, int64_t offered)
{
    rkd_client_report rep = {.id = id, .held = held, .offered = offered};
    rkd_clients_seen(r->t, "c", &rep);
}

/* "total holding-v" of replica r's report of cluster "c" at active version v. */
static void summary(replica *r, int64_t v, char *out, size_t n)
{
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)v);
    json_t *doc = rkd_clients_json(r->t, "c", v, 100);
    json_t *s = json_object_get(doc, "summary");
    snprintf(out, n, "%lld %lld", (long long)json_integer_value(json_object_get(s, "total")),
             (long long)json_integer_value(json_object_get(json_object_get(s, "by_version"), key)));
    json_decref(doc);
}

static void assert_summary(replica *r, int64_t v, const char *want)
{
    char got[64];
    summary(r, v, got, sizeof got);
    assert_string_equal(got, want);
}

/* The replica name shown for client `id` in r's report. */
static void assert_replica_of(replica *r, const char *id, const char *want)
{
    json_t *doc = rkd_clients_json(r->t, "c", 1, 100), *c;
    size_t i;
    const char *got = "(absent)";
    json_array_foreach(json_object_get(doc, "clients"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "id")), id))
            got = json_string_value(json_object_get(c, "replica"));
    }
    assert_string_equal(got, want);
    json_decref(doc);
}

static int setup(void **state)
{
    static replica r[3] = {{"A", NULL}, {"B", NULL}, {"C", NULL}};
    rkd_clients_limits lim = {.expiry_s = 2};
    memset(store, 0, sizeof store);
    for (int i = 0; i < 3; i++) {
        r[i].t = rkd_clients_new(&lim);
        assert_int_equal(rkd_clients_share(r[i].t, r[i].name, 0), RK_OK);
    }
    *state = r;
    return 0;
}

static int teardown(void **state)
{
    replica *r = *state;
    for (int i = 0; i < 3; i++)
        rkd_clients_free(r[i].t);
    return 0;
}

static void test_counted_everywhere(void **state)
{
    replica *r = *state;
    poll(&r[0], "a1", 1, 1);
    poll(&r[1], "b1", 1, 1);
    poll(&r[2], "c1", 0, 1);
    sync_all(r, 3);
    for (int i = 0; i < 3; i++)
        assert_summary(&r[i], 1, "3 2");
    assert_replica_of(&r[0], "c1", "C");
    assert_replica_of(&r[2], "a1", "A");
    /* c1 says it holds v1 on C: every replica converges */
    poll(&r[2], "c1", 1, 1);
    sync_all(r, 3);
    for (int i = 0; i < 3; i++)
        assert_summary(&r[i], 1, "3 3");
}

static void test_offered_not_written(void **state)
{
    replica *r = *state;
    poll(&r[0], "a1", 1, 1);
    sync_all(r, 3);
    poll(&r[0], "a1", 1, 2); /* sent v2, still holding v1 */
    assert_int_equal(sync_one(r, 3, &r[0]), 0);
    poll(&r[0], "a1", 2, 2); /* its confirming request */
    assert_int_equal(sync_one(r, 3, &r[0]), 1);
    assert_summary(&r[1], 2, "1 1");
}

static void test_moved_taken_over(void **state)
{
    replica *r = *state;
    poll(&r[0], "m", 1, 1);
    sync_all(r, 3);
    /* m polls B now and holds v2: B takes it over; A and C count it once, as B's */
    poll(&r[1], "m", 2, 2);
    sync_all(r, 3);
    for (int i = 0; i < 3; i++)
        assert_summary(&r[i], 2, "1 1");
    assert_replica_of(&r[0], "m", "B");
    assert_string_equal(find("c", "m")->replica, "B");
}

static void test_stale_delete_refused(void **state)
{
    replica *r = *state;
    poll(&r[0], "m", 1, 1);
    sync_all(r, 3);
    /* B writes m again, and A has not heard of it yet (its watch lags) */
    stored *s = find("c", "m");
    s->rev = ++revision;
    snprintf(s->replica, sizeof s->replica, "B");
    sleep(3); /* the expiry (2 s): A forgets m; its delete names the revision it wrote */
    poll(&r[0], "other", 1, 1); /* a report runs A's expiry */
    sync_one(r, 3, &r[0]);
    assert_non_null(find("c", "m"));
    assert_string_equal(find("c", "m")->replica, "B");
}

static void test_forgotten_deleted(void **state)
{
    replica *r = *state;
    poll(&r[0], "gone", 1, 1);
    sync_all(r, 3);
    assert_summary(&r[1], 1, "1 1");
    sleep(3); /* the expiry (2 s): A forgets it and deletes its record */
    poll(&r[0], "fresh", 1, 1);
    sync_all(r, 3);
    assert_null(find("c", "gone"));
    assert_summary(&r[1], 1, "1 1"); /* fresh only */
    assert_summary(&r[2], 1, "1 1");
}

static void test_deleted_taken_over(void **state)
{
    replica *r = *state;
    poll(&r[0], "d", 1, 1);
    sync_all(r, 3);
    poll(&r[1], "d", 1, 1); /* d polls B too, nothing changed: A's record stays A's */
    assert_int_equal(sync_one(r, 3, &r[1]), 0);
    /* A's lease expires (A died): the store deletes d; B saw it within the expiry: takes it over */
    stored *s = find("c", "d");
    s->live = 0;
    tell(r, 3, "A", s, 1, ++revision);
    assert_int_equal(sync_one(r, 3, &r[1]), 1);
    assert_string_equal(find("c", "d")->replica, "B");
    assert_summary(&r[2], 1, "1 1");
    assert_replica_of(&r[2], "d", "B");
}

static void test_full_reading_forgets(void **state)
{
    replica *r = *state;
    poll(&r[0], "x", 1, 1);
    poll(&r[0], "y", 1, 1);
    sync_all(r, 3);
    /* C reads the store again (round 5) and finds only y: x was deleted while it could not watch */
    stored *y = find("c", "y");
    rkd_fleet_record ry = {.cluster = "c",
                           .id = "y",
                           .held = 1,
                           .offered = 1,
                           .at = time(NULL),
                           .replica = "A",
                           .rev = y->rev,
                           .round = 5};
    rkd_clients_heard(r[2].t, &ry);
    rkd_clients_read_all(r[2].t, 5);
    assert_summary(&r[2], 1, "1 1");
    assert_replica_of(&r[2], "y", "A");
}

static void test_rewrite_after_lost_lease(void **state)
{
    replica *r = *state;
    poll(&r[0], "p", 1, 1);
    poll(&r[0], "q", 1, 1);
    assert_int_equal(sync_one(r, 3, &r[0]), 2);
    assert_int_equal(sync_one(r, 3, &r[0]), 0);
    rkd_clients_rewrite(r[0].t);
    assert_int_equal(sync_one(r, 3, &r[0]), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counted_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offered_not_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moved_taken_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_delete_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forgotten_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_taken_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_reading_forgets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_after_lost_lease, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
