/* api_internal.h — what api.c shares with version_doc.c and api_cache.c: JSON documents of the API
 * and the small caches behind GET /ring and GET /plan. Not installed, not used outside server/.
 */
#ifndef RKD_API_INTERNAL_H
#define RKD_API_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api.h"
#include "store.h"

/* One set of dump flags for every JSON body: compact, and reals with 17 significant digits so a
 * fraction parses back to the very double the server computed. */
#define RKD_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17))

/* ---- version_doc.c ---- */

/* The version document of SPEC section 4; with_nodes == 0 leaves "nodes" out (lists; `v` may then
 * have no topology). New reference, NULL when out of memory. */
json_t *rkd_version_json(const rkd_store_version *v, int with_nodes);

/* {"clusters": [{"cluster", "active_version" (null when none), "latest_version"}]}. */
json_t *rkd_clusters_json(const rkd_store_cluster_list *list);

/* {"versions": [... without nodes ...], "next_before": N or null}. */
json_t *rkd_versions_json(const rkd_store_version_list *list);

/* Serialises `doc` (stolen: decref'd here, NULL allowed) with RKD_JSON_FLAGS into a new string
 * ending in a newline; RK_OK with *body and *len set, RK_ENOMEM otherwise. */
int rkd_json_dump(json_t *doc, char **body, size_t *len);

/* ---- api_cache.c ---- */

/* A bounded, thread-safe LRU map from (cluster, key) to a value it owns. Entries handed out are
 * held (reference counted): eviction never frees a value a thread still reads.
 *
 * Values of one key only move forward: each carries a tag (a version), and a put with a lower tag
 * than the entry there is not kept. A put for a key with no entry is kept only when nothing was
 * evicted or raised since the caller read the generation (what went may have had a higher tag).
 * So a reader that loaded a value before an activation cannot cache it over a newer one. */
typedef struct rkd_cache rkd_cache;

typedef struct rkd_entry {
    char cluster[RKD_CLUSTER_MAX]; /* key, part 1 */
    int64_t key;                   /* key, part 2 (a version, or 0) */
    int64_t tag;                   /* order of the values of this key (a version, or 0) */
    void *value;                   /* owned by the entry; read-only while held; never NULL */
    size_t size;                   /* bytes counted against the cache's budget */
    unsigned refs;                 /* private: holders, the table's own hold included */
    uint64_t used;                 /* private: LRU clock of the last get or put */
} rkd_entry;

/* New cache of at most max_entries entries and max_bytes of values; free_value frees a value.
 * NULL when out of memory. */
rkd_cache *rkd_cache_new(size_t max_entries, size_t max_bytes, void (*free_value)(void *));
/* Frees the cache and every value; no entry may be held any more. NULL is fine. */
void rkd_cache_free(rkd_cache *c);

/* The generation (evictions and raises); read it before loading a value to put. */
uint64_t rkd_cache_gen(rkd_cache *c);

/* The entry for (cluster, key), held (release with rkd_cache_release), or NULL on a miss. */
rkd_entry *rkd_cache_get(rkd_cache *c, const char *cluster, int64_t key);

/* Stores `value` (stolen) under (cluster, key) with `tag` and returns it held. It is kept (and
 * replaces the entry there) unless the entry there has a higher tag, or there is none and an
 * entry was evicted or raised since `gen` was read, or it is over the byte budget: then it is
 * handed out held but not kept. NULL when out of memory (the value is freed then). */
rkd_entry *rkd_cache_put(rkd_cache *c, const char *cluster, int64_t key, int64_t tag, void *value,
                         size_t size, uint64_t gen);

/* Drops a hold; frees the value when it was the last one. NULL is fine. */
void rkd_cache_release(rkd_cache *c, rkd_entry *e);

/* Declares that (cluster, key) is now at least `tag`: forgets an older value there, and moves the
 * generation on so that values loaded before this call are not kept in its place. */
void rkd_cache_raise(rkd_cache *c, const char *cluster, int64_t key, int64_t tag);

#endif
