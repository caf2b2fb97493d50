/* api_clients.c — the cutover's (docs/API.md) clients: the RK-Client header recorded on every ring
 * request, and GET /v1/clusters/{c}/clients, which lists them stragglers first with a summary. */
#include <string.h>

#include "api_internal.h"

void rkd_client_seen(rkd_call *c, int64_t version)
{
    const char *id = c->req->header(c->req, "RK-Client");
    if (id) /* a request without the header is not tracked */
        rkd_clients_seen(c->app->clients, c->cluster, id, version, c->req->addr,
                         c->req->header(c->req, "User-Agent"));
}

/* The active version of the call's cluster, 0 when it has none: 0, or -1 after answering (an
 * unknown cluster is 404, as on every route of a cluster). */
static int active_version(rkd_call *c, int64_t *active)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, &err);
    *active = e ? ((const rkd_active_doc *)e->value)->version : 0;
    rkd_cache_release(c->app->docs, e);
    if (rc == RK_OK || rc == RKD_STORE_ENOACTIVE)
        return 0;
    rkd_fail(c, rc, &err);
    return -1;
}

void rkd_h_clients(rkd_call *c)
{
    int64_t limit = RKD_CLIENTS_LIST_DEFAULT, active = 0;
    if (rkd_query_int(c, "limit", 1, RKD_CLIENTS_LIST_MAX, &limit) < 0 ||
        active_version(c, &active) < 0)
        return;
    rkd_answer_json(c->resp, 200,
                    rkd_clients_json(c->app->clients, c->cluster, active, (size_t)limit));
}
