/* store_domain_copy.c — copying a whole store (ringkeeperd migrate-store, restores): the
 * store-neutral checks of a history before a backend writes it as it was, numbers, states and
 * timestamps included, and the reads a copy needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store_domain_internal.h"

int rkd_store_refuse_import(const char *what, rk_error *err)
{
    return rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                        "the destination store already holds %s; migrate-store copies only into "
                        "an empty store and never merges histories",
                        what);
}

void rkd_store_approval_list_free(rkd_store_approval_list *list)
{
    for (size_t i = 0; list && i < list->count; i++) {
        free(list->items[i].approver);
        free(list->items[i].comment);
    }
    if (list) {
        free(list->items);
        memset(list, 0, sizeof *list);
    }
}

int rkd_store_list_approvals(rkd_store *s, const char *cluster, rkd_store_approval_list *out,
                             rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    memset(out, 0, sizeof *out);
    int rc = rkd_store_check_cluster(cluster, err);
    rc = rc ? rc : s->ops->list_approvals(s->b, cluster, out, err);
    if (rc != RK_OK)
        rkd_store_approval_list_free(out);
    return rc;
}

int rkd_store_adopt_id(rkd_store *s, const char *id, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    if (!id || strlen(id) != RKD_STORE_ID_LEN - 1 ||
        strspn(id, "0123456789abcdef") != RKD_STORE_ID_LEN - 1)
        return rk_error_set(err, RK_EINVAL, NULL, "a store id is 16 lowercase hex digits");
    int rc = s->ops->adopt_id(s->b, id, err);
    if (rc == RK_OK)
        memcpy(s->id, id, sizeof s->id);
    return rc;
}

/* The history is what a store could have written: numbered 1..n without gaps. */
static int check_history(const rkd_store_history *h, rk_error *err)
{
    int rc = rkd_store_check_cluster(h->cluster, err);
    if (rc == RK_OK && h->versions_count == 0)
        rc = rk_error_set(err, RK_EINVAL, NULL, "cluster %s has no versions to copy", h->cluster);
    for (size_t i = 0; rc == RK_OK && i < h->versions_count; i++)
        if (h->versions[i]->version != (int64_t)i + 1 || !h->versions[i]->topology)
            rc =
                rk_error_set(err, RK_EINVAL, NULL,
                             "cluster %s: version %zu is missing from the copy", h->cluster, i + 1);
    for (size_t i = 0; rc == RK_OK && i < h->events_count; i++)
        if (h->events[i].event != (int64_t)i + 1)
            rc = rk_error_set(err, RK_EINVAL, NULL,
                              "cluster %s: event %zu is missing from the copy", h->cluster, i + 1);
    return rc;
}

/* Each version's topology as the text a publish stores (compact JSON), into docs[i]. */
static int history_docs(const rkd_store_history *h, char **docs, rk_error *err)
{
    for (size_t i = 0; i < h->versions_count; i++) {
        json_t *json = rk_topology_to_json(h->versions[i]->topology);
        docs[i] = json ? json_dumps(json, JSON_COMPACT) : NULL;
        json_decref(json);
        if (!docs[i])
            return rk_error_set(err, RK_ENOMEM, NULL, "out of memory serialising a topology");
    }
    return RK_OK;
}

int rkd_store_import(rkd_store *s, const rkd_store_history *h, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    int rc = check_history(h, err);
    char **docs = rc ? NULL : calloc(h->versions_count, sizeof *docs);
    if (rc == RK_OK && !docs)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rc = rc ? rc : history_docs(h, docs, err);
    rc = rc ? rc : s->ops->import(s->b, h, docs, err);
    for (size_t i = 0; docs && i < h->versions_count; i++)
        free(docs[i]);
    free(docs);
    return rc;
}
