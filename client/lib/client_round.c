/* client_round.c — the client's fetch rounds (docs/CLIENT.md): one long poll or fetch of the ring
 * document, verified and accepted or refused; the previous ring of a migration window; healing a
 * floor its store never issued; the last-known-good file; rk_client_fetch and rk_client_refresh. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "client_internal.h"

/* ---- outcomes ---- */

static int is_transport_error(int rc)
{
    return rc == RK_EUNREACHABLE || rc == RK_EHTTP || rc == RK_ETOOLARGE || rc == RK_ENOMEM;
}

/* Sets the last outcome shown by rk_client_status_get, without counting it. */
void rki_client_set_last(rk_client *c, int rc, const char *message)
{
    pthread_mutex_lock(&c->mu);
    c->st.last_error = rc;
    snprintf(c->st.last_message, sizeof c->st.last_message, "%s", message);
    pthread_mutex_unlock(&c->mu);
}

/* Records the outcome of a round: `rc` and the message in `e`; failures are counted. */
void rki_client_record(rk_client *c, int rc, const rk_error *e)
{
    pthread_mutex_lock(&c->mu);
    if (rc != RK_OK && is_transport_error(rc))
        c->st.errors++;
    else if (rc != RK_OK)
        c->st.refused++;
    pthread_mutex_unlock(&c->mu);
    rki_client_set_last(c, rc != RK_OK ? rc : e->code, e->message); /* RK_OK may carry a warning */
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

void rki_client_drop_file(rk_client *c)
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
    rki_client_drop_file(c);
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
 * (a restored backup, or another server), whose version numbers do not compare with its own, or
 * replaces another ring of the same number and store (one a hostile server sent under its id). */
static void accepted_note(rk_client *c, const rki_ring_id *id, const rki_ring_id *before,
                          rk_error *e)
{
    int same_store = strcmp(before->store_id, id->store_id) == 0;
    if (same_store && before->version == id->version && !rki_same_ring(before, id)) {
        rk_error_set(e, RK_OK, NULL,
                     "version %" PRId64 " from %.80s is in service in place of another ring "
                     "numbered the same (fingerprint %.16s, the server's is %.16s): a hostile or "
                     "broken server sent it under this store's id",
                     id->version, c->url, before->fingerprint, id->fingerprint);
        pthread_mutex_lock(&c->mu);
        c->st.discarded++;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (before->version == 0 || same_store) {
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

/* The application's check of a new ring (rk_client_set_admit): RK_OK when it has none. A code
 * that is not a failure is taken as one, so that a refusal is never lost. */
static int admitted(rk_client *c, const rk_ring *ring, int64_t version, rk_error *e)
{
    if (!c->admit)
        return RK_OK;
    e->message[0] = '\0';
    int rc = c->admit(c->admit_arg, ring, version, e);
    if (rc == RK_OK)
        return RK_OK;
    if (!e->message[0])
        rk_error_set(e, rc, NULL, "the application refused version %" PRId64, version);
    return e->code = rc < 0 ? rc : RK_EEXPECT;
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
    rki_ring_id current = rki_client_current_id(c);
    if (!rki_same_ring(&id, &current) && (rc = admitted(c, ring, id.version, e)) != RK_OK) {
        rk_ring_free(ring);
        note_refusal(c, &id, rc, e);
        return rc;
    }
    if (rki_same_ring(&id, &current)) { /* versions are immutable within a store: the same ring */
        rk_ring_free(ring);
        rc = rki_client_rewindow(c, &w,
                                 e); /* a window that closed (or opened) is news all the same */
    } else {
        rc = rki_client_install(c, ring, &id, &w, 0, e);
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
    int rc = rki_client_install(c, ring, &id, &w, 0, e);
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
 * answer. The ETag names the store and the fingerprint too, so a server restored from a backup
 * never answers 304 for a ring it numbered the same but no longer has, nor the real server for a
 * ring a hostile one sent under its id; and says "+" while the ring in service has a migration
 * window open, so that the close of the window is news (docs/API.md). */
static int ring_round(rk_client *c, const rki_ring_id *have, unsigned wait, int *changed,
                      rk_error *e)
{
    rki_response r;
    char etag[80], refused[RKI_REASON_MAX + 64];
    *changed = 0;
    snprintf(etag, sizeof etag, "\"v%" PRId64 "%s%s%s%s%s\"", have->version,
             window_open(c) ? "+" : "", have->store_id[0] ? "." : "", have->store_id,
             have->store_id[0] && have->fingerprint[0] ? "." : "",
             have->store_id[0] ? have->fingerprint : "");
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
    rki_window w;
    rki_ring_id cur;
    if (!rki_client_wants_previous(c, &w, &cur))
        return RK_OK;
    rki_ring_id id = {w.previous, "", ""};
    memcpy(id.store_id, cur.store_id, sizeof id.store_id);
    memcpy(id.fingerprint, w.fingerprint, sizeof id.fingerprint); /* as verified against it */
    char tail[24];
    snprintf(tail, sizeof tail, "/%" PRId64, w.previous);
    int rc = rki_fetch_get(c->fetch, versions_url(c, tail), NULL, 0, &r, e);
    if (rc == RK_OK && r.status != 200)
        rc = http_error(c->url_buf, &r, e);
    if (rc == RK_OK)
        rc = rki_verify_previous(&c->cfg, r.body, r.len, &cur, &w, &prev, e);
    return rc ? rc : rki_client_serve_previous(c, &cur, prev, &id, e);
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
    rki_client_drop_file(c);
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
                     rki_client_current_version(c), c->window.previous, pe.message);
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
        rc = rki_client_install(c, ring, &id, &w, 1, &ce);
    free(buf);
    if (rc != RK_OK && missing)
        return rc;
    if (rc != RK_OK) {
        rk_error fe = {0};
        rk_error_set(&fe, RK_ECACHE, NULL,
                     "%.150s (the last-known-good file %.60s cannot be used: fix the server's "
                     "problem, or delete the file)",
                     ce.message, path);
        rki_client_set_last(c, RK_ECACHE, fe.message);
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
    rki_client_set_last(c, server->code, out->message);
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
    if (c->file_ring && !rki_client_current_version(c))
        have = c->saved;
    int rc = fetch_round(c, &have, 0, &changed, &e);
    rki_client_record(c, rc, &e);
    if (rc != RK_OK && rc != RK_EINVAL && c->cfg.cache_file && !c->cfg.reset_cache &&
        rki_client_current_version(c) == 0 && load_cache(c, &e, &fe) == RK_OK) {
        copy_error(err, &fe);
        return RK_OK;
    }
    rki_client_drop_file(c); /* only the first fetch could use it */
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
    rki_ring_id have = rki_client_current_id(c);
    int rc = fetch_round(c, &have, wait_s, changed ? changed : &dummy, &e);
    if (rc == RK_OK || !atomic_load(&c->stop)) /* a transfer aborted by a stop is no failure */
        rki_client_record(c, rc, &e);
    copy_error(err, &e);
    return rc;
}
