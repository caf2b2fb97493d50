/* store_etcd_shared.h — what the files of the etcd store share and no other file sees: its state,
 * the key layout (docs/ETCD.md), the per-cluster head, and the write step that every change runs
 * through. store_etcd.c opens the store and reads and publishes versions; store_etcd_cutover.c has
 * activation, policies, approvals and events (docs/API.md, "Cutover").
 *
 * Every change to a cluster is one etcd txn that compares the cluster's head key's mod_revision
 * with the one read at the start of the step, and puts the new head with the rest: the head is the
 * cluster's lock, as BEGIN IMMEDIATE is SQLite's. A txn that lost the race is built again on what
 * is there now (rke_run_step), at most RKE_STEP_ATTEMPTS times after a random pause; the steps of
 * one replica take turns (write_lock), so only other replicas' writes make a step lose. */
#ifndef RKD_STORE_ETCD_SHARED_H
#define RKD_STORE_ETCD_SHARED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>
#include <nettle/sha2.h>

#include "etcd_http.h"
#include "store_backend.h"
#include "store_etcd.h"

#define RKE_STEP_ATTEMPTS 32 /* a step rebuilt this often on others' changes gives up (503) */
#define RKE_BACKOFF_MS    64 /* the most a lost race waits, at random, before the next attempt */
#define RKE_KEY_MAX       512
#define RKE_OP_LEN        17           /* an op id: 16 hex digits and a NUL */
#define RKE_INLINE_MAX    (512u << 10) /* a larger topology goes to content-addressed chunks */

typedef struct rke_watcher rke_watcher;
typedef struct rke_fleet rke_fleet;

/* A cluster's head: P/heads/<cluster> (with the id of the handle that wrote it last). Version and
 * event numbers are gapless because each comes from here and the head is rewritten in the txn that
 * uses it. */
typedef struct rke_head {
    int64_t latest;   /* highest version, 0 before the first publish */
    int64_t active;   /* the active version, 0 when none */
    int64_t events;   /* highest event number */
    int64_t previous; /* a migration window is open over `active`: the version it keeps; else 0 */
} rke_head;

/* The backend's state behind rkd_store_ops' `void *b`. */
typedef struct rke_store {
    rke_client *etcd;           /* the members */
    char *prefix;               /* every key starts with it, e.g. "/ringkeeper" */
    pthread_mutex_t write_lock; /* one step at a time here: races are only between replicas */
    char writer[RKE_OP_LEN];    /* this handle's id, in every head it writes (for the watch) */
    rke_watcher *watcher;       /* the watch thread, or NULL before ops->watch */
    rke_fleet *fleet;           /* the fleet shared, or NULL before ops->fleet_share */
} rke_store;

typedef rkd_store_event_draft rke_event;

typedef struct rke_step rke_step;

/* Checks the preconditions against `cur` and adds the step's puts to `t`, moving `next` (a copy of
 * cur) on; events go through rke_step_event. RK_OK or the error the whole step ends with. */
typedef int (*rke_build_fn)(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next,
                            rke_txn *t, rk_error *err);

/* One atomic change of a cluster. */
struct rke_step {
    const char *cluster; /* borrowed */
    int create;          /* non-zero: a cluster without a head starts empty (publish) */
    rke_build_fn build;  /* what the step does */
    void *arg;           /* the build's own input */
    const char *now;     /* RFC 3339, for the events */
    char op[RKE_OP_LEN]; /* this call's id, in each of its events: finds a write applied late */
    int64_t version;     /* out: the version the first event of the step concerns */
    /* Keys the build needs that do not depend on the head, read with it in one request at each
     * attempt (at most RKE_READ_MORE_MAX; with_n 0: none) into with_got (zeroed by the caller,
     * who frees them after the step); the build may take what it uses out of them. */
    const rke_range_req *with;
    size_t with_n;
    rke_kvs *with_got;
};

/* `n` random bytes as 2n lowercase hex digits and a NUL into `out` (from /dev/urandom). */
int rke_random_hex(char *out, size_t n, rk_error *err);
/* Runs `st` until its txn applies (RK_OK), its build refuses, or etcd fails. After a write whose
 * fate was unknown it first looks for st->op in the events written since, so a change that etcd
 * applied late is not made twice. */
int rke_run_step(rke_store *s, rke_step *st, rk_error *err);
/* Adds event `e` as the next of next->events to `t`. */
void rke_step_event(rke_store *s, const rke_step *st, rke_head *next, rke_txn *t,
                    const rke_event *e);

/* ---- Keys ---- */

/* "<prefix>/heads/<cluster>"; with cluster "", the prefix of every head. */
void rke_head_key(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster);
/* "<prefix>/store_id". */
void rke_id_key(const rke_store *s, char key[RKE_KEY_MAX]);
/* An approval's key, "<prefix>/c/<cluster>/a/<v>/<digest>/<approver>"; with approver NULL, the
 * prefix of every approval of that plan. */
void rke_approval_key(rke_store *s, char key[RKE_KEY_MAX], const char *cluster, int64_t v,
                      const char *digest, const char *approver);

/* "<prefix>/c/<cluster>/<what>" (what "policy", "v/", "e/" ...) into `key`. */
void rke_key(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster, const char *what);
/* "<prefix>/c/<cluster>/<what><n as 20 digits>": numbers in key order. */
void rke_key_num(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster, const char *what,
                 int64_t n);
/* The key of the cluster's document of `kind` (store_etcd_docs.c). */
void rke_doc_key(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster,
                 rkd_store_doc_kind kind);

/* ---- JSON values (store_etcd.c) ---- */

/* Member `name` of `o` as an integer; 0 when absent. */
int64_t rke_num(json_t *o, const char *name);

/* ---- Reads (store_etcd_read.c; the head's in store_etcd.c) ---- */

/* "<prefix>/blobs/<hex>": a topology chunk, named by its SHA-256. */
void rke_blob_key(const rke_store *s, char key[RKE_KEY_MAX], const char *hex);
/* The SHA-256 of data[0 .. len) as lowercase hex. */
void rke_sha256_hex(const char *data, size_t len, char hex[2 * SHA256_DIGEST_SIZE + 1]);
/* rkd_store_ops get, list and list_clusters. */
int rke_get_version(void *b, const char *cluster, rkd_store_pick pick, int64_t v,
                    rkd_store_version **out, char **doc, rk_error *err);
int rke_list(void *b, const char *cluster, size_t limit, int64_t before,
             rkd_store_version_list *out, rk_error *err);
int rke_list_clusters(void *b, size_t limit, const char *after, rkd_store_cluster_list *out,
                      rk_error *err);
/* How many clusters (heads) the store holds: a count-only range read, no keys sent. */
int rke_count_clusters(rke_store *s, int64_t *count, rk_error *err);

#define RKE_READ_MORE_MAX 6 /* keys rke_read_head_and reads with the head */

/* The head of `cluster` (zeros when absent), *rev its mod_revision (0 when absent). */
int rke_read_head(rke_store *s, const char *cluster, rke_head *h, int64_t *rev, rk_error *err);
/* The same, and the `n` ranges of `more` (n <= RKE_READ_MORE_MAX) into got[0 .. n) (zeroed by the
 * caller, who frees them, also on failure), at the head's revision in one round trip. */
int rke_read_head_and(rke_store *s, const char *cluster, rke_head *h, int64_t *rev,
                      const rke_range_req *more, size_t n, rke_kvs *got, rk_error *err);
/* Version n's metadata (a new reference) from its read `got` (n > 0: it must be there and be an
 * object), NULL for n == 0. */
int rke_meta_from(const rke_kvs *got, int64_t n, const char *cluster, json_t **meta, rk_error *err);
/* Version v's metadata as JSON (new reference); a damaged or missing one is an error. */
int rke_read_meta(rke_store *s, const char *cluster, int64_t v, json_t **meta, rk_error *err);
/* Puts version v's metadata `meta` in `t`. */
void rke_put_meta(rke_store *s, rke_txn *t, const char *cluster, int64_t v, json_t *meta);
/* Puts the head `h` of `cluster` (with this handle as its writer) in `t`. */
void rke_put_head(rke_store *s, rke_txn *t, const char *cluster, const rke_head *h);
/* Version metadata for draft `d` (activated_at: created_at when d->activate, else ""), listing
 * `chunks` when not NULL; a new reference, NULL when out of memory. */
json_t *rke_draft_meta(const rkd_store_draft *d, json_t *chunks);
/* Writes topology `doc` as content-addressed chunks (each its own request), their names into
 * *chunks (new array, also on failure). */
int rke_put_chunks(rke_store *s, const char *doc, json_t **chunks, rk_error *err);
/* rkd_store_ops.publish (store_etcd_publish.c). */
int rke_publish(void *b, const rkd_store_draft *d, rkd_store_published *out, rk_error *err);
/* JSON `j` at `key` in `t` (compact). */
void rke_put_json(rke_txn *t, const char *key, json_t *j);
/* Reads the keys of numbers lo..hi under `what` into *kvs, one each and in order (else an error).
 */
int rke_read_numbered(rke_store *s, const char *cluster, const char *what, int64_t lo, int64_t hi,
                      rke_kvs *kvs, rk_error *err);
/* Versions or events lo..hi (hi < 1: none) of the page below `before` (0: the newest) of at most
 * `limit`, among 1..count; *next_before as store.h's lists have it. */
void rke_page(int64_t count, size_t limit, int64_t before, int64_t *lo, int64_t *hi,
              int64_t *next_before);
/* Version n as a new record (its state, and the migration window open over it, as `h` makes them)
 * and its topology text: `text` when it was read already (taken; NULL: read it). */
int rke_version_out(rke_store *s, const char *cluster, int64_t n, const rke_head *h, json_t *meta,
                    char *text, rkd_store_version **out, char **doc, rk_error *err);
/* A JSON value read from `kv` (new reference), NULL when it is not JSON. */
json_t *rke_kv_json(const rke_kv *kv);
/* A JSON object member's string, "" when absent. */
const char *rke_str(json_t *o, const char *name);
/* RKD_STORE_EUNAVAILABLE: `what` of cluster is damaged in etcd. */
int rke_damaged(rk_error *err, const char *cluster, const char *what);

/* ---- store_etcd_cutover.c ---- */

/* The version an activation moves to, as its plan sees it (publish-and-activate has not stored it
 * yet); pointers borrowed. */
typedef struct rke_plan_target {
    int64_t v;               /* its number */
    const char *fingerprint; /* its fingerprint */
    const char *author;      /* its author, or NULL */
} rke_plan_target;

/* What an activation or an approval of version v over `active` reads, together in one round trip
 * at one revision: the policy, the active version's metadata (the plan's digest), v's metadata,
 * its topology (for the answer) and v's approvals of any plan. Everything here changes only in
 * steps, which move the head, so the step's compare on the head covers these reads too. */
typedef struct rke_cutover_reads {
    rkd_store_policy policy;
    char *rollout;       /* the rollout document, or NULL when none (for an activation's gate) */
    json_t *active_meta; /* the active version's metadata, or NULL when none is active */
    json_t *meta;        /* v's, or NULL for v = 0 (a version being published) */
    char *text;          /* v's topology, or NULL (chunked, or v = 0) */
    rke_kvs approvals;   /* a/<v>/... */
} rke_cutover_reads;

/* The policy in the range of its key, `got` (the defaults when it is absent). */
int rke_policy_from(const rke_kvs *got, const char *cluster, rkd_store_policy *out, rk_error *err);

/* Reads r for version v (0: one being published) over `active` (0: none), and the rollout
 * document when `rollout` is set (an activation with a gate: up to 1 MiB, so only then); the
 * caller deinits r, also on failure. */
int rke_read_cutover(rke_store *s, const char *cluster, int64_t v, int64_t active, int rollout,
                     rke_cutover_reads *r, rk_error *err);

/* The same reads in two halves, for a step that reads them with the head (rke_step.with): the
 * ranges, made for an active number guessed before the head is read (the range at index
 * RKE_CUTOVER_ACTIVE is that version's metadata; the others do not depend on the head), and r
 * from what they got (taking the topology and the approvals out of `got`). Version 0 (a publish's,
 * numbered in its step) has no keys yet, and the rollout is read only when asked: the k->n ranges
 * read are those wanted, in order, k->at[i] the place of read i among them (-1: not read). */
#define RKE_CUTOVER_READS  6
#define RKE_CUTOVER_ACTIVE 0
typedef struct rke_cutover_keys {
    char key[RKE_CUTOVER_READS][RKE_KEY_MAX];
    rke_range_req req[RKE_CUTOVER_READS];
    char *end;      /* the approvals' range end */
    int64_t active; /* the active number the keys were made for */
    size_t n;       /* ranges to read */
    int at[RKE_CUTOVER_READS];
} rke_cutover_keys;
int rke_cutover_keys_init(rke_store *s, const char *cluster, int64_t v, int64_t active, int rollout,
                          rke_cutover_keys *k, rk_error *err);
void rke_cutover_keys_deinit(rke_cutover_keys *k);
int rke_cutover_from(const rke_cutover_keys *k, rke_kvs got[RKE_CUTOVER_READS], const char *cluster,
                     int64_t v, int64_t active, rke_cutover_reads *r, rk_error *err);
void rke_cutover_reads_deinit(rke_cutover_reads *r);

/* A step's cutover reads for version v, read with its head when the caller guessed the active
 * number (one request fewer), else after it: rke_cutover_with_head sets up step `st` (w is then
 * the step's until rke_cutover_with_done, also after a failure); inside the build,
 * rke_step_cutover_reads gives r over cur->active from what the step read (the active version's
 * metadata read again when the guess was wrong), or reads it all now. */
typedef struct rke_cutover_with {
    rke_cutover_keys keys;
    rke_kvs got[RKE_CUTOVER_READS];
    int used;    /* non-zero: the step reads the keys with its head */
    int rollout; /* non-zero: the rollout document too */
} rke_cutover_with;
int rke_cutover_with_head(rke_store *s, rke_step *st, int64_t v, int64_t hint, int rollout,
                          rke_cutover_with *w, rk_error *err);
void rke_cutover_with_done(rke_cutover_with *w);
int rke_step_cutover_reads(rke_store *s, rke_step *st, int64_t v, rke_cutover_with *w,
                           const rke_head *cur, rke_cutover_reads *r, rk_error *err);

/* Inside a step's build, before the store's own checks: the caller's gate of activation `a` (its
 * a->gate, NULL: none) over what `r` read and a publish's `ring` (NULL: an activation), which sets
 * a->moved_fraction. */
int rke_gate_in_step(const rke_step *st, const rke_head *cur, const rke_cutover_reads *r,
                     const rk_ring *ring, rkd_store_activation *a, rk_error *err);
/* Inside a step's build: the refusal while a migration window is open, the approval gate of
 * activating `to` over cur->active (rkd_store_check_approvals), then the new active number, the
 * window the policy opens and the activation's event, with what `r` read for it. The version's
 * metadata (its activated_at) is the caller's to put. */
int rke_activate_in_step(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next,
                         rke_txn *t, const rke_plan_target *to, const rkd_store_activation *a,
                         const rke_cutover_reads *r, rk_error *err);
int rke_activate(void *b, const char *cluster, int64_t v, const rkd_store_activation *a,
                 const char *now, rkd_store_version **out, char **doc, rk_error *err);
/* Puts policy `p` of `cluster` in `t`. */
void rke_put_policy_json(rke_store *s, rke_txn *t, const char *cluster, const rkd_store_policy *p);
int rke_get_policy(void *b, const char *cluster, rkd_store_policy *out, rk_error *err);
int rke_put_policy(void *b, const char *cluster, const rkd_store_policy *p, const char *author,
                   const char *detail, const char *now, rk_error *err);
int rke_approve(void *b, const char *cluster, const rkd_store_approval_req *a, const char *now,
                rk_error *err);
int rke_finish_migration(void *b, const char *cluster, const char *author, const char *comment,
                         const char *now, rkd_store_version **out, char **doc, rk_error *err);
int rke_list_events(void *b, const char *cluster, size_t limit, int64_t before,
                    rkd_store_event_list *out, rk_error *err);

/* ---- store_etcd_docs.c: a cluster's documents (rkd_store_ops get_doc, put_doc) ---- */

int rke_get_doc(void *b, rkd_store_doc_kind kind, const char *cluster, char **doc, int64_t *rev,
                rk_error *err);
int rke_put_doc(void *b, rkd_store_doc_kind kind, const char *cluster, const char *doc, int64_t rev,
                const rkd_store_doc_event *e, const char *now, rk_error *err);

/* ---- store_etcd_import.c: copying a whole store (rkd_store_ops list_approvals, adopt_id,
 * import) ---- */

int rke_list_approvals(void *b, const char *cluster, rkd_store_approval_list *out, rk_error *err);
int rke_adopt_id(void *b, const char *id, rk_error *err);
int rke_import(void *b, const rkd_store_history *h, char *const *docs, rk_error *err);

/* ---- store_etcd_watch.c ---- */

/* rkd_store_ops.watch: starts the thread that reports other replicas' activations. */
int rke_watch_start(void *b, rkd_store_remote_fn fn, void *arg, rk_error *err);
/* rkd_store_ops.stale: the heads could not be watched nor read since the last watch ended. */
int rke_watch_stale(void *b, char out[RKD_STORE_STALE_LEN]);
/* Stops and frees it (NULL is fine); returns within about a second. */
void rke_watch_stop(rke_watcher *w);

/* ---- store_etcd_fleet.c: the fleet shared between replicas (store_fleet.h) ---- */

int rke_fleet_share(void *b, const char *replica, unsigned ttl_s, const rkd_fleet_sink *sink,
                    rk_error *err);
int rke_fleet_write(void *b, rkd_fleet_record *recs, size_t n, int *lost, rk_error *err);
/* rkd_store_ops.fleet_unshare: stops the watch and frees the fleet (none: nothing); returns
 * within about a second. Its records stay until the lease expires. */
void rke_fleet_unshare(void *b);

#endif /* RKD_STORE_ETCD_SHARED_H */
