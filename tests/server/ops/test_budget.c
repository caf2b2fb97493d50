/* test_budget.c — the HTTP front's byte budget (server/ops/http_budget.c) on its own: the total and
 * the per-address share are never passed, what is given back can be taken again, and the table of
 * addresses stays findable when addresses that collide come and go (linear probing's deletion). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "http_budget.h"

static void test_total_and_share(void **state)
{
    (void)state;
    rkd_budget *b = rkd_budget_new(100, 40, 8);
    assert_non_null(b);
    assert_int_equal(rkd_budget_take(b, "10.0.0.1", 40), 1);
    assert_int_equal(rkd_budget_take(b, "10.0.0.1", 1), 0); /* its share */
    assert_int_equal(rkd_budget_take(b, "10.0.0.2", 40), 1);
    assert_int_equal(rkd_budget_take(b, "10.0.0.3", 21), 0); /* the total */
    assert_int_equal(rkd_budget_take(b, "10.0.0.3", 20), 1);
    assert_int_equal(rkd_budget_used(b), 100);
    rkd_budget_give(b, "10.0.0.1", 40);
    assert_int_equal(rkd_budget_take(b, "10.0.0.3", 20), 1);
    assert_int_equal(rkd_budget_take(b, "10.0.0.1", 20), 1);
    assert_int_equal(rkd_budget_take(b, "10.0.0.1", 0), 1); /* nothing, always */
    rkd_budget_give(b, "10.0.0.9", 5);                      /* never took: no change */
    assert_int_equal(rkd_budget_used(b), 100);
    rkd_budget_free(b);
}

/* 16 slots (the smallest table) and 8 addresses at a time, taken and given back in an order that
 * removes addresses from the middle of their probe runs: each still finds its own bytes. */
static void test_removal_keeps_runs(void **state)
{
    (void)state;
    rkd_budget *b = rkd_budget_new(1u << 20, 100, 8);
    char addr[32];
    assert_non_null(b);
    for (unsigned round = 0; round < 200; round++) {
        for (unsigned i = 0; i < 8; i++) {
            snprintf(addr, sizeof addr, "10.%u.0.%u", round % 7, i);
            assert_int_equal(rkd_budget_take(b, addr, 10 + i), 1);
        }
        for (unsigned i = 0; i < 8; i++) { /* a second take of each sees its first */
            snprintf(addr, sizeof addr, "10.%u.0.%u", round % 7, i);
            assert_int_equal(rkd_budget_take(b, addr, 90 - i), 1); /* its share, exactly */
            assert_int_equal(rkd_budget_take(b, addr, 1), 0);
        }
        for (unsigned k = 0; k < 8; k++) {
            unsigned i = (k * 5 + round) % 8; /* every order of removal, over the rounds */
            snprintf(addr, sizeof addr, "10.%u.0.%u", round % 7, i);
            rkd_budget_give(b, addr, 60);
            rkd_budget_give(b, addr, 40);
        }
        assert_int_equal(rkd_budget_used(b), 0);
    }
    rkd_budget_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_total_and_share),
        cmocka_unit_test(test_removal_keeps_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
