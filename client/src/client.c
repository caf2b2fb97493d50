/* client.c — the ring client of docs/CLIENT.md: fetch and verify the active ring, serve it from
 * reference-counted snapshots, fall back to the last-known-good file, refresh in the background. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

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
};

struct rk_client {
    rk_client_config cfg; /* its strings point to the copies below */
    char *copies[8];      /* owned copies of cfg's strings */
    char *url;            /* {server}/v1/clusters/{cluster}/ring; owned */
    char *url_buf;        /* url plus "?wait=S"; owned, fetching thread only */
    size_t url_size;      /* bytes allocated for url and for url_buf */
    rki_fetch *fetch;     /* owned; fetching thread only */
    rki_ring_id floor;    /* newest ring accepted, the file's included; fetching thread */
    rki_ring_id saved;    /* ring the last-known-good file holds; fetching thread */
    rki_ring_id issued;   /* a floor its store said it has issued: not asked again; fetching
                             thread */
    /* The ring refused last, said in every request (RK-Refused) until a ring is accepted, so the
     * server neither counts it as held nor sends it again; fetching thread. */
    rki_ring_id refused;              /* version 0: none */
    int refused_code;                 /* why, as the application was told: its code ... */
    char refused_why[RKI_REASON_MAX]; /* ... and message, printable ASCII */
    int64_t saved_prev;               /* ... and the previous version its window names (0: none) */
    atomic_int stop;                  /* set: the refresher and its transfer stop */
    pthread_mutex_t mu;               /* guards current and st (and the refresher's pause) */
    pthread_cond_t cv;                /* broadcast when stop is set */
    rk_snapshot *current;             /* in service, reference held; NULL before the first ring */
    rki_window window;   /* the migration window of the ring in service (docs/API.md); written
                            under mu by the fetching thread only */
    int prev_wanted;     /* that window's previous ring is not in service yet: fetch it */
    rk_client_status st; /* counters and the last outcome */
    pthread_t thread;    /* the refresher, when running */
    int running;         /* the refresher was started (start/stop are not concurrent) */
    unsigned wait_s;     /* the refresher's long poll */
    unsigned retry_ms;   /* the refresher's pause after an error */
    /* The last-known-good file as verified by rk_client_new, kept until the first fetch so that
     * the same bytes from the server, or a fallback to the file, do not build the ring again. */
    char *file_body;        /* owned; NULL when none */
    size_t file_len;        /* its length */
    rk_ring *file_ring;     /* owned; the ring verified from it */
    rki_window file_window; /* its migration window */
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

/* Publishes `s` (its reference passes to the client) and releases the one it replaces. Call with
 * mu held; returns the old snapshot for the caller to release after unlocking. */
static rk_snapshot *swap_locked(rk_client *c, rk_snapshot *s)
{
    rk_snapshot *old = c->current;
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
static int install(rk_client *c, rk_ring *ring, const rki_ring_id *id, const rki_window *w,
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
static int rewindow(rk_client *c, const rki_window *w, rk_error *e)
{
    pthread_mutex_lock(&c->mu);
    int same =
        c->window.previous == w->previous && strcmp(c->window.fingerprint, w->fingerprint) == 0;
    ring_box *cur = same || !c->current ? NULL : box_acquire(c->current->cur);
    pthread_mutex_unlock(&c->mu);
    return cur ? serve(c, cur, w, e) : RK_OK;
}

/* Serves `prev` (stolen) as the previous ring next to `cur` (its reference passes on), unless the
 * ring in service changed or the application dropped the previous ring meanwhile. */
static int serve_previous(rk_client *c, ring_box *cur, rk_ring *prev, const rki_ring_id *id,
                          rk_error *e)
{
    rk_snapshot *s = snapshot_alloc();
    if (!s) {
        rk_ring_free(prev);
        box_release(cur);
        return rk_error_set(e, RK_ENOMEM, NULL, "out of memory serving a ring");
    }
    ring_box *b = box_new(prev, id, e);
    if (!b) {
        free(s);
        box_release(cur);
        return RK_ENOMEM;
    }
    s->cur = cur;
    s->prev = b;
    rk_snapshot *old = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->prev_wanted && c->current && c->current->cur == cur) {
        old = swap_locked(c, s);
        s = NULL;
        c->prev_wanted = 0;
    }
    pthread_mutex_unlock(&c->mu);
    rk_snapshot_release(s);
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
        old = swap_locked(c, s);
        s = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(s);
    rk_snapshot_release(old);
}

/* What names the ring in service; version 0 when none. */
static rki_ring_id current_id(rk_client *c)
{
    rki_ring_id id = {0};
    pthread_mutex_lock(&c->mu);
    if (c->current)
        id = c->current->cur->id;
    pthread_mutex_unlock(&c->mu);
    return id;
}

static int64_t current_version(rk_client *c)
{
    return current_id(c).version;
}

/* ---- status ---- */

static int is_transport_error(int rc)
{
    return rc == RK_EUNREACHABLE || rc == RK_EHTTP || rc == RK_ETOOLARGE || rc == RK_ENOMEM;
}

/* Sets the last outcome shown by rk_client_status_get, without counting it. */
static void set_last(rk_client *c, int rc, const char *message)
{
    pthread_mutex_lock(&c->mu);
    c->st.last_error = rc;
    snprintf(c->st.last_message, sizeof c->st.last_message, "%s", message);
    pthread_mutex_unlock(&c->mu);
}

/* Records the outcome of a round: `rc` and the message in `e`; failures are counted. */
static void record(rk_client *c, int rc, const rk_error *e)
{
    pthread_mutex_lock(&c->mu);
    if (rc != RK_OK && is_transport_error(rc))
        c->st.errors++;
    else if (rc != RK_OK)
        c->st.refused++;
    pthread_mutex_unlock(&c->mu);
    set_last(c, rc != RK_OK ? rc : e->code, e->message); /* RK_OK may carry a warning */
}

void rk_client_status_get(rk_client *c, rk_client_status *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    pthread_mutex_unlock(&c->mu);
}

/* ---- fetching ---- */

/* The server's own error message, when the body is its error document. */
static void server_message(const rki_response *r, char *buf, size_t size)
{
    json_t *doc = json_loadb(r->body, r->len, 0, NULL);
    const char *msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    snprintf(buf, size, "%s", msg ? msg : "(not a ringkeeperd error: check the server URL)");
    json_decref(doc);
}

static int http_error(const char *url, const rki_response *r, rk_error *e)
{
    char msg[160];
    server_message(r, msg, sizeof msg);
    return rk_error_set(e, RK_EHTTP, NULL, "HTTP %ld from %.80s: %s", r->status, url, msg);
}

/* Writes an accepted body to the last-known-good file; a failure replaces the note in `e` with an
 * RK_ECACHE warning (the ring stays accepted). */
static void save(rk_client *c, const char *body, size_t len, const rki_ring_id *id,
                 const rki_window *w, rk_error *e)
{
    rk_error we = {0};
    unsigned was = 0;
    int same_store = strcmp(id->store_id, c->saved.store_id) == 0;
    if (!c->cfg.cache_file || (same_store && id->version < c->saved.version) ||
        (rki_same_ring(id, &c->saved) && w->previous == c->saved_prev))
        return;
    if (rki_cache_write(c->cfg.cache_file, body, len, &was, &we) == RK_OK) {
        c->saved = *id;
        c->saved_prev = w->previous; /* a closed window is saved too: a restart keeps none */
        char note[RK_ERROR_MESSAGE_MAX];
        snprintf(note, sizeof note, "%s", e->message);
        if (was) /* RK_OK still: the note says what was changed, and why */
            rk_error_set(e, RK_OK, NULL,
                         "%.100s; the last-known-good file %.60s was writable by group or others "
                         "(mode %04o), who could plant the ring this client starts from: its mode "
                         "is now %04o",
                         note, c->cfg.cache_file, was, was & 0755);
        return;
    }
    rk_error_set(e, RK_ECACHE, NULL, "version %" PRId64 " is in service but was not saved: %s",
                 id->version, we.message);
}

static void drop_file(rk_client *c)
{
    free(c->file_body);
    rk_ring_free(c->file_ring);
    c->file_body = NULL;
    c->file_ring = NULL;
}

/* The ring verified from the last-known-good file when `body` is the same bytes (the same
 * configuration verified them, and the file's version is the floor): taken, no second build. */
static rk_ring *take_file_ring(rk_client *c, const char *body, size_t len, rki_ring_id *id,
                               rki_window *w)
{
    if (!c->file_ring || len != c->file_len || memcmp(body, c->file_body, len) != 0)
        return NULL;
    rk_ring *ring = c->file_ring;
    c->file_ring = NULL;
    *id = c->saved;
    *w = c->file_window;
    drop_file(c);
    return ring;
}

/* A server ring older than the last-known-good file's: a restored server, or a file that must not
 * be trusted (damaged, or saved from a hostile server). The operator tells which; say how. */
static int older_than_file(rk_client *c, int64_t v, rk_error *e)
{
    return rk_error_set(e, RK_EOLDVERSION, "version",
                        "the server's ring v%" PRId64 " is older than v%" PRId64
                        " in the last-known-good file %.60s: after a restore, activate a newer "
                        "version; if the file is bad, start once with reset_cache",
                        v, c->saved.version, c->cfg.cache_file);
}

/* The note of an accepted ring: says so when it comes from another store than the ring before it
 * (a restored backup, or another server), whose version numbers do not compare with its own. */
static void accepted_note(rk_client *c, const rki_ring_id *id, const rki_ring_id *before,
                          rk_error *e)
{
    if (before->version == 0 || strcmp(before->store_id, id->store_id) == 0) {
        rk_error_set(e, RK_OK, NULL, "version %" PRId64 " from %.100s is in service", id->version,
                     c->url);
        return;
    }
    rk_error_set(e, RK_OK, NULL,
                 "version %" PRId64 " of store %.16s from %.80s is in service in place of version "
                 "%" PRId64 " of store %.16s: the server's database was restored from a backup or "
                 "replaced, and its versions are another history",
                 id->version, id->store_id[0] ? id->store_id : "(none)", c->url, before->version,
                 before->store_id[0] ? before->store_id : "(none)");
}

/* Remembers that ring `id` was refused with `e`, for the next requests to say so. */
static void note_refusal(rk_client *c, const rki_ring_id *id, int rc, const rk_error *e)
{
    if (id->version <= 0 || rc == RK_ENOMEM)
        return; /* the document named no ring, or the refusal was this process's own trouble */
    c->refused = *id;
    c->refused_code = rc;
    snprintf(c->refused_why, sizeof c->refused_why, "%.*s", RKI_REASON_MAX - 1, e->message);
    for (char *p = c->refused_why; *p; p++) /* a header line: no control or non-ASCII byte */
        *p = *p >= 0x20 && *p <= 0x7e ? *p : '?';
}

/* The server's 304 to a client refusing a newer ring than the one it holds: still the active one.
 */
static int still_refused(rk_client *c, rk_error *e)
{
    return rk_error_set(e, c->refused_code, NULL,
                        "version %" PRId64 " is still the active one and still refused (the "
                        "server was told): %s",
                        c->refused.version, c->refused_why);
}

/* Verifies a 200's body and puts it in service unless it is the ring in service. Versions compare
 * only within one store id: another store's ring is the server's authority (after a restore). */
static int accept_body(rk_client *c, const rki_response *r, int *changed, rk_error *e)
{
    rki_ring_id id = {0}, before = c->floor;
    rki_window w = {0};
    rk_ring *ring = take_file_ring(c, r->body, r->len, &id, &w);
    int rc =
        ring ? RK_OK : rki_verify_doc(&c->cfg, r->body, r->len, &c->floor, 0, &id, &w, &ring, e);
    if (rc == RK_EOLDVERSION && rki_same_ring(&c->saved, &c->floor))
        rc = older_than_file(c, id.version, e);
    if (rc != RK_OK) {
        note_refusal(c, &id, rc, e);
        return rc;
    }
    rki_ring_id current = current_id(c);
    if (rki_same_ring(&id, &current)) { /* versions are immutable within a store: the same ring */
        rk_ring_free(ring);
        rc = rewindow(c, &w, e); /* a window that closed (or opened) is news all the same */
    } else {
        rc = install(c, ring, &id, &w, 0, e);
        *changed = 1;
        c->floor = id;
    }
    if (rc != RK_OK) {
        *changed = 0;
        c->floor = before;
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    c->st.from_cache = 0;
    pthread_mutex_unlock(&c->mu);
    memset(&c->refused, 0, sizeof c->refused);
    accepted_note(c, &id, &before, e);
    save(c, r->body, r->len, &id, &w, e);
    return RK_OK;
}

/* A 304 to the first fetch, which named the last-known-good file's ring (verified at start): that
 * ring is the active one. */
static int accept_file(rk_client *c, int *changed, rk_error *e)
{
    rki_ring_id id;
    rki_window w;
    rk_ring *ring = take_file_ring(c, c->file_body, c->file_len, &id, &w);
    int rc = install(c, ring, &id, &w, 0, e);
    if (rc != RK_OK)
        return rc;
    *changed = 1;
    memset(&c->refused, 0, sizeof c->refused);
    return rk_error_set(e, RK_OK, NULL,
                        "version %" PRId64 " from the last-known-good file is the active one at "
                        "%.100s: in service",
                        id.version, c->url);
}

/* Whether the ring `have` names has a migration window open: the one in service, or before any,
 * the last-known-good file's. */
static int window_open(rk_client *c)
{
    return c->current ? c->window.previous != 0 : c->file_ring && c->file_window.previous != 0;
}

/* One GET of the ring (conditional on `have` when its version is not 0) and what follows from its
 * answer. The ETag names the store too, so a server restored from a backup never answers 304 for
 * a ring it numbered the same but no longer has, and says "+" while the ring in service has a
 * migration window open, so that the close of the window is news (docs/API.md). */
static int ring_round(rk_client *c, const rki_ring_id *have, unsigned wait, int *changed,
                      rk_error *e)
{
    rki_response r;
    char etag[64], refused[RKI_REASON_MAX + 64];
    *changed = 0;
    snprintf(etag, sizeof etag, "\"v%" PRId64 "%s%s%s\"", have->version, window_open(c) ? "+" : "",
             have->store_id[0] ? "." : "", have->store_id);
    snprintf(refused, sizeof refused, "\"v%" PRId64 "%s%s\" %s", c->refused.version,
             c->refused.store_id[0] ? "." : "", c->refused.store_id, c->refused_why);
    rki_claim claim = {have->version > 0 ? etag : NULL, c->refused.version > 0 ? refused : NULL};
    if (wait > 0)
        snprintf(c->url_buf, c->url_size, "%s?wait=%u", c->url, wait);
    else
        snprintf(c->url_buf, c->url_size, "%s", c->url);
    int rc = rki_fetch_get(c->fetch, c->url_buf, &claim, wait, &r, e);
    if (rc != RK_OK)
        return rc;
    if (r.status == 304 && c->refused.version > have->version)
        return still_refused(c, e);
    if (r.status == 304 && have->version > 0 && !c->current && c->file_ring)
        return accept_file(c, changed, e);
    if (r.status == 304 && have->version > 0) {
        pthread_mutex_lock(&c->mu);
        c->st.from_cache = 0; /* the server confirmed the version in service */
        pthread_mutex_unlock(&c->mu);
        return rk_error_set(e, RK_OK, NULL, "version %" PRId64 " is still the active one",
                            have->version);
    }
    if (r.status != 200)
        return http_error(c->url, &r, e);
    return accept_body(c, &r, changed, e);
}

/* {server}/v1/clusters/{cluster}/versions followed by `tail`, written into url_buf. */
static const char *versions_url(rk_client *c, const char *tail)
{
    snprintf(c->url_buf, c->url_size, "%.*s/versions%s", (int)(strlen(c->url) - strlen("/ring")),
             c->url, tail);
    return c->url_buf;
}

/* Fetches and verifies the previous ring that the window in service names when the client lacks
 * it (it started inside the window, from the file, or skipped versions), and serves it next to
 * the ring in service. RK_OK also when none is wanted. */
static int load_previous(rk_client *c, rk_error *e)
{
    rki_response r;
    rk_ring *prev = NULL;
    pthread_mutex_lock(&c->mu);
    rki_window w = c->window;
    ring_box *cur = c->prev_wanted && c->current ? box_acquire(c->current->cur) : NULL;
    pthread_mutex_unlock(&c->mu);
    if (!cur)
        return RK_OK;
    rki_ring_id id = {w.previous, ""};
    memcpy(id.store_id, cur->id.store_id, sizeof id.store_id);
    char tail[24];
    snprintf(tail, sizeof tail, "/%" PRId64, w.previous);
    int rc = rki_fetch_get(c->fetch, versions_url(c, tail), NULL, 0, &r, e);
    if (rc == RK_OK && r.status != 200)
        rc = http_error(c->url_buf, &r, e);
    if (rc == RK_OK)
        rc = rki_verify_previous(&c->cfg, r.body, r.len, &cur->id, &w, &prev, e);
    if (rc == RK_OK)
        return serve_previous(c, cur, prev, &id, e);
    box_release(cur);
    return rc;
}

static int previous_wanted(rk_client *c)
{
    pthread_mutex_lock(&c->mu);
    int wanted = c->prev_wanted;
    pthread_mutex_unlock(&c->mu);
    return wanted;
}

/* The newest version the cluster's store has issued, with the store's id: the first of GET
 * .../versions?limit=1, which the server reads from the store itself (on etcd a linearizable
 * read, refused without a majority), not from its cache of the ring, which a replica that has not
 * yet seen another replica's activation still serves. */
static int latest_issued(rk_client *c, rki_ring_id *latest, rk_error *e)
{
    rki_response r;
    int rc = rki_fetch_get(c->fetch, versions_url(c, "?limit=1"), NULL, 0, &r, e);
    if (rc == RK_OK && r.status != 200)
        rc = http_error(c->url_buf, &r, e);
    return rc == RK_OK ? rki_verify_latest(&c->cfg, r.body, r.len, latest, e) : rc;
}

/* Whether the floor's own store says it never issued the floor's version, with what it has
 * issued in *latest. Any doubt (no answer, another store) is no: the floor stays. A store's
 * history only grows, so a floor it has issued is not asked about again. */
static int never_issued(rk_client *c, rki_ring_id *latest)
{
    rk_error e = {0};
    if (rki_same_ring(&c->floor, &c->issued) || latest_issued(c, latest, &e) != RK_OK ||
        strcmp(latest->store_id, c->floor.store_id) != 0)
        return 0;
    if (latest->version < c->floor.version)
        return 1;
    c->issued = c->floor;
    return 0;
}

/* After a ring was refused as older than the floor: a floor its own store never issued was sent
 * by a hostile or broken server under a real store id (and saved to the last-known-good file,
 * where it would refuse every real ring for good). It goes: the floor, the file's ring and the
 * refusal; the note in `note` says what and why, and the status counts it. Only a version the
 * store says it never issued goes: one it did issue stays the floor however far behind a lagging
 * or restored server is, so a client is never rolled back below a ring it legitimately held. */
static int discard_floor(rk_client *c, rk_error *note)
{
    rki_ring_id latest;
    if (!never_issued(c, &latest))
        return 0;
    int in_file = c->cfg.cache_file && rki_same_ring(&c->floor, &c->saved);
    rk_error_set(note, RK_OK, NULL,
                 "discarded v%" PRId64
                 "%s%.60s, which store %.16s never issued (its latest is v%" PRId64
                 "): a hostile or broken server sent it",
                 c->floor.version, in_file ? " of the last-known-good file " : ", accepted earlier",
                 in_file ? c->cfg.cache_file : "", latest.store_id[0] ? latest.store_id : "(none)",
                 latest.version);
    memset(&c->floor, 0, sizeof c->floor);
    memset(&c->saved, 0, sizeof c->saved); /* the server's ring is saved over the file */
    memset(&c->refused, 0, sizeof c->refused);
    c->saved_prev = 0;
    c->cfg.reset_cache = 1; /* as the operator's way out: the file is not served from here on */
    drop_file(c);
    pthread_mutex_lock(&c->mu);
    c->st.discarded++;
    pthread_mutex_unlock(&c->mu);
    return 1;
}

/* A round of the ring that heals by itself: when the ring is refused as older than a floor its
 * store never issued (discard_floor), the ring is asked for again without the floor (the refused
 * body went with the transfer that asked the store), and the note says both. */
static int healing_round(rk_client *c, const rki_ring_id *have, unsigned wait, int *changed,
                         rk_error *e)
{
    static const rki_ring_id none = {0};
    rk_error note = {0};
    int rc = ring_round(c, have, wait, changed, e);
    if (rc != RK_EOLDVERSION || !discard_floor(c, &note))
        return rc;
    rc = ring_round(c, &none, 0, changed, e);
    char then[RK_ERROR_MESSAGE_MAX];
    snprintf(then, sizeof then, "%s", e->message);
    rk_error_set(e, e->code, NULL, "%s; %s", note.message, then);
    return rc;
}

/* A round of the ring, with the previous ring of a migration window fetched when it is missing:
 * before the ring (a retry of the last round's failure), and after it when it brought a window (a
 * failure before it no longer counts when the round closed the window).
 * A previous ring that cannot be had does not refuse the ring: the note in `e` says so, with its
 * code, and the next round tries again. */
static int fetch_round(rk_client *c, const rki_ring_id *have, unsigned wait, int *changed,
                       rk_error *e)
{
    rk_error pe = {0};
    int prc = load_previous(c, &pe);
    int rc = healing_round(c, have, wait, changed, e);
    if (rc == RK_OK && (prc == RK_OK || !previous_wanted(c)))
        prc = load_previous(c, &pe);
    if (rc == RK_OK && prc != RK_OK)
        rk_error_set(e, prc, NULL,
                     "version %" PRId64 " is in service without version %" PRId64
                     ", the previous ring of its migration window, so no previous owners are "
                     "answered until it loads (tried again at each refresh): %.100s",
                     current_version(c), c->window.previous, pe.message);
    return rc;
}

/* No ring in service and the server failed with `server`: start from the last-known-good file. */
static int load_cache(rk_client *c, const rk_error *server, rk_error *out)
{
    char *buf = NULL;
    size_t len = 0;
    int missing = 0;
    rki_ring_id id = {0};
    rki_window w = {0};
    rk_ring *ring = NULL;
    rk_error ce = {0};
    const char *path = c->cfg.cache_file;
    int rc = c->file_ring ? RK_OK
                          : rki_cache_read(path, rki_max_body(&c->cfg), &buf, &len, &missing, &ce);
    if (c->file_ring) {
        ring = take_file_ring(c, c->file_body, c->file_len, &id, &w);
    } else if (rc == RK_OK) {
        rc = rki_verify_doc(&c->cfg, buf, len, NULL, 0, &id, &w, &ring, &ce);
    }
    if (rc == RK_OK) /* inside a window, the previous ring comes from the server, when it answers */
        rc = install(c, ring, &id, &w, 1, &ce);
    free(buf);
    if (rc != RK_OK && missing)
        return rc;
    if (rc != RK_OK) {
        rk_error fe = {0};
        rk_error_set(&fe, RK_ECACHE, NULL,
                     "%.150s (the last-known-good file %.60s cannot be used: fix the server's "
                     "problem, or delete the file)",
                     ce.message, path);
        set_last(c, RK_ECACHE, fe.message);
        return rc;
    }
    c->floor = id; /* nothing was in service: the floor was this file's, or none */
    c->saved = id;
    c->saved_prev = w.previous;
    if (server->code == RK_EOLDVERSION) /* the message names the file and both versions */
        rk_error_set(out, RK_OK, NULL, "%s", server->message);
    else
        rk_error_set(out, RK_OK, NULL,
                     "running from the last-known-good file %.60s (version %" PRId64
                     ") because the server failed: %s",
                     path, id.version, server->message);
    set_last(c, server->code, out->message);
    return RK_OK;
}

static void copy_error(rk_error *err, const rk_error *e)
{
    if (err)
        *err = *e;
}

int rk_client_fetch(rk_client *c, rk_error *err)
{
    rk_error e = {0}, fe = {0};
    int changed;
    /* A ring from the last-known-good file is what this client holds: the server counts it so, and
     * answers 304 when it is still the active one (docs/API.md, "Clients"). */
    rki_ring_id have = {0};
    if (c->file_ring && !current_version(c))
        have = c->saved;
    int rc = fetch_round(c, &have, 0, &changed, &e);
    record(c, rc, &e);
    if (rc != RK_OK && rc != RK_EINVAL && c->cfg.cache_file && !c->cfg.reset_cache &&
        current_version(c) == 0 && load_cache(c, &e, &fe) == RK_OK) {
        copy_error(err, &fe);
        return RK_OK;
    }
    drop_file(c); /* only the first fetch could use it */
    copy_error(err, &e);
    return rc;
}

int rk_client_refresh(rk_client *c, unsigned wait_s, int *changed, rk_error *err)
{
    rk_error e = {0};
    int dummy;
    if (wait_s > RKI_MAX_WAIT_S)
        return rk_error_set(err, RK_EINVAL, NULL, "wait_s is %u, over the server's limit of %u",
                            wait_s, RKI_MAX_WAIT_S);
    rki_ring_id have = current_id(c);
    int rc = fetch_round(c, &have, wait_s, changed ? changed : &dummy, &e);
    if (rc == RK_OK || !atomic_load(&c->stop)) /* a transfer aborted by a stop is no failure */
        record(c, rc, &e);
    copy_error(err, &e);
    return rc;
}

/* ---- the refresher thread ---- */

/* Sleeps `ms` or until stopped. */
static void pause_ms(rk_client *c, unsigned ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    while (!atomic_load(&c->stop) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&c->cv, &c->mu, &until);
    pthread_mutex_unlock(&c->mu);
}

static void *refresher_main(void *arg)
{
    rk_client *c = arg;
    while (!atomic_load(&c->stop)) {
        int rc = rk_client_refresh(c, c->wait_s, NULL, NULL);
        if (rc != RK_OK || c->wait_s == 0) /* wait_s 0 polls: pause between rounds too */
            pause_ms(c, c->retry_ms);
    }
    return NULL;
}

int rk_client_start_refresher(rk_client *c, unsigned wait_s, unsigned retry_ms, rk_error *err)
{
    if (c->running)
        return rk_error_set(err, RK_EINVAL, NULL, "the refresher is already running");
    if (wait_s > RKI_MAX_WAIT_S)
        return rk_error_set(err, RK_EINVAL, NULL, "wait_s is %u, over the server's limit of %u",
                            wait_s, RKI_MAX_WAIT_S);
    c->wait_s = wait_s;
    c->retry_ms = retry_ms ? retry_ms : 1000;
    atomic_store(&c->stop, 0);
    int rc = pthread_create(&c->thread, NULL, refresher_main, c);
    if (rc != 0)
        return rk_error_set(err, RK_ENOMEM, NULL, "cannot start the refresher thread: %s",
                            strerror(rc));
    c->running = 1;
    return RK_OK;
}

void rk_client_stop_refresher(rk_client *c)
{
    if (!c->running)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, 1);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    rki_fetch_wakeup(c->fetch);
    pthread_join(c->thread, NULL);
    atomic_store(&c->stop, 0);
    c->running = 0;
}

/* ---- creating and freeing ---- */

static int check_config(const rk_client_config *cfg, rk_error *err)
{
    rk_hash_alg alg;
    if (!cfg || !cfg->server || !cfg->cluster)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "a configuration with server and cluster is "
                            "needed");
    if (strncmp(cfg->server, "http://", 7) != 0 && strncmp(cfg->server, "https://", 8) != 0)
        return rk_error_set(err, RK_EINVAL, "server",
                            "must start with http:// or https://, got \"%.80s\"", cfg->server);
    if (!rk_cluster_name_valid(cfg->cluster))
        return rk_error_set(err, RK_EINVAL, "cluster",
                            "\"%.64s\" is not a cluster name: 1..63 of a-z 0-9 . _ -, starting "
                            "with a letter or digit",
                            cfg->cluster);
    char names[RKI_HASH_NAMES_MAX];
    rk_scheme scheme = RK_SCHEME_RINGKEEPER;
    if (cfg->expect_scheme && rk_scheme_from_name(cfg->expect_scheme, &scheme) != RK_OK)
        return rk_error_set(err, RK_EINVAL, "expect_scheme",
                            "must be ringkeeper or ketama, got \"%.32s\"", cfg->expect_scheme);
    if (cfg->expect_hash && rk_hash_from_scheme_name(scheme, cfg->expect_hash, &alg) != RK_OK)
        return rk_error_set(err, RK_EINVAL, "expect_hash", "must be %s, got \"%.32s\"",
                            rki_hash_names(scheme, names, sizeof names, "", " or "),
                            cfg->expect_hash);
    if (cfg->connect_timeout_ms < 0 || cfg->timeout_ms < 0)
        return rk_error_set(err, RK_EINVAL, "timeout_ms", "timeouts must not be negative");
    if (cfg->client_id && cfg->client_id[0] && !rk_client_id_valid(cfg->client_id))
        return rk_error_set(err, RK_EINVAL, "client_id",
                            "must be 1..%d bytes of printable ASCII without spaces (0x21..0x7e), "
                            "\"\" for none, or NULL for <hostname>:<pid>",
                            RK_CLIENT_ID_MAX);
    return RK_OK;
}

/* "<hostname>:<pid>" into out, cut to RK_CLIENT_ID_MAX bytes, every byte outside the id's rule a
 * '-': an id that identifies this process for the server's table of clients. */
static void default_client_id(char out[RK_CLIENT_ID_MAX + 1])
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "unknown");
    char pid[24];
    int n = snprintf(pid, sizeof pid, ":%ld", (long)getpid());
    snprintf(out, RK_CLIENT_ID_MAX + 1, "%.*s%s", RK_CLIENT_ID_MAX - n, host, pid);
    for (char *p = out; *p; p++) {
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p > 0x7e)
            *p = '-';
    }
}

/* A copy of s (NULL stays NULL) kept in slot i; -1 when out of memory. */
static int keep(rk_client *c, int i, const char **s)
{
    if (!*s)
        return 0;
    c->copies[i] = strdup(*s);
    *s = c->copies[i];
    return c->copies[i] ? 0 : -1;
}

static int copy_config(rk_client *c, const rk_client_config *cfg)
{
    c->cfg = *cfg;
    if (keep(c, 0, &c->cfg.server) || keep(c, 1, &c->cfg.cluster) ||
        keep(c, 2, &c->cfg.expect_hash) || keep(c, 3, &c->cfg.token) ||
        keep(c, 4, &c->cfg.cache_file) || keep(c, 5, &c->cfg.ca_file) ||
        keep(c, 6, &c->cfg.expect_scheme))
        return -1;
    char id[RK_CLIENT_ID_MAX + 1];
    if (!cfg->client_id)
        default_client_id(id);
    c->cfg.client_id = cfg->client_id ? cfg->client_id : id;
    if (keep(c, 7, &c->cfg.client_id))
        return -1;
    size_t n = strlen(cfg->server);
    while (n > 0 && cfg->server[n - 1] == '/')
        n--;
    size_t size = n + strlen(cfg->cluster) + sizeof "/v1/clusters//versions/9223372036854775807";
    c->url_size = size;
    c->url = malloc(size);
    c->url_buf = malloc(size);
    if (!c->url || !c->url_buf)
        return -1;
    snprintf(c->url, size, "%.*s/v1/clusters/%s/ring", (int)n, cfg->server, cfg->cluster);
    return 0;
}

/* Learns the version of the last-known-good file, if any; a bad file is reported in st. With
 * reset_cache the operator distrusts the file: it is neither read nor served, only rewritten. */
static void read_floor(rk_client *c)
{
    char *buf = NULL;
    size_t len = 0;
    int missing = 0;
    rk_ring *ring = NULL;
    rk_error e = {0};
    if (!c->cfg.cache_file || c->cfg.reset_cache)
        return;
    int rc = rki_cache_read(c->cfg.cache_file, rki_max_body(&c->cfg), &buf, &len, &missing, &e);
    if (rc == RK_OK)
        rc = rki_verify_doc(&c->cfg, buf, len, NULL, 0, &c->floor, &c->file_window, &ring, &e);
    if (rc == RK_OK) { /* kept for the first fetch: see take_file_ring */
        c->saved = c->floor;
        c->saved_prev = c->file_window.previous;
        c->file_body = buf;
        c->file_len = len;
        c->file_ring = ring;
        return;
    }
    free(buf);
    rk_ring_free(ring);
    if (rc == RK_OK || missing)
        return;
    memset(&c->floor, 0, sizeof c->floor);
    c->st.last_error = RK_ECACHE;
    snprintf(c->st.last_message, sizeof c->st.last_message,
             "the last-known-good file is ignored (it will be replaced after the next accepted "
             "ring): %.160s",
             e.message);
}

rk_client *rk_client_new(const rk_client_config *cfg, rk_error *err)
{
    if (check_config(cfg, err) != RK_OK)
        return NULL;
    rk_client *c = calloc(1, sizeof *c);
    if (!c) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory creating a client");
        return NULL;
    }
    atomic_init(&c->stop, 0);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (copy_config(c, cfg) != 0) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory copying the configuration");
        goto fail;
    }
    c->fetch = rki_fetch_new(&c->cfg, &c->stop, err);
    if (!c->fetch)
        goto fail;
    read_floor(c);
    return c;
fail:
    rk_client_free(c);
    return NULL;
}

void rk_client_free(rk_client *c)
{
    if (!c)
        return;
    rk_client_stop_refresher(c);
    drop_file(c);
    rk_snapshot_release(c->current);
    rki_fetch_free(c->fetch);
    for (size_t i = 0; i < sizeof c->copies / sizeof c->copies[0]; i++)
        free(c->copies[i]);
    free(c->url);
    free(c->url_buf);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
