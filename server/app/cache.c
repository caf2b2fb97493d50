/* cache.c — the small LRU caches of the app (cache.h): serialized active version documents per
 * cluster (GET /ring answers without SQL or JSON work), built rings per version and plans refused
 * as too large (GET /plan). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

struct rkd_cache {
    pthread_mutex_t lock;        /* guards everything below and every entry's used (its refs are
                                    atomic: a holder lets go without the lock) */
    rkd_entry **slots;           /* max_entries slots, NULL when free */
    size_t max_entries;          /* slot count */
    size_t max_bytes;            /* budget for the sizes of kept entries */
    size_t bytes;                /* sizes of kept entries */
    uint64_t clock;              /* LRU clock */
    uint64_t gen;                /* bumped by every eviction and rkd_cache_raise */
    void (*free_value)(void *v); /* frees an entry's value */
};

rkd_cache *rkd_cache_new(size_t max_entries, size_t max_bytes, void (*free_value)(void *))
{
    rkd_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->slots = calloc(max_entries, sizeof *c->slots);
    if (!c->slots || pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->slots);
        free(c);
        return NULL;
    }
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    c->free_value = free_value;
    return c;
}

static void entry_free(rkd_cache *c, rkd_entry *e)
{
    c->free_value(e->value);
    free(e);
}

void rkd_cache_free(rkd_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->max_entries; i++) {
        if (c->slots[i])
            entry_free(c, c->slots[i]);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c);
}

uint64_t rkd_cache_gen(rkd_cache *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t gen = c->gen;
    pthread_mutex_unlock(&c->lock);
    return gen;
}

/* Takes slot i's entry out of the table and drops the table's hold; frees it when that was the
 * last (values are freed under the lock: a free() is quick, and no holder can see it). An entry
 * out of the table is found by no get, so once its count is 0 nothing can raise it again. */
static void drop_slot_locked(rkd_cache *c, size_t i)
{
    rkd_entry *e = c->slots[i];
    c->slots[i] = NULL;
    c->bytes -= e->size;
    if (atomic_fetch_sub(&e->refs, 1) == 1)
        entry_free(c, e);
}

static size_t find_locked(rkd_cache *c, const char *cluster, int64_t key)
{
    for (size_t i = 0; i < c->max_entries; i++) {
        rkd_entry *e = c->slots[i];
        if (e && e->key == key && strcmp(e->cluster, cluster) == 0)
            return i;
    }
    return c->max_entries;
}

rkd_entry *rkd_cache_get(rkd_cache *c, const char *cluster, int64_t key)
{
    rkd_entry *e = NULL;
    pthread_mutex_lock(&c->lock);
    size_t i = find_locked(c, cluster, key);
    if (i < c->max_entries) {
        e = c->slots[i];
        atomic_fetch_add(&e->refs, 1);
        e->used = ++c->clock;
    }
    pthread_mutex_unlock(&c->lock);
    return e;
}

/* A free slot when there is one and `size` more bytes fit; otherwise evicts the least recently
 * used entry and returns max_entries (call again). Lock held; the table is not empty. */
static size_t room_locked(rkd_cache *c, size_t size)
{
    size_t free_slot = c->max_entries, lru = c->max_entries;
    for (size_t i = 0; i < c->max_entries; i++) {
        if (!c->slots[i])
            free_slot = i;
        else if (lru == c->max_entries || c->slots[i]->used < c->slots[lru]->used)
            lru = i;
    }
    if (free_slot < c->max_entries && c->bytes + size <= c->max_bytes)
        return free_slot;
    drop_slot_locked(c, lru);
    c->gen++;
    return c->max_entries;
}

/* Puts held entry `e` into the table in place of the entry of its key, evicting others as
 * needed. Lock held. */
static void keep_locked(rkd_cache *c, rkd_entry *e)
{
    size_t i = find_locked(c, e->cluster, e->key);
    if (i < c->max_entries)
        drop_slot_locked(c, i);
    /* Ends: each round evicts one entry, and an empty table has room (size <= max_bytes). */
    do {
        i = room_locked(c, e->size);
    } while (i == c->max_entries);
    c->slots[i] = e;
    c->bytes += e->size;
    atomic_fetch_add(&e->refs, 1);
    e->used = ++c->clock;
}

/* Non-zero when `e` may replace what the table holds for its key (cache.h, the rule of
 * rkd_cache_put). Lock held. */
static int may_keep_locked(rkd_cache *c, const rkd_entry *e, uint64_t gen)
{
    if (e->size > c->max_bytes || c->max_entries == 0)
        return 0;
    size_t i = find_locked(c, e->cluster, e->key);
    return i < c->max_entries ? c->slots[i]->tag <= e->tag : gen == c->gen;
}

/* A new entry holding `value`, with the caller's hold; NULL (value freed) when out of memory. */
static rkd_entry *entry_new(rkd_cache *c, const char *cluster, int64_t key, int64_t tag,
                            void *value, size_t size)
{
    rkd_entry *e = calloc(1, sizeof *e);
    if (!e) {
        c->free_value(value);
        return NULL;
    }
    snprintf(e->cluster, sizeof e->cluster, "%s", cluster);
    e->key = key;
    e->tag = tag;
    e->value = value;
    e->size = size;
    atomic_init(&e->refs, 1);
    e->cache = c;
    return e;
}

rkd_entry *rkd_cache_put(rkd_cache *c, const char *cluster, int64_t key, int64_t tag, void *value,
                         size_t size, uint64_t gen)
{
    rkd_entry *e = entry_new(c, cluster, key, tag, value, size);
    if (!e)
        return NULL;
    pthread_mutex_lock(&c->lock);
    /* A longer name would have been cut: never keep it under the wrong key. */
    if (strlen(cluster) < RKD_CLUSTER_MAX && may_keep_locked(c, e, gen))
        keep_locked(c, e);
    pthread_mutex_unlock(&c->lock);
    return e;
}

void rkd_cache_release(rkd_cache *c, rkd_entry *e)
{
    if (!e)
        return;
    if (atomic_fetch_sub(&e->refs, 1) == 1) /* the table's hold is gone: it is out of it */
        entry_free(c, e);
}

void rkd_entry_release(void *entry)
{
    rkd_entry *e = entry;
    rkd_cache_release(e->cache, e);
}

void rkd_cache_raise(rkd_cache *c, const char *cluster, int64_t key, int64_t tag)
{
    pthread_mutex_lock(&c->lock);
    size_t i = find_locked(c, cluster, key);
    if (i < c->max_entries && c->slots[i]->tag < tag)
        drop_slot_locked(c, i);
    c->gen++; /* loads that began before this may be older than `tag`: keep them out */
    pthread_mutex_unlock(&c->lock);
}

void rkd_cache_forget(rkd_cache *c, const char *cluster, int64_t min_key)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->max_entries; i++) {
        rkd_entry *e = c->slots[i];
        if (e && e->key >= min_key && strcmp(e->cluster, cluster) == 0)
            drop_slot_locked(c, i);
    }
    c->gen++;
    pthread_mutex_unlock(&c->lock);
}
