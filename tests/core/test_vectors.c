/* test_vectors.c — the golden vectors of docs/RING.md, KETAMA.md (tests/vectors, a copy of
 * shared/vectors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>
#include <jansson.h>

#include "golden.h"
#include "ringkeeper.h"

static uint32_t node_index(const rk_ring *r, const char *id)
{
    const rk_topology *t = rk_ring_topology(r);
    for (size_t i = 0; i < rk_topology_node_count(t); i++)
        if (strcmp(rk_topology_node(t, i)->id, id) == 0)
            return (uint32_t)i;
    fail_msg("no node %s", id);
    return 0;
}

static void test_hashes(void **state)
{
    (void)state;
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/hashes.tsv", RK_VECTORS_DIR);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int cases = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *alg = strtok(line, "\t"), *quoted = strtok(NULL, "\t"), *hex = strtok(NULL, "\t\n");
        assert_non_null(hex);
        json_t *s = json_loads(quoted, JSON_DECODE_ANY, NULL);
        assert_true(json_is_string(s));
        rk_hash_alg a;
        assert_int_equal(rk_hash_from_name(alg, &a), RK_OK);
        uint64_t want = strtoull(hex, NULL, 16);
        uint64_t got = rk_hash(a, json_string_value(s), json_string_length(s));
        if (got != want)
            fail_msg("%s(%s) = %llx, want %s", alg, quoted, (unsigned long long)got, hex);
        json_decref(s);
        cases++;
    }
    fclose(f);
    assert_int_equal(cases, 30);
}

static void check_ring_case(const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    rk_ring *r = ring_of(json_object_get(c, "topology"));
    const rk_topology *t = rk_ring_topology(r);
    assert_int_equal(rk_ring_point_count(r), json_integer_value(json_object_get(c, "points")));
    assert_string_equal(rk_ring_fingerprint_hex(r),
                        json_string_value(json_object_get(c, "fingerprint")));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(c, "first_points"), i, v)
    {
        uint64_t pos;
        uint32_t node;
        rk_ring_point(r, i, &pos, &node);
        uint64_t want = strtoull(json_string_value(json_object_get(v, "position")), NULL, 16);
        if (pos != want)
            fail_msg("%s: point %zu at %llx, want %llx", name, i, (unsigned long long)pos,
                     (unsigned long long)want);
        assert_string_equal(rk_topology_node(t, node)->id,
                            json_string_value(json_object_get(v, "node")));
        /* the index is not stored: check that "<node>#<index>" hashes to this position */
        char label[256];
        int len = snprintf(label, sizeof label, "%s#%lld", rk_topology_node(t, node)->id,
                           (long long)json_integer_value(json_object_get(v, "index")));
        assert_true(rk_hash(rk_topology_hash(t), label, (size_t)len) == pos);
    }
    json_array_foreach(json_object_get(c, "lookups"), i, v)
    {
        json_t *key = json_object_get(v, "key");
        uint32_t got = rk_ring_lookup(r, json_string_value(key), json_string_length(key));
        assert_string_equal(rk_topology_node(t, got)->id,
                            json_string_value(json_object_get(v, "node")));
    }
    const char *id;
    json_object_foreach(json_object_get(c, "shares"), id, v)
    {
        double got = rk_ring_share(r, node_index(r, id));
        if (fabs(got - json_real_value(v)) > 1e-12)
            fail_msg("%s: share of %s %.15f, want %.15f", name, id, got, json_real_value(v));
    }
    rk_ring_free(r);
}

static void test_rings(void **state)
{
    (void)state;
    json_t *cases = load("rings.json");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) check_ring_case(c);
    assert_true(json_array_size(cases) >= 3);
    json_decref(cases);
}

static void check_plan_case(const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    rk_ring *a = ring_of(json_object_get(c, "from")), *b = ring_of(json_object_get(c, "to"));
    rk_error err = {0};
    rk_plan *p = rk_plan_new(a, b, NULL, &err);
    assert_non_null(p);
    double want = json_real_value(json_object_get(c, "moved_fraction"));
    if (fabs(rk_plan_moved_fraction(p) - want) > 1e-12)
        fail_msg("%s: moved %.15f, want %.15f", name, rk_plan_moved_fraction(p), want);
    size_t n, np;
    const rk_transfer *t = rk_plan_transfers(p, &n);
    const rk_plan_node *nodes = rk_plan_nodes(p, &np);
    json_t *wt = json_object_get(c, "transfers");
    assert_int_equal(n, json_array_size(wt));
    for (size_t k = 0; k < n; k++) {
        json_t *w = json_array_get(wt, k);
        assert_string_equal(nodes[t[k].from].id, json_string_value(json_object_get(w, "from")));
        assert_string_equal(nodes[t[k].to].id, json_string_value(json_object_get(w, "to")));
        assert_true(fabs(t[k].fraction - json_real_value(json_object_get(w, "fraction"))) < 1e-12);
    }
    rk_plan_free(p);
    rk_ring_free(a);
    rk_ring_free(b);
}

static void test_plans(void **state)
{
    (void)state;
    json_t *cases = load("plans.json");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) check_plan_case(c);
    assert_true(json_array_size(cases) >= 4);
    json_decref(cases);
}

/* The bytes of a hex string into buf (at most cap); returns their count. */
static size_t unhex(const char *hex, char *buf, size_t cap)
{
    size_t n = strlen(hex) / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned byte;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        buf[i] = (char)byte;
    }
    return n;
}

/* docs/KETAMA.md: every node's point count and every key's owner. */
static void check_ketama_case(const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    rk_ring *r = ring_of(json_object_get(c, "topology"));
    const rk_topology *t = rk_ring_topology(r);
    assert_int_equal(rk_topology_scheme(t), RK_SCHEME_KETAMA);
    size_t counted = 0, i;
    uint32_t *count = calloc(rk_topology_node_count(t), sizeof *count);
    assert_non_null(count);
    for (i = 0; i < rk_ring_point_count(r); i++) {
        uint64_t pos;
        uint32_t node;
        rk_ring_point(r, i, &pos, &node);
        count[node]++;
    }
    const char *id;
    json_t *v;
    json_object_foreach(json_object_get(c, "points"), id, v)
    {
        uint32_t got = count[node_index(r, id)];
        if (got != json_integer_value(v))
            fail_msg("%s: %s has %u points, want %lld", name, id, got,
                     (long long)json_integer_value(v));
        counted += got;
    }
    assert_int_equal(counted, rk_ring_point_count(r));
    json_array_foreach(json_object_get(c, "lookups"), i, v)
    {
        char key[1024];
        size_t len = unhex(json_string_value(json_array_get(v, 0)), key, sizeof key);
        const char *got = rk_topology_node(t, rk_ring_lookup(r, key, len))->id;
        const char *want = json_string_value(json_array_get(v, 1));
        if (strcmp(got, want) != 0)
            fail_msg("%s: key %s goes to %s, want %s", name,
                     json_string_value(json_array_get(v, 0)), got, want);
        /* the public key hash is the lookup's, hash tags included (a mover relies on it) */
        uint32_t by_hash = rk_ring_lookup_hash(r, rk_ring_key_hash(r, key, len));
        if (strcmp(rk_topology_node(t, by_hash)->id, want) != 0)
            fail_msg("%s: key %s hashes to %s's arc, want %s", name,
                     json_string_value(json_array_get(v, 0)), rk_topology_node(t, by_hash)->id,
                     want);
    }
    free(count);
    rk_ring_free(r);
}

static void test_ketama(void **state)
{
    (void)state;
    json_t *doc = load("ketama.json");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c) check_ketama_case(c);
    assert_true(json_array_size(json_object_get(doc, "cases")) >= 10);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashes),
        cmocka_unit_test(test_rings),
        cmocka_unit_test(test_plans),
        cmocka_unit_test(test_ketama),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
