/* fleet.h — the clients of each cluster as this server sees them (fleet.c), over the app's two
 * tables of RK-Client ids (clients.h: the authenticated ones, and the strangers kept apart): a
 * ring request's report recorded, and the questions a migration job's claim and a rollout's hold
 * ask of them. The tables are the app's; nothing here hands out what they own.
 */
#ifndef RKD_FLEET_H
#define RKD_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "app.h"

/* Records report `r` (its id NULL: nothing) in the fleet of `cluster`: among the clients when
 * `authenticated` (by a client token, or no token file is set), else apart among the strangers
 * (nowhere when only authenticated ones are recorded); an id another token holds goes among the
 * strangers. Wakes the cluster's watchers when the report changed what the fleet holds. */
void rkd_fleet_seen(rkd_app *app, const char *cluster, int authenticated,
                    const rkd_client_report *r);
/* Whether the fleet of `cluster` holds version v: at least one client, and every one this server
 * knows of (with a client token or without) holds it. Then every write goes to v's owners (SPEC
 * 5). */
int rkd_fleet_holds(rkd_app *app, const char *cluster, int64_t v);
/* How many clients of `cluster` (with a client token or without) refuse version v: such a client
 * will not hold v while it is active (SPEC 9), so a rollout's hold need not wait for it. */
int64_t rkd_fleet_refusing(rkd_app *app, const char *cluster, int64_t v);
/* What a rollout's hold waits for, for people: how many of the cluster's clients hold `v`, and
 * the first few that do not, with the reason of those that refuse it ("hold: 3 of 5 clients hold
 * v7; still not: web-2 (v6), nginx@h1 (v6, refusing it: validate: ...)"), into `out` of `n`
 * bytes. */
void rkd_fleet_waiting(rkd_app *app, const char *cluster, int64_t v, char *out, size_t n);

#endif
