/* changes.h — a change counter per cluster, kept in the app (changes.c), and the app's one wake
 * hook: every change of a cluster moves its counter on and calls the hook, which the HTTP layer
 * set to wake the long polls of the cluster (api.h, rkd_app_set_activation_hook).
 */
#ifndef RKD_CHANGES_H
#define RKD_CHANGES_H

#include <stdint.h>

#include "app.h"

/* Starts every counter at the wall clock's milliseconds (rkd_app_new). */
void rkd_changes_init(rkd_app *app);
/* Moves the counter of `cluster` on and calls the hook: after the activation of `version`, which
 * wakes every poll of the cluster, or with 0 after any other change, which wakes its watchers. */
void rkd_app_wake(rkd_app *app, const char *cluster, int64_t version);
void rkd_app_changed(rkd_app *app, const char *cluster); /* rkd_app_wake(app, cluster, 0) */
/* The counter of `cluster` now (shared with the clusters of its slot: a hint, never a miss). */
uint64_t rkd_changes_seq(rkd_app *app, const char *cluster);

#endif
