/* client_internal.h — what the client's files (client.c, client_round.c, client_snapshot.c,
 * client_fetch.c, client_verify.c, client_cache.c) share; not installed. */
#ifndef RK_CLIENT_INTERNAL_H
#define RK_CLIENT_INTERNAL_H

#include <pthread.h>
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

/* What names a ring: its version, the id of the store that numbered it ("" from a server too
 * old to send one) and its fingerprint as recomputed here ("" until the ring was verified). A
 * restored backup numbers on from where it was taken under a new id, so a version number alone
 * names a ring only within one store id; and a hostile server may send a ring under a real store
 * id and a number that store has not issued yet, so only the fingerprint says that two rings of
 * the same number and store are the same (the server answers 304 only to it). */
typedef struct rki_ring_id {
    int64_t version;
    char store_id[RKI_STORE_ID_LEN];
    char fingerprint[RKI_FINGERPRINT_LEN];
} rki_ring_id;

/* Non-zero when a and b name the same ring: version, store id and fingerprint. */
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

/* ---- client.c, client_round.c, client_snapshot.c: one client ---- */

struct rk_client {
    rk_client_config cfg; /* its strings point to the copies below */
    char *copies[9];      /* owned copies of cfg's strings */
    char *url;            /* {server}/v1/clusters/{cluster}/ring; owned */
    char *url_buf;        /* url plus "?wait=S"; owned, fetching thread only */
    size_t url_size;      /* bytes allocated for url and for url_buf */
    rki_fetch *fetch;     /* owned; fetching thread only */
    rki_ring_id floor;    /* newest ring accepted, the file's included; fetching thread */
    rki_ring_id saved;    /* ring the last-known-good file holds; fetching thread */
    rki_ring_id issued;   /* a floor its store said it has issued: not asked again; fetching
                             thread */
    /* The ring refused last, said in every request (RK-Refused) until a ring is accepted, so the
     * server neither counts it as held nor sends it again; fetching thread. */
    rki_ring_id refused;              /* version 0: none */
    rk_client_admit_fn admit;         /* the application's check (NULL: none) and its argument; */
    void *admit_arg;                  /* set before the first fetch, read on the fetching thread */
    int refused_code;                 /* why, as the application was told: its code ... */
    char refused_why[RKI_REASON_MAX]; /* ... and message, printable ASCII */
    int64_t saved_prev;               /* ... and the previous version its window names (0: none) */
    atomic_int stop;                  /* set: the refresher and its transfer stop */
    pthread_mutex_t mu;               /* guards current and st (and the refresher's pause) */
    pthread_cond_t cv;                /* broadcast when stop is set */
    rk_snapshot *current;             /* in service, reference held; NULL before the first ring */
    uint64_t serials;                 /* snapshots published so far (guarded by mu) */
    rki_window window;   /* the migration window of the ring in service (docs/API.md); written
                            under mu by the fetching thread only */
    int prev_wanted;     /* that window's previous ring is not in service yet: fetch it */
    rk_client_status st; /* counters and the last outcome */
    pthread_t thread;    /* the refresher, when running */
    int running;         /* the refresher was started (start/stop are not concurrent) */
    unsigned wait_s;     /* the refresher's long poll */
    unsigned retry_ms;   /* the refresher's pause after an error */
    /* The last-known-good file as verified by rk_client_new, kept until the first fetch so that
     * the same bytes from the server, or a fallback to the file, do not build the ring again. */
    char *file_body;        /* owned; NULL when none */
    size_t file_len;        /* its length */
    rk_ring *file_ring;     /* owned; the ring verified from it */
    rki_window file_window; /* its migration window */
};

/* client_snapshot.c. The ring in service changes only on the fetching thread, under mu. */

/* Puts `ring` (stolen, freed on failure) in service under its document's window `w`. */
int rki_client_install(rk_client *c, rk_ring *ring, const rki_ring_id *id, const rki_window *w,
                       int from_cache, rk_error *e);
/* The ring in service stays, under the window `w` its document names now: when the window
 * closed, the previous ring goes. */
int rki_client_rewindow(rk_client *c, const rki_window *w, rk_error *e);
/* Whether the window in service wants a previous ring not served yet: then 1, with the window in
 * *w and the id of the ring in service in *cur. */
int rki_client_wants_previous(rk_client *c, rki_window *w, rki_ring_id *cur);
/* Serves `prev` (stolen) as the previous ring next to the ring in service, unless that is no
 * longer `cur` or the application dropped the previous ring meanwhile (then `prev` is freed). */
int rki_client_serve_previous(rk_client *c, const rki_ring_id *cur, rk_ring *prev,
                              const rki_ring_id *id, rk_error *e);
/* What names the ring in service; version 0 when none. */
rki_ring_id rki_client_current_id(rk_client *c);
int64_t rki_client_current_version(rk_client *c);

/* client_round.c: the outcome of a round, in the client's status. */

/* Sets the last outcome shown by rk_client_status_get, without counting it. */
void rki_client_set_last(rk_client *c, int rc, const char *message);
/* Records the outcome of a round: `rc` and the message in `e`; failures are counted. */
void rki_client_record(rk_client *c, int rc, const rk_error *e);

/* Frees the last-known-good file kept for the first fetch. */
void rki_client_drop_file(rk_client *c);

#endif
