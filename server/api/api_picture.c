/* api_picture.c — a ring as the console draws it (picture.h): GET .../picture (the ring in equal
 * bins, each the node of its longest stretch) and GET .../arc (the exact arc holding a hash
 * value), both of a version's built ring and immutable per version (ETag). The browser draws and
 * points; it never rebuilds a ring. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_picture.h"
#include "cache.h"
#include "picture.h"
#include "reply.h"
#include "request.h"
#include "rings.h"

/* The query's bins: 0, or -1 after answering 400. */
static int query_bins(rkd_call *c, int64_t *bins)
{
    *bins = RKD_PICTURE_BINS;
    return rkd_query_int(c, "bins", RKD_PICTURE_MIN_BINS, RKD_PICTURE_MAX_BINS, bins) < 0 ? -1 : 0;
}

/* 1 after answering 304 when If-None-Match names version v of this store: a version's ring, and
 * so its picture and arcs, never changes. Sets the ETag otherwise. */
static int not_modified(rkd_call *c, int64_t v)
{
    const char *s = c->req->header(c->req, "If-None-Match");
    rkd_format_etag(c->resp->etag, v, 0, rkd_store_id(c->app->store), NULL); /* v is v */
    if (!s || strcmp(s, c->resp->etag) != 0)
        return 0;
    c->resp->status = 304;
    return 1;
}

/* The call's version as a ring, held; NULL after answering. A ring not built yet costs what a
 * plan does, so building it takes a plan slot: a client asking for pictures of many versions
 * cannot build more rings at once than --plan-concurrency. */
static rkd_entry *version_ring(rkd_call *c)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_cache_get(c->app->rings, c->cluster, c->version);
    if (e || !rkd_plan_slot(c))
        return e;
    e = rkd_ring_entry(c, c->version, &rc, &err);
    rkd_plan_slot_release(c);
    if (!e)
        rkd_fail(c, rc, &err);
    return e;
}

void rkd_h_picture(rkd_call *c)
{
    int64_t bins = 0;
    if (query_bins(c, &bins) != 0 || not_modified(c, c->version))
        return;
    rkd_entry *e = version_ring(c);
    if (!e)
        return;
    rkd_answer_json(c->resp, 200,
                    rkd_ring_picture_json(c->cluster, c->version, e->value, (size_t)bins));
    rkd_cache_release(c->app->rings, e);
}

/* ---- the arc at a hash value ---- */

/* A hash value of a 2^bits space: 16 hex digits as the API writes them (8 too on a 32-bit ring),
 * else decimal digits. 0, or -1. */
static int parse_hash(const char *s, unsigned bits, uint64_t *out)
{
    size_t len = strlen(s);
    int hex = len == 16 || (bits == 32 && len == 8);
    const char *digits = hex ? "0123456789abcdefABCDEF" : "0123456789";
    char *end = NULL;
    if (len == 0 || len > 20 || strspn(s, digits) != len)
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    *out = v;
    return errno == 0 && (bits == 64 || v <= UINT32_MAX) ? 0 : -1;
}

void rkd_h_arc(rkd_call *c)
{
    const char *s = c->req->query(c->req, "hash");
    uint64_t h = 0;
    if (!s) {
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "hash",
                           "query parameter hash is required: a hash value of the ring");
        return;
    }
    rkd_entry *e = version_ring(c);
    if (!e)
        return;
    unsigned bits = rk_ring_bits(e->value);
    if (parse_hash(s, bits, &h) != 0)
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "hash",
                           "query parameter hash must be a value of this ring's %u-bit hash space: "
                           "16 hex digits%s, or a decimal number (one of that many digits with a "
                           "leading 0)",
                           bits, bits == 32 ? " or 8" : "");
    else if (!not_modified(c, c->version))
        rkd_answer_json(c->resp, 200, rkd_ring_arc_json(c->cluster, c->version, e->value, h));
    rkd_cache_release(c->app->rings, e);
}
