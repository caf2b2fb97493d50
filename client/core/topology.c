/* topology.c — topologies: validation of every rule of docs/RING.md, from JSON or plain values.
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

struct rk_topology {
    atomic_uint refs;         /* references; freed at zero */
    const rki_scheme *scheme; /* how the ring's points are made */
    rk_hash_alg hash;         /* hash algorithm, one of `scheme`'s */
    void *params;             /* the scheme's parameters (rki_scheme.params_size), owned */
    size_t n;                 /* number of nodes */
    rk_node *nodes;           /* nodes in document order; strings point into `strings` */
    uint32_t *order;          /* node indexes in ascending id byte order */
    char *comment;            /* NULL when absent */
    const char *data;         /* the data protocol, a static name; NULL when unknown */
    uint64_t points;          /* the ring's point count */
    char *strings;            /* private: one block holding every id and addr */
};

/* A node name with its index, for sorting ids or addrs bytewise; ties keep document order. */
typedef struct {
    const char *s;
    uint32_t i;
} named;

static int named_cmp(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    if (c)
        return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Length of the UTF-8 character at p (of at most `left` bytes), or 0 when it is not valid UTF-8
 * or, unless `controls_ok`, is rk_text_hidden. */
static size_t utf8_char(const char *p, size_t left, int controls_ok)
{
    uint32_t cp;
    size_t len = rk_utf8_next(p, left, &cp);
    return len && (controls_ok || !rk_text_hidden(cp)) ? len : 0;
}

/* Offset of the first byte that is not valid UTF-8 or (unless `controls_ok`) starts a control
 * character; len if none. */
static size_t text_bad_at(const char *s, size_t len, int controls_ok)
{
    size_t at = 0;
    while (at < len) {
        size_t k = utf8_char(s + at, len - at, controls_ok);
        if (!k)
            return at;
        at += k;
    }
    return len;
}

/* nodes[i].<field>: its path is written only for an error, as a 100000-node topology would
 * otherwise format 300000 paths it never shows. */
static int check_text(const char *s, size_t max, size_t i, const char *field, rk_error *err)
{
    size_t len = s ? strlen(s) : 0;
    int sized = len >= 1 && len <= max;
    size_t bad = sized ? text_bad_at(s, len, 0) : 0;
    if (sized && bad == len)
        return RK_OK;
    char path[64];
    snprintf(path, sizeof path, "nodes[%zu].%s", i, field);
    if (!s)
        return rk_error_set(err, RK_ETOPOLOGY, path, "must be a string, got NULL");
    if (!sized)
        return rk_error_set(err, RK_ETOPOLOGY, path, "must be 1..%zu bytes, got %zu", max, len);
    uint32_t cp;
    char what[24] = "invalid UTF-8";
    if (rk_utf8_next(s + bad, len - bad, &cp))
        snprintf(what, sizeof what, "U+%04" PRIX32, cp);
    return rk_error_set(err, RK_ETOPOLOGY, path,
                        "must be valid UTF-8 without control characters (U+0000..U+001F, "
                        "U+007F..U+009F) or invisible and direction marks (Unicode's "
                        "Default_Ignorable_Code_Point and Bidi_Control, U+2028, U+2029, U+2800); "
                        "byte offset %zu is %s",
                        bad, what);
}

/* Sorts `v` (n entries) and reports the first name used twice. */
static int check_unique(named *v, size_t n, const char *what, rk_error *err)
{
    qsort(v, n, sizeof *v, named_cmp);
    for (size_t k = 1; k < n; k++) {
        if (strcmp(v[k - 1].s, v[k].s) == 0) {
            char path[64];
            snprintf(path, sizeof path, "nodes[%u].%s", v[k].i, what);
            return rk_error_set(err, RK_ETOPOLOGY, path,
                                "\"%.64s%s\" is already the %s of nodes[%u]; %ss must be unique",
                                v[k].s, strlen(v[k].s) > 64 ? "..." : "", what, v[k - 1].i, what);
        }
    }
    return RK_OK;
}

static int check_nodes(const rk_node *nodes, size_t n, rk_error *err)
{
    int any_weight = 0;
    for (size_t i = 0; i < n; i++) {
        if (check_text(nodes[i].id, RK_MAX_ID_BYTES, i, "id", err) ||
            check_text(nodes[i].addr, RK_MAX_ADDR_BYTES, i, "addr", err))
            return RK_ETOPOLOGY;
        if (!(nodes[i].weight >= 0 && nodes[i].weight <= RK_MAX_WEIGHT)) { /* NaN fails too */
            char path[64];
            snprintf(path, sizeof path, "nodes[%zu].weight", i);
            return rk_error_set(err, RK_ETOPOLOGY, path, "must be a number 0..%d, got %g",
                                RK_MAX_WEIGHT, nodes[i].weight);
        }
        any_weight |= nodes[i].weight > 0;
    }
    if (!any_weight)
        return rk_error_set(err, RK_ETOPOLOGY, "nodes",
                            "at least one node needs a weight above 0; all are draining");
    return RK_OK;
}

uint32_t rki_weight_points(uint32_t vnode_factor, double weight)
{
    return (uint32_t)nearbyint((double)vnode_factor * weight);
}

/* Any text of at most RK_MAX_COMMENT bytes, in valid UTF-8 so rk_topology_to_json can write it. */
static int check_comment(const char *comment, rk_error *err)
{
    size_t len = strlen(comment), bad = text_bad_at(comment, len, 1);
    if (len > RK_MAX_COMMENT)
        return rk_error_set(err, RK_ETOPOLOGY, "comment", "must be at most %d bytes, got %zu",
                            RK_MAX_COMMENT, len);
    if (bad < len)
        return rk_error_set(err, RK_ETOPOLOGY, "comment",
                            "must be valid UTF-8; byte offset %zu breaks this rule", bad);
    return RK_OK;
}

/* The rules every scheme shares: node count, comment and nodes. */
static int check_common(const rk_node *nodes, size_t n, const char *comment, rk_error *err)
{
    if (n < 1 || n > RK_MAX_NODES)
        return rk_error_set(err, RK_ETOPOLOGY, "nodes", "must hold 1..%d nodes, got %zu",
                            RK_MAX_NODES, n);
    if (comment && check_comment(comment, err))
        return RK_ETOPOLOGY;
    return check_nodes(nodes, n, err);
}

static int check_hash(const rki_scheme *s, rk_hash_alg hash, rk_error *err)
{
    char names[RKI_HASH_NAMES_MAX];
    if (!rki_scheme_has_hash(s, hash))
        return rk_error_set(
            err, RK_ETOPOLOGY, "hash", "must be one of %s in the %s scheme, got rk_hash_alg %d",
            rki_hash_names(s->id, names, sizeof names, "", ", "), s->name, (int)hash);
    return RK_OK;
}

/* Copies the nodes' strings into one block and fills t->nodes, each weight as the scheme keeps
 * it. */
static int copy_nodes(rk_topology *t, const rk_node *nodes)
{
    size_t bytes = 0;
    for (size_t i = 0; i < t->n; i++)
        bytes += strlen(nodes[i].id) + strlen(nodes[i].addr) + 2;
    t->strings = malloc(bytes);
    t->nodes = malloc(t->n * sizeof *t->nodes);
    if (!t->strings || !t->nodes)
        return RK_ENOMEM;
    char *p = t->strings;
    for (size_t i = 0; i < t->n; i++) {
        size_t a = strlen(nodes[i].id) + 1, b = strlen(nodes[i].addr) + 1;
        double w =
            t->scheme->weight ? t->scheme->weight(t->params, nodes[i].weight) : nodes[i].weight;
        t->nodes[i] = (rk_node){memcpy(p, nodes[i].id, a), memcpy(p + a, nodes[i].addr, b), w};
        p += a + b;
    }
    return RK_OK;
}

/* Checks that ids and addrs are unique and records the id order. */
static int index_nodes(rk_topology *t, rk_error *err)
{
    named *v = malloc(t->n * sizeof *v);
    t->order = malloc(t->n * sizeof *t->order);
    if (!v || !t->order) {
        free(v);
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory indexing %zu nodes", t->n);
    }
    for (size_t i = 0; i < t->n; i++)
        v[i] = (named){t->nodes[i].addr, (uint32_t)i};
    int rc = check_unique(v, t->n, "addr", err);
    for (size_t i = 0; i < t->n; i++)
        v[i] = (named){t->nodes[i].id, (uint32_t)i};
    if (rc == RK_OK)
        rc = check_unique(v, t->n, "id", err);
    for (size_t i = 0; rc == RK_OK && i < t->n; i++)
        t->order[i] = v[i].i;
    free(v);
    return rc;
}

int rki_points_error(uint64_t points, const char *how, const char *advice, rk_error *err)
{
    return rk_error_set(err, RK_ETOOBIG, "nodes",
                        "the ring would have %llu points (%s), at most %u are allowed; %s",
                        (unsigned long long)points, how, RK_MAX_POINTS, advice);
}

/* A copy of scheme `s`'s parameters `src` (NULL: none), its strings copied too; NULL when out of
 * memory. */
static void *params_copy(const rki_scheme *s, const void *src)
{
    void *p = calloc(1, s->params_size ? s->params_size : 1);
    if (!p || !src)
        return p;
    memcpy(p, src, s->params_size);
    for (const size_t *at = s->params_strings; at && *at != RKI_PARAMS_END; at++) {
        const char **str = (const char **)((char *)p + *at);
        if (*str && !(*str = strdup(*str))) {
            while (at-- != s->params_strings) /* those copied before */
                free(*(char **)((char *)p + *at));
            free(p);
            return NULL;
        }
    }
    return p;
}

static void params_free(const rki_scheme *s, void *p)
{
    for (const size_t *at = s->params_strings; p && at && *at != RKI_PARAMS_END; at++)
        free(*(char **)((char *)p + *at));
    free(p);
}

/* A new topology with `head`'s scheme, hash and points, and copies of `params`, the nodes and the
 * comment. */
static rk_topology *assemble(const rk_topology *head, const void *params, const rk_node *nodes,
                             const char *comment, rk_error *err)
{
    rk_topology *t = calloc(1, sizeof *t);
    if (!t) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    *t = *head;
    atomic_init(&t->refs, 1);
    int rc = (t->params = params_copy(t->scheme, params)) ? RK_OK : RK_ENOMEM;
    rc = rc ? rc : copy_nodes(t, nodes);
    if (rc == RK_OK && comment && !(t->comment = strdup(comment)))
        rc = RK_ENOMEM;
    if (rc != RK_OK)
        rk_error_set(err, rc, NULL, "out of memory copying %zu nodes", t->n);
    else
        rc = index_nodes(t, err);
    if (rc != RK_OK) {
        rk_topology_free(t);
        return NULL;
    }
    return t;
}

rk_topology *rki_topology_make(const rki_scheme *s, rk_hash_alg hash, const void *params,
                               const rk_node *nodes, size_t n, const char *comment, rk_error *err)
{
    uint64_t points = 0;
    if (check_hash(s, hash, err) || (s->check && s->check(params, err)) ||
        check_common(nodes, n, comment, err) || s->count(params, nodes, n, &points, err))
        return NULL;
    rk_topology head = {.scheme = s, .hash = hash, .n = n, .points = points};
    return assemble(&head, params, nodes, comment, err);
}

rk_topology *rki_topology_with_nodes(const rk_topology *like, const rk_node *nodes, size_t n,
                                     rk_error *err)
{
    rk_topology *t =
        rki_topology_make(like->scheme, like->hash, like->params, nodes, n, like->comment, err);
    if (t)
        t->data = like->data;
    return t;
}

rk_topology *rk_topology_with_comment(const rk_topology *t, const char *comment, rk_error *err)
{
    if (comment && check_comment(comment, err))
        return NULL;
    rk_topology head = {
        .scheme = t->scheme, .hash = t->hash, .n = t->n, .data = t->data, .points = t->points};
    return assemble(&head, t->params, t->nodes, comment, err);
}

void rk_topology_free(rk_topology *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    free(t->nodes);
    free(t->order);
    free(t->comment);
    params_free(t->scheme, t->params);
    free(t->strings);
    free(t);
}

rk_topology *rk_topology_ref(rk_topology *t)
{
    atomic_fetch_add(&t->refs, 1);
    return t;
}

rk_hash_alg rk_topology_hash(const rk_topology *t)
{
    return t->hash;
}

size_t rk_topology_node_count(const rk_topology *t)
{
    return t->n;
}

const rk_node *rk_topology_node(const rk_topology *t, size_t i)
{
    return &t->nodes[i];
}

const char *rk_topology_comment(const rk_topology *t)
{
    return t->comment;
}

const char *rk_topology_data(const rk_topology *t)
{
    return t->data;
}

void rki_topology_set_data(rk_topology *t, const char *data)
{
    t->data = data;
}

uint64_t rk_topology_points(const rk_topology *t)
{
    return t->points;
}

const uint32_t *rki_topology_order(const rk_topology *t)
{
    return t->order;
}

rk_scheme rk_topology_scheme(const rk_topology *t)
{
    return t->scheme->id;
}

void rki_tie_order_by_id(const rk_topology *t, uint32_t *order)
{
    memcpy(order, t->order, t->n * sizeof *order);
}

const void *rki_topology_params(const rk_topology *t)
{
    return t->params;
}

const rki_scheme *rki_topology_scheme(const rk_topology *t)
{
    return t->scheme;
}

json_t *rki_weight_json(double weight)
{
    return weight == floor(weight) ? json_integer((json_int_t)weight) : json_real(weight);
}

/* {"scheme" (unless the default one), "hash", the scheme's parameters}, or NULL out of memory. */
json_t *rk_topology_scheme_json(const rk_topology *t)
{
    json_t *doc = t->scheme == &rki_scheme_ringkeeper
                      ? json_object()
                      : json_pack("{s:s}", "scheme", t->scheme->name);
    if (doc && (json_object_set_new(doc, "hash", json_string(rk_hash_name(t->hash))) ||
                (t->scheme->write && t->scheme->write(t->params, doc)))) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *rk_topology_to_json(const rk_topology *t)
{
    json_t *nodes = json_array();
    for (size_t i = 0; nodes && i < t->n; i++) {
        json_t *n = json_pack("{s:s, s:s, s:o}", "id", t->nodes[i].id, "addr", t->nodes[i].addr,
                              "weight", rki_weight_json(t->nodes[i].weight));
        if (json_array_append_new(nodes, n)) {
            json_decref(nodes);
            return NULL;
        }
    }
    json_t *doc = rk_topology_scheme_json(t);
    if (doc && t->data && json_object_set_new(doc, "data", json_string(t->data)))
        json_decref(doc), doc = NULL;
    if (doc && json_object_set_new(doc, "nodes", nodes))
        json_decref(doc), doc = NULL;
    else if (!doc)
        json_decref(nodes);
    if (doc && t->comment && json_object_set_new(doc, "comment", json_string(t->comment))) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

char *rk_topology_to_text(const rk_topology *t)
{
    json_t *doc = rk_topology_to_json(t);
    char *text = doc ? rk_json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return text;
}

int rk_cluster_name_valid(const char *name)
{
    size_t n = 0;
    for (; name && name[n]; n++) {
        char c = name[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 (n > 0 && (c == '.' || c == '_' || c == '-'));
        if (!ok || n >= 63)
            return 0;
    }
    return n > 0;
}

int rk_client_id_valid(const char *id)
{
    size_t n = 0;
    for (; id && id[n]; n++) {
        if ((unsigned char)id[n] <= 0x20 || (unsigned char)id[n] > 0x7e || n >= RK_CLIENT_ID_MAX)
            return 0;
    }
    return n > 0;
}

int rk_topology_comparable(const rk_topology *a, const rk_topology *b, rk_error *err)
{
    if (a->scheme != b->scheme)
        return rk_error_set(err, RK_EHASHMISMATCH, "scheme",
                            "the versions use the %s and the %s scheme: every key would move",
                            a->scheme->name, b->scheme->name);
    if (a->hash != b->hash)
        return rk_error_set(err, RK_EHASHMISMATCH, "hash",
                            "the versions hash with %s and %s: every key would be rehashed",
                            rk_hash_name(a->hash), rk_hash_name(b->hash));
    return a->scheme->differ ? a->scheme->differ(a->params, b->params, err) : RK_OK;
}
