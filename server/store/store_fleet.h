/* store_fleet.h — the fleet shared between replicas (SPEC section 9): a store several ringkeeperd
 * share (etcd) also holds, per cluster, a record of every client one of them serves, so that each
 * replica's report counts the whole fleet. A record is written by the replica that saw its client
 * last, when what it counts changes; it lives under that replica's lease, so the records of a
 * replica that dies go with it after the clients' expiry, unless another replica writes them again.
 * One server on SQLite shares nothing: rkd_store_fleet_shared says 0 and nothing here is called.
 *
 * Thread safety: rkd_store_fleet_write may be called from one thread at a time; the sink's
 * functions are called from the backend's watch thread, one at a time.
 */
#ifndef RKD_STORE_FLEET_H
#define RKD_STORE_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "ringkeeper.h"

typedef struct rkd_store rkd_store;

#define RKD_FLEET_REPLICA_MAX 64 /* bytes of a replica's name, NUL included */

/* One client as its replica recorded it; every string borrowed (NULL or "" for none). */
typedef struct rkd_fleet_record {
    const char *cluster;
    const char *id; /* its RK-Client id */
    int stranger;   /* 1: seen without a client token, kept apart (clients.h) */
    int64_t held;   /* versions as clients.h's rkd_client_report has them; 0: none */
    int64_t offered;
    int64_t refused;
    const char *reason;  /* with refused */
    const char *addr;    /* numeric address */
    const char *agent;   /* User-Agent */
    const char *token;   /* the client token's name */
    int64_t at;          /* when the replica last wrote it, seconds since the epoch */
    const char *replica; /* the name of the replica that wrote it */
    int64_t rev;         /* the store's revision of the record (0: never stored) */
    int deleted;    /* read: the record is gone; written: delete it if `rev` is still its own */
    uint64_t round; /* read: > 0 in a full reading (below) */
} rkd_fleet_record;

/* Where a replica hears of the records others write (none of its own). */
typedef struct rkd_fleet_sink {
    /* A record another replica put or deleted, or one read in full reading number r->round. */
    void (*record)(void *arg, const rkd_fleet_record *r);
    /* Full reading number `round` is done: a record of another replica not read in it is gone. The
     * backend reads in full when it starts and whenever its watch had to start again. */
    void (*read_all)(void *arg, uint64_t round);
    void *arg;
} rkd_fleet_sink;

/* Non-zero when `s` shares its fleet between replicas. */
int rkd_store_fleet_shared(rkd_store *s);

/* Starts sharing as replica `replica` (a name for people, cut to RKD_FLEET_REPLICA_MAX - 1
 * bytes): a lease of `ttl_s` seconds for this replica's records, the first full reading through
 * `sink` (before it returns), then a thread that tells `sink` of others' changes until the store
 * closes. `sink` is copied; its arg must outlive the store. RK_OK, RK_EINVAL when the store does
 * not share, or the store's error. */
int rkd_store_fleet_share(rkd_store *s, const char *replica, unsigned ttl_s,
                          const rkd_fleet_sink *sink, rk_error *err) RK_MUST_CHECK;

/* Writes the `n` records (this replica's; their `at` and `replica` are set here): puts under this
 * replica's lease, and deletes of those marked `deleted`, each only while its `rev` is still the
 * record's. Sets each written record's `rev`. Also keeps the lease alive, so call it at least every
 * ttl_s / 3 seconds, with n 0 when there is nothing to write. *lost is set when the lease had
 * expired (etcd unreachable for ttl_s: its records are gone) and a new one was granted: write this
 * replica's records again. RK_OK, or the store's error (nothing known written: write them later).
 */
int rkd_store_fleet_write(rkd_store *s, rkd_fleet_record *recs, size_t n, int *lost,
                          rk_error *err) RK_MUST_CHECK;

/* Stops hearing of the others (the sink is not called once it returns; within about a second).
 * This replica's records stay until its lease expires, so its clients that poll another replica
 * meanwhile are never missing from the count. Nothing when the fleet is not shared. */
void rkd_store_fleet_unshare(rkd_store *s);

#endif
