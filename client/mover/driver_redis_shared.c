/* driver_redis_shared.c — what both files of the Redis driver stand on (driver_redis.c, the
 * copy; driver_redis_weigh.c, the weighing): the connection, the pipelined exchange with its
 * retries, a batch's storage and MEMORY USAGE. Below both, so that neither calls the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "driver_redis_shared.h"

/* rkm_attempt_fn over an rd_conn. */
int rkm_rd_connect(void *conn, rk_error *err)
{
    rd_conn *r = conn;
    unsigned ms = r->ep.opt->timeout_ms;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    r->c = redisConnectWithTimeout(r->ep.host, (int)r->ep.port, tv);
    if (r->c && !r->c->err && redisSetTimeout(r->c, tv) == REDIS_OK)
        return RK_OK;
    rk_error_set(err, RK_EUNREACHABLE, NULL, "%s: cannot connect: %s", r->ep.label,
                 r->c ? r->c->errstr : "out of memory");
    redisFree(r->c);
    r->c = NULL;
    return RK_EUNREACHABLE;
}

void rkm_rd_free_replies(redisReply **replies, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (replies[i])
            freeReplyObject(replies[i]);
        replies[i] = NULL;
    }
}

/* `n` pipelined commands and their replies, as rkm_retry's context. */
typedef struct rd_exchange {
    rd_conn *r;
    size_t n;             /* commands, and replies */
    rd_cmd *cmds;         /* borrowed (hiredis takes argv non-const) */
    redisReply **replies; /* filled; all NULL after a failure */
} rd_exchange;

/* Sends every command, then reads every reply; a failure drops the connection, so that no
 * half-read reply answers the next try. */
static int rd_try_exchange(void *arg, rk_error *err)
{
    rd_exchange *x = arg;
    rd_conn *r = x->r;
    int rc = r->c ? RK_OK : rkm_rd_connect(r, err);
    for (size_t i = 0; rc == RK_OK && i < x->n; i++) {
        rd_cmd *c = &x->cmds[i];
        if (redisAppendCommandArgv(r->c, c->argc, c->long_argv ? c->long_argv : c->argv,
                                   c->long_len ? c->long_len : c->len))
            rc = RK_EUNREACHABLE;
    }
    for (size_t i = 0; rc == RK_OK && i < x->n; i++) {
        void *reply = NULL;
        if (redisGetReply(r->c, &reply) != REDIS_OK)
            rc = RK_EUNREACHABLE;
        x->replies[i] = reply;
    }
    if (rc == RK_OK || !r->c)
        return rc;
    rk_error_set(err, rc, NULL, "%s: connection lost: %s", r->ep.label, r->c->errstr);
    rkm_rd_free_replies(x->replies, x->n);
    redisFree(r->c);
    r->c = NULL;
    return rc;
}

int rkm_rd_run(rd_conn *r, size_t n, rd_cmd *cmds, redisReply **replies, rk_error *err)
{
    rd_exchange x = {.r = r, .n = n, .cmds = cmds, .replies = replies};
    memset(replies, 0, n * sizeof *replies);
    return rkm_retry(r->ep.opt, rd_try_exchange, &x, err);
}

/* RK_EIO naming `cmd`, for a reply it should not have had. */
int rkm_rd_bad_reply(const rd_conn *r, const redisReply *reply, const char *cmd, rk_error *err)
{
    if (reply->type == REDIS_REPLY_ERROR)
        return rk_error_set(err, RK_EIO, NULL, "%s: %s: %.120s", r->ep.label, cmd, reply->str);
    return rk_error_set(err, RK_EIO, NULL, "%s: %s: unexpected reply of type %d", r->ep.label, cmd,
                        reply->type);
}

int rkm_rd_batch_new(rd_batch *b, const rd_conn *r, size_t n, size_t per, rk_error *err)
{
    b->cmds = malloc(n * per * sizeof *b->cmds);
    b->rep = calloc(n * per, sizeof *b->rep);
    b->ttl = malloc(n * sizeof *b->ttl);
    b->at = malloc(n * sizeof *b->at);
    if (b->cmds && b->rep && b->ttl && b->at)
        return RK_OK;
    return rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
}

void rkm_rd_batch_free(rd_batch *b, size_t replies)
{
    if (b->rep)
        rkm_rd_free_replies(b->rep, replies);
    free(b->rep);
    free(b->cmds);
    free(b->ttl);
    free(b->at);
}

rd_cmd rkm_rd_usage_cmd(const rkm_key *k)
{
    return (rd_cmd){.argc = 3,
                    .argv = {"MEMORY", "USAGE", k->key},
                    .len = {strlen("MEMORY"), strlen("USAGE"), k->len}};
}

void rkm_rd_take_size(const rd_conn *r, const redisReply *rep, rkm_value *seen, rkm_result *res)
{
    if (rep->type == REDIS_REPLY_NIL)
        return;
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer < 0) {
        res->rc = rkm_rd_bad_reply(r, rep, "MEMORY USAGE", &res->err);
        return;
    }
    seen->len = (size_t)rep->integer;
    seen->state = seen->len > r->ep.opt->max_value_bytes ? RKM_TOO_BIG : RKM_FOUND;
}

/* Each key's size first (MEMORY USAGE, one pipeline): a value over the cap is RKM_TOO_BIG with
 * that size, and never read. */
int rkm_rd_sizes(rd_conn *r, rd_batch *b, const rkm_key *keys, size_t n, rkm_value *out,
                 rkm_result *res, rk_error *err)
{
    for (size_t i = 0; i < n; i++)
        b->cmds[i] = rkm_rd_usage_cmd(&keys[i]);
    int rc = rkm_rd_run(r, n, b->cmds, b->rep, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        rkm_rd_take_size(r, b->rep[i], &out[i], &res[i]);
    rkm_rd_free_replies(b->rep, n);
    return rc;
}
