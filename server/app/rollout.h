/* rollout.h — SPEC 11's rollout: the document GET .../rollouts/{id} answers, and the rules of
 * each change to it. A cluster keeps its latest rollout (rkd_store_get_doc, RKD_DOC_ROLLOUT);
 * every change reads it, decides, and writes it back by compare and set (doc_change.h), with its
 * event. No HTTP: api_rollouts.c parses requests into these calls.
 *
 * The document (docs/MIGRATE.md, "Rollouts"), stored as served: "id", "cluster", "state"
 * (review, approved, running, paused, reverting, aborted, done, failed), "from" {"version",
 * "fingerprint"}, "options" {"steps" | "max_step_moved", "soak_s", "guard"}, "digest", "steps" (per
 * step "n", "topology", "moved_fraction", "balance_after", "version", "state", "changes"),
 * "total_moved", "one_shot_moved", "approvals" [{"by", "at"}], "approvals_needed", "created_at",
 * "created_by", "updated_at"; once started "step" (1-based), "phase" and "phase_since",
 * "soak_until" in a soak, "reason" (why it paused or failed) and "driver" {"id", "until"}; a revert
 * adds "revert"
 * {"topology", "version", "state"}, walked as step 0, and "aborted_at_step".
 *
 * Every returned json_t is a new reference, the caller's to decref. */
#ifndef RKD_ROLLOUT_H
#define RKD_ROLLOUT_H

#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "store.h"

/* What a review may build, and what the stored document may weigh: the review's intermediate
 * rings at most this many points in all (about 0.7 s of ring builds), and the document (every
 * step's topology) at most this many bytes, which an etcd value holds. docs/API.md, "Limits". */
#define RKD_ROLLOUT_POINTS_BUILT (16u << 20)
#define RKD_ROLLOUT_DOC_MAX      (1u << 20)
#define RKD_ROLLOUT_SOAK_MAX     86400 /* soak_s at most: a day */

/* A new rollout; pointers borrowed. */
typedef struct rkd_rollout_new {
    const json_t *review;         /* rk_rollout_to_json's document: digest, steps, totals */
    int64_t from;                 /* the active version it starts from */
    const char *from_fingerprint; /* ... and its fingerprint */
    const json_t *options;        /* {"steps" | "max_step_moved", "soak_s", "guard"} */
    int64_t approvals_needed;     /* the policy's approvals, at least 1: the digest's own */
    const char *author;           /* who asks (the token's name), or NULL */
} rkd_rollout_new;

/* The cluster's rollout `id`: RK_OK and *out, or RKD_STORE_ENOROLLOUT (none of that id: the
 * cluster keeps only its latest). */
int rkd_rollout_get(rkd_store *s, const char *cluster, int64_t id, json_t **out, rk_error *err);

/* Stores a new rollout in state "review", numbered one past the cluster's last (event
 * "rollout_create"); it replaces a rollout in review, approved or ended. RKD_STORE_EROLLOUTSTATE
 * while the cluster's rollout is running or paused; RKD_STORE_EROLLOUTTOOBIG for a document over
 * RKD_ROLLOUT_DOC_MAX. */
int rkd_rollout_create(rkd_store *s, const char *cluster, const rkd_rollout_new *in, json_t **out,
                       rk_error *err);

/* Records `approver`'s approval of rollout `id` over `digest` (event "rollout_approve"); with the
 * approvals the policy asks for, the rollout is "approved". RKD_STORE_EPLANCHANGED for another
 * digest, RKD_STORE_ESELFAPPROVAL for its author under a distinct-approver policy (or a second
 * approval by one name), RKD_STORE_EROLLOUTSTATE past review. */
int rkd_rollout_approve(rkd_store *s, const char *cluster, int64_t id, const char *digest,
                        const char *approver, int distinct_approver, json_t **out, rk_error *err);

/* RKD_STORE_EROLLOUTRUNNING when the cluster's rollout, `doc` as stored (JSON text; NULL: none),
 * is running, paused or reverting: an activation by hand (activate, publish and activate, revert
 * and activate) is refused then. RK_OK otherwise. The activation's gate checks it inside the
 * store's transaction (store.h, rkd_store_gate), with the document that transaction read. */
int rkd_rollout_check_hand(const char *cluster, const char *doc, rk_error *err);
/* RKD_STORE_EAPPROVAL when the approvals of the cluster's rollout (`doc` as stored; NULL: none)
 * fall short of what policy `pol` asks now: a step's activation answers to the policy in force at
 * its commit, not to the one the rollout was approved under (issue 52: approved under approvals=1,
 * a step activated after an admin had asked for 3). With distinct_approver, its author's own
 * approval does not count. RK_OK otherwise. */
int rkd_rollout_check_approvals(const char *cluster, const char *doc, const rkd_store_policy *pol,
                                rk_error *err);

/* Starts approved rollout `id` (event "rollout_start"): running, step 1, phase "publish". The
 * active version must still be its start (`active`), else RKD_STORE_EVERSIONCHANGED. */
int rkd_rollout_start(rkd_store *s, const char *cluster, int64_t id, int64_t active,
                      const char *author, json_t **out, rk_error *err);

/* An operator's control of rollout `id`, with an event "rollout_<action>": "pause" (running ->
 * paused), "resume" (paused -> running), "abort" (review, approved, running or paused -> aborted:
 * the cluster stays where the last step left it), "revert" (running or paused -> reverting: its
 * driver closes an open window, then publishes `revert`, the start's topology, borrowed, and
 * activates it in a window like a step; then aborted). RKD_STORE_EROLLOUTSTATE from another
 * state. */
int rkd_rollout_control(rkd_store *s, const char *cluster, int64_t id, const char *action,
                        const char *author, json_t *revert, json_t **out, rk_error *err);

/* A step of a running rollout moving on, as its driver (rollout_driver.c) decides it: from
 * `phase` of step `step` to `to` (close, publish, activate, hold, move, soak), or with `to` NULL
 * the step done and the next begun (or the rollout done, after the last; step 0, a revert's, done:
 * the rollout aborted). `version` > 0 records the step's
 * version; `soak_until` the end of its soak; `pause` non-NULL pauses it instead, `fail` fails it,
 * with that reason. RKD_DOC_SAME (nothing written) when the rollout is no longer there: another
 * driver moved it, or an operator paused or aborted it. */
typedef struct rkd_rollout_move {
    int64_t id, step;
    const char *phase, *to;
    int64_t version;
    time_t soak_until;
    const char *pause;
    int fail;
} rkd_rollout_move;
int rkd_rollout_advance(rkd_store *s, const char *cluster, const rkd_rollout_move *m,
                        rk_error *err);

/* Gives driver `me` the rollout's lease for RKD_ROLLOUT_LEASE_S (renewed when it is its own, and
 * written only when less than half is left): 1 when `me` may drive it now, 0 when another driver
 * holds it (another ringkeeperd on the same etcd) or it is not running. */
#define RKD_ROLLOUT_LEASE_S 10
int rkd_rollout_lease(rkd_store *s, const char *cluster, const char *me, rk_error *err);

#endif
