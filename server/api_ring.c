/* api_ring.c — GET /ring with its long poll, answered from a cache of each cluster's serialized
 * active version document that every activation refreshes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

#define WAIT_MAX_SECONDS 60

/* Serializes the document of `v` and caches it under (cluster, key) unless the cache moved past
 * `gen`; held entry, or NULL with *rc set. */
static rkd_entry *cache_doc(rkd_app *app, const rkd_store_version *v, int64_t key, uint64_t gen,
                            int *rc)
{
    char *body = NULL;
    size_t len = 0;
    *rc = rkd_json_dump(rkd_version_json(v, 1), &body, &len);
    rkd_active_doc *doc = *rc == RK_OK ? malloc(sizeof *doc + len + 1) : NULL;
    if (!doc) {
        free(body);
        *rc = RK_ENOMEM;
        return NULL;
    }
    doc->version = v->version;
    doc->len = len;
    memcpy(doc->body, body, len + 1);
    free(body);
    rkd_entry *e =
        rkd_cache_put(app->docs, v->cluster, key, v->version, doc, sizeof *doc + len, gen);
    *rc = e ? RK_OK : RK_ENOMEM;
    return e;
}

/* Loads the active version of `cluster` from the store, serializes it and caches it; held entry
 * or NULL with rc and err set. */
static rkd_entry *load_active(rkd_app *app, const char *cluster, int *rc, rk_error *err)
{
    rkd_store_version *v = NULL;
    uint64_t gen = rkd_cache_gen(app->docs);
    *rc = rkd_store_get_active(app->store, cluster, &v, err);
    if (*rc != RK_OK)
        return NULL;
    rkd_entry *e = cache_doc(app, v, 0, gen, rc);
    rkd_store_version_free(v);
    return e;
}

/* The cached entry of (cluster, key), counted as a hit, or NULL. */
static rkd_entry *cached(rkd_app *app, const char *cluster, int64_t key)
{
    rkd_entry *e = rkd_cache_get(app->docs, cluster, key);
    if (e)
        rkd_count(app, RKD_COUNT_DOC_CACHE_HITS);
    return e;
}

/* The active document of `cluster`, held: from the cache, else from the store. */
rkd_entry *rkd_active_entry(rkd_app *app, const char *cluster, int *rc, rk_error *err)
{
    rkd_entry *e = cached(app, cluster, 0);
    *rc = RK_OK;
    return e ? e : load_active(app, cluster, rc, err);
}

/* Keyed by the version (the active document has key 0). A version's document changes only with its
 * state, at an activation of its cluster, which forgets them all (rkd_on_activation). */
rkd_entry *rkd_version_entry(rkd_app *app, const char *cluster, int64_t version, int *rc,
                             rk_error *err)
{
    rkd_entry *e = cached(app, cluster, version);
    if (e) {
        *rc = RK_OK;
        return e;
    }
    rkd_store_version *v = NULL;
    uint64_t gen = rkd_cache_gen(app->docs);
    *rc = rkd_store_get(app->store, cluster, version, &v, err);
    if (*rc != RK_OK)
        return NULL;
    e = cache_doc(app, v, version, gen, rc);
    rkd_store_version_free(v);
    return e;
}

void rkd_answer_doc(rkd_response *resp, rkd_entry *e)
{
    const rkd_active_doc *doc = e->value;
    rkd_set_shared_body(resp, 200, RKD_CT_JSON, doc->body, doc->len, rkd_entry_release, e);
}

/* The store's watch callback: runs after every activation this store handle commits. Forgets
 * the older document (and any load of it still in flight) and the cluster's version documents
 * (their states changed), then loads the new one before the hook
 * wakes long polls, so that they find it cached instead of all reading the database at once. */
void rkd_on_activation(void *arg, const char *cluster, int64_t version, uint64_t seq)
{
    rkd_app *app = arg;
    int rc = RK_OK;
    (void)seq;
    rkd_count(app, RKD_COUNT_ACTIVATIONS);
    if (app->metrics)
        rkd_metrics_active_version(app->metrics, cluster, version);
    rkd_cache_raise(app->docs, cluster, 0, version);
    rkd_cache_forget(app->docs, cluster, 1);
    rkd_cache_release(app->docs, load_active(app, cluster, &rc, NULL));
    pthread_mutex_lock(&app->hook_mu);
    rkd_activation_fn hook = app->hook;
    void *hook_arg = app->hook_arg;
    pthread_mutex_unlock(&app->hook_mu);
    if (hook)
        hook(hook_arg, cluster, version);
}

/* What If-None-Match says of the active version `doc` of this store. */
typedef enum tag_match {
    TAG_OTHER = 0, /* absent, unparsable, or another version or store */
    TAG_BARE = 1,  /* "v<N>" of the active N without a store id: maybe another ring numbered N */
    TAG_SAME = 2,  /* "v<N>.<store id>": the client has this very ring */
} tag_match;

static tag_match if_none_match(rkd_call *c, const rkd_active_doc *doc)
{
    int64_t v = -1;
    char id[RKD_STORE_ID_LEN];
    const char *s = c->req->header(c->req, "If-None-Match");
    if (!s || rkd_parse_etag(s, &v, id) != 0 || v != doc->version)
        return TAG_OTHER;
    if (!id[0])
        return TAG_BARE;
    return strcmp(id, rkd_store_id(c->app->store)) == 0 ? TAG_SAME : TAG_OTHER;
}

void rkd_h_ring(rkd_call *c)
{
    int64_t wait = 0;
    rk_error err = {0};
    int rc = RK_OK;
    if (rkd_query_int(c, "wait", 0, WAIT_MAX_SECONDS, &wait) < 0)
        return;
    rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, &err);
    if (!e) {
        rkd_fail(c, rc, &err);
        return;
    }
    const rkd_active_doc *doc = e->value;
    tag_match match = if_none_match(c, doc);
    rkd_client_seen(c, doc->version); /* sent it, or has it (304, or held with it) */
    rkd_format_etag(c->resp->etag, doc->version, rkd_store_id(c->app->store));
    /* A bare tag never gets a 304 (its N may name a ring lost in a restore), but still waits:
     * older clients long-poll with it, and answering at once would make them spin. */
    if (match != TAG_OTHER && wait > 0 && !c->req->resumed) {
        c->resp->wait_seconds = (unsigned)wait;
        snprintf(c->resp->wait_cluster, sizeof c->resp->wait_cluster, "%s", c->cluster);
    } else if (match == TAG_SAME) {
        c->resp->status = 304;
    } else {
        rkd_answer_doc(c->resp, e); /* shared, not copied: it holds the entry until sent */
        return;
    }
    rkd_cache_release(c->app->docs, e);
}
