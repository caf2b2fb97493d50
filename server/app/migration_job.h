/* migration_job.h — SPEC 10's migration job: the document GET .../migration answers, and the rules
 * of each change to it (start, claim, progress, throttle, pause, resume, cancel, finish). Every
 * change reads the job, decides on it, and writes it back by compare and set on the store
 * (rkd_store_put_job), deciding again when another request or server changed it meanwhile, so no
 * change is lost and none is applied twice. No HTTP: api_migration.c parses the requests into these
 * calls and maps their codes (store.h's RKD_STORE_ENOJOB ...).
 *
 * The document (docs/MIGRATE.md, "The job"), stored as served: "id", "state", "mode", "from",
 * "to", "data", "digest", "max_step", "delete_source", "step", "steps", "plan_steps" (per step its
 * "sources" and "arcs"), "throttle", "counters" (the copy's, summed over every source and step),
 * "sources" (the current step's: "node", "phase", "cursor", "done", "seq", "counters"),
 * "worker", "verify", "errors", "skipped_keys", "mismatches", "paused_from", "started_at",
 * "started_by", "updated_at".
 *
 * Every returned json_t is a new reference, the caller's to decref. */
#ifndef RKD_MIGRATION_JOB_H
#define RKD_MIGRATION_JOB_H

#include <stdint.h>

#include <jansson.h>

#include "store.h"

#define RKD_JOB_LEASE_S     10   /* a claim's lease; each progress report renews it */
#define RKD_JOB_LIST_MAX    100  /* errors, skipped keys and mismatches the document lists */
#define RKD_JOB_SOURCES_MAX 1024 /* source entries over all steps: bounds the document */
#define RKD_JOB_TEXT_MAX    1024 /* a key, cursor, worker id or message in a report */
#define RKD_JOB_KEYS_MAX    1000000000LL /* keys_per_s at most */
#define RKD_JOB_BYTES_MAX   (10LL << 30) /* bytes_per_s at most */

/* The versions of the cluster now, which a job's versions must still be: a job in `window` mode
 * copies from the window's previous version to the active one, one `before_cutover` from the
 * active version. */
typedef struct rkd_job_versions {
    int64_t active;   /* 0: none */
    int64_t previous; /* the open window's previous version; 0: no window */
    int fleet_holds;  /* a claim's: every client the server knows of holds `active` (SPEC 9) */
} rkd_job_versions;

/* What a new job is; every pointer borrowed. */
typedef struct rkd_job_start {
    const char *mode;   /* "window" or "before_cutover" */
    int64_t from, to;   /* the plan's versions */
    const char *data;   /* a name of rk_data_protocol's list (static) */
    const char *digest; /* the plan's digest */
    double max_step;    /* the plan's step limit; 0: none (one step) */
    json_t *plan_steps; /* [{"sources": [node ids], "arcs": n}, ...]: at least one step */
    int64_t arcs;       /* moving arcs of the whole plan, for verify */
    int64_t keys_per_s; /* the throttle; 0: unlimited */
    int64_t bytes_per_s;
    int delete_source;  /* non-zero: delete moved keys from their sources once verified */
    const char *author; /* who starts it (the token's name), or NULL */
} rkd_job_start;

/* The cluster's job: RK_OK and *job, or RKD_STORE_ENOJOB before its first. */
int rkd_job_get(rkd_store *s, const char *cluster, json_t **job, rk_error *err);

/* Starts a job in state "copying" (event "migration_start"). RKD_STORE_EJOBSTATE while the
 * cluster's job is copying, paused or verifying. */
int rkd_job_start_new(rkd_store *s, const char *cluster, const rkd_job_start *st, json_t **job,
                      rk_error *err);

/* Gives `worker` the job's lease for RKD_JOB_LEASE_S seconds (renewed when it holds it already).
 * RKD_STORE_ELEASED while another worker holds an unexpired lease; RKD_STORE_EJOBSTATE for a job
 * that is not copying, paused or verifying; RKD_STORE_EVERSIONCHANGED (the job then "failed")
 * when the cluster's versions are no longer the job's. */
int rkd_job_claim(rkd_store *s, const char *cluster, const char *worker,
                  const rkd_job_versions *now, json_t **job, rk_error *err);

/* Lets go of the lease when `worker` holds it (a worker that stops: the next run need not wait
 * for the lease to run out); else changes nothing. RKD_STORE_ENOJOB before the first job. */
int rkd_job_release(rkd_store *s, const char *cluster, const char *worker, json_t **job,
                    rk_error *err);

/* Records a worker's progress `report` (docs/MIGRATE.md, "Progress reports"; borrowed) and renews
 * its lease. Counted once by its "seq": a report not newer than the last for its source changes
 * nothing and answers the job as it is. RK_EINVAL with the field for a malformed report,
 * RKD_STORE_ELEASED for a worker that does not hold the lease, RKD_STORE_EJOBSTATE for a report
 * of another step or phase, or to a job that ended; RKD_STORE_EVERSIONCHANGED as for a claim. */
int rkd_job_progress(rkd_store *s, const char *cluster, const json_t *report,
                     const rkd_job_versions *now, json_t **job, rk_error *err);

/* Sets the throttle (< 0: keep that rate), event "migration_throttle". */
int rkd_job_throttle(rkd_store *s, const char *cluster, int64_t keys_per_s, int64_t bytes_per_s,
                     const char *author, json_t **job, rk_error *err);

/* "pause" (a copying or verifying job), "resume" (a paused one) or "cancel" (one not ended, or
 * verified and not finished), with
 * event "migration_<action>" and `comment` (may be NULL) as its detail. */
int rkd_job_control(rkd_store *s, const char *cluster, const char *action, const char *author,
                    const char *comment, json_t **job, rk_error *err);

/* For a finish of the window from `now->previous` to `now->active`: RK_OK when the cluster never
 * had a job, when that window's job is verified, or when the window moves nothing the mover
 * could copy; else RKD_STORE_ENOTVERIFIED naming the job there and its versions (a job of other
 * versions never vouches for this window). *for_window (may be NULL) is set when there is a job
 * for that window. */
int rkd_job_check_finish(rkd_store *s, const char *cluster, const rkd_job_versions *now,
                         int *for_window, rk_error *err);

/* After the window it was for was finished: the job's state becomes "finished" (a verified one),
 * or stays as it was (one forced past). */
int rkd_job_window_finished(rkd_store *s, const char *cluster, int64_t from, int64_t to,
                            rk_error *err);

#endif
