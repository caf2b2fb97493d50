/* version_doc.c — the JSON documents of the HTTP API (docs/API.md): version documents, the
 * version list and the cluster list, built from store records. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "version_doc.h"

/* The nodes as rk_topology_to_json writes them, so a weight reads the same everywhere. */
static json_t *nodes_json(const rk_topology *t)
{
    if (!t)
        return json_array();
    json_t *doc = rk_topology_to_json(t);
    json_t *a = json_incref(json_object_get(doc, "nodes"));
    json_decref(doc);
    return a;
}

/* NULL for "" so that json_pack's "s?" writes null. */
static const char *or_null(const char *s)
{
    return s && s[0] ? s : NULL;
}

/* What says how the ring is made, as the topology's scheme writes it (rk_topology_scheme_json).
 * Records in a version list carry no topology: theirs say the scheme and the hash, and the
 * ringkeeper scheme's vnode_factor, which the store keeps beside them. */
static int add_scheme_fields(json_t *doc, const rkd_store_version *v)
{
    if (v->topology) {
        json_t *fields = rk_topology_scheme_json(v->topology);
        int bad = !fields || json_object_update(doc, fields);
        json_decref(fields);
        return bad;
    }
    if (v->scheme == RK_SCHEME_RINGKEEPER)
        return json_object_set_new(doc, "hash", json_string(rk_hash_name(v->hash))) ||
               json_object_set_new(doc, "vnode_factor", json_integer(v->vnode_factor));
    return json_object_set_new(doc, "scheme", json_string(rk_scheme_name(v->scheme))) ||
           json_object_set_new(doc, "hash", json_string(rk_hash_name(v->hash)));
}

/* The topology's "data" when it says one (docs/RING.md). Records in a version list carry no
 * topology, so a list shows none: the store keeps it only in the topology's document. */
static int add_data_field(json_t *doc, const rkd_store_version *v)
{
    const char *data = v->topology ? rk_topology_data(v->topology) : NULL;
    return data && json_object_set_new(doc, "data", json_string(data));
}

json_t *rkd_version_json(const rkd_store_version *v, int with_nodes)
{
    json_t *doc =
        json_pack("{s:s, s:I, s:s, s:s, s:s?, s:s?, s:s?}", "cluster", v->cluster, "version",
                  (json_int_t)v->version, "state", rkd_store_state_name(v->state), "created_at",
                  v->created_at, "activated_at", or_null(v->activated_at), "author", v->author,
                  "comment", v->comment);
    int bad = !doc || add_scheme_fields(doc, v) || add_data_field(doc, v);
    if (!bad && with_nodes)
        bad = json_object_set_new(doc, "nodes", nodes_json(v->topology));
    bad = bad || json_object_set_new(doc, "points", json_integer((json_int_t)v->points)) ||
          json_object_set_new(doc, "fingerprint", json_string(v->fingerprint)) ||
          json_object_set_new(doc, "store_id", json_string(v->store_id));
    if (bad) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *rkd_ring_json(const rkd_store_version *v)
{
    json_t *doc = rkd_version_json(v, 1);
    json_t *prev = v->previous ? json_pack("{s:I, s:s}", "version", (json_int_t)v->previous,
                                           "fingerprint", v->previous_fingerprint)
                               : json_null();
    if (!doc || json_object_set_new(doc, "previous", prev) != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* A version number, or null for 0 ("none"). */
static json_t *version_or_null(int64_t v)
{
    return v > 0 ? json_integer(v) : json_null();
}

json_t *rkd_clusters_json(const rkd_store_cluster_list *list)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < list->count; i++) {
        const rkd_store_cluster *c = &list->items[i];
        json_t *o = json_pack("{s:s, s:o, s:I}", "cluster", c->name, "active_version",
                              version_or_null(c->active_version), "latest_version",
                              (json_int_t)c->latest_version);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    json_t *next = list->next_after ? json_string(list->next_after) : json_null();
    return a && next ? json_pack("{s:o, s:o}", "clusters", a, "next_after", next) : NULL;
}

json_t *rkd_versions_json(const rkd_store_version_list *list)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < list->count; i++) {
        json_t *o = rkd_version_json(&list->items[i], 0);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a ? json_pack("{s:o, s:o}", "versions", a, "next_before",
                         version_or_null(list->next_before))
             : NULL;
}

int rkd_json_dump(json_t *doc, char **body, size_t *len)
{
    char *s = doc ? rk_json_dumps(doc, RKD_JSON_FLAGS) : NULL;
    json_decref(doc);
    size_t n = s ? strlen(s) : 0;
    char *line = s ? realloc(s, n + 2) : NULL; /* ends with a newline, as curl users expect */
    if (!line) {
        free(s);
        return RK_ENOMEM;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    *body = line;
    *len = n + 1;
    return RK_OK;
}
