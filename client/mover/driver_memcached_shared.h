/* driver_memcached_shared.h — what the three files of the memcached driver share
 * (driver_memcached.c: the connection, the per-key operations and the table;
 * driver_memcached_batch.c: the batches, pipelined; driver_memcached_scan.c: the scan): the
 * connection's state and the calls from one file to another. Not used outside
 * client/mover/driver_memcached*.c. */
#ifndef RKM_DRIVER_MEMCACHED_SHARED_H
#define RKM_DRIVER_MEMCACHED_SHARED_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <libmemcached/memcached.h>

#include "net.h"

#define MC_KEY_MAX 250 /* memcached's longest key */

/* The driver's table (driver_memcached.c), which its checksums name. */
extern const rkm_driver rkm_driver_memcached;

/* One memcached server: the `conn` of every operation of rkm_driver_memcached. */
typedef struct mc_conn {
    rkm_endpoint ep;          /* first (rkm_open_conn): where the hand-written connections go */
    memcached_st *mc;         /* libmemcached: values, add, delete */
    rkm_lines *meta;          /* TTL queries; NULL before the first and after a failure */
    rkm_lines *dump;          /* the metadump stream while it is spooled, else NULL */
    FILE *spool;              /* the scan in progress: its whole stream, or NULL */
    uint64_t passed;          /* keys read from the spool: the cursor */
    uint64_t step_passed;     /* `passed` where the last step began, */
    off_t step_off;           /* and its offset in the spool: a failed step rewinds to it */
    int64_t skew_s;           /* the server's clock minus ours, when the stream began */
    uint64_t spool_keys_max;  /* the stream's bound: the server's own item count, with margin */
    uint64_t spool_bytes_max; /* and the spool's: what the disk has free, less a reserve */
    uint64_t spool_bytes;     /* written to the spool so far */
} mc_conn;

/* ---- driver_memcached.c ---- */

/* 1 when `key` is one the text protocol can carry: 1 to MC_KEY_MAX bytes, no space or control
 * character. */
int rkm_mc_key_ok(const char *key, size_t len);
/* Connects m->meta, the hand-written connection, unless it is there. After a failure on it the
 * caller frees it and sets it NULL, since a half-read answer would answer the next command. */
int rkm_mc_meta(mc_conn *m, rk_error *err);
/* The expiry memcached's commands take for a TTL in ms (RKM_TTL_NONE: 0), rounded up. */
time_t rkm_mc_exptime(int64_t ttl_ms);

/* ---- driver_memcached_batch.c: rkm_driver_memcached's get_many, add_many, checksum_many ---- */

int rkm_mc_get_many(void *conn, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                    rk_error *err);
int rkm_mc_add_many(void *conn, const rkm_key *keys, const rkm_value *values, size_t n,
                    rkm_added *added, rkm_result *res, rk_error *err);
int rkm_mc_checksum_many(void *conn, const rkm_key *keys, size_t n, rkm_sum *out, rkm_result *res,
                         rk_error *err);

/* ---- driver_memcached_scan.c ---- */

/* rkm_driver_memcached's scan. */
int rkm_mc_scan_step(void *conn, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx,
                     rk_error *err);
/* Close the metadump connection (m->dump) and the spool (m->spool), each when there is one, and
 * set it NULL. */
void rkm_mc_dump_stop(mc_conn *m);
void rkm_mc_spool_stop(mc_conn *m);

#endif
