/* test_envoy.c — the envoy_ring_hash, grpc_ring_hash and maglev schemes (docs/ENVOY.md) against
 * the golden vectors of SPEC section 12 (tests/vectors/envoy.json: gRPC picks from grpc-js-xds's
 * own code, Envoy's from a model checked against Envoy's unit tests): every configuration's ring
 * size, entries per endpoint, the full ring or table where given, every pick; the rings, tables and
 * picks that Envoy's own unit tests expect (ring_hash_lb_test.cc, maglev_lb_test.cc); and the
 * refusals of bad parameters, each naming its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

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
        /* rk_ring_key_hash is the position rk_ring_lookup looks up (ringkeeper.h) */
        assert_int_equal(rk_ring_lookup_hash(r, rk_ring_key_hash(r, key, strlen(key))), got);
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

#define NODES2                                                                                     \
    "\"nodes\": [{\"id\": \"a\", \"addr\": \"10.0.0.1:80\", \"weight\": 1}, "                      \
    "{\"id\": \"b\", \"addr\": \"10.0.0.2:80\", \"weight\": 2}]"
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

/* A table's slot k sits at k x 2^64 / M, rounded down, and a request hash of k picks the node of
 * that slot: at sizes whose 2^64 / M has remainders small and large (table.c carries them). */
static void test_table_positions(void **state)
{
    (void)state;
    static const unsigned sizes[] = {2, 7, 65537, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": %u, %s}",
                 sizes[i], NODES2);
        rk_ring *r = ring_text(text);
        assert_int_equal(rk_ring_point_count(r), sizes[i]);
        for (size_t k = 0; k < sizes[i]; k += 1 + k / 64) {
            uint64_t pos;
            uint32_t node;
            rk_ring_point(r, k, &pos, &node);
            assert_true(pos == (uint64_t)(((unsigned __int128)k << 64) / sizes[i]));
            char key[24];
            int len = snprintf(key, sizeof key, "%zu", k);
            assert_int_equal(rk_ring_lookup(r, key, (size_t)len), node);
        }
        rk_ring_free(r);
    }
}

/* ---- Maglev's fill against Envoy's, written as Envoy writes it (maglev_lb.cc,
 * OriginalMaglevTable::constructImplementationInternals): the permutation multiplied and divided,
 * a free slot found in the table itself. maglev.c steps, keeps a bitmap and weighs the last free
 * slots by their distance: every slot must still be the same. */

static int by_id(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Envoy's table of m slots for hosts ids[0..n) of weights w: owner[slot] = index into ids. */
static void envoy_maglev(char **ids, const unsigned *w, size_t n, uint64_t m, uint32_t *owner)
{
    char **sorted = malloc(n * sizeof *sorted);
    uint64_t *offset = malloc(n * sizeof *offset), *skip = malloc(n * sizeof *skip),
             *next = calloc(n, sizeof *next);
    uint32_t *host = malloc(n * sizeof *host);
    double *weight = malloc(n * sizeof *weight), *target = calloc(n, sizeof *target), sum = 0,
           most = 0;
    memcpy(sorted, ids, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_id);
    for (size_t i = 0; i < n; i++)
        sum += w[i];
    for (size_t i = 0; i < n; i++) {
        host[i] = 0;
        while (ids[host[i]] != sorted[i])
            host[i]++;
        weight[i] = w[host[i]] / sum;
        most = weight[i] > most ? weight[i] : most;
        offset[i] = XXH64(sorted[i], strlen(sorted[i]), 0) % m;
        skip[i] = XXH64(sorted[i], strlen(sorted[i]), 1) % (m - 1) + 1;
    }
    for (uint64_t k = 0; k < m; k++)
        owner[k] = UINT32_MAX;
    uint64_t filled = 0;
    for (uint32_t iteration = 1; filled < m; iteration++)
        for (size_t i = 0; i < n && filled < m; i++) {
            if (weight[i] == 0 || iteration * weight[i] < target[i])
                continue;
            target[i] += most;
            uint64_t c = (offset[i] + skip[i] * next[i]) % m;
            while (owner[c] != UINT32_MAX)
                c = (offset[i] + skip[i] * ++next[i]) % m;
            owner[c] = host[i];
            next[i]++;
            filled++;
        }
    free(sorted), free(offset), free(skip), free(next), free(host), free(weight), free(target);
}

/* Tables of many hosts, of weights equal and unequal (some 0), at sizes large and small: each
 * slot's node is Envoy's. */
static void test_maglev_fill_model(void **state)
{
    (void)state;
    static const struct {
        size_t hosts;
        unsigned m, weights; /* weights: 1 (equal) or host % weights (some 0) + 1 */
    } cases[] = {{500, 65537, 1}, {37, 65537, 5}, {200, 5003, 3}, {9, 101, 4}, {3, 7, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = cases[c].hosts;
        char *names = calloc(n, 16), **ids = malloc(n * sizeof *ids);
        unsigned *w = malloc(n * sizeof *w);
        json_t *nodes = json_array();
        for (size_t i = 0; i < n; i++) {
            ids[i] = names + 16 * i;
            snprintf(ids[i], 16, "10.1.%u.%u:80", (unsigned)(i / 200 % 256), (unsigned)(i % 200));
            w[i] = cases[c].weights == 1 ? 1 : (unsigned)(i % cases[c].weights) * (i % 7 != 3);
            if (i == 0 && w[i] == 0)
                w[i] = 1;
            json_array_append_new(
                nodes, json_pack("{s:s, s:s, s:i}", "id", ids[i], "addr", ids[i], "weight", w[i]));
        }
        json_t *doc = json_pack("{s:s, s:s, s:i, s:o}", "scheme", "maglev", "hash", "xx_hash",
                                "table_size", cases[c].m, "nodes", nodes);
        rk_error err = {0};
        rk_topology *t = rk_topology_from_json(doc, &err);
        json_decref(doc);
        assert_non_null(t);
        rk_ring *r = rk_ring_build(t, &err);
        assert_non_null(r);
        uint32_t *owner = malloc(cases[c].m * sizeof *owner);
        envoy_maglev(ids, w, n, cases[c].m, owner);
        assert_int_equal(rk_ring_point_count(r), cases[c].m);
        for (size_t k = 0; k < cases[c].m; k++) {
            uint64_t pos;
            uint32_t node;
            rk_ring_point(r, k, &pos, &node);
            if (node != owner[k])
                fail_msg("case %zu: slot %zu is node %u's, Envoy's table says %u's", c, k, node,
                         owner[k]);
        }
        free(owner), free(names), free(ids), free(w);
        rk_ring_free(r);
        rk_topology_free(t);
    }
}

/* A ring of `scheme` ("head" its other members, ending in a comma) over hosts h0 .. h(n-1), the
 * first `drop` left out. */
static rk_ring *hosts(const char *head, size_t n, size_t drop)
{
    json_t *nodes = json_array();
    for (size_t i = drop; i < n; i++) {
        char id[16], addr[32];
        snprintf(id, sizeof id, "h%zu", i);
        snprintf(addr, sizeof addr, "10.0.%zu.%zu:80", i / 250, i % 250);
        json_array_append_new(nodes,
                              json_pack("{s:s, s:s, s:i}", "id", id, "addr", addr, "weight", 1));
    }
    char *list = json_dumps(nodes, JSON_COMPACT), text[1 << 16];
    snprintf(text, sizeof text, "{%s \"nodes\": %s}", head, list);
    free(list);
    json_decref(nodes);
    return ring_text(text);
}

/* The plan's warning that holds `needle`, or NULL. */
static const char *warning_with(const rk_plan *p, const char *needle)
{
    size_t n;
    const char *const *w = rk_plan_warnings(p, &n);
    for (size_t i = 0; i < n; i++)
        if (strstr(w[i], needle))
            return w[i];
    return NULL;
}

/* The plan's advice on the ring's size (docs/ENVOY.md, "Ring size"): gRPC's cap at 100 endpoints
 * leaves about 41 entries each; a Maglev table under 100 slots a host; none for a ring whose
 * hosts have 100 entries or more, or in a scheme its parameters do not size. */
static void test_size_advice(void **state)
{
    (void)state;
    static const struct {
        const char *head;
        size_t n;
        const char *advice; /* NULL: none */
    } cases[] = {
        {"\"scheme\": \"grpc_ring_hash\", \"hash\": \"xx_hash\", \"minimum_ring_size\": 4096,", 101,
         "a host has 40 ring entries at the least (4097 in all for 100 hosts), so its share "
         "strays from its weight's by about 16% (1/sqrt of its entries); a minimum_ring_size of "
         "10243 (the maximum at least as large) gives it 100, about 10%; gRPC clients also need "
         "their ring_size_cap"},
        {"\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\",", 31,
         "a host has 35 ring entries at the least (1050 in all for 30 hosts)"},
        {"\"scheme\": \"envoy_ring_hash\", \"hash\": \"xx_hash\",", 11, NULL},
        {"\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 65537,", 1001,
         "a table of 65537 slots for 1000 hosts holds under 100 a host, the least Maglev asks "
         "for to keep shares even and a change's disruption small; give table_size a prime of at "
         "least 100000"},
        {"\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 65537,", 101, NULL},
        {"\"hash\": \"xxh3_64\", \"vnode_factor\": 40,", 11, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rk_ring *a = hosts(cases[i].head, cases[i].n, 0), *b = hosts(cases[i].head, cases[i].n, 1);
        rk_error err = {0};
        rk_plan *p = rk_plan_new(a, b, NULL, &err);
        assert_non_null(p);
        const char *w = warning_with(p, "after: a ");
        if (cases[i].advice) {
            if (!w || !strstr(w, cases[i].advice))
                fail_msg("case %zu: want advice with [%s], got [%s]", i, cases[i].advice,
                         w ? w : "(none)");
        } else if (w && (strstr(w, "ring entries") || strstr(w, "slots for"))) {
            fail_msg("case %zu: no advice wanted, got [%s]", i, w);
        }
        rk_plan_free(p);
        rk_ring_free(a);
        rk_ring_free(b);
    }
}

/* ---- Envoy's own unit tests (ring_hash_lb_test.cc, maglev_lb_test.cc): their hosts, the ring
 * or table their comments list, and their picks ---- */

/* Six hosts named "<prefix><port>", ports first..first+5, in that order. */
static rk_ring *six_hosts(const char *head, const char *prefix, int first)
{
    char text[1024];
    int at = snprintf(text, sizeof text, "{%s, \"nodes\": [", head);
    for (int k = 0; k < 6; k++)
        at += snprintf(text + at, sizeof text - (size_t)at,
                       "%s{\"id\": \"%s%d\", \"addr\": \"127.0.0.1:%d\", \"weight\": 1}",
                       k ? ", " : "", prefix, first + k, first + k);
    snprintf(text + at, sizeof text - (size_t)at, "]}");
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    rk_ring *r = ring_of(doc);
    json_decref(doc);
    return r;
}

typedef struct pick {
    const char *hash;
    uint32_t host;
} pick;

static void check_picks(const char *name, const rk_ring *r, const pick *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t got = rk_ring_lookup(r, p[i].hash, strlen(p[i].hash));
        if (got != p[i].host)
            fail_msg("%s: %s picks host %u, want %u", name, p[i].hash, got, p[i].host);
    }
}

/* The ring their comment lists: host index and position of each entry, ascending. */
static void check_ring(const char *name, const rk_ring *r, const uint32_t *host,
                       const uint64_t *pos)
{
    assert_int_equal(rk_ring_point_count(r), 12);
    for (size_t i = 0; i < 12; i++) {
        uint64_t p;
        uint32_t nd;
        rk_ring_point(r, i, &p, &nd);
        if (p != pos[i] || nd != host[i])
            fail_msg("%s: entry %zu is host %u at %llu", name, i, nd, (unsigned long long)p);
    }
}

#define RING_HEAD(hash)                                                                            \
    "\"scheme\": \"envoy_ring_hash\", \"hash\": \"" hash "\", \"minimum_ring_size\": 12"

static void test_envoy_ring_hash_unit_tests(void **state)
{
    (void)state;
    /* RingHashLoadBalancerTest.Basic */
    static const uint32_t basic_host[] = {4, 2, 0, 5, 3, 1, 1, 3, 5, 2, 4, 0};
    static const uint64_t basic_pos[] = {
        833437586790550860ULL,   928266305478181108ULL,   1033482794131418490ULL,
        3551244743356806947ULL,  3851675632748031481ULL,  5583722120771150861ULL,
        6311230543546372928ULL,  7700377290971790572ULL,  13144177310400110813ULL,
        13444792449719432967ULL, 15516499411664133160ULL, 16117243373044804889ULL};
    static const pick basic[] = {{"0", 4},
                                 {"18446744073709551615", 4},
                                 {"3551244743356806947", 5},
                                 {"3551244743356806948", 3},
                                 {"16117243373044804880", 0}};
    rk_ring *r = six_hosts(RING_HEAD("xx_hash"), "127.0.0.1:", 90);
    check_ring("Basic", r, basic_host, basic_pos);
    check_picks("Basic", r, basic, sizeof basic / sizeof basic[0]);
    rk_ring_free(r);
    /* RingHashLoadBalancerTest.BasicWithMurmur2 */
    static const uint32_t murmur_host[] = {5, 3, 4, 1, 2, 4, 1, 2, 3, 0, 5, 0};
    static const uint64_t murmur_pos[] = {
        1358027074129602068ULL,  4361834613929391114ULL,  7224494972555149682ULL,
        7701421856454313576ULL,  8649315368077433379ULL,  8739448859063030639ULL,
        9887544217113020895ULL,  10150910876324007731ULL, 15168472011420622455ULL,
        15427156902705414897ULL, 16375050414328759093ULL, 17613279263364193813ULL};
    static const pick murmur[] = {{"0", 5},
                                  {"18446744073709551615", 5},
                                  {"1358027074129602068", 5},
                                  {"1358027074129602069", 3},
                                  {"10150910876324007730", 2}};
    r = six_hosts(RING_HEAD("murmur_hash_2"), "127.0.0.1:", 80);
    check_ring("BasicWithMurmur2", r, murmur_host, murmur_pos);
    check_picks("BasicWithMurmur2", r, murmur, sizeof murmur / sizeof murmur[0]);
    rk_ring_free(r);
    /* RingHashLoadBalancerTest.BasicWithHostname (and BasicWithMetadataHashKey): ids "90".."95" */
    static const uint32_t name_host[] = {5, 5, 3, 4, 3, 2, 0, 2, 1, 0, 1, 4};
    static const uint64_t name_pos[] = {
        1975508444536362413ULL,  2376063919839173711ULL,  2386806903309390596ULL,
        6749904478991551885ULL,  6803900775736438537ULL,  7225015537174310577ULL,
        8787465352164086522ULL,  11282020843382717940ULL, 13723418369486627818ULL,
        13776502110861797421ULL, 14338313586354474791ULL, 15364271037087512980ULL};
    static const pick name[] = {{"0", 5},
                                {"18446744073709551615", 5},
                                {"7225015537174310577", 2},
                                {"6803900775736438537", 3}};
    r = six_hosts(RING_HEAD("xx_hash") ", \"use_hostname_for_hashing\": true", "", 90);
    check_ring("BasicWithHostname", r, name_host, name_pos);
    check_picks("BasicWithHostname", r, name, sizeof name / sizeof name[0]);
    rk_ring_free(r);
}

/* MaglevLoadBalancerTest.Basic and BasicWithHostName: request hashes 0..20 over a table of 7. */
static void test_maglev_unit_tests(void **state)
{
    (void)state;
    static const uint32_t by_address[] = {2, 4, 0, 1, 5, 0, 3}, by_name[] = {2, 5, 0, 3, 4, 1, 0};
    rk_ring *a = six_hosts("\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 7",
                           "127.0.0.1:", 90);
    rk_ring *b =
        six_hosts("\"scheme\": \"maglev\", \"hash\": \"xx_hash\", \"table_size\": 7", "", 90);
    for (unsigned i = 0; i < 21; i++) {
        char key[8];
        int len = snprintf(key, sizeof key, "%u", i);
        assert_int_equal(rk_ring_lookup(a, key, (size_t)len), by_address[i % 7]);
        assert_int_equal(rk_ring_lookup(b, key, (size_t)len), by_name[i % 7]);
    }
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
        cmocka_unit_test(test_table_positions),
        cmocka_unit_test(test_size_advice),
        cmocka_unit_test(test_envoy_ring_hash_unit_tests),
        cmocka_unit_test(test_maglev_unit_tests),
        cmocka_unit_test(test_maglev_fill_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
