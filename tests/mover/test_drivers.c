/* test_drivers.c — the mover's data-store drivers (client/mover/driver.h) against real memcached
 * and redis-server, every test once per store: a scan passes every key once, copies keep their
 * TTL and never write over a value, expired keys are not copied, the size cap skips, checksums
 * compare, dropped connections are made again, and a dead server fails after bounded retries
 * naming its address. test_drivers.sh starts the servers and says where: RKM_MEMCACHED_SRC,
 * RKM_MEMCACHED_DST, RKM_REDIS_SRC, RKM_REDIS_DST, RKM_MEMCACHED_IDLE (closes idle connections)
 * and RKM_DEAD (a closed port). */
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

#include "driver.h"

#define KEYS       1000    /* the scan tests' key set */
#define SHORT_KEYS 20      /* more keys, which expire before the scan */
#define SET_MAX    2048    /* keys a keyset holds */
#define KEY_MAX    256     /* bytes of a key in a keyset */
#define MC_FLAGS   0xbeefu /* client flags of every memcached value the tests write */
#define STEP       64      /* keys per scan step */
#define HELD_KEYS                                                                                  \
    60000               /* keys of ~200 B: a metadump stream of ~16 MB, more than the two          \
                           sockets' buffers between memcached's crawler and the driver hold */
#define HELD_BATCH 1000 /* keys per mget of the test's own reads */

/* A line to one server of its own, to write and read behind the driver's back. */
typedef struct raw {
    memcached_st *mc; /* memcached, or NULL */
    redisContext *rd; /* Redis, or NULL */
} raw;

typedef struct fixture {
    const char *store;    /* "memcached" or "redis" */
    const char *src_env;  /* the environment variables test_drivers.sh sets */
    const char *dst_env;  /* with src_env */
    const char *src_addr; /* their values */
    const char *dst_addr; /* with src_addr */
    rkm_conn *src, *dst;  /* the drivers under test */
    raw raw_src, raw_dst; /* the same servers, directly */
} fixture;

typedef struct seen_key {
    char key[KEY_MAX];
    size_t len;     /* bytes of key */
    int64_t ttl_ms; /* as the scan gave it */
} seen_key;

typedef struct keyset {
    size_t n;
    seen_key k[SET_MAX];
} keyset;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        fail_msg("%s is not set: run test_drivers.sh", name);
    return v;
}

static raw raw_open(const char *store, const char *addr)
{
    char host[64];
    unsigned port = 0;
    raw r = {0};
    assert_int_equal(sscanf(addr, "%63[^:]:%u", host, &port), 2);
    if (strcmp(store, "redis") == 0) {
        r.rd = redisConnect(host, (int)port);
        assert_true(r.rd && !r.rd->err);
        return r;
    }
    r.mc = memcached_create(NULL);
    assert_int_equal(memcached_server_add(r.mc, host, (in_port_t)port), MEMCACHED_SUCCESS);
    return r;
}

static void raw_close(raw *r)
{
    memcached_free(r->mc);
    redisFree(r->rd);
}

/* Asserts a Redis reply of `type` and frees it. */
static void redis_ok(void *reply, int type)
{
    redisReply *rep = reply;
    assert_non_null(rep);
    assert_int_equal(rep->type, type);
    freeReplyObject(rep);
}

static void raw_flush(const raw *r)
{
    if (r->rd)
        redis_ok(redisCommand(r->rd, "FLUSHALL"), REDIS_REPLY_STATUS);
    else
        assert_int_equal(memcached_flush(r->mc, 0), MEMCACHED_SUCCESS);
}

/* key = val with a TTL of ttl_ms (0: none; memcached: whole seconds). */
static void raw_set(const raw *r, const char *key, size_t klen, const char *val, size_t vlen,
                    long ttl_ms)
{
    if (r->rd && ttl_ms)
        redis_ok(redisCommand(r->rd, "SET %b %b PX %ld", key, klen, val, vlen, ttl_ms),
                 REDIS_REPLY_STATUS);
    else if (r->rd)
        redis_ok(redisCommand(r->rd, "SET %b %b", key, klen, val, vlen), REDIS_REPLY_STATUS);
    else
        assert_int_equal(
            memcached_set(r->mc, key, klen, val, vlen, (time_t)(ttl_ms / 1000), MC_FLAGS),
            MEMCACHED_SUCCESS);
}

static void raw_put(const raw *r, const char *key, const char *val, long ttl_ms)
{
    raw_set(r, key, strlen(key), val, strlen(val), ttl_ms);
}

/* The value of key as a string (at most 63 bytes), or "(absent)". */
static const char *raw_get(const raw *r, const char *key, char *buf, size_t size)
{
    snprintf(buf, size, "(absent)");
    if (r->rd) {
        redisReply *rep = redisCommand(r->rd, "GET %s", key);
        assert_non_null(rep);
        if (rep->type == REDIS_REPLY_STRING)
            snprintf(buf, size, "%.*s", (int)rep->len, rep->str);
        freeReplyObject(rep);
        return buf;
    }
    size_t len;
    uint32_t flags;
    memcached_return_t rc;
    char *v = memcached_get(r->mc, key, strlen(key), &len, &flags, &rc);
    if (memcached_success(rc))
        snprintf(buf, size, "%.*s", (int)len, v ? v : "");
    free(v);
    return buf;
}

/* The tests' short TTL, and a wait that outlasts it: memcached counts whole seconds. */
static long short_ttl_ms(const fixture *f)
{
    return f->raw_src.rd ? 100 : 1000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void outlast_short_ttl(const fixture *f)
{
    sleep_ms(f->raw_src.rd ? 300 : 2200);
}

static rkm_conn *conn(const fixture *f, const char *addr, const rkm_options *opt)
{
    rk_error err = {0};
    rkm_conn *c = rkm_conn_new(f->store, addr, opt, &err);
    if (!c)
        fail_msg("%s %s: %s", f->store, addr, err.message);
    return c;
}

static int setup(void **state)
{
    fixture *f = *state;
    f->src_addr = env(f->src_env);
    f->dst_addr = env(f->dst_env);
    f->raw_src = raw_open(f->store, f->src_addr);
    f->raw_dst = raw_open(f->store, f->dst_addr);
    raw_flush(&f->raw_src);
    raw_flush(&f->raw_dst);
    f->src = conn(f, f->src_addr, NULL);
    f->dst = conn(f, f->dst_addr, NULL);
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rkm_conn_free(f->src);
    rkm_conn_free(f->dst);
    raw_close(&f->raw_src);
    raw_close(&f->raw_dst);
    return 0;
}

/* ---- key sets ---- */

/* Key i of the scan tests: é in UTF-8, raw bytes >= 0x80 (not UTF-8), a space (Redis; memcached
 * keys have none), plain; on Redis one key also holds a NUL. */
static size_t key_of(const fixture *f, int i, char *buf)
{
    static const char *const forms[] = {"k\xc3\xa9-%d", "\xff\x80-%d", "with space %d", "plain-%d"};
    bool redis = f->raw_src.rd != NULL;
    size_t len =
        (size_t)snprintf(buf, KEY_MAX, i % 4 == 2 && !redis ? "no-space-%d" : forms[i % 4], i);
    if (redis && i == 3)
        buf[2] = '\0';
    return len;
}

/* KEYS keys on the source, every tenth with a TTL of 100 s, and SHORT_KEYS that expire at once;
 * their names into `want` (when not NULL). Returns after the short ones expired. */
static void fill_source(const fixture *f, keyset *want)
{
    char key[KEY_MAX];
    for (int i = 0; i < KEYS; i++) {
        size_t len = key_of(f, i, key);
        raw_set(&f->raw_src, key, len, key, len, i % 10 == 0 ? 100000 : 0);
        if (want) {
            memcpy(want->k[want->n].key, key, len);
            want->k[want->n++].len = len;
        }
    }
    for (int i = 0; i < SHORT_KEYS; i++) {
        snprintf(key, sizeof key, "short-%d", i);
        raw_put(&f->raw_src, key, "soon gone", short_ttl_ms(f));
    }
    outlast_short_ttl(f);
}

static int collect(void *ctx, const rkm_key *key, rk_error *err)
{
    keyset *s = ctx;
    if (s->n == SET_MAX || key->len > KEY_MAX)
        return rk_error_set(err, RK_ETOOLARGE, NULL, "more keys than a keyset holds");
    memcpy(s->k[s->n].key, key->key, key->len);
    s->k[s->n].len = key->len;
    s->k[s->n++].ttl_ms = key->ttl_ms;
    return RK_OK;
}

/* Scan steps of STEP keys from `cursor` until done, or `steps` steps; all into `got`. */
static void scan_into(rkm_conn *c, rkm_cursor *cursor, size_t steps, keyset *got)
{
    rk_error err = {0};
    for (size_t i = 0; i < steps && !cursor->done; i++)
        if (rkm_scan(c, cursor, STEP, collect, got, &err) != RK_OK)
            fail_msg("scan: %s", err.message);
}

static int key_cmp(const void *a, const void *b)
{
    const seen_key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void sort_keys(keyset *s)
{
    qsort(s->k, s->n, sizeof s->k[0], key_cmp);
}

/* Drops repeated keys of a sorted set; returns how many were. */
static size_t dedupe(keyset *s)
{
    size_t out = 0, before = s->n;
    for (size_t i = 0; i < s->n; i++)
        if (out == 0 || key_cmp(&s->k[out - 1], &s->k[i]) != 0)
            s->k[out++] = s->k[i];
    s->n = out;
    return before - out;
}

static void assert_same_keys(keyset *want, keyset *got)
{
    sort_keys(want);
    sort_keys(got);
    assert_int_equal(got->n, want->n);
    for (size_t i = 0; i < want->n; i++)
        assert_int_equal(key_cmp(&want->k[i], &got->k[i]), 0);
}

static keyset *keyset_new(void)
{
    keyset *s = calloc(1, sizeof *s);
    assert_non_null(s);
    return s;
}

/* ---- the tests ---- */

static void scan_every_key_once(void **state)
{
    fixture *f = *state;
    keyset *want = keyset_new(), *got = keyset_new();
    rkm_cursor cursor = {.pos = ""};
    fill_source(f, want);
    scan_into(f->src, &cursor, 10000, got);
    assert_true(cursor.done);
    for (size_t i = 0; i < got->n; i++) /* the 100 s keys carry it; the others none */
        if (got->k[i].ttl_ms != RKM_TTL_NONE)
            assert_in_range(got->k[i].ttl_ms, 90000, 100000);
    assert_same_keys(want, got); /* once each: no repeat, no expired key */
    free(want);
    free(got);
}

/* A cursor kept and given to a new connection: Redis goes on, memcached starts over (metadump has
 * no cursor); either way every key comes at least once. */
static void scan_resumes(void **state)
{
    fixture *f = *state;
    keyset *want = keyset_new(), *got = keyset_new();
    rkm_cursor cursor = {.pos = ""};
    fill_source(f, want);
    scan_into(f->src, &cursor, 3, got);
    assert_false(cursor.done);
    assert_true(cursor.pos[0] != '\0');
    rkm_conn_free(f->src); /* the worker is gone; memcached ends its metadump */
    f->src = NULL;
    rkm_conn *again = conn(f, f->src_addr, NULL);
    scan_into(again, &cursor, 10000, got);
    assert_true(cursor.done);
    rkm_conn_free(again);
    sort_keys(got);
    dedupe(got);
    assert_same_keys(want, got);
    free(want);
    free(got);
}

/* A callback that fails at its fifth key, after collecting the four before it. */
static int collect_then_fail(void *ctx, const rkm_key *key, rk_error *err)
{
    keyset *s = ctx;
    if (s->n == 4)
        return rk_error_set(err, RK_EIO, NULL, "the fifth key fails");
    return collect(ctx, key, err);
}

/* A step whose callback failed leaves the cursor where the step began; asked again on the same
 * connection, it passes the same keys (memcached: from its spool, not a new stream), and the scan
 * then passes every key. */
static void scan_step_redone_after_failure(void **state)
{
    fixture *f = *state;
    keyset *want = keyset_new(), *got = keyset_new(), *failed = keyset_new();
    rk_error err = {0};
    rkm_cursor cursor = {.pos = ""};
    fill_source(f, want);
    scan_into(f->src, &cursor, 1, got);
    rkm_cursor before = cursor;
    assert_int_equal(rkm_scan(f->src, &cursor, STEP, collect_then_fail, failed, &err), RK_EIO);
    assert_string_equal(cursor.pos, before.pos);
    size_t first = got->n;
    scan_into(f->src, &cursor, 1, got);
    for (size_t i = 0; i < failed->n; i++)
        assert_int_equal(key_cmp(&failed->k[i], &got->k[first + i]), 0);
    scan_into(f->src, &cursor, 10000, got);
    assert_true(cursor.done);
    assert_same_keys(want, got);
    free(want);
    free(got);
    free(failed);
}

/* Scan, get, add: what the mover does. Every key arrives, with its value's checksum. */
static void copy_every_key(void **state)
{
    fixture *f = *state;
    keyset *keys = keyset_new(), *copied = keyset_new();
    rkm_cursor cursor = {.pos = ""}, again = {.pos = ""};
    rkm_value v;
    rk_error err = {0};
    rkm_value_init(&v);
    fill_source(f, NULL);
    scan_into(f->src, &cursor, 10000, keys);
    for (size_t i = 0; i < keys->n; i++) {
        rkm_added added = RKM_PRESENT;
        rkm_sum a, b;
        assert_int_equal(rkm_get(f->src, keys->k[i].key, keys->k[i].len, &v, &err), RK_OK);
        assert_int_equal(v.state, RKM_FOUND);
        assert_int_equal(
            rkm_add_if_absent(f->dst, keys->k[i].key, keys->k[i].len, &v, &added, &err), RK_OK);
        assert_int_equal(added, RKM_COPIED);
        assert_int_equal(rkm_checksum(f->src, keys->k[i].key, keys->k[i].len, &a, &err), RK_OK);
        assert_int_equal(rkm_checksum(f->dst, keys->k[i].key, keys->k[i].len, &b, &err), RK_OK);
        assert_int_equal(b.state, RKM_FOUND);
        assert_true(a.xxh3 == b.xxh3);
    }
    rkm_value_deinit(&v);
    scan_into(f->dst, &again, 10000, copied);
    assert_int_equal(keys->n, KEYS);
    assert_same_keys(keys, copied);
    free(keys);
    free(copied);
}

/* Copies `key` from source to destination; returns what add-if-absent did. */
static rkm_added copy_key(const fixture *f, const char *key)
{
    rkm_value v;
    rkm_added added = RKM_PRESENT;
    rk_error err = {0};
    rkm_value_init(&v);
    assert_int_equal(rkm_get(f->src, key, strlen(key), &v, &err), RK_OK);
    assert_int_equal(v.state, RKM_FOUND);
    if (rkm_add_if_absent(f->dst, key, strlen(key), &v, &added, &err) != RK_OK)
        fail_msg("%s", err.message);
    rkm_value_deinit(&v);
    return added;
}

static rkm_value get_value(rkm_conn *c, const char *key)
{
    rkm_value v;
    rk_error err = {0};
    rkm_value_init(&v);
    if (rkm_get(c, key, strlen(key), &v, &err) != RK_OK)
        fail_msg("get %s: %s", key, err.message);
    return v;
}

/* Incompressible bytes: Redis's DUMP packs repeats. */
static void fill_random(char *buf, size_t n)
{
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        buf[i] = (char)x;
    }
}

#define MANY 6 /* the keys of the batch test */

/* get_many and add_many, through the driver's batch forms or (`per_key`) the per-key operations:
 * each key's outcome as the per-key calls give it. */
static void batch_of(const fixture *f, bool per_key)
{
    static const char *const names[MANY] = {"hundred", "forever", "empty", "big", "absent", "a b"};
    char big[2000], buf[64];
    rkm_key keys[MANY];
    rkm_value v[MANY], theirs = {0};
    rkm_result res[MANY], put[MANY];
    rkm_added added[MANY];
    rk_error err = {0};
    fill_random(big, sizeof big);
    raw_flush(&f->raw_dst);
    raw_put(&f->raw_src, "hundred", "seconds", 100000);
    raw_put(&f->raw_src, "forever", "ours", 0);
    raw_put(&f->raw_src, "empty", "", 0);
    raw_set(&f->raw_src, "big", 3, big, sizeof big, 0);
    raw_put(&f->raw_dst, "forever", "theirs", 0);
    rkm_options opt = {.max_value_bytes = 1000, .per_key = per_key};
    rkm_conn *src = conn(f, f->src_addr, &opt), *dst = conn(f, f->dst_addr, &opt);
    for (int i = 0; i < MANY; i++) {
        keys[i] = (rkm_key){.key = names[i], .len = strlen(names[i])};
        rkm_value_init(&v[i]);
    }
    assert_int_equal(rkm_get_many(src, keys, MANY, v, res, &err), RK_OK);
    assert_int_equal(v[0].state, RKM_FOUND);
    assert_in_range(v[0].ttl_ms, 97000, 100000);
    assert_int_equal(v[0].flags, f->raw_src.mc ? MC_FLAGS : 0);
    assert_true(v[1].state == RKM_FOUND && v[1].ttl_ms == RKM_TTL_NONE);
    assert_true(v[2].state == RKM_FOUND && (f->raw_src.rd || v[2].len == 0));
    assert_true(v[3].state == RKM_TOO_BIG && v[3].len >= sizeof big && !v[3].data);
    assert_int_equal(v[4].state, RKM_ABSENT);
    assert_int_equal(res[5].rc,
                     f->raw_src.mc ? RK_EINVAL : RK_OK); /* no space in a memcached key */
    assert_int_equal(res[0].rc + res[1].rc + res[2].rc + res[3].rc + res[4].rc, RK_OK);
    assert_int_equal(rkm_add_many(dst, keys, v, 3, added, put, &err), RK_OK);
    assert_true(added[0] == RKM_COPIED && added[1] == RKM_PRESENT && added[2] == RKM_COPIED);
    assert_int_equal(put[0].rc + put[1].rc + put[2].rc, RK_OK);
    assert_string_equal(raw_get(&f->raw_dst, "forever", buf, sizeof buf), "theirs");
    rkm_value h = get_value(f->dst, "hundred");
    assert_in_range(h.ttl_ms, 97000, 100000);
    assert_int_equal(h.flags, v[0].flags);
    assert_string_equal(raw_get(&f->raw_dst, "hundred", buf, sizeof buf), "seconds");
    assert_int_equal(rkm_add_many(dst, keys, &theirs, 1, added, put, &err), RK_EINVAL);
    rkm_value_deinit(&h);
    for (int i = 0; i < MANY; i++)
        rkm_value_deinit(&v[i]);
    rkm_conn_free(src);
    rkm_conn_free(dst);
}

static void batches_as_per_key(void **state)
{
    batch_of(*state, false);
    batch_of(*state, true);
}

/* Server to server (Redis's MIGRATE ... COPY): a value copied with its TTL, one already on the
 * destination kept, one over the cap not copied, an absent one absent; never with relay or
 * per_key, and never for memcached, which has no such command. */
static void copy_many_server_to_server(void **state)
{
    const fixture *f = *state;
    static const char *const names[] = {"hundred", "forever", "big", "absent"};
    enum { N = sizeof names / sizeof names[0] };
    char big[2000], buf[64];
    rkm_key keys[N];
    rkm_value seen[N];
    rkm_added added[N];
    rkm_result res[N];
    rk_error err = {0};
    rkm_options opt = {.max_value_bytes = 1000};
    rkm_conn *src = conn(f, f->src_addr, &opt), *dst = conn(f, f->dst_addr, &opt);
    rkm_conn *relay = conn(f, f->dst_addr, &(rkm_options){.relay = true});
    assert_false(rkm_conn_copies_direct(src, relay));
    assert_int_equal(rkm_conn_copies_direct(src, dst), f->raw_src.rd != NULL);
    if (!rkm_conn_copies_direct(src, dst)) {
        assert_int_equal(rkm_copy_many(src, dst, keys, 0, seen, added, res, &err), RK_EINVAL);
    } else {
        fill_random(big, sizeof big);
        raw_flush(&f->raw_dst);
        raw_put(&f->raw_src, "hundred", "seconds", 100000);
        raw_put(&f->raw_src, "forever", "ours", 0);
        raw_set(&f->raw_src, "big", 3, big, sizeof big, 0);
        raw_put(&f->raw_dst, "forever", "theirs", 0);
        for (int i = 0; i < N; i++) {
            keys[i] = (rkm_key){.key = names[i], .len = strlen(names[i])};
            rkm_value_init(&seen[i]);
        }
        if (rkm_copy_many(src, dst, keys, N, seen, added, res, &err) != RK_OK)
            fail_msg("copy_many: %s", err.message);
        assert_true(seen[0].state == RKM_FOUND && added[0] == RKM_COPIED && seen[0].len > 0);
        assert_true(seen[1].state == RKM_FOUND && added[1] == RKM_PRESENT);
        assert_true(seen[2].state == RKM_TOO_BIG && seen[2].len >= sizeof big && !seen[2].data);
        assert_int_equal(seen[3].state, RKM_ABSENT);
        assert_int_equal(res[0].rc + res[1].rc + res[2].rc + res[3].rc, RK_OK);
        assert_string_equal(raw_get(&f->raw_dst, "hundred", buf, sizeof buf), "seconds");
        rkm_value h = get_value(dst, "hundred");
        assert_in_range(h.ttl_ms, 97000, 100000);
        rkm_value_deinit(&h);
        assert_string_equal(raw_get(&f->raw_dst, "forever", buf, sizeof buf), "theirs");
        assert_string_equal(raw_get(&f->raw_dst, "big", buf, sizeof buf), "(absent)");
    }
    rkm_conn_free(src);
    rkm_conn_free(dst);
    rkm_conn_free(relay);
}

static void copy_keeps_ttl(void **state)
{
    fixture *f = *state;
    char buf[64];
    raw_put(&f->raw_src, "hundred", "seconds", 100000);
    raw_put(&f->raw_src, "forever", "and ever", 0);
    raw_put(&f->raw_src, "empty", "", 0);
    assert_int_equal(copy_key(f, "hundred"), RKM_COPIED);
    assert_int_equal(copy_key(f, "forever"), RKM_COPIED);
    assert_int_equal(copy_key(f, "empty"), RKM_COPIED);
    rkm_value h = get_value(f->dst, "hundred"), e = get_value(f->dst, "forever");
    assert_int_equal(h.state, RKM_FOUND);
    assert_in_range(h.ttl_ms, 97000, 100000);
    assert_int_equal(e.ttl_ms, RKM_TTL_NONE);
    assert_int_equal(h.flags, f->raw_src.mc ? MC_FLAGS : 0); /* memcached's flags travel too */
    assert_string_equal(raw_get(&f->raw_dst, "hundred", buf, sizeof buf), "seconds");
    assert_string_equal(raw_get(&f->raw_dst, "empty", buf, sizeof buf), "");
    rkm_value_deinit(&h);
    rkm_value_deinit(&e);
}

static void add_never_overwrites(void **state)
{
    fixture *f = *state;
    char buf[64];
    rkm_sum theirs, after, ours;
    rk_error err = {0};
    raw_put(&f->raw_src, "contested", "ours", 0);
    raw_put(&f->raw_dst, "contested", "theirs", 100000);
    assert_int_equal(rkm_checksum(f->dst, "contested", 9, &theirs, &err), RK_OK);
    assert_int_equal(copy_key(f, "contested"), RKM_PRESENT);
    assert_int_equal(copy_key(f, "contested"), RKM_PRESENT); /* a retried copy: the same */
    assert_string_equal(raw_get(&f->raw_dst, "contested", buf, sizeof buf), "theirs");
    assert_int_equal(rkm_checksum(f->dst, "contested", 9, &after, &err), RK_OK);
    assert_int_equal(rkm_checksum(f->src, "contested", 9, &ours, &err), RK_OK);
    assert_true(after.xxh3 == theirs.xxh3);
    assert_true(after.xxh3 != ours.xxh3);
    assert_in_range(after.ttl_ms, 90000, 100000); /* the destination's TTL, untouched */
}

static void expired_not_copied(void **state)
{
    fixture *f = *state;
    rk_error err = {0};
    rkm_added added;
    raw_put(&f->raw_src, "brief", "gone soon", short_ttl_ms(f));
    outlast_short_ttl(f);
    rkm_value v = get_value(f->src, "brief");
    assert_int_equal(v.state, RKM_ABSENT);
    assert_int_equal(rkm_add_if_absent(f->dst, "brief", 5, &v, &added, &err), RK_EINVAL);
    rkm_value_deinit(&v);
}

static void size_cap_skips(void **state)
{
    fixture *f = *state;
    char big[5000];
    fill_random(big, sizeof big);
    raw_set(&f->raw_src, "big", 3, big, sizeof big, 0);
    raw_set(&f->raw_src, "small", 5, big, 500, 0);
    rkm_conn *capped = conn(f, f->src_addr, &(rkm_options){.max_value_bytes = 1000});
    rkm_value b = get_value(capped, "big"), s = get_value(capped, "small");
    assert_int_equal(b.state, RKM_TOO_BIG);
    assert_null(b.data);
    assert_true(b.len >= sizeof big); /* its size, for the list of skipped keys */
    assert_int_equal(s.state, RKM_FOUND);
    rkm_value_deinit(&b);
    rkm_value_deinit(&s);
    rkm_conn_free(capped);
}

static rkm_sum sum_of(rkm_conn *c, const char *key)
{
    rkm_sum s;
    rk_error err = {0};
    if (rkm_checksum(c, key, strlen(key), &s, &err) != RK_OK)
        fail_msg("checksum %s: %s", key, err.message);
    return s;
}

static void checksums_compare(void **state)
{
    fixture *f = *state;
    raw_put(&f->raw_src, "a", "the same value", 0);
    raw_put(&f->raw_src, "b", "the same value", 0);
    raw_put(&f->raw_src, "c", "another value", 0);
    raw_put(&f->raw_dst, "a", "the same value", 0);
    assert_true(sum_of(f->src, "a").xxh3 == sum_of(f->src, "b").xxh3);
    assert_true(sum_of(f->src, "a").xxh3 == sum_of(f->dst, "a").xxh3);
    assert_true(sum_of(f->src, "a").xxh3 != sum_of(f->src, "c").xxh3);
    assert_int_equal(sum_of(f->src, "absent").state, RKM_ABSENT);
}

/* checksum_many gives what rkm_checksum gives key by key, through the driver's batch form or
 * (`per_key`) without it: a value over the size cap is RKM_TOO_BIG with its size and is not
 * summed (never read whole), an absent key is absent, a key the store cannot hold fails alone. */
static void checksum_batch_of(const fixture *f, bool per_key)
{
    static const char *const names[] = {"a", "big", "absent", "c", "a b"};
    enum { N = sizeof names / sizeof names[0] };
    char big[3000];
    rkm_key keys[N];
    rkm_sum sums[N];
    rkm_result res[N];
    rk_error err = {0};
    fill_random(big, sizeof big);
    raw_put(&f->raw_src, "a", "the same value", 100000);
    raw_set(&f->raw_src, "big", 3, big, sizeof big, 0);
    raw_put(&f->raw_src, "c", "another value", 0);
    rkm_options opt = {.max_value_bytes = 1000, .per_key = per_key};
    rkm_conn *src = conn(f, f->src_addr, &opt);
    for (int i = 0; i < N; i++)
        keys[i] = (rkm_key){.key = names[i], .len = strlen(names[i])};
    assert_int_equal(rkm_checksum_many(src, keys, N, sums, res, &err), RK_OK);
    for (int i = 0; i < N - 1; i++) {
        rkm_sum one = sum_of(src, names[i]);
        assert_int_equal(res[i].rc, RK_OK);
        assert_int_equal(sums[i].state, one.state);
        assert_true(sums[i].xxh3 == one.xxh3 && sums[i].len == one.len);
        assert_true(sums[i].ttl_ms == RKM_TTL_NONE ? one.ttl_ms == RKM_TTL_NONE
                                                   : one.ttl_ms > 90000);
    }
    assert_true(sums[1].state == RKM_TOO_BIG && sums[1].len >= sizeof big && sums[1].xxh3 == 0);
    assert_int_equal(sums[2].state, RKM_ABSENT);
    assert_int_equal(res[N - 1].rc, f->raw_src.mc ? RK_EINVAL : RK_OK);
    rkm_conn_free(src);
}

static void checksum_batches_as_per_key(void **state)
{
    checksum_batch_of(*state, false);
    checksum_batch_of(*state, true);
}

static void delete_removes(void **state)
{
    fixture *f = *state;
    rk_error err = {0};
    raw_put(&f->raw_src, "doomed", "value", 0);
    assert_int_equal(rkm_delete(f->src, "doomed", 6, &err), RK_OK);
    assert_int_equal(sum_of(f->src, "doomed").state, RKM_ABSENT);
    assert_int_equal(rkm_delete(f->src, "doomed", 6, &err), RK_OK); /* gone already: fine */
}

/* put writes over a value, with the source's TTL and flags, but only on a connection opened
 * with overwrite (a pre-warm's catch-up); on any other it is refused and the value kept. */
static void put_overwrites_only_when_allowed(void **state)
{
    fixture *f = *state;
    char buf[64];
    rk_error err = {0};
    raw_put(&f->raw_src, "newer", "the source's", 100000);
    raw_put(&f->raw_dst, "newer", "stale copy", 0);
    rkm_value v = get_value(f->src, "newer");
    assert_false(rkm_conn_may_overwrite(f->dst));
    assert_int_equal(rkm_put(f->dst, "newer", 5, &v, &err), RK_EINVAL);
    assert_string_equal(raw_get(&f->raw_dst, "newer", buf, sizeof buf), "stale copy");
    rkm_conn *over = conn(f, f->dst_addr, &(rkm_options){.overwrite = true});
    assert_true(rkm_conn_may_overwrite(over));
    if (rkm_put(over, "newer", 5, &v, &err) != RK_OK)
        fail_msg("put: %s", err.message);
    assert_int_equal(rkm_put(over, "absent-before", 13, &v, &err), RK_OK); /* a new key too */
    assert_string_equal(raw_get(&f->raw_dst, "newer", buf, sizeof buf), "the source's");
    rkm_value got = get_value(f->dst, "newer");
    assert_in_range(got.ttl_ms, 97000, 100000);
    assert_int_equal(got.flags, v.flags);
    assert_true(sum_of(f->dst, "absent-before").xxh3 == sum_of(f->src, "newer").xxh3);
    rkm_value_deinit(&got);
    rkm_value_deinit(&v);
    rkm_conn_free(over);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void dead_server_fails(void **state)
{
    fixture *f = *state;
    const char *dead = env("RKM_DEAD");
    rk_error err = {0};
    double start = now_s();
    rkm_conn *c = rkm_conn_new(f->store, dead, &(rkm_options){.tries = 3, .backoff_ms = 50}, &err);
    double took = now_s() - start;
    assert_null(c);
    assert_int_equal(err.code, RK_EUNREACHABLE);
    assert_non_null(strstr(err.message, dead));
    assert_non_null(strstr(err.message, f->store));
    assert_non_null(strstr(err.message, "(3 tries)"));
    assert_true(took >= 0.149 && took < 5); /* waited 50 + 100 ms, and no more than bounded */
}

/* Redis drops the driver's connection (CLIENT KILL); the next call reconnects. */
static void reconnects_after_kill(void **state)
{
    fixture *f = *state;
    raw_put(&f->raw_src, "survivor", "value", 0);
    redis_ok(redisCommand(f->raw_src.rd, "CLIENT KILL TYPE normal SKIPME yes"),
             REDIS_REPLY_INTEGER);
    assert_int_equal(sum_of(f->src, "survivor").state, RKM_FOUND);
}

/* A memcached that closes idle connections (-o idle_timeout=1, RKM_MEMCACHED_IDLE) drops both of
 * the driver's, libmemcached's and the TTL queries'; the next calls reconnect. */
static void reconnects_after_idle_drop(void **state)
{
    fixture *f = *state;
    char data[] = "kept across drops";
    rkm_value v = {.state = RKM_FOUND, .data = data, .len = strlen(data), .ttl_ms = 60000};
    rkm_added added = RKM_PRESENT;
    rk_error err = {0};
    rkm_conn *c = conn(f, env("RKM_MEMCACHED_IDLE"), NULL);
    assert_int_equal(rkm_delete(c, "idle", 4, &err), RK_OK);
    assert_int_equal(sum_of(c, "idle").state, RKM_ABSENT);
    sleep_ms(3500); /* memcached checks idle connections about once a second */
    assert_int_equal(rkm_add_if_absent(c, "idle", 4, &v, &added, &err), RK_OK);
    assert_int_equal(added, RKM_COPIED);
    sleep_ms(3500);
    assert_int_equal(sum_of(c, "idle").state, RKM_FOUND);
    rkm_conn_free(c);
}

static void bad_input_refused(void **state)
{
    fixture *f = *state;
    rk_error err = {0};
    rkm_cursor cursor = {.pos = ""};
    rkm_value v;
    rkm_value_init(&v);
    assert_null(rkm_conn_new("etcd", f->src_addr, NULL, &err));
    assert_int_equal(err.code, RK_EINVAL);
    assert_null(rkm_conn_new(f->store, "no-port", NULL, &err));
    assert_int_equal(err.code, RK_EINVAL);
    assert_int_equal(rkm_scan(f->src, &cursor, 0, collect, NULL, &err), RK_EINVAL);
    if (f->raw_src.mc) /* the text protocol has no room for a space in a key */
        assert_int_equal(rkm_get(f->src, "a space", 7, &v, &err), RK_EINVAL);
    assert_null(rkm_driver_find("valkey"));
    assert_non_null(rkm_driver_find(f->store));
}

/* The drivers are the data protocols a topology may name, one each, from the same registration:
 * a driver under each name, and the refusal of another name lists them all. */
static void driver_per_data_protocol(void **state)
{
    (void)state;
    char names[128], want[192];
    for (size_t i = 0; rk_data_protocol(i); i++)
        assert_string_equal(rkm_driver_find(rk_data_protocol(i))->name, rk_data_protocol(i));
    rk_error err = {0};
    assert_null(rkm_conn_new("etcd", "127.0.0.1:1", NULL, &err));
    snprintf(want, sizeof want, "unknown data store 'etcd': %s",
             rk_data_protocol_names(names, sizeof names, ""));
    assert_string_equal(err.message, want);
}

/* Key i of the crawler test: long, so that few keys make a long stream. */
static size_t held_key(int i, char *buf)
{
    return (size_t)snprintf(buf, KEY_MAX, "held-%0190d", i);
}

/* A raw handle to `addr`, bounded by `timeout_ms`; with `pipelined`, its writes are buffered
 * and unanswered (noreply): a fast fill. */
static memcached_st *mc_handle(const char *addr, uint64_t timeout_ms, bool pipelined)
{
    raw r = raw_open("memcached", addr);
    memcached_behavior_set(r.mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, timeout_ms);
    memcached_behavior_set(r.mc, MEMCACHED_BEHAVIOR_RCV_TIMEOUT, timeout_ms * 1000);
    memcached_behavior_set(r.mc, MEMCACHED_BEHAVIOR_NOREPLY, pipelined);
    memcached_behavior_set(r.mc, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS, pipelined);
    return r.mc;
}

static void fill_held(const char *addr)
{
    char key[KEY_MAX];
    memcached_st *mc = mc_handle(addr, 5000, true);
    for (int i = 0; i < HELD_KEYS; i++) {
        size_t len = held_key(i, key);
        memcached_return_t rc = memcached_set(mc, key, len, "v", 1, 0, 0);
        assert_true(memcached_success(rc) || rc == MEMCACHED_BUFFERED);
    }
    assert_true(memcached_success(memcached_flush_buffers(mc)));
    memcached_free(mc);
}

/* Keys [from, from + n) asked in one mget: how many came back before the end or the timeout. */
static int mget_count(memcached_st *mc, int from, int n)
{
    char keys[HELD_BATCH][KEY_MAX];
    const char *argv[HELD_BATCH];
    size_t lens[HELD_BATCH];
    memcached_return_t rc;
    memcached_result_st res;
    int got = 0;
    for (int i = 0; i < n; i++) {
        lens[i] = held_key(from + i, keys[i]);
        argv[i] = keys[i];
    }
    if (!memcached_success(memcached_mget(mc, argv, lens, (size_t)n)))
        return 0;
    memcached_result_create(mc, &res);
    while (memcached_fetch_result(mc, &res, &rc))
        got++;
    memcached_result_free(&res);
    return got;
}

/* A scan step leaves the rest of memcached's metadump unread: its crawler must not wait for the
 * driver then, holding the lock of the hash bucket it is at, since a read of any key under that
 * lock (one in a few thousand) would wait with it and a copy's get time out. So every key still
 * answers at once on another connection, and the scan then passes every key. */
static void scan_holds_no_lock(void **state)
{
    fixture *f = *state;
    rkm_cursor cursor = {.pos = ""};
    keyset *got = keyset_new();
    fill_held(f->src_addr);
    scan_into(f->src, &cursor, 1, got);
    assert_false(cursor.done);
    memcached_st *mc = mc_handle(f->src_addr, 2000, false);
    for (int i = 0; i < HELD_KEYS; i += HELD_BATCH)
        if (mget_count(mc, i, HELD_BATCH) != HELD_BATCH)
            fail_msg("keys %d .. %d: no answer within 2 s while a scan is held", i,
                     i + HELD_BATCH - 1);
    memcached_free(mc);
    size_t passed = got->n;
    for (int i = 0; i < HELD_KEYS && !cursor.done; i++) {
        got->n = 0;
        scan_into(f->src, &cursor, 1, got);
        passed += got->n;
    }
    assert_true(cursor.done);
    assert_int_equal(passed, HELD_KEYS);
    free(got);
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
    static fixture memcached = {
        .store = "memcached", .src_env = "RKM_MEMCACHED_SRC", .dst_env = "RKM_MEMCACHED_DST"};
    static fixture redis = {
        .store = "redis", .src_env = "RKM_REDIS_SRC", .dst_env = "RKM_REDIS_DST"};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(driver_per_data_protocol),
        PER_STORE(scan_every_key_once),
        PER_STORE(scan_resumes),
        PER_STORE(scan_step_redone_after_failure),
        PER_STORE(copy_every_key),
        PER_STORE(copy_keeps_ttl),
        PER_STORE(batches_as_per_key),
        PER_STORE(copy_many_server_to_server),
        PER_STORE(add_never_overwrites),
        PER_STORE(put_overwrites_only_when_allowed),
        PER_STORE(expired_not_copied),
        PER_STORE(size_cap_skips),
        PER_STORE(checksums_compare),
        PER_STORE(checksum_batches_as_per_key),
        PER_STORE(delete_removes),
        PER_STORE(dead_server_fails),
        PER_STORE(bad_input_refused),
        ON_STORE(redis, reconnects_after_kill),
        ON_STORE(memcached, reconnects_after_idle_drop),
        ON_STORE(memcached, scan_holds_no_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
