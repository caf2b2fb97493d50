/* load_profile.h — a cluster's load profile (docs/LOAD.md): what `ringkeeper measure` found on
 * its data servers, checked and kept as the cluster's document of kind RKD_DOC_LOAD (the latest
 * one only), read back with its age, and handed to the plans that weigh themselves by it. No HTTP:
 * api_load.c parses requests into these calls.
 *
 * The document is measure's profile as sent ("profile", "hash", "measured_at",
 * "measured_epoch_s", "sample_rate", "servers", "load" ...) with "updated_at" and "stored_by"
 * added; reads add "age_s". Every returned json_t is a new reference, the caller's to decref. */
#ifndef RKD_LOAD_PROFILE_H
#define RKD_LOAD_PROFILE_H

#include <time.h>

#include <jansson.h>

#include "ringkeeper.h"
#include "store.h"

/* The most bytes a stored profile takes (compact JSON): what one etcd request carries with room
 * to spare (16384 bins of 5- to 8-digit counts take 339 KB). docs/API.md, "Limits". */
#define RKD_LOAD_PROFILE_MAX (1u << 20)

/* Checks `doc` (borrowed) as a profile of `cluster` and stores it by `author`, replacing the last
 * one, with a "load" event: RK_OK and the stored document in *out; RK_EINVAL with err's field
 * naming what is wrong ("profile", "hash", "measured_epoch_s", "sample_rate", "cluster", "load" or
 * a field inside it) and nothing stored; the store's errors. */
int rkd_load_profile_put(rkd_store *s, const char *cluster, const json_t *doc, const char *author,
                         time_t now, json_t **out, rk_error *err) RK_MUST_CHECK;

/* The cluster's profile with "age_s" (seconds from its measured_epoch_s to `now`) in *out, or
 * *out NULL when it has none; RKD_STORE_ENOCLUSTER for an unknown cluster. */
int rkd_load_profile_get(rkd_store *s, const char *cluster, time_t now, json_t **out,
                         rk_error *err) RK_MUST_CHECK;

#endif
