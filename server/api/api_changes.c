/* api_changes.c — GET /v1/clusters/{c}/changes: the cluster's change counter (changes.h), answered
 * at once or, with ?since equal to it and ?wait, once it moves on (a long poll the HTTP layer
 * holds, woken by the change). */
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "api_changes.h"
#include "cache.h"
#include "changes.h"
#include "docs.h"
#include "reply.h"
#include "request.h"

#define WAIT_MAX_SECONDS 60

void rkd_h_changes(rkd_call *c)
{
    int64_t since = -1, wait = 0, active = 0;
    rk_error err = {0};
    int rc = RK_OK;
    if (rkd_query_int(c, "since", 0, INT64_MAX, &since) < 0 ||
        rkd_query_int(c, "wait", 0, WAIT_MAX_SECONDS, &wait) < 0)
        return;
    rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, &err); /* 404 for no such cluster */
    active = e ? ((const rkd_active_doc *)e->value)->version : 0;
    rkd_cache_release(c->app->docs, e);
    if (rc != RK_OK && rc != RKD_STORE_ENOACTIVE) {
        rkd_fail(c, rc, &err);
        return;
    }
    uint64_t seq = rkd_changes_seq(c->app, c->cluster);
    if (since >= 0 && (uint64_t)since == seq && wait > 0 && !c->req->resumed) {
        c->resp->wait_seconds = (unsigned)wait;
        c->resp->wait_changes = 1;
        snprintf(c->resp->wait_cluster, sizeof c->resp->wait_cluster, "%s", c->cluster);
        return;
    }
    rkd_answer_json(c->resp, 200,
                    json_pack("{s:s, s:I, s:o}", "cluster", c->cluster, "seq", (json_int_t)seq,
                              "active", active ? json_integer(active) : json_null()));
}
