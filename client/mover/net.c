/* net.c — reaching data servers: addresses, bounded retries with backoff, the open every driver's
 * connection shares, and a TCP line reader with a fixed buffer for the hand-written text protocol
 * parts. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

int rkm_addr_parse(const char *addr, char *host, unsigned *port, rk_error *err)
{
    const char *colon = strrchr(addr, ':');
    const char *start = addr, *end = colon;
    if (colon && addr[0] == '[' && colon > addr && colon[-1] == ']') { /* [v6]:port */
        start = addr + 1;
        end = colon - 1;
    }
    char *rest = NULL;
    long p = colon ? strtol(colon + 1, &rest, 10) : 0;
    if (!colon || end == start || (size_t)(end - start) >= RKM_HOST_MAX || rest == colon + 1 ||
        *rest != '\0' || p < 1 || p > 65535)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "'%.80s' is not a data server address: host:port, port 1 to 65535",
                            addr);
    memcpy(host, start, (size_t)(end - start));
    host[end - start] = '\0';
    *port = (unsigned)p;
    return RK_OK;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int rkm_retry(const rkm_options *opt, rkm_attempt_fn attempt, void *ctx, rk_error *err)
{
    rk_error local;
    rk_error *e = err ? err : &local; /* the count is added to the message: there must be one */
    unsigned wait = opt->backoff_ms;
    int rc = RK_EUNREACHABLE;
    for (unsigned i = 0; i < opt->tries && rc == RK_EUNREACHABLE; i++) {
        if (i > 0) {
            sleep_ms(wait);
            wait = wait * 2 > RKM_MAX_BACKOFF_MS ? RKM_MAX_BACKOFF_MS : wait * 2;
        }
        rc = attempt(ctx, e);
    }
    if (rc == RK_EUNREACHABLE) {
        size_t used = strlen(e->message);
        snprintf(e->message + used, sizeof e->message - used, " (%u tries)", opt->tries);
    }
    return rc;
}

void *rkm_open_conn(const rkm_opener *how, const char *addr, const rkm_options *opt, rk_error *err)
{
    rkm_endpoint *ep = calloc(1, how->size); /* the connection, through its first member */
    if (!ep) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    ep->opt = opt;
    snprintf(ep->label, sizeof ep->label, "%s %s", how->store, addr);
    if (rkm_addr_parse(addr, ep->host, &ep->port, err) != RK_OK ||
        (how->setup && how->setup(ep, err) != RK_OK) ||
        rkm_retry(opt, how->connect, ep, err) != RK_OK) {
        how->close(ep);
        return NULL;
    }
    return ep;
}

struct rkm_lines {
    int fd;                    /* the connection */
    size_t start, end;         /* unread bytes are buf[start .. end) */
    char label[RKM_LABEL_MAX]; /* how messages name the server */
    char buf[RKM_LINE_MAX];    /* one line at most, plus what came after it */
};

/* Connects `fd` to `ai` within timeout_ms: non-blocking, so a silent host costs no more. */
static int connect_within(int fd, const struct addrinfo *ai, unsigned timeout_ms)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS)
        return -1;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int ready = poll(&p, 1, (int)timeout_ms);
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (ready == 0)
        errno = ETIMEDOUT;
    if (ready <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        return -1;
    if (soerr != 0) {
        errno = soerr;
        return -1;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int one = 1; /* pipelined commands: the last of a window is not held back for an ack */
    if (fcntl(fd, F_SETFL, flags) != 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one))
        return -1;
    return 0;
}

/* A connected socket to host:port, or -1 with errno (or *gai) saying why. */
static int open_socket(const char *host, unsigned port, unsigned timeout_ms, int *gai)
{
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *list = NULL;
    *gai = getaddrinfo(host, service, &hints, &list);
    if (*gai != 0)
        return -1;
    int fd = -1;
    for (const struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && connect_within(fd, ai, timeout_ms) != 0) {
            int saved = errno;
            close(fd);
            fd = -1;
            errno = saved;
        }
    }
    freeaddrinfo(list);
    return fd;
}

int rkm_lines_connect(rkm_lines **out, const char *label, const char *host, unsigned port,
                      unsigned timeout_ms, rk_error *err)
{
    rkm_lines *l = calloc(1, sizeof *l);
    *out = NULL;
    if (!l)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    snprintf(l->label, sizeof l->label, "%s", label);
    int gai = 0;
    l->fd = open_socket(host, port, timeout_ms, &gai);
    if (l->fd < 0) {
        rk_error_set(err, RK_EUNREACHABLE, NULL, "%s: cannot connect: %s", label,
                     gai ? gai_strerror(gai) : strerror(errno));
        free(l);
        return RK_EUNREACHABLE;
    }
    *out = l;
    return RK_OK;
}

void rkm_lines_free(rkm_lines *l)
{
    if (!l)
        return;
    close(l->fd);
    free(l);
}

static int lost(const rkm_lines *l, ssize_t n, rk_error *err)
{
    const char *why = n == 0 ? "closed by the server" : strerror(errno);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        why = "no answer within the timeout";
    return rk_error_set(err, RK_EUNREACHABLE, NULL, "%s: connection lost: %s", l->label, why);
}

int rkm_lines_send(rkm_lines *l, const char *data, size_t len, rk_error *err)
{
    while (len > 0) {
        ssize_t n = send(l->fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return lost(l, n, err);
        data += n;
        len -= (size_t)n;
    }
    return RK_OK;
}

/* Hands out the first buffered line when there is one: 1, or 0 when none is complete yet. */
static int take_line(rkm_lines *l, char **line, size_t *len)
{
    char *first = l->buf + l->start;
    char *nl = memchr(first, '\n', l->end - l->start);
    if (!nl)
        return 0;
    l->start = (size_t)(nl + 1 - l->buf);
    if (nl > first && nl[-1] == '\r')
        nl--;
    *nl = '\0';
    *line = first;
    *len = (size_t)(nl - first);
    return 1;
}

int rkm_lines_read(rkm_lines *l, char **line, size_t *len, rk_error *err)
{
    while (!take_line(l, line, len)) {
        memmove(l->buf, l->buf + l->start, l->end - l->start); /* room after the partial line */
        l->end -= l->start;
        l->start = 0;
        if (l->end == sizeof l->buf)
            return rk_error_set(err, RK_ETOOLARGE, NULL, "%s: a line over %d bytes", l->label,
                                RKM_LINE_MAX);
        ssize_t n = recv(l->fd, l->buf + l->end, sizeof l->buf - l->end, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return lost(l, n, err);
        l->end += (size_t)n;
    }
    return RK_OK;
}

int rkm_lines_read_bytes(rkm_lines *l, char *dst, size_t len, rk_error *err)
{
    while (len > 0) { /* each turn takes at least one byte, or fails */
        if (l->start == l->end) {
            ssize_t n = recv(l->fd, l->buf, sizeof l->buf, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return lost(l, n, err);
            l->start = 0;
            l->end = (size_t)n;
        }
        size_t take = l->end - l->start < len ? l->end - l->start : len;
        if (dst)
            memcpy(dst, l->buf + l->start, take);
        dst = dst ? dst + take : NULL;
        l->start += take;
        len -= take;
    }
    return RK_OK;
}
