/* metrics.h — counters and histograms of ringkeeperd, rendered in the Prometheus text format. */
#ifndef RK_METRICS_H
#define RK_METRICS_H

#include <stdint.h>

typedef struct rk_metrics rk_metrics;

typedef enum rk_counter {
    RK_COUNT_PUBLISHES,   /* versions published */
    RK_COUNT_ACTIVATIONS, /* versions activated */
    RK_COUNT_DB_ERRORS,   /* store calls that failed for the database's sake (not the caller's) */
} rk_counter;

/* New, zeroed metrics (free with rk_metrics_free), or NULL when out of memory. */
rk_metrics *rk_metrics_new(void);
void rk_metrics_free(rk_metrics *m);

/* All calls below are thread-safe and cheap; `route` is a static route pattern. */
void rk_metrics_request(rk_metrics *m, const char *method, const char *route, int status,
                        double seconds);
void rk_metrics_count(rk_metrics *m, rk_counter which);
void rk_metrics_active_version(rk_metrics *m, const char *cluster, int64_t version);
void rk_metrics_waiting(rk_metrics *m, int delta); /* long polls held: +1 / -1 */

/* Prometheus text exposition of everything above; new string (free()), NULL when out of memory. */
char *rk_metrics_render(rk_metrics *m);

#endif
