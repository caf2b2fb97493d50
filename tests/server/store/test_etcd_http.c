/* test_etcd_http.c — the etcd gateway client (server/store/etcd/etcd_http.c) against a gateway
 * that reads a request and closes its connection without answering: what no real etcd does on
 * demand, and what decides whether a write may be sent twice. Requests reuse pooled connections,
 * and libcurl sends a request again by itself on a fresh connection when a reused one closes
 * before any answer: a read must be (the control: the second read is answered after all), a write
 * must not be (it comes back as unknown, sent once). */
#define _GNU_SOURCE /* strcasestr */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "etcd_http.h"
#include "store.h"

#define WAIT_MS     2000 /* the longest the gateway waits for a connection or bytes */
#define REQUEST_MAX 65536

/* A gateway on a loopback port that answers every request but the drop_at-th (from 1), which it
 * reads whole and then closes the connection on. */
typedef struct gateway {
    int fd;
    unsigned short port;
    int drop_at;
    atomic_int requests, ranges, txns, stop;
    pthread_t thread;
} gateway;

/* Reads one request (its headers and Content-Length bytes of body) into buf; its length, or 0 at
 * the end of the connection or after WAIT_MS without bytes. */
static size_t read_request(int c, char *buf)
{
    size_t got = 0, want = 0;
    while (got < REQUEST_MAX - 1 && (want == 0 || got < want)) {
        struct pollfd p = {c, POLLIN, 0};
        ssize_t n = poll(&p, 1, WAIT_MS) == 1 ? recv(c, buf + got, REQUEST_MAX - 1 - got, 0) : 0;
        if (n <= 0)
            return 0;
        got += (size_t)n;
        buf[got] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        const char *len = strcasestr(buf, "\r\nContent-Length:");
        if (end && want == 0)
            want = (size_t)(end + 4 - buf) + (len ? strtoul(len + 17, NULL, 10) : 0);
    }
    return got;
}

/* 0 when the answer could not be sent (the client then fails its request, and the test). cmocka's
 * asserts stay on the test's thread. */
static int answer(int c)
{
    static const char body[] = "{\"header\":{\"revision\":\"1\"}}";
    char out[256];
    int n = snprintf(out, sizeof out,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     sizeof body - 1, body);
    return send(c, out, (size_t)n, MSG_NOSIGNAL) == n;
}

/* Serves the requests of one connection until it ends or a request is dropped. */
static void serve(gateway *g, int c)
{
    char *buf = malloc(REQUEST_MAX);
    while (buf && read_request(c, buf) > 0) {
        int k = atomic_fetch_add(&g->requests, 1) + 1;
        atomic_fetch_add(strstr(buf, "POST /v3/kv/txn ") == buf ? &g->txns : &g->ranges, 1);
        if (k == g->drop_at || !answer(c))
            break;
    }
    free(buf);
    close(c);
}

static void *gateway_run(void *arg)
{
    gateway *g = arg;
    while (!atomic_load(&g->stop)) {
        struct pollfd p = {g->fd, POLLIN, 0};
        if (poll(&p, 1, 50) == 1) {
            int c = accept(g->fd, NULL, NULL);
            if (c >= 0)
                serve(g, c);
        }
    }
    return NULL;
}

static void gateway_start(gateway *g, int drop_at)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    memset(g, 0, sizeof *g);
    g->drop_at = drop_at;
    g->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(g->fd >= 0);
    assert_int_equal(bind(g->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(g->fd, 8), 0);
    assert_int_equal(getsockname(g->fd, (struct sockaddr *)&a, &len), 0);
    g->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&g->thread, NULL, gateway_run, g), 0);
}

static void gateway_stop(gateway *g)
{
    atomic_store(&g->stop, 1);
    pthread_join(g->thread, NULL);
    close(g->fd);
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
