/* client_internal.h — what the client's files (client.c, client_fetch.c, client_verify.c,
 * client_cache.c) share; not installed. */
#ifndef RK_CLIENT_INTERNAL_H
#define RK_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

#define RKI_DEFAULT_CONNECT_TIMEOUT_MS 2000L
#define RKI_DEFAULT_TIMEOUT_MS         10000L
#define RKI_DEFAULT_MAX_BODY           ((size_t)64 << 20)
#define RKI_MAX_WAIT_S                 60u
#define RKI_REASON_MAX                 160 /* bytes of a refusal's message the server is told */
/* The largest version accepted: 2^53-1, the largest integer every JSON reader holds exactly (RFC
 * 7493); ringkeeperd numbers 1, 2, 3 ..., so anything near it comes from a hostile or broken
 * server.
 */
#define RKI_MAX_VERSION ((int64_t)9007199254740991)

/* The configured cap on a body, with the default applied. */
size_t rki_max_body(const rk_client_config *cfg);

/* ---- client_verify.c ---- */

#define RKI_STORE_ID_LEN    17 /* the server's store id: 16 lowercase hex digits and a NUL */
#define RKI_FINGERPRINT_LEN 17 /* a ring's fingerprint: 16 lowercase hex digits and a NUL */

/* What names a ring: its version and the id of the store that numbered it ("" from a server too
 * old to send one). A restored backup numbers on from where it was taken under a new id, so a
 * version number alone names a ring only within one store id. */
typedef struct rki_ring_id {
    int64_t version;
    char store_id[RKI_STORE_ID_LEN];
} rki_ring_id;

/* Non-zero when a and b name the same ring. */
int rki_same_ring(const rki_ring_id *a, const rki_ring_id *b);

/* The previous ring a ring document names while a migration window is open (docs/API.md). */
typedef struct rki_window {
    int64_t previous; /* its version, older than the ring's; 0: no window open */
    char fingerprint[RKI_FINGERPRINT_LEN]; /* its fingerprint */
} rki_window;

/* Every check of rk_client_verify on `text`; on success a new ring (free with rk_ring_free; it
 * holds its topology) goes to *ring and the document's window to *window (may be NULL). `floor`
 * (NULL: none) is the newest ring accepted: the document must not be older than it when both come
 * from the same store, or, with `any_store`, whatever store it comes from (versions of different
 * stores do not compare: the server's is taken). *id gets the document's version and store id once
 * they passed their own checks, also when a later check fails (RK_EOLDVERSION says by how much);
 * zeroed otherwise. */
int rki_verify_doc(const rk_client_config *cfg, const char *text, size_t len,
                   const rki_ring_id *floor, int any_store, rki_ring_id *id, rki_window *window,
                   rk_ring **ring, rk_error *err);
/* The checks of the previous ring of window `w` of ring `of` on the document of GET
 * .../versions/{w->previous}: as rki_verify_doc in any state, and it must be that version of the
 * same store with the fingerprint the ring document names. */
int rki_verify_previous(const rk_client_config *cfg, const char *text, size_t len,
                        const rki_ring_id *of, const rki_window *w, rk_ring **ring, rk_error *err);

/* The newest version of the list that GET .../versions?limit=N answers ({"versions": [...]},
 * newest first) and its store id, into *latest: the newest version the store has issued for the
 * cluster (versions are never deleted nor reused within a store). RK_EDOCUMENT when the body is
 * not such a list of cfg's cluster or is empty; *latest zeroed then. */
int rki_verify_latest(const rk_client_config *cfg, const char *text, size_t len,
                      rki_ring_id *latest, rk_error *err);

/* ---- client_fetch.c: one HTTP transfer at a time, on the fetching thread ---- */

typedef struct rki_fetch rki_fetch;

/* A response: the status and the body (owned by the rki_fetch, valid until the next transfer). */
typedef struct rki_response {
    long status;      /* HTTP status */
    const char *body; /* NUL-terminated; "" when there is none */
    size_t len;       /* bytes in body */
} rki_response;

/* New transfer state for `cfg` (borrowed: must outlive it); `stop` is polled so that another
 * thread can abort a transfer (set it, then call rki_fetch_wakeup). NULL with `err` set. */
rki_fetch *rki_fetch_new(const rk_client_config *cfg, const atomic_int *stop, rk_error *err);
void rki_fetch_free(rki_fetch *f);
/* The claim a ring request makes (docs/API.md, "Clients"): If-None-Match, the ring it holds, and
 * RK-Refused, the ring it refuses with the reason its application was given. */
typedef struct rki_claim {
    const char *etag;    /* NULL: none */
    const char *refused; /* the header's value, printable ASCII; NULL: none */
} rki_claim;

/* GET `url` with the headers of `claim` (NULL: none) and a total timeout of the configured one
 * plus wait_s. RK_OK with any HTTP status in *out; RK_EUNREACHABLE (network, TLS,
 * timeout, aborted by `stop`) or RK_ETOOLARGE (over max_body) otherwise. */
int rki_fetch_get(rki_fetch *f, const char *url, const rki_claim *claim, unsigned wait_s,
                  rki_response *out, rk_error *err);
/* Makes a transfer in progress on another thread notice `stop` at once. Any thread. */
void rki_fetch_wakeup(rki_fetch *f);

/* ---- client_cache.c: the last-known-good file ---- */

/* Replaces `path` with a header line (length and XXH3 checksum) and the `len` bytes of `data`,
 * atomically and durably (temporary file in the same folder, fsync, rename, fsync of the folder),
 * keeping the file's mode less write for group and others (*tightened: the old mode when that
 * took something away, else 0). RK_EIO with the reason. */
int rki_cache_write(const char *path, const char *data, size_t len, unsigned *tightened,
                    rk_error *err);
/* Reads the file, checks its header, and returns the body it holds in a new NUL-terminated buffer
 * (free it). RK_EIO when it cannot be read (*missing set when it does not exist), RK_ETOOLARGE
 * over `max`, RK_ECACHE when the length or checksum does not match. */
int rki_cache_read(const char *path, size_t max, char **out, size_t *len, int *missing,
                   rk_error *err);

#endif
