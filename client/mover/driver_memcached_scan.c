/* driver_memcached_scan.c — the memcached driver's scan, by hand over plain TCP (libmemcached
 * does not offer it): the `lru_crawler metadump hash` stream (the hash table: `all` walks the LRU
 * lists, which the LRU maintainer reorders under it, passing some keys twice and missing others).
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
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "driver_memcached_shared.h"

#define MC_STATS_LINES_MAX 1000                            /* a `stats` answer is about 90 lines */
#define MC_DUMP            "lru_crawler metadump hash\r\n" /* not "all": above */
/* A metadump may pass keys stored while it runs, never many more than the server held when it
 * began: past curr_items * MC_SPOOL_GROWTH + MC_SPOOL_SLACK keys the stream is a broken or hostile
 * server's, and the scan stops before it fills the disk. */
#define MC_SPOOL_GROWTH  2
#define MC_SPOOL_SLACK   100000
#define MC_SPOOL_RESERVE (256ull << 20)        /* the spool leaves this much of its disk free */
#define MC_SPOOL_BUF     (64 * 1024)           /* the spool's stdio buffer: few system calls */
#define MC_REC_MAX       (1 + MC_KEY_MAX + 16) /* a spooled key: length, bytes, exp, size */

void rkm_mc_dump_stop(mc_conn *m)
{
    rkm_lines_free(m->dump);
    m->dump = NULL;
}

void rkm_mc_spool_stop(mc_conn *m)
{
    if (m->spool)
        fclose(m->spool);
    m->spool = NULL;
}

/* From `stats`: the server's clock against ours ("STAT time <unix time>"), so that the expiry
 * times the stream gives are compared with the server's now, not this host's; and how many keys
 * it holds ("STAT curr_items"), which bounds the stream. */
static int mc_read_stats(mc_conn *m, rk_error *err)
{
    char *line;
    size_t len;
    long long server = 0, v;
    int rc = rkm_lines_send(m->dump, "stats\r\n", 7, err);
    m->spool_keys_max = 0;
    for (int i = 0; rc == RK_OK && i < MC_STATS_LINES_MAX; i++) {
        rc = rkm_lines_read(m->dump, &line, &len, err);
        if (rc != RK_OK || strcmp(line, "END") == 0)
            break;
        if (sscanf(line, "STAT curr_items %lld", &v) == 1 && v >= 0)
            m->spool_keys_max = (uint64_t)v * MC_SPOOL_GROWTH + MC_SPOOL_SLACK;
        if (sscanf(line, "STAT time %lld", &server) != 1)
            continue;
        m->skew_s = (int64_t)server - (int64_t)time(NULL);
    }
    if (rc == RK_OK && (server == 0 || m->spool_keys_max == 0))
        rc = rk_error_set(err, RK_EIO, NULL,
                          "%s: `stats` did not give the server's time and curr_items", m->ep.label);
    return rc;
}

/* What the spool in `dir` may take: the disk's free space less MC_SPOOL_RESERVE. */
static int mc_spool_room(mc_conn *m, const char *dir, rk_error *err)
{
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0)
        return rk_error_set(err, RK_EIO, NULL, "%s: cannot see the free space of %s: %s",
                            m->ep.label, dir, strerror(errno));
    uint64_t avail = (uint64_t)fs.f_bavail * fs.f_frsize;
    m->spool_bytes_max = avail > MC_SPOOL_RESERVE ? avail - MC_SPOOL_RESERVE : 0;
    return RK_OK;
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
    return rk_error_set(err, RK_EIO, NULL, "%s: cannot %s the metadump spool: %s", m->ep.label,
                        what, strerror(errno));
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
        return mc_spool_room(m, dir, err);
    int rc = rk_error_set(err, RK_EIO, NULL, "%s: cannot create the metadump spool in %s: %s",
                          m->ep.label, dir, strerror(errno));
    if (m->spool)
        rkm_mc_spool_stop(m);
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
    if (fwrite(rec, 1, n, m->spool) != n)
        return mc_spool_error(m, "write", err);
    m->spool_bytes += n;
    return RK_OK;
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
        return rk_error_set(err, RK_EUNREACHABLE, NULL, "%s: lru_crawler busy", m->ep.label);
    if (mc_parse_dump_line(line, key, &k, &exp) != 0)
        return rk_error_set(err, RK_EIO, NULL, "%s: unexpected metadump line '%.60s'", m->ep.label,
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
    rkm_mc_spool_stop(m);
    m->passed = m->step_passed = 0;
    m->step_off = 0;
    m->spool_bytes = 0;
    int rc = rkm_lines_connect(&m->dump, m->ep.label, m->ep.host, m->ep.port, m->ep.opt->timeout_ms,
                               err);
    if (rc == RK_OK)
        rc = mc_read_stats(m, err);
    if (rc == RK_OK)
        rc = rkm_lines_send(m->dump, MC_DUMP, strlen(MC_DUMP), err);
    if (rc == RK_OK)
        rc = mc_spool_open(m, err);
    uint64_t i = 0;
    for (; rc == RK_OK && !end && i <= m->spool_keys_max &&
           m->spool_bytes + MC_REC_MAX <= m->spool_bytes_max;
         i++) {
        rc = rkm_lines_read(m->dump, &line, &len, err);
        if (rc == RK_OK)
            rc = mc_spool_line(m, line, &end, err);
    }
    if (rc == RK_OK && !end)
        rc = rk_error_set(err, RK_EIO, NULL,
                          "%s: the metadump went on past %llu keys, more than the server's own "
                          "count allows (curr_items x%d + %d) or the spool's disk can hold: a "
                          "broken server, or not a memcached; the scan stopped",
                          m->ep.label, (unsigned long long)i, MC_SPOOL_GROWTH, MC_SPOOL_SLACK);
    rkm_mc_dump_stop(m);
    if (rc == RK_OK && (fflush(m->spool) != 0 || fseeko(m->spool, 0, SEEK_SET) != 0))
        rc = mc_spool_error(m, "write", err);
    if (rc != RK_OK)
        rkm_mc_spool_stop(m);
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
        rkm_mc_spool_stop(m);
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
        rkm_mc_spool_stop(m);
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

int rkm_mc_scan_step(void *conn, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx,
                     rk_error *err)
{
    mc_scan s = {.m = conn, .cursor = cursor, .count = count, .fn = fn, .ctx = ctx};
    int rc = rkm_retry(s.m->ep.opt, mc_try_scan, &s, err);
    return rc == RK_OK ? s.stopped : rc;
}
