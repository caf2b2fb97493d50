/* plan_load.c — `plan --load PROFILE`: the profile file read (for rollout and suggest too), and
 * the plan weighed by it
 * (rk_plan_profile_json; docs/LOAD.md): JSON under the plan's "load", printed as lines after its
 * table by rk_plan_load_to_text. */
#include <time.h>

#include <jansson.h>

#include "cli.h"

int rk_cli_read_profile(const char *cmd, const char *path, json_t **out)
{
    json_error_t jerr;
    *out = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    return *out ? RK_EXIT_OK
                : rk_cli_fail(cmd, RK_EXIT_USAGE, "--load %s: %s (line %d)", path, jerr.text,
                              jerr.line);
}

int rk_cli_plan_load(const char *path, const rk_plan *p, const rk_ring *after, json_t **out)
{
    rk_error err = {0};
    json_t *profile;
    if (rk_cli_read_profile("plan", path, &profile) != RK_EXIT_OK)
        return RK_EXIT_USAGE;
    int rc = rk_plan_profile_json(p, after, profile, (int64_t)time(NULL), out, &err);
    json_decref(profile);
    if (rc == RK_ENOMEM)
        return rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory");
    return rc ? rk_cli_fail("plan", RK_EXIT_USAGE, "--load %s: %s%s", path,
                            rc == RK_EHASHMISMATCH ? "" : "in \"load\": ", err.message)
              : RK_EXIT_OK;
}
