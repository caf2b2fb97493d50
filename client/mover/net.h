/* net.h — how the mover's drivers reach a data server: "host:port", the open they share, bounded
 * retries with doubling backoff, and the plain TCP line reader for the text protocol parts no
 * client library offers. Internal to the mover (rkm_ prefix). Nothing here is shared between
 * threads. */
#ifndef RKM_NET_H
#define RKM_NET_H

#include <stddef.h>

#include "driver.h"

#define RKM_HOST_MAX  256  /* bytes of a host name, its NUL included */
#define RKM_LABEL_MAX 300  /* "<store> <host>:<port>", how messages name a data server */
#define RKM_LINE_MAX  4096 /* the longest protocol line read, its CRLF included */

/* Splits `addr` ("host:port", "[v6]:port") into host (RKM_HOST_MAX bytes) and port. RK_EINVAL
 * with a message naming `addr` when it is not one. */
int rkm_addr_parse(const char *addr, char *host, unsigned *port, rk_error *err);

/* Where a driver's connection goes, and how it tries: the first member of every driver's
 * connection (rkm_open_conn makes it). */
typedef struct rkm_endpoint {
    const rkm_options *opt;    /* borrowed from the rkm_conn */
    char host[RKM_HOST_MAX];   /* from the address */
    unsigned port;             /* with host */
    char label[RKM_LABEL_MAX]; /* "<store> host:port", how messages name the server */
} rkm_endpoint;

/* One try at something a data server does. RK_EUNREACHABLE means "the connection failed, try
 * again"; any other code is final. */
typedef int (*rkm_attempt_fn)(void *ctx, rk_error *err);

/* Runs `attempt` until it returns anything but RK_EUNREACHABLE, at most opt->tries times, waiting
 * opt->backoff_ms after the first failure and twice as long after each next one (each wait at
 * most RKM_MAX_BACKOFF_MS). When every try failed, the last message gets " (N tries)" added.
 * Only idempotent work may be retried: the drivers' reads, and their add-if-absent, whose retry
 * after a lost answer says "present". */
int rkm_retry(const rkm_options *opt, rkm_attempt_fn attempt, void *ctx, rk_error *err);

/* How a driver opens a connection: a struct of `size` bytes whose first member is its
 * rkm_endpoint, `setup` (NULL: none) before the first try, `connect` tried under rkm_retry, and
 * `close`, which frees one however far its open got. */
typedef struct rkm_opener {
    const char *store; /* the label's first word: "memcached" */
    size_t size;
    int (*setup)(void *conn, rk_error *err);
    rkm_attempt_fn connect;
    void (*close)(void *conn);
} rkm_opener;

/* The one open of every driver: a zeroed connection of how->size bytes, its endpoint filled from
 * `addr` and `opt` (borrowed for the connection's life), set up and connected. New (free with
 * how->close), or NULL with err set: RK_ENOMEM, RK_EINVAL for an address that is not one, or
 * the setup's or the last try's error. */
void *rkm_open_conn(const rkm_opener *how, const char *addr, const rkm_options *opt, rk_error *err);

/* A TCP connection read line by line through one fixed buffer. */
typedef struct rkm_lines rkm_lines;

/* Connects to host:port within timeout_ms, which also bounds each later read and write: *out is
 * new (free with rkm_lines_free). RK_EUNREACHABLE or RK_ENOMEM with *out NULL otherwise. `label`
 * (copied) starts every message about this connection. */
int rkm_lines_connect(rkm_lines **out, const char *label, const char *host, unsigned port,
                      unsigned timeout_ms, rk_error *err) RK_MUST_CHECK;
/* NULL is allowed. */
void rkm_lines_free(rkm_lines *l);

/* Sends all `len` bytes; RK_EUNREACHABLE when the connection failed. */
int rkm_lines_send(rkm_lines *l, const char *data, size_t len, rk_error *err);

/* The next line, its "\n" or "\r\n" cut off and replaced by a NUL: *line is borrowed until the
 * next call. RK_EUNREACHABLE when the connection failed or closed, RK_ETOOLARGE for a line over
 * RKM_LINE_MAX. */
int rkm_lines_read(rkm_lines *l, char **line, size_t *len, rk_error *err);

/* The next `len` bytes, buffered ones first, into dst (NULL: read and dropped): a value's data
 * block. RK_EUNREACHABLE when the connection failed or closed. */
int rkm_lines_read_bytes(rkm_lines *l, char *dst, size_t len, rk_error *err);

#endif
