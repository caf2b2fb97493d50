/* etcd_lease.c — etcd leases through the gateway (etcd_http.h): granting one, and renewing it with
 * one message of the LeaseKeepAlive stream (the gateway ends the stream with the request's body).
 * A key put under a lease goes when the lease does: the etcd store keeps a replica's share of the
 * fleet (store_etcd_fleet.c) under its lease, so a dead replica's records expire by themselves. */
#include <stdio.h>
#include <stdlib.h>

#include "etcd_http_internal.h"
#include "store.h"

/* A lease's number as etcd writes it in JSON (a string, int64); 0 when absent. */
static int64_t lease_num(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : json_integer_value(v);
}

int rke_lease_grant(rke_client *c, int64_t ttl_s, int64_t *id, rk_error *err)
{
    json_t *req = json_pack("{sI}", "TTL", (json_int_t)ttl_s), *resp = NULL;
    int unknown;
    int rc = req ? rke_http_call(c, "/v3/lease/grant", req, 1, &resp, &unknown, err)
                 : rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    *id = rc == RK_OK ? lease_num(resp, "ID") : 0;
    if (rc == RK_OK && *id == 0)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "etcd granted no lease: %s",
                          json_is_string(json_object_get(resp, "error"))
                              ? json_string_value(json_object_get(resp, "error"))
                              : "no ID");
    json_decref(req);
    json_decref(resp);
    return rc;
}

int rke_lease_keepalive(rke_client *c, int64_t id, int *alive, rk_error *err)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)id);
    json_t *req = json_pack("{ss}", "ID", num), *resp = NULL;
    int unknown;
    int rc = req ? rke_http_call(c, "/v3/lease/keepalive", req, 0, &resp, &unknown, err)
                 : rk_error_set(err, RK_ENOMEM, NULL, "out of memory building an etcd request");
    /* etcd answers a lease it no longer has with a TTL of 0, which the gateway leaves out */
    *alive = rc == RK_OK && lease_num(json_object_get(resp, "result"), "TTL") > 0;
    json_decref(req);
    json_decref(resp);
    return rc;
}
