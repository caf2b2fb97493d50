/* api_internal.h — what the files of the HTTP API share: the app and the request being answered
 * (api.c routes to the handlers of api_admin.c, api_versions.c, api_ring.c, api_plan.c ...), the
 * response and query helpers of api_common.c, the JSON documents of version_doc.c and the small
 * caches of api_cache.c. Not installed, not used outside server/ and its tests.
 */
#ifndef RKD_API_INTERNAL_H
#define RKD_API_INTERNAL_H

#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "api.h"
#include "doc_change.h"
#include "http_budget.h"
#include "migration_job.h"
#include "rollout.h"
#include "store.h"

/* One set of dump flags for every JSON body: compact, and reals with 17 significant digits so a
 * fraction parses back to the very double the server computed. */
#define RKD_JSON_FLAGS JSON_COMPACT /* for rk_json_dumps: reals in their shortest exact form */

/* ---- version_doc.c ---- */

/* The version document of docs/RING.md; with_nodes == 0 leaves "nodes" out (lists; `v` may then
 * have no topology). New reference, NULL when out of memory. */
json_t *rkd_version_json(const rkd_store_version *v, int with_nodes);

/* The ring document of GET .../ring: the version document of the active version `v` with
 * "previous": {"version", "fingerprint"} while a migration window is open, else null. New
 * reference, NULL when out of memory. */
json_t *rkd_ring_json(const rkd_store_version *v);

/* {"clusters": [{"cluster", "active_version" (null when none), "latest_version"}], "next_after":
 * the last name when another page follows, else null}. */
json_t *rkd_clusters_json(const rkd_store_cluster_list *list);

/* {"versions": [... without nodes ...], "next_before": N or null}. */
json_t *rkd_versions_json(const rkd_store_version_list *list);

/* Serialises `doc` (stolen: decref'd here, NULL allowed) with RKD_JSON_FLAGS into a new string
 * ending in a newline; RK_OK with *body and *len set, RK_ENOMEM otherwise. */
int rkd_json_dump(json_t *doc, char **body, size_t *len);

/* ---- api_cache.c ---- */

/* A bounded, thread-safe LRU map from (cluster, key) to a value it owns. Entries handed out are
 * held (reference counted): eviction never frees a value a thread still reads.
 *
 * Values of one key only move forward: each carries a tag (a version), and a put with a lower tag
 * than the entry there is not kept. A put for a key with no entry is kept only when nothing was
 * evicted or raised since the caller read the generation (what went may have had a higher tag).
 * So a reader that loaded a value before an activation cannot cache it over a newer one. */
typedef struct rkd_cache rkd_cache;

typedef struct rkd_entry {
    char cluster[RKD_CLUSTER_MAX]; /* key, part 1 */
    int64_t key;                   /* key, part 2 (a version, or 0) */
    int64_t tag;                   /* order of the values of this key (a version, or 0) */
    void *value;                   /* owned by the entry; read-only while held; never NULL */
    size_t size;                   /* bytes counted against the cache's budget */
    atomic_uint refs;              /* private: holders, the table's own hold included */
    rkd_cache *cache;              /* private: where it belongs, for rkd_entry_release */
    uint64_t used;                 /* private: LRU clock of the last get or put */
} rkd_entry;

/* New cache of at most max_entries entries and max_bytes of values; free_value frees a value.
 * NULL when out of memory. */
rkd_cache *rkd_cache_new(size_t max_entries, size_t max_bytes, void (*free_value)(void *));
/* Frees the cache and every value; no entry may be held any more. NULL is fine. */
void rkd_cache_free(rkd_cache *c);

/* The generation (evictions and raises); read it before loading a value to put. */
uint64_t rkd_cache_gen(rkd_cache *c);

/* The entry for (cluster, key), held (release with rkd_cache_release), or NULL on a miss. */
rkd_entry *rkd_cache_get(rkd_cache *c, const char *cluster, int64_t key);

/* Stores `value` (stolen) under (cluster, key) with `tag` and returns it held. It is kept (and
 * replaces the entry there) unless the entry there has a higher tag, or there is none and an
 * entry was evicted or raised since `gen` was read, or it is over the byte budget: then it is
 * handed out held but not kept. NULL when out of memory (the value is freed then). */
rkd_entry *rkd_cache_put(rkd_cache *c, const char *cluster, int64_t key, int64_t tag, void *value,
                         size_t size, uint64_t gen);

/* Drops a hold; frees the value when it was the last one. NULL is fine. */
void rkd_cache_release(rkd_cache *c, rkd_entry *e);
/* The same for an entry (`void *` so that it can be a response's body_release). */
void rkd_entry_release(void *entry);

/* Forgets every entry of `cluster` whose key is at least `min_key`, and moves the generation on so
 * that values loaded before this call are not kept in their place. */
void rkd_cache_forget(rkd_cache *c, const char *cluster, int64_t min_key);

/* Declares that (cluster, key) is now at least `tag`: forgets an older value there, and moves the
 * generation on so that values loaded before this call are not kept in its place. */
void rkd_cache_raise(rkd_cache *c, const char *cluster, int64_t key, int64_t tag);

/* ---- The app and its handlers ---- */

#define RKD_CT_JSON    "application/json; charset=utf-8"
#define RKD_CT_TEXT    "text/plain; charset=utf-8"
#define RKD_CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

#define RKD_CHANGE_SLOTS 4096 /* change counters (changes.c): 32 KiB whatever the clusters */

struct rkd_app {
    rkd_store *store;          /* borrowed */
    rkd_metrics *metrics;      /* borrowed, may be NULL */
    rkd_cache *docs;           /* (cluster, 0) -> rkd_active_doc of the active version */
    rkd_cache *rings;          /* (cluster, version) -> rk_ring */
    rkd_cache *refusals;       /* (cluster, hash of what decided it) -> a plan refused as too
                                  large (api_plan.c) */
    pthread_rwlock_t hook_mu;  /* guards hook and hook_arg; held shared across each call */
    rkd_activation_fn hook;    /* called after each activation, or NULL */
    void *hook_arg;            /* its argument */
    rkd_plan_limits plan;      /* what one plan may cost */
    rkd_budget *plan_slots;    /* plans being computed now, per client address (api_rings.c) */
    rkd_clients *clients;      /* RK-Client ids seen, per cluster: authenticated by a client token
                                  when a token file is set, else all of them */
    rkd_clients *strangers;    /* with a token file, the ids seen without a client token: apart, so
                                  they can neither change nor evict an authenticated one; NULL when
                                  only authenticated ones are recorded */
    struct rkd_driver *driver; /* drives running rollouts (rkd_app_start_rollouts), or NULL */
    _Atomic uint64_t changes[RKD_CHANGE_SLOTS]; /* a change counter per slot of cluster names */
};

/* One request being answered: the parsed path parameters with the request and response. */
typedef struct rkd_call {
    rkd_app *app;
    const rkd_request *req;
    rkd_response *resp;
    char cluster[RKD_CLUSTER_MAX]; /* {c}, validated */
    int64_t version;               /* {v}, validated; 0 when the route has none */
    /* Set by a write whose watchers need no wake from the dispatcher: a dry run changed nothing;
     * an activation or a closed window woke them already (api_docs.c, ring_changed). */
    int woken;
} rkd_call;

/* ---- changes.c: a change counter per cluster, which the console's live panels wait on ---- */

/* Starts every counter at the wall clock's milliseconds (rkd_app_new). */
void rkd_changes_init(rkd_app *app);
/* Moves the counter of `cluster` on and calls the hook: after the activation of `version`, which
 * wakes every poll of the cluster, or with 0 after any other change, which wakes its watchers. */
void rkd_app_wake(rkd_app *app, const char *cluster, int64_t version);
void rkd_app_changed(rkd_app *app, const char *cluster); /* rkd_app_wake(app, cluster, 0) */

/* ---- The handlers of api.c's route table: each answers c->resp, errors included ---- */

void rkd_h_healthz(rkd_call *c);            /* api_admin.c */
void rkd_h_readyz(rkd_call *c);             /* api_admin.c */
void rkd_h_metrics(rkd_call *c);            /* api_admin.c */
void rkd_h_clusters(rkd_call *c);           /* api_admin.c */
void rkd_h_changes(rkd_call *c);            /* changes.c */
void rkd_h_publish(rkd_call *c);            /* api_versions.c */
void rkd_h_list_versions(rkd_call *c);      /* api_versions.c */
void rkd_h_get_version(rkd_call *c);        /* api_versions.c */
void rkd_h_activate(rkd_call *c);           /* api_versions.c */
void rkd_h_revert(rkd_call *c);             /* api_versions.c */
void rkd_h_ring(rkd_call *c);               /* api_ring.c */
void rkd_h_plan(rkd_call *c);               /* api_plan.c */
void rkd_h_ui_redirect(rkd_call *c);        /* api_ui.c */
void rkd_h_ui_file(rkd_call *c);            /* api_ui.c */
void rkd_h_get_policy(rkd_call *c);         /* api_cutover.c */
void rkd_h_put_policy(rkd_call *c);         /* api_cutover.c */
void rkd_h_approve(rkd_call *c);            /* api_cutover.c */
void rkd_h_events(rkd_call *c);             /* api_cutover.c */
void rkd_h_finish(rkd_call *c);             /* api_cutover.c */
void rkd_h_clients(rkd_call *c);            /* api_clients.c */
void rkd_h_migration(rkd_call *c);          /* api_migration.c */
void rkd_h_migration_start(rkd_call *c);    /* api_migration.c */
void rkd_h_migration_claim(rkd_call *c);    /* api_migration.c */
void rkd_h_migration_progress(rkd_call *c); /* api_migration.c */
void rkd_h_migration_throttle(rkd_call *c); /* api_migration.c */
void rkd_h_migration_pause(rkd_call *c);    /* api_migration.c */
void rkd_h_migration_resume(rkd_call *c);   /* api_migration.c */
void rkd_h_migration_cancel(rkd_call *c);   /* api_migration.c */
void rkd_h_rollout_create(rkd_call *c);     /* api_rollouts.c */
void rkd_h_rollouts(rkd_call *c);           /* api_rollouts.c */
void rkd_h_rollout(rkd_call *c);            /* api_rollouts.c */
void rkd_h_rollout_approve(rkd_call *c);    /* api_rollouts.c */
void rkd_h_rollout_start(rkd_call *c);      /* api_rollouts.c */
void rkd_h_rollout_pause(rkd_call *c);      /* api_rollouts.c */
void rkd_h_rollout_resume(rkd_call *c);     /* api_rollouts.c */
void rkd_h_rollout_abort(rkd_call *c);      /* api_rollouts.c */

/* ---- rollout_driver.c: the thread that drives running rollouts ---- */

typedef struct rkd_driver rkd_driver;
/* Asks the driver to look at `cluster` now (a rollout started or resumed). No-op without one. */
void rkd_driver_wake(rkd_app *app, const char *cluster);

/* The versions a migration job must still be for (migration_job.h): the active one and its
 * window's previous (zeros when none). api_migration.c */
int rkd_job_versions_now(rkd_call *c, rkd_job_versions *out, rk_error *err);

/* ---- api_clients.c ---- */

/* What a ring request says of the ring its client holds and the one it refuses (docs/API.md,
 * "Clients"). Versions are of this server's store; a tag of another store counts as none. */
typedef struct rkd_claim {
    int64_t held; /* If-None-Match's version; a bare "v<N>" of an older client counts */
    int open;     /* ... and whether that tag says a migration window is open */
    char fingerprint[RKD_STORE_FP_LEN]; /* ... and the fingerprint of the ring held, "" when the
                                           tag has none: only a tag with it may get a 304 */
    int64_t refused;                    /* RK-Refused's version; 0: none */
    const char *reason; /* RK-Refused's reason, in the request's header; NULL with refused 0 */
} rkd_claim;

/* The claim of the call's request. */
rkd_claim rkd_claim_of(rkd_call *c);
/* Records the RK-Client of the call, if any, with `claim`, as offered `offered` (0: none yet, a
 * poll that is held). */
void rkd_client_seen(rkd_call *c, const rkd_claim *claim, int64_t offered);
/* Whether the fleet of `cluster` holds version v: at least one client, and every one this server
 * knows of (with a client token or without) holds it. Then every write goes to v's owners (SPEC
 * 5). */
int rkd_fleet_holds(rkd_app *app, const char *cluster, int64_t v);
/* What a rollout's hold waits for, for people: how many of the cluster's clients hold `v`, and
 * the first few that do not ("hold: 3 of 5 clients hold v7; still not: web-2 (v6), ..."). */
void rkd_fleet_waiting(rkd_app *app, const char *cluster, int64_t v, char *out, size_t n);
void rkd_h_picture(rkd_call *c); /* api_picture.c */
void rkd_h_arc(rkd_call *c);     /* api_picture.c */

/* ---- api_rings.c ---- */

/* Version `v` of the call's cluster as a built ring, held (rkd_cache_release on app->rings): from
 * the cache, else built and cached; NULL with *rc and err set. */
rkd_entry *rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err);
/* The plan from version `from` to `to` of c->cluster with `opt`, over the cached rings (built
 * when missing, after rk_plan_check): RK_OK and *out (the caller frees it), or the code with err.
 * The caller holds a plan slot. */
int rkd_plan_between(rkd_call *c, int64_t from, int64_t to, const rk_plan_options *opt,
                     rk_plan **out, rk_error *err);
/* The two rings of a plan from v[0] to v[1], held in e[0] and e[1] (release both on
 * app->rings): cached, else built, after the topologies refused what the plan would surely
 * refuse, so such a refusal builds no ring: rk_plan_check, and RK_ETOOBIG (field "nodes") when the
 * plan would list more than `max_nodes` nodes (0: any). RK_OK, or the code with err. */
int rkd_plan_rings(rkd_call *c, const int64_t v[2], const rk_plan_options *opt, size_t max_nodes,
                   rkd_entry *e[2], rk_error *err);

/* Answers a plan's failure: plan_too_large for one over --max-plan-arcs or rkd_plan_rings'
 * max_nodes (then 1), else as rkd_fail (0). */
int rkd_fail_plan(rkd_call *c, int rc, const rk_error *err);
/* Answers plan_too_large for a plan whose rendering would pass --max-plan-rows: `what` says how
 * many rows, `fewer` how to ask for less. */
void rkd_fail_rows(rkd_call *c, const char *what, const char *fewer);

/* Slots of --plan-concurrency `concurrency` one client address may hold: half, at least one, so
 * that clients looping on costly plans from one address leave the others some. */
unsigned rkd_plan_share(unsigned concurrency);
/* Takes one of the --plan-concurrency slots that bound plans and ring builds (about 1 s and
 * 500 MB each at 4M points), within the share of the request's address (an IPv6 one counted by
 * its /64; all requests of no known address as one): 1, or 0 after answering 503 with
 * Retry-After. Release a taken slot with rkd_plan_slot_release. */
int rkd_plan_slot(rkd_call *c);
void rkd_plan_slot_release(rkd_call *c);

/* ---- api_picture.c ---- */

#define RKD_PICTURE_BINS     2880 /* bins of a picture by default: an eighth of a degree */
#define RKD_PICTURE_MIN_BINS 360  /* ... at least (a degree) */
#define RKD_PICTURE_MAX_BINS 4096 /* ... at most, which bounds a picture's size and work */

/* The three circles of plan p (before, moving, after) in `bins` bins, run-length encoded, with the
 * nodes drawn; rings[0] and rings[1] are the rings p was made from. New reference, or NULL when
 * out of memory. */
json_t *rkd_plan_picture_json(const rk_plan *p, const rk_plan_meta *meta, const rk_ring *rings[2],
                              size_t bins);

/* ---- api_cutover.c: the gate of an activation (docs/API.md) ---- */

/* An activation's gate (a hand's: no rollout may hold the cluster; a rollout step's: its
 * approvals against the policy now; for both, rings that put keys where the active one does,
 * unless forced, and the policy's budget). The
 * store runs `check` inside the activation's transaction, over the policy, the rollout and the
 * active version that transaction read; the rings its plan needs are fetched here, between
 * tries, since a read inside the transaction could wait on the store's own lock. */
typedef struct rkd_gate {
    rkd_call *c;
    int64_t to_version;   /* the version activated (activate) ... */
    int publish;          /* ... or a publish that activates (the store's view has its ring) */
    int step;             /* ... a running rollout's step: its approvals and its plan answer to
                             the policy in force, and no hand is refused */
    const char *reason;   /* a forced activation's reason, or NULL */
    rkd_store_gate check; /* for the store: set by rkd_gate_init */
    int tries;            /* of the store's call */
    int budget;           /* the policy the check saw has a budget */
    int64_t want;         /* the active version whose ring the check asked for */
    int64_t from_version; /* the version `from` is the ring of (0: none fetched) */
    rkd_entry *from;      /* the rings of the plan: from the active version ... */
    rkd_entry *to;        /* ... to version to_version (NULL for a publish) */
} rkd_gate;

/* The activation body ({} or {"force": true, "reason": "..."}): *reason is the force's reason or
 * NULL, borrowed from *doc (the caller decrefs it, also on failure). 0, or -1 after answering. */
int rkd_activation_body(rkd_call *c, const char **reason, json_t **doc);
/* Sets g->c and g->check, and holds the plan's rings if the cache has them; the caller has set
 * to_version or publish (and sets reason before the store's call). The check answers
 * RKD_STORE_EROLLOUTRUNNING, RKD_STORE_EWINDOWOPEN or RKD_STORE_EBUDGET (422 budget_exceeded,
 * with the figures, or the scheme, hash or hash tag that changes), and computes no plan when the
 * policy has no budget. */
void rkd_gate_init(rkd_gate *g, rkd_call *c);
/* After the store's call answered *rc: non-zero when it should be called again, the check having
 * asked for rings now fetched (RKD_STORE_EGATE; after three tries *rc becomes
 * RKD_STORE_ECONFLICT, and a failed fetch its error). */
int rkd_gate_again(rkd_gate *g, int *rc, rk_error *err);
/* Releases what the gate fetched. */
void rkd_gate_done(rkd_gate *g);

/* ---- api_common.c ---- */

/* Makes `resp` a `status` answer of `ctype` (static) with `body` (stolen, `len` bytes). */
void rkd_set_body(rkd_response *resp, int status, const char *ctype, char *body, size_t len);
/* The same with a shared `body` that `owner` keeps alive: the response takes the caller's hold on
 * `owner` and drops it with release(owner) once the body is sent (no copy per connection). */
void rkd_set_shared_body(rkd_response *resp, int status, const char *ctype, const char *body,
                         size_t len, void (*release)(void *owner), void *owner);
/* The fixed 500 body, for when even an error body cannot be built. */
void rkd_out_of_memory(rkd_response *resp);
/* Answers `doc` (stolen) as JSON with `status`. */
void rkd_answer_json(rkd_response *resp, int status, json_t *doc);
/* Answers the failure `rc` (RK_* or RKD_STORE_*) as its HTTP error, with the message of `err`
 * (may be NULL for out of memory); database failures count as RKD_COUNT_DB_ERRORS. */
void rkd_fail(rkd_call *c, int rc, const rk_error *err);
/* Counts `which` when the app has metrics. */
void rkd_count(rkd_app *app, rkd_counter which);

/* The request body as a JSON object (an empty body is {} when empty_ok), new reference; NULL
 * after answering 400. */
json_t *rkd_body_object(rkd_call *c, int empty_ok);
/* 0 when every key of `doc` is one of `allowed` (NULL-terminated; `list` names them for people),
 * else -1 after answering 400. */
int rkd_known_fields(rkd_call *c, json_t *doc, const char *const *allowed, const char *list);
/* Optional string field `name` of at most RK_MAX_COMMENT bytes into *out (borrowed from doc;
 * NULL when absent): 0, or -1 after answering 400. */
int rkd_text_field(rkd_call *c, json_t *doc, const char *name, const char **out);

/* A decimal integer 0..INT64_MAX: digits only, no sign, no spaces. 0, or -1. */
int rkd_parse_int(const char *s, int64_t *out);
/* A version ETag, quotes included: "v<N>.<store id>.<fingerprint>" as the server sends a ring's
 * ("v<N>+..." while a migration window is open), "v<N>.<store id>" (a version's picture, and
 * clients before the fingerprint), or the bare "v<N>" / "v<N>+" of older clients, into *version,
 * *open (may be NULL), store_id and fingerprint (may be NULL; "" for the parts not sent): 0, or -1.
 */
int rkd_parse_etag(const char *s, int64_t *version, int *open, char store_id[RKD_STORE_ID_LEN],
                   char fingerprint[RKD_STORE_FP_LEN]);
/* "v<N>.<store id>.<fingerprint>" with the quotes ("v<N>.<store id>" when fingerprint is NULL),
 * "v<N>+..." when `open` (docs/API.md: the ring document names a previous version): a version
 * number names a ring only together with the store id, since a restored backup numbers its
 * versions on from where it was taken, and a 304 must mean "the ring you hold is this one", which
 * only the fingerprint of what the client holds can say (a hostile server may have sent it a
 * ring under this store's id and a number this store had not yet issued). */
void rkd_format_etag(char out[RKD_ETAG_MAX], int64_t version, int open, const char *store_id,
                     const char *fingerprint);

/* Query integer `name` in min..max: 1 and *out set when present, 0 when absent, -1 after
 * answering 400. */
int rkd_query_int(rkd_call *c, const char *name, int64_t min, int64_t max, int64_t *out);
/* Query boolean `name` ("true" or "false"; *out keeps its default when absent): 0, or -1 after
 * answering 400. */
int rkd_query_bool(rkd_call *c, const char *name, int *out);
/* If-Match as a version (RKD_STORE_ANY when absent): 0, or -1 after answering 400, or 412 when
 * it names another store id (the version it names is from before a restore). */
int rkd_if_match(rkd_call *c, int64_t *version);

/* ---- api_docs.c: the document cache ---- */

/* A serialized version document (the active one of a cluster, or a version's), as cached. */
typedef struct rkd_active_doc {
    int64_t version;  /* which version it is */
    int64_t previous; /* a ring document's open migration window: the version kept; else 0 */
    char fingerprint[RKD_STORE_FP_LEN]; /* the version's */
    size_t len;                         /* bytes in body */
    char body[];                        /* the JSON, NUL-terminated */
} rkd_active_doc;

/* The active document of `cluster`, held (rkd_cache_release on app->docs): from the cache, else
 * from the store; NULL with *rc and err set. */
rkd_entry *rkd_active_entry(rkd_app *app, const char *cluster, int *rc, rk_error *err);

/* The active version as the cache has it, or 0 when it is not cached: never read from the store,
 * so only a hint (rkd_store_approval_req.active_hint). */
int64_t rkd_cached_active(rkd_app *app, const char *cluster);

/* The document of `version` of `cluster`, held, likewise (same cache, keyed by the version). */
rkd_entry *rkd_version_entry(rkd_app *app, const char *cluster, int64_t version, int *rc,
                             rk_error *err);

/* Answers 200 with the document of held entry `e` (the hold is taken over): shared with the cache
 * and every other connection sending it, released once sent. */
void rkd_answer_doc(rkd_response *resp, rkd_entry *e);

/* The store's watch callback (`arg` is the app): refreshes the cache and the metrics after an
 * activation (or the cache after another replica's finish, rkd_on_window_closed), then calls the
 * activation hook. */
void rkd_on_store_change(void *arg, const char *cluster, int64_t version, rkd_store_change what,
                         uint64_t seq, const rkd_store_version *v);

/* After the migration window over active `version` of `cluster` closed: refreshes the cached ring
 * document, then calls the activation hook (long polls wake: the ETag changed). The new ring
 * document, held, or NULL with *rc set. */
rkd_entry *rkd_on_window_closed(rkd_app *app, const char *cluster, int64_t version, int *rc,
                                rk_error *err);

#endif
