/* docs.c — the cache of serialized documents (docs.h): each cluster's active (ring) document and
 * its version documents, loaded from the store when missing, refreshed after every activation or
 * finished window (the store's watch), and sent shared by every connection. */
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "docs.h"
#include "version_doc.h"

/* The cache tag of a ring document: the window of version v closes after it opens, and the next
 * version comes after both, so documents of one cluster only move forward in this order. */
static int64_t ring_tag(int64_t version, int64_t previous)
{
    return 2 * version + (previous ? 0 : 1);
}

/* Serializes the document of `v` (the ring document for key 0, else the version document) and
 * caches it under (cluster, key) unless the cache moved past `gen`; held entry, or NULL with *rc
 * set. */
static rkd_entry *cache_doc(rkd_app *app, const rkd_store_version *v, int64_t key, uint64_t gen,
                            int *rc)
{
    char *body = NULL;
    size_t len = 0;
    *rc = rkd_json_dump(key ? rkd_version_json(v, 1) : rkd_ring_json(v), &body, &len);
    rkd_active_doc *doc = *rc == RK_OK ? malloc(sizeof *doc + len + 1) : NULL;
    if (!doc) {
        free(body);
        *rc = RK_ENOMEM;
        return NULL;
    }
    doc->version = v->version;
    doc->previous = key ? 0 : v->previous;
    memcpy(doc->fingerprint, v->fingerprint, sizeof doc->fingerprint);
    doc->len = len;
    memcpy(doc->body, body, len + 1);
    free(body);
    int64_t tag = key ? v->version : ring_tag(v->version, doc->previous);
    rkd_entry *e = rkd_cache_put(app->docs, v->cluster, key, tag, doc, sizeof *doc + len, gen);
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

int64_t rkd_cached_active(rkd_app *app, const char *cluster)
{
    rkd_entry *e = rkd_cache_get(app->docs, cluster, 0);
    int64_t v = e ? ((const rkd_active_doc *)e->value)->version : 0;
    rkd_cache_release(app->docs, e);
    return v;
}

/* Keyed by the version (the active document has key 0). A version's document changes only with its
 * state, at an activation of its cluster, which forgets them all (rkd_on_store_change). */
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

/* Forgets the ring document of `cluster` older than `tag` (and any load of it still in flight),
 * loads the new one before the hook wakes long polls, so that they find it cached instead of all
 * reading the database at once, then calls the hook. The new document, held, or NULL. */
static rkd_entry *ring_changed(rkd_app *app, const char *cluster, int64_t version, int64_t tag,
                               const rkd_store_version *v, int *rc, rk_error *err)
{
    rkd_cache_raise(app->docs, cluster, 0, tag);
    rkd_entry *e =
        v ? cache_doc(app, v, 0, rkd_cache_gen(app->docs), rc) : load_active(app, cluster, rc, err);
    rkd_app_wake(app, cluster, version);
    return e;
}

/* The store's watch callback: runs after every activation this store handle commits, and every
 * activation or finished migration window another replica commits. At an activation the cluster's
 * version documents are forgotten too (their states changed). */
void rkd_on_store_change(void *arg, const char *cluster, int64_t version, rkd_store_change what,
                         uint64_t seq, const rkd_store_version *v)
{
    rkd_app *app = arg;
    int rc = RK_OK;
    (void)seq;
    if (what == RKD_CHANGE_WINDOW_CLOSED) {
        rkd_cache_release(app->docs, rkd_on_window_closed(app, cluster, version, &rc, NULL));
        return;
    }
    rkd_count(app, RKD_COUNT_ACTIVATIONS);
    if (app->metrics)
        rkd_metrics_active_version(app->metrics, cluster, version);
    rkd_cache_forget(app->docs, cluster, 1);
    rkd_cache_release(app->docs,
                      ring_changed(app, cluster, version, ring_tag(version, 1), v, &rc, NULL));
}

/* Version documents do not show the window (it is the cluster's state, not the version's): only
 * the ring document changes. */
rkd_entry *rkd_on_window_closed(rkd_app *app, const char *cluster, int64_t version, int *rc,
                                rk_error *err)
{
    return ring_changed(app, cluster, version, ring_tag(version, 0), NULL, rc, err);
}

int rkd_job_versions_now(rkd_call *c, rkd_job_versions *out, rk_error *err)
{
    int rc = RK_OK;
    rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, err);
    const rkd_active_doc *d = e ? e->value : NULL;
    *out = (rkd_job_versions){.active = d ? d->version : 0, .previous = d ? d->previous : 0};
    rkd_cache_release(c->app->docs, e);
    return rc == RKD_STORE_ENOACTIVE ? RK_OK : rc;
}
