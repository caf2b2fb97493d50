/* test_client.c — the client of docs/CLIENT.md against a real ringkeeperd: fetch, refresh (304,
 * 200, long poll), refused rings, the last-known-good file, the refresher, and lookups on many
 * threads during refreshes. Also rk_client_verify on hand-made documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "serverd.h"
#include "tmpdir.h"
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ringkeeper.h"

/* ---- a real ringkeeperd ---- */

typedef rk_serverd server;
typedef rk_body body;

/* Starts a server on `port` (0: a free one; the last --listen counts). */
static void server_start_at(server *s, const char *db_name, unsigned port)
{
    char db[512], listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", port);
    const char *const extra[] = {
        "--migrations", RK_MIGRATIONS_DIR, "--threads", "4", "--listen", listen, NULL};
    snprintf(db, sizeof db, "%s/%s", tmpdir, db_name);
    assert_int_equal(serverd_start(s, RK_SERVERD, db, extra), 0);
}

static void server_start(server *s, const char *db_name)
{
    server_start_at(s, db_name, 0);
}

static void server_stop(server *s)
{
    serverd_stop(s);
}

/* The status of `method path` with `data` (may be NULL); the body into *out when out is set. */
static long http(const server *s, const char *method, const char *path, const char *data, body *out)
{
    CURL *e = curl_easy_init();
    assert_non_null(e);
    long status = serverd_http(e, s, method, path, data, out);
    curl_easy_cleanup(e);
    assert_true(status > 0);
    return status;
}

/* A topology of n nodes "n0".."n<n-1>". */
static char *topology(const char *hash, unsigned vf, unsigned n)
{
    size_t size = 128 + 64 * (size_t)n, off;
    char *s = malloc(size);
    assert_non_null(s);
    off = (size_t)snprintf(s, size, "{\"hash\":\"%s\",\"vnode_factor\":%u,\"nodes\":[", hash, vf);
    for (unsigned i = 0; i < n; i++)
        off += (size_t)snprintf(s + off, size - off,
                                "%s{\"id\":\"n%u\",\"addr\":\"10.0.0.%u:1\",\"weight\":1}",
                                i ? "," : "", i, i);
    snprintf(s + off, size - off, "]}");
    return s;
}

static void publish(const server *s, const char *cluster, const char *hash, unsigned vf, unsigned n)
{
    char path[128];
    char *t = topology(hash, vf, n);
    snprintf(path, sizeof path, "/v1/clusters/%s/versions?activate=true", cluster);
    assert_int_equal(http(s, "POST", path, t, NULL), 201);
    free(t);
}

/* Publishes version `v` of `cluster` in another hash or vnode_factor than the active one and
 * activates it: forced, as a hash change moves every key. */
static void publish_forced(const server *s, const char *cluster, const char *hash, unsigned vf,
                           unsigned n, int v)
{
    char path[128];
    char *t = topology(hash, vf, n);
    snprintf(path, sizeof path, "/v1/clusters/%s/versions", cluster);
    assert_int_equal(http(s, "POST", path, t, NULL), 201);
    snprintf(path, sizeof path, "/v1/clusters/%s/versions/%d/activate", cluster, v);
    assert_int_equal(http(s, "POST", path, "{\"force\":true,\"reason\":\"another hash\"}", NULL),
                     200);
    free(t);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

/* The cache file holds its header line, then exactly what the server sends now for `cluster`'s
 * ring. */
static void assert_cache_is_ring(const server *s, const char *cluster, const char *cache)
{
    char path[128];
    body b = {0};
    size_t len = 0;
    snprintf(path, sizeof path, "/v1/clusters/%s/ring", cluster);
    assert_int_equal(http(s, "GET", path, NULL, &b), 200);
    char *file = read_file(cache, &len);
    assert_non_null(file);
    const char *nl = memchr(file, '\n', len);
    assert_non_null(nl);
    assert_memory_equal(file, "RK-LKG/1 bytes=", 15);
    assert_int_equal(len - (size_t)(nl + 1 - file), b.len);
    assert_memory_equal(nl + 1, b.data, b.len);
    free(file);
    free(b.data);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static rk_client *client_for(const server *s, const char *cluster, const char *cache)
{
    rk_error err = {0};
    rk_client_config cfg = {.server = s->url,
                            .cluster = cluster,
                            .expect_hash = "fnv1a_32",
                            .expect_vnode_factor = 40,
                            .cache_file = cache,
                            .timeout_ms = 5000};
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c)
        fail_msg("rk_client_new: %s", err.message);
    return c;
}

static char *cache_path(const char *name)
{
    static char path[8][512];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static server shared;

static int group_setup(void **state)
{
    if (tmpdir_setup(state))
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    server_start(&shared, "shared.db");
    return 0;
}

static int group_teardown(void **state)
{
    server_stop(&shared);
    return tmpdir_teardown(state);
}

/* ---- tests ---- */

static void test_fetch_refresh(void **state)
{
    (void)state;
    rk_error err = {0};
    rk_client_status st;
    int changed = -1;
    const char *cache = cache_path("a.lkg");
    publish(&shared, "a", "fnv1a_32", 40, 3);
    rk_client *c = client_for(&shared, "a", cache);
    assert_null(rk_client_acquire(c));
    assert_int_equal(rk_client_lookup_index(c, 0, "k", 1), -1); /* no ring yet */
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, 1);
    assert_int_equal(st.from_cache, 0);
    assert_int_equal(st.accepted, 1);
    assert_cache_is_ring(&shared, "a", cache);

    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 0);

    rk_snapshot *s1 = rk_client_acquire(c);
    assert_null(rk_snapshot_previous(s1));
    publish(&shared, "a", "fnv1a_32", 40, 4);
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 1);
    assert_cache_is_ring(&shared, "a", cache);
    rk_snapshot *s2 = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(s1), 1); /* still valid after the swap */
    assert_int_equal(rk_snapshot_version(s2), 2);
    assert_non_null(rk_snapshot_previous(s2));
    assert_int_equal(rk_snapshot_in_window(s2), 0); /* replaced, with no window */
    int moved = 0;
    for (int i = 0; i < 1000; i++) {
        char key[16];
        const rk_node *prev = NULL;
        snprintf(key, sizeof key, "k%d", i);
        const rk_node *now = rk_snapshot_owner(s2, key, strlen(key), &prev);
        assert_non_null(prev);
        assert_string_equal(prev->id, rk_snapshot_owner(s1, key, strlen(key), NULL)->id);
        moved += strcmp(now->id, prev->id) != 0;
        /* the bindings' one-call lookup: the owner's index while s2 is in service, -1 for s1 */
        int64_t at = rk_client_lookup_index(c, rk_snapshot_serial(s2), key, strlen(key));
        assert_string_equal(
            rk_topology_node(rk_ring_topology(rk_snapshot_ring(s2)), (size_t)at)->id, now->id);
        assert_int_equal(rk_client_lookup_index(c, rk_snapshot_serial(s1), key, strlen(key)), -1);
    }
    assert_true(moved > 0 && moved < 600);
    assert_true(rk_snapshot_serial(s2) > rk_snapshot_serial(s1));
    const char packed[] = "k1k22k333"; /* "k1", "k22", "" and "k333" */
    size_t lens[] = {2, 3, 0, 4};
    uint32_t many[4];
    assert_int_equal(rk_client_lookup_many(c, rk_snapshot_serial(s1), packed, lens, 4, many), -1);
    assert_int_equal(rk_client_lookup_many(c, rk_snapshot_serial(s2), packed, lens, 4, many), 0);
    for (size_t i = 0, at = 0; i < 4; at += lens[i++])
        assert_int_equal(many[i],
                         rk_client_lookup_index(c, rk_snapshot_serial(s2), packed + at, lens[i]));

    rk_client_drop_previous(c);
    rk_snapshot *s3 = rk_client_acquire(c);
    assert_null(rk_snapshot_previous(s3));
    assert_int_equal(rk_snapshot_version(s3), 2);
    assert_true(rk_snapshot_serial(s3) > rk_snapshot_serial(s2)); /* same ring, a new snapshot */
    assert_int_equal(rk_client_lookup_index(c, rk_snapshot_serial(s2), "k", 1), -1);
    assert_non_null(rk_snapshot_previous(s2)); /* older snapshots keep theirs */
    rk_snapshot_release(s1);
    rk_snapshot_release(s2);
    rk_snapshot_release(s3);
    rk_client_free(c);
}

static void test_expect_refused(void **state)
{
    (void)state;
    rk_error err = {0};
    rk_client_status st;
    publish(&shared, "b", "fnv1a_32", 40, 3);
    rk_client *c = client_for(&shared, "b", NULL);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);

    publish_forced(&shared, "b", "md5_32", 40, 3, 2);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EEXPECT);
    assert_non_null(strstr(err.message, "md5_32"));
    assert_non_null(strstr(err.message, "fnv1a_32"));
    publish_forced(&shared, "b", "fnv1a_32", 50, 3, 3);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EEXPECT);
    assert_non_null(strstr(err.message, "vnode_factor 50"));
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, 1);
    assert_int_equal(st.refused, 2);
    assert_int_equal(st.last_error, RK_EEXPECT);
    rk_snapshot *s = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(s), 1);
    rk_snapshot_release(s);
    rk_client_free(c);

    rk_client_config cfg = {.server = shared.url, .cluster = "b", .expect_hash = "xxh3_64"};
    c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_EEXPECT);
    assert_null(rk_client_acquire(c));
    rk_client_free(c);

    cfg.cluster = "nope";
    c = rk_client_new(&cfg, &err);
    assert_int_equal(rk_client_fetch(c, &err), RK_EHTTP);
    assert_non_null(strstr(err.message, "404"));
    rk_client_status_get(c, &st);
    assert_int_equal(st.errors, 1);
    rk_client_free(c);
}

typedef struct poll_arg {
    rk_client *c;
    int rc, changed;
    double took;
} poll_arg;

static void *long_poll(void *arg)
{
    poll_arg *p = arg;
    double t0 = now_s();
    p->rc = rk_client_refresh(p->c, 10, &p->changed, NULL);
    p->took = now_s() - t0;
    return NULL;
}

static void test_long_poll(void **state)
{
    (void)state;
    pthread_t th;
    rk_error err = {0};
    publish(&shared, "c", "fnv1a_32", 40, 3);
    poll_arg p = {.c = client_for(&shared, "c", NULL)};
    assert_int_equal(rk_client_fetch(p.c, &err), RK_OK);
    assert_int_equal(pthread_create(&th, NULL, long_poll, &p), 0);
    sleep_ms(300);
    publish(&shared, "c", "fnv1a_32", 40, 4);
    pthread_join(th, NULL);
    assert_int_equal(p.rc, RK_OK);
    assert_int_equal(p.changed, 1);
    assert_true(p.took >= 0.2 && p.took < 5);
    rk_client_free(p.c);
}

static void test_last_known_good(void **state)
{
    (void)state;
    server s;
    rk_error err = {0};
    rk_client_status st;
    const char *cache = cache_path("d.lkg"), *corrupt = cache_path("corrupt.lkg");
    server_start(&s, "d1.db");
    publish(&s, "d", "fnv1a_32", 40, 3);
    publish(&s, "d", "fnv1a_32", 40, 4);
    rk_client *c = client_for(&s, "d", cache);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_cache_is_ring(&s, "d", cache);
    rk_client_free(c);
    server_stop(&s);

    c = client_for(&s, "d", cache); /* the server is gone */
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_status_get(c, &st);
    assert_int_equal(st.from_cache, 1);
    assert_int_equal(st.version, 2);
    assert_int_equal(st.last_error, RK_EUNREACHABLE);
    assert_non_null(strstr(st.last_message, "last-known-good"));
    assert_non_null(strstr(err.message, "version 2"));
    rk_client_free(c);

    FILE *f = fopen(corrupt, "w");
    fputs("{\"cluster\": \"d\", \"version\": 9", f);
    fclose(f);
    c = client_for(&s, "d", corrupt);
    rk_client_status_get(c, &st);
    assert_int_equal(st.last_error, RK_ECACHE); /* reported at start */
    assert_int_equal(rk_client_fetch(c, &err), RK_EUNREACHABLE);
    rk_client_status_get(c, &st);
    assert_int_equal(st.last_error, RK_ECACHE);
    assert_null(rk_client_acquire(c));
    rk_client_free(c);

    /* Another database (a restored backup, a new server): its version 1 is not older than the
     * file's 2 but another history; the server's ring is taken, and the file rewritten. */
    server_start(&s, "d2.db");
    publish(&s, "d", "fnv1a_32", 40, 3);
    c = client_for(&s, "d", cache);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_non_null(strstr(err.message, "another history"));
    rk_client_status_get(c, &st);
    assert_int_equal(st.from_cache, 0);
    assert_int_equal(st.version, 1);
    assert_int_equal(st.refused, 0);
    assert_cache_is_ring(&s, "d", cache);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK); /* a 304 for its own ETag */
    assert_non_null(strstr(err.message, "still the active one"));
    rk_client_free(c);
    server_stop(&s);
}

/* Every key of k0..k999 has, as its previous owner in `s`, its owner under a ring of n nodes. */
static void assert_previous_is(rk_snapshot *s, unsigned n)
{
    rk_error err = {0};
    char *t = topology("fnv1a_32", 40, n);
    rk_topology *topo = rk_topology_parse(t, strlen(t), &err);
    rk_ring *ring = topo ? rk_ring_build(topo, &err) : NULL;
    assert_non_null(ring);
    assert_non_null(rk_snapshot_previous(s));
    for (int i = 0; i < 1000; i++) {
        char key[16];
        const rk_node *prev = NULL;
        snprintf(key, sizeof key, "k%d", i);
        rk_snapshot_owner(s, key, strlen(key), &prev);
        assert_non_null(prev);
        const rk_node *want = rk_topology_node(topo, rk_ring_lookup(ring, key, strlen(key)));
        assert_string_equal(prev->id, want->id);
    }
    rk_ring_free(ring);
    rk_topology_free(topo);
    free(t);
}

/* docs/CLIENT.md: a client that starts inside a migration window (from the server, or from its
 * file while the server is down) fetches the previous version by its number and answers both
 * owners; once the window is finished, it drops the previous ring by itself. */
static void test_migration_window(void **state)
{
    (void)state;
    server s;
    rk_error err = {0};
    rk_client_status st;
    int changed = -1;
    const char *cache = cache_path("w.lkg");
    server_start(&s, "w.db");
    publish(&s, "w", "fnv1a_32", 40, 3);
    assert_int_equal(http(&s, "PUT", "/v1/clusters/w/policy", "{\"migration_window\":true}", NULL),
                     200);
    publish(&s, "w", "fnv1a_32", 40, 5); /* v2 over v1: the window opens */

    rk_client *c = client_for(&s, "w", cache);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(err.code, RK_OK);
    rk_snapshot *in = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(in), 2);
    assert_previous_is(in, 3); /* fetched: this client never had version 1 */
    assert_int_equal(rk_snapshot_in_window(in), 1);
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK); /* "v2+": a 304 */
    assert_non_null(strstr(err.message, "still the active one"));
    rk_client_free(c);
    unsigned port = s.port;
    server_stop(&s);

    c = client_for(&s, "w", cache); /* from the file, the server down: no previous ring yet */
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_snapshot *file = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(file), 2);
    assert_null(rk_snapshot_previous(file));
    assert_int_equal(rk_snapshot_in_window(file), 1); /* the file's window, its ring not yet here */
    server_start_at(&s, "w.db", port);                /* where the client looks */
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    rk_snapshot *back = rk_client_acquire(c);
    assert_previous_is(back, 3); /* fetched once the server answers */
    rk_client_status_get(c, &st);
    assert_int_equal(st.last_error, RK_OK);

    assert_int_equal(http(&s, "POST", "/v1/clusters/w/migration/finish", NULL, NULL), 200);
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 0); /* the same ring ... */
    rk_snapshot *done = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(done), 2);
    assert_null(rk_snapshot_previous(done)); /* ... without the previous one */
    assert_int_equal(rk_snapshot_in_window(done), 0);
    assert_previous_is(back, 3);          /* older snapshots keep theirs */
    assert_cache_is_ring(&s, "w", cache); /* the file knows the window closed */
    rk_snapshot_release(in);
    rk_snapshot_release(file);
    rk_snapshot_release(back);
    rk_snapshot_release(done);
    rk_client_free(c);
    server_stop(&s);
}

static void test_refresher(void **state)
{
    (void)state;
    rk_error err = {0};
    rk_client_status st;
    publish(&shared, "e", "fnv1a_32", 40, 3);
    rk_client *c = client_for(&shared, "e", NULL);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(rk_client_start_refresher(c, 30, 100, &err), RK_OK);
    sleep_ms(100);
    publish(&shared, "e", "fnv1a_32", 40, 4);
    double t0 = now_s();
    do {
        sleep_ms(10);
        rk_client_status_get(c, &st);
    } while (st.version != 2 && now_s() - t0 < 5);
    assert_int_equal(st.version, 2);
    sleep_ms(100); /* the refresher is in its next long poll */
    t0 = now_s();
    rk_client_stop_refresher(c);
    assert_true(now_s() - t0 < 0.5);
    rk_client_free(c);
}

/* ---- lookups on 4 threads while another refreshes 1000 times ---- */

typedef struct reader {
    rk_client *c;
    atomic_int *done;
    long lookups;
    int bad;
} reader;

static void *read_loop(void *arg)
{
    reader *r = arg;
    int64_t last = 0;
    for (unsigned i = 0; !atomic_load(r->done); i++) {
        char key[16];
        const rk_node *prev;
        snprintf(key, sizeof key, "key%u", i);
        rk_snapshot *s = rk_client_acquire(r->c);
        const rk_node *n = rk_snapshot_owner(s, key, strlen(key), &prev);
        r->bad += !n || n->id[0] != 'n' || rk_snapshot_version(s) < last;
        r->bad += prev && prev->id[0] != 'n';
        last = rk_snapshot_version(s);
        rk_snapshot_release(s);
        r->lookups++;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    rk_error err = {0};
    rk_client_status st;
    atomic_int done = 0;
    pthread_t th[4];
    reader r[4];
    const char *cache = cache_path("f.lkg");
    publish(&shared, "f", "fnv1a_32", 40, 3);
    rk_client *c = client_for(&shared, "f", cache);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    for (int i = 0; i < 4; i++) {
        r[i] = (reader){.c = c, .done = &done};
        assert_int_equal(pthread_create(&th[i], NULL, read_loop, &r[i]), 0);
    }
    double t0 = now_s();
    int changes = 0;
    for (int i = 0; i < 1000 && now_s() - t0 < 60; i++) {
        int changed = 0;
        if (i % 50 == 49)
            publish(&shared, "f", "fnv1a_32", 40, 3 + (unsigned)(i / 50) % 5);
        assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
        changes += changed;
        if (i % 70 == 0)
            rk_client_drop_previous(c);
    }
    atomic_store(&done, 1);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].bad, 0);
        assert_true(r[i].lookups > 0);
    }
    rk_client_status_get(c, &st);
    assert_int_equal(changes, 20);
    assert_int_equal(st.version, 21);
    assert_int_equal(st.accepted, 21);
    assert_cache_is_ring(&shared, "f", cache);
    rk_client_free(c);
}

/* ---- rk_client_verify on hand-made documents ---- */

/* A version document of cluster "v", version 3, with the real fingerprint unless `fp` is set. */
static char *document(const char *cluster, const char *hash, const char *fp)
{
    char *t = topology(hash, 40, 3);
    rk_error err = {0};
    rk_topology *topo = rk_topology_parse(t, strlen(t), &err);
    assert_non_null(topo);
    rk_ring *ring = rk_ring_build(topo, &err);
    assert_non_null(ring);
    char *doc = malloc(strlen(t) + 256);
    sprintf(doc, "{\"cluster\":\"%s\",\"version\":3,\"state\":\"active\",\"fingerprint\":\"%s\",%s",
            cluster, fp ? fp : rk_ring_fingerprint_hex(ring), t + 1);
    rk_ring_free(ring);
    rk_topology_free(topo);
    free(t);
    return doc;
}

static int verify(const char *text, int64_t min)
{
    rk_error err = {0};
    int64_t v = 0;
    rk_client_config cfg = {.server = "http://x", .cluster = "v", .expect_hash = "fnv1a_32"};
    rk_topology *t = rk_client_verify(&cfg, text, strlen(text), min, &v, &err);
    if (t) {
        assert_int_equal(v, 3);
        rk_topology_free(t);
        return RK_OK;
    }
    assert_true(err.message[0] != '\0');
    return err.code;
}

static void test_verify(void **state)
{
    (void)state;
    char *d = document("v", "fnv1a_32", NULL);
    assert_int_equal(verify(d, 0), RK_OK);
    assert_int_equal(verify(d, 3), RK_OK);
    assert_int_equal(verify(d, 4), RK_EOLDVERSION);
    free(d);
    d = document("w", "fnv1a_32", NULL);
    assert_int_equal(verify(d, 0), RK_ECLUSTER);
    free(d);
    d = document("v", "md5_32", NULL);
    assert_int_equal(verify(d, 0), RK_EEXPECT);
    free(d);
    d = document("v", "fnv1a_32", NULL);
    memcpy(strstr(d, "fnv1a_32"), "sha1x_32", 8); /* a hash this library does not know */
    assert_int_equal(verify(d, 0), RK_EUNKNOWNHASH);
    free(d);
    d = document("v", "fnv1a_32", NULL);
    memcpy(strstr(d, "\"active\""), "\"staged\"", 8); /* published, not the ring */
    assert_int_equal(verify(d, 0), RK_EDOCUMENT);
    free(d);
    d = document("v", "fnv1a_32", "0123456789abcdef");
    assert_int_equal(verify(d, 0), RK_EFINGERPRINT);
    free(d);
    assert_int_equal(verify("[1, 2]", 0), RK_EDOCUMENT);
    assert_int_equal(verify("{\"cluster\":\"v\",\"cluster\":\"v\"}", 0), RK_EDOCUMENT);
    assert_int_equal(verify("{\"cluster\":\"v\",\"version\":0}", 0), RK_EDOCUMENT);
    assert_int_equal(verify("not json", 0), RK_EDOCUMENT);
    size_t deep = 100000;
    char *nest = malloc(2 * deep + 1);
    memset(nest, '[', deep);
    memset(nest + deep, ']', deep);
    nest[2 * deep] = '\0';
    assert_int_equal(verify(nest, 0), RK_EDOCUMENT);
    free(nest);
}

/* A client of `cluster` counted as `id` (NULL: the default one, "": none). */
static rk_client *client_with_id(const server *s, const char *cluster, const char *id)
{
    rk_error err = {0};
    rk_client_config cfg = {.server = s->url, .cluster = cluster, .client_id = id};
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c)
        fail_msg("rk_client_new: %s", err.message);
    return c;
}

/* GET .../clients of `cluster`, the body in *out. */
static void clients_of(const char *cluster, body *out)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clusters/%s/clients", cluster);
    assert_int_equal(http(&shared, "GET", path, NULL, out), 200);
}

static void assert_has(const body *b, const char *text)
{
    if (!strstr(b->data, text))
        fail_msg("no %s in %s", text, b->data);
}

/* Every fetch and long poll sends RK-Client: the configured id, else <hostname>:<pid>; "" none. */
static void test_client_id(void **state)
{
    (void)state;
    rk_error err = {0};
    body b = {0};
    publish(&shared, "ids", "fnv1a_32", 40, 3);
    poll_arg p = {.c = client_with_id(&shared, "ids", "app-7")};
    rk_client *dflt = client_with_id(&shared, "ids", NULL),
              *none = client_with_id(&shared, "ids", "");
    assert_int_equal(rk_client_fetch(p.c, &err), RK_OK);
    assert_int_equal(rk_client_fetch(dflt, &err), RK_OK);
    assert_int_equal(rk_client_fetch(none, &err), RK_OK);
    char host[256] = "", want[512];
    assert_int_equal(gethostname(host, sizeof host - 1), 0);
    /* a first fetch holds nothing yet: it was offered v1 */
    snprintf(want, sizeof want, "{\"id\":\"%s:%ld\",\"held\":null,\"offered\":1,", host,
             (long)getpid());
    clients_of("ids", &b);
    assert_has(&b, "{\"id\":\"app-7\",\"held\":null,\"offered\":1,");
    assert_has(&b, want);
    assert_has(&b, "\"total\":2,\"previous\":null}"); /* "" is not counted */
    free(b.data);

    pthread_t th; /* the long poll holds v1; it is offered v2, and holds it from its next request */
    assert_int_equal(pthread_create(&th, NULL, long_poll, &p), 0);
    sleep_ms(300);
    clients_of("ids", &b);
    assert_has(&b, "{\"id\":\"app-7\",\"held\":1,\"offered\":1,");
    free(b.data);
    publish(&shared, "ids", "fnv1a_32", 40, 4);
    pthread_join(th, NULL);
    assert_int_equal(p.rc, RK_OK);
    clients_of("ids", &b);
    assert_has(&b, "{\"id\":\"app-7\",\"held\":1,\"offered\":2,");
    free(b.data);
    assert_int_equal(rk_client_refresh(p.c, 0, NULL, &err), RK_OK);
    clients_of("ids", &b);
    assert_has(&b, "{\"id\":\"app-7\",\"held\":2,\"offered\":2,");
    free(b.data);
    rk_client_free(p.c);
    rk_client_free(dflt);
    rk_client_free(none);
}

/* SPEC 9, "Clients": a client that refuses the active ring says so in its next requests, with the
 * reason its application got; it is never counted on the refused version, is not sent that ring
 * again (its long polls are held), and its refusal ends when it accepts a newer ring. */
static void test_refusal_reported(void **state)
{
    (void)state;
    rk_error err = {0};
    body b = {0};
    rk_client_config cfg = {.server = shared.url,
                            .cluster = "picky",
                            .expect_hash = "fnv1a_32",
                            .expect_vnode_factor = 40,
                            .client_id = "picky-1"};
    publish(&shared, "picky", "fnv1a_32", 40, 3);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK); /* now it holds v1 */
    publish(&shared, "picky", "fnv1a_32", 160, 3);                /* v2: vnode_factor 160 */
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EEXPECT);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EEXPECT);
        assert_non_null(strstr(err.message, "still refused"));
        assert_non_null(strstr(err.message, "vnode_factor 160"));
        clients_of("picky", &b);
        assert_has(&b, "{\"id\":\"picky-1\",\"held\":1,\"offered\":2,\"refused\":2,"
                       "\"reason\":\"vnode_factor: the server's ring has vnode_factor 160 but");
        assert_has(&b, "\"by_version\":{\"1\":1}");
        assert_has(&b, "\"refusing\":1,");
        assert_has(&b, "\"converged\":false");
        free(b.data);
    }
    double t0 = now_s(); /* the refused ring is not sent again: the poll is held its whole wait */
    assert_int_equal(rk_client_refresh(c, 1, NULL, &err), RK_EEXPECT);
    assert_true(now_s() - t0 >= 0.9);
    rk_snapshot *s = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(s), 1); /* the last good ring stays in service */
    rk_snapshot_release(s);

    publish(&shared, "picky", "fnv1a_32", 40, 4); /* v3: acceptable */
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK);
    clients_of("picky", &b);
    assert_has(&b, "{\"id\":\"picky-1\",\"held\":3,\"offered\":3,\"refused\":null,");
    assert_has(&b, "\"converged\":true");
    free(b.data);
    rk_client_free(c);
}

/* The application's admit check (rk_client_set_admit): a ring it refuses is never in service, its
 * sentence is the refusal the server shows, and the ring is not sent again; a ring it admits is
 * held from the next request. It sees each new ring once, not the one in service again. */
typedef struct admit_arg {
    int64_t refuse; /* the version to refuse */
    int calls;      /* rings seen */
} admit_arg;

static int admit(void *arg, const rk_ring *ring, int64_t version, rk_error *why)
{
    admit_arg *a = arg;
    a->calls++;
    assert_non_null(rk_ring_topology(ring));
    if (version != a->refuse)
        return RK_OK;
    return rk_error_set(why, RK_EIO, NULL, "validate: the proxy refused v%lld", (long long)version);
}

static void test_admit(void **state)
{
    (void)state;
    rk_error err = {0};
    body b = {0};
    admit_arg arg = {.refuse = 2};
    publish(&shared, "gated", "fnv1a_32", 40, 3);
    rk_client *c = client_with_id(&shared, "gated", "gate-1");
    rk_client_set_admit(c, admit, &arg);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK); /* 304: the same ring, unseen */
    assert_int_equal(arg.calls, 1);
    publish(&shared, "gated", "fnv1a_32", 40, 4);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EIO);
    assert_string_equal(err.message, "validate: the proxy refused v2");
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EIO); /* said, and not sent again */
    assert_non_null(strstr(err.message, "still refused"));
    assert_int_equal(arg.calls, 2);
    rk_snapshot *s = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(s), 1);
    rk_snapshot_release(s);
    clients_of("gated", &b);
    assert_has(&b, "{\"id\":\"gate-1\",\"held\":1,\"offered\":2,\"refused\":2,"
                   "\"reason\":\"validate: the proxy refused v2\"");
    free(b.data);
    publish(&shared, "gated", "fnv1a_32", 40, 5); /* v3: admitted, then held */
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK);
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_OK);
    assert_int_equal(arg.calls, 3);
    clients_of("gated", &b);
    assert_has(&b, "{\"id\":\"gate-1\",\"held\":3,\"offered\":3,\"refused\":null,");
    free(b.data);
    rk_client_free(c);
}

/* A last-known-good file that group or others may write (a 0666 left by an installer) could plant
 * the ring a client starts from: the next save takes their write away, and says so. */
static void test_cache_mode_tightened(void **state)
{
    (void)state;
    rk_error err = {0};
    struct stat st;
    const char *cache = cache_path("open.lkg");
    FILE *f = fopen(cache, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(cache, 0666), 0);
    publish(&shared, "open", "fnv1a_32", 40, 3);
    rk_client *c = client_for(&shared, "open", cache);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(stat(cache, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_non_null(strstr(err.message, "was writable by group or others (mode 0666)"));
    assert_non_null(strstr(err.message, "its mode is now 0644"));
    rk_client_free(c);
    assert_int_equal(chmod(cache, 0640), 0); /* an owner's own choice that gives no write stays */
    publish(&shared, "open", "fnv1a_32", 40, 4);
    c = client_for(&shared, "open", cache);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(stat(cache, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_null(strstr(err.message, "writable"));
    rk_client_free(c);
}

/* An id that breaks the rule is refused at rk_client_new, naming the field. */
static void test_client_id_invalid(void **state)
{
    (void)state;
    char long_id[RK_CLIENT_ID_MAX + 2];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    const char *const bad[] = {"two words", "ctl\x01", "caf\xc3\xa9", long_id};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rk_error err = {0};
        rk_client_config cfg = {
            .server = "http://127.0.0.1:1", .cluster = "c", .client_id = bad[i]};
        assert_null(rk_client_new(&cfg, &err));
        assert_int_equal(err.code, RK_EINVAL);
        assert_string_equal(err.field, "client_id");
    }
    long_id[RK_CLIENT_ID_MAX] = '\0'; /* 128 bytes: the longest id */
    rk_client_config cfg = {.server = "http://127.0.0.1:1", .cluster = "c", .client_id = long_id};
    rk_client *c = rk_client_new(&cfg, NULL);
    assert_non_null(c);
    rk_client_free(c);
}

/* An application's product (User-Agent) outside its rule is refused, naming the field. */
static void test_product_invalid(void **state)
{
    (void)state;
    char longest[RK_PRODUCT_MAX + 2];
    memset(longest, 'p', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    const char *const bad[] = {"tab\there", "caf\xc3\xa9", longest};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rk_error err = {0};
        rk_client_config cfg = {.server = "http://127.0.0.1:1", .cluster = "c", .product = bad[i]};
        assert_null(rk_client_new(&cfg, &err));
        assert_string_equal(err.field, "product");
    }
    longest[RK_PRODUCT_MAX] = '\0';
    rk_client_config cfg = {.server = "http://127.0.0.1:1", .cluster = "c", .product = longest};
    rk_client *c = rk_client_new(&cfg, NULL);
    assert_non_null(c);
    rk_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_product_invalid),
        cmocka_unit_test(test_fetch_refresh),
        cmocka_unit_test(test_expect_refused),
        cmocka_unit_test(test_long_poll),
        cmocka_unit_test(test_last_known_good),
        cmocka_unit_test(test_refresher),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_migration_window),
        cmocka_unit_test(test_client_id),
        cmocka_unit_test(test_client_id_invalid),
        cmocka_unit_test(test_refusal_reported),
        cmocka_unit_test(test_cache_mode_tightened),
        cmocka_unit_test(test_admit),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
