/* store_backend.h — the seam between the store-neutral layer (store_domain.c) and a storage
 * backend, in the manner of SQLite's sqlite3_vfs: a backend is a table of operations over its own
 * opaque state, taking and returning plain data.
 *
 * Who does what: store_domain.c implements every rkd_store_* call of store.h once. It checks the
 * arguments, builds what a publish stores (the ring for the fingerprint, points, the timestamp,
 * the serialised topology), parses stored topologies back (so a damaged one is refused the same
 * way everywhere), and runs the activation watch. A backend only stores and reads: it numbers
 * versions without gaps, applies the state changes of an activation atomically, and decides the
 * preconditions inside that same atomic step with rkd_store_check_* below, so every backend gives
 * the same codes and messages (and so the same HTTP answers).
 *
 * Adding a store: write store_<name>.c with a constructor returning its state and an
 * rkd_store_ops, give it a header for its own extras (like store_sqlite.h), and let
 * rkd_store_open_with() in store_open.c pick it by the location it is given. Nothing in store.h,
 * store_domain.c, api.c or http.c changes.
 *
 * Events (docs/API.md) are written by the backend in the same atomic step as the change each
 * records: publish and activate carry what their event needs, and approvals are counted inside
 * the activation's step with rkd_store_check_approvals, so a gate cannot be passed by a race.
 *
 * Not here on purpose: what only SQLite has (migrations, backup) lives in store_sqlite.h.
 *
 * Copying (migrate-store): list_approvals, adopt_id and import exist so that a store can be
 * written as another holds it, numbers, states and timestamps included; nothing else may write a
 * version that way. rkd_store_refuse_import below gives every backend the same refusal.
 *
 * Thread safety: the operations of one backend state may be called from any number of threads at
 * once, except `close`.
 */
#ifndef RKD_STORE_BACKEND_H
#define RKD_STORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "store.h"
#include "store_fleet.h"

/* Which version `get` reads. */
typedef enum rkd_store_pick {
    RKD_PICK_VERSION = 0, /* the one numbered v */
    RKD_PICK_ACTIVE = 1,  /* the active one; RKD_STORE_ENOACTIVE when none */
    RKD_PICK_LATEST = 2,  /* the highest number */
} rkd_store_pick;

/* A version to publish, everything but its number; every pointer is borrowed for the call. */
typedef struct rkd_store_draft {
    const char *cluster;        /* created on its first publish */
    const char *topology;       /* the topology as compact JSON, stored as is */
    const char *scheme;         /* rk_scheme_name() of its scheme */
    const char *hash;           /* rk_hash_name() of its hash */
    uint32_t vnode_factor;      /* the topology's vnode_factor; 0 in the ketama scheme */
    uint64_t points;            /* the ring's point count */
    const char *fingerprint;    /* docs/RING.md, 16 lowercase hex digits */
    const char *created_at;     /* RFC 3339 UTC; also activated_at when `activate` is set */
    const char *author;         /* NULL for none */
    const char *comment;        /* NULL for none */
    int64_t if_match_latest;    /* RKD_STORE_ANY, or the latest version there must be */
    int activate;               /* non-zero: activate it in the same atomic step */
    int64_t revert_of;          /* > 0: its event is a "revert" to this version, else "publish" */
    double moved_fraction;      /* with activate: for the activation's event; < 0 unknown */
    int64_t active_hint;        /* with activate: as rkd_store_activation's (0: none) */
    const rkd_store_gate *gate; /* with activate: as rkd_store_activation's (NULL: none) */
    const rk_ring *ring;        /* with a gate: the topology's ring, for its view (NULL: none) */
    int64_t max_clusters;       /* > 0: a new cluster only while fewer exist (below) */
} rkd_store_draft;

/* What a publish committed: the version's number and, when it activated it, the migration window
 * that activation opened (previous 0: none), as rkd_store_version has them. */
typedef struct rkd_store_published {
    int64_t version;
    int64_t previous;
    char previous_fingerprint[RKD_STORE_FP_LEN];
} rkd_store_published;

/* An event a backend records with the change it describes (the fields of rkd_store_event); every
 * pointer borrowed, NULL (0, or < 0 for the fraction) for none. */
typedef struct rkd_store_event_draft {
    const char *kind;
    const char *author;
    int64_t version;
    int64_t from_version;
    const char *digest;
    double moved_fraction;
    const char *detail;
} rkd_store_event_draft;

/* Tells the store-neutral layer of a change another handle committed (watch, below). */
typedef void (*rkd_store_remote_fn)(void *arg, const char *cluster, int64_t version,
                                    rkd_store_change what);

/* The operations of a backend. `b` is the state its constructor returned. Every fallible one
 * returns RK_OK or a negative code with `err` (never NULL here) filled, and changes nothing on
 * failure. Records are new and carry no topology: reads hand the stored text back in *doc for
 * store_domain.c to parse. Whatever *out and *doc hold afterwards is the caller's to free, also on
 * failure (a commit may fail after the read). */
typedef struct rkd_store_ops {
    /* Releases the state; NULL is never passed. */
    void (*close)(void *b);
    /* The store's identity (store.h: rkd_store_id) into `id`; read once, when the store opens. */
    int (*store_id)(void *b, char id[RKD_STORE_ID_LEN], rk_error *err);
    /* RK_OK when the storage answers. */
    int (*ping)(void *b, rk_error *err);
    /* Optional (NULL: never read-only): non-zero while writes fail with RKD_STORE_EUNAVAILABLE. */
    int (*read_only)(void *b);
    /* Optional (NULL: never stale): store.h's rkd_store_stale, `out` already "". */
    int (*stale)(void *b, char out[RKD_STORE_STALE_LEN]);
    /* Stores `d` as the cluster's next version and fills *out (zeroed by the caller). */
    int (*publish)(void *b, const rkd_store_draft *d, rkd_store_published *out, rk_error *err);
    /* Activates version v as of `now` (checked with rkd_store_check_activation, then
     * rkd_store_check_approvals), records its event and reads it back within the same atomic
     * step. */
    int (*activate)(void *b, const char *cluster, int64_t v, const rkd_store_activation *a,
                    const char *now, rkd_store_version **out, char **doc, rk_error *err);
    /* Reads one version (v only for RKD_PICK_VERSION); a missing one is reported with
     * rkd_store_missing. */
    int (*get)(void *b, const char *cluster, rkd_store_pick pick, int64_t v,
               rkd_store_version **out, char **doc, rk_error *err);
    /* Up to `limit` versions older than `before` (both already checked; before 0: no bound),
     * newest first, into *out (zeroed by the caller; emptied by the caller on failure). */
    int (*list)(void *b, const char *cluster, size_t limit, int64_t before,
                rkd_store_version_list *out, rk_error *err);
    /* Up to `limit` clusters named after `after` ("": from the first; both already checked),
     * sorted by name, one range read, with next_after set when more follow, into *out (zeroed
     * and, on failure, emptied by the caller). */
    int (*list_clusters)(void *b, size_t limit, const char *after, rkd_store_cluster_list *out,
                         rk_error *err);
    /* The cluster's policy (the defaults when it never set one). */
    int (*get_policy)(void *b, const char *cluster, rkd_store_policy *out, rk_error *err);
    /* Sets the policy (already checked) and records its event, in one atomic step. */
    int (*put_policy)(void *b, const char *cluster, const rkd_store_policy *p, const char *author,
                      const char *detail, const char *now, rk_error *err);
    /* Records an approval and its event in one atomic step, after checking there that a->digest
     * is the plan from the active version to a->version (rkd_store_check_approval). With
     * a->dry_run, stops after the checks with RKD_STORE_EDRYRUN, writing nothing. */
    int (*approve)(void *b, const char *cluster, const rkd_store_approval_req *a, const char *now,
                   rk_error *err);
    /* Closes the cluster's migration window (RKD_STORE_ENOWINDOW, from rkd_store_no_window, when
     * none is open), records its "finish" event and reads the active version back, in one atomic
     * step. */
    int (*finish_migration)(void *b, const char *cluster, const char *author, const char *comment,
                            const char *now, rkd_store_version **out, char **doc, rk_error *err);
    /* store.h's rkd_store_get_doc and rkd_store_put_doc (cluster already checked; `now` for the
     * event). A document is one per cluster and kind, with a revision; a put compares the
     * revision and writes the document and its event in one atomic step. */
    int (*get_doc)(void *b, rkd_store_doc_kind kind, const char *cluster, char **doc, int64_t *rev,
                   rk_error *err);
    int (*put_doc)(void *b, rkd_store_doc_kind kind, const char *cluster, const char *doc,
                   int64_t rev, const rkd_store_doc_event *e, const char *now, rk_error *err);
    /* Like `list`, for events. */
    int (*list_events)(void *b, const char *cluster, size_t limit, int64_t before,
                       rkd_store_event_list *out, rk_error *err);
    /* Every approval of the cluster, into *out (zeroed and, on failure, emptied by the caller). */
    int (*list_approvals)(void *b, const char *cluster, rkd_store_approval_list *out,
                          rk_error *err);
    /* rkd_store_adopt_id: `id` already checked; the emptiness check and the write in one step. */
    int (*adopt_id)(void *b, const char *id, rk_error *err);
    /* rkd_store_import: `h` already checked (numbered 1..n, every version with its topology
     * text in docs[i]). */
    int (*import)(void *b, const rkd_store_history *h, char *const *docs, rk_error *err);
    /* Optional (NULL: a handle sees only its own activations): calls fn, from a thread of the
     * backend's until `close`, for each activation and each finished migration window other
     * handles commit (other replicas sharing the storage), and for those that might have been
     * missed while it could not watch. Called once, by rkd_store_new. */
    int (*watch)(void *b, rkd_store_remote_fn fn, void *arg, rk_error *err);
    /* Optional (NULL, all three: the store is one server's, its fleet not shared): store_fleet.h's
     * rkd_store_fleet_share (called once), rkd_store_fleet_write (after it) and
     * rkd_store_fleet_unshare (also without a share before it). */
    int (*fleet_share)(void *b, const char *replica, unsigned ttl_s, const rkd_fleet_sink *sink,
                       rk_error *err);
    int (*fleet_write)(void *b, rkd_fleet_record *recs, size_t n, int *lost, rk_error *err);
    void (*fleet_unshare)(void *b);
} rkd_store_ops;

/* Wraps a backend's state into a store (closing the state when that fails: NULL with err set).
 * `ops` is borrowed for the store's life (a static table); the store owns `b`. */
rkd_store *rkd_store_new(const rkd_store_ops *ops, void *b, rk_error *err) RK_MUST_CHECK;

/* ---- Shared by backends, so that codes and messages agree whichever store answers ---- */

/* Time t as RFC 3339 UTC ("2026-11-29T17:41:10Z"). */
void rkd_store_format_time(time_t t, char out[RKD_STORE_TIME_LEN]);
/* *dst = a new copy of src, or NULL for a NULL src; RK_ENOMEM with err set. */
int rkd_store_strdup(const char *src, char **dst, rk_error *err);
/* Reports a missing cluster (RKD_STORE_ENOCLUSTER), version v (RKD_STORE_ENOVERSION) or active
 * version (RKD_STORE_ENOACTIVE) of `cluster`; returns `code`. */
int rkd_store_missing(rk_error *err, int code, const char *cluster, int64_t v);
/* Runs `gate` (NULL: none, *moved unchanged) over what an activation's transaction read. */
int rkd_store_run_gate(const rkd_store_gate *gate, const rkd_store_gate_view *view, double *moved,
                       rk_error *err);
/* A publish's precondition against the cluster's latest version (0: none yet). */
int rkd_store_check_publish(const rkd_store_draft *d, int64_t latest, rk_error *err);
/* A publish that creates d->cluster while `count` clusters exist: RKD_STORE_ETOOMANYCLUSTERS at
 * d->max_clusters or more (naming --max-clusters), else RK_OK. Backends count only when the cluster
 * is new and d->max_clusters > 0. */
int rkd_store_check_room(const rkd_store_draft *d, int64_t count, rk_error *err);
/* An activation of v, in HTTP's order: existence (v up to `latest`; 404), the precondition on
 * the `active` version (0: none; 412), then moving forward only (409). */
int rkd_store_check_activation(const char *cluster, int64_t v, int64_t latest, int64_t active,
                               int64_t if_match_active, rk_error *err);
/* The digest of the plan from the active version (0: none, fingerprint then "") to v. */
void rkd_store_digest(int64_t active, const char *active_fp, int64_t v, const char *v_fp,
                      char out[RK_PLAN_DIGEST_LEN]);
/* An approval of `digest` for v: the digest of the plan now (`want`), then self-approval (the
 * policy's distinct_approver and v's `author`). */
int rkd_store_check_approval(const char *cluster, int64_t v, const char *digest, const char *want,
                             const rkd_store_policy *p, const char *author, const char *approver,
                             rk_error *err);
/* An activation of v over `active` with `have` valid approvals of plan `digest`. */
int rkd_store_check_approvals(const char *cluster, int64_t v, int64_t active, const char *digest,
                              const rkd_store_policy *p, int64_t have, rk_error *err);

/* The draft of version `v` as it was published, its topology text `doc` (import); pointers
 * borrowed from v and doc. */
void rkd_store_draft_of(const rkd_store_version *v, const char *doc, rkd_store_draft *d);
/* The refusal of adopt_id or import into a store that holds clusters (`what`: "any cluster" or
 * the cluster's name); returns RKD_STORE_ECONFLICT. */
int rkd_store_refuse_import(const char *what, rk_error *err);

/* Reports that `cluster` has no open migration window; returns RKD_STORE_ENOWINDOW. */
int rkd_store_no_window(const char *cluster, rk_error *err);

#endif /* RKD_STORE_BACKEND_H */
