/* docs.h — the cache of serialized documents (docs.c): each cluster's active (ring) document and
 * its version documents, loaded from the store when missing and refreshed after every activation or
 * finished window, as the store's watch reports them. Entries handed out are held by the caller,
 * who releases them on app->docs (rkd_cache_release), or hands the hold to a response.
 */
#ifndef RKD_DOCS_H
#define RKD_DOCS_H

#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "migration_job.h"

/* A serialized version document (the active one of a cluster, or a version's), as cached. */
typedef struct rkd_active_doc {
    int64_t version;  /* which version it is */
    int64_t previous; /* a ring document's open migration window: the version kept; else 0 */
    char fingerprint[RKD_STORE_FP_LEN]; /* the version's */
    size_t len;                         /* bytes in body */
    char body[];                        /* the JSON, NUL-terminated */
} rkd_active_doc;

/* The active document of `cluster`, held (rkd_cache_release on app->docs): from the cache, else
 * from the store; NULL with *rc and err set. */
rkd_entry *rkd_active_entry(rkd_app *app, const char *cluster, int *rc, rk_error *err);

/* The active version as the cache has it, or 0 when it is not cached: never read from the store,
 * so only a hint (rkd_store_approval_req.active_hint). */
int64_t rkd_cached_active(rkd_app *app, const char *cluster);

/* The document of `version` of `cluster`, held, likewise (same cache, keyed by the version). */
rkd_entry *rkd_version_entry(rkd_app *app, const char *cluster, int64_t version, int *rc,
                             rk_error *err);

/* The store's watch callback (`arg` is the app): refreshes the cache and the metrics after an
 * activation (or the cache after another replica's finish, rkd_on_window_closed), then calls the
 * activation hook. */
void rkd_on_store_change(void *arg, const char *cluster, int64_t version, rkd_store_change what,
                         uint64_t seq, const rkd_store_version *v);

/* After the migration window over active `version` of `cluster` closed: refreshes the cached ring
 * document, then calls the activation hook (long polls wake: the ETag changed). The new ring
 * document, held, or NULL with *rc set. */
rkd_entry *rkd_on_window_closed(rkd_app *app, const char *cluster, int64_t version, int *rc,
                                rk_error *err);

/* The versions a migration job must still be for (migration_job.h): the call's cluster's active
 * one and its window's previous (zeros when none), as the document cache has them. */
int rkd_job_versions_now(rkd_call *c, rkd_job_versions *out, rk_error *err);

#endif
