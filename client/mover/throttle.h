/* throttle.h — the mover's speed limit: a token bucket of keys per second and one of bytes per
 * second, whose rates may change while a copy runs (docs/MIGRATE.md, "The copy engine").
 *
 * A caller takes what it has just done (rkm_throttle_take(t, 1, bytes)) and is held until the
 * buckets are no longer in debt: one large value is never refused, the time after it pays for it.
 * An idle bucket saves up at most a tenth of a second of its rate, so over any 10 s the rate is
 * held within a few per cent.
 *
 * Thread safety: every call may run on any number of threads at once (a mutex, never held while
 * sleeping), so one throttle may be shared by the copies of several sources, and its rates set
 * from another thread (the job's PUT .../throttle): a change is seen within RKM_THROTTLE_NAP_MS. */
#ifndef RKM_THROTTLE_H
#define RKM_THROTTLE_H

#include <stdint.h>

#include "ringkeeper.h"

#define RKM_THROTTLE_NAP_MS 100 /* the longest sleep: rates are read again after each */

/* Where the throttle's time comes from. The real clock is CLOCK_MONOTONIC and nanosleep; tests
 * give a fake one whose sleep moves its time on. */
typedef struct rkm_clock {
    int64_t (*now_ns)(void *ctx);            /* a monotonic time in ns */
    void (*sleep_ns)(void *ctx, int64_t ns); /* waits about `ns` (> 0) */
    void *ctx;                               /* given to both */
} rkm_clock;

typedef struct rkm_throttle rkm_throttle;

/* A throttle of `keys_per_s` and `bytes_per_s` (0: that one unlimited) on `clock` (copied; NULL:
 * the real clock). New (free with rkm_throttle_free), or NULL with RK_ENOMEM in `err`. */
rkm_throttle *rkm_throttle_new(uint64_t keys_per_s, uint64_t bytes_per_s, const rkm_clock *clock,
                               rk_error *err) RK_MUST_CHECK;
/* NULL is allowed; no thread may be inside rkm_throttle_take. */
void rkm_throttle_free(rkm_throttle *t);

/* New rates (0: unlimited), for the calls from now on and for those sleeping now. */
void rkm_throttle_set(rkm_throttle *t, uint64_t keys_per_s, uint64_t bytes_per_s);
void rkm_throttle_get(rkm_throttle *t, uint64_t *keys_per_s, uint64_t *bytes_per_s);

/* Counts `keys` and `bytes` just handled, then sleeps, in naps of at most RKM_THROTTLE_NAP_MS,
 * until neither bucket is in debt. NULL `t` is unlimited. */
void rkm_throttle_take(rkm_throttle *t, uint64_t keys, uint64_t bytes);

#endif
