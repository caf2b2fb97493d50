/* test_throttle.c — the mover's throttle (client/mover/throttle.h) on a fake clock, no servers:
 * rates held within 5% over 10 s, bytes as well as keys, bounded naps, no burst after an idle
 * spell, rates changed while a caller sleeps; and one short run on the real clock with the rate
 * set from another thread. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "throttle.h"

#define NS_PER_S 1000000000LL

/* Time that moves only when the throttle sleeps; at `change_ns` it sets new rates, as another
 * thread would while the caller sleeps. */
typedef struct fake {
    int64_t now_ns;
    int64_t longest_nap_ns;
    rkm_throttle *t;    /* for the change */
    int64_t change_ns;  /* 0: none */
    uint64_t new_keys;  /* the rates it sets */
    uint64_t new_bytes; /* with new_keys */
} fake;

static int64_t fake_now(void *ctx)
{
    return ((fake *)ctx)->now_ns;
}

static void fake_sleep(void *ctx, int64_t ns)
{
    fake *f = ctx;
    assert_true(ns > 0);
    f->now_ns += ns;
    f->longest_nap_ns = ns > f->longest_nap_ns ? ns : f->longest_nap_ns;
    if (f->change_ns && f->now_ns >= f->change_ns) {
        f->change_ns = 0;
        rkm_throttle_set(f->t, f->new_keys, f->new_bytes);
    }
}

static rkm_throttle *fake_throttle(fake *f, uint64_t keys_per_s, uint64_t bytes_per_s)
{
    rkm_clock clock = {.now_ns = fake_now, .sleep_ns = fake_sleep, .ctx = f};
    f->t = rkm_throttle_new(keys_per_s, bytes_per_s, &clock, NULL);
    assert_non_null(f->t);
    return f->t;
}

/* Takes of `bytes` each until the fake clock passes `until_ns`; how many. */
static uint64_t take_until(fake *f, uint64_t bytes, int64_t until_ns)
{
    uint64_t n = 0;
    while (f->now_ns < until_ns) {
        rkm_throttle_take(f->t, 1, bytes);
        n++;
    }
    return n;
}

static void holds_key_rate(void **state)
{
    (void)state;
    fake f = {.now_ns = 5 * NS_PER_S};
    fake_throttle(&f, 500, 0);
    uint64_t n = take_until(&f, 100, f.now_ns + 10 * NS_PER_S);
    assert_in_range(n, 4750, 5250);
    assert_in_range(n, 4999, 5002); /* in fact: one take ahead of the rate at most */
    assert_true(f.longest_nap_ns <= RKM_THROTTLE_NAP_MS * 1000000LL);
    rkm_throttle_free(f.t);
}

static void holds_byte_rate(void **state)
{
    (void)state;
    fake f = {0};
    fake_throttle(&f, 0, 1000000); /* 1 MB/s of 10 KB values: 100 a second */
    uint64_t n = take_until(&f, 10000, 10 * NS_PER_S);
    assert_in_range(n, 950, 1050);
    rkm_throttle_free(f.t);
}

/* Whichever limit is tighter rules. */
static void tighter_limit_rules(void **state)
{
    (void)state;
    fake f = {0};
    fake_throttle(&f, 1000, 100000); /* 1000 keys/s, but 100 KB/s of 1 KB values: 100 keys/s */
    uint64_t n = take_until(&f, 1000, 10 * NS_PER_S);
    assert_in_range(n, 950, 1050);
    rkm_throttle_free(f.t);
}

static void unlimited_never_sleeps(void **state)
{
    (void)state;
    fake f = {0};
    fake_throttle(&f, 0, 0);
    for (int i = 0; i < 100000; i++)
        rkm_throttle_take(f.t, 1, 1 << 20);
    assert_int_equal(f.now_ns, 0);
    rkm_throttle_take(NULL, 1, 1); /* no throttle: unlimited too */
    rkm_throttle_free(f.t);
}

/* One value far over a second's bytes is let through, and paid for in bounded naps after it. */
static void big_value_paid_in_naps(void **state)
{
    (void)state;
    fake f = {0};
    fake_throttle(&f, 0, 1000000);
    rkm_throttle_take(f.t, 1, 5000000);
    assert_in_range(f.now_ns, 5 * NS_PER_S - 1000, 5 * NS_PER_S + 1000);
    assert_true(f.longest_nap_ns <= RKM_THROTTLE_NAP_MS * 1000000LL);
    rkm_throttle_free(f.t);
}

/* An idle spell saves up a tenth of a second of the rate, not the whole spell. */
static void idle_saves_little(void **state)
{
    (void)state;
    fake f = {0};
    fake_throttle(&f, 500, 0);
    f.now_ns = 60 * NS_PER_S;
    int free_takes = 0;
    while (f.now_ns == 60 * NS_PER_S) {
        rkm_throttle_take(f.t, 1, 0);
        free_takes++;
    }
    assert_in_range(free_takes, 50, 51);
    rkm_throttle_free(f.t);
}

/* 100 keys/s for 5 s, then 1000 keys/s (set while the caller sleeps) for 5 s. */
static void rate_change_applies(void **state)
{
    (void)state;
    fake f = {.change_ns = 5 * NS_PER_S, .new_keys = 1000};
    fake_throttle(&f, 100, 0);
    uint64_t n = take_until(&f, 0, 10 * NS_PER_S);
    assert_in_range(n, (500 + 5000) * 95 / 100, (500 + 5000) * 105 / 100);
    uint64_t keys, bytes;
    rkm_throttle_get(f.t, &keys, &bytes);
    assert_int_equal(keys, 1000);
    assert_int_equal(bytes, 0);
    rkm_throttle_free(f.t);
}

/* A caller deep in debt (5 MB at 1 KB/s: 5000 s) is let go within a nap of the limit's lifting. */
static void lifted_limit_frees_sleeper(void **state)
{
    (void)state;
    fake f = {.change_ns = 1 * NS_PER_S};
    fake_throttle(&f, 0, 1000);
    rkm_throttle_take(f.t, 1, 5000000);
    assert_true(f.now_ns <= 1 * NS_PER_S + RKM_THROTTLE_NAP_MS * 1000000LL);
    rkm_throttle_free(f.t);
}

static void *lift_later(void *arg)
{
    struct timespec ts = {.tv_nsec = 300000000L};
    nanosleep(&ts, NULL);
    rkm_throttle_set(arg, 0, 0);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The real clock: 100 keys/s until another thread lifts the limit after 0.3 s; 1000 keys then
 * take about 0.3 s, not 10. */
static void real_clock_and_setter_thread(void **state)
{
    (void)state;
    pthread_t th;
    rkm_throttle *t = rkm_throttle_new(100, 0, NULL, NULL);
    assert_non_null(t);
    double start = now_s();
    assert_int_equal(pthread_create(&th, NULL, lift_later, t), 0);
    for (int i = 0; i < 1000; i++)
        rkm_throttle_take(t, 1, 0);
    double took = now_s() - start;
    pthread_join(th, NULL);
    assert_true(took >= 0.25 && took < 1.0);
    rkm_throttle_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(holds_key_rate),
        cmocka_unit_test(holds_byte_rate),
        cmocka_unit_test(tighter_limit_rules),
        cmocka_unit_test(unlimited_never_sleeps),
        cmocka_unit_test(big_value_paid_in_naps),
        cmocka_unit_test(idle_saves_little),
        cmocka_unit_test(rate_change_applies),
        cmocka_unit_test(lifted_limit_frees_sleeper),
        cmocka_unit_test(real_clock_and_setter_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
