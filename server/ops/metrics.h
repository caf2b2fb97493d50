/* metrics.h — counters and histograms of ringkeeperd, rendered in the Prometheus text format. */
#ifndef RKD_METRICS_H
#define RKD_METRICS_H

#include <stdint.h>

typedef struct rkd_metrics rkd_metrics;

typedef enum rkd_counter {
    RKD_COUNT_PUBLISHES,   /* versions published */
    RKD_COUNT_ACTIVATIONS, /* versions activated */
    RKD_COUNT_DB_ERRORS,   /* store calls that failed for the database's sake (not the caller's) */
    RKD_COUNT_DOC_CACHE_HITS, /* version documents (the ring, a version) answered from the cache */
    RKD_COUNT_PLAN_REFUSALS_REMEMBERED, /* plans refused plan_too_large answered from memory */
} rkd_counter;

/* New, zeroed metrics (free with rkd_metrics_free), or NULL when out of memory. */
rkd_metrics *rkd_metrics_new(void);
void rkd_metrics_free(rkd_metrics *m);

/* All calls below are thread-safe and cheap; `route` is a static route pattern. */
void rkd_metrics_request(rkd_metrics *m, const char *method, const char *route, int status,
                         double seconds);
void rkd_metrics_count(rkd_metrics *m, rkd_counter which);
void rkd_metrics_active_version(rkd_metrics *m, const char *cluster, int64_t version);
void rkd_metrics_waiting(rkd_metrics *m, int delta); /* long polls held: +1 / -1 */

/* The cluster's migration job as this server last wrote or read it: its state ("copying" ...;
 * another is ignored), its key counters by rkd_metrics_job_kind and its bytes. Per server: with
 * several replicas, each shows the changes it made and the reads it answered. */
#define RKD_JOB_KINDS 6
void rkd_metrics_migration(rkd_metrics *m, const char *cluster, const char *state,
                           const uint64_t keys[RKD_JOB_KINDS], uint64_t bytes);
/* "scanned", "copied", "present", "skipped", "errors", "expired" (the job's counter names), for
 * i < RKD_JOB_KINDS; else NULL. */
const char *rkd_metrics_job_kind(size_t i);

/* Prometheus text exposition of everything above; new string (free()), NULL when out of memory. */
char *rkd_metrics_render(rkd_metrics *m);

#endif
