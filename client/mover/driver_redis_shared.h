/* driver_redis_shared.h — what the two files of the Redis driver share (driver_redis.c: the
 * connection, the copy's operations and the table; driver_redis_weigh.c: what `ringkeeper
 * measure` asks, sizes and reads) over driver_redis_shared.c (the pipelined exchange and MEMORY
 * USAGE): the connection's state and the calls from one file to the one below. Not used outside
 * client/mover/driver_redis*.c. */
#ifndef RKM_DRIVER_REDIS_SHARED_H
#define RKM_DRIVER_REDIS_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "net.h"

#define RD_ARGS_MAX 5 /* RESTORE key ttl payload REPLACE */

/* One Redis server: the `conn` of every operation of rkm_driver_redis. */
typedef struct rd_conn {
    rkm_endpoint ep;   /* first (rkm_open_conn): where to reconnect */
    redisContext *c;   /* NULL after a failed exchange, until the next reconnects */
    int lfu;           /* whether the server counts reads (an LFU policy): 0 not asked yet, 1, -1 */
    double lfu_factor; /* its lfu-log-factor, when it does */
    int tables;        /* whether table_share is known: 0 not asked yet, 1, -1 */
    double table_share; /* bytes of the key space's tables each key stands for (weigh.c) */
    double share_owed;  /* the fraction of a byte of that share not yet charged to a key */
} rd_conn;

/* One command, binary-safe: keys and payloads may hold any byte. A longer one (MIGRATE's key
 * list) lends its arguments in `long_argv` and `long_len` instead. */
typedef struct rd_cmd {
    int argc;
    const char *argv[RD_ARGS_MAX];
    size_t len[RD_ARGS_MAX];
    const char **long_argv;
    const size_t *long_len;
} rd_cmd;

/* n keys' commands and replies, `per` of each a key: a batch's storage. */
typedef struct rd_batch {
    rd_cmd *cmds;
    redisReply **rep;
    char (*ttl)[24]; /* RESTORE's TTL arguments */
    size_t *at;      /* a pipeline's keys' places in the batch */
} rd_batch;

/* rkm_attempt_fn over an rd_conn: connects r->c. */
int rkm_rd_connect(void *conn, rk_error *err);
/* Frees replies[0 .. n) and sets them NULL. */
void rkm_rd_free_replies(redisReply **replies, size_t n);
/* Sends cmds[0 .. n) in one pipeline and reads their n replies into `replies` (the caller's to
 * free with rkm_rd_free_replies), retried as r->ep.opt says. */
int rkm_rd_run(rd_conn *r, size_t n, rd_cmd *cmds, redisReply **replies, rk_error *err);
/* RK_EIO naming `cmd`, for a reply it should not have had. */
int rkm_rd_bad_reply(const rd_conn *r, const redisReply *reply, const char *cmd, rk_error *err);
/* A batch for n keys of `per` commands each; rkm_rd_batch_free frees it, and its first `replies`
 * replies, even after a failed new. */
int rkm_rd_batch_new(rd_batch *b, const rd_conn *r, size_t n, size_t per, rk_error *err);
void rkm_rd_batch_free(rd_batch *b, size_t replies);
/* MEMORY USAGE of key k, as a command. */
rd_cmd rkm_rd_usage_cmd(const rkm_key *k);
/* What a key's MEMORY USAGE says into *seen: absent (nil: left as it was), or its size against
 * the cap; a bad reply is res's. */
void rkm_rd_take_size(const rd_conn *r, const redisReply *rep, rkm_value *seen, rkm_result *res);
/* MEMORY USAGE of keys[0 .. n), one pipeline, into out[i]: absent (left as rkm_value_init left
 * it), or found with that size, RKM_TOO_BIG over the cap; a bad reply is res[i]'s. */
int rkm_rd_sizes(rd_conn *r, rd_batch *b, const rkm_key *keys, size_t n, rkm_value *out,
                 rkm_result *res, rk_error *err);

/* ---- driver_redis_weigh.c: rkm_driver_redis's sizes_many and hits_many ---- */

int rkm_rd_sizes_many(void *conn, const rkm_key *keys, size_t n, uint64_t *bytes, rkm_result *res,
                      rk_error *err);
int rkm_rd_hits_many(void *conn, const rkm_key *keys, size_t n, double *hits, rk_error *err);

#endif
