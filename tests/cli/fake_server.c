/* fake_server.c — a stand-in for a hostile ringkeeperd in the CLI tests: answers every request
 * with one status and one body, whatever was asked, so the CLI's handling of what a server says
 * (error messages, fields, tables, documents) can be tested with bytes no real server sends.
 * usage: fake_server STATUS BODY   (prints "listening on port N", serves until SIGTERM)
 *        fake_server stall         (listens, never accepts: the kernel completes the handshake,
 *                                   the request is sent, no answer ever comes; for --timeout) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

static unsigned status;
static const char *body;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    if (!*state) { /* the first call only announces the request; its body follows */
        *state = c;
        return MHD_YES;
    }
    if (*upload_len) {
        *upload_len = 0;
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* A loopback socket that listens and is never accepted from; its port, or 0. */
static unsigned stall_socket(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 16) ||
        getsockname(fd, (struct sockaddr *)&sa, &len))
        return 0;
    return ntohs(sa.sin_port);
}

/* The daemon answering every request with status and body; its port, or 0. */
static unsigned answering_daemon(struct MHD_Daemon **d)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, NULL,
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
    const union MHD_DaemonInfo *info =
        *d ? MHD_get_daemon_info(*d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    return info ? info->port : 0;
}

int main(int argc, char **argv)
{
    int stall = argc == 2 && strcmp(argv[1], "stall") == 0;
    if (!stall && (argc != 3 || !(status = (unsigned)atoi(argv[1])))) {
        fprintf(stderr, "usage: fake_server STATUS BODY | fake_server stall\n");
        return 2;
    }
    body = stall ? NULL : argv[2];
    struct MHD_Daemon *d = NULL;
    unsigned port = stall ? stall_socket() : answering_daemon(&d);
    if (!port)
        return 1;
    printf("listening on port %u\n", port);
    fflush(stdout);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    int sig;
    sigwait(&term, &sig);
    if (d)
        MHD_stop_daemon(d);
    return 0;
}
