/* throttle.c — two token buckets, keys/s and bytes/s, that may go into debt: a caller takes what
 * it did and sleeps, in bounded naps, until the debt is paid (throttle.h). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "throttle.h"

#define NS_PER_S 1000000000LL
#define SAVE_S   0.1 /* an idle bucket saves up this much of its rate, so a pause is no burst */

typedef struct bucket {
    uint64_t rate; /* per second; 0: unlimited */
    double tokens; /* may be below 0: a debt, which the next calls wait for */
} bucket;

struct rkm_throttle {
    pthread_mutex_t lock; /* guards the rest but clock, which is read-only */
    rkm_clock clock;      /* where time comes from */
    int64_t refilled_ns;  /* when the buckets were last filled up to now */
    bucket keys, bytes;   /* the two limits */
};

static int64_t real_now_ns(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void real_sleep_ns(void *ctx, int64_t ns)
{
    (void)ctx;
    struct timespec ts = {.tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S)};
    nanosleep(&ts, NULL); /* woken early by a signal: the caller's loop sleeps the rest */
}

static void bucket_fill(bucket *b, int64_t elapsed_ns)
{
    if (b->rate == 0) {
        b->tokens = 0; /* unlimited: no debt carried into a later limit */
        return;
    }
    double saved = (double)b->rate * SAVE_S;
    b->tokens += (double)b->rate * (double)elapsed_ns / NS_PER_S;
    b->tokens = b->tokens > saved ? saved : b->tokens;
}

/* The time until `b` is out of debt, in ns. */
static int64_t bucket_wait_ns(const bucket *b)
{
    if (b->rate == 0 || b->tokens >= 0)
        return 0;
    return (int64_t)ceil(-b->tokens * NS_PER_S / (double)b->rate);
}

/* Under the lock: both buckets filled for the time since the last fill. */
static void fill(rkm_throttle *t)
{
    int64_t now = t->clock.now_ns(t->clock.ctx);
    bucket_fill(&t->keys, now - t->refilled_ns);
    bucket_fill(&t->bytes, now - t->refilled_ns);
    t->refilled_ns = now;
}

rkm_throttle *rkm_throttle_new(uint64_t keys_per_s, uint64_t bytes_per_s, const rkm_clock *clock,
                               rk_error *err)
{
    rkm_throttle *t = calloc(1, sizeof *t);
    if (!t || pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory for a throttle");
        return NULL;
    }
    t->clock = clock ? *clock : (rkm_clock){.now_ns = real_now_ns, .sleep_ns = real_sleep_ns};
    t->refilled_ns = t->clock.now_ns(t->clock.ctx);
    t->keys.rate = keys_per_s; /* both start empty: the first second is no faster than the rest */
    t->bytes.rate = bytes_per_s;
    return t;
}

void rkm_throttle_free(rkm_throttle *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void rkm_throttle_set(rkm_throttle *t, uint64_t keys_per_s, uint64_t bytes_per_s)
{
    pthread_mutex_lock(&t->lock);
    fill(t); /* the time so far counts at the old rates */
    t->keys.rate = keys_per_s;
    t->bytes.rate = bytes_per_s;
    fill(t); /* and no more is saved than the new rates allow */
    pthread_mutex_unlock(&t->lock);
}

void rkm_throttle_get(rkm_throttle *t, uint64_t *keys_per_s, uint64_t *bytes_per_s)
{
    pthread_mutex_lock(&t->lock);
    *keys_per_s = t->keys.rate;
    *bytes_per_s = t->bytes.rate;
    pthread_mutex_unlock(&t->lock);
}

void rkm_throttle_take(rkm_throttle *t, uint64_t keys, uint64_t bytes)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    fill(t);
    t->keys.tokens -= t->keys.rate ? (double)keys : 0;
    t->bytes.tokens -= t->bytes.rate ? (double)bytes : 0;
    for (;;) {
        int64_t wait = bucket_wait_ns(&t->keys), bytes_wait = bucket_wait_ns(&t->bytes);
        wait = wait > bytes_wait ? wait : bytes_wait;
        pthread_mutex_unlock(&t->lock);
        if (wait == 0)
            return;
        /* a nap at most, then the rates again: a change is seen while sleeping */
        t->clock.sleep_ns(t->clock.ctx, wait < RKM_THROTTLE_NAP_MS * 1000000LL
                                            ? wait
                                            : RKM_THROTTLE_NAP_MS * 1000000LL);
        pthread_mutex_lock(&t->lock);
        fill(t);
    }
}
