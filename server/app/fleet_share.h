/* fleet_share.h — the fleet shared between replicas (fleet_share.c; SPEC section 9, docs/ETCD.md):
 * on a store several ringkeeperd share (rkd_store_fleet_shared), each replica writes the records of
 * the clients it serves and hears of the others', into the app's tables of clients (clients.h), so
 * that every replica's report, /metrics, the console, the rollout driver and the migration verdict
 * count the whole fleet. A thread writes what changed every RKD_FLEET_FLUSH_MS, batched.
 */
#ifndef RKD_FLEET_SHARE_H
#define RKD_FLEET_SHARE_H

#include "app.h"

#define RKD_FLEET_FLUSH_MS 100 /* a change waits this long at most before it is written */
/* Records of clients seen without a client token (with --token-file) written per flush at most:
 * 100 a second, so ids a stranger invents cost etcd that many writes (and revisions) a second at
 * most; the rest wait in the queue, one entry per id, within the table's cap. */
#define RKD_FLEET_STRANGER_WRITES 10

/* Starts sharing the app's tables as replica `replica` (a name for people, e.g. "host:8080"): the
 * store's first full reading (before it returns), then the writer thread. Call after
 * rkd_app_set_client_limits and before serving; it stops in rkd_app_free. RK_OK, or the store's
 * error (nothing started). */
int rkd_app_share_fleet(rkd_app *app, const char *replica, rk_error *err) RK_MUST_CHECK;

/* Writes what is left, stops the thread and the store's watch (rkd_app_free calls it). */
void rkd_fleet_share_stop(rkd_app *app);

#endif
