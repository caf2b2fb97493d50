/* rollout_load.c — a rollout's review weighed by a load profile (docs/LOAD.md, "Rollouts by
 * load"): each step's plan weighed as a plan is (what it moves in keys, bytes and reads, and the
 * balance after it), and their sum against the profile's totals. Each step's ring is built again
 * from its topology (rk_plan_load without the ring): one build per step, as the review cost. */
#include <jansson.h>

#include "internal.h"

/* Step i's figures: rk_plan_load_to_json's document without the nodes. */
static json_t *step_load(const rk_plan *p, const rk_load *l, rk_plan_load_figures *f, rk_error *err)
{
    if (rk_plan_load(p, NULL, l, f, NULL, err) != RK_OK)
        return NULL;
    json_t *d = rk_plan_load_to_json(p, f, NULL);
    if (!d)
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    return d;
}

int rk_rollout_load_json(const rk_rollout *r, const rk_ring *from, const json_t *profile,
                         int64_t now, json_t *doc, rk_error *err)
{
    rk_load *l = rk_load_from_profile(profile, from, err);
    json_t *steps = json_object_get(doc, "steps");
    rk_plan_load_figures f = {0};
    double moving_bytes = 0, moving_requests = 0;
    int rc = l ? RK_OK : err->code;
    for (size_t i = 0; rc == RK_OK && i < rk_rollout_step_count(r); i++) {
        json_t *d = step_load(rk_rollout_step_plan(r, i), l, &f, err);
        if (!d || json_object_set_new(json_array_get(steps, i), "load", d))
            rc = d ? rk_error_set(err, RK_ENOMEM, NULL, "out of memory") : err->code;
        moving_bytes += f.moving.bytes, moving_requests += f.moving.requests;
    }
    json_t *sum = rc == RK_OK ? json_pack("{s:f, s:f, s:f, s:o}", "bytes", f.total.bytes,
                                          "moving_bytes", moving_bytes, "keys", f.total.keys,
                                          "profile", rki_profile_about(profile, now))
                              : NULL;
    if (sum && f.total.requests > 0 &&
        (json_object_set_new(sum, "requests", json_real(f.total.requests)) ||
         json_object_set_new(sum, "moving_requests", json_real(moving_requests))))
        json_decref(sum), sum = NULL;
    if (rc == RK_OK && (!sum || json_object_set_new(doc, "load", sum)))
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rk_load_free(l);
    return rc;
}
