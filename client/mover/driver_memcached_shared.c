/* driver_memcached_shared.c — what the memcached driver's operations on one key
 * (driver_memcached.c) and its batches (driver_memcached_batch.c) both use: the keys the text
 * protocol takes, the hand-written connection for meta commands, and an expiry for a TTL. Below
 * both, so that neither calls the other back. */
#include <time.h>

#include "driver_memcached_shared.h"

#define MC_RELATIVE_MAX (30 * 86400) /* memcached reads a longer expiry as a unix time */

/* The text protocol's keys: 1 to 250 bytes, no space or control character. */
int rkm_mc_key_ok(const char *key, size_t len)
{
    if (len == 0 || len > MC_KEY_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f)
            return 0;
    return 1;
}

/* The hand-written connection for meta commands and pipelines, made when there is none. */
int rkm_mc_meta(mc_conn *m, rk_error *err)
{
    if (m->meta)
        return RK_OK;
    return rkm_lines_connect(&m->meta, m->ep.label, m->ep.host, m->ep.port, m->ep.opt->timeout_ms,
                             err);
}

/* memcached's expiry for a TTL, rounded up so that a copy never expires before its source. Past
 * 30 days it is a unix time, on our clock: a skew of seconds in a TTL of over a month. */
time_t rkm_mc_exptime(int64_t ttl_ms)
{
    int64_t s = ttl_ms == RKM_TTL_NONE ? 0 : (ttl_ms + 999) / 1000;
    return (time_t)(s > MC_RELATIVE_MAX ? (int64_t)time(NULL) + s : s);
}
