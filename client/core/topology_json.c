/* topology_json.c — reads a topology (or a version document) from JSON, blaming the exact path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* Fields the server assigns in a version document (and the ring document's migration window):
 * accepted and ignored so a fetched version can be edited and published again. */
static const char *const assigned_fields[] = {
    "cluster", "version",     "state",    "created_at", "activated_at",
    "author",  "fingerprint", "store_id", "points",     "previous"};

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

int rki_json_uint(const json_t *v, long lo, long hi, const char *path, uint32_t *out, rk_error *err)
{
    char buf[48];
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return rk_error_set(err, RK_ETOPOLOGY, path, "must be an integer %ld..%ld, %s", lo, hi,
                            shown(v, buf, sizeof buf));
    *out = (uint32_t)json_integer_value(v);
    return RK_OK;
}

int rki_json_text(const json_t *v, const char *path, const char *what, const char **out,
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

/* A node's string field. Its path is written only for an error: a 100000-node topology would
 * otherwise format 300000 paths it never shows. */
static int get_node_string(const json_t *node, size_t i, const char *key, const char *what,
                           const char **out, rk_error *err)
{
    const json_t *v = json_object_get(node, key);
    if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)) {
        *out = json_string_value(v);
        return RK_OK;
    }
    char path[64];
    snprintf(path, sizeof path, "nodes[%zu].%s", i, key);
    return rki_json_text(v, path, what, out, err);
}

static int get_node(const json_t *v, size_t i, rk_node *out, rk_error *err)
{
    char path[64], buf[48];
    const char *key;
    const json_t *val;
    if (!json_is_object(v)) {
        snprintf(path, sizeof path, "nodes[%zu]", i);
        return rk_error_set(err, RK_ETOPOLOGY, path,
                            "must be an object with id, addr and weight, %s",
                            shown(v, buf, sizeof buf));
    }
    json_object_foreach((json_t *)v, key, val)
    {
        if (strcmp(key, "id") && strcmp(key, "addr") && strcmp(key, "weight")) {
            snprintf(path, sizeof path, "nodes[%zu].%.32s", i, key);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "unknown field; a node has only id, addr and weight");
        }
    }
    if (get_node_string(v, i, "id", "the node's stable identity", &out->id, err) ||
        get_node_string(v, i, "addr", "host:port clients connect to", &out->addr, err))
        return RK_ETOPOLOGY;
    const json_t *w = json_object_get(v, "weight");
    if (!json_is_number(w)) {
        snprintf(path, sizeof path, "nodes[%zu].weight", i);
        return rk_error_set(err, RK_ETOPOLOGY, path, "must be a number 0..%d, %s", RK_MAX_WEIGHT,
                            shown(w, buf, sizeof buf));
    }
    out->weight = json_number_value(w); /* its range and steps: topology.c */
    return RK_OK;
}

/* What a topology document says besides its nodes. */
typedef struct header {
    const rki_scheme *scheme;
    rk_hash_alg hash;
    void *params;        /* the scheme's block, owned; its strings borrowed from the document */
    const char *comment; /* or NULL; borrowed from the document */
    const char *data;    /* a name of rk_data_protocol's list, or NULL: unknown */
} header;

static int in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(key, list[i]) == 0)
            return 1;
    return 0;
}

/* Every field is one of every scheme's, one of `scheme`'s own, or one the server assigns; a field
 * of another scheme gets a message that says whose it is. */
static int check_fields(const json_t *doc, const rki_scheme *scheme, rk_error *err)
{
    static const char *const common[] = {"scheme", "hash", "nodes", "comment", "data", NULL};
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)doc, key, val)
    {
        if (in_list(common, key) || in_list(scheme->fields, key) || is_assigned(key))
            continue;
        const char *why = scheme->unknown;
        for (const rki_field_note *m = scheme->misplaced; m->key; m++)
            if (strcmp(key, m->key) == 0)
                why = m->message;
        char path[64];
        snprintf(path, sizeof path, "%.48s", key);
        return rk_error_set(err, RK_ETOPOLOGY, path, "%s", why);
    }
    return RK_OK;
}

static int get_scheme(const json_t *doc, const rki_scheme **scheme, rk_error *err)
{
    char buf[48], names[RKI_HASH_NAMES_MAX];
    const json_t *v = json_object_get(doc, "scheme");
    rk_scheme id = RK_SCHEME_RINGKEEPER;
    if (v && (!json_is_string(v) || rk_scheme_from_name(json_string_value(v), &id)))
        return rk_error_set(err, RK_ETOPOLOGY, "scheme", "must be %s, %s",
                            rki_scheme_names(names, sizeof names), shown(v, buf, sizeof buf));
    *scheme = rki_scheme_of(id);
    return RK_OK;
}

/* "data", when present: the protocol of the nodes' data servers, one of rk_data_protocol's
 * (those the data mover has a driver for), exactly (a JSON string may hold a NUL). Not part of the
 * ring: the same nodes route alike whatever they speak. */
static int get_data(const json_t *v, const char **out, rk_error *err)
{
    char buf[48], names[RKI_HASH_NAMES_MAX];
    *out = NULL;
    if (!v)
        return RK_OK;
    const char *name = json_is_string(v) ? rk_data_protocol_find(json_string_value(v)) : NULL;
    if (name && json_string_length(v) == strlen(name)) {
        *out = name;
        return RK_OK;
    }
    return rk_error_set(err, RK_ETOPOLOGY, "data",
                        "must be %s (the protocol the nodes' data servers speak; leave it out "
                        "when unknown), %s",
                        rk_data_protocol_names(names, sizeof names, "\""),
                        shown(v, buf, sizeof buf));
}

static int get_header(const json_t *doc, header *h, rk_error *err)
{
    char buf[48], names[RKI_HASH_NAMES_MAX];
    if (get_scheme(doc, &h->scheme, err))
        return RK_ETOPOLOGY;
    const rki_scheme *scheme = h->scheme;
    if (check_fields(doc, scheme, err))
        return RK_ETOPOLOGY;
    const json_t *v = json_object_get(doc, "hash");
    if (!json_is_string(v) || rk_hash_from_scheme_name(scheme->id, json_string_value(v), &h->hash))
        return rk_error_set(err, RK_ETOPOLOGY, "hash", "must be one of %s, %s",
                            rki_hash_names(scheme->id, names, sizeof names, "\"", ", "),
                            shown(v, buf, sizeof buf));
    if (!(h->params = calloc(1, scheme->params_size ? scheme->params_size : 1)))
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    if (scheme->read && scheme->read(doc, h->params, err))
        return RK_ETOPOLOGY;
    v = json_object_get(doc, "comment");
    h->comment = NULL;
    if (v && !json_is_null(v) &&
        rki_json_text(v, "comment", "a note for people, at most 1024 bytes", &h->comment, err))
        return RK_ETOPOLOGY;
    return get_data(json_object_get(doc, "data"), &h->data, err);
}

static rk_topology *new_topology(const header *h, const rk_node *nodes, size_t n, rk_error *err)
{
    rk_topology *t = rki_topology_make(h->scheme, h->hash, h->params, nodes, n, h->comment, err);
    if (t)
        rki_topology_set_data(t, h->data);
    return t;
}

/* The topology of `doc`, whose header `h` says the rest, with its nodes. */
static rk_topology *with_nodes(const json_t *doc, const header *h, rk_error *err)
{
    char buf[48];
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
        t = new_topology(h, nodes, n, err);
    free(nodes);
    return t;
}

rk_topology *rk_topology_from_json(const json_t *doc, rk_error *err)
{
    char buf[48];
    header h = {0};
    if (!json_is_object(doc)) {
        rk_error_set(err, RK_ETOPOLOGY, NULL,
                     "a topology must be a JSON object with hash, vnode_factor and nodes, %s",
                     shown(doc, buf, sizeof buf));
        return NULL;
    }
    rk_topology *t = get_header(doc, &h, err) ? NULL : with_nodes(doc, &h, err);
    free(h.params);
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
