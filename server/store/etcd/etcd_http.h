/* etcd_http.h — a small client of etcd's v3 HTTP/JSON gateway (etcd 3.4: /v3/kv/range and
 * /v3/kv/txn), for the etcd store (store_etcd.c). libcurl and jansson; keys and values are base64
 * on the wire and plain bytes here.
 *
 * Endpoints: several "HOST:PORT", tried in turn from the last one that answered. A request that
 * cannot have reached etcd's log (the member was unreachable, or answered "no leader" because
 * every request carries Grpc-Metadata-hasleader: true) moves on to the next member; while every
 * member says it has no leader (an election), the round is tried again for up to 2 s; a write whose
 * fate is unknown (a timeout or a broken connection after it was sent: etcd may still apply it)
 * stops there and says so through *unknown, for the caller to check before retrying.
 *
 * Errors: RKD_STORE_EUNAVAILABLE with a message naming etcd for anything etcd or the network does,
 * RK_ENOMEM when memory runs out.
 *
 * Security (rke_security): TLS to every member (https), verified against a CA file or the
 * system's, with a client certificate when given; and etcd's own users: the client asks
 * /v3/auth/authenticate for a token before its first request and sends it in the Authorization
 * header, and when etcd refuses a token (it expired: simple tokens live 5 minutes by default)
 * gets a new one and sends the request again, once.
 *
 * Thread safety: one client may be used from any number of threads at once; each request uses
 * its own curl handle. rke_watch holds its calling thread for as long as the watch lasts. */
#ifndef RKD_ETCD_HTTP_H
#define RKD_ETCD_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ringkeeper.h"

#define RKE_TIMEOUT_MS 5000 /* a whole request at most, then its outcome is unknown */
/* The most bytes of keys and values one txn carries: etcd refuses requests over 1.5 MiB. */
#define RKE_REQUEST_MAX (1280u << 10)

typedef struct rke_client rke_client;

/* One key as read. */
typedef struct rke_kv {
    char *key;            /* NUL-terminated */
    char *value;          /* NUL-terminated (values are text or JSON here); `len` bytes before it */
    size_t len;           /* the value's length */
    int64_t mod_revision; /* the revision of its last change */
} rke_kv;

/* The keys of a range, in etcd's key order (ascending bytes: never sorted by the server). */
typedef struct rke_kvs {
    rke_kv *items;
    size_t count;
    int64_t revision; /* the store's revision the range was read at */
    int64_t total;    /* the keys in the whole range, whatever a limit returned (etcd's count) */
    int more;         /* non-zero: a limit left keys of the range out */
} rke_kvs;

void rke_kvs_free(rke_kvs *kvs);
/* The value of a range of one key, taken out of it (the caller frees it); NULL when the range
 * found no key. */
char *rke_kvs_take_value(rke_kvs *kvs);

/* How to reach the members; every string borrowed (the client keeps copies), NULL for none. */
typedef struct rke_security {
    int tls;              /* non-zero: https (etcds://), else plain http */
    const char *cacert;   /* PEM CA file to verify the members with; NULL: the system's CAs */
    const char *cert;     /* PEM client certificate (etcd --client-cert-auth), with `key` */
    const char *key;      /* its PEM private key */
    const char *user;     /* an etcd user (etcdctl user add); NULL: no etcd authentication */
    const char *password; /* that user's password */
} rke_security;

/* A new client of `endpoints` ("HOST:PORT[,HOST:PORT...]", at most 16) reached as `sec` says
 * (NULL: plain http, no user), or NULL with err set (RK_EINVAL for a malformed list). Nothing is
 * sent before the first request. */
rke_client *rke_client_new(const char *endpoints, const rke_security *sec,
                           rk_error *err) RK_MUST_CHECK;
void rke_client_free(rke_client *c);

/* Keys from `key` up to `end` (exclusive; NULL: `key` alone) into *out (zeroed by the caller; the
 * caller frees it, also on failure). Linearizable: what a majority has committed. */
int rke_range(rke_client *c, const char *key, const char *end, rke_kvs *out, rk_error *err);
/* How much of a range rke_range_with reads. */
typedef struct rke_range_opts {
    int64_t limit;    /* at most this many keys, the first in key order (0: all) */
    int count_only;   /* non-zero: no keys, only out->total */
    int64_t revision; /* > 0: as the store was at that revision (pages of one reading) */
} rke_range_opts;
/* rke_range with `o` (NULL: as rke_range); out->total and out->more say what was left out. */
int rke_range_with(rke_client *c, const char *key, const char *end, const rke_range_opts *o,
                   rke_kvs *out, rk_error *err);
/* Keys from key up to end (NULL: key alone), one range of rke_ranges. */
typedef struct rke_range_req {
    const char *key;
    const char *end;
} rke_range_req;
/* The `n` ranges into out[0 .. n) (zeroed by the caller, who frees them, also on failure), read
 * together at one revision in one round trip (a txn of reads). Linearizable, as rke_range. */
int rke_ranges(rke_client *c, const rke_range_req *req, size_t n, rke_kvs *out, rk_error *err);
/* `key`'s value into *out (a copy; key NULL and mod_revision 0 when absent). */
int rke_get(rke_client *c, const char *key, rke_kv *out, rk_error *err);
void rke_kv_deinit(rke_kv *kv);

/* The end of the range of every key that starts with `prefix` (prefix with its last byte + 1);
 * a new string or NULL (out of memory). */
char *rke_prefix_end(const char *prefix);

/* A transaction: comparisons that must all hold, then puts applied together. */
typedef struct rke_txn {
    json_t *compare; /* array of Compare */
    json_t *success; /* array of RequestOp */
    size_t bytes;    /* keys and values so far, before base64 */
    int failed;      /* an allocation failed while building: commit reports RK_ENOMEM */
} rke_txn;

void rke_txn_init(rke_txn *t);
void rke_txn_deinit(rke_txn *t);
/* Compares `key`'s mod_revision with `rev` (0: the key must not exist). */
void rke_txn_if_mod(rke_txn *t, const char *key, int64_t rev);
/* Puts `len` bytes of `value` at `key`. */
void rke_txn_put(rke_txn *t, const char *key, const char *value, size_t len);
void rke_txn_put_str(rke_txn *t, const char *key, const char *value);
/* The same, the key attached to `lease` (etcd deletes it when the lease expires). */
void rke_txn_put_leased(rke_txn *t, const char *key, const char *value, size_t len, int64_t lease);
/* Deletes `key` if its mod_revision is still `rev` (a txn nested in t: the other puts of t apply
 * whatever this comparison says). */
void rke_txn_delete_if(rke_txn *t, const char *key, int64_t rev);
/* The number of operations added to t (etcd refuses a txn of more than --max-txn-ops, 128 by
 * default). */
size_t rke_txn_ops(const rke_txn *t);
/* Sends the txn: *ok non-zero when the comparisons held and the puts applied. On failure, *unknown
 * is non-zero when etcd may still apply it. */
int rke_txn_commit(rke_client *c, const rke_txn *t, int *ok, int *unknown, rk_error *err);
/* The same, and the store's revision after it into *rev (the mod_revision of every key it put). */
int rke_txn_commit_at(rke_client *c, const rke_txn *t, int *ok, int *unknown, int64_t *rev,
                      rk_error *err);

/* ---- Leases (etcd_lease.c) ---- */

/* A new lease of `ttl_s` seconds into *id. */
int rke_lease_grant(rke_client *c, int64_t ttl_s, int64_t *id, rk_error *err);
/* Renews lease `id`: *alive 0 when etcd no longer has it (it expired: its keys are gone). */
int rke_lease_keepalive(rke_client *c, int64_t id, int *alive, rk_error *err);

/* ---- Watching ---- */

/* Called for each key put under a watch, with the key as it is now, or deleted (`deleted` set: the
 * value is empty, kv->mod_revision the deletion's); `arg` is the watcher's. */
typedef void (*rke_watch_fn)(void *arg, const rke_kv *kv, int deleted);

/* Watches the keys from `key` up to `end` for changes from revision `from` on, calling fn for each,
 * until the stream ends: etcd lost its leader (hasleader), compacted past `from`, the member went
 * away, or *stop became non-zero (checked about once a second). Returns RKD_STORE_EUNAVAILABLE
 * with why it ended, or RK_OK when stopped; the caller resynchronises and watches again. */
int rke_watch(rke_client *c, const char *key, const char *end, int64_t from, rke_watch_fn fn,
              void *arg, const atomic_int *stop, rk_error *err);

#endif /* RKD_ETCD_HTTP_H */
