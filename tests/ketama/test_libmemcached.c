/* test_libmemcached.c — libmemcached itself as an oracle of the ketama scheme (docs/KETAMA.md):
 * with MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED and MD5 keys it builds the ring twemproxy builds (ties
 * aside, which random servers do not produce), so every key must land on the same server.
 * memcached_generate_hash only hashes: no server is contacted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libmemcached/memcached.h>

#include "ringkeeper.h"

#define KEYS 20000

typedef struct pool {
    const char *name;
    size_t n;
    const uint32_t *weights;
} pool;

/* libmemcached leaves port 11211 out of a server's name, as twemproxy does. */
static memcached_st *peer(const pool *p, char hosts[][32])
{
    memcached_st *m = memcached_create(NULL);
    assert_non_null(m);
    assert_int_equal(memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1),
                     MEMCACHED_SUCCESS);
    assert_int_equal(memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, MEMCACHED_HASH_MD5),
                     MEMCACHED_SUCCESS);
    for (size_t i = 0; i < p->n; i++)
        assert_int_equal(memcached_server_add_with_weight(m, hosts[i], 11211, p->weights[i]),
                         MEMCACHED_SUCCESS);
    return m;
}

static rk_ring *ours(const pool *p, char hosts[][32], char addrs[][40])
{
    rk_node nodes[64];
    rk_error err;
    rk_hash_alg md5;
    assert_int_equal(rk_hash_from_scheme_name(RK_SCHEME_KETAMA, "md5", &md5), RK_OK);
    for (size_t i = 0; i < p->n; i++)
        nodes[i] = (rk_node){hosts[i], addrs[i], p->weights[i]};
    rk_topology *t = rk_topology_new_ketama(md5, NULL, nodes, p->n, NULL, &err);
    if (!t)
        fail_msg("%s: %s", p->name, err.message);
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    assert_non_null(r);
    return r;
}

static void check_pool(const pool *p)
{
    char hosts[64][32], addrs[64][40];
    for (size_t i = 0; i < p->n; i++) {
        snprintf(hosts[i], sizeof hosts[i], "10.0.%zu.%zu", i / 200, i % 200 + 1);
        snprintf(addrs[i], sizeof addrs[i], "%s:11211", hosts[i]);
    }
    memcached_st *m = peer(p, hosts);
    rk_ring *r = ours(p, hosts, addrs);
    size_t differ = 0;
    for (unsigned k = 0; k < KEYS; k++) {
        char key[64];
        int len = snprintf(key, sizeof key, "%s:key:%u%s", p->name, k, k % 3 ? "" : "\xe9\xff");
        uint32_t theirs = memcached_generate_hash(m, key, (size_t)len);
        uint32_t mine = rk_ring_lookup(r, key, (size_t)len);
        differ += theirs != mine;
    }
    if (differ)
        fail_msg("%s: %zu of %d keys land elsewhere than libmemcached %s puts them", p->name,
                 differ, KEYS, memcached_lib_version());
    rk_ring_free(r);
    memcached_free(m);
}

static void test_pools(void **state)
{
    (void)state;
    static const uint32_t equal[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const uint32_t mixed[7] = {1, 2, 3, 5, 8, 13, 21};
    uint32_t big[40];
    for (size_t i = 0; i < 40; i++)
        big[i] = 100;
    const pool pools[] = {{"equal", 10, equal}, {"mixed", 7, mixed}, {"forty", 40, big}};
    for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++)
        check_pool(&pools[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pools)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
