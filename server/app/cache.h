/* cache.h — a bounded, thread-safe LRU map from (cluster, key) to a value it owns (cache.c): the
 * app's caches of serialized documents (docs.h), built rings (rings.h) and plans refused as too
 * large (api_plan.c) are three of them. The cache owns its values; an entry handed out is held by
 * the caller until it releases it.
 */
#ifndef RKD_CACHE_H
#define RKD_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RKD_CLUSTER_MAX 64 /* a cluster name (1 to 63 bytes) and its NUL */

/* Entries handed out are held (reference counted): eviction never frees a value a thread still
 * reads.
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
    atomic_uint refs;              /* private: holders, the table's own hold included */
    rkd_cache *cache;              /* private: where it belongs, for rkd_entry_release */
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
/* The same for an entry (`void *` so that it can be a response's body_release). */
void rkd_entry_release(void *entry);

/* Forgets every entry of `cluster` whose key is at least `min_key`, and moves the generation on so
 * that values loaded before this call are not kept in their place. */
void rkd_cache_forget(rkd_cache *c, const char *cluster, int64_t min_key);

/* Declares that (cluster, key) is now at least `tag`: forgets an older value there, and moves the
 * generation on so that values loaded before this call are not kept in its place. */
void rkd_cache_raise(rkd_cache *c, const char *cluster, int64_t key, int64_t tag);

#endif
