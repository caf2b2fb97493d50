/* driver.c — the registry of data-store drivers, and the connection that checks arguments and
 * applies the size cap before and after each driver's operation. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "driver.h"

/* Every driver, by name: one for each data protocol client/CMakeLists.txt registers with
 * rk_data_protocol(<name> ...), the rkm_driver_<name> its files define. */
#define RK_DATA_PROTOCOL(name) extern const rkm_driver rkm_driver_##name;
#include "data_protocols.def"
#undef RK_DATA_PROTOCOL

static const rkm_driver *const drivers[] = {
#define RK_DATA_PROTOCOL(name) &rkm_driver_##name,
#include "data_protocols.def"
#undef RK_DATA_PROTOCOL
};

struct rkm_conn {
    const rkm_driver *driver; /* the store's table */
    void *impl;               /* what driver->open returned */
    rkm_options opt;          /* resolved: no field 0 */
};

const rkm_driver *rkm_driver_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof drivers / sizeof drivers[0]; i++)
        if (strcmp(drivers[i]->name, name) == 0)
            return drivers[i];
    return NULL;
}

void rkm_value_init(rkm_value *v)
{
    memset(v, 0, sizeof *v);
    v->state = RKM_ABSENT;
    v->ttl_ms = RKM_TTL_NONE;
}

void rkm_value_deinit(rkm_value *v)
{
    free(v->data);
    rkm_value_init(v);
}

/* A per-key operation's code into a batch's: a failure of the key alone is its result, any
 * other stops the batch (returned). */
static int key_result(int rc, rkm_result *res, const rk_error *why, rk_error *err)
{
    res->rc = rc == RK_EIO || rc == RK_EINVAL ? rc : RK_OK;
    if (res->rc != RK_OK)
        res->err = *why;
    if (rc != RK_OK && res->rc == RK_OK && err)
        *err = *why;
    return res->rc == RK_OK ? rc : RK_OK;
}

/* The fingerprint of a value get read. */
static rkm_sum sum_of(const rkm_value *v, size_t footer)
{
    rkm_sum s = {.state = v->state, .len = v->len, .ttl_ms = v->ttl_ms};
    if (v->state == RKM_FOUND)
        s.xxh3 =
            XXH3_64bits_withSeed(v->data, v->len > footer ? v->len - footer : v->len, v->flags);
    return s;
}

int rkm_sum_by_get(const rkm_driver *d, void *conn, const char *key, size_t len, size_t footer,
                   rkm_sum *out, rk_error *err)
{
    rkm_value v;
    rkm_value_init(&v);
    int rc = d->get(conn, key, len, &v, err);
    *out = sum_of(&v, footer);
    rkm_value_deinit(&v);
    return rc;
}

int rkm_sum_many_by_get(const rkm_driver *d, void *conn, const rkm_key *keys, size_t n,
                        size_t footer, rkm_sum *out, rkm_result *res, rk_error *err)
{
    rkm_value *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        rkm_value_init(&v[i]);
    int rc = d->get_many(conn, keys, n, v, res, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        out[i] = sum_of(&v[i], footer); /* one over the cap: RKM_TOO_BIG, its size, unread */
    for (size_t i = 0; i < n; i++)
        rkm_value_deinit(&v[i]);
    free(v);
    return rc;
}

static unsigned or_default(unsigned value, unsigned fallback)
{
    return value ? value : fallback;
}

static rkm_options resolve(const rkm_options *opt)
{
    rkm_options r = opt ? *opt : (rkm_options){0};
    r.tries = or_default(r.tries, RKM_DEFAULT_TRIES);
    r.tries = r.tries > RKM_MAX_TRIES ? RKM_MAX_TRIES : r.tries;
    r.backoff_ms = or_default(r.backoff_ms, RKM_DEFAULT_BACKOFF_MS);
    r.timeout_ms = or_default(r.timeout_ms, RKM_DEFAULT_TIMEOUT_MS);
    r.max_value_bytes = r.max_value_bytes ? r.max_value_bytes : RKM_DEFAULT_MAX_VALUE;
    return r;
}

rkm_conn *rkm_conn_new(const char *store, const char *addr, const rkm_options *opt, rk_error *err)
{
    const rkm_driver *d = rkm_driver_find(store);
    if (!d) {
        char names[128];
        rk_error_set(err, RK_EINVAL, NULL, "unknown data store '%s': %s", store ? store : "(null)",
                     rk_data_protocol_names(names, sizeof names, ""));
        return NULL;
    }
    rkm_conn *c = calloc(1, sizeof *c);
    if (!c) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    c->driver = d;
    c->opt = resolve(opt);
    c->impl = d->open(addr ? addr : "", &c->opt, err);
    if (!c->impl) {
        free(c);
        return NULL;
    }
    return c;
}

void rkm_conn_free(rkm_conn *c)
{
    if (!c)
        return;
    c->driver->close(c->impl);
    free(c);
}

int rkm_scan(rkm_conn *c, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx, rk_error *err)
{
    if (count == 0 || count > RKM_SCAN_MAX || !fn)
        return rk_error_set(err, RK_EINVAL, NULL, "a scan step passes 1 to %d keys to a callback",
                            RKM_SCAN_MAX);
    if (cursor->done)
        return RK_OK;
    cursor->pos[RKM_CURSOR_MAX - 1] = '\0'; /* the job stored it: never trusted to end */
    return c->driver->scan(c->impl, cursor, count, fn, ctx, err);
}

/* What a write may carry: a value get found, with a TTL still to run or none. */
static int check_value(const rkm_value *value, rk_error *err)
{
    if (value->state != RKM_FOUND || (value->ttl_ms <= 0 && value->ttl_ms != RKM_TTL_NONE))
        return rk_error_set(err, RK_EINVAL, NULL,
                            "only a value get found, with a TTL > 0 or none, is copied");
    return RK_OK;
}

/* The size cap, for every store, on a value the driver has read. */
static void apply_cap(const rkm_conn *c, rkm_value *v)
{
    if (v->state == RKM_FOUND && v->len > c->opt.max_value_bytes) {
        free(v->data);
        v->data = NULL;
        v->state = RKM_TOO_BIG;
    }
}

int rkm_get(rkm_conn *c, const char *key, size_t len, rkm_value *out, rk_error *err)
{
    rkm_value_deinit(out);
    int rc = c->driver->get(c->impl, key, len, out, err);
    if (rc == RK_OK)
        apply_cap(c, out);
    return rc;
}

static bool batches(const rkm_conn *c, bool has_batch_form)
{
    return has_batch_form && !c->opt.per_key;
}

int rkm_get_many(rkm_conn *c, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                 rk_error *err)
{
    int rc = RK_OK;
    for (size_t i = 0; i < n; i++) {
        rkm_value_deinit(&out[i]);
        res[i] = (rkm_result){.rc = RK_OK};
    }
    if (batches(c, c->driver->get_many != NULL))
        rc = c->driver->get_many(c->impl, keys, n, out, res, err);
    for (size_t i = 0; !batches(c, c->driver->get_many != NULL) && rc == RK_OK && i < n; i++) {
        rk_error why = {0};
        rc = key_result(c->driver->get(c->impl, keys[i].key, keys[i].len, &out[i], &why), &res[i],
                        &why, err);
    }
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        apply_cap(c, &out[i]);
    return rc;
}

int rkm_add_many(rkm_conn *c, const rkm_key *keys, const rkm_value *values, size_t n,
                 rkm_added *added, rkm_result *res, rk_error *err)
{
    int rc = RK_OK;
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        res[i] = (rkm_result){.rc = RK_OK};
        added[i] = RKM_PRESENT;
        rc = check_value(&values[i], err);
    }
    if (rc == RK_OK && batches(c, c->driver->add_many != NULL))
        return c->driver->add_many(c->impl, keys, values, n, added, res, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++) {
        rk_error why = {0};
        rc = key_result(c->driver->add_if_absent(c->impl, keys[i].key, keys[i].len, &values[i],
                                                 &added[i], &why),
                        &res[i], &why, err);
    }
    return rc;
}

bool rkm_conn_copies_direct(const rkm_conn *src, const rkm_conn *dest)
{
    return src->driver == dest->driver && src->driver->copy_many && !src->opt.relay &&
           !dest->opt.relay && !src->opt.per_key && !dest->opt.per_key;
}

int rkm_copy_many(rkm_conn *src, rkm_conn *dest, const rkm_key *keys, size_t n, rkm_value *seen,
                  rkm_added *added, rkm_result *res, rk_error *err)
{
    if (!rkm_conn_copies_direct(src, dest))
        return rk_error_set(err, RK_EINVAL, NULL, "%s cannot copy server to server here",
                            src->driver->name);
    for (size_t i = 0; i < n; i++) {
        rkm_value_deinit(&seen[i]);
        added[i] = RKM_PRESENT;
        res[i] = (rkm_result){.rc = RK_OK};
    }
    return src->driver->copy_many(src->impl, dest->impl, keys, n, seen, added, res, err);
}

size_t rkm_conn_max_value(const rkm_conn *c)
{
    return c->opt.max_value_bytes;
}

int rkm_add_if_absent(rkm_conn *c, const char *key, size_t len, const rkm_value *value,
                      rkm_added *added, rk_error *err)
{
    int rc = check_value(value, err);
    return rc ? rc : c->driver->add_if_absent(c->impl, key, len, value, added, err);
}

bool rkm_conn_may_overwrite(const rkm_conn *c)
{
    return c->opt.overwrite;
}

int rkm_put(rkm_conn *c, const char *key, size_t len, const rkm_value *value, rk_error *err)
{
    if (!c->opt.overwrite)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "this connection may not write over values (rkm_options.overwrite: "
                            "a before_cutover catch-up's destinations only)");
    int rc = check_value(value, err);
    return rc ? rc : c->driver->put(c->impl, key, len, value, err);
}

int rkm_delete(rkm_conn *c, const char *key, size_t len, rk_error *err)
{
    return c->driver->del(c->impl, key, len, err);
}

/* The size cap on a checksum, for every store: a value over it is not compared (a driver that
 * knows the size first never reads it). */
static void cap_sum(const rkm_conn *c, rkm_sum *s)
{
    if (s->state == RKM_FOUND && s->len > c->opt.max_value_bytes)
        *s = (rkm_sum){.state = RKM_TOO_BIG, .len = s->len, .ttl_ms = s->ttl_ms};
}

int rkm_checksum(rkm_conn *c, const char *key, size_t len, rkm_sum *out, rk_error *err)
{
    int rc = c->driver->checksum(c->impl, key, len, out, err);
    cap_sum(c, out);
    return rc;
}

int rkm_checksum_many(rkm_conn *c, const rkm_key *keys, size_t n, rkm_sum *out, rkm_result *res,
                      rk_error *err)
{
    int rc = RK_OK;
    for (size_t i = 0; i < n; i++) {
        out[i] = (rkm_sum){.state = RKM_ABSENT, .ttl_ms = RKM_TTL_NONE};
        res[i] = (rkm_result){.rc = RK_OK};
    }
    if (batches(c, c->driver->checksum_many != NULL))
        rc = c->driver->checksum_many(c->impl, keys, n, out, res, err);
    else
        for (size_t i = 0; rc == RK_OK && i < n; i++) {
            rk_error why = {0};
            rc = key_result(rkm_checksum(c, keys[i].key, keys[i].len, &out[i], &why), &res[i], &why,
                            err);
        }
    for (size_t i = 0; i < n; i++)
        cap_sum(c, &out[i]);
    return rc;
}

int rkm_sizes_many(rkm_conn *c, const rkm_key *keys, size_t n, uint64_t *bytes, rkm_result *res,
                   rk_error *err)
{
    for (size_t i = 0; i < n; i++) {
        bytes[i] = keys[i].size;
        res[i] = (rkm_result){.rc = RK_OK};
    }
    return c->driver->sizes_many ? c->driver->sizes_many(c->impl, keys, n, bytes, res, err) : RK_OK;
}

int rkm_hits_many(rkm_conn *c, const rkm_key *keys, size_t n, double *hits, rk_error *err)
{
    for (size_t i = 0; i < n; i++)
        hits[i] = -1;
    return c->driver->hits_many ? c->driver->hits_many(c->impl, keys, n, hits, err) : RK_OK;
}
