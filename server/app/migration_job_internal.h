/* migration_job_internal.h — what the files of the migration job's rules share
 * (migration_job.c: the compare-and-set loop and every change but one; migration_progress.c: a
 * worker's progress reports): one change in progress, the counter names, and the helpers over the
 * job's document. Not used outside them. */
#ifndef RKD_MIGRATION_JOB_INTERNAL_H
#define RKD_MIGRATION_JOB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "doc_change.h"
#include "migration_job.h"

#define SAME RKD_DOC_SAME

/* The counters of a source's copy and of its verify, by name, as reports carry them. */
extern const char *const rkj_copy_counters[];
extern const char *const rkj_verify_counters[];
extern const size_t rkj_n_copy, rkj_n_verify;

typedef rkd_doc_change rkj_change; /* one change of the job (doc_change.h) */

/* Every node of every step once, in order of first appearance: who verifies. */
json_t *rkj_all_sources(const json_t *plan_steps);

/* Non-zero when the job is in `state`. */
int rkj_is_state(const json_t *job, const char *state);

/* Gives `worker` the job's lease for RKD_JOB_LEASE_S from c->now. */
void rkj_lease(rkj_change *c, const char *worker);

/* Appends `item` (stolen) to list `name` of the job while it has fewer than RKD_JOB_LIST_MAX. */
void rkj_list_add(json_t *job, const char *name, json_t *item);

/* RK_OK for a job that is copying, paused or verifying; else RKD_STORE_ENOJOB or
 * RKD_STORE_EJOBSTATE. */
int rkj_need_unfinished(rkj_change *c, rk_error *err);

/* Member `name` of `o` as an integer, 0 when absent; rkj_str as a string, "" when absent. */
int64_t rkj_num(const json_t *o, const char *name);

/* The phase a job's workers are in: "copy", "verify", or "" for none. */
const char *rkj_phase_of(const json_t *job);

/* The event the change records: `kind`, the job's versions, `detail` (borrowed until written). */
void rkj_set_event(rkj_change *c, const char *kind, const char *detail);

/* Fresh source entries for `phase` over the nodes of `ids` (strings). */
json_t *rkj_sources_of(const json_t *ids, const char *phase);

const char *rkj_str(const json_t *o, const char *name);

/* 0 while the cluster's versions are still the job's; 1 when not: the job then fails (the change
 * writes it) and the caller is answered RKD_STORE_EVERSIONCHANGED after. */
int rkj_versions_moved(rkj_change *c, const rkd_job_versions *now);

/* {name: 0, ...} for names[0 .. n): a new object. */
json_t *rkj_zero_counters(const char *const *names, size_t n);

#endif
