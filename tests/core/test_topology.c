/* test_topology.c — topology validation (docs/RING.md): the cases in tests/fixtures/invalid (each
 * with the error it must give) and tests/fixtures/valid (each must parse and round-trip), plus the
 * cases too big or too binary to keep as files. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>

#include "ringkeeper.h"

#define MAX_FILE (1 << 20) /* fixtures are small */

/* The whole file at `path`; free() it. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = malloc(MAX_FILE);
    assert_non_null(buf);
    *len = fread(buf, 1, MAX_FILE, f);
    assert_true(*len < MAX_FILE && !ferror(f));
    fclose(f);
    return buf;
}

static int not_hidden(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

/* Calls check(dir, name) on each case folder under fixtures/<kind>, in name order; returns how
 * many. */
static int each_case(const char *kind, void (*check)(const char *dir, const char *name))
{
    char dir[1024];
    struct dirent **names;
    snprintf(dir, sizeof dir, "%s/%s", RK_FIXTURES_DIR, kind);
    int n = scandir(dir, &names, not_hidden, alphasort);
    if (n < 0)
        fail_msg("cannot list %s", dir);
    for (int k = 0; k < n; k++) {
        check(dir, names[k]->d_name);
        free(names[k]);
    }
    free(names);
    return n;
}

static rk_topology *parse_case(const char *dir, const char *name, rk_error *err)
{
    char path[1024];
    size_t len;
    snprintf(path, sizeof path, "%s/%s/topology.json", dir, name);
    char *text = slurp(path, &len);
    rk_topology *t = rk_topology_parse(text, len, err);
    free(text);
    return t;
}

/* Every message is valid UTF-8 (a server puts it into JSON) and starts with "field: " when a field
 * is to blame. */
static void check_message_form(const rk_error *err, const char *name)
{
    json_t *s = json_string(err->message);
    if (!s)
        fail_msg("%s: the message is not valid UTF-8: %s", name, err->message);
    json_decref(s);
    size_t f = strlen(err->field);
    if (f && (strncmp(err->message, err->field, f) || strncmp(err->message + f, ": ", 2)))
        fail_msg("%s: the message does not start with \"%s: \": %s", name, err->field,
                 err->message);
}

/* expected: the error name, the field, the message; one a line. */
static void check_invalid(const char *dir, const char *name)
{
    char path[1024], want[3][512];
    snprintf(path, sizeof path, "%s/%s/expected", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: cannot open %s", name, path);
    for (int k = 0; k < 3; k++) {
        if (!fgets(want[k], sizeof want[k], f))
            fail_msg("%s: expected needs three lines", name);
        want[k][strcspn(want[k], "\n")] = '\0';
    }
    fclose(f);
    rk_error err = {0};
    rk_topology *t = parse_case(dir, name, &err);
    if (t)
        fail_msg("%s: accepted, expected %s", name, want[0]);
    if (strcmp(rk_errname(err.code), want[0]) || strcmp(err.field, want[1]) ||
        strcmp(err.message, want[2]))
        fail_msg("%s:\n  got  %s [%s] %s\n  want %s [%s] %s", name, rk_errname(err.code), err.field,
                 err.message, want[0], want[1], want[2]);
    check_message_form(&err, name);
}

static void assert_same_topology(const rk_topology *a, const rk_topology *b)
{
    assert_int_equal(rk_topology_hash(a), rk_topology_hash(b));
    assert_int_equal(rk_topology_vnode_factor(a), rk_topology_vnode_factor(b));
    assert_int_equal(rk_topology_points(a), rk_topology_points(b));
    assert_int_equal(rk_topology_node_count(a), rk_topology_node_count(b));
    for (size_t i = 0; i < rk_topology_node_count(a); i++) {
        const rk_node *x = rk_topology_node(a, i), *y = rk_topology_node(b, i);
        assert_string_equal(x->id, y->id);
        assert_string_equal(x->addr, y->addr);
        assert_true(x->weight == y->weight);
    }
    const char *ca = rk_topology_comment(a), *cb = rk_topology_comment(b);
    assert_true((ca == NULL) == (cb == NULL));
    if (ca)
        assert_string_equal(ca, cb);
    const char *da = rk_topology_data(a), *db = rk_topology_data(b);
    assert_true((da == NULL) == (db == NULL));
    if (da)
        assert_string_equal(da, db);
}

/* Parses, then rk_topology_to_json -> rk_topology_from_json gives an equal topology, and so does
 * rk_topology_to_text -> rk_topology_parse, whose text is the JSON's own. */
static void check_valid(const char *dir, const char *name)
{
    rk_error err = {0};
    rk_topology *t = parse_case(dir, name, &err);
    if (!t)
        fail_msg("%s: refused: %s", name, err.message);
    json_t *doc = rk_topology_to_json(t);
    assert_non_null(doc);
    rk_topology *back = rk_topology_from_json(doc, &err);
    if (!back)
        fail_msg("%s: its own JSON is refused: %s", name, err.message);
    assert_same_topology(t, back);
    char *text = rk_topology_to_text(t), *dumped = rk_json_dumps(doc, JSON_COMPACT);
    assert_non_null(text);
    assert_string_equal(text, dumped);
    rk_topology *from_text = rk_topology_parse(text, strlen(text), &err);
    if (!from_text)
        fail_msg("%s: its own text is refused: %s", name, err.message);
    assert_same_topology(t, from_text);
    free(text);
    free(dumped);
    json_decref(doc);
    rk_topology_free(from_text);
    rk_topology_free(back);
    rk_topology_free(t);
}

static void test_invalid_fixtures(void **state)
{
    (void)state;
    assert_true(each_case("invalid", check_invalid) >= 50);
}

static void test_valid_fixtures(void **state)
{
    (void)state;
    assert_true(each_case("valid", check_valid) >= 10);
}

/* A fetched version document keeps its topology: server fields ignored, comment kept. */
static void test_version_document(void **state)
{
    (void)state;
    rk_error err = {0};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/valid", RK_FIXTURES_DIR);
    rk_topology *t = parse_case(dir, "version_document", &err);
    assert_non_null(t);
    assert_int_equal(rk_topology_node_count(t), 4);
    assert_string_equal(rk_topology_comment(t), "add cache-d");
    json_t *doc = rk_topology_to_json(t);
    assert_null(json_object_get(doc, "version"));
    assert_null(json_object_get(doc, "fingerprint"));
    json_decref(doc);
    rk_topology_free(t);
}

/* Four cache nodes of the ringkeeper scheme (or the ketama scheme), with `data` when not NULL;
 * `data` is a JSON value, owned by the document. */
static json_t *doc_with_data(int ketama, json_t *data)
{
    json_t *doc = json_loads(
        ketama ? "{\"scheme\": \"ketama\", \"hash\": \"md5\", \"hash_tag\": \"{}\", \"nodes\": []}"
               : "{\"hash\": \"xxh3_64\", \"vnode_factor\": 40, \"nodes\": []}",
        0, NULL);
    assert_non_null(doc);
    for (int i = 0; i < 4; i++) {
        char id[16], addr[32];
        snprintf(id, sizeof id, "cache-%c", 'a' + i);
        snprintf(addr, sizeof addr, "10.0.0.%d:11211", i + 1);
        json_array_append_new(
            json_object_get(doc, "nodes"),
            json_pack("{s:s, s:s, s:i}", "id", id, "addr", addr, "weight", i + 1));
    }
    if (data)
        json_object_set_new(doc, "data", data);
    return doc;
}

static rk_topology *topology_with_data(int ketama, json_t *data)
{
    rk_error err = {0};
    json_t *doc = doc_with_data(ketama, data);
    rk_topology *t = rk_topology_from_json(doc, &err);
    if (!t)
        fail_msg("refused: %s", err.message);
    json_decref(doc);
    return t;
}

/* "data" is "memcached" or "redis" in either scheme, kept by to_json and by a copy with another
 * comment; the plain-values constructors, which have no such parameter, leave it unknown. */
static void test_data_accepted(void **state)
{
    (void)state;
    static const char *const names[] = {"memcached", "redis"};
    for (int ketama = 0; ketama < 2; ketama++) {
        rk_topology *none = topology_with_data(ketama, NULL);
        json_t *none_doc = rk_topology_to_json(none);
        assert_null(rk_topology_data(none));
        assert_null(json_object_get(none_doc, "data"));
        json_decref(none_doc);
        rk_topology_free(none);
        for (size_t k = 0; k < 2; k++) {
            rk_error err = {0};
            rk_topology *t = topology_with_data(ketama, json_string(names[k]));
            assert_string_equal(rk_topology_data(t), names[k]);
            json_t *doc = rk_topology_to_json(t);
            assert_string_equal(json_string_value(json_object_get(doc, "data")), names[k]);
            rk_topology *back = rk_topology_from_json(doc, &err);
            assert_non_null(back);
            assert_same_topology(t, back);
            rk_topology *copy = rk_topology_with_comment(t, "revert to v1", &err);
            assert_non_null(copy);
            assert_string_equal(rk_topology_data(copy), names[k]);
            json_decref(doc);
            rk_topology_free(copy);
            rk_topology_free(back);
            rk_topology_free(t);
        }
    }
    rk_node n = {"a", "a:1", 1};
    rk_error err = {0};
    rk_topology *t = rk_topology_new(RK_HASH_XXH3_64, 1, &n, 1, NULL, &err);
    assert_non_null(t);
    assert_null(rk_topology_data(t));
    rk_topology_free(t);
}

/* Any other "data" is refused on the field, with a message that names the allowed values. */
static void test_data_refused(void **state)
{
    (void)state;
    json_t *bad[] = {json_string("memcache"),
                     json_string("REDIS"),
                     json_string(""),
                     json_stringn("redis\0x", 7),
                     json_null(),
                     json_integer(1),
                     json_true(),
                     json_pack("[s]", "redis")};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        rk_error err = {0};
        json_t *doc = doc_with_data((int)(k % 2), bad[k]);
        assert_null(rk_topology_from_json(doc, &err));
        assert_int_equal(err.code, RK_ETOPOLOGY);
        assert_string_equal(err.field, "data");
        assert_non_null(strstr(err.message, "data: must be \"memcached\" or \"redis\""));
        check_message_form(&err, "data");
        json_decref(doc);
    }
}

/* The one list of data protocols: in registration order, found only by their exact names, each
 * found as the list's own (static) string, and listed for a message as the list says. */
static void test_data_protocols(void **state)
{
    (void)state;
    assert_string_equal(rk_data_protocol(0), "memcached");
    assert_string_equal(rk_data_protocol(1), "redis");
    assert_null(rk_data_protocol(2));
    char name[] = "redis", names[64];
    assert_ptr_equal(rk_data_protocol_find(name), rk_data_protocol(1));
    assert_null(rk_data_protocol_find("REDIS"));
    assert_null(rk_data_protocol_find(""));
    assert_null(rk_data_protocol_find(NULL));
    assert_string_equal(rk_data_protocol_names(names, sizeof names, "\""),
                        "\"memcached\" or \"redis\"");
    assert_string_equal(rk_data_protocol_names(names, sizeof names, ""), "memcached or redis");
    assert_string_equal(rk_data_protocol_names(names, 8, ""), "memcach");
}

/* "data" says what the nodes speak, not where keys go: the same ring, fingerprint and plan
 * digest with it and without, and a plan from one to the other moves nothing. */
static void test_data_not_in_ring(void **state)
{
    (void)state;
    for (int ketama = 0; ketama < 2; ketama++) {
        rk_error err = {0};
        rk_topology *t0 = topology_with_data(ketama, NULL),
                    *t1 = topology_with_data(ketama, json_string("redis"));
        rk_ring *none = rk_ring_build(t0, &err), *redis = rk_ring_build(t1, &err);
        assert_non_null(none);
        assert_non_null(redis);
        rk_topology_free(t0); /* the rings keep their references */
        rk_topology_free(t1);
        assert_string_equal(rk_ring_fingerprint_hex(none), rk_ring_fingerprint_hex(redis));
        rk_plan *same = rk_plan_new(none, none, NULL, &err);
        rk_plan *across = rk_plan_new(none, redis, NULL, &err);
        assert_non_null(same);
        assert_non_null(across);
        assert_true(rk_plan_moved_fraction(across) == 0.0);
        json_t *a = rk_plan_to_json(same, NULL, RK_PLAN_NO_ARCS);
        json_t *b = rk_plan_to_json(across, NULL, RK_PLAN_NO_ARCS);
        assert_string_equal(json_string_value(json_object_get(a, "digest")),
                            json_string_value(json_object_get(b, "digest")));
        json_decref(a);
        json_decref(b);
        rk_plan_free(same);
        rk_plan_free(across);
        rk_ring_free(none);
        rk_ring_free(redis);
    }
}

/* {"hash": "fnv1a_32", "vnode_factor": 1, "nodes": [n nodes of weight 1]}. */
static json_t *doc_with_nodes(size_t n)
{
    json_t *nodes = json_array();
    for (size_t i = 0; i < n; i++) {
        char id[32], addr[32];
        snprintf(id, sizeof id, "n%zu", i);
        snprintf(addr, sizeof addr, "10.%zu:1", i);
        json_array_append_new(nodes,
                              json_pack("{s:s, s:s, s:i}", "id", id, "addr", addr, "weight", 1));
    }
    return json_pack("{s:s, s:i, s:o}", "hash", "fnv1a_32", "vnode_factor", 1, "nodes", nodes);
}

static void test_node_count_limit(void **state)
{
    (void)state;
    rk_error err = {0};
    json_t *doc = doc_with_nodes(RK_MAX_NODES);
    rk_topology *t = rk_topology_from_json(doc, &err);
    if (!t)
        fail_msg("100000 nodes refused: %s", err.message);
    rk_topology_free(t);
    json_array_append_new(
        json_object_get(doc, "nodes"),
        json_pack("{s:s, s:s, s:i}", "id", "one-more", "addr", "x:1", "weight", 1));
    assert_null(rk_topology_from_json(doc, &err));
    assert_int_equal(err.code, RK_ETOPOLOGY);
    assert_string_equal(err.field, "nodes");
    assert_string_equal(err.message, "nodes: must be an array of 1..100000 nodes, got 100001");
    json_decref(doc);
}

static void test_new_node_count_limit(void **state)
{
    (void)state;
    rk_node *nodes = calloc(RK_MAX_NODES + 1, sizeof *nodes);
    assert_non_null(nodes);
    for (size_t i = 0; i <= RK_MAX_NODES; i++)
        nodes[i] = (rk_node){"same", "same", 1}; /* refused for the count before uniqueness */
    rk_error err = {0};
    assert_null(rk_topology_new(RK_HASH_FNV1A_32, 1, nodes, RK_MAX_NODES + 1, NULL, &err));
    assert_int_equal(err.code, RK_ETOPOLOGY);
    assert_string_equal(err.message, "nodes: must hold 1..100000 nodes, got 100001");
    assert_null(rk_topology_new(RK_HASH_FNV1A_32, 1, nodes, 0, NULL, &err));
    assert_string_equal(err.field, "nodes");
    free(nodes);
}

/* rk_topology_new gets bytes that never passed a JSON parser: each broken id is refused. */
static void test_new_bad_utf8(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\xff",         "a\xc0\xaf",        /* overlong '/' */
        "\xed\xa0\x80", "\xf4\x90\x80\x80", /* a surrogate; past U+10FFFF */
        "ab\xe8\x8a",   "\x80",             /* cut short; a lone continuation byte */
        "\xc2\x85",     "a\x1b[0m",         /* C1 and C0 control characters */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        rk_node nodes[] = {{"ok", "ok:1", 1}, {bad[k], "bad:1", 1}};
        rk_error err = {0};
        assert_null(rk_topology_new(RK_HASH_MD5_32, 10, nodes, 2, NULL, &err));
        assert_int_equal(err.code, RK_ETOPOLOGY);
        assert_string_equal(err.field, "nodes[1].id");
        check_message_form(&err, bad[k]);
        nodes[1] = (rk_node){"fine", bad[k], 1};
        assert_null(rk_topology_new(RK_HASH_MD5_32, 10, nodes, 2, NULL, &err));
        assert_string_equal(err.field, "nodes[1].addr");
    }
}

/* Marks that a terminal hides or applies (issue 52, item 8): Unicode's Default_Ignorable_Code_Point
 * and Bidi_Control, line and paragraph separators, U+2800; refused in ids and addrs, with the code
 * point named. Visible letters of any script are not. */
static void test_hidden_marks(void **state)
{
    (void)state;
    static const struct {
        const char *text, *cp;
    } hidden[] = {
        {"a\xd8\x9c", "U+061C"},          {"a\xc2\xad", "U+00AD"},     {"a\xcd\x8f", "U+034F"},
        {"a\xe1\xa0\x8e", "U+180E"},      {"a\xe3\x85\xa4", "U+3164"}, {"a\xe2\xa0\x80", "U+2800"},
        {"a\xf3\xa0\x81\x81", "U+E0041"}, {"a\xe2\x80\xae", "U+202E"}, {"a\xe2\x80\x8b", "U+200B"},
        {"a\xe2\x81\xa6", "U+2066"},      {"a\xef\xbb\xbf", "U+FEFF"}, {"a\xe2\x80\xa8", "U+2028"},
        {"a\xe2\x80\xa9", "U+2029"},      {"a\xef\xb8\x8f", "U+FE0F"}, {"a\xe1\x85\x9f", "U+115F"},
        {"a\xc2\x85", "U+0085"},
    };
    for (size_t k = 0; k < sizeof hidden / sizeof hidden[0]; k++) {
        rk_node nodes[] = {{"ok", "ok:1", 1}, {hidden[k].text, "bad:1", 1}};
        rk_error err = {0};
        assert_null(rk_topology_new(RK_HASH_MD5_32, 10, nodes, 2, NULL, &err));
        assert_int_equal(err.code, RK_ETOPOLOGY);
        assert_string_equal(err.field, "nodes[1].id");
        char want[64];
        snprintf(want, sizeof want, "byte offset 1 is %s", hidden[k].cp);
        if (!strstr(err.message, want))
            fail_msg("%s: %s", hidden[k].cp, err.message);
        nodes[1] = (rk_node){"fine", hidden[k].text, 1};
        assert_null(rk_topology_new(RK_HASH_MD5_32, 10, nodes, 2, NULL, &err));
        assert_string_equal(err.field, "nodes[1].addr");
    }
    static const char *const visible[] = {
        "caf\xc3\xa9",                      /* café */
        "\xd8\xae\xd8\xa7\xd8\xaf\xd9\x85", /* Arabic letters (right to left, no control) */
        "\xec\x84\x9c\xeb\xb2\x84",         /* Hangul syllables */
        "\xe2\xa0\x81",                     /* a braille dot: not blank */
        "\xf0\x9f\x8d\xb0",                 /* an emoji past U+FFFF */
        "a b",                              /* an ASCII space */
    };
    for (size_t k = 0; k < sizeof visible / sizeof visible[0]; k++) {
        rk_node node = {visible[k], "a:1", 1};
        rk_error err = {0};
        rk_topology *t = rk_topology_new(RK_HASH_MD5_32, 10, &node, 1, NULL, &err);
        if (!t)
            fail_msg("visible %zu refused: %s", k, err.message);
        rk_topology_free(t);
    }
}

/* The plain-values constructor enforces the rules the JSON reader does. */
static void test_new_rules(void **state)
{
    (void)state;
    rk_node ok = {"a", "a:1", 1}, heavy = {"a", "a:1", RK_MAX_WEIGHT + 1},
            null_id = {NULL, "a:1", 1};
    char comment[RK_MAX_COMMENT + 2];
    memset(comment, 'c', sizeof comment - 1);
    comment[sizeof comment - 1] = '\0';
    rk_error err = {0};
    assert_null(rk_topology_new((rk_hash_alg)7, 1, &ok, 1, NULL, &err));
    assert_string_equal(err.field, "hash");
    assert_null(rk_topology_new(RK_HASH_XXH3_64, 0, &ok, 1, NULL, &err));
    assert_string_equal(err.field, "vnode_factor");
    assert_null(rk_topology_new(RK_HASH_XXH3_64, 1, &heavy, 1, NULL, &err));
    assert_string_equal(err.message, "nodes[0].weight: must be a number 0..1000, got 1001");
    assert_null(rk_topology_new(RK_HASH_XXH3_64, 1, &null_id, 1, NULL, &err));
    assert_string_equal(err.field, "nodes[0].id");
    assert_null(rk_topology_new(RK_HASH_XXH3_64, 1, &ok, 1, comment, &err));
    assert_string_equal(err.message, "comment: must be at most 1024 bytes, got 1025");
    assert_null(rk_topology_new(RK_HASH_XXH3_64, 1, &ok, 1, "caf\xe9", &err)); /* Latin-1 */
    assert_string_equal(err.message,
                        "comment: must be valid UTF-8; byte offset 3 breaks this rule");
    comment[RK_MAX_COMMENT] = '\0';
    comment[0] = '\n'; /* control characters are fine in a comment */
    rk_topology *t = rk_topology_new(RK_HASH_XXH3_64, 1, &ok, 1, comment, &err);
    assert_non_null(t);
    json_t *doc = rk_topology_to_json(t);
    assert_non_null(doc);
    json_decref(doc);
    rk_topology_free(t);
}

/* A topology lives while a reference does: its own or a ring's. */
static void test_refcount(void **state)
{
    (void)state;
    char id[] = "node-a", addr[] = "10.0.0.1:1";
    rk_node n = {id, addr, 3};
    rk_error err = {0};
    rk_topology *t = rk_topology_new(RK_HASH_FNV1A_32, 4, &n, 1, "note", &err);
    assert_non_null(t);
    id[0] = 'X'; /* the topology holds copies */
    assert_ptr_equal(rk_topology_ref(t), t);
    rk_topology_free(t);
    assert_string_equal(rk_topology_node(t, 0)->id, "node-a");
    rk_ring *r = rk_ring_build(t, &err);
    assert_non_null(r);
    rk_topology_free(t); /* the ring's reference keeps it */
    assert_ptr_equal(rk_ring_topology(r), t);
    assert_string_equal(rk_topology_comment(rk_ring_topology(r)), "note");
    assert_int_equal(rk_topology_points(rk_ring_topology(r)), 12);
    rk_ring_free(r);
    rk_topology_free(NULL);
}

static void test_error_names(void **state)
{
    (void)state;
    assert_string_equal(rk_errname(RK_ETOPOLOGY), "RK_ETOPOLOGY");
    assert_string_equal(rk_strerror(RK_ETOOBIG), "topology over the total point cap");
    assert_string_equal(rk_errname(12345), "unknown error");
    assert_string_equal(rk_strerror(12345), "unknown error");
}

static void test_cluster_names(void **state)
{
    (void)state;
    const char *good[] = {"cache", "a", "0", "eu-west.cache_2",
                          "a123456789012345678901234567890123456789012345678901234567890bc"};
    const char *bad[] = {
        "",      "-cache", ".a",
        "_a",    "Cache",  "ca che",
        "caché", "a/b",    "a123456789012345678901234567890123456789012345678901234567890bcd"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(rk_cluster_name_valid(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(rk_cluster_name_valid(bad[i]));
    assert_false(rk_cluster_name_valid(NULL));
}

/* The one filler of rk_error (ringkeeperd's included) cuts long texts to fit without splitting a
 * UTF-8 sequence: a split one made json_pack fail and a request answer 500 "out of memory". */
static void test_error_set_cuts_utf8(void **state)
{
    (void)state;
    char text[3 * RK_ERROR_MESSAGE_MAX];
    for (size_t i = 0; i + 2 < sizeof text; i += 2)
        memcpy(text + i, "\xc3\xa9", 2); /* é */
    text[sizeof text - 2] = '\0';
    for (size_t cut = 0; cut < 4; cut++) { /* every alignment of a cut against the sequences */
        rk_error err;
        char field[RK_ERROR_FIELD_MAX + 8];
        memcpy(field, "abc", cut);
        memcpy(field + cut, text, sizeof field - cut - 1);
        field[sizeof field - 1] = '\0';
        assert_int_equal(rk_error_set(&err, RK_EINVAL, field, "%.*s%s", (int)cut, "xyz", text),
                         RK_EINVAL);
        assert_int_equal(err.code, RK_EINVAL);
        assert_true(strlen(err.field) < RK_ERROR_FIELD_MAX);
        assert_true(strlen(err.message) < RK_ERROR_MESSAGE_MAX);
        assert_memory_equal(err.message, err.field, strlen(err.field));
        json_t *doc = json_pack("{s:s, s:s}", "field", err.field, "message", err.message);
        assert_non_null(doc); /* jansson refuses invalid UTF-8 */
        json_decref(doc);
    }
    assert_int_equal(rk_error_set(NULL, RK_ENOMEM, NULL, "no room"), RK_ENOMEM);
}

/* rk_json_dumps: reals in the shortest form that reads back exactly; integers and strings as
 * jansson writes them. */
static void assert_dumps(json_t *v, const char *want)
{
    char *got = rk_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    json_decref(v);
}

static void test_json_shortest_reals(void **state)
{
    (void)state;
    assert_dumps(json_real(0.08), "0.08");
    assert_dumps(json_real(0.1 + 0.2), "0.30000000000000004");
    assert_dumps(json_real(1.0), "1.0");
    assert_dumps(json_real(-0.5), "-0.5");
    assert_dumps(json_real(1e-5), "1e-5");
    assert_dumps(json_real(1e300), "1e300");
    assert_dumps(json_real(1.2e16), "1.2e16");
    /* numbers inside strings (escaped quotes included) stay as they are */
    assert_dumps(json_pack("{s:s,s:f,s:i}", "a\"1.50000000000000001\"", "x\\", "f", 0.25, "n", 7),
                 "{\"a\\\"1.50000000000000001\\\"\":\"x\\\\\",\"f\":0.25,\"n\":7}");
    /* any double: reads back the same, never longer than jansson's own */
    srand(7);
    for (int i = 0; i < 20000; i++) {
        double d = (double)rand() / RAND_MAX * pow(10, rand() % 40 - 20) * (i % 2 ? 1 : -1);
        json_t *v = json_real(d);
        char *ours = rk_json_dumps(v, JSON_ENCODE_ANY),
             *theirs = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
        assert_true(strtod(ours, NULL) == d);
        assert_true(strlen(ours) <= strlen(theirs));
        free(ours);
        free(theirs);
        json_decref(v);
    }
}

/* A weight is kept exactly as its points over vnode_factor, and written back as it was read. */
static void test_step_weights(void **state)
{
    (void)state;
    rk_node nodes[] = {{"a", "a:1", 1}, {"b", "a:2", 0.00625}, {"c", "a:3", 2.5}};
    rk_error err = {0};
    rk_topology *t = rk_topology_new(RK_HASH_XXH3_64, 160, nodes, 3, NULL, &err);
    assert_non_null(t);
    assert_int_equal(rk_topology_points(t), 160 + 1 + 400);
    assert_true(rk_topology_node(t, 1)->weight == 1.0 / 160);
    json_t *doc = rk_topology_to_json(t);
    char *text = rk_json_dumps(json_object_get(doc, "nodes"), JSON_COMPACT);
    assert_string_equal(text, "[{\"id\":\"a\",\"addr\":\"a:1\",\"weight\":1},"
                              "{\"id\":\"b\",\"addr\":\"a:2\",\"weight\":0.00625},"
                              "{\"id\":\"c\",\"addr\":\"a:3\",\"weight\":2.5}]");
    free(text);
    json_decref(doc);
    rk_topology_free(t);
    static const double bad[] = {0.003, 1e-9, -0.5, 1000.5, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nodes[1].weight = bad[i];
        assert_null(rk_topology_new(RK_HASH_XXH3_64, 160, nodes, 3, NULL, &err));
        assert_int_equal(err.code, RK_ETOPOLOGY);
        assert_string_equal(err.field, "nodes[1].weight");
    }
    nodes[1].weight = 0.5;
    assert_null(rk_topology_new_ketama(RK_HASH_KETAMA_MD5, NULL, nodes, 3, NULL, &err));
    assert_string_equal(
        err.message, "nodes[1].weight: must be an integer 0..1000 in the ketama scheme, got 0.5");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_fixtures),
        cmocka_unit_test(test_valid_fixtures),
        cmocka_unit_test(test_version_document),
        cmocka_unit_test(test_data_accepted),
        cmocka_unit_test(test_data_refused),
        cmocka_unit_test(test_data_protocols),
        cmocka_unit_test(test_data_not_in_ring),
        cmocka_unit_test(test_node_count_limit),
        cmocka_unit_test(test_new_node_count_limit),
        cmocka_unit_test(test_new_bad_utf8),
        cmocka_unit_test(test_hidden_marks),
        cmocka_unit_test(test_new_rules),
        cmocka_unit_test(test_refcount),
        cmocka_unit_test(test_error_names),
        cmocka_unit_test(test_error_set_cuts_utf8),
        cmocka_unit_test(test_cluster_names),
        cmocka_unit_test(test_json_shortest_reals),
        cmocka_unit_test(test_step_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
