/* rings.h — the built rings that plans, pictures, rollouts and the gate share (rings.c): the cache
 * of rings by version (app->rings, built when missing), the plan between two versions over them,
 * and the slots of --plan-concurrency that bound how many are computed at once, all but one of
 * them at most for one client address. Entries handed out are held by the caller, who releases
 * them on app->rings (rkd_cache_release).
 */
#ifndef RKD_RINGS_H
#define RKD_RINGS_H

#include <stddef.h>
#include <stdint.h>

#include "app.h"

/* Version `v` of the call's cluster as a built ring, held (rkd_cache_release on app->rings): from
 * the cache, else built and cached; NULL with *rc and err set. */
rkd_entry *rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err);
/* The plan from version `from` to `to` of c->cluster with `opt`, over the cached rings (built
 * when missing, after rk_plan_check): RK_OK and *out (the caller frees it), or the code with err.
 * The caller holds a plan slot. */
int rkd_plan_between(rkd_call *c, int64_t from, int64_t to, const rk_plan_options *opt,
                     rk_plan **out, rk_error *err);
/* The two rings of a plan from v[0] to v[1], held in e[0] and e[1] (release both on
 * app->rings): cached, else built, after the topologies refused what the plan would surely
 * refuse, so such a refusal builds no ring: rk_plan_check, and RK_ETOOBIG (field "nodes") when the
 * plan would list more than `max_nodes` nodes (0: any). RK_OK, or the code with err. */
int rkd_plan_rings(rkd_call *c, const int64_t v[2], const rk_plan_options *opt, size_t max_nodes,
                   rkd_entry *e[2], rk_error *err);

/* Slots of --plan-concurrency `concurrency` one client address may hold: all but one, at least
 * one, so that clients looping on costly plans from one address leave the others some. */
unsigned rkd_plan_share(unsigned concurrency);
/* Takes one of the --plan-concurrency slots that bound plans and ring builds (about 1 s and
 * 500 MB each at 4M points), within the share of client address `addr` (an IPv6 one counted by
 * its /64; NULL, an unknown address, as one for all of them): 1, or 0 when none is free for it.
 * Give a taken slot back with rkd_plan_slot_give. */
int rkd_plan_slot_take(rkd_app *app, const char *addr);
void rkd_plan_slot_give(rkd_app *app, const char *addr);

#endif
