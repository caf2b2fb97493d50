/* store_fixture.h — what the store's test programs share: a store per test (SQLite in the temp
 * folder, or a key prefix of its own on etcd), small topologies, and the calls a test makes and
 * checks at once. Header-only, as tmpdir.h, whose folder it uses. */
#ifndef RK_TEST_STORE_FIXTURE_H
#define RK_TEST_STORE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ringkeeper.h"
#include "store.h"
#include "tmpdir.h"

/* A database path in the temp dir, unique per test so tests do not share state; with RK_TEST_ETCD
 * set (HOST:PORT,... of a running etcd: tests/etcd/with_etcd.sh), a key prefix of its own there. */
static inline void db_path(char *out, size_t cap, const char *name)
{
    const char *etcd = getenv("RK_TEST_ETCD");
    if (etcd)
        snprintf(out, cap, "etcd://%s/test-store/%s", etcd, name);
    else
        snprintf(out, cap, "%s/%s.db", tmpdir, name);
}

static inline rkd_store *open_ok(const char *path)
{
    rk_error err = {0};
    rkd_store_param migrations = {"migrations", RK_MIGRATIONS_DIR}; /* SQLite's alone */
    rkd_store *s =
        rkd_store_open_with(path, &migrations, rkd_store_takes(path, "migrations") ? 1 : 0, &err);
    if (!s)
        fail_msg("rkd_store_open_with(%s): %s %s", path, rkd_store_errname(err.code), err.message);
    return s;
}

/* A small valid topology whose node count (and so fingerprint) depends on `n`. */
static inline rk_topology *topo(size_t n)
{
    static const char *ids[] = {"a", "b", "c", "d", "e", "f"};
    static const char *addrs[] = {"10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1",
                                  "10.0.0.4:1", "10.0.0.5:1", "10.0.0.6:1"};
    rk_node nodes[6];
    rk_error err = {0};
    for (size_t i = 0; i < n; i++)
        nodes[i] = (rk_node){ids[i], addrs[i], 1};
    rk_topology *t = rk_topology_new(RK_HASH_FNV1A_32, 4, nodes, n, "test", &err);
    if (!t)
        fail_msg("rk_topology_new: %s", err.message);
    return t;
}

/* Publishes topo(n) and returns the new version number; expects `want` as the status. */
static inline int64_t publish(rkd_store *s, const char *cluster, size_t n, int64_t if_match,
                              int activate, int want)
{
    rkd_store_publish_opts opt = {"ops", if_match, activate, 0, -1, 0, NULL, NULL};
    rkd_store_version *v = NULL;
    rk_error err = {0};
    rk_topology *t = topo(n);
    int rc = rkd_store_publish(s, cluster, t, &opt, &v, &err);
    rk_topology_free(t);
    if (rc != want)
        fail_msg("publish %s: got %s (%s), want %s", cluster, rkd_store_errname(rc), err.message,
                 rkd_store_errname(want));
    int64_t num = v ? v->version : 0;
    rkd_store_version_free(v);
    return num;
}

static inline int activate(rkd_store *s, const char *cluster, int64_t v, int64_t if_match)
{
    rkd_store_version *rec = NULL;
    rkd_store_activation a = {if_match, NULL, -1, NULL, NULL, 0, NULL};
    int rc = rkd_store_activate(s, cluster, v, &a, &rec, NULL);
    if (rc == RK_OK) {
        assert_int_equal(rec->version, v);
        assert_int_equal(rec->state, RKD_STATE_ACTIVE);
        assert_non_null(rec->topology);
    } else {
        assert_null(rec);
    }
    rkd_store_version_free(rec);
    return rc;
}

static inline rkd_store_state state_of(rkd_store *s, const char *cluster, int64_t v)
{
    rkd_store_version *rec = NULL;
    assert_int_equal(rkd_store_get(s, cluster, v, &rec, NULL), RK_OK);
    rkd_store_state st = rec->state;
    rkd_store_version_free(rec);
    return st;
}

static inline int64_t latest(rkd_store *s, const char *cluster)
{
    rkd_store_version *rec = NULL;
    assert_int_equal(rkd_store_latest(s, cluster, &rec, NULL), RK_OK);
    int64_t v = rec->version;
    rkd_store_version_free(rec);
    return v;
}

static inline int64_t active(rkd_store *s, const char *cluster)
{
    rkd_store_version *rec = NULL;
    int rc = rkd_store_get_active(s, cluster, &rec, NULL);
    if (rc == RKD_STORE_ENOACTIVE)
        return 0;
    assert_int_equal(rc, RK_OK);
    int64_t v = rec->version;
    rkd_store_version_free(rec);
    return v;
}

/* The window over the active version of `cluster`: the version it keeps (0: none), checking that
 * the fingerprint given is that version's. */
static inline int64_t window_of(rkd_store *s, const char *cluster)
{
    rkd_store_version *v = NULL, *kept = NULL;
    assert_int_equal(rkd_store_get_active(s, cluster, &v, NULL), RK_OK);
    int64_t previous = v->previous;
    if (previous) {
        assert_int_equal(rkd_store_get(s, cluster, previous, &kept, NULL), RK_OK);
        assert_string_equal(v->previous_fingerprint, kept->fingerprint);
        assert_int_equal(kept->previous, 0); /* only the active version shows the window */
    } else {
        assert_string_equal(v->previous_fingerprint, "");
    }
    rkd_store_version_free(kept);
    rkd_store_version_free(v);
    return previous;
}

#endif
