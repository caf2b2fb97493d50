/* http.c — ringkeeperd on libmicrohttpd: the daemon, its connections and their socket buffers, over
 * the long polls of http_poll.c and the requests of http_request.c. */
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_framing.h"
#include "http_origin.h"
#include "http_shared.h"
#include "log.h"

/* ---- the daemon ---- */

/* libmicrohttpd's own limit, when reached, stops accepting: a new connection then waits unanswered
 * in the listen backlog until its client gives up. So MHD's limit is set above ours (by the pool
 * threads that may each be between this check and the count, and the connections being evicted),
 * and ours closes at once. Held long polls have their own share (max_polls): however many are
 * held, max_connections remain for /healthz, publishes and every other short request. At our
 * limit, a newcomer takes the place of the connection that has owed a request's headers longest:
 * 1280 slowloris connections had answered 0 of 112 probes of /healthz in 40 s. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    rkd_http *h = cls;
    (void)addr, (void)addrlen;
    long open = atomic_load(&h->connections) - atomic_load(&h->held);
    return open < (long)h->cfg.max_connections || rkh_slow_evict(h) ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
    rkd_http *h = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&h->connections, 1);
        *socket_context = rkh_conn_new(c);
        rkh_slow_wait(h, *socket_context);
        return;
    }
    rkh_conn_free(h, *socket_context);
    atomic_fetch_sub(&h->connections, 1);
    atomic_fetch_add(&h->closed, 1);
}

static int listen_error(rk_error *err, const char *listen)
{
    return rk_error_set(err, RK_EINVAL, "--listen",
                        "\"%.100s\" is not HOST:PORT (e.g. 127.0.0.1:7070 or [::1]:7070) of this "
                        "machine",
                        listen);
}

/* Resolves "host:port" or "[v6]:port" into *out. */
static int resolve(const char *listen, struct addrinfo **out, rk_error *err)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    const char *open = listen[0] == '[' ? listen + 1 : listen;
    size_t hl = colon ? (size_t)(colon - open) : 0;
    if (colon && listen[0] == '[' && hl > 0 && open[hl - 1] == ']')
        hl--;
    if (!colon || hl == 0 || hl >= sizeof host || !colon[1])
        return listen_error(err, listen);
    memcpy(host, open, hl);
    host[hl] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(host, colon + 1, &hints, out);
    if (rc)
        return listen_error(err, listen);
    return RK_OK;
}

/* The listening socket, made here rather than by libmicrohttpd so that its kernel buffers are set
 * before listen(2): an accepted connection inherits them, which saves two setsockopt(2) calls per
 * connection (a tenth of the syscalls of a `Connection: close` request). As libmicrohttpd made it:
 * SO_REUSEADDR, IPv6 only for an IPv6 address, SOMAXCONN. Returns the socket, or -1. */
static int listen_socket(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, sndbuf = SNDBUF_SLOW, rcvbuf = RCVBUF_OPEN;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        (ai->ai_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)) ||
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, SOMAXCONN)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* libmicrohttpd's messages. While the daemon starts they are dropped: rkd_http_start's own error
 * says what failed, in the terms of the command line. Later ones are printed, escaped, as
 * ringkeeperd's. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    rkd_http *h = cls;
    char text[256], line[4 * sizeof text];
    if (!atomic_load(&h->started))
        return;
    vsnprintf(text, sizeof text, fmt, ap);
    text[strcspn(text, "\n")] = '\0';
    rkh_log_escape(line, sizeof line, text, 0);
    rkd_log("libmicrohttpd: %s", line);
}

/* libmicrohttpd's threads: every one of them watches the one listening socket (plain EPOLLIN, not
 * EPOLLEXCLUSIVE), so each new connection wakes them all, and more of them than cores only adds
 * context switches: with 4 on 2 cores, `Connection: close` ran at 0.73x nginx's rate, a third of
 * the samples in the scheduler. Nothing on them blocks for long (the pool of cfg.threads answers
 * what may), so they are as many as the cores, at most cfg.threads. */
unsigned rkd_http_network_threads(const rkd_http_config *c)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = c->threads ? c->threads : 1;
    return cores > 0 && (unsigned long)cores < n ? (unsigned)cores : n;
}

static struct MHD_Daemon *start_daemon(rkd_http *h, const struct addrinfo *ai)
{
    h->listen_fd = listen_socket(ai);
    if (h->listen_fd < 0)
        return NULL;
    /* AUTO picks epoll on Linux: each pool thread watches its share of the connections. Suspended
     * connections (held long polls) are not timed out by MHD while they are held. */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    const rkd_http_config *c = &h->cfg;
    unsigned threads = rkd_http_network_threads(c);
    struct MHD_OptionItem opts[8];
    size_t n = 0;
    opts[n++] = (struct MHD_OptionItem){
        MHD_OPTION_CONNECTION_LIMIT,
        (intptr_t)(c->max_connections + c->max_polls + threads + EVICT_SLACK), NULL};
    if (c->max_per_address)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            (intptr_t)c->max_per_address, NULL};
    if (c->tls_cert && c->tls_key) {
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)c->tls_key};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)c->tls_cert};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    unsigned timeout = c->idle_timeout ? c->idle_timeout : 30;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, on_accept, h, rkh_on_request, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_LISTEN_SOCKET, h->listen_fd, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_NOTIFY_COMPLETED, rkh_on_completed, h, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->header_buffer, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
        h, MHD_OPTION_UNESCAPE_CALLBACK, rkd_unescape, NULL, MHD_OPTION_URI_LOG_CALLBACK,
        rkd_uri_seen, NULL, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!d)
        h->listen_fd = -1; /* libmicrohttpd closed it when it failed */
    return d;
}

/* Fills in the defaults of `cfg` (its zeroes). */
static void set_defaults(rkd_http_config *cfg)
{
    if (!cfg->max_connections)
        cfg->max_connections = RKD_HTTP_MAX_CONNECTIONS;
    if (!cfg->max_polls)
        cfg->max_polls = RKD_HTTP_MAX_POLLS;
    if (!cfg->body_budget)
        cfg->body_budget = RKD_HTTP_BODY_BUDGET;
    if (!cfg->send_budget)
        cfg->send_budget = RKD_HTTP_SEND_BUDGET;
    if (!cfg->header_buffer)
        cfg->header_buffer = RKD_HTTP_HEADER_BUFFER;
    if (!cfg->header_timeout)
        cfg->header_timeout = RKD_HTTP_HEADER_TIMEOUT;
}

/* --allow-origin and --public-name as http_origin.c reads them: RK_OK, or RK_EINVAL saying which
 * entry is not. */
static int check_browser_lists(const rkd_http_config *cfg, rk_error *err)
{
    char why[200];
    if (rkd_origin_list_check(cfg->allow_origins, 'o', why, sizeof why) != 0)
        return rk_error_set(err, RK_EINVAL, "--allow-origin", "--allow-origin: %s", why);
    if (rkd_origin_list_check(cfg->public_names, 'n', why, sizeof why) != 0)
        return rk_error_set(err, RK_EINVAL, "--public-name", "--public-name: %s", why);
    return RK_OK;
}

rkd_http *rkd_http_start(const rkd_http_config *cfg, rk_error *err)
{
    struct addrinfo *ai = NULL;
    if (check_browser_lists(cfg, err) != RK_OK || resolve(cfg->listen, &ai, err))
        return NULL;
    rkd_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        return NULL;
    }
    h->cfg = *cfg;
    set_defaults(&h->cfg);
    mallopt(M_MMAP_THRESHOLD, MMAP_FROM); /* see MMAP_FROM */
    size_t share =
        h->cfg.body_budget / 4 > h->cfg.max_body ? h->cfg.body_budget / 4 : h->cfg.max_body;
    size_t addresses = h->cfg.max_connections + h->cfg.max_polls + h->cfg.threads;
    h->bodies = rkd_budget_new(h->cfg.body_budget, share, addresses);
    h->sends = rkd_budget_new(h->cfg.send_budget, h->cfg.send_budget / 4, addresses);
    if (!h->bodies || !h->sends) {
        rkd_budget_free(h->bodies);
        rkd_budget_free(h->sends);
        free(h);
        freeaddrinfo(ai);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory for the table of body budgets");
        return NULL;
    }
    atomic_init(&h->inflight, 0);
    atomic_init(&h->connections, 0);
    atomic_init(&h->held, 0);
    atomic_init(&h->closed, 0);
    atomic_init(&h->wakes[RKH_RING], 0);
    atomic_init(&h->wakes[RKH_CHANGES], 0);
    atomic_init(&h->listed[RKH_RING], 0);
    atomic_init(&h->listed[RKH_CHANGES], 0);
    atomic_init(&h->started, 0);
    atomic_init(&h->evicting, 0);
    pthread_mutex_init(&h->slow_mu, NULL);
    rkh_polls_init(h);
    h->listen_fd = -1;
    h->d = rkh_pool_start(h) == 0 ? start_daemon(h, ai) : NULL;
    freeaddrinfo(ai);
    if (!h->d || pthread_create(&h->timer, NULL, rkh_timer_main, h)) {
        rk_error_set(err, RK_EIO, NULL,
                     cfg->tls_cert ? "cannot serve HTTPS on %.100s: the address is in use or not "
                                     "of this machine, or the certificate and key do not match"
                                   : "cannot listen on %.100s: the address is in use or not of "
                                     "this machine",
                     cfg->listen);
        rkh_pool_free(h); /* before MHD stops, as in rkd_http_stop */
        if (h->d)
            MHD_stop_daemon(h->d);
        if (h->listen_fd >= 0)
            close(h->listen_fd);
        rkh_polls_deinit(h);
        pthread_mutex_destroy(&h->slow_mu);
        rkd_budget_free(h->bodies);
        rkd_budget_free(h->sends);
        free(h);
        return NULL;
    }
    atomic_store(&h->started, 1);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    rkd_app_set_activation_hook(cfg->app, rkh_on_activation, h);
    return h;
}

unsigned rkd_http_port(const rkd_http *h)
{
    return h->port;
}

void rkd_http_stop(rkd_http *h, unsigned grace_ms)
{
    if (!h)
        return;
    /* No new connections; requests in flight go on. A quiesced daemon leaves the listening socket
     * to us; one that could not be quiesced closes it itself. */
    if (MHD_quiesce_daemon(h->d) == MHD_INVALID_SOCKET)
        h->listen_fd = -1;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->timer, NULL); /* it answers every held long poll on its way out */
    for (unsigned waited = 0; atomic_load(&h->inflight) > 0 && waited < grace_ms; waited += 10)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    rkh_pool_free(h); /* before MHD stops: the pool answers and resumes what it was given */
    MHD_stop_daemon(h->d);
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    rkd_app_set_activation_hook(h->cfg.app, NULL, NULL);
    rkh_polls_deinit(h);
    pthread_mutex_destroy(&h->slow_mu);
    rkd_budget_free(h->bodies);
    rkd_budget_free(h->sends);
    free(h);
}
