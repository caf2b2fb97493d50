/* guard.h — a rollout step's guard (SPEC 11): after a step's soak, a URL must answer 2xx, and
 * when a metric is named, its sample in that answer (the Prometheus text format) must be at most
 * `max`. Built with libcurl only (RKD_GUARD defined); without it the API refuses guards. */
#ifndef RKD_GUARD_H
#define RKD_GUARD_H

#include <stddef.h>

#define RKD_GUARD_TIMEOUT_MS 5000      /* one check's whole transfer */
#define RKD_GUARD_BODY_MAX   (1 << 20) /* the answer read at most; a longer one fails the check */

/* libcurl's global set-up and tear-down, once around every check (before any thread runs one). */
int rkd_guard_init(void);
void rkd_guard_cleanup(void);

/* 1 when the guard passes; 0 with why it did not in why[0 .. size - 1] (the status, the error,
 * the metric missing or over max). `metric` NULL checks the status alone. */
int rkd_guard_check(const char *url, const char *metric, double max, char *why, size_t size);

#endif
