/* api_clients.c — GET /v1/clusters/{c}/clients: the cutover's (docs/API.md) clients, as the ring
 * requests reported them (fleet.h), stragglers first with a summary. */

#include "api_clients.h"
#include "cache.h"
#include "clients.h"
#include "docs.h"
#include "reply.h"
#include "request.h"

/* The active version of the call's cluster, 0 when it has none, and the version an open migration
 * window keeps (0: none): 0, or -1 after answering (an unknown cluster is 404, as on every route of
 * a cluster). */
static int active_version(rkd_call *c, int64_t *active, int64_t *previous)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, &err);
    *active = e ? ((const rkd_active_doc *)e->value)->version : 0;
    *previous = e ? ((const rkd_active_doc *)e->value)->previous : 0;
    rkd_cache_release(c->app->docs, e);
    if (rc == RK_OK || rc == RKD_STORE_ENOACTIVE)
        return 0;
    rkd_fail(c, rc, &err);
    return -1;
}

/* The fleet reads from both rings while a window is open: its summary says which it keeps. */
static void set_previous(json_t *doc, int64_t previous)
{
    json_object_set_new(json_object_get(doc, "summary"), "previous",
                        previous ? json_integer(previous) : json_null());
}

void rkd_h_clients(rkd_call *c)
{
    int64_t limit = RKD_CLIENTS_LIST_DEFAULT, active = 0, previous = 0;
    if (rkd_query_int(c, "limit", 1, RKD_CLIENTS_LIST_MAX, &limit) < 0 ||
        active_version(c, &active, &previous) < 0)
        return;
    json_t *doc = rkd_clients_json(c->app->clients, c->cluster, active, (size_t)limit);
    json_t *apart = c->app->strangers
                        ? rkd_clients_json(c->app->strangers, c->cluster, active, (size_t)limit)
                        : json_null();
    set_previous(doc, previous);
    set_previous(apart, previous);
    if (doc && apart && json_object_set_new(doc, "unauthenticated", apart) == 0)
        apart = NULL;
    json_decref(apart);
    rkd_answer_json(c->resp, 200, doc);
}
