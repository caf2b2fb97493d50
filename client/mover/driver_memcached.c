/* driver_memcached.c — the memcached driver: its connection, its operations on one key, and its
 * table (rkm_driver_memcached). libmemcached gets, adds, sets and deletes values; by hand, over
 * plain TCP, what it does not offer: the remaining TTL a get reports (meta get "mg <key> t",
 * memcached 1.6 and later). The batches are in driver_memcached_batch.c, the scan in
 * driver_memcached_scan.c; driver_memcached_shared.h holds what the three share, and
 * driver_memcached_shared.c the helpers below them all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmemcached/memcached.h>

#include "driver_memcached_shared.h"

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
    uint64_t ms = m->ep.opt->timeout_ms;
    memcached_return_t rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, ms);
    if (memcached_success(rc))
        rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, ms);
    if (memcached_success(rc))
        rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_RCV_TIMEOUT, ms * 1000);
    if (memcached_success(rc))
        rc = memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_SND_TIMEOUT, ms * 1000);
    if (memcached_success(rc))
        rc = memcached_server_add(mc, m->ep.host, (in_port_t)m->ep.port);
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
    rk_error_set(err, code, NULL, "%s: %s: %s", m->ep.label, what, memcached_strerror(m->mc, rc));
    if (code == RK_EUNREACHABLE)
        mc_renew(m);
    return code;
}

static void mc_close(void *conn)
{
    mc_conn *m = conn;
    if (!m)
        return;
    memcached_free(m->mc);
    rkm_lines_free(m->meta);
    rkm_mc_dump_stop(m);
    rkm_mc_spool_stop(m);
    free(m);
}

static int mc_try_version(void *conn, rk_error *err)
{
    mc_conn *m = conn;
    memcached_return_t rc = memcached_version(m->mc);
    return memcached_success(rc) ? RK_OK : mc_fail(m, rc, "connect", err);
}

/* libmemcached's handle, before the first try to connect. */
static int mc_setup(void *conn, rk_error *err)
{
    mc_conn *m = conn;
    m->mc = memcached_create(NULL);
    if (!m->mc || mc_configure(m->mc, m) != 0)
        return rk_error_set(err, RK_ENOMEM, NULL, "%s: cannot set up libmemcached", m->ep.label);
    return RK_OK;
}

static void *mc_open(const char *addr, const rkm_options *opt, rk_error *err)
{
    static const rkm_opener how = {"memcached", sizeof(mc_conn), mc_setup, mc_try_version,
                                   mc_close};
    return rkm_open_conn(&how, addr, opt, err);
}

/* The remaining TTL of `key` in ms into *ttl_ms: RKM_TTL_NONE, > 0, or 0 when it is absent. */
static int mc_ttl(mc_conn *m, const char *key, size_t len, int64_t *ttl_ms, rk_error *err)
{
    char cmd[MC_KEY_MAX + 16], *line;
    int n = snprintf(cmd, sizeof cmd, "mg %.*s t\r\n", (int)len, key);
    size_t line_len;
    long long t;
    int rc = rkm_mc_meta(m, err);
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
        return rk_error_set(err, RK_EIO, NULL, "%s: unexpected answer to mg: '%.60s'", m->ep.label,
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
    if (!rkm_mc_key_ok(call->key, call->len))
        return rk_error_set(err, RK_EINVAL, NULL,
                            "%s: a memcached key is 1 to %d bytes, without spaces or control "
                            "characters",
                            call->m->ep.label, MC_KEY_MAX);
    return rkm_retry(call->m->ep.opt, attempt, call, err);
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

/* memcached_add (call->added set: "present" when the key is there) or memcached_set. */
static int mc_try_write(void *arg, rk_error *err)
{
    mc_call *call = arg;
    const rkm_value *v = call->in;
    memcached_return_t rc = call->write(call->m->mc, call->key, call->len, v->data, v->len,
                                        rkm_mc_exptime(v->ttl_ms), v->flags);
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

const rkm_driver rkm_driver_memcached = {
    .name = "memcached",
    .open = mc_open,
    .close = mc_close,
    .scan = rkm_mc_scan_step,
    .get = mc_get,
    .add_if_absent = mc_add_if_absent,
    .put = mc_put,
    .del = mc_delete,
    .checksum = mc_checksum,
    .get_many = rkm_mc_get_many,
    .add_many = rkm_mc_add_many,
    .checksum_many = rkm_mc_checksum_many,
};
