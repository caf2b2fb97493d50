/* metrics.c — the agent's /metrics (docs/AGENT.md, "Metrics"): a small listener on a loopback
 * address, served from a thread of its own, in Prometheus' text format: the versions applied and
 * refused since start, the version held and the one refused last. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

struct rk_cli_agent_metrics {
    const rk_cli_agent_state *agent;
    int fd;
    atomic_int stop;
    pthread_t thread;
};

/* The listening socket of `listen` (IPv4 HOST:PORT, HOST a loopback address), or -1 with a
 * sentence in msg. */
static int listen_on(const char *listen_at, char msg[RK_CLI_AGENT_MSG])
{
    char host[64];
    const char *colon = strrchr(listen_at, ':');
    unsigned long long port;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (!colon || (size_t)(colon - listen_at) >= sizeof host ||
        rk_cli_number(colon + 1, 1, 65535, &port) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "--metrics: must be 127.0.0.1:PORT, got \"%s\"",
                        listen_at),
               -1;
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen_at), listen_at);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || (ntohl(sa.sin_addr.s_addr) >> 24) != 127)
        return snprintf(msg, RK_CLI_AGENT_MSG,
                        "--metrics: must be a loopback address (127.x.x.x:PORT), got \"%s\"",
                        listen_at),
               -1;
    sa.sin_port = htons((uint16_t)port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
        bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 16) == 0)
        return fd;
    snprintf(msg, RK_CLI_AGENT_MSG, "--metrics %s: %s", listen_at, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The metrics' text into buf; its length. */
static int body(const rk_cli_agent_state *a, char *buf, size_t size)
{
    return snprintf(buf, size,
                    "# HELP ringkeeper_agent_applied_total Versions the proxy was cut over to.\n"
                    "# TYPE ringkeeper_agent_applied_total counter\n"
                    "ringkeeper_agent_applied_total{proxy=\"%s\"} %lld\n"
                    "# HELP ringkeeper_agent_refused_total Versions refused (file restored).\n"
                    "# TYPE ringkeeper_agent_refused_total counter\n"
                    "ringkeeper_agent_refused_total{proxy=\"%s\"} %lld\n"
                    "# HELP ringkeeper_agent_held_version The version the proxy runs (0: none).\n"
                    "# TYPE ringkeeper_agent_held_version gauge\n"
                    "ringkeeper_agent_held_version{proxy=\"%s\"} %lld\n"
                    "# HELP ringkeeper_agent_refusing_version The version refused last while "
                    "still the newest seen (0: none).\n"
                    "# TYPE ringkeeper_agent_refusing_version gauge\n"
                    "ringkeeper_agent_refusing_version{proxy=\"%s\"} %lld\n",
                    a->proxy->name, (long long)atomic_load(&a->applied), a->proxy->name,
                    (long long)atomic_load(&a->refused), a->proxy->name,
                    (long long)atomic_load(&a->held), a->proxy->name,
                    (long long)atomic_load(&a->refusing));
}

/* One request on connection c: GET /metrics gets them, anything else a 404. */
static void answer(const rk_cli_agent_state *a, int c)
{
    char req[1024], text[2048], head[256];
    struct pollfd p = {c, POLLIN, 0};
    ssize_t n = poll(&p, 1, 1000) > 0 ? read(c, req, sizeof req - 1) : -1;
    req[n > 0 ? n : 0] = '\0';
    int found = strncmp(req, "GET /metrics ", 13) == 0 || strncmp(req, "GET /metrics?", 13) == 0;
    int len = found ? body(a, text, sizeof text) : snprintf(text, sizeof text, "not found\n");
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
                      "Content-Length: %d\r\nConnection: close\r\n\r\n",
                      found ? "200 OK" : "404 Not Found", len);
    if (send(c, head, (size_t)hl, MSG_NOSIGNAL) == hl)
        (void)!send(c, text, (size_t)len, MSG_NOSIGNAL);
}

static void *serve(void *arg)
{
    rk_cli_agent_metrics *m = arg;
    while (!atomic_load(&m->stop)) {
        struct pollfd p = {m->fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        int c = accept(m->fd, NULL, NULL);
        if (c < 0)
            continue;
        answer(m->agent, c);
        close(c);
    }
    return NULL;
}

rk_cli_agent_metrics *rk_cli_agent_metrics_new(const rk_cli_agent_state *a, const char *listen_at,
                                               char msg[RK_CLI_AGENT_MSG])
{
    rk_cli_agent_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return snprintf(msg, RK_CLI_AGENT_MSG, "--metrics: out of memory"), NULL;
    m->agent = a;
    m->fd = listen_on(listen_at, msg);
    if (m->fd >= 0 && pthread_create(&m->thread, NULL, serve, m) == 0)
        return m;
    if (m->fd >= 0) {
        snprintf(msg, RK_CLI_AGENT_MSG, "--metrics: no thread for it");
        close(m->fd);
    }
    free(m);
    return NULL;
}

void rk_cli_agent_metrics_free(rk_cli_agent_metrics *m)
{
    if (!m)
        return;
    atomic_store(&m->stop, 1);
    pthread_join(m->thread, NULL);
    close(m->fd);
    free(m);
}
