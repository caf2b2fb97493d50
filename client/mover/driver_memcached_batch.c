/* driver_memcached_batch.c — the memcached driver's batches (get_many, add_many,
 * checksum_many), pipelined on the hand-written connection (mc_conn.meta): meta gets
 * "mg <key> t f v" and adds, many sent before their answers are read, each key's answer its own
 * outcome. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_memcached_shared.h"

#define MC_PIPE_BYTES                                                                              \
    (16 * 1024)            /* commands sent before their answers are read: less than               \
                              the sockets' buffers take, so that neither side waits */
#define MC_PIPE_KEYS  1000 /* adds sent before their answers (12 bytes each) are read */
#define MC_HEADER_MAX (MC_KEY_MAX + 64) /* "add <key> <flags> <exptime> <bytes>\r\n" */

/* A batch of keys, as rkm_retry's context: get_many fills out, add_many writes in. */
typedef struct mc_many {
    mc_conn *m;
    const rkm_key *keys;
    size_t n;
    rkm_value *out;      /* get_many */
    const rkm_value *in; /* add_many, with added */
    rkm_added *added;
    rkm_result *res; /* each key's outcome */
} mc_many;

/* Commands gathered into one send. */
typedef struct mc_out {
    size_t used;
    char buf[MC_PIPE_BYTES];
} mc_out;

static int mc_out_flush(mc_conn *m, mc_out *o, rk_error *err)
{
    int rc = o->used ? rkm_lines_send(m->meta, o->buf, o->used, err) : RK_OK;
    o->used = 0;
    return rc;
}

/* `len` bytes into the send; ones that do not fit in its buffer go at once, after it. */
static int mc_out_put(mc_conn *m, mc_out *o, const char *data, size_t len, rk_error *err)
{
    int rc = o->used + len > sizeof o->buf ? mc_out_flush(m, o, err) : RK_OK;
    if (rc != RK_OK || len > sizeof o->buf)
        return rc == RK_OK ? rkm_lines_send(m->meta, data, len, err) : rc;
    memcpy(o->buf + o->used, data, len);
    o->used += len;
    return RK_OK;
}

/* Each key's result reset for a new try: RK_EINVAL for a key memcached cannot hold, which is
 * never sent. */
static void mc_many_reset(mc_many *b)
{
    for (size_t i = 0; i < b->n; i++) {
        b->res[i] = (rkm_result){.rc = RK_OK};
        if (b->out)
            rkm_value_deinit(&b->out[i]);
        if (!rkm_mc_key_ok(b->keys[i].key, b->keys[i].len))
            b->res[i].rc = rk_error_set(&b->res[i].err, RK_EINVAL, NULL,
                                        "%s: a memcached key is 1 to %d bytes, without spaces or "
                                        "control characters",
                                        b->m->ep.label, MC_KEY_MAX);
    }
}

/* A try that failed: its connection dropped (an answer half read would answer the next one). */
static int mc_many_lost(mc_many *b, int rc)
{
    rkm_lines_free(b->m->meta);
    b->m->meta = NULL;
    for (size_t i = 0; b->out && i < b->n; i++)
        rkm_value_deinit(&b->out[i]);
    return rc;
}

/* "mg <key> t f v" for keys from `from` on, as many as fit in one send; *to is past the last. */
static int mc_send_gets(mc_many *b, size_t from, size_t *to, rk_error *err)
{
    mc_out o = {0};
    char cmd[MC_KEY_MAX + 16];
    size_t i = from;
    for (; i < b->n; i++) {
        if (b->res[i].rc != RK_OK)
            continue;
        int n = snprintf(cmd, sizeof cmd, "mg %.*s t f v\r\n", (int)b->keys[i].len, b->keys[i].key);
        if (o.used + (size_t)n > sizeof o.buf)
            break;
        memcpy(o.buf + o.used, cmd, (size_t)n);
        o.used += (size_t)n;
    }
    *to = i;
    return mc_out_flush(b->m, &o, err);
}

/* The value of "VA <bytes> t<ttl> f<flags>", its data block and its CRLF, into *out: kept when
 * it lives and is within the size cap, else read and dropped (its size reported). */
static int mc_read_block(mc_conn *m, char *line, rkm_value *out, rkm_result *res, rk_error *err)
{
    unsigned long long bytes = 0;
    long long ttl = 0;
    unsigned long flags = 0;
    int have = 0;                                         /* 1: t, 2: f, 4: the size */
    char *save = NULL, *tok = strtok_r(line, " ", &save); /* "VA" */
    tok = strtok_r(NULL, " ", &save);
    if (tok && (unsigned char)tok[0] - '0' < 10) {
        bytes = strtoull(tok, NULL, 10);
        have |= 4;
    }
    for (tok = strtok_r(NULL, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (tok[0] == 't')
            ttl = strtoll(tok + 1, NULL, 10);
        if (tok[0] == 'f')
            flags = strtoul(tok + 1, NULL, 10);
        have |= tok[0] == 't' ? 1 : tok[0] == 'f' ? 2 : 0;
    }
    if (!(have & 4))
        return rk_error_set(err, RK_EIO, NULL, "%s: mg gave no size: '%.60s'", m->ep.label, line);
    bool keep = have == 7 && ttl != 0 && bytes <= m->ep.opt->max_value_bytes;
    char *data = keep ? malloc(bytes ? bytes : 1) : NULL;
    if (keep && !data)
        return rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", m->ep.label);
    int rc = rkm_lines_read_bytes(m->meta, data, bytes, err);
    size_t len = 0;
    if (rc == RK_OK)
        rc = rkm_lines_read(m->meta, &line, &len, err);
    if (rc == RK_OK && len != 0)
        rc = rk_error_set(err, RK_EIO, NULL, "%s: a value's data block does not end", m->ep.label);
    if (rc == RK_OK && have != 7)
        res->rc = rk_error_set(&res->err, RK_EIO, NULL, "%s: mg gave no TTL or flags", m->ep.label);
    if (rc != RK_OK || res->rc != RK_OK || ttl == 0) { /* t0: expires within the second */
        free(data);
        return rc;
    }
    *out = (rkm_value){.state = keep ? RKM_FOUND : RKM_TOO_BIG,
                       .data = data,
                       .len = bytes,
                       .flags = (uint32_t)flags,
                       .ttl_ms = ttl < 0 ? RKM_TTL_NONE : ttl * 1000};
    return RK_OK;
}

/* One answer to "mg <key> t f v": "EN" (absent), or a value. */
static int mc_read_value(mc_conn *m, rkm_value *out, rkm_result *res, rk_error *err)
{
    char *line;
    size_t len;
    int rc = rkm_lines_read(m->meta, &line, &len, err);
    if (rc != RK_OK || strcmp(line, "EN") == 0)
        return rc;
    if (strncmp(line, "VA ", 3) == 0)
        return mc_read_block(m, line, out, res, err);
    res->rc = rk_error_set(&res->err, RK_EIO, NULL, "%s: unexpected answer to mg: '%.60s'",
                           m->ep.label, line);
    return RK_OK;
}

/* Meta get of value, TTL and flags in one command a key, pipelined a send's worth at a time. */
static int mc_try_get_many(void *arg, rk_error *err)
{
    mc_many *b = arg;
    mc_many_reset(b);
    int rc = rkm_mc_meta(b->m, err);
    for (size_t i = 0, to = 0; rc == RK_OK && i < b->n; i = to) {
        rc = mc_send_gets(b, i, &to, err);
        for (size_t j = i; rc == RK_OK && j < to; j++)
            if (b->res[j].rc == RK_OK)
                rc = mc_read_value(b->m, &b->out[j], &b->res[j], err);
    }
    return rc == RK_OK ? rc : mc_many_lost(b, rc);
}

int rkm_mc_get_many(void *conn, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                    rk_error *err)
{
    mc_many b = {.m = conn, .keys = keys, .n = n, .out = out, .res = res};
    return rkm_retry(b.m->ep.opt, mc_try_get_many, &b, err);
}

/* "add <key> <flags> <exptime> <bytes>", the value and its CRLF, into the send. */
static int mc_put_add(mc_conn *m, mc_out *o, const rkm_key *k, const rkm_value *v, rk_error *err)
{
    char header[MC_HEADER_MAX];
    int n = snprintf(header, sizeof header, "add %.*s %" PRIu32 " %lld %zu\r\n", (int)k->len,
                     k->key, v->flags, (long long)rkm_mc_exptime(v->ttl_ms), v->len);
    int rc = mc_out_put(m, o, header, (size_t)n, err);
    if (rc == RK_OK)
        rc = mc_out_put(m, o, v->data ? v->data : "", v->len, err);
    return rc == RK_OK ? mc_out_put(m, o, "\r\n", 2, err) : rc;
}

/* One answer to an add: STORED (copied), NOT_STORED or EXISTS (present: the value there
 * stays), or the key's own error. */
static int mc_read_added(mc_conn *m, rkm_added *added, rkm_result *res, rk_error *err)
{
    char *line;
    size_t len;
    int rc = rkm_lines_read(m->meta, &line, &len, err);
    if (rc != RK_OK)
        return rc;
    *added = strcmp(line, "STORED") == 0 ? RKM_COPIED : RKM_PRESENT;
    if (*added == RKM_PRESENT && strcmp(line, "NOT_STORED") != 0 && strcmp(line, "EXISTS") != 0)
        res->rc = rk_error_set(&res->err, RK_EIO, NULL, "%s: add: %.80s", m->ep.label, line);
    return RK_OK;
}

/* Pipelined adds, MC_PIPE_KEYS at a time: the answers are short, so a window's all fit in the
 * sockets' buffers while its values are sent. A retry after a lost answer says "present". */
static int mc_try_add_many(void *arg, rk_error *err)
{
    mc_many *b = arg;
    mc_out o = {0};
    mc_many_reset(b);
    int rc = rkm_mc_meta(b->m, err);
    for (size_t i = 0; rc == RK_OK && i < b->n; i += MC_PIPE_KEYS) {
        size_t to = b->n - i < MC_PIPE_KEYS ? b->n : i + MC_PIPE_KEYS;
        for (size_t j = i; rc == RK_OK && j < to; j++)
            if (b->res[j].rc == RK_OK)
                rc = mc_put_add(b->m, &o, &b->keys[j], &b->in[j], err);
        if (rc == RK_OK)
            rc = mc_out_flush(b->m, &o, err);
        for (size_t j = i; rc == RK_OK && j < to; j++)
            if (b->res[j].rc == RK_OK)
                rc = mc_read_added(b->m, &b->added[j], &b->res[j], err);
    }
    return rc == RK_OK ? rc : mc_many_lost(b, rc);
}

int rkm_mc_add_many(void *conn, const rkm_key *keys, const rkm_value *values, size_t n,
                    rkm_added *added, rkm_result *res, rk_error *err)
{
    mc_many b = {.m = conn, .keys = keys, .n = n, .in = values, .added = added, .res = res};
    return rkm_retry(b.m->ep.opt, mc_try_add_many, &b, err);
}

int rkm_mc_checksum_many(void *conn, const rkm_key *keys, size_t n, rkm_sum *out, rkm_result *res,
                         rk_error *err)
{
    return rkm_sum_many_by_get(&rkm_driver_memcached, conn, keys, n, 0, out, res, err);
}
