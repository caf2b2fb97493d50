/* client_snapshot.c — the snapshots of docs/CLIENT.md: reference-counted, immutable views of the
 * ring in service (and, while data moves, the ring before it) that readers route by, and how the
 * fetching thread swaps a new one in. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

/* A verified ring and what names it, shared by the snapshots that show it. */
typedef struct ring_box {
    atomic_long refs; /* one per snapshot holding it */
    rk_ring *ring;    /* owned */
    rki_ring_id id;   /* its version document's version and store id */
} ring_box;

/* What readers route by; immutable once published. */
struct rk_snapshot {
    atomic_long refs; /* the client's, plus one per rk_client_acquire */
    ring_box *cur;    /* reference held */
    ring_box *prev;   /* reference held, or NULL: the ring before cur, while data moves */
    int window;       /* cur came with the server's migration window open */
    uint64_t serial;  /* set when published: 1, 2, ... a client */
};

/* ---- snapshots ----
 * Reference counts speak as the header does for snapshots: acquire takes a reference, release drops
 * one and frees at the last. */

static void box_release(ring_box *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    rk_ring_free(b->ring);
    free(b);
}

static ring_box *box_acquire(ring_box *b)
{
    if (b)
        atomic_fetch_add(&b->refs, 1);
    return b;
}

void rk_snapshot_release(rk_snapshot *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    box_release(s->cur);
    box_release(s->prev);
    free(s);
}

rk_snapshot *rk_client_acquire(rk_client *c)
{
    pthread_mutex_lock(&c->mu);
    rk_snapshot *s = c->current;
    if (s)
        atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&c->mu);
    return s;
}

int64_t rk_snapshot_version(const rk_snapshot *s)
{
    return s->cur->id.version;
}

const rk_ring *rk_snapshot_ring(const rk_snapshot *s)
{
    return s->cur->ring;
}

const rk_ring *rk_snapshot_previous(const rk_snapshot *s)
{
    return s->prev ? s->prev->ring : NULL;
}

int rk_snapshot_in_window(const rk_snapshot *s)
{
    return s->window;
}

int64_t rk_snapshot_previous_version(const rk_snapshot *s)
{
    return s->prev ? s->prev->id.version : 0;
}

static const rk_node *owner_in(const rk_ring *r, const void *key, size_t len)
{
    return rk_topology_node(rk_ring_topology(r), rk_ring_lookup(r, key, len));
}

const rk_node *rk_snapshot_owner(const rk_snapshot *s, const void *key, size_t len,
                                 const rk_node **previous_owner)
{
    if (previous_owner)
        *previous_owner = s->prev ? owner_in(s->prev->ring, key, len) : NULL;
    return owner_in(s->cur->ring, key, len);
}

uint64_t rk_snapshot_serial(const rk_snapshot *s)
{
    return s->serial;
}

int64_t rk_client_lookup_index(rk_client *c, uint64_t serial, const void *key, size_t len)
{
    rk_snapshot *s = rk_client_acquire(c);
    int64_t i = s && s->serial == serial ? (int64_t)rk_ring_lookup(s->cur->ring, key, len) : -1;
    rk_snapshot_release(s);
    return i;
}

int rk_client_lookup_many(rk_client *c, uint64_t serial, const char *keys, const size_t *lens,
                          size_t n, uint32_t *out)
{
    rk_snapshot *s = rk_client_acquire(c);
    int rc = s && s->serial == serial ? 0 : -1;
    for (size_t i = 0, at = 0; rc == 0 && i < n; at += lens[i++])
        out[i] = rk_ring_lookup(s->cur->ring, keys + at, lens[i]);
    rk_snapshot_release(s);
    return rc;
}

/* Publishes `s` (its reference passes to the client) and releases the one it replaces. Call with
 * mu held; returns the old snapshot for the caller to release after unlocking. */
static rk_snapshot *swap_locked(rk_client *c, rk_snapshot *s)
{
    rk_snapshot *old = c->current;
    s->serial = ++c->serials;
    c->current = s;
    c->st.version = s->cur->id.version;
    return old;
}

static rk_snapshot *snapshot_alloc(void)
{
    rk_snapshot *s = calloc(1, sizeof *s);
    if (s)
        atomic_init(&s->refs, 1);
    return s;
}

/* A box holding `ring` (stolen, freed on failure), or NULL with e set. */
static ring_box *box_new(rk_ring *ring, const rki_ring_id *id, rk_error *e)
{
    ring_box *b = calloc(1, sizeof *b);
    if (!b) {
        rk_ring_free(ring);
        rk_error_set(e, RK_ENOMEM, NULL, "out of memory keeping version %" PRId64, id->version);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->ring = ring;
    b->id = *id;
    return b;
}

/* Non-zero when `b` is the previous ring that window `w` of ring `of` names. */
static int box_is_previous(const ring_box *b, const rki_ring_id *of, const rki_window *w)
{
    return b && b->id.version == w->previous && strcmp(b->id.store_id, of->store_id) == 0 &&
           strcmp(rk_ring_fingerprint_hex(b->ring), w->fingerprint) == 0;
}

/* Non-zero when `b` is newer than `cur` of the same store: a ring its store never issued, which
 * discard_floor discarded for `cur` (no other ring replaces a newer one of its store). */
static int is_discarded(const ring_box *b, const ring_box *cur)
{
    return strcmp(b->id.store_id, cur->id.store_id) == 0 && b->id.version > cur->id.version;
}

/* The previous ring (a reference, or NULL) of a snapshot of `cur` replacing `now` under window
 * `w`: while a window is open, the ring it names when the client has it; without one, the ring
 * `cur` replaces (section 5's dual reads until rk_client_drop_previous), or none when `cur` stays
 * (its window closed) or replaces a discarded ring. Call with mu held. */
static ring_box *previous_for(const rk_snapshot *now, const ring_box *cur, const rki_window *w)
{
    if (!now)
        return NULL;
    if (!w->previous)
        return now->cur == cur || is_discarded(now->cur, cur) ? NULL : box_acquire(now->cur);
    if (box_is_previous(now->cur, &cur->id, w))
        return box_acquire(now->cur);
    return box_is_previous(now->prev, &cur->id, w) ? box_acquire(now->prev) : NULL;
}

/* Serves `cur` (its reference passes to the new snapshot) under window `w`. */
static int serve(rk_client *c, ring_box *cur, const rki_window *w, rk_error *e)
{
    rk_snapshot *s = snapshot_alloc();
    if (!s) {
        box_release(cur);
        return rk_error_set(e, RK_ENOMEM, NULL, "out of memory serving a ring");
    }
    s->cur = cur;
    s->window = w->previous != 0;
    pthread_mutex_lock(&c->mu);
    s->prev = previous_for(c->current, cur, w);
    c->window = *w;
    c->prev_wanted = w->previous && !s->prev;
    rk_snapshot *old = swap_locked(c, s);
    pthread_mutex_unlock(&c->mu);
    rk_snapshot_release(old);
    return RK_OK;
}

/* Puts `ring` (stolen, freed on failure) in service under its document's window `w`. */
int rki_client_install(rk_client *c, rk_ring *ring, const rki_ring_id *id, const rki_window *w,
                       int from_cache, rk_error *e)
{
    ring_box *b = box_new(ring, id, e);
    int rc = b ? serve(c, b, w, e) : RK_ENOMEM;
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&c->mu);
    c->st.from_cache = from_cache;
    c->st.accepted++;
    pthread_mutex_unlock(&c->mu);
    return RK_OK;
}

/* The ring in service stays, under the window `w` its document names now: when the window closed,
 * the previous ring goes. */
int rki_client_rewindow(rk_client *c, const rki_window *w, rk_error *e)
{
    pthread_mutex_lock(&c->mu);
    int same =
        c->window.previous == w->previous && strcmp(c->window.fingerprint, w->fingerprint) == 0;
    ring_box *cur = same || !c->current ? NULL : box_acquire(c->current->cur);
    pthread_mutex_unlock(&c->mu);
    return cur ? serve(c, cur, w, e) : RK_OK;
}

int rki_client_wants_previous(rk_client *c, rki_window *w, rki_ring_id *cur)
{
    pthread_mutex_lock(&c->mu);
    int wanted = c->prev_wanted && c->current;
    *w = c->window;
    *cur = wanted ? c->current->cur->id : (rki_ring_id){0};
    pthread_mutex_unlock(&c->mu);
    return wanted;
}

int rki_client_serve_previous(rk_client *c, const rki_ring_id *cur, rk_ring *prev,
                              const rki_ring_id *id, rk_error *e)
{
    rk_snapshot *s = snapshot_alloc();
    ring_box *b = s ? box_new(prev, id, e) : NULL;
    if (!b) {
        if (!s)
            rk_ring_free(prev);
        free(s);
        return s ? RK_ENOMEM : rk_error_set(e, RK_ENOMEM, NULL, "out of memory serving a ring");
    }
    s->prev = b;
    rk_snapshot *old = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->prev_wanted && c->current && rki_same_ring(&c->current->cur->id, cur)) {
        s->cur = box_acquire(c->current->cur);
        s->window = c->current->window;
        old = swap_locked(c, s);
        s = NULL;
        c->prev_wanted = 0;
    }
    pthread_mutex_unlock(&c->mu);
    if (s) { /* the ring in service changed, or the application dropped the previous ring */
        box_release(b);
        free(s);
    }
    rk_snapshot_release(old);
    return RK_OK;
}

void rk_client_drop_previous(rk_client *c)
{
    rk_snapshot *s = snapshot_alloc();
    if (!s)
        return; /* the previous ring stays: harmless, retried by the next call */
    pthread_mutex_lock(&c->mu);
    rk_snapshot *old = NULL;
    c->prev_wanted = 0; /* the application says the data has moved: do not fetch it either */
    if (c->current && c->current->prev) {
        s->cur = box_acquire(c->current->cur);
        s->window = c->current->window;
        old = swap_locked(c, s);
        s = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(s);
    rk_snapshot_release(old);
}

/* What names the ring in service; version 0 when none. */
rki_ring_id rki_client_current_id(rk_client *c)
{
    rki_ring_id id = {0};
    pthread_mutex_lock(&c->mu);
    if (c->current)
        id = c->current->cur->id;
    pthread_mutex_unlock(&c->mu);
    return id;
}

int64_t rki_client_current_version(rk_client *c)
{
    return rki_client_current_id(c).version;
}
