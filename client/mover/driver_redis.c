/* driver_redis.c — the Redis driver, on hiredis: SCAN for the scan (no hints), MEMORY USAGE
 * then PTTL and DUMP for a get (a value over the size cap is never read), RESTORE without REPLACE
 * for add-if-absent (BUSYKEY: present), with REPLACE for a catch-up's put, DEL; a batch's copy
 * server to server by MIGRATE ... COPY. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "net.h"

extern const rkm_driver rkm_driver_redis; /* the table below, which the checksums name */

#define RD_FOOTER   10 /* a DUMP payload ends in its RDB version (2 bytes) and a CRC64 (8) */
#define RD_ARGS_MAX 5  /* RESTORE key ttl payload REPLACE */
/* DUMP replies in one pipeline, by their keys' MEMORY USAGE: a batch of values never all at once */
#define RD_DUMP_BUDGET (8u << 20)

typedef struct rd_conn {
    rkm_endpoint ep;   /* first (rkm_open_conn): where to reconnect */
    redisContext *c;   /* NULL after a failed exchange, until the next reconnects */
    int lfu;           /* whether the server counts reads (an LFU policy): 0 not asked yet, 1, -1 */
    double lfu_factor; /* its lfu-log-factor, when it does */
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

static rd_cmd rd_key_cmd(const char *verb, const char *key, size_t len)
{
    return (rd_cmd){.argc = 2, .argv = {verb, key}, .len = {strlen(verb), len}};
}

/* rkm_attempt_fn over an rd_conn. */
static int rd_connect(void *conn, rk_error *err)
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

static void rd_close(void *conn)
{
    rd_conn *r = conn;
    if (!r)
        return;
    redisFree(r->c);
    free(r);
}

static void *rd_open(const char *addr, const rkm_options *opt, rk_error *err)
{
    static const rkm_opener how = {"redis", sizeof(rd_conn), NULL, rd_connect, rd_close};
    return rkm_open_conn(&how, addr, opt, err);
}

static void rd_free_replies(redisReply **replies, size_t n)
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
    int rc = r->c ? RK_OK : rd_connect(r, err);
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
    rd_free_replies(x->replies, x->n);
    redisFree(r->c);
    r->c = NULL;
    return rc;
}

static int rd_run(rd_conn *r, size_t n, rd_cmd *cmds, redisReply **replies, rk_error *err)
{
    rd_exchange x = {.r = r, .n = n, .cmds = cmds, .replies = replies};
    memset(replies, 0, n * sizeof *replies);
    return rkm_retry(r->ep.opt, rd_try_exchange, &x, err);
}

/* RK_EIO naming `cmd`, for a reply it should not have had. */
static int rd_bad_reply(const rd_conn *r, const redisReply *reply, const char *cmd, rk_error *err)
{
    if (reply->type == REDIS_REPLY_ERROR)
        return rk_error_set(err, RK_EIO, NULL, "%s: %s: %.120s", r->ep.label, cmd, reply->str);
    return rk_error_set(err, RK_EIO, NULL, "%s: %s: unexpected reply of type %d", r->ep.label, cmd,
                        reply->type);
}

/* RK_EIO naming `cmd` unless `reply` is of `type`. */
static int rd_expect(const rd_conn *r, const redisReply *reply, int type, const char *cmd,
                     rk_error *err)
{
    return reply->type == type ? RK_OK : rd_bad_reply(r, reply, cmd, err);
}

/* PTTL's answer for a key that a copy should carry: -1 (no TTL) or > 0; -2 (absent) and 0
 * (expiring now) are not. */
static int rd_live(long long pttl)
{
    return pttl == -1 || pttl > 0;
}

static int rd_take_value(long long pttl, const redisReply *dump, rkm_value *out)
{
    out->data = malloc(dump->len ? dump->len : 1);
    if (!out->data)
        return RK_ENOMEM;
    memcpy(out->data, dump->str, dump->len);
    out->state = RKM_FOUND;
    out->len = dump->len;
    out->ttl_ms = pttl == -1 ? RKM_TTL_NONE : pttl;
    return RK_OK;
}

static void rd_get_cmds(rd_cmd cmds[2], const char *key, size_t len)
{
    cmds[0] = rd_key_cmd("PTTL", key, len);
    cmds[1] = rd_key_cmd("DUMP", key, len);
}

/* A get's replies, PTTL's and DUMP's, into `out`: RK_EIO for replies a get should not have. */
static int rd_read_get(const rd_conn *r, redisReply *const rep[2], rkm_value *out, rk_error *err)
{
    int rc = rd_expect(r, rep[0], REDIS_REPLY_INTEGER, "PTTL", err);
    if (rc == RK_OK && rep[1]->type != REDIS_REPLY_NIL)
        rc = rd_expect(r, rep[1], REDIS_REPLY_STRING, "DUMP", err);
    if (rc == RK_OK && rd_live(rep[0]->integer) && rep[1]->type == REDIS_REPLY_STRING &&
        rd_take_value(rep[0]->integer, rep[1], out) != RK_OK)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
    return rc;
}

/* n keys' commands and replies, `per` of each a key: a batch's storage. */
typedef struct rd_batch {
    rd_cmd *cmds;
    redisReply **rep;
    char (*ttl)[24]; /* RESTORE's TTL arguments */
    size_t *at;      /* a pipeline's keys' places in the batch */
} rd_batch;

static int rd_batch_new(rd_batch *b, const rd_conn *r, size_t n, size_t per, rk_error *err)
{
    b->cmds = malloc(n * per * sizeof *b->cmds);
    b->rep = calloc(n * per, sizeof *b->rep);
    b->ttl = malloc(n * sizeof *b->ttl);
    b->at = malloc(n * sizeof *b->at);
    if (b->cmds && b->rep && b->ttl && b->at)
        return RK_OK;
    return rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
}

static void rd_batch_free(rd_batch *b, size_t replies)
{
    if (b->rep)
        rd_free_replies(b->rep, replies);
    free(b->rep);
    free(b->cmds);
    free(b->ttl);
    free(b->at);
}

static rd_cmd rd_usage_cmd(const rkm_key *k)
{
    return (rd_cmd){.argc = 3,
                    .argv = {"MEMORY", "USAGE", k->key},
                    .len = {strlen("MEMORY"), strlen("USAGE"), k->len}};
}

/* What a key's MEMORY USAGE says: absent (nil), or its size against the cap. */
static void rd_take_size(const rd_conn *r, const redisReply *rep, rkm_value *seen, rkm_result *res)
{
    if (rep->type == REDIS_REPLY_NIL)
        return;
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer < 0) {
        res->rc = rd_bad_reply(r, rep, "MEMORY USAGE", &res->err);
        return;
    }
    seen->len = (size_t)rep->integer;
    seen->state = seen->len > r->ep.opt->max_value_bytes ? RKM_TOO_BIG : RKM_FOUND;
}

/* Each key's size first (MEMORY USAGE, one pipeline): a value over the cap is RKM_TOO_BIG with
 * that size, and never read. */
static int rd_sizes(rd_conn *r, rd_batch *b, const rkm_key *keys, size_t n, rkm_value *out,
                    rkm_result *res, rk_error *err)
{
    for (size_t i = 0; i < n; i++)
        b->cmds[i] = rd_usage_cmd(&keys[i]);
    int rc = rd_run(r, n, b->cmds, b->rep, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        rd_take_size(r, b->rep[i], &out[i], &res[i]);
    rd_free_replies(b->rep, n);
    return rc;
}

/* PTTL and DUMP of the keys from `from` on that are within the cap, as many as fit in
 * RD_DUMP_BUDGET by their sizes, in one pipeline: a key gone between them reads as absent. *to
 * is past the last key looked at. */
static int rd_dump_some(rd_conn *r, rd_batch *b, const rkm_key *keys, size_t from, size_t n,
                        size_t *to, rkm_value *out, rkm_result *res, rk_error *err)
{
    size_t m = 0, bytes = 0, i = from;
    for (; i < n && (m == 0 || bytes + out[i].len <= RD_DUMP_BUDGET); i++) {
        if (res[i].rc != RK_OK || out[i].state != RKM_FOUND)
            continue;
        bytes += out[i].len;
        rd_get_cmds(&b->cmds[2 * m], keys[i].key, keys[i].len);
        b->at[m++] = i;
    }
    *to = i;
    int rc = m ? rd_run(r, 2 * m, b->cmds, b->rep, err) : RK_OK;
    for (size_t k = 0; rc == RK_OK && k < m; k++) {
        rkm_value *v = &out[b->at[k]];
        rkm_value_init(v); /* the size was a guess: what DUMP reads is the value */
        res[b->at[k]].rc = rd_read_get(r, &b->rep[2 * k], v, &res[b->at[k]].err);
        if (res[b->at[k]].rc == RK_ENOMEM)
            rc = rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
    }
    rd_free_replies(b->rep, 2 * m);
    return rc;
}

/* Every key's size, then the values within the cap, RD_DUMP_BUDGET of them at a time: the
 * worker's memory stays bounded whatever the values. */
static int rd_get_many(void *conn, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                       rk_error *err)
{
    rd_conn *r = conn;
    rd_batch b;
    int rc = rd_batch_new(&b, r, n ? n : 1, 2, err);
    if (rc == RK_OK)
        rc = rd_sizes(r, &b, keys, n, out, res, err);
    for (size_t i = 0, to = 0; rc == RK_OK && i < n; i = to)
        rc = rd_dump_some(r, &b, keys, i, n, &to, out, res, err);
    rd_batch_free(&b, 0);
    return rc;
}

static int rd_get(void *conn, const char *key, size_t len, rkm_value *out, rk_error *err)
{
    rkm_key k = {.key = key, .len = len, .ttl_ms = RKM_TTL_NONE};
    rkm_result res = {.rc = RK_OK};
    int rc = rd_get_many(conn, &k, 1, out, &res, err);
    if (rc == RK_OK && res.rc != RK_OK && err)
        *err = res.err;
    return rc == RK_OK ? res.rc : rc;
}

/* RESTORE key ttl payload, with REPLACE for a catch-up's put, without it for add-if-absent. */
static rd_cmd rd_restore_cmd(const char *key, size_t len, const rkm_value *v, char ttl[24],
                             bool replace)
{
    snprintf(ttl, 24, "%" PRId64, v->ttl_ms == RKM_TTL_NONE ? 0 : v->ttl_ms); /* 0: none */
    return (rd_cmd){.argc = replace ? 5 : 4,
                    .argv = {"RESTORE", key, ttl, v->data, "REPLACE"},
                    .len = {strlen("RESTORE"), len, strlen(ttl), v->len, strlen("REPLACE")}};
}

/* RESTORE's reply: add-if-absent's (added set) takes BUSYKEY as present. */
static int rd_restore_reply(const rd_conn *r, const redisReply *rep, rkm_added *added,
                            rk_error *err)
{
    if (added)
        *added = RKM_COPIED;
    if (added && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYKEY", 7) == 0) {
        *added = RKM_PRESENT; /* no REPLACE: the value there stays */
        return RK_OK;
    }
    return rd_expect(r, rep, REDIS_REPLY_STATUS, "RESTORE", err);
}

/* With REPLACE for a catch-up's put (added NULL), without it for add-if-absent. */
static int rd_restore(rd_conn *r, const char *key, size_t len, const rkm_value *v, rkm_added *added,
                      rk_error *err)
{
    char ttl[24];
    rd_cmd cmd = rd_restore_cmd(key, len, v, ttl, added == NULL);
    redisReply *rep;
    int rc = rd_run(r, 1, &cmd, &rep, err);
    if (rc == RK_OK)
        rc = rd_restore_reply(r, rep, added, err);
    rd_free_replies(&rep, 1);
    return rc;
}

/* Every key's RESTORE (no REPLACE) in one pipeline. */
static int rd_add_many(void *conn, const rkm_key *keys, const rkm_value *values, size_t n,
                       rkm_added *added, rkm_result *res, rk_error *err)
{
    rd_conn *r = conn;
    rd_batch b;
    int rc = rd_batch_new(&b, r, n, 1, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        b.cmds[i] = rd_restore_cmd(keys[i].key, keys[i].len, &values[i], b.ttl[i], false);
    if (rc == RK_OK)
        rc = rd_run(r, n, b.cmds, b.rep, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        res[i].rc = rd_restore_reply(r, b.rep[i], &added[i], &res[i].err);
    rd_batch_free(&b, n);
    return rc;
}

static int rd_add_if_absent(void *conn, const char *key, size_t len, const rkm_value *v,
                            rkm_added *added, rk_error *err)
{
    return rd_restore(conn, key, len, v, added, err);
}

static int rd_put(void *conn, const char *key, size_t len, const rkm_value *v, rk_error *err)
{
    return rd_restore(conn, key, len, v, NULL, err);
}

static int rd_delete(void *conn, const char *key, size_t len, rk_error *err)
{
    rd_conn *r = conn;
    rd_cmd cmd = rd_key_cmd("DEL", key, len);
    redisReply *rep;
    int rc = rd_run(r, 1, &cmd, &rep, err);
    if (rc == RK_OK)
        rc = rd_expect(r, rep, REDIS_REPLY_INTEGER, "DEL", err);
    rd_free_replies(&rep, 1);
    return rc;
}

/* XXH3-64 of the DUMP payload without its footer, so that servers of two Redis versions agree
 * on a value they encode alike; one encoded otherwise (other *-max-listpack-* settings) differs. */
static int rd_checksum(void *conn, const char *key, size_t len, rkm_sum *out, rk_error *err)
{
    return rkm_sum_by_get(&rkm_driver_redis, conn, key, len, RD_FOOTER, out, err);
}

/* ---- server to server: MIGRATE ... COPY without REPLACE ---- */

#define RD_MIGRATE_ARGS 8 /* MIGRATE host port "" 0 timeout COPY KEYS, then the keys */

/* Each key's size on the source (into seen[i]) and whether the destination has it (added[i]):
 * two pipelines. `take[i]` says whether MIGRATE should copy it. */
static int rd_survey(rd_conn *s, rd_conn *d, const rkm_key *keys, size_t n, rkm_value *seen,
                     rkm_added *added, rkm_result *res, bool *take, rk_error *err)
{
    rd_batch b;
    int rc = rd_batch_new(&b, s, n, 2, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        b.cmds[i] = rd_usage_cmd(&keys[i]);
        b.cmds[n + i] = rd_key_cmd("EXISTS", keys[i].key, keys[i].len);
    }
    if (rc == RK_OK)
        rc = rd_run(s, n, b.cmds, b.rep, err);
    if (rc == RK_OK)
        rc = rd_run(d, n, b.cmds + n, b.rep + n, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        rd_take_size(s, b.rep[i], &seen[i], &res[i]);
        if (res[i].rc == RK_OK)
            res[i].rc = rd_expect(d, b.rep[n + i], REDIS_REPLY_INTEGER, "EXISTS", &res[i].err);
        added[i] = res[i].rc == RK_OK && b.rep[n + i]->integer ? RKM_PRESENT : RKM_COPIED;
        take[i] = res[i].rc == RK_OK && seen[i].state == RKM_FOUND && added[i] == RKM_COPIED;
    }
    rd_batch_free(&b, 2 * n);
    return rc;
}

/* MIGRATE's answer for the keys taken: OK; NOKEY (all gone meanwhile: absent); BUSYKEY (a
 * client wrote one since the survey: that value stays, the others were copied); IOERR (the
 * source cannot reach the destination, or timed out): the batch's failure, a person's to look at
 * (--relay copies through the worker instead). */
static int rd_migrated(const rd_conn *s, const rd_conn *d, const redisReply *rep, size_t n,
                       const bool *take, rkm_value *seen, rkm_result *res, rk_error *err)
{
    if (rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "NOKEY") == 0)
        for (size_t i = 0; i < n; i++)
            seen[i].state = take[i] ? RKM_ABSENT : seen[i].state;
    if (rep->type == REDIS_REPLY_STATUS ||
        (rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "BUSYKEY")))
        return RK_OK;
    if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "IOERR", 5) == 0)
        return rk_error_set(err, RK_EUNREACHABLE, NULL,
                            "%s: MIGRATE to %s:%u: %.120s (can the source reach the new owner at "
                            "its addr? --relay copies through the worker)",
                            s->ep.label, d->ep.host, d->ep.port, rep->str);
    for (size_t i = 0; i < n; i++)
        if (take[i])
            res[i].rc = rd_bad_reply(s, rep, "MIGRATE", &res[i].err);
    return RK_OK;
}

/* The taken keys in one MIGRATE, from the source straight to the destination. */
static int rd_migrate(rd_conn *s, const rd_conn *d, const rkm_key *keys, size_t n, const bool *take,
                      rkm_value *seen, rkm_result *res, rk_error *err)
{
    const char **argv = malloc((RD_MIGRATE_ARGS + n) * sizeof *argv);
    size_t *len = malloc((RD_MIGRATE_ARGS + n) * sizeof *len);
    char port[16], timeout[16];
    snprintf(port, sizeof port, "%u", d->ep.port);
    snprintf(timeout, sizeof timeout, "%u", s->ep.opt->timeout_ms);
    const char *head[RD_MIGRATE_ARGS] = {"MIGRATE", d->ep.host, port,   "",
                                         "0",       timeout,    "COPY", "KEYS"};
    int m = RD_MIGRATE_ARGS,
        rc = argv && len ? RK_OK : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    for (int i = 0; rc == RK_OK && i < RD_MIGRATE_ARGS; i++) {
        argv[i] = head[i];
        len[i] = strlen(head[i]);
    }
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        if (take[i]) {
            argv[m] = keys[i].key;
            len[m++] = keys[i].len;
        }
    rd_cmd cmd = {.argc = m, .long_argv = argv, .long_len = len};
    redisReply *rep = NULL;
    if (rc == RK_OK && m > RD_MIGRATE_ARGS)
        rc = rd_run(s, 1, &cmd, &rep, err);
    if (rc == RK_OK && rep)
        rc = rd_migrated(s, d, rep, n, take, seen, res, err);
    if (rep)
        freeReplyObject(rep);
    free(argv);
    free(len);
    return rc;
}

/* Copies keys[0 .. n) from `src` to `dest` without the values passing through the worker: the
 * sizes (the cap) and presence first, then MIGRATE ... COPY of the rest. seen[i] says what the
 * source had (its size as MEMORY USAGE counts it), added[i] whether it was copied. */
static int rd_copy_many(void *src, void *dest, const rkm_key *keys, size_t n, rkm_value *seen,
                        rkm_added *added, rkm_result *res, rk_error *err)
{
    bool *take = calloc(n ? n : 1, sizeof *take);
    int rc = take ? rd_survey(src, dest, keys, n, seen, added, res, take, err)
                  : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    if (rc == RK_OK)
        rc = rd_migrate(src, dest, keys, n, take, seen, res, err);
    free(take);
    return rc;
}

/* ---- the scan ---- */

/* [cursor, [key, ...]], the keys as strings. */
static int rd_check_scan(const rd_conn *r, const redisReply *rep, rk_error *err)
{
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
             rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len < RKM_CURSOR_MAX &&
             rep->element[1]->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; ok && i < rep->element[1]->elements; i++)
        ok = rep->element[1]->element[i]->type == REDIS_REPLY_STRING;
    return ok ? RK_OK : rd_bad_reply(r, rep, "SCAN", err);
}

/* The keys to the callback, without TTL or size hints: asking for them would cost a command per
 * key scanned, and most do not move. SCAN itself leaves out keys already expired; one that expires
 * since is found absent by the copy's get. */
static int rd_pass_keys(const redisReply *keys, rkm_key_fn fn, void *ctx, rk_error *err)
{
    int rc = RK_OK;
    for (size_t i = 0; rc == RK_OK && i < keys->elements; i++) {
        rkm_key k = {
            .key = keys->element[i]->str, .len = keys->element[i]->len, .ttl_ms = RKM_TTL_NONE};
        rc = fn(ctx, &k, err);
    }
    return rc;
}

/* The cursor moves only when the whole batch went to the callback: after a failure the next
 * step asks SCAN for the same batch again. */
static int rd_scan(void *conn, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx,
                   rk_error *err)
{
    rd_conn *r = conn;
    char n[24];
    const char *at = cursor->pos[0] ? cursor->pos : "0";
    snprintf(n, sizeof n, "%zu", count);
    rd_cmd cmd = {.argc = 4,
                  .argv = {"SCAN", at, "COUNT", n},
                  .len = {strlen("SCAN"), strlen(at), strlen("COUNT"), strlen(n)}};
    redisReply *rep;
    int rc = rd_run(r, 1, &cmd, &rep, err);
    if (rc != RK_OK)
        return rc;
    rc = rd_check_scan(r, rep, err);
    if (rc == RK_OK && rep->element[1]->elements > 0)
        rc = rd_pass_keys(rep->element[1], fn, ctx, err);
    if (rc == RK_OK) {
        snprintf(cursor->pos, sizeof cursor->pos, "%s", rep->element[0]->str);
        cursor->done = strcmp(cursor->pos, "0") == 0;
    }
    freeReplyObject(rep);
    return rc;
}

/* MEMORY USAGE of each key, one pipeline: its value, its key and their overhead, as Redis counts
 * them (used_memory also counts the key space's hash table, which no key is charged). */
static int rd_sizes_many(void *conn, const rkm_key *keys, size_t n, uint64_t *bytes,
                         rkm_result *res, rk_error *err)
{
    rd_conn *r = conn;
    rd_batch b;
    rkm_value *seen = malloc((n ? n : 1) * sizeof *seen);
    int rc = seen ? rd_batch_new(&b, r, n ? n : 1, 1, err)
                  : rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
    for (size_t i = 0; seen && i < n; i++)
        rkm_value_init(&seen[i]);
    if (rc == RK_OK)
        rc = rd_sizes(r, &b, keys, n, seen, res, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        bytes[i] = seen[i].state == RKM_ABSENT ? 0 : seen[i].len;
    if (seen)
        rd_batch_free(&b, 0);
    free(seen);
    return rc;
}

/* Whether the server keeps LFU counters (its maxmemory-policy), and their log factor, into r. A
 * server that will not say (CONFIG renamed or denied) keeps none as far as we know. */
static int rd_ask_lfu(rd_conn *r, rk_error *err)
{
    rd_cmd cmds[2] = {{.argc = 3,
                       .argv = {"CONFIG", "GET", "maxmemory-policy"},
                       .len = {strlen("CONFIG"), strlen("GET"), strlen("maxmemory-policy")}},
                      {.argc = 3,
                       .argv = {"CONFIG", "GET", "lfu-log-factor"},
                       .len = {strlen("CONFIG"), strlen("GET"), strlen("lfu-log-factor")}}};
    redisReply *rep[2] = {NULL, NULL};
    int rc = rd_run(r, 2, cmds, rep, err);
    if (rc != RK_OK)
        return rc;
    int pair = rep[0]->type == REDIS_REPLY_ARRAY && rep[0]->elements == 2 &&
               rep[1]->type == REDIS_REPLY_ARRAY && rep[1]->elements == 2 &&
               rep[0]->element[1]->type == REDIS_REPLY_STRING &&
               rep[1]->element[1]->type == REDIS_REPLY_STRING;
    r->lfu = pair && strstr(rep[0]->element[1]->str, "lfu") ? 1 : -1;
    r->lfu_factor = pair ? strtod(rep[1]->element[1]->str, NULL) : 0;
    rd_free_replies(rep, 2);
    return RK_OK;
}

/* The reads behind an LFU counter (OBJECT FREQ). A key starts at LFU_INIT_VAL, 5, and a read
 * raises counter c with probability 1 / ((c - 5) * factor + 1) (Redis's LFULogIncr), so reaching
 * 5 + k takes k + factor * k * (k - 1) / 2 reads on average; idle minutes lower the counter
 * (lfu-decay-time), so this is a heat, reads net of their decay. */
static double rd_lfu_reads(long long counter, double factor)
{
    double k = counter > 5 ? (double)(counter - 5) : 0;
    return k + factor * k * (k - 1) / 2;
}

/* OBJECT FREQ of each key, one pipeline, on a server with an LFU policy. */
static int rd_hits_many(void *conn, const rkm_key *keys, size_t n, double *hits, rk_error *err)
{
    rd_conn *r = conn;
    int rc = r->lfu ? RK_OK : rd_ask_lfu(r, err);
    if (rc != RK_OK || r->lfu < 0 || n == 0)
        return rc;
    rd_batch b;
    rc = rd_batch_new(&b, r, n, 1, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        b.cmds[i] = (rd_cmd){.argc = 3,
                             .argv = {"OBJECT", "FREQ", keys[i].key},
                             .len = {strlen("OBJECT"), strlen("FREQ"), keys[i].len}};
    rc = rc ? rc : rd_run(r, n, b.cmds, b.rep, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        if (b.rep[i]->type == REDIS_REPLY_INTEGER && b.rep[i]->integer >= 0)
            hits[i] = rd_lfu_reads(b.rep[i]->integer, r->lfu_factor);
    rd_batch_free(&b, rc == RK_OK ? n : 0);
    return rc;
}

static int rd_checksum_many(void *conn, const rkm_key *keys, size_t n, rkm_sum *out,
                            rkm_result *res, rk_error *err)
{
    return rkm_sum_many_by_get(&rkm_driver_redis, conn, keys, n, RD_FOOTER, out, res, err);
}

const rkm_driver rkm_driver_redis = {
    .name = "redis",
    .open = rd_open,
    .close = rd_close,
    .scan = rd_scan,
    .get = rd_get,
    .add_if_absent = rd_add_if_absent,
    .put = rd_put,
    .del = rd_delete,
    .checksum = rd_checksum,
    .get_many = rd_get_many,
    .add_many = rd_add_many,
    .checksum_many = rd_checksum_many,
    .copy_many = rd_copy_many,
    .sizes_many = rd_sizes_many,
    .hits_many = rd_hits_many,
};
