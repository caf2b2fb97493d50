/* driver_redis_weigh.c — what `ringkeeper measure` asks a Redis server, never writing to it: each
 * key's memory (MEMORY USAGE, plus the key's share of the key space's tables, which MEMORY USAGE
 * leaves out) and, under an LFU policy, its reads (OBJECT FREQ). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver_redis_shared.h"

#define RD_ENTRY      24           /* sizeof (dictEntry): key, value, next */
#define RD_BUCKET     8            /* a bucket of the table: a pointer */
#define RD_ROBJ       16           /* sizeof (robj), which MEMORY STATS charges each key's value */
#define RD_LFU_MAX    255          /* an LFU counter is 8 bits */
#define RD_FACTOR_MAX 2147483647.0 /* lfu-log-factor is a positive int */

static rd_cmd rd_cmd2(const char *a, const char *b)
{
    return (rd_cmd){.argc = 2, .argv = {a, b}, .len = {strlen(a), strlen(b)}};
}

/* The integer after `field` in an INFO reply ("field:N" or, in `db0:keys=N,...`, "keys=N"), or
 * -1. */
static long long rd_info_int(const redisReply *info, const char *field)
{
    const char *at = info->type == REDIS_REPLY_STRING ? strstr(info->str, field) : NULL;
    if (!at)
        return -1;
    char *end;
    long long v = strtoll(at + strlen(field), &end, 10);
    return end == at + strlen(field) || v < 0 ? -1 : v;
}

/* The integer MEMORY STATS gives `name` in db.0's entry, or -1. */
static long long rd_db0_stat(const redisReply *stats, const char *name)
{
    for (size_t i = 0; stats->type == REDIS_REPLY_ARRAY && i + 1 < stats->elements; i += 2) {
        const redisReply *k = stats->element[i], *db = stats->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || strcmp(k->str, "db.0") != 0 ||
            db->type != REDIS_REPLY_ARRAY)
            continue;
        for (size_t j = 0; j + 1 < db->elements; j += 2)
            if (db->element[j]->type == REDIS_REPLY_STRING &&
                strcmp(db->element[j]->str, name) == 0 &&
                db->element[j + 1]->type == REDIS_REPLY_INTEGER)
                return db->element[j + 1]->integer;
    }
    return -1;
}

/* A key's share of the bytes the key space's tables take beyond what MEMORY USAGE counts, from
 * the server's own figures (replies to INFO server, INFO memory, INFO keyspace and MEMORY STATS),
 * or -1 where they do not say it. MEMORY USAGE counts a key's dictEntry as 24 bytes, not the 32
 * jemalloc gives it, nor its bucket in the table, nor its entry in the table of expiries; MEMORY
 * STATS charges db 0's main table 40 bytes a key (entry and robj) and 8 a bucket, its table of
 * expiries 24 an entry and 8 a bucket: so the buckets are known. Redis 4 to 7 count so; Valkey and
 * Redis 8 keep their keys otherwise, and are not corrected (a Redis profile of them is a floor). */
static double rd_share_of(redisReply *const rep[4])
{
    long long major = rd_info_int(rep[0], "redis_version:");
    long long keys = rd_info_int(rep[2], "db0:keys=");
    long long expires = rd_info_int(rep[2], ",expires=");
    long long keys_ht = rd_db0_stat(rep[3], "overhead.hashtable.main");
    long long exp = rd_db0_stat(rep[3], "overhead.hashtable.expires");
    if (major < 4 || major > 7 || rep[0]->type != REDIS_REPLY_STRING ||
        strstr(rep[0]->str, "valkey_version:") || keys <= 0 || expires < 0 || expires > keys ||
        keys_ht < 0 || exp < 0 || keys > keys_ht / (RD_ENTRY + RD_ROBJ))
        return -1;
    double main_buckets = (double)(keys_ht - keys * (RD_ENTRY + RD_ROBJ)) / RD_BUCKET;
    double exp_buckets = (double)(exp - expires * RD_ENTRY) / RD_BUCKET;
    double entry =
        rep[1]->type == REDIS_REPLY_STRING && strstr(rep[1]->str, "mem_allocator:jemalloc")
            ? 32
            : RD_ENTRY;
    if (exp_buckets < 0)
        return -1;
    return ((main_buckets + exp_buckets) * RD_BUCKET + (entry - RD_ENTRY) * (double)keys +
            entry * (double)expires) /
           (double)keys;
}

/* r->table_share, asked once: a server that will not say (a command renamed or denied, another
 * version) charges its keys nothing more. */
static int rd_ask_tables(rd_conn *r, rk_error *err)
{
    rd_cmd cmds[4] = {rd_cmd2("INFO", "server"), rd_cmd2("INFO", "memory"),
                      rd_cmd2("INFO", "keyspace"), rd_cmd2("MEMORY", "STATS")};
    redisReply *rep[4];
    int rc = rkm_rd_run(r, 4, cmds, rep, err);
    if (rc != RK_OK)
        return rc;
    double share = rd_share_of(rep);
    r->tables = share >= 0 ? 1 : -1;
    r->table_share = share >= 0 ? share : 0;
    rkm_rd_free_replies(rep, 4);
    return RK_OK;
}

/* Each present key's size plus its share of the tables, the share's fractions carried from key
 * to key so that the sum is the tables' whole. */
static void rd_charge_share(rd_conn *r, uint64_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == 0)
            continue;
        double owed = r->share_owed + r->table_share;
        double whole = floor(owed);
        bytes[i] += (uint64_t)whole;
        r->share_owed = owed - whole;
    }
}

/* MEMORY USAGE of each key, one pipeline, plus its share of the key space's tables: the memory the
 * key takes as used_memory counts it. */
int rkm_rd_sizes_many(void *conn, const rkm_key *keys, size_t n, uint64_t *bytes, rkm_result *res,
                      rk_error *err)
{
    rd_conn *r = conn;
    rd_batch b;
    rkm_value *seen = malloc((n ? n : 1) * sizeof *seen);
    int rc = seen ? rkm_rd_batch_new(&b, r, n ? n : 1, 1, err)
                  : rk_error_set(err, RK_ENOMEM, NULL, "%s: out of memory", r->ep.label);
    for (size_t i = 0; seen && i < n; i++)
        rkm_value_init(&seen[i]);
    if (rc == RK_OK && !r->tables)
        rc = rd_ask_tables(r, err);
    if (rc == RK_OK)
        rc = rkm_rd_sizes(r, &b, keys, n, seen, res, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        bytes[i] = seen[i].state == RKM_ABSENT ? 0 : seen[i].len;
    if (rc == RK_OK)
        rd_charge_share(r, bytes, n);
    if (seen)
        rkm_rd_batch_free(&b, 0);
    free(seen);
    return rc;
}

/* Whether the server keeps LFU counters (its maxmemory-policy), and their log factor, into r. A
 * server that will not say (CONFIG renamed or denied), or says a factor Redis would not take,
 * keeps none as far as we know. */
static int rd_ask_lfu(rd_conn *r, rk_error *err)
{
    rd_cmd cmds[2] = {{.argc = 3,
                       .argv = {"CONFIG", "GET", "maxmemory-policy"},
                       .len = {strlen("CONFIG"), strlen("GET"), strlen("maxmemory-policy")}},
                      {.argc = 3,
                       .argv = {"CONFIG", "GET", "lfu-log-factor"},
                       .len = {strlen("CONFIG"), strlen("GET"), strlen("lfu-log-factor")}}};
    redisReply *rep[2] = {NULL, NULL};
    int rc = rkm_rd_run(r, 2, cmds, rep, err);
    if (rc != RK_OK)
        return rc;
    int pair = rep[0]->type == REDIS_REPLY_ARRAY && rep[0]->elements == 2 &&
               rep[1]->type == REDIS_REPLY_ARRAY && rep[1]->elements == 2 &&
               rep[0]->element[1]->type == REDIS_REPLY_STRING &&
               rep[1]->element[1]->type == REDIS_REPLY_STRING;
    double factor = pair ? strtod(rep[1]->element[1]->str, NULL) : 0;
    int sane = pair && isfinite(factor) && factor >= 0 && factor <= RD_FACTOR_MAX;
    r->lfu = sane && strstr(rep[0]->element[1]->str, "lfu") ? 1 : -1;
    r->lfu_factor = sane ? factor : 0;
    rkm_rd_free_replies(rep, 2);
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

/* OBJECT FREQ of each key, one pipeline, on a server with an LFU policy; a counter no 8 bits hold
 * is no count. */
int rkm_rd_hits_many(void *conn, const rkm_key *keys, size_t n, double *hits, rk_error *err)
{
    rd_conn *r = conn;
    int rc = r->lfu ? RK_OK : rd_ask_lfu(r, err);
    if (rc != RK_OK || r->lfu < 0 || n == 0)
        return rc;
    rd_batch b;
    rc = rkm_rd_batch_new(&b, r, n, 1, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        b.cmds[i] = (rd_cmd){.argc = 3,
                             .argv = {"OBJECT", "FREQ", keys[i].key},
                             .len = {strlen("OBJECT"), strlen("FREQ"), keys[i].len}};
    rc = rc ? rc : rkm_rd_run(r, n, b.cmds, b.rep, err);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        if (b.rep[i]->type == REDIS_REPLY_INTEGER && b.rep[i]->integer >= 0 &&
            b.rep[i]->integer <= RD_LFU_MAX)
            hits[i] = rd_lfu_reads(b.rep[i]->integer, r->lfu_factor);
    rkm_rd_batch_free(&b, rc == RK_OK ? n : 0);
    return rc;
}
