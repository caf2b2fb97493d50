/* store.h — the storage layer of ringkeeperd: clusters and their numbered, immutable topology
 * versions (docs/API.md, OPERATIONS.md), behind one interface that names no database. This is all
 * api.c and http.c see.
 *
 * Layout: store_domain.c implements these calls once for every backend (checks, ring and
 * fingerprint, timestamps, the activation watch) over a backend's table of operations,
 * store_backend.h, which is where a newcomer starts to add a store. rkd_store_open_with() in
 * store_open.c picks the backend. The first backend is SQLite (store_sqlite.h: store_sqlite.c,
 * store_versions.c, store_migrate.c, store_backup.c); an etcd one can follow without changes here.
 *
 * Validation: the caller hands in an rk_topology, which libringkeeper has already validated; the
 * store computes points and the fingerprint with libringkeeper too. Cluster names are the caller's
 * to check (docs/RING.md); the store only refuses NULL or empty ones.
 *
 * Thread safety: every rkd_store_* call on one rkd_store may be made from any number of threads at
 * once, except rkd_store_close() (call it while no other thread uses the store). Several rkd_store
 * handles, in one process or several, may open the same database: version numbers stay gap-free
 * across all of them. Records and lists returned are owned by the caller and not shared.
 *
 * Errors: every fallible call returns RK_OK (0) or a negative code, either an rk_status from
 * ringkeeper.h (RK_EINVAL, RK_ENOMEM, RK_ETOPOLOGY ...) or one of RKD_STORE_* below, and fills the
 * optional rk_error with a sentence a person can act on.
 */
#ifndef RKD_STORE_H
#define RKD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ringkeeper.h"

/* Store codes; the HTTP layer maps them: ENOCLUSTER, ENOVERSION, ENOACTIVE, ENOJOB -> 404;
 * ECONFLICT, EAPPROVAL, EPLANCHANGED, EWINDOWOPEN, ENOWINDOW and the job's (migration_job.h)
 * -> 409, but ENODATA, EJOBTOOBIG and ETOOMANYCLUSTERS -> 422; ESELFAPPROVAL -> 403; EPRECONDITION
 * -> 412; EUNAVAILABLE -> 503; the rest stop the server at startup. Values do not overlap
 * rk_status.
 */
#define RKD_STORE_ERRNO_MAP(X)                                                                     \
    X(ENOCLUSTER, -100, "unknown cluster")                                                         \
    X(ENOVERSION, -101, "unknown version")                                                         \
    X(ENOACTIVE, -102, "the cluster has no active version")                                        \
    X(ECONFLICT, -103, "conflicting state change")                                                 \
    X(EPRECONDITION, -104, "precondition failed")                                                  \
    X(EUNAVAILABLE, -105, "database unavailable")                                                  \
    X(ENOTRK, -106, "not a ringkeeper database")                                                   \
    X(ETOONEW, -107, "database schema newer than this program knows")                              \
    X(EMIGRATION, -108, "schema migration failed")                                                 \
    X(EAPPROVAL, -109, "approvals required")                                                       \
    X(EPLANCHANGED, -110, "the plan changed since it was reviewed")                                \
    X(ESELFAPPROVAL, -111, "an author may not approve their own version")                          \
    X(EWINDOWOPEN, -112, "a migration window is open")                                             \
    X(ENOWINDOW, -113, "no migration window is open")                                              \
    X(EDRYRUN, -114, "every check passed; nothing was written (a dry run)")                        \
    X(ENOJOB, -115, "the cluster has no migration job")                                            \
    X(EJOBSTATE, -116, "the migration job's state does not allow this")                            \
    X(ELEASED, -117, "another worker holds the migration job's lease")                             \
    X(ENOTVERIFIED, -118, "the migration job is not verified")                                     \
    X(ENODATA, -119, "the cluster's data protocol is unknown")                                     \
    X(EVERSIONCHANGED, -120, "the versions of the migration job changed under it")                 \
    X(EJOBTOOBIG, -121, "the migration job would be over this server's size")                      \
    X(ENOROLLOUT, -122, "the cluster has no such rollout")                                         \
    X(EROLLOUTSTATE, -123, "the rollout's state does not allow this")                              \
    X(EROLLOUTTOOBIG, -124, "the rollout would be over this server's size")                        \
    X(EROLLOUTRUNNING, -125, "a rollout drives the cluster's activations")                         \
    X(EBUDGET, -126, "the activation is over the policy's budget")                                 \
    X(EGATE, -127, "the activation's gate needs what it has not fetched")                          \
    X(ETOOMANYCLUSTERS, -128, "the store holds as many clusters as it may")

typedef enum rkd_store_status {
#define RKD_STORE_ENUM_(name, value, text) RKD_STORE_##name = value,
    RKD_STORE_ERRNO_MAP(RKD_STORE_ENUM_)
#undef RKD_STORE_ENUM_
} rkd_store_status;

/* Static strings for RKD_STORE_* codes and for rk_status codes alike ("RKD_STORE_ECONFLICT"). */
const char *rkd_store_strerror(int code);
const char *rkd_store_errname(int code);

#define RKD_STORE_ANY      (-1) /* if-match argument: no precondition */
#define RKD_STORE_LIST_MAX 1000 /* largest `limit` of rkd_store_list */
#define RKD_STORE_TIME_LEN 21   /* "2026-11-29T17:41:10Z" and its NUL */
#define RKD_STORE_FP_LEN   17   /* 16 hex digits and a NUL */
#define RKD_STORE_ID_LEN   17   /* the store id: 16 lowercase hex digits and a NUL */

typedef enum rkd_store_state {
    RKD_STATE_STAGED = 0,     /* published, not yet active */
    RKD_STATE_ACTIVE = 1,     /* the one version clients get */
    RKD_STATE_RETIRED = 2,    /* was active, replaced by a newer one */
    RKD_STATE_SUPERSEDED = 3, /* staged, but a newer version was activated first */
} rkd_store_state;

/* "staged", "active", "retired", "superseded"; NULL for an unknown value. */
const char *rkd_store_state_name(rkd_store_state state);

/* One version of a cluster. Every pointer field is owned by the record; free it whole with
 * rkd_store_version_free() (records inside an rkd_store_version_list belong to the list). */
typedef struct rkd_store_version {
    char *cluster;                         /* cluster name */
    int64_t version;                       /* 1, 2, 3 ... */
    rkd_store_state state;                 /* at the time it was read */
    char created_at[RKD_STORE_TIME_LEN];   /* RFC 3339 UTC */
    char activated_at[RKD_STORE_TIME_LEN]; /* "" when never activated */
    char *author;                          /* NULL when none */
    char *comment;                         /* NULL when none */
    rk_scheme scheme;                      /* the topology's scheme, as stored with it */
    rk_hash_alg hash;                      /* the topology's hash, one of its scheme's */
    uint32_t vnode_factor;                 /* the topology's vnode_factor */
    uint64_t points;                       /* sum of vnode_factor * weight */
    char fingerprint[RKD_STORE_FP_LEN];    /* docs/RING.md, lowercase hex */
    char store_id[RKD_STORE_ID_LEN];       /* rkd_store_id of the store it was read from */
    rk_topology *topology;                 /* one reference; NULL in lists (no node lists there) */
    int64_t previous;                      /* while a migration window is open over this version:
                                              the version before it, kept for dual reads; else 0
                                              (and always 0 in lists) */
    char previous_fingerprint[RKD_STORE_FP_LEN]; /* that version's fingerprint, "" when none */
} rkd_store_version;

void rkd_store_version_free(rkd_store_version *v);

/* A page of versions, newest first. */
typedef struct rkd_store_version_list {
    rkd_store_version *items; /* count records, topology NULL in each */
    size_t count;             /* how many */
    int64_t next_before;      /* pass as `before` for the next page; 0 when this is the last */
} rkd_store_version_list;

void rkd_store_version_list_free(rkd_store_version_list *list);

typedef struct rkd_store_cluster {
    char *name;             /* owned by the list */
    int64_t active_version; /* 0 when none is active */
    int64_t latest_version; /* highest version number */
} rkd_store_cluster;

/* A page of clusters, by name. */
typedef struct rkd_store_cluster_list {
    rkd_store_cluster *items; /* sorted by name (bytes) */
    size_t count;             /* how many */
    char *next_after;         /* pass as `after` for the next page; NULL when this is the last */
} rkd_store_cluster_list;

void rkd_store_cluster_list_free(rkd_store_cluster_list *list);

typedef struct rkd_store rkd_store;

/* One parameter of a store's backend, as given: the daemon passes its backends' flags through
 * without reading them (--etcd-cacert FILE is {"etcd-cacert", FILE}), and the backend the
 * location names reads and checks them, as SQLite's VFS takes its parameters from the URI
 * (store_open.c routes them: SQLite takes "migrations", the directory of its NNNN_*.sql files;
 * etcd those of etcd/etcd_params.h). Both strings borrowed. */
typedef struct rkd_store_param {
    const char *name;  /* the flag that gave it, without "--" */
    const char *value; /* as given */
} rkd_store_param;

/* The value of the last of p[0 .. n) named `name`, or NULL. */
const char *rkd_store_param_value(const rkd_store_param *p, size_t n, const char *name);

/* Non-zero when the backend `location` names takes the parameter `name` (a backend left out of
 * this build included). */
int rkd_store_takes(const char *location, const char *name);

/* Checks p[0 .. n) for a store at `location` without opening it: each must be a parameter of the
 * backend the location names (else "--etcd-cacert is for an etcd store (...), not an SQLite
 * file"), and that backend checks their values (a pair given half, a file it cannot read).
 * RK_OK, or RK_EINVAL with a message that starts with the flag. RK_OK for a location no backend
 * has: rkd_store_open_with says so. */
int rkd_store_check(const char *location, const rkd_store_param *p, size_t n, rk_error *err);

/* Opens the store at `location` (--db or --store) with the backend it names (store_open.c's
 * registry), given p[0 .. n) (as rkd_store_check checks them): etcd:// or etcds:// the etcd store
 * (store_etcd.h), sqlite:PATH or a plain PATH an SQLite database file (rkd_sqlite_open in
 * store_sqlite.h: created when absent, its schema brought up to date from the NNNN_*.sql files
 * of its parameter "migrations"); another scheme RK_EINVAL. Returns a new store (free with
 * rkd_store_close) or NULL with `err` set. */
rkd_store *rkd_store_open_with(const char *location, const rkd_store_param *p, size_t n,
                               rk_error *err) RK_MUST_CHECK;
/* The name of the backend `location` names ("sqlite" for sqlite:PATH or a plain PATH, "etcd"), or
 * NULL for a scheme no backend has. Static. */
const char *rkd_store_backend_name(const char *location);
/* The local file the store at `location` lives in, when its backend keeps it in one (SQLite: the
 * path after "sqlite:", or the whole plain path; borrowed), else NULL. */
const char *rkd_store_file(const char *location);
/* Closes the backend and frees the store; NULL is fine. */
void rkd_store_close(rkd_store *s);

/* The store's identity, read when it opened: 16 lowercase hex digits, made at random with the
 * database and new in every backup copy. Version numbers are unique only under one id (a restored
 * copy numbers on from where it was taken), so whatever names a version to clients carries it. */
const char *rkd_store_id(const rkd_store *s);

/* RK_OK when the database answers (for /readyz); RKD_STORE_EUNAVAILABLE otherwise. */
int rkd_store_ping(rkd_store *s, rk_error *err);

/* Non-zero while the backend can only be read (for SQLite: its file is not writable): reads work,
 * and every write fails with RKD_STORE_EUNAVAILABLE, changing nothing, until writes are possible
 * again; the next write after that succeeds without reopening the store. Always 0 for a backend
 * without such a mode. */
int rkd_store_read_only(rkd_store *s);

#define RKD_STORE_STALE_LEN 64 /* rkd_store_stale's text and its NUL */

/* Non-zero while this handle may miss changes other handles commit because its storage does not
 * answer (etcd without quorum: what it has cached may be stale), with why in `out`, e.g. "etcd
 * unreachable since 2026-11-29T17:41:10Z"; else 0 and `out` "". Always 0 for a backend that no
 * other handle shares (SQLite). Cheap enough for every read: it asks nothing of the storage. */
int rkd_store_stale(rkd_store *s, char out[RKD_STORE_STALE_LEN]);

#define RKD_STORE_APPROVALS_MAX 100 /* the most approvals a policy may ask for */

/* A cluster's policy; a cluster that never set one has RKD_STORE_POLICY_DEFAULTS. */
typedef struct rkd_store_policy {
    double max_moved_fraction; /* 0..1 */
    double max_balance_after;  /* >= 1, or 0: no limit */
    int64_t approvals;         /* 0..RKD_STORE_APPROVALS_MAX */
    int distinct_approver;     /* non-zero: a version's author does not approve it */
    int migration_window;      /* non-zero: an activation opens a migration window */
    int prewarm; /* non-zero: the cluster is served by proxies, which read one ring: activating a
                    version whose topology names its data needs that version's verified pre-warm
                    (a before_cutover job), and a rollout's step opens no window */
    int64_t max_moved_bytes; /* > 0: the most bytes an activation moves by the cluster's load
                                profile (docs/LOAD.md); 0: no limit */
} rkd_store_policy;

#define RKD_STORE_POLICY_DEFAULTS ((rkd_store_policy){1.0, 0, 0, 0, 0, 0, 0})

/* What an activation's transaction read, for the caller's gate (rkd_store_gate) to decide on at
 * the commit; pointers borrowed for the call. */
typedef struct rkd_store_gate_view {
    const char *cluster;
    int64_t active;          /* the active version (0: none) */
    int64_t previous;        /* an open migration window's previous version (0: none open) */
    rkd_store_policy policy; /* the cluster's policy */
    const char *rollout;     /* the cluster's rollout document (JSON text), or NULL: none */
    const rk_ring *ring;     /* a publish's topology's ring, always set; NULL: an activation */
} rkd_store_gate_view;

/* The caller's check of an activation, run inside its transaction with what that read, so that
 * the policy and the rollout it decides on are the ones the commit is guarded by (etcd: one read
 * fewer than checking before). It runs once per try of the transaction and must change nothing,
 * nor call the store (the transaction may hold its lock). RK_OK with *moved the fraction of the
 * hash space the activation moves (< 0: not computed), or an error with `err` set, which the
 * store answers with nothing changed: RKD_STORE_EGATE when it needs something it has not fetched
 * (the caller fetches it outside the store and asks again). */
typedef struct rkd_store_gate {
    int (*check)(void *arg, const rkd_store_gate_view *view, double *moved, rk_error *err);
    void *arg;
} rkd_store_gate;

typedef struct rkd_store_publish_opts {
    const char *author;      /* recorded as the version's author; NULL for none; borrowed */
    int64_t if_match_latest; /* RKD_STORE_ANY, or the latest version there must be (0: none yet) */
    int activate;            /* non-zero: stage and activate in one transaction */
    int64_t revert_of;       /* > 0: a revert to this version (its event says so) */
    double moved_fraction;   /* with activate: the fraction the activation moves, < 0 unknown */
    int64_t active_hint;     /* with activate: as rkd_store_activation's (0: none) */
    const rkd_store_gate *gate; /* with activate: as rkd_store_activation's (NULL: none) */
    rk_ring **ring; /* non-NULL: on success *ring is the ring built for the fingerprint (the
                       caller frees it, or a cache keeps it); left alone on failure */
} rkd_store_publish_opts;

/* Stores `t` (borrowed; the caller keeps its reference) as the next version of `cluster`, creating
 * the cluster on its first publish. With opt->if_match_latest set and another latest version:
 * RKD_STORE_EPRECONDITION and nothing changes. On success *out is a new record (with a topology
 * reference) of the version as committed. `opt` may be NULL (no author, no precondition, staged).
 */
int rkd_store_publish(rkd_store *s, const char *cluster, rk_topology *t,
                      const rkd_store_publish_opts *opt, rkd_store_version **out,
                      rk_error *err) RK_MUST_CHECK;

/* How an activation is asked for, and what its event records; every pointer borrowed. */
typedef struct rkd_store_activation {
    int64_t if_match_active; /* RKD_STORE_ANY or the version that must be active now (0: none) */
    const char *author;      /* who activates; NULL for none */
    double moved_fraction;   /* what the plan from the active version moves; < 0 not computed */
    const char *reason;      /* a forced activation's reason (the budget was passed), or NULL */
    /* A step of an approved rollout (SPEC 11): its event's detail ("rollout 3 step 2/5"), or NULL.
     * Its approvals are the rollout's, checked by its rules, and it opens a migration window
     * whatever the policy says. */
    const char *rollout;
    /* The version the caller believes active (0: it does not know): only a hint, for a store that
     * reads what the activation needs together with the cluster's state (etcd: one request fewer
     * when it is right); it is never trusted. */
    int64_t active_hint;
    /* Checked inside the transaction; its *moved replaces moved_fraction (NULL: none). */
    const rkd_store_gate *gate;
} rkd_store_activation;

/* Makes version `v` of `cluster` active; the active one before it becomes retired and staged
 * versions older than v superseded, and an "activate" (or, with a reason, "force") event is
 * recorded in the same transaction. a->if_match_active other than the active version:
 * RKD_STORE_EPRECONDITION. v not newer than the active version: RKD_STORE_ECONFLICT (roll back by
 * reverting). A migration window open (docs/API.md): RKD_STORE_EWINDOWOPEN (finish it
 * first). Fewer approvals of the plan from the active version to v (docs/API.md) than the policy
 * asks: RKD_STORE_EAPPROVAL. With the policy's migration_window set and a version active, the
 * activation opens a migration window over v (previous: the version active before), in the same
 * transaction. Nothing changes on failure. *out: new record. */
int rkd_store_activate(rkd_store *s, const char *cluster, int64_t v, const rkd_store_activation *a,
                       rkd_store_version **out, rk_error *err) RK_MUST_CHECK;

/* ---- Cutover (docs/API.md) ---- */

int rkd_store_get_policy(rkd_store *s, const char *cluster, rkd_store_policy *out,
                         rk_error *err) RK_MUST_CHECK;
/* Sets the policy (checked: RK_EINVAL with the field) and records a "policy" event by `author`
 * with `detail` (the policy as JSON, for the audit). */
int rkd_store_put_policy(rkd_store *s, const char *cluster, const rkd_store_policy *p,
                         const char *author, const char *detail, rk_error *err) RK_MUST_CHECK;

/* How an approval is asked for; every pointer borrowed. */
typedef struct rkd_store_approval_req {
    int64_t version;      /* the version approved */
    const char *digest;   /* the plan approved (rk_plan_digest) */
    const char *approver; /* who approves; NULL for none */
    const char *comment;  /* the event's detail, or NULL */
    int dry_run;          /* non-zero: every check runs and nothing is written */
    int64_t active_hint;  /* as rkd_store_activation's: a guess, never trusted (0: none) */
} rkd_store_approval_req;

/* Records that a->approver approves moving from the active version to a->version by the plan
 * named a->digest (rk_plan_digest; with nothing active, from version 0 and fingerprint ""), with
 * an "approve" event. RKD_STORE_EPLANCHANGED when the digest is not that plan's now (the message
 * says whether it is the plan from a version that was active before, or no plan to it at all);
 * RKD_STORE_ESELFAPPROVAL when the policy has distinct_approver and the approver is the version's
 * author; RKD_STORE_ECONFLICT when the version is not newer than the active one. Approving twice
 * is one approval. With dry_run, every check runs and nothing is written (RK_OK when all pass). */
int rkd_store_approve(rkd_store *s, const char *cluster, const rkd_store_approval_req *a,
                      rk_error *err) RK_MUST_CHECK;

/* Closes the migration window of `cluster` and records a "finish" event by `author` (version: the
 * active one, from_version: the previous one, detail: `comment`, may be NULL) in one transaction:
 * the ring document's `previous` becomes null and clients drop the previous ring.
 * RKD_STORE_ENOWINDOW when none is open. *out: a new record of the active version as it is now
 * (previous 0). Watchers are not called: the caller refreshes what it caches (the version number
 * does not change). */
int rkd_store_finish_migration(rkd_store *s, const char *cluster, const char *author,
                               const char *comment, rkd_store_version **out,
                               rk_error *err) RK_MUST_CHECK;
/* The refusal of an activation while the migration window from `previous` to `open` (0: none,
 * RK_OK) is open: RKD_STORE_EWINDOWOPEN, saying how to finish it. Shared so that every check of
 * it (the store's, and the API's before it computes a budget) says the same. */
int rkd_store_check_window(const char *cluster, int64_t open, int64_t previous, rk_error *err);

/* ---- A cluster's documents: the migration job (SPEC 10), the rollout (SPEC 11), the load ----
 *
 * One JSON document per cluster and kind, with a revision, changed only by compare and set: their
 * rules (migration_job.h, rollout.h) read one, decide, and write it back unless it changed. */

typedef enum rkd_store_doc_kind {
    RKD_DOC_JOB = 0,     /* the latest migration job */
    RKD_DOC_ROLLOUT = 1, /* the latest rollout */
    RKD_DOC_LOAD = 2,    /* the latest load profile (docs/LOAD.md) */
} rkd_store_doc_kind;
#define RKD_DOC_KINDS 3

/* "migration job", "rollout", "load profile": for messages. */
const char *rkd_store_doc_name(rkd_store_doc_kind kind);

/* The cluster's document of `kind` as stored: its JSON text in *doc (the caller frees it; NULL
 * when the cluster never had one) and its revision in *rev (0 then). RKD_STORE_ENOCLUSTER for an
 * unknown cluster. */
int rkd_store_get_doc(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, char **doc,
                      int64_t *rev, rk_error *err) RK_MUST_CHECK;

/* An event to record with a document's change (kind "migration_start", "rollout_start" ...);
 * pointers borrowed. */
typedef struct rkd_store_doc_event {
    const char *kind;
    const char *author;
    int64_t version;      /* the version it is about: a job's `to` */
    int64_t from_version; /* a job's `from` */
    const char *detail;   /* NULL for none */
} rkd_store_doc_event;

/* Stores `doc` (JSON text, borrowed) as the cluster's document of `kind` if its revision is still
 * `rev` (0: it has none yet), with event `e` (NULL: none) in the same atomic step.
 * RKD_STORE_ECONFLICT when it changed since `rev` was read: read it again and decide again. */
int rkd_store_put_doc(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, const char *doc,
                      int64_t rev, const rkd_store_doc_event *e, rk_error *err) RK_MUST_CHECK;

/* One event of a cluster's audit. */
typedef struct rkd_store_event {
    int64_t event; /* 1, 2, 3 ... per cluster */
    char kind[24]; /* publish, revert, approve, activate, force, policy, finish, migration_* */
    char at[RKD_STORE_TIME_LEN];     /* RFC 3339 UTC */
    char *author;                    /* NULL when none */
    int64_t version;                 /* the version it concerns, 0 when none */
    int64_t from_version;            /* the version moved from (or reverted to), 0 when none */
    char digest[RK_PLAN_DIGEST_LEN]; /* the plan's digest, "" when none */
    double moved_fraction;           /* < 0 when none */
    char *detail;                    /* comment, reason or policy JSON; NULL when none */
} rkd_store_event;

/* A page of events, newest first. */
typedef struct rkd_store_event_list {
    rkd_store_event *items;
    size_t count;
    int64_t next_before; /* pass as `before` for the next page; 0 when this is the last */
} rkd_store_event_list;

void rkd_store_event_list_free(rkd_store_event_list *list);

/* Up to `limit` (1..RKD_STORE_LIST_MAX) events of `cluster` older than `before` (0: no bound),
 * newest first, into *out (free with rkd_store_event_list_free). */
int rkd_store_list_events(rkd_store *s, const char *cluster, size_t limit, int64_t before,
                          rkd_store_event_list *out, rk_error *err) RK_MUST_CHECK;

/* ---- Copying a whole store (ringkeeperd migrate-store) ---- */

/* One approval as stored (docs/API.md). */
typedef struct rkd_store_approval {
    int64_t version;                     /* the version approved */
    char digest[RK_PLAN_DIGEST_LEN];     /* the plan approved */
    char *approver;                      /* owned by the list */
    char *comment;                       /* NULL when none; owned by the list */
    char created_at[RKD_STORE_TIME_LEN]; /* RFC 3339 UTC */
} rkd_store_approval;

typedef struct rkd_store_approval_list {
    rkd_store_approval *items; /* by version, digest, approver */
    size_t count;              /* how many */
} rkd_store_approval_list;

void rkd_store_approval_list_free(rkd_store_approval_list *list);

/* Every approval of `cluster` into *out (free with rkd_store_approval_list_free). */
int rkd_store_list_approvals(rkd_store *s, const char *cluster, rkd_store_approval_list *out,
                             rk_error *err) RK_MUST_CHECK;

/* A cluster's whole history as another store holds it, to be written as it is; every pointer
 * borrowed. */
typedef struct rkd_store_history {
    const char *cluster;
    rkd_store_version *const *versions;  /* versions 1..n in order, each with its topology */
    size_t versions_count;               /* n, at least 1 */
    const rkd_store_event *events;       /* events 1..m in order */
    size_t events_count;                 /* m */
    const rkd_store_approval *approvals; /* every approval */
    size_t approvals_count;
    const rkd_store_policy *policy; /* NULL: the defaults (never set) */
    int64_t window_previous;        /* > 0: a migration window is open over the active version,
                                       keeping this one; 0: none */
} rkd_store_history;

/* Makes an empty store take the identity `id` (16 lowercase hex digits) of the store it is copied
 * from, so that clients' ETags and last-known-good files stay valid across the copy. Refuses a
 * store that holds any cluster (RKD_STORE_ECONFLICT): copies never merge into existing histories.
 * Takes effect for handles opened afterwards and for this one. */
int rkd_store_adopt_id(rkd_store *s, const char *id, rk_error *err) RK_MUST_CHECK;

/* Writes the history `h` as it is: the same version numbers, states, timestamps, authors,
 * comments, fingerprints and topology documents, the same events, approvals, policy and open
 * migration window. Refuses a cluster the store already has (RKD_STORE_ECONFLICT) and a history
 * that is not numbered 1..n (RK_EINVAL). Not atomic on every backend (etcd writes it in several
 * txns, the cluster appearing with the last): copy into a store no server uses yet. */
int rkd_store_import(rkd_store *s, const rkd_store_history *h, rk_error *err) RK_MUST_CHECK;

/* Version v, the active version (RKD_STORE_ENOACTIVE before any activation) or the latest version
 * of `cluster`, as a new record with its topology. */
int rkd_store_get(rkd_store *s, const char *cluster, int64_t v, rkd_store_version **out,
                  rk_error *err) RK_MUST_CHECK;
int rkd_store_get_active(rkd_store *s, const char *cluster, rkd_store_version **out,
                         rk_error *err) RK_MUST_CHECK;
int rkd_store_latest(rkd_store *s, const char *cluster, rkd_store_version **out,
                     rk_error *err) RK_MUST_CHECK;

/* Up to `limit` (1..RKD_STORE_LIST_MAX) versions of `cluster` older than `before` (0: no bound),
 * newest first, without topologies, into *out (caller's storage; free with
 * rkd_store_version_list_free). */
int rkd_store_list(rkd_store *s, const char *cluster, size_t limit, int64_t before,
                   rkd_store_version_list *out, rk_error *err) RK_MUST_CHECK;

/* Up to `limit` (1..RKD_STORE_LIST_MAX) clusters whose names sort after `after` (NULL or "": from
 * the first), by name in byte order, with their active and latest versions, into *out (free with
 * rkd_store_cluster_list_free). One range read of the names' index, whatever the store holds. */
int rkd_store_list_clusters(rkd_store *s, size_t limit, const char *after,
                            rkd_store_cluster_list *out, rk_error *err) RK_MUST_CHECK;

/* Calls fn for every cluster, by name, a page of RKD_STORE_LIST_MAX at a time (for those that need
 * them all: the rollout driver's scan, the metrics at startup, migrate-store); stops at fn's first
 * error and returns it. Clusters created meanwhile may be seen or not, none twice. */
typedef int (*rkd_store_cluster_fn)(void *arg, const rkd_store_cluster *c, rk_error *err);
int rkd_store_each_cluster(rkd_store *s, rkd_store_cluster_fn fn, void *arg,
                           rk_error *err) RK_MUST_CHECK;

/* Caps the clusters: a publish that would create a cluster while `max` or more exist fails with
 * RKD_STORE_ETOOMANYCLUSTERS and changes nothing; publishes to existing clusters are not limited.
 * 0 (the default of a new handle): no cap. Call before the handle is shared. On SQLite the count
 * is read in the publish's transaction (exact); on etcd with the head's read, so replicas creating
 * clusters at the same moment may pass it by one each. */
void rkd_store_set_max_clusters(rkd_store *s, int64_t max);

/* Watching activations (for long polls on the ring). The sequence starts at 0 when the store opens
 * and grows by one with every activation this handle commits (publish with activate included),
 * and, on a backend that watches its storage (etcd), with every activation another handle or
 * replica commits, as the backend learns of it. The callback, when set, runs after each, on the
 * committing thread (or the backend's watch thread), with no store lock held but the watch's own:
 * one callback at a time, and rkd_store_set_watch waits for one in flight. It must be quick
 * (signal a condition variable) and `cluster` is borrowed for the call. On SQLite, activations
 * committed through other handles or processes are not seen.
 *
 * A backend that watches its storage also reports a migration window another handle finished
 * (RKD_CHANGE_WINDOW_CLOSED, `version` the active one, the sequence unchanged): this handle's own
 * finishes are not reported (rkd_store_finish_migration), their caller refreshes its caches. */
typedef enum rkd_store_change {
    RKD_CHANGE_ACTIVATION = 0,    /* `version` became active */
    RKD_CHANGE_WINDOW_CLOSED = 1, /* the migration window over the active `version` was finished */
} rkd_store_change;
/* `v` is the version now active as this handle's activation committed it (borrowed for the call),
 * or NULL when it is not at hand (another handle's change, a publish that activated, a window). */
typedef void (*rkd_store_watch_fn)(void *arg, const char *cluster, int64_t version,
                                   rkd_store_change what, uint64_t seq, const rkd_store_version *v);

uint64_t rkd_store_watch_seq(rkd_store *s);
void rkd_store_set_watch(rkd_store *s, rkd_store_watch_fn fn, void *arg);

#endif /* RKD_STORE_H */
