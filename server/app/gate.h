/* gate.h — the gate every activation passes, by hand or by a rollout's step (gate.c): the store
 * runs its check inside the activation's transaction, and the caller fetches between the store's
 * tries the rings that check asked for. The gate holds those rings until rkd_gate_done.
 */
#ifndef RKD_GATE_H
#define RKD_GATE_H

#include <stdint.h>

#include <jansson.h>

#include "app.h"

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
    int need_job;         /* the policy the check saw pre-warms: fetch the cluster's job */
    int job_read;         /* the job was read, and ... */
    int64_t warm_from;    /* ... is a verified pre-warm from this version ... */
    int64_t warm_to;      /* ... to this one (both 0: it is not) */
    int need_load;        /* the policy the check saw budgets bytes: fetch the load profile */
    int load_read;        /* the profile was read: ... */
    json_t *profile;      /* ... the cluster's (NULL: it has none) */
} rkd_gate;

/* Sets g->c and g->check, and holds the plan's rings if the cache has them; the caller has set
 * to_version or publish (and sets reason before the store's call). The check answers
 * RKD_STORE_EROLLOUTRUNNING, RKD_STORE_EWINDOWOPEN, RKD_STORE_EBUDGET (422 budget_exceeded,
 * with the figures, or the scheme, hash or hash tag that changes) or, under a policy with
 * prewarm, RKD_STORE_ENOTVERIFIED for a version with data and no verified pre-warm from the
 * active one; it computes no plan when the policy has no budget. A budget in bytes
 * (max_moved_bytes) is counted by the cluster's load profile, and refuses when there is none or
 * it cannot weigh the plan (field "max_moved_bytes"). A reason (force) passes all but
 * the rollout and the window. */
void rkd_gate_init(rkd_gate *g, rkd_call *c);
/* After the store's call answered *rc: non-zero when it should be called again, the check having
 * asked for rings now fetched (RKD_STORE_EGATE; after three tries *rc becomes
 * RKD_STORE_ECONFLICT, and a failed fetch its error). */
int rkd_gate_again(rkd_gate *g, int *rc, rk_error *err);
/* Releases what the gate fetched (rings, profile). */
void rkd_gate_done(rkd_gate *g);

#endif
