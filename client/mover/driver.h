/* driver.h — the mover's data-store drivers (docs/MIGRATE.md, "Data drivers"): one table of
 * operations per store, found by name, and the connection the mover copies keys through.
 *
 * A driver is one file that fills one rkm_driver, `rkm_driver_<name>`, and one line
 * `rk_data_protocol(<name> ...)` in client/CMakeLists.txt, which makes <name> a data protocol a
 * topology may name and puts the driver in driver.c's table (docs/MIGRATE.md). Callers
 * use rkm_conn and the rkm_* calls below, never a table directly: they check arguments and apply
 * the per-key size cap, the same for every store.
 *
 * Thread safety: an rkm_conn is used by one thread at a time; distinct connections are
 * independent. Every call is bounded: connects and each read or write by timeout_ms, and a failed
 * connection by `tries` attempts. */
#ifndef RKM_DRIVER_H
#define RKM_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringkeeper.h"

/* ---- options: how long to try a data server, and what to skip ---- */

#define RKM_DEFAULT_TRIES      5
#define RKM_DEFAULT_BACKOFF_MS 100
#define RKM_DEFAULT_TIMEOUT_MS 2000
#define RKM_DEFAULT_MAX_VALUE  (1024 * 1024)
#define RKM_MAX_TRIES          20   /* more tries are cut to this */
#define RKM_MAX_BACKOFF_MS     5000 /* each wait between tries is cut to this */

/* A field left 0 takes its RKM_DEFAULT_*. */
typedef struct rkm_options {
    unsigned tries;         /* attempts at a connection or a command, the first included */
    unsigned backoff_ms;    /* wait after the first failed attempt, doubled after each next one */
    unsigned timeout_ms;    /* for connecting, and for each read or write */
    size_t max_value_bytes; /* the size cap: rkm_get reports a value over it RKM_TOO_BIG */
    bool overwrite;         /* rkm_put may write over a value: only for the destinations of a
                               before_cutover catch-up, which nobody else writes to before the
                               cutover (docs/MIGRATE.md, "The catch-up"), or of an agent's, its
                               proxy stopped (docs/AGENT.md); false refuses it */
    bool per_key;           /* rkm_get_many and rkm_add_many call the per-key operations even when
                               the driver has batch forms, as for a driver without them (tests) */
    bool relay;             /* never copy server to server (rkm_copy_many): values pass through
                               the worker, for sources that cannot reach their new owners */
} rkm_options;

/* ---- what the operations pass ---- */

#define RKM_TTL_NONE (-1) /* ttl_ms of a key that never expires */

/* One key as a scan passes it; borrowed for the callback's duration. */
typedef struct rkm_key {
    const char *key; /* its bytes: any byte, NUL included (Redis), so `len` counts */
    size_t len;      /* bytes of key */
    int64_t ttl_ms;  /* remaining TTL when scanned, > 0, or RKM_TTL_NONE (also: unknown, Redis);
                        a hint: a copy takes its get's */
    uint64_t size;   /* the store's size of it, a hint: memcached's whole item; Redis 0 (unknown) */
} rkm_key;

/* Called by a scan once per live key; anything but RK_OK stops the scan, which returns it (with
 * `err`, which the callback may fill). */
typedef int (*rkm_key_fn)(void *ctx, const rkm_key *key, rk_error *err);

#define RKM_CURSOR_MAX 32

/* Where a scan is: kept by the caller between steps and across runs (the job stores `pos`). */
typedef struct rkm_cursor {
    char pos[RKM_CURSOR_MAX]; /* the driver's position, a string; "" at the start */
    bool done;                /* every key has been passed */
} rkm_cursor;

typedef enum rkm_state {
    RKM_ABSENT,  /* never there, deleted, expired, or expiring within the millisecond */
    RKM_FOUND,   /* there */
    RKM_TOO_BIG, /* there, but over max_value_bytes: `len` is its size, `data` NULL */
} rkm_state;

/* A value as its store gives it back, to be written to another server of the same store. Storage
 * the caller owns: rkm_value_init before the first use, rkm_value_deinit after the last. */
typedef struct rkm_value {
    rkm_state state; /* whether the rest means anything */
    char *data;      /* memcached: the value's bytes; Redis: its DUMP payload. Owned, malloc'd */
    size_t len;      /* bytes of data */
    uint32_t flags;  /* memcached's client flags, copied with the value; 0 for Redis */
    int64_t ttl_ms;  /* remaining TTL, > 0, or RKM_TTL_NONE */
} rkm_value;

void rkm_value_init(rkm_value *v);
/* Frees data and leaves `v` as rkm_value_init did. */
void rkm_value_deinit(rkm_value *v);

/* A value's fingerprint, for verifying a copy without moving the value again. */
typedef struct rkm_sum {
    rkm_state state; /* RKM_ABSENT, RKM_FOUND, or RKM_TOO_BIG (over the cap: not read, no xxh3) */
    uint64_t xxh3;   /* XXH3-64 of the checksummed bytes, seeded with the flags */
    size_t len;      /* bytes of the value as get gives it */
    int64_t ttl_ms;  /* remaining TTL, > 0, or RKM_TTL_NONE */
} rkm_sum;

/* What add-if-absent did. */
typedef enum rkm_added {
    RKM_COPIED,  /* written */
    RKM_PRESENT, /* the key was already there: its value is kept, never written over */
} rkm_added;

/* One key's own outcome in a batch: what the per-key operation would have returned for it. */
typedef struct rkm_result {
    int rc;       /* RK_OK, or a failure of this key alone: RK_EIO, RK_EINVAL */
    rk_error err; /* rc's message */
} rkm_result;

/* ---- the table of operations, one per store ---- */

/* `conn` is what `open` returned. Every operation returns RK_OK or an error with `err` naming the
 * server ("redis 10.0.0.7:6379: ..."): RK_EUNREACHABLE once the connection failed `tries` times
 * (each operation reconnects, with backoff, by itself), RK_EIO when the server answered what it
 * should not, RK_EINVAL for a key the store cannot hold. */
typedef struct rkm_driver {
    const char *name; /* the topology's "data", <name> of its rk_data_protocol line */
    /* Connects to `addr` ("host:port"), trying as `opt` (resolved: no 0 field; borrowed for the
     * connection's life) says. New, or NULL with `err` set. */
    void *(*open)(const char *addr, const rkm_options *opt, rk_error *err);
    void (*close)(void *conn);
    /* Reads about `count` keys from where `cursor` is, passes the live ones to `fn` and moves
     * `cursor` past them; never holds more than one batch in memory (memcached spools its key
     * list to a temporary file). Sets cursor->done after the last key. A key may come twice (a
     * scan started over), never not at all. */
    int (*scan)(void *conn, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx,
                rk_error *err);
    /* The whole value of `key` and its remaining TTL into `out`, which is as rkm_value_init
     * left it; or it stays RKM_ABSENT. */
    int (*get)(void *conn, const char *key, size_t len, rkm_value *out, rk_error *err);
    /* Writes `value` (RKM_FOUND, from `get` on a server of this store) under `key` with its TTL
     * unless the key is there: never writes over a value. */
    int (*add_if_absent)(void *conn, const char *key, size_t len, const rkm_value *value,
                         rkm_added *added, rk_error *err);
    /* Writes `value` (as add_if_absent's) under `key` with its TTL whether or not the key is
     * there: a before_cutover catch-up's, never a window's. */
    int (*put)(void *conn, const char *key, size_t len, const rkm_value *value, rk_error *err);
    /* Removes `key`; RK_OK also when it was not there. */
    int (*del)(void *conn, const char *key, size_t len, rk_error *err);
    /* The checksum of `key`'s value, computed the same on every server of this store. */
    int (*checksum)(void *conn, const char *key, size_t len, rkm_sum *out, rk_error *err);
    /* Optional (NULL: the mover calls get and add_if_absent once per key): get and
     * add_if_absent of keys[0 .. n), pipelined, each key's outcome in res[i] as its per-key
     * operation's. RK_OK, or a failure of the whole batch (RK_EUNREACHABLE after the tries,
     * RK_ENOMEM) with `err`. get_many's out[i] are as rkm_value_init left them; a value over
     * max_value_bytes may be reported RKM_TOO_BIG (its size in len) without being kept. */
    int (*get_many)(void *conn, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                    rk_error *err);
    int (*add_many)(void *conn, const rkm_key *keys, const rkm_value *values, size_t n,
                    rkm_added *added, rkm_result *res, rk_error *err);
    /* Optional, as get_many: checksum of keys[0 .. n) into out[i], pipelined. */
    int (*checksum_many)(void *conn, const rkm_key *keys, size_t n, rkm_sum *out, rkm_result *res,
                         rk_error *err);
    /* Optional: add_if_absent of keys[0 .. n) from server `src` straight to server `dest` of the
     * same store, the values never passing through the worker. seen[i] (as rkm_value_init left
     * it) gets what the source had: its state and size, never its data (a value over
     * max_value_bytes is RKM_TOO_BIG and not copied); added[i] whether it was copied. */
    int (*copy_many)(void *src, void *dest, const rkm_key *keys, size_t n, rkm_value *seen,
                     rkm_added *added, rkm_result *res, rk_error *err);
    /* Optional, for a store whose scan does not give sizes (rkm_key.size 0): the memory each of
     * keys[0 .. n) takes on the server as the server counts it, into bytes[i] (0: the key is
     * gone), pipelined; reads no value. NULL: the scan's rkm_key.size is the size. */
    int (*sizes_many)(void *conn, const rkm_key *keys, size_t n, uint64_t *bytes, rkm_result *res,
                      rk_error *err);
    /* Optional, for a store that counts its keys' reads: an estimate of the reads of each of
     * keys[0 .. n) into hits[i], -1 where the server keeps no count of it (no counting policy,
     * the key gone, a refusal), pipelined; reads no value and counts as no read. */
    int (*hits_many)(void *conn, const rkm_key *keys, size_t n, double *hits, rk_error *err);
} rkm_driver;

/* The driver named `name` (borrowed, static), or NULL. */
const rkm_driver *rkm_driver_find(const char *name);

/* For drivers whose checksum hashes what their get reads: gets `key` through d->get and fills
 * `out` with its state, size, TTL and the XXH3-64 of its bytes but the last `footer`, seeded
 * with its flags. */
int rkm_sum_by_get(const rkm_driver *d, void *conn, const char *key, size_t len, size_t footer,
                   rkm_sum *out, rk_error *err);
/* The same for keys[0 .. n) through d->get_many: a driver's checksum_many. A value get_many
 * reports RKM_TOO_BIG stays so (its size, no checksum): it is not read whole to be compared. */
int rkm_sum_many_by_get(const rkm_driver *d, void *conn, const rkm_key *keys, size_t n,
                        size_t footer, rkm_sum *out, rkm_result *res, rk_error *err);

/* ---- the connection callers use ---- */

typedef struct rkm_conn rkm_conn;

/* A connection to the data server at `addr` ("host:port") through the driver named `store`
 * (`opt` may be NULL for every default; copied). New (free with rkm_conn_free), or NULL with
 * RK_EINVAL (unknown store, bad address), RK_EUNREACHABLE or RK_ENOMEM in `err`. */
rkm_conn *rkm_conn_new(const char *store, const char *addr, const rkm_options *opt,
                       rk_error *err) RK_MUST_CHECK;
/* NULL is allowed. */
void rkm_conn_free(rkm_conn *c);

/* One step of a scan: count is 1 .. RKM_SCAN_MAX. See rkm_driver.scan; docs/MIGRATE.md says what
 * each store's cursor means. */
#define RKM_SCAN_MAX 10000
int rkm_scan(rkm_conn *c, rkm_cursor *cursor, size_t count, rkm_key_fn fn, void *ctx,
             rk_error *err);

/* See rkm_driver.get; `out` was initialised, and what it held is freed first. The size cap is
 * enforced here, for every store, once the driver has read the value: one over max_value_bytes
 * is freed and reported RKM_TOO_BIG with its size, for the caller to list as skipped. */
int rkm_get(rkm_conn *c, const char *key, size_t len, rkm_value *out, rk_error *err);

/* See rkm_driver.add_if_absent; RK_EINVAL for a value that is not RKM_FOUND. */
int rkm_add_if_absent(rkm_conn *c, const char *key, size_t len, const rkm_value *value,
                      rkm_added *added, rk_error *err);
/* See rkm_driver.put: RK_EINVAL for a value that is not RKM_FOUND, or a connection not opened
 * with rkm_options.overwrite, so that a window's copy can never write over a client's value. */
int rkm_put(rkm_conn *c, const char *key, size_t len, const rkm_value *value, rk_error *err);
/* rkm_get and rkm_add_if_absent of keys[0 .. n), through the driver's batch forms when it has
 * them (a few round trips in all), else once per key; each key's outcome in res[i] (its rc and
 * message as the per-key call's), and out[i] (initialised; what they held is freed first) or
 * added[i]. Returns RK_OK, or what stops the batch: RK_EUNREACHABLE, RK_ENOMEM, or RK_EINVAL for
 * a value that is not RKM_FOUND. The size cap as rkm_get's. */
int rkm_get_many(rkm_conn *c, const rkm_key *keys, size_t n, rkm_value *out, rkm_result *res,
                 rk_error *err);
int rkm_add_many(rkm_conn *c, const rkm_key *keys, const rkm_value *values, size_t n,
                 rkm_added *added, rkm_result *res, rk_error *err);
/* Whether rkm_copy_many copies from src to dest server to server: both of one store whose driver
 * can, and neither opened with relay or per_key. */
bool rkm_conn_copies_direct(const rkm_conn *src, const rkm_conn *dest);
/* See rkm_driver.copy_many; RK_EINVAL when !rkm_conn_copies_direct(src, dest). Returns as
 * rkm_get_many. */
int rkm_copy_many(rkm_conn *src, rkm_conn *dest, const rkm_key *keys, size_t n, rkm_value *seen,
                  rkm_added *added, rkm_result *res, rk_error *err);
/* The memory each of keys[0 .. n) (as a scan of c passed them) takes on c's server into
 * bytes[i], 0 for a key gone since: the driver's sizes_many, or the scan's sizes; each key's
 * outcome in res[i]. Returns as rkm_get_many. Reads no value: what `ringkeeper measure` weighs keys
 * by. */
int rkm_sizes_many(rkm_conn *c, const rkm_key *keys, size_t n, uint64_t *bytes, rkm_result *res,
                   rk_error *err);
/* The driver's hits_many, or -1 for every key of a store that keeps no count. RK_OK, or an error
 * of the exchange (unreachable, out of memory) as rkm_get_many's. */
int rkm_hits_many(rkm_conn *c, const rkm_key *keys, size_t n, double *hits, rk_error *err);
/* The connection's size cap, rkm_options.max_value_bytes. */
size_t rkm_conn_max_value(const rkm_conn *c);
/* Whether c was opened with rkm_options.overwrite. */
bool rkm_conn_may_overwrite(const rkm_conn *c);
/* See rkm_driver.del and rkm_driver.checksum. A checksum of a value over the connection's size
 * cap is RKM_TOO_BIG with its size and no xxh3: such a value is not compared. */
int rkm_delete(rkm_conn *c, const char *key, size_t len, rk_error *err);
int rkm_checksum(rkm_conn *c, const char *key, size_t len, rkm_sum *out, rk_error *err);
/* rkm_checksum of keys[0 .. n), through the driver's checksum_many when it has one, each key's
 * outcome in res[i]; returns as rkm_get_many. */
int rkm_checksum_many(rkm_conn *c, const rkm_key *keys, size_t n, rkm_sum *out, rkm_result *res,
                      rk_error *err);

#endif
