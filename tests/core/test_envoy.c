/* test_envoy.c — the envoy_ring_hash, grpc_ring_hash and maglev schemes (docs/ENVOY.md) against
 * the golden vectors of SPEC section 12 (tests/vectors/envoy.json: gRPC picks from grpc-js-xds's
 * own code, Envoy's from a model checked against Envoy's unit tests): every configuration's ring
 * size, entries per endpoint, the full ring or table where given, every pick; and the refusals of
 * bad parameters, each naming its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "golden.h"
#include "ringkeeper.h"

/* Which vector list, which scheme, and the vector fields that become topology fields. */
typedef struct family {
    const char *list, *scheme;
    const char *const *params; /* pairs: vector field, topology field; NULL-terminated */
} family;

static const char *const grpc_params[] = {"min_ring_size",
                                          "minimum_ring_size",
                                          "max_ring_size",
                                          "maximum_ring_size",
                                          "ring_size_cap",
                                          "ring_size_cap",
                                          NULL};
static const char *const envoy_params[] = {"min_ring_size",
                                           "minimum_ring_size",
                                           "max_ring_size",
                                           "maximum_ring_size",
                                           "use_hostname_for_hashing",
                                           "use_hostname_for_hashing",
                                           NULL};
static const char *const maglev_params[] = {"table_size", "table_size", "use_hostname_for_hashing",
                                            "use_hostname_for_hashing", NULL};

static const family families[] = {
    {"grpc_ring_hash", "grpc_ring_hash", grpc_params},
    {"envoy_ring_hash", "envoy_ring_hash", envoy_params},
    {"maglev", "maglev", maglev_params},
};

/* An endpoint's key, as an import names the node: its hash_key, else the hostname when the
 * cluster hashes hostnames, else its address. */
static const char *endpoint_key(const json_t *ep, int hostnames)
{
    const json_t *k = json_object_get(ep, "hash_key");
    if (k)
        return json_string_value(k);
    return json_string_value(json_object_get(ep, hostnames ? "hostname" : "address"));
}

/* The topology document of vector case `c`: nodes in the endpoints' order. */
static json_t *topology_of(const family *f, const json_t *c)
{
    json_t *doc = json_pack("{s:s}", "scheme", f->scheme);
    const json_t *hf = json_object_get(c, "hash_function");
    json_object_set_new(doc, "hash",
                        json_string(hf && strcmp(json_string_value(hf), "MURMUR_HASH_2") == 0
                                        ? "murmur_hash_2"
                                        : "xx_hash"));
    for (size_t k = 0; f->params[k]; k += 2)
        json_object_set(doc, f->params[k + 1], json_object_get(c, f->params[k]));
    int hostnames = json_is_true(json_object_get(c, "use_hostname_for_hashing"));
    json_t *nodes = json_array(), *ep;
    size_t i;
    json_array_foreach(json_object_get(c, "endpoints"), i, ep)
    {
        json_array_append_new(nodes, json_pack("{s:s,s:O,s:O}", "id", endpoint_key(ep, hostnames),
                                               "addr", json_object_get(ep, "address"), "weight",
                                               json_object_get(ep, "weight")));
    }
    json_object_set_new(doc, "nodes", nodes);
    return doc;
}

static uint64_t u64(const json_t *v)
{
    return strtoull(json_string_value(v), NULL, 10);
}

/* The ring's points against the vector's "ring" (position, endpoint) or "table" (endpoint per
 * slot: a table scheme's point k is slot k), and its entries per endpoint against "counts". */
static void check_points(const char *name, const rk_ring *r, const json_t *c)
{
    const json_t *ring = json_object_get(c, "ring"), *table = json_object_get(c, "table");
    size_t n = rk_topology_node_count(rk_ring_topology(r));
    uint32_t *count = calloc(n, sizeof *count);
    for (size_t i = 0; i < rk_ring_point_count(r); i++) {
        uint64_t pos;
        uint32_t node;
        rk_ring_point(r, i, &pos, &node);
        count[node]++;
        if (ring) {
            const json_t *want = json_array_get(ring, i);
            if (pos != u64(json_array_get(want, 0)) ||
                node != json_integer_value(json_array_get(want, 1)))
                fail_msg("%s: entry %zu at %llu of %u", name, i, (unsigned long long)pos, node);
        }
        if (table && node != json_integer_value(json_array_get(table, i)))
            fail_msg("%s: slot %zu owned by %u, want %lld", name, i, node,
                     (long long)json_integer_value(json_array_get(table, i)));
    }
    for (size_t k = 0; k < n; k++)
        if (count[k] != json_integer_value(json_array_get(json_object_get(c, "counts"), k)))
            fail_msg("%s: endpoint %zu has %u entries", name, k, count[k]);
    free(count);
}

/* Returns the number of picks checked. */
static size_t check_case(const family *f, const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    json_t *doc = topology_of(f, c);
    rk_ring *r = ring_of(doc);
    json_decref(doc);
    const json_t *size = json_object_get(c, f == &families[2] ? "table_size" : "ring_size");
    if (rk_ring_point_count(r) != (size_t)json_integer_value(size))
        fail_msg("%s: %zu entries, want %lld", name, rk_ring_point_count(r),
                 (long long)json_integer_value(size));
    check_points(name, r, c);
    size_t i;
    json_t *pick;
    json_array_foreach(json_object_get(c, "picks"), i, pick)
    {
        const char *key = json_string_value(json_array_get(pick, 0));
        uint32_t got = rk_ring_lookup(r, key, strlen(key));
        if (got != json_integer_value(json_array_get(pick, 1)))
            fail_msg("%s: request hash %s picks endpoint %u, want %lld", name, key, got,
                     (long long)json_integer_value(json_array_get(pick, 1)));
    }
    rk_ring_free(r);
    return i;
}

static void test_vectors(void **state)
{
    (void)state;
    json_t *v = load("envoy.json");
    size_t cases = 0, picks = 0;
    for (size_t k = 0; k < sizeof families / sizeof families[0]; k++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(v, families[k].list), i, c)
        {
            picks += check_case(&families[k], c);
            cases++;
        }
    }
    json_decref(v);
    assert_int_equal(cases, 26);
    assert_true(picks >= 26 * 100);
}

/* `text` is refused with RK_ETOPOLOGY naming `field`. */
static void refused(const char *text, const char *field)
{
    rk_error err = {0};
    rk_topology *t = rk_topology_parse(text, strlen(text), &err);
    if (t)
        fail_msg("accepted: %s", text);
    assert_int_equal(err.code, RK_ETOPOLOGY);
    if (strcmp(err.field, field) != 0)
        fail_msg("%s: blamed %s (%s), want %s", text, err.field, err.message, field);
}

#define NODES "\"nodes\": [{\"id\": \"a\", \"addr\": \"10.0.0.1:80\", \"weight\": 1}]"

static void test_refusals(void **state)
{
    (void)state;
    refused(
        "{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", \"minimum_ring_size\": 0, " NODES
        "}",
        "minimum_ring_size");
    refused("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", \"minimum_ring_size\": 2048, "
            "\"maximum_ring_size\": 1024, " NODES "}",
            "maximum_ring_size");
    refused("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", \"maximum_ring_size\": "
            "8388609, " NODES "}",
            "maximum_ring_size");
    refused("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", "
            "\"use_hostname_for_hashing\": 1, " NODES "}",
            "use_hostname_for_hashing");
    refused("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", \"vnode_factor\": 160, " NODES
            "}",
            "vnode_factor");
    refused("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xxh3_64\", " NODES "}", "hash");
    refused("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", \"nodes\": [{\"id\": \"a\", "
            "\"addr\": \"x:1\", "
            "\"weight\": 1.5}]}",
            "nodes[0].weight");
    refused("{\"scheme\": \"grpc_ring_hash\", \"hash\": \"xx_hash\", \"ring_size_cap\": 0, " NODES
            "}",
            "ring_size_cap");
    refused("{\"scheme\": \"grpc_ring_hash\", \"hash\": \"murmur_hash_2\", " NODES "}", "hash");
    refused("{\"scheme\": \"grpc_ring_hash\", \"hash\": \"xx_hash\", \"use_hostname_for_hashing\": "
            "true, " NODES "}",
            "use_hostname_for_hashing");
    refused("{\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 65536, " NODES "}",
            "table_size");
    refused("{\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"minimum_ring_size\": 1024, " NODES
            "}",
            "minimum_ring_size");
}

static rk_ring *ring_text(const char *text)
{
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    rk_ring *r = ring_of(doc);
    json_decref(doc);
    return r;
}

/* Parameters survive a round trip through JSON, defaults written out. */
static void test_round_trip(void **state)
{
    (void)state;
    rk_ring *r = ring_text("{\"scheme\": \"grpc_ring_hash\", \"hash\": \"xx_hash\", " NODES "}");
    json_t *doc = rk_topology_to_json(rk_ring_topology(r));
    assert_int_equal(json_integer_value(json_object_get(doc, "minimum_ring_size")), 1024);
    assert_int_equal(json_integer_value(json_object_get(doc, "maximum_ring_size")), 4096);
    assert_int_equal(json_integer_value(json_object_get(doc, "ring_size_cap")), 4096);
    assert_string_equal(json_string_value(json_object_get(doc, "hash")), "xx_hash");
    rk_ring *again = ring_of(doc);
    assert_string_equal(rk_ring_fingerprint_hex(r), rk_ring_fingerprint_hex(again));
    json_decref(doc);
    rk_ring_free(again);
    rk_ring_free(r);
    r = ring_text(
        "{\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"use_hostname_for_hashing\": true, " NODES
        "}");
    doc = rk_topology_to_json(rk_ring_topology(r));
    assert_int_equal(json_integer_value(json_object_get(doc, "table_size")), 65537);
    assert_true(json_is_true(json_object_get(doc, "use_hostname_for_hashing")));
    json_decref(doc);
    rk_ring_free(r);
}

/* A key is the request hash in decimal; any other key is hashed with xxHash64, as Envoy's header
 * hash policy hashes one value; past 2^64 - 1 a number is no request hash. */
static void test_keys(void **state)
{
    (void)state;
    rk_ring *r = ring_text("{\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\", " NODES "}");
    rk_hash_alg xx;
    rk_scheme envoy;
    assert_int_equal(rk_scheme_from_name("envoy_ring_hash", &envoy), RK_OK);
    assert_int_equal(rk_hash_from_scheme_name(envoy, "xx_hash", &xx), RK_OK);
    assert_true(rk_ring_key_hash(r, "18446744073709551615", 20) == UINT64_MAX);
    assert_true(rk_ring_key_hash(r, "0", 1) == 0);
    assert_true(rk_ring_key_hash(r, "18446744073709551616", 20) ==
                rk_hash(xx, "18446744073709551616", 20));
    assert_true(rk_ring_key_hash(r, "user-42", 7) == rk_hash(xx, "user-42", 7));
    assert_true(rk_ring_key_hash(r, "042", 3) == rk_hash(xx, "042", 3));
    assert_true(rk_ring_key_hash(r, "", 0) == rk_hash(xx, "", 0));
    rk_ring_free(r);
}

/* Maglev tables of two sizes put a request hash in unrelated slots: no plan between them. */
static void test_table_sizes_differ(void **state)
{
    (void)state;
    rk_ring *a =
        ring_text("{\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 7, " NODES "}");
    rk_ring *b =
        ring_text("{\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 11, " NODES "}");
    rk_error err = {0};
    rk_plan *p = rk_plan_new(a, b, NULL, &err);
    assert_null(p);
    assert_int_equal(err.code, RK_EHASHMISMATCH);
    assert_string_equal(err.field, "table_size");
    rk_ring_free(a);
    rk_ring_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_table_sizes_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
