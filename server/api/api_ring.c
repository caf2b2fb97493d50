/* api_ring.c — GET /ring with its long poll, answered from the cached active document (docs.h),
 * and the claim each request makes of what it holds, reported to the fleet (fleet.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_ring.h"
#include "cache.h"
#include "docs.h"
#include "fleet.h"
#include "reply.h"
#include "request.h"

#define WAIT_MAX_SECONDS 60

/* What a ring request says of the ring its client holds and the one it refuses (docs/API.md,
 * "Clients"). Versions are of this server's store; a tag of another store counts as none. */
typedef struct rkd_claim {
    int64_t held; /* If-None-Match's version; a bare "v<N>" of an older client counts */
    int open;     /* ... and whether that tag says a migration window is open */
    char fingerprint[RKD_STORE_FP_LEN]; /* ... and the fingerprint of the ring held, "" when the
                                           tag has none: only a tag with it may get a 304 */
    int64_t refused;                    /* RK-Refused's version; 0: none */
    const char *reason; /* RK-Refused's reason, in the request's header; NULL with refused 0 */
} rkd_claim;

/* A version tag of this store (or a bare one): its version, else 0; its fingerprint into fp. */
static int64_t our_version(rkd_call *c, const char *tag, int *open, char fp[RKD_STORE_FP_LEN])
{
    int64_t v = 0;
    char id[RKD_STORE_ID_LEN];
    if (!tag || rkd_parse_etag(tag, &v, open, id, fp) != 0)
        return 0;
    return !id[0] || strcmp(id, rkd_store_id(c->app->store)) == 0 ? v : 0;
}

/* RK-Refused: "<the refused ring's ETag>" <reason>. */
static void parse_refused(rkd_call *c, rkd_claim *out)
{
    char tag[RKD_ETAG_MAX], fp[RKD_STORE_FP_LEN];
    int open = 0;
    const char *s = c->req->header(c->req, "RK-Refused");
    const char *end = s && s[0] == '"' ? strchr(s + 1, '"') : NULL;
    if (!end || (size_t)(end - s) + 2 > sizeof tag)
        return;
    memcpy(tag, s, (size_t)(end - s) + 1);
    tag[end - s + 1] = '\0';
    out->refused = our_version(c, tag, &open, fp);
    if (out->refused)
        out->reason = end + 1 + strspn(end + 1, " \t");
}

/* The claim of the call's request. */
static rkd_claim claim_of(rkd_call *c)
{
    rkd_claim claim = {0};
    claim.held =
        our_version(c, c->req->header(c->req, "If-None-Match"), &claim.open, claim.fingerprint);
    if (!claim.held)
        claim.fingerprint[0] = '\0';
    parse_refused(c, &claim);
    return claim;
}

/* Records the call's client (RK-Client), if any, with `claim`, as offered `offered` (0: none yet, a
 * poll that is held): with its client token, or without a token file, among the clients; with a
 * token file but without one, apart among the strangers. A token file shows in lacks: a read
 * without a token lacks every role. */
static void client_seen(rkd_call *c, const rkd_claim *claim, int64_t offered)
{
    rkd_client_report r = {.id = c->req->header(c->req, "RK-Client"),
                           .held = claim->held,
                           .offered = offered,
                           .refused = claim->refused,
                           .reason = claim->reason,
                           .addr = c->req->addr,
                           .agent = c->req->header(c->req, "User-Agent"),
                           .token = c->req->client_token};
    rkd_fleet_seen(c->app, c->cluster, c->req->client_token || !c->req->lacks, &r);
}

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
    rkd_claim claim = claim_of(c);
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
    client_seen(c, &claim, hold ? 0 : doc->version); /* a held poll is offered nothing yet */
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
