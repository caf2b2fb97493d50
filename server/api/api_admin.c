/* api_admin.c — the operational routes of docs/API.md: liveness, readiness, metrics and the
 * cluster list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_admin.h"
#include "clients.h"
#include "reply.h"
#include "request.h"
#include "version_doc.h"

#define CLUSTERS_LIMIT_DEFAULT 100 /* as the versions' */

void rkd_h_healthz(rkd_call *c)
{
    rkd_answer_json(c->resp, 200, json_pack("{s:s}", "status", "ok"));
}

void rkd_h_readyz(rkd_call *c)
{
    rk_error err = {0};
    int rc = rkd_store_ping(c->app->store, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        return;
    }
    rkd_answer_json(c->resp, 200, json_pack("{s:s}", "status", "ready"));
}

/* The metrics' own exposition, then the clients' gauges (the table is the app's, not theirs). */
void rkd_h_metrics(rkd_call *c)
{
    char *text = NULL, *base = c->app->metrics ? rkd_metrics_render(c->app->metrics) : strdup("");
    size_t len = 0;
    FILE *f = base ? open_memstream(&text, &len) : NULL;
    if (f) {
        fputs(base, f);
        rkd_clients_metrics(c->app->clients, f);
    }
    int failed = !f || ferror(f);
    if (f && fclose(f) != 0)
        failed = 1;
    free(base);
    if (failed) {
        free(text);
        rkd_out_of_memory(c->resp);
        return;
    }
    rkd_set_body(c->resp, 200, RKD_CT_METRICS, text, len);
}

/* A page of the clusters, by name: ?limit (1..RKD_STORE_LIST_MAX, default 100) and ?after, a
 * cluster name (the last of the page before: next_after), paged as the versions are. */
void rkd_h_clusters(rkd_call *c)
{
    rkd_store_cluster_list list = {0};
    rk_error err = {0};
    int64_t limit = CLUSTERS_LIMIT_DEFAULT;
    const char *after = c->req->query(c->req, "after");
    if (rkd_query_int(c, "limit", 1, RKD_STORE_LIST_MAX, &limit) < 0)
        return;
    if (after && (strlen(after) >= RKD_CLUSTER_MAX || !rk_cluster_name_valid(after))) {
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "after",
                           "query parameter after must be a cluster name (the next_after of the "
                           "page before): 1 to 63 bytes of a-z, 0-9, '.', '_' and '-', starting "
                           "with a letter or digit");
        return;
    }
    int rc = rkd_store_list_clusters(c->app->store, (size_t)limit, after, &list, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
        return;
    }
    rkd_answer_json(c->resp, 200, rkd_clusters_json(&list));
    rkd_store_cluster_list_free(&list);
}
