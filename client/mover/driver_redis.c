/* driver_redis.c — the Redis driver, on hiredis: SCAN for the scan (no hints), MEMORY USAGE
 * then PTTL and DUMP for a get (a value over the size cap is never read), RESTORE without REPLACE
 * for add-if-absent (BUSYKEY: present), with REPLACE for a catch-up's put, DEL; a batch's copy
 * server to server by MIGRATE ... COPY. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "driver_redis_shared.h"

extern const rkm_driver rkm_driver_redis; /* the table below, which the checksums name */

#define RD_FOOTER 10 /* a DUMP payload ends in its RDB version (2 bytes) and a CRC64 (8) */
/* DUMP replies in one pipeline, by their keys' MEMORY USAGE: a batch of values never all at once */
#define RD_DUMP_BUDGET (8u << 20)

static rd_cmd rd_key_cmd(const char *verb, const char *key, size_t len)
{
    return (rd_cmd){.argc = 2, .argv = {verb, key}, .len = {strlen(verb), len}};
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
    static const rkm_opener how = {"redis", sizeof(rd_conn), NULL, rkm_rd_connect, rd_close};
    return rkm_open_conn(&how, addr, opt, err);
}

/* RK_EIO naming `cmd` unless `reply` is of `type`. */
static int rd_expect(const rd_conn *r, const redisReply *reply, int type, const char *cmd,
                     rk_error *err)
{
    return reply->type == type ? RK_OK : rkm_rd_bad_reply(r, reply, cmd, err);
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
    int rc = m ? rkm_rd_run(r, 2 * m, b->cmds, b->rep, err) : RK_OK;
    for (size_t k = 0; rc == RK_OK && k < m; k++) {
        rkm_value *v = &out[b->at[k]];
        rkm_value_init(v); /* the size was a guess: what DUMP reads is the value */
        res[b->at[k]].rc = rd_read_get(r, &b->rep[2 * k], v, &res[b->at[k]].err);
        if (res[b->at[k]].rc == RK_ENOMEM)
            rc = rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
    }
    rkm_rd_free_replies(b->rep, 2 * m);
    return rc;
}

/* Every key's size, then the values within the cap, RD_DUMP_BUDGET of them at a time: the
 * worker's memory stays bounded whatever the values. */
static int rd_get_many(void *conn, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                       rk_error *err)
{
    rd_conn *r = conn;
    rd_batch b;
    int rc = rkm_rd_batch_new(&b, r, n ? n : 1, 2, err);
    if (rc == RK_OK)
        rc = rkm_rd_sizes(r, &b, keys, n, out, res, err);
    for (size_t i = 0, to = 0; rc == RK_OK && i < n; i = to)
        rc = rd_dump_some(r, &b, keys, i, n, &to, out, res, err);
    rkm_rd_batch_free(&b, 0);
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
    int rc = rkm_rd_run(r, 1, &cmd, &rep, err);
    if (rc == RK_OK)
        rc = rd_restore_reply(r, rep, added, err);
    rkm_rd_free_replies(&rep, 1);
    return rc;
}

/* Every key's RESTORE (no REPLACE) in one pipeline. */
static int rd_add_many(void *conn, const rkm_key *keys, const rkm_value *values, size_t n,
                       rkm_added *added, rkm_result *res, rk_error *err)
{
    rd_conn *r = conn;
    rd_batch b;
    int rc = rkm_rd_batch_new(&b, r, n, 1, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        b.cmds[i] = rd_restore_cmd(keys[i].key, keys[i].len, &values[i], b.ttl[i], false);
    if (rc == RK_OK)
        rc = rkm_rd_run(r, n, b.cmds, b.rep, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        res[i].rc = rd_restore_reply(r, b.rep[i], &added[i], &res[i].err);
    rkm_rd_batch_free(&b, n);
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
    int rc = rkm_rd_run(r, 1, &cmd, &rep, err);
    if (rc == RK_OK)
        rc = rd_expect(r, rep, REDIS_REPLY_INTEGER, "DEL", err);
    rkm_rd_free_replies(&rep, 1);
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
    int rc = rkm_rd_batch_new(&b, s, n, 2, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        b.cmds[i] = rkm_rd_usage_cmd(&keys[i]);
        b.cmds[n + i] = rd_key_cmd("EXISTS", keys[i].key, keys[i].len);
    }
    if (rc == RK_OK)
        rc = rkm_rd_run(s, n, b.cmds, b.rep, err);
    if (rc == RK_OK)
        rc = rkm_rd_run(d, n, b.cmds + n, b.rep + n, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        rkm_rd_take_size(s, b.rep[i], &seen[i], &res[i]);
        if (res[i].rc == RK_OK)
            res[i].rc = rd_expect(d, b.rep[n + i], REDIS_REPLY_INTEGER, "EXISTS", &res[i].err);
        added[i] = res[i].rc == RK_OK && b.rep[n + i]->integer ? RKM_PRESENT : RKM_COPIED;
        take[i] = res[i].rc == RK_OK && seen[i].state == RKM_FOUND && added[i] == RKM_COPIED;
    }
    rkm_rd_batch_free(&b, 2 * n);
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
            res[i].rc = rkm_rd_bad_reply(s, rep, "MIGRATE", &res[i].err);
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
        rc = rkm_rd_run(s, 1, &cmd, &rep, err);
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
    return ok ? RK_OK : rkm_rd_bad_reply(r, rep, "SCAN", err);
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
    int rc = rkm_rd_run(r, 1, &cmd, &rep, err);
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
    .sizes_many = rkm_rd_sizes_many,
    .hits_many = rkm_rd_hits_many,
};
