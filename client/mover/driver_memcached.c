/* driver_memcached.c — the memcached driver. libmemcached gets, adds, sets and deletes values; by
 * hand, over plain TCP, what it does not offer: the `lru_crawler metadump hash` stream a scan reads
 * (the hash table: `all` walks the LRU lists, which the LRU maintainer reorders under it, passing
 * some keys twice and missing others), and the remaining TTL a get reports (meta get "mg <key> t",
 * memcached 1.6 and later). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmemcached/memcached.h>

#include "net.h"

#define MC_KEY_MAX         250          /* memcached's longest key */
#define MC_RELATIVE_MAX    (30 * 86400) /* memcached reads a longer expiry as a unix time */
#define MC_STATS_LINES_MAX 1000         /* a `stats` answer is about 90 lines */
#define MC_DUMP            "lru_crawler metadump hash\r\n" /* not "all": below */

typedef struct mc_conn {
    memcached_st *mc;          /* libmemcached: values, add, delete */
    const rkm_options *opt;    /* borrowed from the rkm_conn */
    char host[RKM_HOST_MAX];   /* where the hand-written connections go */
    unsigned port;             /* with host */
    char label[RKM_LABEL_MAX]; /* "memcached host:port", how messages name the server */
    rkm_lines *meta;           /* TTL queries; NULL before the first and after a failure */
    rkm_lines *dump;           /* the metadump stream of the scan in progress, or NULL */
    uint64_t passed;           /* keys read from the stream: the cursor */
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

static void mc_close(void *conn)
{
    mc_conn *m = conn;
    if (!m)
        return;
    memcached_free(m->mc);
    rkm_lines_free(m->meta);
    mc_dump_stop(m);
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

/* The remaining TTL of `key` in ms into *ttl_ms: RKM_TTL_NONE, > 0, or 0 when it is absent. */
static int mc_ttl(mc_conn *m, const char *key, size_t len, int64_t *ttl_ms, rk_error *err)
{
    char cmd[MC_KEY_MAX + 16], *line;
    int n = snprintf(cmd, sizeof cmd, "mg %.*s t\r\n", (int)len, key);
    size_t line_len;
    long long t;
    int rc = RK_OK;
    if (!m->meta)
        rc = rkm_lines_connect(&m->meta, m->label, m->host, m->port, m->opt->timeout_ms, err);
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

static int mc_dump_start(mc_conn *m, rk_error *err)
{
    mc_dump_stop(m);
    m->passed = 0;
    int rc = rkm_lines_connect(&m->dump, m->label, m->host, m->port, m->opt->timeout_ms, err);
    if (rc == RK_OK)
        rc = mc_measure_skew(m, err);
    if (rc == RK_OK)
        rc = rkm_lines_send(m->dump, MC_DUMP, strlen(MC_DUMP), err);
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

/* A scan step, as rkm_retry's context. */
typedef struct mc_scan {
    mc_conn *m;
    rkm_cursor *cursor; /* in and out */
    size_t count;       /* lines of the stream to read, at most */
    rkm_key_fn fn;      /* the caller's, with ctx */
    void *ctx;
    int stopped; /* the callback's code when it stopped the scan, else RK_OK */
} mc_scan;

/* The end, an error, or one key: passed to the callback unless it expired. */
static int mc_dump_line(mc_scan *s, char *line, rk_error *err)
{
    mc_conn *m = s->m;
    char key[MC_KEY_MAX];
    rkm_key k = {.ttl_ms = RKM_TTL_NONE};
    int64_t exp = -1;
    if (strcmp(line, "END") == 0) {
        s->cursor->done = true;
        mc_dump_stop(m);
        return RK_OK;
    }
    if (strncmp(line, "BUSY", 4) == 0) /* another metadump or crawl runs: wait for it */
        return rk_error_set(err, RK_EUNREACHABLE, NULL, "%s: lru_crawler busy", m->label);
    if (mc_parse_dump_line(line, key, &k, &exp) != 0)
        return rk_error_set(err, RK_EIO, NULL, "%s: unexpected metadump line '%.60s'", m->label,
                            line);
    int64_t left = exp - ((int64_t)time(NULL) + m->skew_s);
    if (exp != -1 && left <= 0)
        return RK_OK;
    k.ttl_ms = exp == -1 ? RKM_TTL_NONE : left * 1000;
    s->stopped = s->fn(s->ctx, &k, err);
    return RK_OK;
}

static int mc_try_scan(void *arg, rk_error *err)
{
    mc_scan *s = arg;
    mc_conn *m = s->m;
    char *line, *end = NULL;
    size_t len;
    unsigned long long at = strtoull(s->cursor->pos, &end, 10);
    int rc = RK_OK;
    if (!m->dump || !s->cursor->pos[0] || *end || at != m->passed)
        rc = mc_dump_start(m, err); /* no cursor in metadump: a new stream starts over */
    for (size_t i = 0; rc == RK_OK && i < s->count && m->dump && !s->stopped; i++) {
        rc = rkm_lines_read(m->dump, &line, &len, err);
        if (rc == RK_OK)
            rc = mc_dump_line(s, line, err);
        if (rc == RK_OK && !s->stopped && m->dump) /* a key line, handled */
            m->passed++;
    }
    if (rc != RK_OK || s->stopped)
        mc_dump_stop(m); /* the stream is past what the cursor says: the next step restarts */
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
};
