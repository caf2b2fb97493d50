/* api_ring.c — GET /ring with its long poll, answered from the cached active document
 * (api_docs.c), and the claim each request makes of what it holds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

#define WAIT_MAX_SECONDS 60

/* What a request's claim says of the active version `doc` of this store. A "+" after N must match
 * the open migration window (docs/API.md), so that its close is news. */
typedef enum tag_match {
    TAG_OTHER = 0, /* no claim, another version or store, or another window state */
    TAG_BARE = 1,  /* "v<N>" of the active N without a fingerprint: maybe another ring numbered N */
    TAG_SAME = 2,  /* "v<N>.<store id>.<fingerprint>": the client has this very ring */
    TAG_REFUSED = 3, /* RK-Refused names N, whatever the window: the ring is the same */
    TAG_FORGED = 4,  /* N of this store with another fingerprint: a ring this store never sent */
} tag_match;

static tag_match match_of(const rkd_claim *claim, const rkd_active_doc *doc)
{
    if (claim->refused == doc->version)
        return TAG_REFUSED;
    if (claim->held != doc->version)
        return TAG_OTHER;
    if (claim->fingerprint[0] && strcmp(claim->fingerprint, doc->fingerprint) != 0)
        return TAG_FORGED;
    if (claim->open != (doc->previous != 0))
        return TAG_OTHER;
    return claim->fingerprint[0] ? TAG_SAME : TAG_BARE;
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
    rkd_claim claim = rkd_claim_of(c);
    tag_match match = match_of(&claim, doc);
    if (match == TAG_FORGED)
        claim.held = 0; /* the client holds none of this store's rings: it is sent the real one */
    rkd_store_stale(c->app->store, c->resp->stale); /* served, but maybe not the newest */
    rkd_format_etag(c->resp->etag, doc->version, doc->previous != 0, rkd_store_id(c->app->store),
                    doc->fingerprint);
    /* A tag without the fingerprint never gets a 304 (its N may name a ring lost in a restore, or
     * one a hostile server sent under this store's id), but still waits: older clients long-poll
     * with it, and answering at once would make them spin. A client that refuses the active ring
     * is never sent it again: it waits for a newer one, and is answered 304 (the refused ring is
     * still the active one) when its wait is up. */
    int hold = (match == TAG_BARE || match == TAG_SAME || match == TAG_REFUSED) && wait > 0 &&
               !c->req->resumed;
    rkd_client_seen(c, &claim, hold ? 0 : doc->version); /* a held poll is offered nothing yet */
    if (hold) {
        c->resp->wait_seconds = (unsigned)wait;
        snprintf(c->resp->wait_cluster, sizeof c->resp->wait_cluster, "%s", c->cluster);
    } else if (match == TAG_SAME || match == TAG_REFUSED) {
        c->resp->status = 304;
    } else {
        rkd_answer_doc(c->resp, e); /* shared, not copied: it holds the entry until sent */
        return;
    }
    rkd_cache_release(c->app->docs, e);
}
