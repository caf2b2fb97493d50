/* ask.c — one question to a proxy's socket for the agent: HAProxy's master CLI (a unix socket),
 * nutcracker's stats port (TCP); connect, send, read until the peer closes, all within a
 * deadline. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connected socket to a unix path or HOST:PORT, or -1 with a sentence in msg. */
static int dial(const char *where, char msg[RK_CLI_AGENT_MSG])
{
    if (where[0] == '/') {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = strlen(where) < sizeof sa.sun_path ? socket(AF_UNIX, SOCK_STREAM, 0) : -1;
        if (fd >= 0) {
            memcpy(sa.sun_path, where, strlen(where) + 1);
            if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
                return fd;
            close(fd);
        }
        return snprintf(msg, RK_CLI_AGENT_MSG, "%s: %s", where, strerror(errno)), -1;
    }
    char host[256];
    const char *colon = strrchr(where, ':');
    if (!colon || colon == where || (size_t)(colon - where) >= sizeof host)
        return snprintf(msg, RK_CLI_AGENT_MSG, "%s: not HOST:PORT", where), -1;
    snprintf(host, sizeof host, "%.*s", (int)(colon - where), where);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "%s: %s", where, gai_strerror(rc)), -1;
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        snprintf(msg, RK_CLI_AGENT_MSG, "%s: %s", where, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* A buffer of twice the size (*cap updated), the old one freed when that fails or is over the cap;
 * NULL then. */
static char *grow(char *buf, size_t *cap)
{
    char *more = *cap < RK_CLI_AGENT_ANSWER_MAX ? realloc(buf, *cap * 2) : NULL;
    if (!more)
        free(buf);
    *cap *= 2;
    return more;
}

/* Reads until the peer closes; NULL at the deadline, over the cap or on an error. */
static char *read_all(int fd, long long deadline, const char *where, char msg[RK_CLI_AGENT_MSG])
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf) {
        long long left = deadline - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n == 0) {
            buf[len] = '\0';
            return buf;
        }
        if (n < 0 && errno != EINTR)
            break;
        len += n > 0 ? (size_t)n : 0;
        if (len + 1 == cap)
            buf = grow(buf, &cap);
    }
    snprintf(msg, RK_CLI_AGENT_MSG, "%s: no whole answer within the time given", where);
    free(buf);
    return NULL;
}

char *rk_cli_agent_ask(const char *where, const char *request, long timeout_ms,
                       char msg[RK_CLI_AGENT_MSG])
{
    long long deadline = now_ms() + timeout_ms;
    int fd = dial(where, msg);
    if (fd < 0)
        return NULL;
    size_t len = strlen(request);
    /* the end of the request: HAProxy's master CLI answers one command and closes */
    if ((len && send(fd, request, len, MSG_NOSIGNAL) != (ssize_t)len) || shutdown(fd, SHUT_WR)) {
        snprintf(msg, RK_CLI_AGENT_MSG, "%s: %s", where, strerror(errno));
        close(fd);
        return NULL;
    }
    char *answer = read_all(fd, deadline, where, msg);
    close(fd);
    return answer;
}
