/* test_store.c — ringkeeperd's storage layer (server/store/store.h), what every backend must do
 * alike, on SQLite and, with RK_TEST_ETCD, on etcd: numbering, states, preconditions, hints,
 * publishing and activating at once, the migration window, the caller's gate, paging, concurrent
 * publishers.
 * SQLite's own (its file, schema, migrations, backups) and the store-neutral layer over another
 * backend are test_store_sqlite.c's. */
#include <pthread.h>

#include "store_backend.h" /* rkd_store_digest */
#include "store_fixture.h"

#define THREADS            8
#define PUBLISH_PER_THREAD 50

static void check_time(const char *t)
{
    assert_int_equal(strlen(t), 20);
    assert_true(t[4] == '-' && t[10] == 'T' && t[19] == 'Z');
}

static void test_publish_get(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "publish");
    rkd_store *s = open_ok(path);
    for (int64_t i = 1; i <= 3; i++)
        assert_int_equal(publish(s, "cache", (size_t)i, RKD_STORE_ANY, 0, RK_OK), i);

    rkd_store_version *v = NULL;
    assert_int_equal(rkd_store_get(s, "cache", 2, &v, NULL), RK_OK);
    assert_string_equal(v->cluster, "cache");
    assert_int_equal(v->state, RKD_STATE_STAGED);
    assert_string_equal(v->author, "ops");
    assert_string_equal(v->comment, "test");
    assert_int_equal(v->hash, RK_HASH_FNV1A_32);
    assert_int_equal(v->vnode_factor, 4);
    assert_int_equal(v->points, 8);
    assert_string_equal(v->activated_at, "");
    check_time(v->created_at);
    assert_int_equal(rk_topology_node_count(v->topology), 2);
    /* The stored fingerprint is the library's, recomputed here independently. */
    rk_ring *ring = rk_ring_build(v->topology, NULL);
    assert_non_null(ring);
    assert_string_equal(v->fingerprint, rk_ring_fingerprint_hex(ring));
    rk_ring_free(ring);
    rkd_store_version_free(v);

    assert_int_equal(latest(s, "cache"), 3);
    assert_int_equal(active(s, "cache"), 0);
    rkd_store_close(s);
}

static void expect_page(rkd_store *s, size_t limit, int64_t before, const int64_t *want, size_t n,
                        int64_t next)
{
    rkd_store_version_list list;
    assert_int_equal(rkd_store_list(s, "pages", limit, before, &list, NULL), RK_OK);
    assert_int_equal(list.count, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(list.items[i].version, want[i]);
        assert_null(list.items[i].topology);
        assert_non_null(list.items[i].fingerprint[0] ? list.items[i].cluster : NULL);
    }
    assert_int_equal(list.next_before, next);
    rkd_store_version_list_free(&list);
}

static void test_list_paging(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "paging");
    rkd_store *s = open_ok(path);
    for (int i = 0; i < 5; i++)
        publish(s, "pages", 1, RKD_STORE_ANY, 0, RK_OK);
    expect_page(s, 2, 0, (int64_t[]){5, 4}, 2, 4);
    expect_page(s, 2, 4, (int64_t[]){3, 2}, 2, 2);
    expect_page(s, 2, 2, (int64_t[]){1}, 1, 0);
    expect_page(s, 5, 0, (int64_t[]){5, 4, 3, 2, 1}, 5, 0);
    expect_page(s, 1000, 1, NULL, 0, 0);

    rkd_store_version_list list;
    assert_int_equal(rkd_store_list(s, "pages", 0, 0, &list, NULL), RK_EINVAL);
    assert_int_equal(rkd_store_list(s, "pages", 1001, 0, &list, NULL), RK_EINVAL);
    assert_int_equal(rkd_store_list(s, "nope", 10, 0, &list, NULL), RKD_STORE_ENOCLUSTER);
    rkd_store_close(s);
}

static void test_activate_states(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "states");
    rkd_store *s = open_ok(path);
    for (int i = 0; i < 5; i++)
        publish(s, "c", 1, RKD_STORE_ANY, 0, RK_OK);
    uint64_t seq = rkd_store_watch_seq(s);

    assert_int_equal(activate(s, "c", 2, RKD_STORE_ANY), RK_OK);
    assert_int_equal(state_of(s, "c", 1), RKD_STATE_SUPERSEDED);
    assert_int_equal(state_of(s, "c", 2), RKD_STATE_ACTIVE);
    assert_int_equal(state_of(s, "c", 3), RKD_STATE_STAGED);

    assert_int_equal(activate(s, "c", 1, RKD_STORE_ANY), RKD_STORE_ECONFLICT); /* backward */
    assert_int_equal(activate(s, "c", 2, RKD_STORE_ANY), RKD_STORE_ECONFLICT); /* same */
    assert_int_equal(active(s, "c"), 2);

    assert_int_equal(activate(s, "c", 4, RKD_STORE_ANY), RK_OK);
    assert_int_equal(state_of(s, "c", 1), RKD_STATE_SUPERSEDED);
    assert_int_equal(state_of(s, "c", 2), RKD_STATE_RETIRED);
    assert_int_equal(state_of(s, "c", 3), RKD_STATE_SUPERSEDED);
    assert_int_equal(state_of(s, "c", 4), RKD_STATE_ACTIVE);
    assert_int_equal(state_of(s, "c", 5), RKD_STATE_STAGED);
    assert_int_equal(rkd_store_watch_seq(s), seq + 2);

    rkd_store_version *v = NULL;
    assert_int_equal(rkd_store_get(s, "c", 2, &v, NULL), RK_OK);
    check_time(v->activated_at); /* a retired version keeps its activation time */
    rkd_store_version_free(v);
    rkd_store_close(s);
}

static void test_if_match(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "ifmatch");
    rkd_store *s = open_ok(path);
    assert_int_equal(publish(s, "m", 1, 0, 0, RK_OK), 1); /* 0: only if the cluster is new */
    publish(s, "m", 1, 0, 0, RKD_STORE_EPRECONDITION);
    publish(s, "m", 1, 5, 1, RKD_STORE_EPRECONDITION);
    assert_int_equal(latest(s, "m"), 1); /* nothing changed */
    assert_int_equal(active(s, "m"), 0);
    assert_int_equal(publish(s, "m", 2, 1, 0, RK_OK), 2);

    uint64_t seq = rkd_store_watch_seq(s);
    assert_int_equal(activate(s, "m", 2, 1), RKD_STORE_EPRECONDITION); /* none is active */
    assert_int_equal(state_of(s, "m", 2), RKD_STATE_STAGED);
    assert_int_equal(state_of(s, "m", 1), RKD_STATE_STAGED);
    assert_int_equal(rkd_store_watch_seq(s), seq);
    assert_int_equal(activate(s, "m", 1, 0), RK_OK);
    assert_int_equal(activate(s, "m", 2, 2), RKD_STORE_EPRECONDITION);
    assert_int_equal(active(s, "m"), 1);
    assert_int_equal(activate(s, "m", 2, 1), RK_OK);
    assert_int_equal(state_of(s, "m", 1), RKD_STATE_RETIRED);
    rkd_store_close(s);
}

struct watch_log {
    int calls;
    char cluster[32];
    int64_t version;
    uint64_t seq;
    int64_t given; /* the version the watch was given, active, with its topology (0: none) */
};

static void on_activate(void *arg, const char *cluster, int64_t version, rkd_store_change what,
                        uint64_t seq, const rkd_store_version *v)
{
    struct watch_log *log = arg;
    assert_int_equal(what, RKD_CHANGE_ACTIVATION);
    log->calls++;
    snprintf(log->cluster, sizeof log->cluster, "%s", cluster);
    log->version = version;
    log->seq = seq;
    log->given = v && v->state == RKD_STATE_ACTIVE && v->topology ? v->version : 0;
}

/* Activates v with `hint` as the active number the caller believes (RK_OK expected). */
static void activate_hinted(rkd_store *s, const char *cluster, int64_t v, int64_t hint)
{
    rkd_store_version *rec = NULL;
    rk_error err = {0};
    rkd_store_activation a = {RKD_STORE_ANY, "ops", -1, NULL, NULL, hint, NULL};
    if (rkd_store_activate(s, cluster, v, &a, &rec, &err) != RK_OK)
        fail_msg("activate %lld with hint %lld: %s", (long long)v, (long long)hint, err.message);
    assert_int_equal(rec->version, v);
    assert_non_null(rec->topology);
    rkd_store_version_free(rec);
}

/* The digest an activation from `from` to `to` records: the plan between their fingerprints. */
static void expect_digest(rkd_store *s, const rkd_store_event *e, int64_t from, int64_t to)
{
    rkd_store_version *a = NULL, *b = NULL;
    char digest[RK_PLAN_DIGEST_LEN];
    assert_int_equal(rkd_store_get(s, "h", from, &a, NULL), RK_OK);
    assert_int_equal(rkd_store_get(s, "h", to, &b, NULL), RK_OK);
    rkd_store_digest(from, a->fingerprint, to, b->fingerprint, digest);
    assert_int_equal(e->version, to);
    assert_int_equal(e->from_version, from);
    assert_string_equal(e->digest, digest);
    rkd_store_version_free(a);
    rkd_store_version_free(b);
}

/* Approves the plan from `from` to `to` by `who` with `hint`, expecting `want`. */
static void approve_hinted(rkd_store *s, int64_t from, int64_t to, const char *who, int64_t hint,
                           int want)
{
    rkd_store_version *a = NULL, *b = NULL;
    char digest[RK_PLAN_DIGEST_LEN];
    rk_error err = {0};
    assert_int_equal(rkd_store_get(s, "h", from, &a, NULL), RK_OK);
    assert_int_equal(rkd_store_get(s, "h", to, &b, NULL), RK_OK);
    rkd_store_digest(from, a->fingerprint, to, b->fingerprint, digest);
    rkd_store_approval_req req = {to, digest, who, NULL, 0, hint};
    if (rkd_store_approve(s, "h", &req, &err) != want)
        fail_msg("approve %lld by %s with hint %lld: %s", (long long)to, who, (long long)hint,
                 err.message);
    rkd_store_version_free(a);
    rkd_store_version_free(b);
}

/* The hint of the active number is only that: right or wrong, an activation or an approval does
 * what it does without one, and its event names the plan from the version really active. */
static void test_activate_hint(void **state)
{
    (void)state;
    char path[256];
    rkd_store_event_list ev = {0};
    db_path(path, sizeof path, "hint");
    rkd_store *s = open_ok(path);
    for (size_t n = 1; n <= 4; n++)
        publish(s, "h", n, RKD_STORE_ANY, n == 1, RK_OK); /* 1 active, 2..4 staged */
    activate_hinted(s, "h", 2, 3);                        /* wrong */
    activate_hinted(s, "h", 3, 2);                        /* right */
    assert_int_equal(active(s, "h"), 3);
    approve_hinted(s, 2, 4, "a1", 2, RKD_STORE_EPLANCHANGED); /* the wrong hint's plan */
    approve_hinted(s, 3, 4, "a1", 2, RK_OK);                  /* wrong hint */
    approve_hinted(s, 3, 4, "a2", 3, RK_OK);                  /* right */
    rkd_store_approval_list ap = {0};
    assert_int_equal(rkd_store_list_approvals(s, "h", &ap, NULL), RK_OK);
    assert_int_equal(ap.count, 2);
    rkd_store_approval_list_free(&ap);
    assert_int_equal(rkd_store_list_events(s, "h", 4, 0, &ev, NULL), RK_OK);
    assert_int_equal(ev.count, 4);
    expect_digest(s, &ev.items[0], 3, 4);
    expect_digest(s, &ev.items[1], 3, 4);
    expect_digest(s, &ev.items[2], 2, 3);
    expect_digest(s, &ev.items[3], 1, 2);
    rkd_store_event_list_free(&ev);
    rkd_store_close(s);
}

static void test_publish_activate(void **state)
{
    (void)state;
    char path[256];
    struct watch_log log = {0};
    db_path(path, sizeof path, "pubact");
    rkd_store *s = open_ok(path);
    rkd_store_set_watch(s, on_activate, &log);

    rkd_store_publish_opts opt = {"ops", RKD_STORE_ANY, 1, 0, -1, 0, NULL, NULL};
    rkd_store_version *v = NULL;
    rk_topology *t = topo(3);
    assert_int_equal(rkd_store_publish(s, "pa", t, &opt, &v, NULL), RK_OK);
    rk_topology_free(t);
    assert_int_equal(v->state, RKD_STATE_ACTIVE);
    assert_string_equal(v->activated_at, v->created_at);
    rkd_store_version_free(v);
    assert_int_equal(log.calls, 1);
    assert_string_equal(log.cluster, "pa");
    assert_int_equal(log.version, 1);
    assert_int_equal(log.seq, 1);

    publish(s, "pa", 1, RKD_STORE_ANY, 0, RK_OK);       /* 2 staged */
    publish(s, "pa", 2, RKD_STORE_ANY, 1, RK_OK);       /* 3 active */
    publish(s, "pa", 2, 1, 1, RKD_STORE_EPRECONDITION); /* nothing */
    assert_int_equal(state_of(s, "pa", 1), RKD_STATE_RETIRED);
    assert_int_equal(state_of(s, "pa", 2), RKD_STATE_SUPERSEDED);
    assert_int_equal(state_of(s, "pa", 3), RKD_STATE_ACTIVE);
    assert_int_equal(latest(s, "pa"), 3);
    assert_int_equal(log.calls, 2);
    assert_int_equal(log.given, 3); /* a publish that activates hands the watch its record */
    assert_int_equal(rkd_store_watch_seq(s), 2);
    publish(s, "pa", 3, RKD_STORE_ANY, 0, RK_OK);                 /* 4 staged */
    assert_int_equal(activate(s, "pa", 4, RKD_STORE_ANY), RK_OK); /* hands the watch its answer */
    assert_int_equal(log.calls, 3);
    assert_int_equal(log.given, 4);
    rkd_store_close(s);
}

static void test_unknown(void **state)
{
    (void)state;
    char path[256];
    rkd_store_version *v = NULL;
    rk_error err = {0};
    db_path(path, sizeof path, "unknown");
    rkd_store *s = open_ok(path);
    publish(s, "u", 1, RKD_STORE_ANY, 0, RK_OK);
    assert_int_equal(rkd_store_get(s, "nope", 1, &v, &err), RKD_STORE_ENOCLUSTER);
    assert_int_equal(err.code, RKD_STORE_ENOCLUSTER);
    assert_non_null(strstr(err.message, "nope"));
    assert_int_equal(rkd_store_get(s, "u", 2, &v, &err), RKD_STORE_ENOVERSION);
    assert_int_equal(rkd_store_get(s, "u", 0, &v, &err), RKD_STORE_ENOVERSION);
    assert_int_equal(rkd_store_get_active(s, "u", &v, &err), RKD_STORE_ENOACTIVE);
    assert_int_equal(rkd_store_get_active(s, "nope", &v, &err), RKD_STORE_ENOCLUSTER);
    assert_int_equal(rkd_store_latest(s, "nope", &v, &err), RKD_STORE_ENOCLUSTER);
    assert_int_equal(activate(s, "nope", 1, RKD_STORE_ANY), RKD_STORE_ENOCLUSTER);
    assert_int_equal(activate(s, "u", 7, RKD_STORE_ANY), RKD_STORE_ENOVERSION);
    assert_int_equal(rkd_store_get(s, "", 1, &v, &err), RK_EINVAL);
    assert_null(v);
    assert_string_equal(rkd_store_errname(RKD_STORE_EPRECONDITION), "RKD_STORE_EPRECONDITION");
    assert_string_equal(rkd_store_errname(RK_EINVAL), "RK_EINVAL");
    assert_int_equal(rkd_store_ping(s, NULL), RK_OK);
    rkd_store_close(s);
}

/* The newest event of `cluster` is a "finish" of the window from `from` to `to`. */
static void check_finish_event(rkd_store *s, const char *cluster, int64_t from, int64_t to)
{
    rkd_store_event_list events = {0};
    assert_int_equal(rkd_store_list_events(s, cluster, 1, 0, &events, NULL), RK_OK);
    assert_string_equal(events.items[0].kind, "finish");
    assert_int_equal(events.items[0].version, to);
    assert_int_equal(events.items[0].from_version, from);
    assert_string_equal(events.items[0].author, "ops");
    assert_string_equal(events.items[0].detail, "moved");
    rkd_store_event_list_free(&events);
}

/* The migration window: opened by an activation under the policy (publish-and-activate too) when
 * a version was active, refusing activations while open, closed by a finish with its event. */
static void test_window(void **state)
{
    (void)state;
    char path[256];
    rkd_store_version *v = NULL;
    rkd_store_policy policy = RKD_STORE_POLICY_DEFAULTS;
    rkd_store_activation a = {RKD_STORE_ANY, "ops", -1, NULL, NULL, 0, NULL};
    db_path(path, sizeof path, "window");
    rkd_store *s = open_ok(path);
    policy.migration_window = 1;
    publish(s, "w", 1, RKD_STORE_ANY, 0, RK_OK);
    assert_int_equal(rkd_store_put_policy(s, "w", &policy, "ops", "{}", NULL), RK_OK);
    assert_int_equal(activate(s, "w", 1, RKD_STORE_ANY), RK_OK); /* the first keeps nothing */
    assert_int_equal(window_of(s, "w"), 0);
    assert_int_equal(rkd_store_finish_migration(s, "w", "ops", NULL, &v, NULL),
                     RKD_STORE_ENOWINDOW);
    assert_int_equal(rkd_store_finish_migration(s, "nope", "ops", NULL, &v, NULL),
                     RKD_STORE_ENOCLUSTER);

    publish(s, "w", 2, RKD_STORE_ANY, 1, RK_OK); /* v2 active, the window keeps v1 */
    assert_int_equal(window_of(s, "w"), 1);
    publish(s, "w", 3, RKD_STORE_ANY, 0, RK_OK);
    assert_int_equal(activate(s, "w", 3, RKD_STORE_ANY), RKD_STORE_EWINDOWOPEN);
    publish(s, "w", 3, RKD_STORE_ANY, 1, RKD_STORE_EWINDOWOPEN);
    assert_int_equal(latest(s, "w"), 3); /* the refused publish left nothing */

    assert_int_equal(rkd_store_finish_migration(s, "w", "ops", "moved", &v, NULL), RK_OK);
    assert_int_equal(v->version, 2);
    assert_int_equal(v->state, RKD_STATE_ACTIVE);
    assert_int_equal(v->previous, 0);
    rkd_store_version_free(v);
    check_finish_event(s, "w", 1, 2);
    assert_int_equal(window_of(s, "w"), 0);

    assert_int_equal(rkd_store_activate(s, "w", 3, &a, &v, NULL), RK_OK);
    assert_int_equal(v->previous, 2); /* the activation's record shows the window it opened */
    rkd_store_version_free(v);
    assert_int_equal(window_of(s, "w"), 2);
    rkd_store_close(s);
}

/* A gate that keeps what the store showed it and answers `answer` (0: RK_OK) with `moved`. */
struct gate_log {
    int calls, answer;
    double moved;
    int64_t active, previous;
    rkd_store_policy policy;
    char rollout[64];
    char ring[24]; /* the view's ring's fingerprint, or "(none)" */
};

static int log_gate(void *arg, const rkd_store_gate_view *v, double *moved, rk_error *err)
{
    struct gate_log *g = arg;
    g->calls++;
    g->active = v->active, g->previous = v->previous, g->policy = v->policy;
    snprintf(g->rollout, sizeof g->rollout, "%s", v->rollout ? v->rollout : "(none)");
    snprintf(g->ring, sizeof g->ring, "%s", v->ring ? rk_ring_fingerprint_hex(v->ring) : "(none)");
    *moved = g->moved;
    return g->answer ? rk_error_set(err, g->answer, NULL, "the test's gate says no") : RK_OK;
}

static void expect_last_event(rkd_store *s, const char *cluster, const char *kind, double moved)
{
    rkd_store_event_list ev = {0};
    assert_int_equal(rkd_store_list_events(s, cluster, 1, 0, &ev, NULL), RK_OK);
    assert_int_equal(ev.count, 1);
    assert_string_equal(ev.items[0].kind, kind);
    assert_true(ev.items[0].moved_fraction == moved);
    rkd_store_event_list_free(&ev);
}

/* A publish with activate=true through the gate: refused (nothing published), then let through. */
static void gate_publish(rkd_store *s, rkd_store_publish_opts *opt, struct gate_log *g)
{
    rkd_store_version *v = NULL;
    rk_topology *t = topo(3);
    g->answer = RKD_STORE_EGATE;
    assert_int_equal(rkd_store_publish(s, "g", t, opt, &v, NULL), RKD_STORE_EGATE);
    assert_int_equal(latest(s, "g"), 2);
    g->answer = 0, g->moved = 0.5;
    assert_int_equal(rkd_store_publish(s, "g", t, opt, &v, NULL), RK_OK);
    assert_int_equal(v->version, 3);
    assert_int_equal(g->active, 2);
    assert_string_equal(g->ring, v->fingerprint); /* the store's build, handed to the gate */
    rkd_store_version_free(v);
    rk_topology_free(t);
    expect_last_event(s, "g", "activate", 0.5);
}

/* The caller's gate runs inside the activation's transaction, on what it read, before the store's
 * own checks; its refusal changes nothing and its figure goes into the event. */
static void test_gate(void **state)
{
    (void)state;
    char path[256];
    struct gate_log g = {.answer = RKD_STORE_EBUDGET, .moved = 0.125};
    rkd_store_gate gate = {log_gate, &g};
    rkd_store_activation a = {RKD_STORE_ANY, "ops", -1, NULL, NULL, 0, &gate};
    rkd_store_publish_opts opt = {"ops", RKD_STORE_ANY, 1, 0, -1, 2, &gate, NULL};
    rkd_store_policy policy = RKD_STORE_POLICY_DEFAULTS;
    rkd_store_version *v = NULL;
    db_path(path, sizeof path, "gate");
    rkd_store *s = open_ok(path);
    policy.max_moved_fraction = 0.25;
    publish(s, "g", 1, RKD_STORE_ANY, 1, RK_OK); /* 1 active */
    publish(s, "g", 2, RKD_STORE_ANY, 0, RK_OK); /* 2 staged */
    assert_int_equal(rkd_store_put_policy(s, "g", &policy, "ops", "{}", NULL), RK_OK);
    assert_int_equal(rkd_store_put_doc(s, RKD_DOC_ROLLOUT, "g", "{\"id\":1}", 0, NULL, NULL),
                     RK_OK);

    assert_int_equal(rkd_store_activate(s, "g", 2, &a, &v, NULL), RKD_STORE_EBUDGET);
    assert_null(v);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.active, 1);
    assert_int_equal(g.previous, 0);
    assert_true(g.policy.max_moved_fraction == 0.25);
    assert_string_equal(g.rollout, "{\"id\":1}");
    assert_string_equal(g.ring, "(none)"); /* an activation's rings are the caller's */
    assert_int_equal(active(s, "g"), 1);
    expect_last_event(s, "g", "policy", -1);

    g.answer = 0;
    assert_int_equal(rkd_store_activate(s, "g", 2, &a, &v, NULL), RK_OK);
    assert_int_equal(v->version, 2);
    rkd_store_version_free(v);
    expect_last_event(s, "g", "activate", 0.125);

    gate_publish(s, &opt, &g);
    int calls = g.calls; /* a version the store refuses anyway: the gate is not asked */
    assert_int_equal(activate(s, "g", 9, RKD_STORE_ANY), RKD_STORE_ENOVERSION);
    assert_int_equal(rkd_store_activate(s, "g", 9, &a, &v, NULL), RKD_STORE_ENOVERSION);
    assert_int_equal(g.calls, calls);
    rkd_store_close(s);
}

/* The page after `after` of `limit` names: `want` (space-separated) and next_after `next`. */
static void expect_clusters(rkd_store *s, size_t limit, const char *after, const char *want,
                            const char *next)
{
    rkd_store_cluster_list list;
    char got[256] = "";
    assert_int_equal(rkd_store_list_clusters(s, limit, after, &list, NULL), RK_OK);
    for (size_t i = 0; i < list.count; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
                 list.items[i].name);
    assert_string_equal(got, want);
    if (next)
        assert_string_equal(list.next_after, next);
    else
        assert_null(list.next_after);
    rkd_store_cluster_list_free(&list);
}

static int collect(void *arg, const rkd_store_cluster *c, rk_error *err)
{
    (void)err;
    char *out = arg;
    snprintf(out + strlen(out), 256 - strlen(out), "%s%s", out[0] ? " " : "", c->name);
    return strcmp(c->name, "stop") == 0 ? RKD_STORE_ECONFLICT : RK_OK;
}

static void test_list_clusters(void **state)
{
    (void)state;
    char path[256], all[256] = "";
    rkd_store_cluster_list list;
    rk_error err = {0};
    db_path(path, sizeof path, "clusters");
    rkd_store *s = open_ok(path);
    expect_clusters(s, 100, NULL, "", NULL);
    publish(s, "zeta", 1, RKD_STORE_ANY, 0, RK_OK);
    publish(s, "alpha", 1, RKD_STORE_ANY, 1, RK_OK);
    publish(s, "alpha", 1, RKD_STORE_ANY, 0, RK_OK);
    assert_int_equal(rkd_store_list_clusters(s, RKD_STORE_LIST_MAX, NULL, &list, NULL), RK_OK);
    assert_int_equal(list.count, 2);
    assert_null(list.next_after);
    assert_string_equal(list.items[0].name, "alpha");
    assert_int_equal(list.items[0].active_version, 1);
    assert_int_equal(list.items[0].latest_version, 2);
    assert_string_equal(list.items[1].name, "zeta");
    assert_int_equal(list.items[1].active_version, 0);
    assert_int_equal(list.items[1].latest_version, 1);
    rkd_store_cluster_list_free(&list);

    /* Pages by name (bytes: "a-b" < "a.b" < "a0" < "alpha"), resumed after any name, known or
     * not */
    publish(s, "a0", 1, RKD_STORE_ANY, 0, RK_OK);
    publish(s, "a.b", 1, RKD_STORE_ANY, 0, RK_OK);
    publish(s, "a-b", 1, RKD_STORE_ANY, 0, RK_OK);
    expect_clusters(s, 2, NULL, "a-b a.b", "a.b");
    expect_clusters(s, 2, "a.b", "a0 alpha", "alpha");
    expect_clusters(s, 2, "alpha", "zeta", NULL);
    expect_clusters(s, 1, "alpha", "zeta", NULL); /* exactly full: no next page */
    expect_clusters(s, 3, "b", "zeta", NULL);     /* after a name no cluster has */
    expect_clusters(s, 3, "zeta", "", NULL);
    expect_clusters(s, 5, "", "a-b a.b a0 alpha zeta", NULL);
    assert_int_equal(rkd_store_list_clusters(s, 0, NULL, &list, &err), RK_EINVAL);
    assert_int_equal(rkd_store_list_clusters(s, RKD_STORE_LIST_MAX + 1, NULL, &list, &err),
                     RK_EINVAL);

    /* Every cluster through the pages, and the first error ends the walk */
    assert_int_equal(rkd_store_each_cluster(s, collect, all, NULL), RK_OK);
    assert_string_equal(all, "a-b a.b a0 alpha zeta");
    publish(s, "stop", 1, RKD_STORE_ANY, 0, RK_OK);
    all[0] = '\0';
    assert_int_equal(rkd_store_each_cluster(s, collect, all, NULL), RKD_STORE_ECONFLICT);
    assert_string_equal(all, "a-b a.b a0 alpha stop");
    rkd_store_close(s);
}

/* --max-clusters: a publish that would create one more is refused, changing nothing; the
 * clusters there are go on taking versions. */
static void test_max_clusters(void **state)
{
    (void)state;
    char path[256];
    rkd_store_version *v = NULL;
    rk_error err = {0};
    db_path(path, sizeof path, "max_clusters");
    rkd_store *s = open_ok(path);
    rkd_store_set_max_clusters(s, 2);
    publish(s, "one", 1, RKD_STORE_ANY, 0, RK_OK);
    publish(s, "two", 1, RKD_STORE_ANY, 1, RK_OK);
    rk_topology *t = topo(2);
    assert_int_equal(rkd_store_publish(s, "three", t, NULL, &v, &err), RKD_STORE_ETOOMANYCLUSTERS);
    assert_null(v);
    assert_string_equal(err.field, "cluster");
    assert_non_null(strstr(err.message, "--max-clusters 2"));
    rkd_store_publish_opts act = {NULL, RKD_STORE_ANY, 1, 0, -1, 0, NULL, NULL};
    assert_int_equal(rkd_store_publish(s, "three", t, &act, &v, NULL), RKD_STORE_ETOOMANYCLUSTERS);
    rk_topology_free(t);
    expect_clusters(s, 10, NULL, "one two", NULL);
    assert_int_equal(rkd_store_latest(s, "three", &v, NULL), RKD_STORE_ENOCLUSTER);
    assert_int_equal(publish(s, "one", 1, RKD_STORE_ANY, 0, RK_OK), 2); /* at the cap: goes on */
    assert_int_equal(publish(s, "two", 1, RKD_STORE_ANY, 1, RK_OK), 2);
    rkd_store_set_max_clusters(s, 3);
    assert_int_equal(publish(s, "three", 1, RKD_STORE_ANY, 0, RK_OK), 1);
    rkd_store_set_max_clusters(s, 0); /* no cap */
    assert_int_equal(publish(s, "four", 1, RKD_STORE_ANY, 0, RK_OK), 1);
    rkd_store_close(s);
}

struct publisher {
    rkd_store *store;
    int64_t got[PUBLISH_PER_THREAD];
    int failures;
};

static void *publish_many(void *arg)
{
    struct publisher *p = arg;
    rk_topology *t = topo(2);
    for (int i = 0; i < PUBLISH_PER_THREAD; i++) {
        rkd_store_version *v = NULL;
        rk_error err = {0};
        if (rkd_store_publish(p->store, "busy", t, NULL, &v, &err) != RK_OK) {
            fprintf(stderr, "publish: %s\n", err.message);
            p->failures++;
            continue;
        }
        p->got[i] = v->version;
        rkd_store_version_free(v);
    }
    rk_topology_free(t);
    return NULL;
}

/* Two handles (two connections), four threads each: the mutex orders threads within a handle,
 * BEGIN IMMEDIATE and the busy timeout order the handles. */
static void test_concurrent_publish(void **state)
{
    (void)state;
    char path[256];
    static struct publisher pubs[THREADS];
    pthread_t threads[THREADS];
    static char seen[THREADS * PUBLISH_PER_THREAD + 1];
    db_path(path, sizeof path, "concurrent");
    rkd_store *stores[2] = {open_ok(path), open_ok(path)};
    for (int i = 0; i < THREADS; i++) {
        pubs[i] = (struct publisher){.store = stores[i % 2]};
        assert_int_equal(pthread_create(&threads[i], NULL, publish_many, &pubs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pubs[i].failures, 0);
        for (int j = 0; j < PUBLISH_PER_THREAD; j++) {
            int64_t v = pubs[i].got[j];
            assert_true(v >= 1 && v <= THREADS * PUBLISH_PER_THREAD);
            assert_int_equal(seen[v], 0); /* no duplicate */
            seen[v] = 1;
        }
    }
    rkd_store_version_list list;
    assert_int_equal(rkd_store_list(stores[0], "busy", 1000, 0, &list, NULL), RK_OK);
    assert_int_equal(list.count, THREADS * PUBLISH_PER_THREAD);
    for (size_t i = 0; i < list.count; i++) /* exactly 400..1: no gap */
        assert_int_equal(list.items[i].version, (int64_t)(list.count - i));
    rkd_store_version_list_free(&list);
    rkd_store_close(stores[0]);
    rkd_store_close(stores[1]);
}

int main(void)
{
    /* What every backend must do alike; run on etcd too (RK_TEST_ETCD). */
    const struct CMUnitTest any_store[] = {
        cmocka_unit_test(test_publish_get),
        cmocka_unit_test(test_list_paging),
        cmocka_unit_test(test_activate_states),
        cmocka_unit_test(test_if_match),
        cmocka_unit_test(test_publish_activate),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_list_clusters),
        cmocka_unit_test(test_max_clusters), /* --max-clusters */
        cmocka_unit_test(test_concurrent_publish),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_activate_hint),
        cmocka_unit_test(test_gate),
    };
    if (tmpdir_setup(NULL) != 0)
        return 1;
    int failed = cmocka_run_group_tests(any_store, NULL, NULL);
    return tmpdir_teardown(NULL) != 0 ? 1 : failed;
}
