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

/* Prometheus text exposition of everything above; new string (free()), NULL when out of memory. */
char *rkd_metrics_render(rkd_metrics *m);

#endif
