/* test_copy.c — the mover's copy engine (client/mover/copy.h) against real memcached and
 * redis-server, every test once per store: a cluster grows from three nodes to four (n1's weight
 * doubles, n3 is new); each source's moving keys reach their new owners with their values and
 * TTLs, nothing else moves, a value already there is never written over, counters add up, verify
 * finds exactly the differences made, a paused or killed copy resumes redoing at most one batch,
 * and the throttle holds 500 keys/s. test_copy.sh starts the servers and says where:
 * RKM_MEMCACHED_NODES and RKM_REDIS_NODES, four "host:port" each, the data servers of n0 .. n3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <libmemcached/memcached.h>

#include "copy.h"

#define SERVERS   4    /* n0 .. n3: server i is node "n<i>"'s in both topologies */
#define KEYS      5000 /* keys placed by the old ring */
#define STRAYS    20   /* keys on a source that does not own them under the old ring */
#define CONTESTED 3    /* moving keys whose new owner already holds another value */
#define CAP       4096 /* the connections' size cap */
#define BIG_BYTES 5000 /* every 1000th value: over the cap */
#define TTL_S     300  /* every fifth key's TTL */
#define BATCH     100  /* keys per batch */
#define VALUE_MAX BIG_BYTES
#define KEY_MAX   64

/* What the model says of key i. */
typedef struct key_fate {
    int old_srv, new_srv; /* the servers of its owners under the old and new rings */
    bool big;             /* over the cap: never copied */
    bool contested;       /* its new owner holds "theirs" before the copy */
} key_fate;

typedef struct fixture {
    const char *store;         /* "memcached" or "redis" */
    const char *env;           /* the variable test_copy.sh sets */
    bool relay;                /* Redis: values through the engine, not MIGRATE (--relay) */
    char addr[SERVERS][64];    /* its four addresses */
    memcached_st *mc[SERVERS]; /* memcached: the servers directly, behind the engine's back */
    redisContext *rd[SERVERS]; /* Redis: the same */
    rkm_conn *conn[SERVERS];   /* the engine's connections, capped at CAP */
    rk_ring *old_ring, *new_ring;
    rkm_conn *dest[SERVERS]; /* by new_ring's node index */
    rkm_conn *over[SERVERS]; /* the same, opened with overwrite (a catch-up's), or NULL */
    bool delete_matched;     /* what config_of's verifies do: delete_source */
    bool catch_up;           /* a pre-warm's catch-up, through `over` */
    key_fate fate[KEYS];
} fixture;

/* ---- the servers, directly ---- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        fail_msg("%s is not set: run test_copy.sh", name);
    return v;
}

static void redis_ok(void *reply, int type)
{
    redisReply *rep = reply;
    assert_non_null(rep);
    assert_int_equal(rep->type, type);
    freeReplyObject(rep);
}

static void raw_open(fixture *f, int s)
{
    char host[64];
    unsigned port = 0;
    assert_int_equal(sscanf(f->addr[s], "%63[^:]:%u", host, &port), 2);
    if (strcmp(f->store, "redis") == 0) {
        f->rd[s] = redisConnect(host, (int)port);
        assert_true(f->rd[s] && !f->rd[s]->err);
        redis_ok(redisCommand(f->rd[s], "FLUSHALL"), REDIS_REPLY_STATUS);
        return;
    }
    f->mc[s] = memcached_create(NULL);
    assert_int_equal(memcached_server_add(f->mc[s], host, (in_port_t)port), MEMCACHED_SUCCESS);
    assert_int_equal(memcached_flush(f->mc[s], 0), MEMCACHED_SUCCESS);
}

/* key = val on server s, with a TTL of ttl_s (0: none). */
static void raw_set(const fixture *f, int s, const char *key, size_t klen, const char *val,
                    size_t vlen, int ttl_s)
{
    if (f->rd[s] && ttl_s)
        redis_ok(redisCommand(f->rd[s], "SET %b %b EX %d", key, klen, val, vlen, ttl_s),
                 REDIS_REPLY_STATUS);
    else if (f->rd[s])
        redis_ok(redisCommand(f->rd[s], "SET %b %b", key, klen, val, vlen), REDIS_REPLY_STATUS);
    else
        assert_int_equal(memcached_set(f->mc[s], key, klen, val, vlen, ttl_s, 0),
                         MEMCACHED_SUCCESS);
}

static void raw_del(const fixture *f, int s, const char *key, size_t klen)
{
    if (f->rd[s])
        redis_ok(redisCommand(f->rd[s], "DEL %b", key, klen), REDIS_REPLY_INTEGER);
    else
        assert_int_equal(memcached_delete(f->mc[s], key, klen, 0), MEMCACHED_SUCCESS);
}

/* The value of key on server s into buf (VALUE_MAX bytes): its length, or -1 when absent. */
static long raw_get(const fixture *f, int s, const char *key, size_t klen, char *buf)
{
    long n = -1;
    if (f->rd[s]) {
        redisReply *rep = redisCommand(f->rd[s], "GET %b", key, klen);
        assert_non_null(rep);
        if (rep->type == REDIS_REPLY_STRING && rep->len <= VALUE_MAX) {
            memcpy(buf, rep->str, rep->len);
            n = (long)rep->len;
        }
        freeReplyObject(rep);
        return n;
    }
    size_t len;
    uint32_t flags;
    memcached_return_t rc;
    char *v = memcached_get(f->mc[s], key, klen, &len, &flags, &rc);
    if (v && memcached_success(rc) && len <= VALUE_MAX) {
        memcpy(buf, v, len);
        n = (long)len;
    }
    free(v);
    return n;
}

static int count_key(void *ctx, const rkm_key *key, rk_error *err)
{
    (void)key;
    (void)err;
    (*(size_t *)ctx)++;
    return RK_OK;
}

/* Keys on server s, by the engine's own scan. */
static size_t server_keys(const fixture *f, int s)
{
    rkm_cursor cursor = {.pos = ""};
    rk_error err = {0};
    size_t n = 0;
    while (!cursor.done)
        if (rkm_scan(f->conn[s], &cursor, RKM_SCAN_MAX, count_key, &n, &err) != RK_OK)
            fail_msg("scan %s: %s", f->addr[s], err.message);
    return n;
}

static rkm_sum sum_of(const fixture *f, int s, const char *key, size_t len)
{
    rkm_sum sum;
    rk_error err = {0};
    if (rkm_checksum(f->conn[s], key, len, &sum, &err) != RK_OK)
        fail_msg("checksum on %s: %s", f->addr[s], err.message);
    return sum;
}

/* ---- the cluster and its keys ---- */

static rk_ring *ring_of(const char *const *ids, const uint32_t *weights, size_t n, const fixture *f)
{
    rk_node nodes[SERVERS];
    rk_error err = {0};
    for (size_t i = 0; i < n; i++)
        nodes[i] = (rk_node){.id = ids[i], .addr = f->addr[ids[i][1] - '0'], .weight = weights[i]};
    rk_topology *t = rk_topology_new(RK_HASH_XXH3_64, 100, nodes, n, NULL, &err);
    if (!t)
        fail_msg("topology: %s", err.message);
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t); /* the ring keeps its own reference */
    assert_non_null(r);
    return r;
}

/* The server of node `i` of ring `r`: ids are "n<server>". */
static int server_of(const rk_ring *r, uint32_t i)
{
    return rk_topology_node(rk_ring_topology(r), i)->id[1] - '0';
}

static size_t key_of(int i, char *buf)
{
    static const char *const forms[] = {"k-%d", "\xc3\xa9t\xc3\xa9-%d", "\xff\x80-%d"};
    return (size_t)snprintf(buf, KEY_MAX, forms[i % 3], i);
}

static size_t stray_of(int i, char *buf)
{
    return (size_t)snprintf(buf, KEY_MAX, "stray-%d", i);
}

/* Key i's value: bytes >= 0x80 in every fourth, BIG_BYTES incompressible bytes in every 1000th
 * (Redis's DUMP would pack repeats under the cap). */
static size_t value_of(int i, char *buf)
{
    if (i % 1000 == 999) {
        uint32_t x = 2463534242u + (uint32_t)i;
        for (size_t j = 0; j < BIG_BYTES; j++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            buf[j] = (char)x;
        }
        return BIG_BYTES;
    }
    return (size_t)snprintf(buf, VALUE_MAX, i % 4 ? "value %d" : "\xfe\xc3\xa9 value %d", i);
}

static int ttl_of(int i)
{
    return i % 5 == 0 ? TTL_S : 0;
}

static bool moves(const key_fate *k)
{
    return k->old_srv != k->new_srv;
}

/* Places every key on its old owner, the strays on the next source, and "theirs" under the first
 * CONTESTED moving keys on their new owners (when `contest`); notes each key's fate. */
static void fill(fixture *f, bool contest)
{
    char key[KEY_MAX], val[VALUE_MAX];
    int contested = 0;
    for (int i = 0; i < KEYS; i++) {
        size_t klen = key_of(i, key), vlen = value_of(i, val);
        key_fate *k = &f->fate[i];
        k->old_srv = server_of(f->old_ring, rk_ring_lookup(f->old_ring, key, klen));
        k->new_srv = server_of(f->new_ring, rk_ring_lookup(f->new_ring, key, klen));
        k->big = vlen > CAP;
        k->contested = contest && contested < CONTESTED && moves(k) && !k->big;
        contested += k->contested;
        raw_set(f, k->old_srv, key, klen, val, vlen, ttl_of(i));
        if (k->contested)
            raw_set(f, k->new_srv, key, klen, "theirs", 6, 0);
    }
    for (int i = 0; i < STRAYS; i++) {
        size_t klen = stray_of(i, key);
        int owner = server_of(f->old_ring, rk_ring_lookup(f->old_ring, key, klen));
        raw_set(f, (owner + 1) % 3, key, klen, "astray", 6, 0);
    }
}

static int setup(void **state)
{
    fixture *f = *state;
    static const char *const old_ids[] = {"n0", "n1", "n2"};
    static const uint32_t old_w[] = {1, 1, 1};
    /* another order than the old one: indexes differ between the topologies, ids do not */
    static const char *const new_ids[] = {"n3", "n2", "n1", "n0"};
    static const uint32_t new_w[] = {1, 1, 2, 1};
    rkm_options opt = {.max_value_bytes = CAP, .relay = f->relay};
    rk_error err = {0};
    const char *list = env(f->env);
    memset(f->mc, 0, sizeof f->mc);
    memset(f->rd, 0, sizeof f->rd);
    memset(f->over, 0, sizeof f->over);
    f->delete_matched = f->catch_up = false;
    for (int s = 0; s < SERVERS; s++) {
        size_t n = strcspn(list, ",");
        snprintf(f->addr[s], sizeof f->addr[s], "%.*s", (int)n, list);
        list += n + (list[n] == ',');
        raw_open(f, s);
        f->conn[s] = rkm_conn_new(f->store, f->addr[s], &opt, &err);
        if (!f->conn[s])
            fail_msg("%s: %s", f->addr[s], err.message);
    }
    f->old_ring = ring_of(old_ids, old_w, 3, f);
    f->new_ring = ring_of(new_ids, new_w, 4, f);
    for (uint32_t j = 0; j < SERVERS; j++)
        f->dest[j] = f->conn[server_of(f->new_ring, j)];
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int s = 0; s < SERVERS; s++) {
        rkm_conn_free(f->conn[s]);
        rkm_conn_free(f->over[s]);
        memcached_free(f->mc[s]);
        redisFree(f->rd[s]);
    }
    rk_ring_free(f->old_ring);
    rk_ring_free(f->new_ring);
    return 0;
}

/* The engine's view of source s (old_ring's node s: the old topology lists n0, n1, n2). */
static rkm_copy_config config_of(fixture *f, int s)
{
    return (rkm_copy_config){.old_ring = f->old_ring,
                             .new_ring = f->new_ring,
                             .source = (uint32_t)s,
                             .src = f->conn[s],
                             .dest = f->catch_up ? f->over : f->dest,
                             .n_dest = SERVERS,
                             .batch = BATCH,
                             .delete_matched = f->delete_matched,
                             .catch_up = f->catch_up};
}

/* ---- what must hold ---- */

/* Key i is where the model says: on its old owner, and when it moves on its new owner with the same
 * value and TTL (±2 s); "theirs" stays "theirs", big keys stay. */
static void assert_key_placed(const fixture *f, int i)
{
    char key[KEY_MAX], want[VALUE_MAX], got[VALUE_MAX];
    size_t klen = key_of(i, key), vlen = value_of(i, want);
    const key_fate *k = &f->fate[i];
    assert_int_equal(raw_get(f, k->old_srv, key, klen, got), (long)vlen);
    if (!moves(k))
        return;
    long n = raw_get(f, k->new_srv, key, klen, got);
    if (k->big || k->contested) {
        assert_int_equal(n, k->big ? -1 : 6);
        assert_true(k->big || memcmp(got, "theirs", 6) == 0);
        return;
    }
    assert_int_equal(n, (long)vlen);
    assert_memory_equal(got, want, vlen);
    rkm_sum a = sum_of(f, k->old_srv, key, klen), b = sum_of(f, k->new_srv, key, klen);
    if (ttl_of(i) == 0)
        assert_true(a.ttl_ms == RKM_TTL_NONE && b.ttl_ms == RKM_TTL_NONE);
    else
        assert_true(llabs((long long)(a.ttl_ms - b.ttl_ms)) <= 2000 && b.ttl_ms > 0);
}

/* Every key where the model says, and no other key anywhere: each server holds exactly what was
 * placed on it and what moved to it. */
static void assert_placed(const fixture *f)
{
    size_t want[SERVERS] = {0};
    char key[KEY_MAX];
    for (int i = 0; i < STRAYS; i++) {
        size_t klen = stray_of(i, key);
        int owner = server_of(f->old_ring, rk_ring_lookup(f->old_ring, key, klen));
        want[(owner + 1) % 3]++;
    }
    for (int i = 0; i < KEYS; i++) {
        assert_key_placed(f, i);
        want[f->fate[i].old_srv]++;
        want[f->fate[i].new_srv] += moves(&f->fate[i]) && !f->fate[i].big;
    }
    for (int s = 0; s < SERVERS; s++)
        assert_int_equal(server_keys(f, s), want[s]);
}

/* The keys of source s (-1: of every source): moving, of those big, contested; staying. */
typedef struct tally {
    uint64_t moving, big, contested, stay;
} tally;

static tally tally_of(const fixture *f, int s)
{
    tally t = {0};
    for (int i = 0; i < KEYS; i++) {
        const key_fate *k = &f->fate[i];
        if (s >= 0 && k->old_srv != s)
            continue;
        t.stay += !moves(k);
        t.moving += moves(k);
        t.big += moves(k) && k->big;
        t.contested += k->contested;
    }
    return t;
}

static void assert_adds_up(const rkm_copy_counters *c)
{
    assert_int_equal(c->rule.scanned, c->rule.stay + c->rule.not_owned + c->rule.later + c->copied +
                                          c->present + c->skipped + c->expired + c->errors);
}

static void add_counters(rkm_copy_counters *sum, const rkm_copy_counters *c)
{
    sum->rule.scanned += c->rule.scanned;
    sum->rule.stay += c->rule.stay;
    sum->rule.not_owned += c->rule.not_owned;
    sum->copied += c->copied;
    sum->present += c->present;
    sum->skipped += c->skipped;
    sum->bytes += c->bytes;
    sum->errors += c->errors;
    sum->expired += c->expired;
}

/* Copies every source in turn, n0 first; the counters of all. */
static rkm_copy_counters copy_all(fixture *f)
{
    rkm_copy_counters sum = {0};
    for (int s = 0; s < 3; s++) {
        rkm_copy_config cfg = config_of(f, s);
        rkm_copy_state st;
        rk_error err = {0};
        rkm_copy_state_init(&st);
        if (rkm_copy_run(&cfg, &st, NULL, NULL, &err) != RK_OK)
            fail_msg("copy from n%d: %s", s, err.message);
        assert_true(st.cursor.done && !st.stopped);
        assert_adds_up(&st.counters);
        assert_int_equal(st.counters.skipped, st.skipped.n); /* fewer than RKM_LIST_MAX */
        for (size_t j = 0; j < st.skipped.n; j++)
            assert_true(st.skipped.items[j].number >= BIG_BYTES);
        assert_int_equal(st.failed.n, 0);
        add_counters(&sum, &st.counters);
        rkm_copy_state_deinit(&st);
    }
    return sum;
}

/* Keys a source holds but does not own when its turn comes (n0, n1, n2 in order): the strays
 * put there, and keys copied to it by the sources before it or put there as "theirs". */
static uint64_t not_owned_of(const fixture *f)
{
    uint64_t n = STRAYS;
    for (int i = 0; i < KEYS; i++) {
        const key_fate *k = &f->fate[i];
        n += moves(k) && !k->big && k->new_srv < 3 && (k->contested || k->old_srv < k->new_srv);
    }
    return n;
}

/* Bytes of the values copied, as memcached gives them back. */
static uint64_t bytes_of(const fixture *f)
{
    char val[VALUE_MAX];
    uint64_t n = 0;
    for (int i = 0; i < KEYS; i++) {
        const key_fate *k = &f->fate[i];
        n += moves(k) && !k->big && !k->contested ? value_of(i, val) : 0;
    }
    return n;
}

/* ---- verify ---- */

typedef struct mismatch {
    int key;    /* its i */
    int reason; /* an rkm_mismatch */
} mismatch;

/* Verifies every source; asserts that the mismatches are exactly `want` (n of them), that the
 * counters add up, and that every other moving key matched or was skipped. Their sums. */
static rkm_verify_counters assert_verify(fixture *f, const mismatch *want, size_t n)
{
    char key[KEY_MAX];
    tally t = tally_of(f, -1);
    rkm_verify_counters sum = {0};
    size_t found = 0;
    for (int s = 0; s < 3; s++) {
        rkm_copy_config cfg = config_of(f, s);
        rkm_verify_state st;
        rk_error err = {0};
        rkm_verify_state_init(&st);
        if (rkm_verify_run(&cfg, &st, NULL, NULL, &err) != RK_OK)
            fail_msg("verify n%d: %s", s, err.message);
        const rkm_verify_counters *c = &st.counters;
        assert_int_equal(c->rule.scanned - c->rule.stay - c->rule.not_owned,
                         c->checked + c->expired + c->errors);
        assert_int_equal(c->checked, c->matched + c->skipped + c->missing + c->value + c->ttl);
        assert_int_equal(st.mismatches.n, c->missing + c->value + c->ttl);
        for (size_t j = 0; j < st.mismatches.n; j++) {
            const rkm_listed *e = &st.mismatches.items[j];
            size_t w = 0;
            while (w < n && (key_of(want[w].key, key) != e->len || memcmp(key, e->key, e->len)))
                w++;
            if (w == n)
                fail_msg("unexpected mismatch (%s) of '%.*s'", rkm_mismatch_name((int)e->number),
                         (int)e->len, e->key);
            assert_string_equal(rkm_mismatch_name((int)e->number),
                                rkm_mismatch_name(want[w].reason));
            found++;
        }
        sum.checked += c->checked;
        sum.matched += c->matched;
        sum.updated += c->updated;
        sum.deleted += c->deleted;
        sum.skipped += c->skipped;
        sum.errors += c->errors;
        sum.expired += c->expired;
        rkm_verify_state_deinit(&st);
    }
    assert_int_equal(found, n);
    assert_int_equal(sum.checked, t.moving);
    assert_int_equal(sum.skipped, t.big);
    assert_int_equal(sum.errors + sum.expired, 0);
    return sum;
}

/* The first moving key that is neither big nor contested from `from` on, with a TTL or not. */
static int plain_mover(const fixture *f, int from, bool with_ttl)
{
    for (int i = from; i < KEYS; i++) {
        const key_fate *k = &f->fate[i];
        if (moves(k) && !k->big && !k->contested && (ttl_of(i) != 0) == with_ttl)
            return i;
    }
    fail_msg("no such key");
    return -1;
}

/* ---- the tests ---- */

static void copies_moving_keys(void **state)
{
    fixture *f = *state;
    fill(f, true);
    tally t = tally_of(f, -1);
    rkm_copy_counters c = copy_all(f);
    assert_true(t.moving > KEYS / 4 && t.big >= 1 && t.contested == CONTESTED);
    assert_int_equal(c.copied, t.moving - t.big - t.contested);
    assert_int_equal(c.present, CONTESTED);
    assert_int_equal(c.skipped, t.big);
    assert_int_equal(c.rule.stay, t.stay);
    assert_int_equal(c.rule.not_owned, not_owned_of(f));
    assert_int_equal(c.errors + c.expired, 0);
    if (f->mc[0])
        assert_int_equal(c.bytes, bytes_of(f));
    else /* DUMP payloads: the value and a few bytes more */
        assert_true(c.bytes > bytes_of(f));
    assert_placed(f);
}

/* Fills with contested keys and copies every source; the mismatches a verify must find then,
 * the contested keys' values, into want (CONTESTED of them); returns how many. */
static size_t copy_contested(fixture *f, mismatch *want)
{
    size_t n = 0;
    fill(f, true);
    copy_all(f);
    for (int i = 0; i < KEYS; i++)
        if (f->fate[i].contested)
            want[n++] = (mismatch){i, RKM_VALUE};
    return n;
}

/* A clean copy verifies but for the contested keys, whose new owners hold a client's value; then
 * a changed value, a deleted copy and a changed TTL are found, each for what it is. */
static void verify_finds_differences(void **state)
{
    fixture *f = *state;
    char key[KEY_MAX], val[VALUE_MAX];
    mismatch want[CONTESTED + 3];
    size_t n = copy_contested(f, want);
    assert_int_equal(assert_verify(f, want, n).deleted, 0);
    assert_placed(f); /* a verify without delete_source only reads */

    int changed = plain_mover(f, 0, false), gone = plain_mover(f, changed + 1, false);
    int ttl = plain_mover(f, 0, true);
    size_t klen = key_of(changed, key);
    raw_set(f, f->fate[changed].new_srv, key, klen, "changed", 7, 0);
    klen = key_of(gone, key);
    raw_del(f, f->fate[gone].new_srv, key, klen);
    klen = key_of(ttl, key);
    raw_set(f, f->fate[ttl].new_srv, key, klen, val, value_of(ttl, val), TTL_S * 3);
    want[n++] = (mismatch){changed, RKM_VALUE};
    want[n++] = (mismatch){gone, RKM_MISSING};
    want[n++] = (mismatch){ttl, RKM_TTL};
    assert_verify(f, want, n);
}

/* delete_source: each key verify found matched is deleted from its source, right after; a
 * contested key (a client's value on its new owner) is a mismatch and stays on its source, as
 * do the keys over the cap (skipped) and the keys that stay. */
static void verify_deletes_matched(void **state)
{
    fixture *f = *state;
    char key[KEY_MAX], got[VALUE_MAX], val[VALUE_MAX];
    mismatch want[CONTESTED];
    size_t n = copy_contested(f, want);
    f->delete_matched = true;
    tally t = tally_of(f, -1);
    rkm_verify_counters c = assert_verify(f, want, n);
    assert_int_equal(c.deleted, t.moving - t.big - t.contested);
    assert_int_equal(c.deleted, c.matched);
    for (int i = 0; i < KEYS; i++) {
        const key_fate *k = &f->fate[i];
        size_t klen = key_of(i, key);
        bool gone = moves(k) && !k->big && !k->contested;
        assert_int_equal(raw_get(f, k->old_srv, key, klen, got) < 0, gone);
        if (gone)
            assert_int_equal(raw_get(f, k->new_srv, key, klen, got), (long)value_of(i, val));
    }
    f->delete_matched = false; /* again, read-only: what was deleted is gone, not a mismatch */
    for (int s = 0; s < 3; s++) {
        rkm_copy_config cfg = config_of(f, s);
        rkm_verify_state st;
        rk_error err = {0};
        rkm_verify_state_init(&st);
        assert_int_equal(rkm_verify_run(&cfg, &st, NULL, NULL, &err), RK_OK);
        assert_int_equal(st.counters.missing + st.counters.ttl, 0);
        assert_int_equal(st.counters.deleted, 0);
        rkm_verify_state_deinit(&st);
    }
}

/* Connections to every server that may be written over, by new_ring's node index, as a
 * pre-warm's worker opens them. */
static void open_over(fixture *f)
{
    rk_error err = {0};
    rkm_options opt = {.max_value_bytes = CAP, .overwrite = true};
    for (uint32_t j = 0; j < SERVERS; j++) {
        f->over[j] = rkm_conn_new(f->store, f->addr[server_of(f->new_ring, j)], &opt, &err);
        if (!f->over[j])
            fail_msg("%s", err.message);
    }
}

/* The writes the gates refuse: a catch-up over connections that may not overwrite, one that
 * also deletes, and a copy asked to do either. */
static void assert_gates(fixture *f)
{
    rkm_copy_config cfg = config_of(f, 0);
    rkm_verify_state vs;
    rkm_copy_state cs;
    rk_error err = {0};
    rkm_verify_state_init(&vs);
    rkm_copy_state_init(&cs);
    cfg.dest = f->dest;
    assert_int_equal(rkm_verify_run(&cfg, &vs, NULL, NULL, &err), RK_EINVAL);
    assert_non_null(strstr(err.message, "overwrite"));
    cfg = config_of(f, 0);
    cfg.delete_matched = true;
    assert_int_equal(rkm_verify_run(&cfg, &vs, NULL, NULL, &err), RK_EINVAL);
    assert_int_equal(rkm_copy_run(&cfg, &cs, NULL, NULL, &err), RK_EINVAL);
    cfg.catch_up = false;
    assert_int_equal(rkm_copy_run(&cfg, &cs, NULL, NULL, &err), RK_EINVAL);
    assert_int_equal(vs.counters.rule.scanned + cs.counters.rule.scanned, 0);
    rkm_verify_state_deinit(&vs);
    rkm_copy_state_deinit(&cs);
}

/* A pre-warm: after the copy, clients change keys on the sources (a new value, a new TTL) and a
 * copy is lost; the catch-up writes each source's value over its new owner's and then matches,
 * nothing else changes, and a read-only verify after it is clean. */
static void catch_up_writes_newer_values(void **state)
{
    fixture *f = *state;
    char key[KEY_MAX], val[VALUE_MAX], got[VALUE_MAX];
    size_t on_source[3];
    fill(f, false);
    copy_all(f);
    int newer = plain_mover(f, 0, false), renewed = plain_mover(f, 0, true);
    int lost = plain_mover(f, newer + 1, false); /* its copy gone: written again */
    for (int s = 0; s < 3; s++)                  /* the sources are destinations too */
        on_source[s] = server_keys(f, s);
    size_t klen = key_of(newer, key);
    raw_set(f, f->fate[newer].old_srv, key, klen, "newer", 5, 0);
    klen = key_of(renewed, key);
    raw_set(f, f->fate[renewed].old_srv, key, klen, val, value_of(renewed, val), TTL_S * 3);
    klen = key_of(lost, key);
    raw_del(f, f->fate[lost].new_srv, key, klen);
    open_over(f);
    f->catch_up = true;
    assert_gates(f);
    assert_int_equal(assert_verify(f, NULL, 0).updated, 3);
    klen = key_of(newer, key);
    assert_int_equal(raw_get(f, f->fate[newer].new_srv, key, klen, got), 5);
    assert_memory_equal(got, "newer", 5);
    klen = key_of(renewed, key);
    assert_true(sum_of(f, f->fate[renewed].new_srv, key, klen).ttl_ms > TTL_S * 2 * 1000);
    for (int s = 0; s < 3; s++)
        assert_int_equal(server_keys(f, s), on_source[s]);
    assert_int_equal(assert_verify(f, NULL, 0).updated, 0); /* nothing left to catch up */
    f->catch_up = false;
    assert_int_equal(assert_verify(f, NULL, 0).matched,
                     tally_of(f, -1).moving - tally_of(f, -1).big);
}

/* What a progress callback saw, and when it stops the copy. */
typedef struct watch {
    int calls;                     /* progress calls so far */
    int stop_at;                   /* the call that answers RKM_STOP */
    int fail_at;                   /* the call that answers RK_EIO (0: none) */
    rkm_cursor cursor[3];          /* at calls 1 and 2 */
    rkm_copy_counters counters[3]; /* with cursor */
} watch;

static int watch_progress(void *ctx, const rkm_copy_state *s)
{
    watch *w = ctx;
    w->calls++;
    if (w->calls < 3) {
        w->cursor[w->calls] = s->cursor;
        w->counters[w->calls] = s->counters;
    }
    if (w->calls == w->fail_at)
        return RK_EIO;
    return w->calls == w->stop_at ? RKM_STOP : RK_OK;
}

/* The keys of source s a copy writes: moving and not big. */
static uint64_t copyable_of(const fixture *f, int s)
{
    tally t = tally_of(f, s);
    return t.moving - t.big;
}

/* Paused after two batches and resumed on the same connections: the copy goes on where it
 * stopped, redoing nothing. */
static void resumes_after_pause(void **state)
{
    fixture *f = *state;
    rkm_copy_config cfg = config_of(f, 0);
    rkm_copy_state st;
    watch w = {.stop_at = 2};
    rk_error err = {0};
    fill(f, false);
    rkm_copy_state_init(&st);
    assert_int_equal(rkm_copy_run(&cfg, &st, watch_progress, &w, &err), RK_OK);
    assert_true(st.stopped && !st.cursor.done);
    assert_int_equal(w.calls, 2);
    assert_true(st.counters.rule.scanned >= 2 && st.counters.copied > 0);
    assert_int_equal(st.counters.rule.scanned, w.counters[2].rule.scanned); /* at the boundary */
    assert_int_equal(rkm_copy_run(&cfg, &st, NULL, NULL, &err), RK_OK);
    assert_true(!st.stopped && st.cursor.done);
    assert_int_equal(st.counters.present, 0);
    assert_int_equal(st.counters.copied, copyable_of(f, 0));
    assert_int_equal(st.counters.rule.scanned,
                     tally_of(f, 0).moving + tally_of(f, 0).stay + st.counters.rule.not_owned);
    assert_adds_up(&st.counters);
    for (int i = 0; i < KEYS; i++)
        if (f->fate[i].old_srv == 0)
            assert_key_placed(f, i);
    rkm_copy_state_deinit(&st);
}

/* Killed after its second batch, before that batch's report arrived: a new worker, with new
 * connections, resumes from the first report. Redis's SCAN goes on from its cursor, redoing the
 * one batch (its keys are present now); memcached's metadump has no cursor, so the new stream
 * starts over and every key passed before comes again as present (docs/MIGRATE.md). */
static void resumes_after_kill(void **state)
{
    fixture *f = *state;
    rkm_copy_config cfg = config_of(f, 0);
    rkm_copy_state st, again;
    watch w = {.stop_at = 2};
    rk_error err = {0};
    fill(f, false);
    rkm_copy_state_init(&st);
    assert_int_equal(rkm_copy_run(&cfg, &st, watch_progress, &w, &err), RK_OK);
    rkm_copy_state_deinit(&st);
    rkm_copy_state_init(&again); /* what the job stored: the first report */
    again.cursor = w.cursor[1];
    again.counters = w.counters[1];
    cfg.src = rkm_conn_new(f->store, f->addr[0], &(rkm_options){.max_value_bytes = CAP}, &err);
    assert_non_null(cfg.src);
    assert_int_equal(rkm_copy_run(&cfg, &again, NULL, NULL, &err), RK_OK);
    rkm_conn_free(cfg.src);
    const rkm_copy_counters *c = &again.counters, *one = &w.counters[1], *two = &w.counters[2];
    assert_int_equal(c->copied, one->copied + copyable_of(f, 0) - two->copied);
    if (f->rd[0]) { /* at most the one batch redone */
        assert_int_equal(c->present, two->copied - one->copied);
        assert_true(c->present <= two->rule.scanned - one->rule.scanned);
    } else {
        assert_int_equal(c->present, two->copied);
    }
    for (int i = 0; i < KEYS; i++)
        if (f->fate[i].old_srv == 0)
            assert_key_placed(f, i);
    rkm_copy_state_deinit(&again);
}

/* A progress callback's error ends the run with it; a config that cannot work is refused; a key
 * with no connection to its new owner stops the copy and puts it back to the boundary. */
static void failures_stop_cleanly(void **state)
{
    fixture *f = *state;
    rkm_copy_config cfg = config_of(f, 0);
    rkm_conn *no_n3[SERVERS];
    rkm_copy_state st;
    watch w = {.fail_at = 1};
    rk_error err = {0};
    fill(f, false);
    rkm_copy_state_init(&st);
    assert_int_equal(rkm_copy_run(&cfg, &st, watch_progress, &w, &err), RK_EIO);
    assert_non_null(strstr(err.message, "progress"));
    cfg.source = 3;
    assert_int_equal(rkm_copy_run(&cfg, &st, NULL, NULL, &err), RK_EINVAL);
    cfg = config_of(f, 0);
    cfg.n_dest = 3;
    assert_int_equal(rkm_copy_run(&cfg, &st, NULL, NULL, &err), RK_EINVAL);
    rkm_copy_state_deinit(&st);

    memcpy(no_n3, f->dest, sizeof no_n3);
    no_n3[0] = NULL; /* the new ring's node 0 is n3 */
    cfg = config_of(f, 0);
    cfg.dest = no_n3;
    rkm_copy_state_init(&st);
    assert_int_equal(rkm_copy_run(&cfg, &st, NULL, NULL, &err), RK_EINVAL);
    assert_non_null(strstr(err.message, "'n3'"));
    assert_int_equal(st.counters.rule.scanned, 0); /* back to the boundary: the start */
    assert_string_equal(st.cursor.pos, "");
    rkm_copy_state_deinit(&st);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1500 keys from n0 to n1 (a one-node cluster replaced) at 500 keys/s: 3 s, within 5%. */
static void throttle_holds_rate(void **state)
{
    fixture *f = *state;
    static const char *const from[] = {"n0"}, *const to[] = {"n1"};
    static const uint32_t one[] = {1};
    char key[KEY_MAX];
    rk_error err = {0};
    rk_ring *old_ring = ring_of(from, one, 1, f), *new_ring = ring_of(to, one, 1, f);
    rkm_throttle *t = rkm_throttle_new(500, 0, NULL, &err);
    rkm_copy_state st;
    assert_non_null(t);
    for (int i = 0; i < 1500; i++) {
        size_t klen = key_of(i, key);
        raw_set(f, 0, key, klen, "paced", 5, 0);
    }
    rkm_copy_config cfg = {.old_ring = old_ring,
                           .new_ring = new_ring,
                           .src = f->conn[0],
                           .dest = &f->conn[1],
                           .n_dest = 1,
                           .batch = BATCH,
                           .throttle = t};
    rkm_copy_state_init(&st);
    double start = now_s();
    assert_int_equal(rkm_copy_run(&cfg, &st, NULL, NULL, &err), RK_OK);
    double rate = (double)st.counters.copied / (now_s() - start);
    assert_int_equal(st.counters.copied, 1500);
    if (rate < 475 || rate > 525)
        fail_msg("%.1f keys/s, not 500 within 5%%", rate);
    rkm_copy_state_deinit(&st);
    rkm_throttle_free(t);
    rk_ring_free(old_ring);
    rk_ring_free(new_ring);
}

/* A plan's step (copy.h's arcs): only the moving keys whose hash lies in the arcs are copied, the
 * others counted `later`; a second run over the other arcs copies the rest, as the steps of a job
 * do, and then every key is where it belongs. */
static void copies_only_the_arcs(void **state)
{
    fixture *f = *state;
    static const rkm_arc halves[2][2] = {{{0, (1ull << 62) - 1}, {3ull << 62, UINT64_MAX}},
                                         {{1ull << 62, (3ull << 62) - 1}, {1, 0}}};
    char key[KEY_MAX];
    fill(f, false);
    for (int h = 0; h < 2; h++) {
        uint64_t later = 0, moved = 0;
        for (int s = 0; s < 3; s++) {
            rkm_copy_config cfg = config_of(f, s);
            rkm_arc arcs[2] = {halves[h][0], halves[h][1]};
            cfg.arcs = arcs;
            cfg.n_arcs = rkm_arcs_normalize(arcs, 2);
            rkm_copy_state st;
            rk_error err = {0};
            rkm_copy_state_init(&st);
            if (rkm_copy_run(&cfg, &st, NULL, NULL, &err) != RK_OK)
                fail_msg("copy from n%d: %s", s, err.message);
            assert_adds_up(&st.counters);
            later += st.counters.rule.later;
            moved += st.counters.copied + st.counters.skipped;
            rkm_copy_state_deinit(&st);
        }
        uint64_t in = 0, out = 0;
        for (int i = 0; i < KEYS; i++) {
            size_t klen = key_of(i, key);
            uint64_t hash = rk_ring_key_hash(f->new_ring, key, klen);
            bool first_half = hash < (1ull << 62) || hash >= (3ull << 62);
            bool now = h == 1 || first_half; /* the second run copies the rest */
            char got[VALUE_MAX];
            if (!moves(&f->fate[i]))
                continue;
            in += first_half == (h == 0);
            out += first_half != (h == 0);
            if (!f->fate[i].big)
                assert_int_equal(raw_get(f, f->fate[i].new_srv, key, klen, got) >= 0, now);
        }
        assert_int_equal(moved, in);
        assert_int_equal(later, out);
    }
    assert_placed(f);
}

/* rkm_arcs_normalize sorts, merges what overlaps or touches, drops what is empty; a config whose
 * arcs are not so is refused. */
static void arcs_normalize(void **state)
{
    (void)state;
    rkm_arc a[] = {{50, 60}, {10, 20}, {21, 30}, {5, 4}, {55, 70}, {100, UINT64_MAX}, {200, 300}};
    size_t n = rkm_arcs_normalize(a, sizeof a / sizeof a[0]);
    assert_int_equal(n, 3);
    assert_true(a[0].first == 10 && a[0].last == 30);
    assert_true(a[1].first == 50 && a[1].last == 70);
    assert_true(a[2].first == 100 && a[2].last == UINT64_MAX);
    assert_int_equal(rkm_arcs_normalize(a, 0), 0);
    rkm_arc bad[] = {{10, 20}, {15, 30}};
    rk_error err = {0};
    rkm_copy_state st;
    rkm_copy_state_init(&st);
    rk_node node = {.id = "n0", .addr = "127.0.0.1:1", .weight = 1};
    rk_topology *t = rk_topology_new(RK_HASH_XXH3_64, 10, &node, 1, NULL, &err);
    rk_ring *r = t ? rk_ring_build(t, &err) : NULL;
    rk_topology_free(t);
    assert_non_null(r);
    rkm_conn *none = NULL;
    rkm_copy_config cfg = {.old_ring = r,
                           .new_ring = r,
                           .src = (rkm_conn *)&node, /* never used: the config is refused first */
                           .dest = &none,
                           .n_dest = 1,
                           .arcs = bad,
                           .n_arcs = 2};
    assert_int_equal(rkm_copy_run(&cfg, &st, NULL, NULL, &err), RK_EINVAL);
    assert_string_equal(err.field, "arcs");
    rkm_copy_state_deinit(&st);
    rk_ring_free(r);
}

/* `test` on `store`; on both stores, each named after its store. */
#define ON_STORE(store, test)                                                                      \
    {                                                                                              \
        .name = #store ": " #test, .test_func = test, .setup_func = setup,                         \
        .teardown_func = teardown, .initial_state = &store                                         \
    }
#define PER_STORE(test) ON_STORE(memcached, test), ON_STORE(redis, test)

int main(void)
{
    static fixture memcached = {.store = "memcached", .env = "RKM_MEMCACHED_NODES"};
    static fixture redis = {.store = "redis", .env = "RKM_REDIS_NODES"};
    static fixture redis_relay = {.store = "redis", .env = "RKM_REDIS_NODES", .relay = true};
    const struct CMUnitTest tests[] = {
        PER_STORE(copies_moving_keys),
        PER_STORE(verify_finds_differences),
        PER_STORE(resumes_after_pause),
        PER_STORE(resumes_after_kill),
        PER_STORE(failures_stop_cleanly),
        ON_STORE(memcached, throttle_holds_rate),
        PER_STORE(copies_only_the_arcs),
        PER_STORE(verify_deletes_matched),
        PER_STORE(catch_up_writes_newer_values),
        cmocka_unit_test(arcs_normalize),
        ON_STORE(redis_relay, copies_moving_keys),
        ON_STORE(redis_relay, resumes_after_kill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
