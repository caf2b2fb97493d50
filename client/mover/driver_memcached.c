/* driver_memcached.c — the memcached driver. libmemcached gets, adds, sets and deletes values; by
 * hand, over plain TCP, what it does not offer: the `lru_crawler metadump hash` stream a scan reads
 * (the hash table: `all` walks the LRU lists, which the LRU maintainer reorders under it, passing
 * some keys twice and missing others), and the remaining TTL a get reports (meta get "mg <key> t",
 * memcached 1.6 and later).
 *
 * The stream is read whole, as fast as it comes, into a spool (an unlinked temporary file) when
 * a scan starts, and the scan's steps read the spool: memcached's crawler holds the lock of the
 * hash bucket it is at while it waits to write, so a stream read at the copy's pace would hold
 * the reads of every key under that lock (docs/MIGRATE.md, "memcached's scan: the stream is
 * spooled"). */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen, fseeko */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmemcached/memcached.h>

#include "net.h"

#define MC_KEY_MAX         250          /* memcached's longest key */
#define MC_RELATIVE_MAX    (30 * 86400) /* memcached reads a longer expiry as a unix time */
#define MC_STATS_LINES_MAX 1000         /* a `stats` answer is about 90 lines */
#define MC_DUMP            "lru_crawler metadump hash\r\n" /* not "all": above */
#define MC_SPOOL_KEYS_MAX  (1ull << 36)          /* a metadump longer than this is not a server's */
#define MC_SPOOL_BUF       (64 * 1024)           /* the spool's stdio buffer: few system calls */
#define MC_REC_MAX         (1 + MC_KEY_MAX + 16) /* a spooled key: length, bytes, exp, size */
#define MC_PIPE_BYTES                                                                              \
    (16 * 1024)            /* commands sent before their answers are read: less than               \
                              the sockets' buffers take, so that neither side waits */
#define MC_PIPE_KEYS  1000 /* adds sent before their answers (12 bytes each) are read */
#define MC_HEADER_MAX (MC_KEY_MAX + 64) /* "add <key> <flags> <exptime> <bytes>\r\n" */

typedef struct mc_conn {
    memcached_st *mc;          /* libmemcached: values, add, delete */
    const rkm_options *opt;    /* borrowed from the rkm_conn */
    char host[RKM_HOST_MAX];   /* where the hand-written connections go */
    unsigned port;             /* with host */
    char label[RKM_LABEL_MAX]; /* "memcached host:port", how messages name the server */
    rkm_lines *meta;           /* TTL queries; NULL before the first and after a failure */
    rkm_lines *dump;           /* the metadump stream while it is spooled, else NULL */
    FILE *spool;               /* the scan in progress: its whole stream, or NULL */
    uint64_t passed;           /* keys read from the spool: the cursor */
    uint64_t step_passed;      /* `passed` where the last step began, */
    off_t step_off;            /* and its offset in the spool: a failed step rewinds to it */
    int64_t skew_s;            /* the server's clock minus ours, when the stream began */
} mc_conn;

/* libmemcached's answers that mean the connection failed, worth another try. */
static const memcached_return_t mc_unreachable[] = {
    MEMCACHED_CONNECTION_FAILURE,
    MEMCACHED_CONNECTION_SOCKET_CREATE_FAILURE,
    MEMCACHED_HOST_LOOKUP_FAILURE,
    MEMCACHED_WRITE_FAILURE,
    MEMCACHED_READ_FAILURE,
    MEMCACHED_UNKNOWN_READ_FAILURE,
    MEMCACHED_ERRNO,
    MEMCACHED_TIMEOUT,
    MEMCACHED_SERVER_MARKED_DEAD,
    MEMCACHED_SERVER_TEMPORARILY_DISABLED,
};

/* Timeouts from the options, and the one server. */
static int mc_configure(memcached_st *mc, const mc_conn *m)
{
    uint64_t ms = m->opt->timeout_ms;
    memcached_return_t rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, ms);
    if (memcached_success(rc))
        rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, ms);
    if (memcached_success(rc))
        rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_RCV_TIMEOUT, ms * 1000);
    if (memcached_success(rc))
        rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_SND_TIMEOUT, ms * 1000);
    if (memcached_success(rc))
        rc = memcached_server_add(mc, m->host, (in_port_t)m->port);
    return memcached_success(rc) ? 0 : -1;
}

/* A fresh libmemcached handle after a failed connection: the old one would not try the server
 * again before its retry timeout, while rkm_retry already waits between tries. The old one stays
 * when there is no memory for another. */
static void mc_renew(mc_conn *m)
{
    memcached_st *fresh = memcached_create(NULL);
    if (!fresh || mc_configure(fresh, m) != 0) {
        memcached_free(fresh);
        return;
    }
    memcached_free(m->mc);
    m->mc = fresh;
}

static int mc_fail(mc_conn *m, memcached_return_t rc, const char *what, rk_error *err)
{
    if (rc == MEMCACHED_SOME_ERRORS) /* of one server: its own error */
        rc = memcached_last_error(m->mc);
    int code = RK_EIO;
    for (size_t i = 0; i < sizeof mc_unreachable / sizeof mc_unreachable[0]; i++)
        if (rc == mc_unreachable[i])
            code = RK_EUNREACHABLE;
    rk_error_set(err, code, NULL, "%s: %s: %s", m->label, what, memcached_strerror(m->mc, rc));
    if (code == RK_EUNREACHABLE)
        mc_renew(m);
    return code;
}

/* The text protocol's keys: 1 to 250 bytes, no space or control character. */
static int mc_key_ok(const char *key, size_t len)
{
    if (len == 0 || len > MC_KEY_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f)
            return 0;
    return 1;
}

static void mc_dump_stop(mc_conn *m)
{
    rkm_lines_free(m->dump);
    m->dump = NULL;
}

static void mc_spool_stop(mc_conn *m)
{
    if (m->spool)
        fclose(m->spool);
    m->spool = NULL;
}

static void mc_close(void *conn)
{
    mc_conn *m = conn;
    if (!m)
        return;
    memcached_free(m->mc);
    rkm_lines_free(m->meta);
    mc_dump_stop(m);
    mc_spool_stop(m);
    free(m);
}

static int mc_try_version(void *conn, rk_error *err)
{
    mc_conn *m = conn;
    memcached_return_t rc = memcached_version(m->mc);
    return memcached_success(rc) ? RK_OK : mc_fail(m, rc, "connect", err);
}

static void *mc_open(const char *addr, const rkm_options *opt, rk_error *err)
{
    mc_conn *m = calloc(1, sizeof *m);
    if (!m) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    m->opt = opt;
    snprintf(m->label, sizeof m->label, "memcached %s", addr);
    if (rkm_addr_parse(addr, m->host, &m->port, err) != RK_OK)
        goto fail;
    m->mc = memcached_create(NULL);
    if (!m->mc || mc_configure(m->mc, m) != 0) {
        rk_error_set(err, RK_ENOMEM, NULL, "%s: cannot set up libmemcached", m->label);
        goto fail;
    }
    if (rkm_retry(opt, mc_try_version, m, err) != RK_OK)
        goto fail;
    return m;
fail:
    mc_close(m);
    return NULL;
}

/* The hand-written connection for meta commands and pipelines, made when there is none. */
static int mc_meta(mc_conn *m, rk_error *err)
{
    if (m->meta)
        return RK_OK;
    return rkm_lines_connect(&m->meta, m->label, m->host, m->port, m->opt->timeout_ms, err);
}

/* The remaining TTL of `key` in ms into *ttl_ms: RKM_TTL_NONE, > 0, or 0 when it is absent. */
static int mc_ttl(mc_conn *m, const char *key, size_t len, int64_t *ttl_ms, rk_error *err)
{
    char cmd[MC_KEY_MAX + 16], *line;
    int n = snprintf(cmd, sizeof cmd, "mg %.*s t\r\n", (int)len, key);
    size_t line_len;
    long long t;
    int rc = mc_meta(m, err);
    if (rc == RK_OK)
        rc = rkm_lines_send(m->meta, cmd, (size_t)n, err);
    if (rc == RK_OK)
        rc = rkm_lines_read(m->meta, &line, &line_len, err);
    if (rc != RK_OK) {
        rkm_lines_free(m->meta); /* a half-read answer would answer the next query */
        m->meta = NULL;
        return rc;
    }
    if (strcmp(line, "EN") == 0) {
        *ttl_ms = 0;
        return RK_OK;
    }
    if (sscanf(line, "HD t%lld", &t) != 1)
        return rk_error_set(err, RK_EIO, NULL, "%s: unexpected answer to mg: '%.60s'", m->label,
                            line);
    *ttl_ms = t < 0 ? RKM_TTL_NONE : t * 1000; /* t0: expires within the second, absent */
    return RK_OK;
}

/* One operation on one key, as rkm_retry's context. */
typedef struct mc_call {
    mc_conn *m;
    const char *key;     /* borrowed */
    size_t len;          /* bytes of key */
    rkm_value *out;      /* get: filled */
    const rkm_value *in; /* add, set: written */
    rkm_added *added;    /* add: what it did; NULL for a set */
    memcached_return_t (*write)(memcached_st *, const char *, size_t, const char *, size_t, time_t,
                                uint32_t); /* add, set: memcached_add or memcached_set */
} mc_call;

/* `attempt` on call->key, retried, once the key is one memcached can hold. */
static int mc_run(mc_call *call, rkm_attempt_fn attempt, rk_error *err)
{
    if (!mc_key_ok(call->key, call->len))
        return rk_error_set(err, RK_EINVAL, NULL,
                            "%s: a memcached key is 1 to %d bytes, without spaces or control "
                            "characters",
                            call->m->label, MC_KEY_MAX);
    return rkm_retry(call->m->opt, attempt, call, err);
}

/* The TTL first: a key that expires between the two reads then reads as absent, never as a
 * value with a TTL it no longer has. */
static int mc_try_get(void *arg, rk_error *err)
{
    mc_call *call = arg;
    int64_t ttl = 0;
    int rc = mc_ttl(call->m, call->key, call->len, &ttl, err);
    if (rc != RK_OK || ttl == 0)
        return rc;
    size_t len = 0;
    uint32_t flags = 0;
    memcached_return_t mrc;
    char *data = memcached_get(call->m->mc, call->key, call->len, &len, &flags, &mrc);
    if (mrc == MEMCACHED_NOTFOUND)
        return RK_OK;
    if (!memcached_success(mrc))
        return mc_fail(call->m, mrc, "get", err);
    call->out->state = RKM_FOUND;
    call->out->data = data; /* NULL for an empty value; malloc'd (libmemcached's default) */
    call->out->len = len;
    call->out->flags = flags;
    call->out->ttl_ms = ttl;
    return RK_OK;
}

static int mc_get(void *conn, const char *key, size_t len, rkm_value *out, rk_error *err)
{
    mc_call call = {.m = conn, .key = key, .len = len, .out = out};
    return mc_run(&call, mc_try_get, err);
}

/* memcached's expiry for a TTL, rounded up so that a copy never expires before its source. Past
 * 30 days it is a unix time, on our clock: a skew of seconds in a TTL of over a month. */
static time_t mc_exptime(int64_t ttl_ms)
{
    int64_t s = ttl_ms == RKM_TTL_NONE ? 0 : (ttl_ms + 999) / 1000;
    return (time_t)(s > MC_RELATIVE_MAX ? (int64_t)time(NULL) + s : s);
}

/* memcached_add (call->added set: "present" when the key is there) or memcached_set. */
static int mc_try_write(void *arg, rk_error *err)
{
    mc_call *call = arg;
    const rkm_value *v = call->in;
    memcached_return_t rc = call->write(call->m->mc, call->key, call->len, v->data, v->len,
                                        mc_exptime(v->ttl_ms), v->flags);
    if (call->added && (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS)) {
        *call->added = RKM_PRESENT;
        return RK_OK;
    }
    if (call->added)
        *call->added = RKM_COPIED;
    return memcached_success(rc) ? RK_OK : mc_fail(call->m, rc, call->added ? "add" : "set", err);
}

static int mc_add_if_absent(void *conn, const char *key, size_t len, const rkm_value *value,
                            rkm_added *added, rk_error *err)
{
    mc_call call = {
        .m = conn, .key = key, .len = len, .in = value, .added = added, .write = memcached_add};
    return mc_run(&call, mc_try_write, err);
}

/* `set`: a catch-up's write over the copy, with the source's newer value. */
static int mc_put(void *conn, const char *key, size_t len, const rkm_value *value, rk_error *err)
{
    mc_call call = {.m = conn, .key = key, .len = len, .in = value, .write = memcached_set};
    return mc_run(&call, mc_try_write, err);
}

static int mc_try_delete(void *arg, rk_error *err)
{
    mc_call *call = arg;
    memcached_return_t rc = memcached_delete(call->m->mc, call->key, call->len, 0);
    if (rc == MEMCACHED_NOTFOUND || memcached_success(rc))
        return RK_OK;
    return mc_fail(call->m, rc, "delete", err);
}

static int mc_delete(void *conn, const char *key, size_t len, rk_error *err)
{
    mc_call call = {.m = conn, .key = key, .len = len};
    return mc_run(&call, mc_try_delete, err);
}

/* XXH3-64 of the value seeded with its client flags: a copy that lost its flags is a mismatch. */
static int mc_checksum(void *conn, const char *key, size_t len, rkm_sum *out, rk_error *err)
{
    return rkm_sum_by_get(&rkm_driver_memcached, conn, key, len, 0, out, err);
}

/* ---- batches: pipelined on the hand-written connection ---- */

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
        if (!mc_key_ok(b->keys[i].key, b->keys[i].len))
            b->res[i].rc = rk_error_set(&b->res[i].err, RK_EINVAL, NULL,
                                        "%s: a memcached key is 1 to %d bytes, without spaces or "
                                        "control characters",
                                        b->m->label, MC_KEY_MAX);
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
        return rk_error_set(err, RK_EIO, NULL, "%s: mg gave no size: '%.60s'", m->label, line);
    bool keep = have == 7 && ttl != 0 && bytes <= m->opt->max_value_bytes;
    char *data = keep ? malloc(bytes ? bytes : 1) : NULL;
    if (keep && !data)
        return rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", m->label);
    int rc = rkm_lines_read_bytes(m->meta, data, bytes, err);
    size_t len = 0;
    if (rc == RK_OK)
        rc = rkm_lines_read(m->meta, &line, &len, err);
    if (rc == RK_OK && len != 0)
        rc = rk_error_set(err, RK_EIO, NULL, "%s: a value's data block does not end", m->label);
    if (rc == RK_OK && have != 7)
        res->rc = rk_error_set(&res->err, RK_EIO, NULL, "%s: mg gave no TTL or flags", m->label);
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
                           m->label, line);
    return RK_OK;
}

/* Meta get of value, TTL and flags in one command a key, pipelined a send's worth at a time. */
static int mc_try_get_many(void *arg, rk_error *err)
{
    mc_many *b = arg;
    mc_many_reset(b);
    int rc = mc_meta(b->m, err);
    for (size_t i = 0, to = 0; rc == RK_OK && i < b->n; i = to) {
        rc = mc_send_gets(b, i, &to, err);
        for (size_t j = i; rc == RK_OK && j < to; j++)
            if (b->res[j].rc == RK_OK)
                rc = mc_read_value(b->m, &b->out[j], &b->res[j], err);
    }
    return rc == RK_OK ? rc : mc_many_lost(b, rc);
}

static int mc_get_many(void *conn, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                       rk_error *err)
{
    mc_many b = {.m = conn, .keys = keys, .n = n, .out = out, .res = res};
    return rkm_retry(b.m->opt, mc_try_get_many, &b, err);
}

/* "add <key> <flags> <exptime> <bytes>", the value and its CRLF, into the send. */
static int mc_put_add(mc_conn *m, mc_out *o, const rkm_key *k, const rkm_value *v, rk_error *err)
{
    char header[MC_HEADER_MAX];
    int n = snprintf(header, sizeof header, "add %.*s %" PRIu32 " %lld %zu\r\n", (int)k->len,
                     k->key, v->flags, (long long)mc_exptime(v->ttl_ms), v->len);
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
        res->rc = rk_error_set(&res->err, RK_EIO, NULL, "%s: add: %.80s", m->label, line);
    return RK_OK;
}

/* Pipelined adds, MC_PIPE_KEYS at a time: the answers are short, so a window's all fit in the
 * sockets' buffers while its values are sent. A retry after a lost answer says "present". */
static int mc_try_add_many(void *arg, rk_error *err)
{
    mc_many *b = arg;
    mc_out o = {0};
    mc_many_reset(b);
    int rc = mc_meta(b->m, err);
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

static int mc_add_many(void *conn, const rkm_key *keys, const rkm_value *values, size_t n,
                       rkm_added *added, rkm_result *res, rk_error *err)
{
    mc_many b = {.m = conn, .keys = keys, .n = n, .in = values, .added = added, .res = res};
    return rkm_retry(b.m->opt, mc_try_add_many, &b, err);
}

/* ---- the scan: the metadump stream ---- */

/* The server's clock against ours, from `stats` ("STAT time <unix time>"), so that the expiry
 * times the stream gives are compared with the server's now, not this host's. */
static int mc_measure_skew(mc_conn *m, rk_error *err)
{
    char *line;
    size_t len;
    long long server = 0;
    int rc = rkm_lines_send(m->dump, "stats\r\n", 7, err);
    for (int i = 0; rc == RK_OK && i < MC_STATS_LINES_MAX; i++) {
        rc = rkm_lines_read(m->dump, &line, &len, err);
        if (rc != RK_OK || strcmp(line, "END") == 0)
            break;
        if (sscanf(line, "STAT time %lld", &server) != 1)
            continue;
        m->skew_s = (int64_t)server - (int64_t)time(NULL);
    }
    if (rc == RK_OK && server == 0)
        rc =
            rk_error_set(err, RK_EIO, NULL, "%s: `stats` did not give the server's time", m->label);
    return rc;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20; /* 'A' .. 'F' as 'a' .. 'f' */
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* metadump's key=, in which every byte but [A-Za-z0-9._~-] is %XX: decoded into key (MC_KEY_MAX
 * bytes). -1 when it is not such a key. */
static int mc_url_decode(const char *in, char *key, size_t *len)
{
    size_t n = 0;
    for (; *in && n < MC_KEY_MAX; n++) {
        if (*in != '%') {
            key[n] = *in++;
            continue;
        }
        int hi = hex_digit(in[1]), lo = hi < 0 ? -1 : hex_digit(in[2]);
        if (lo < 0)
            return -1;
        key[n] = (char)(hi * 16 + lo);
        in += 3;
    }
    *len = n;
    return *in || n == 0 ? -1 : 0;
}

/* One metadump line: "key=<encoded> exp=<unix time, or -1: never> la=... cas=... fetch=...
 * cls=... size=<bytes of the whole item>". -1 when it lacks key= or exp=. */
static int mc_parse_dump_line(char *line, char *key, rkm_key *out, int64_t *exp)
{
    int have = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (strncmp(tok, "key=", 4) == 0 && mc_url_decode(tok + 4, key, &out->len) == 0)
            have |= 1;
        else if (strncmp(tok, "exp=", 4) == 0 && sscanf(tok + 4, "%" SCNd64, exp) == 1)
            have |= 2;
        else if (strncmp(tok, "size=", 5) == 0)
            sscanf(tok + 5, "%" SCNu64, &out->size);
    }
    out->key = key;
    return have == 3 ? 0 : -1;
}

/* RK_EIO: the spool failed `what` (errno says why). */
static int mc_spool_error(const mc_conn *m, const char *what, rk_error *err)
{
    return rk_error_set(err, RK_EIO, NULL, "%s: cannot %s the metadump spool: %s", m->label, what,
                        strerror(errno));
}

/* A new spool: an unlinked temporary file in $TMPDIR (else /tmp), gone with its descriptor
 * however the worker ends. */
static int mc_spool_open(mc_conn *m, rk_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    dir = dir && *dir ? dir : "/tmp";
    int n = snprintf(path, sizeof path, "%s/rkm-metadump-XXXXXX", dir);
    int fd = n > 0 && (size_t)n < sizeof path ? mkstemp(path) : -1;
    if (fd >= 0)
        unlink(path);
    m->spool = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (m->spool && setvbuf(m->spool, NULL, _IOFBF, MC_SPOOL_BUF) == 0)
        return RK_OK;
    int rc = rk_error_set(err, RK_EIO, NULL, "%s: cannot create the metadump spool in %s: %s",
                          m->label, dir, strerror(errno));
    if (m->spool)
        mc_spool_stop(m);
    else if (fd >= 0)
        close(fd);
    return rc;
}

/* One key into the spool: its length, its bytes, its expiry and its size. */
static int mc_spool_key(mc_conn *m, const rkm_key *k, int64_t exp, rk_error *err)
{
    unsigned char rec[MC_REC_MAX];
    size_t n = 1 + k->len + 16;
    rec[0] = (unsigned char)k->len; /* 1 .. MC_KEY_MAX: mc_url_decode's */
    memcpy(rec + 1, k->key, k->len);
    memcpy(rec + 1 + k->len, &exp, 8);
    memcpy(rec + 9 + k->len, &k->size, 8);
    return fwrite(rec, 1, n, m->spool) == n ? RK_OK : mc_spool_error(m, "write", err);
}

/* One line of the stream: the end (*end set), BUSY, or a key, spooled. */
static int mc_spool_line(mc_conn *m, char *line, bool *end, rk_error *err)
{
    char key[MC_KEY_MAX];
    rkm_key k = {.ttl_ms = RKM_TTL_NONE};
    int64_t exp = -1;
    *end = strcmp(line, "END") == 0;
    if (*end)
        return RK_OK;
    if (strncmp(line, "BUSY", 4) == 0) /* another metadump or crawl runs: wait for it */
        return rk_error_set(err, RK_EUNREACHABLE, NULL, "%s: lru_crawler busy", m->label);
    if (mc_parse_dump_line(line, key, &k, &exp) != 0)
        return rk_error_set(err, RK_EIO, NULL, "%s: unexpected metadump line '%.60s'", m->label,
                            line);
    return mc_spool_key(m, &k, exp, err);
}

/* A new stream, read to its END as fast as it comes into a new spool, read from its start: the
 * crawler never waits for the copy. The cursor counts from 0 again. */
static int mc_spool_fill(mc_conn *m, rk_error *err)
{
    char *line;
    size_t len;
    bool end = false;
    mc_spool_stop(m);
    m->passed = m->step_passed = 0;
    m->step_off = 0;
    int rc = rkm_lines_connect(&m->dump, m->label, m->host, m->port, m->opt->timeout_ms, err);
    if (rc == RK_OK)
        rc = mc_measure_skew(m, err);
    if (rc == RK_OK)
        rc = rkm_lines_send(m->dump, MC_DUMP, strlen(MC_DUMP), err);
    if (rc == RK_OK)
        rc = mc_spool_open(m, err);
    for (uint64_t i = 0; rc == RK_OK && !end && i <= MC_SPOOL_KEYS_MAX; i++) {
        rc = rkm_lines_read(m->dump, &line, &len, err);
        if (rc == RK_OK)
            rc = mc_spool_line(m, line, &end, err);
    }
    if (rc == RK_OK && !end)
        rc = rk_error_set(err, RK_EIO, NULL, "%s: a metadump of over %llu keys", m->label,
                          (unsigned long long)MC_SPOOL_KEYS_MAX);
    mc_dump_stop(m);
    if (rc == RK_OK && (fflush(m->spool) != 0 || fseeko(m->spool, 0, SEEK_SET) != 0))
        rc = mc_spool_error(m, "write", err);
    if (rc != RK_OK)
        mc_spool_stop(m);
    return rc;
}

/* The next spooled key into *k (its bytes in `key`, MC_KEY_MAX) and *exp; *more false at the end.
 */
static int mc_spool_next(mc_conn *m, char *key, rkm_key *k, int64_t *exp, bool *more, rk_error *err)
{
    unsigned char rec[MC_REC_MAX];
    int len = getc(m->spool);
    *more = len != EOF;
    if (len == EOF)
        return ferror(m->spool) ? mc_spool_error(m, "read", err) : RK_OK;
    size_t n = (size_t)len + 16;
    if (len == 0 || len > MC_KEY_MAX || fread(rec, 1, n, m->spool) != n)
        return mc_spool_error(m, "read", err);
    memcpy(key, rec, (size_t)len);
    memcpy(exp, rec + len, 8);
    memcpy(&k->size, rec + len + 8, 8);
    k->key = key;
    k->len = (size_t)len;
    return RK_OK;
}

/* A scan step, as rkm_retry's context. */
typedef struct mc_scan {
    mc_conn *m;
    rkm_cursor *cursor; /* in and out */
    size_t count;       /* keys of the spool to read, at most */
    rkm_key_fn fn;      /* the caller's, with ctx */
    void *ctx;
    int stopped; /* the callback's code when it stopped the scan, else RK_OK */
} mc_scan;

/* The next spooled key, passed to the callback unless it expired since (on the server's clock);
 * at the end the cursor is done and the spool let go. */
static int mc_scan_key(mc_scan *s, rk_error *err)
{
    mc_conn *m = s->m;
    char key[MC_KEY_MAX];
    rkm_key k = {.ttl_ms = RKM_TTL_NONE};
    int64_t exp = -1;
    bool more = false;
    int rc = mc_spool_next(m, key, &k, &exp, &more, err);
    if (rc != RK_OK || !more) {
        s->cursor->done = rc == RK_OK;
        mc_spool_stop(m);
        return rc;
    }
    m->passed++;
    int64_t left = exp - ((int64_t)time(NULL) + m->skew_s);
    if (exp != -1 && left <= 0)
        return RK_OK;
    k.ttl_ms = exp == -1 ? RKM_TTL_NONE : left * 1000;
    s->stopped = s->fn(s->ctx, &k, err);
    return RK_OK;
}

/* Where a step begins: where the last one ended (its cursor, which a failed step left where it
 * began); any other cursor, or none, starts a new stream. */
static int mc_scan_seek(mc_conn *m, const rkm_cursor *cursor, rk_error *err)
{
    char *end = NULL;
    unsigned long long at = strtoull(cursor->pos, &end, 10);
    if (m->spool && cursor->pos[0] && !*end && at == m->passed)
        return RK_OK;
    return mc_spool_fill(m, err);
}

/* A failed or stopped step: the spool back to where it began, for the same cursor to read the
 * same keys again; a spool that cannot go back is let go (the next step starts a new stream). */
static void mc_scan_rewind(mc_conn *m)
{
    if (m->spool && fseeko(m->spool, m->step_off, SEEK_SET) != 0)
        mc_spool_stop(m);
    m->passed = m->spool ? m->step_passed : 0;
}

static int mc_try_scan(void *arg, rk_error *err)
{
    mc_scan *s = arg;
    mc_conn *m = s->m;
    int rc = mc_scan_seek(m, s->cursor, err);
    m->step_passed = m->passed;
    m->step_off = rc == RK_OK ? ftello(m->spool) : 0;
    if (rc == RK_OK && m->step_off < 0)
        rc = mc_spool_error(m, "read", err);
    for (size_t i = 0; rc == RK_OK && i < s->count && m->spool && !s->stopped; i++)
        rc = mc_scan_key(s, err);
    if (rc != RK_OK || s->stopped)
        mc_scan_rewind(m);
    snprintf(s->cursor->pos, sizeof s->cursor->pos, "%" PRIu64, m->passed);
    return rc;
}

static int mc_scan_step(void *conn, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx,
                        rk_error *err)
{
    mc_scan s = {.m = conn, .cursor = cursor, .count = count, .fn = fn, .ctx = ctx};
    int rc = rkm_retry(s.m->opt, mc_try_scan, &s, err);
    return rc == RK_OK ? s.stopped : rc;
}

static int mc_checksum_many(void *conn, const rkm_key *keys, size_t n, rkm_sum *out,
                            rkm_result *res, rk_error *err)
{
    return rkm_sum_many_by_get(&rkm_driver_memcached, conn, keys, n, 0, out, res, err);
}

const rkm_driver rkm_driver_memcached = {
    .name = "memcached",
    .open = mc_open,
    .close = mc_close,
    .scan = mc_scan_step,
    .get = mc_get,
    .add_if_absent = mc_add_if_absent,
    .put = mc_put,
    .del = mc_delete,
    .checksum = mc_checksum,
    .get_many = mc_get_many,
    .add_many = mc_add_many,
    .checksum_many = mc_checksum_many,
};
