/* version_doc.c — the JSON documents of the HTTP API (SPEC section 4): version documents, the
 * version list and the cluster list, built from store records. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_internal.h"

static json_t *nodes_json(const rk_topology *t)
{
    json_t *a = json_array();
    size_t n = t ? rk_topology_node_count(t) : 0;
    for (size_t i = 0; a && i < n; i++) {
        const rk_node *node = rk_topology_node(t, i);
        json_t *o = json_pack("{s:s, s:s, s:I}", "id", node->id, "addr", node->addr, "weight",
                              (json_int_t)node->weight);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* NULL for "" so that json_pack's "s?" writes null. */
static const char *or_null(const char *s)
{
    return s && s[0] ? s : NULL;
}

json_t *rkd_version_json(const rkd_store_version *v, int with_nodes)
{
    json_t *nodes = NULL;
    if (with_nodes) {
        nodes = nodes_json(v->topology);
        if (!nodes)
            return NULL;
    }
    /* "o*" leaves "nodes" out when NULL; json_pack steals `nodes` even when it fails. */
    return json_pack("{s:s, s:I, s:s, s:s, s:s?, s:s?, s:s?, s:s, s:I, s:o*, s:I, s:s, s:s}",
                     "cluster", v->cluster, "version", (json_int_t)v->version, "state",
                     rkd_store_state_name(v->state), "created_at", v->created_at, "activated_at",
                     or_null(v->activated_at), "author", v->author, "comment", v->comment, "hash",
                     rk_hash_name(v->hash), "vnode_factor", (json_int_t)v->vnode_factor, "nodes",
                     nodes, "points", (json_int_t)v->points, "fingerprint", v->fingerprint,
                     "store_id", v->store_id);
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
    return a ? json_pack("{s:o}", "clusters", a) : NULL;
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
    char *s = doc ? json_dumps(doc, RKD_JSON_FLAGS) : NULL;
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
