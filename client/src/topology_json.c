/* topology_json.c — reads a topology (or a version document) from JSON, blaming the exact path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* Fields the server assigns in a version document: accepted and ignored so a fetched version can be
 * edited and published again. */
static const char *const assigned_fields[] = {"cluster",    "version",      "state",
                                              "created_at", "activated_at", "author",
                                              "points",     "fingerprint",  "store_id"};

static int is_assigned(const char *key)
{
    for (size_t i = 0; i < sizeof assigned_fields / sizeof assigned_fields[0]; i++)
        if (strcmp(key, assigned_fields[i]) == 0)
            return 1;
    return 0;
}

/* What was found instead: "got <the value as compact JSON, cut to fit a message>", or "but it is
 * missing". */
static const char *shown(const json_t *v, char *buf, size_t size)
{
    if (!v)
        return "but it is missing";
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s)
        return "got an unprintable value";
    if (strlen(s) > 40)
        snprintf(buf, size, "got %.37s...", s);
    else
        snprintf(buf, size, "got %s", s);
    free(s);
    return buf;
}

/* An integer lo..hi from `v`, or an error on `path`. */
static int get_int(const json_t *v, long lo, long hi, const char *path, uint32_t *out,
                   rk_error *err)
{
    char buf[48];
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return rk_error_set(err, RK_ETOPOLOGY, path, "must be an integer %ld..%ld, %s", lo, hi,
                            shown(v, buf, sizeof buf));
    *out = (uint32_t)json_integer_value(v);
    return RK_OK;
}

static int get_string(const json_t *v, const char *path, const char *what, const char **out,
                      rk_error *err)
{
    char buf[48];
    if (!json_is_string(v))
        return rk_error_set(err, RK_ETOPOLOGY, path, "must be a string (%s), %s", what,
                            shown(v, buf, sizeof buf));
    if (strlen(json_string_value(v)) != json_string_length(v))
        return rk_error_set(err, RK_ETOPOLOGY, path, "must not contain NUL characters");
    *out = json_string_value(v);
    return RK_OK;
}

static int get_node(const json_t *v, size_t i, rk_node *out, rk_error *err)
{
    char path[64], buf[48];
    const char *key;
    const json_t *val;
    snprintf(path, sizeof path, "nodes[%zu]", i);
    if (!json_is_object(v))
        return rk_error_set(err, RK_ETOPOLOGY, path,
                            "must be an object with id, addr and weight, %s",
                            shown(v, buf, sizeof buf));
    json_object_foreach((json_t *)v, key, val)
    {
        if (strcmp(key, "id") && strcmp(key, "addr") && strcmp(key, "weight")) {
            snprintf(path, sizeof path, "nodes[%zu].%.32s", i, key);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "unknown field; a node has only id, addr and weight");
        }
    }
    snprintf(path, sizeof path, "nodes[%zu].id", i);
    if (get_string(json_object_get(v, "id"), path, "the node's stable identity", &out->id, err))
        return RK_ETOPOLOGY;
    snprintf(path, sizeof path, "nodes[%zu].addr", i);
    if (get_string(json_object_get(v, "addr"), path, "host:port clients connect to", &out->addr,
                   err))
        return RK_ETOPOLOGY;
    snprintf(path, sizeof path, "nodes[%zu].weight", i);
    return get_int(json_object_get(v, "weight"), 0, RK_MAX_WEIGHT, path, &out->weight, err);
}

static int check_fields(const json_t *doc, rk_error *err)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)doc, key, val)
    {
        if (strcmp(key, "hash") && strcmp(key, "vnode_factor") && strcmp(key, "nodes") &&
            strcmp(key, "comment") && !is_assigned(key)) {
            char path[64];
            snprintf(path, sizeof path, "%.48s", key);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "unknown field; a topology has hash, vnode_factor, nodes and "
                                "comment");
        }
    }
    return RK_OK;
}

static int get_header(const json_t *doc, rk_hash_alg *hash, uint32_t *vf, const char **comment,
                      rk_error *err)
{
    char buf[48], names[RKI_HASH_NAMES_MAX];
    const json_t *h = json_object_get(doc, "hash");
    if (!json_is_string(h) || rk_hash_from_name(json_string_value(h), hash))
        return rk_error_set(err, RK_ETOPOLOGY, "hash", "must be one of %s, %s",
                            rki_hash_names(names, sizeof names, "\"", ", "),
                            shown(h, buf, sizeof buf));
    if (get_int(json_object_get(doc, "vnode_factor"), 1, RK_MAX_VNODE_FACTOR, "vnode_factor", vf,
                err))
        return RK_ETOPOLOGY;
    const json_t *c = json_object_get(doc, "comment");
    *comment = NULL;
    if (c && !json_is_null(c))
        return get_string(c, "comment", "a note for people, at most 1024 bytes", comment, err);
    return RK_OK;
}

rk_topology *rk_topology_from_json(const json_t *doc, rk_error *err)
{
    char buf[48];
    rk_hash_alg hash = RK_HASH_FNV1A_32; /* set by get_header; GCC -O3 cannot see it */
    uint32_t vf = 0;
    const char *comment;
    if (!json_is_object(doc)) {
        rk_error_set(err, RK_ETOPOLOGY, NULL,
                     "a topology must be a JSON object with hash, vnode_factor and nodes, %s",
                     shown(doc, buf, sizeof buf));
        return NULL;
    }
    if (check_fields(doc, err) || get_header(doc, &hash, &vf, &comment, err))
        return NULL;
    const json_t *arr = json_object_get(doc, "nodes");
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n < 1 || n > RK_MAX_NODES) {
        if (json_is_array(arr)) /* the count says more than the start of a long array */
            snprintf(buf, sizeof buf, "got %zu", n);
        rk_error_set(err, RK_ETOPOLOGY, "nodes", "must be an array of 1..%d nodes, %s",
                     RK_MAX_NODES, json_is_array(arr) ? buf : shown(arr, buf, sizeof buf));
        return NULL;
    }
    rk_node *nodes = malloc(n * sizeof *nodes);
    if (!nodes) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading %zu nodes", n);
        return NULL;
    }
    rk_topology *t = NULL;
    size_t i = 0;
    while (i < n && get_node(json_array_get(arr, i), i, &nodes[i], err) == RK_OK)
        i++;
    if (i == n)
        t = rk_topology_new(hash, vf, nodes, n, comment, err);
    free(nodes);
    return t;
}

rk_topology *rk_topology_parse(const char *text, size_t len, rk_error *err)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        rk_error_set(err, RK_EJSON, NULL, "malformed JSON at line %d, column %d: %s", jerr.line,
                     jerr.column, jerr.text);
        return NULL;
    }
    rk_topology *t = rk_topology_from_json(doc, err);
    json_decref(doc);
    return t;
}
