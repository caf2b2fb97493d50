/* test_etcd_http.c — the etcd gateway client (server/store/etcd/etcd_http.c) against a gateway
 * that reads a request and closes its connection without answering: what no real etcd does on
 * demand, and what decides whether a write may be sent twice. Requests reuse pooled connections,
 * and libcurl sends a request again by itself on a fresh connection when a reused one closes
 * before any answer: a read must be (the control: the second read is answered after all), a write
 * must not be (it comes back as unknown, sent once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <microhttpd.h>

#include "etcd_http.h"
#include "store.h"

/* A gateway (libmicrohttpd, as the other hostile servers of the tests) on a loopback port that
 * answers every request but the drop_at-th (from 1), which it reads whole and then closes the
 * connection on, answering nothing. */
typedef struct gateway {
    struct MHD_Daemon *d;
    unsigned short port;
    int drop_at;
    atomic_int requests, ranges, txns;
} gateway;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **ctx)
{
    static char body[] = "{\"header\":{\"revision\":\"1\"}}";
    static int seen; /* *ctx for a request whose headers have come */
    gateway *g = cls;
    (void)method, (void)version, (void)upload_data;
    if (!*ctx || *upload_data_size) { /* the headers, then the body: read on */
        *ctx = &seen;
        *upload_data_size = 0;
        return MHD_YES;
    }
    int k = atomic_fetch_add(&g->requests, 1) + 1;
    atomic_fetch_add(strcmp(url, "/v3/kv/txn") == 0 ? &g->txns : &g->ranges, 1);
    if (k == g->drop_at)
        return MHD_NO; /* the connection closed, nothing answered */
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof body - 1, body, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = r ? MHD_queue_response(conn, MHD_HTTP_OK, r) : MHD_NO;
    MHD_destroy_response(r);
    return ret;
}

static void gateway_start(gateway *g, int drop_at)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    memset(g, 0, sizeof *g);
    g->drop_at = drop_at;
    g->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                            NULL, NULL, on_request, g, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    assert_non_null(g->d);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(g->d, MHD_DAEMON_INFO_BIND_PORT);
    assert_true(info && info->port);
    g->port = info->port;
}

static void gateway_stop(gateway *g)
{
    MHD_stop_daemon(g->d);
}

/* A client of a gateway that drops its second request, after a first read that leaves the
 * client's connection in its pool. */
static rke_client *pooled_client(gateway *g)
{
    char endpoint[32];
    rk_error err = {0};
    rke_kv kv = {0};
    gateway_start(g, 2);
    snprintf(endpoint, sizeof endpoint, "127.0.0.1:%u", g->port);
    rke_client *c = rke_client_new(endpoint, NULL, &err);
    assert_non_null(c);
    assert_int_equal(rke_get(c, "k", &kv, &err), RK_OK);
    rke_kv_deinit(&kv);
    return c;
}

/* The control: a read dropped on a reused connection is sent again and answered. */
static void test_read_sent_again(void **state)
{
    (void)state;
    gateway g;
    rke_client *c = pooled_client(&g);
    rke_kv kv = {0};
    rk_error err = {0};
    assert_int_equal(rke_get(c, "k", &kv, &err), RK_OK);
    rke_kv_deinit(&kv);
    assert_int_equal(atomic_load(&g.ranges), 3);
    rke_client_free(c);
    gateway_stop(&g);
}

/* A write dropped on a reused connection is not sent again: its fate is unknown, and says so. */
static void test_write_sent_once(void **state)
{
    (void)state;
    gateway g;
    rke_client *c = pooled_client(&g);
    rk_error err = {0};
    rke_txn t;
    int ok = 1, unknown = 0;
    rke_txn_init(&t);
    rke_txn_put_str(&t, "k", "v");
    assert_int_equal(rke_txn_commit(c, &t, &ok, &unknown, &err), RKD_STORE_EUNAVAILABLE);
    rke_txn_deinit(&t);
    assert_false(ok);
    assert_true(unknown);
    assert_int_equal(atomic_load(&g.txns), 1);
    rke_client_free(c);
    gateway_stop(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_sent_again),
        cmocka_unit_test(test_write_sent_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
