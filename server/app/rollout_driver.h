/* rollout_driver.h — the thread that drives the running rollouts of the store (rollout_driver.c;
 * SPEC 11, docs/MIGRATE.md "Rollouts"), one per app, which owns it from rkd_app_start_rollouts to
 * rkd_app_stop_rollouts (or rkd_app_free).
 */
#ifndef RKD_ROLLOUT_DRIVER_H
#define RKD_ROLLOUT_DRIVER_H

#include "app.h"

typedef struct rkd_driver rkd_driver;

/* Starts the thread that drives the running rollouts of the store (SPEC 11, docs/MIGRATE.md
 * "Rollouts"), looking at them every `tick_ms` (0: 500): RK_OK, or RK_ENOMEM. Call before the
 * HTTP layer starts its threads (its handlers read the app's driver) and stop it, with
 * rkd_app_stop_rollouts or rkd_app_free, once they have stopped; its activations wake long polls
 * through the activation hook while one is set. */
int rkd_app_start_rollouts(rkd_app *app, unsigned tick_ms, rk_error *err);
void rkd_app_stop_rollouts(rkd_app *app);

/* Asks the driver to look at `cluster` now (a rollout started or resumed). No-op without one. */
void rkd_driver_wake(rkd_app *app, const char *cluster);

#endif
