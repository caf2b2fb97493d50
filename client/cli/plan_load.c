/* plan_load.c — `plan --load PROFILE`: the profile file read, and the plan weighed by it
 * (rk_plan_profile_json; docs/LOAD.md): JSON under the plan's "load", printed as lines after its
 * table by rk_plan_load_to_text. */
#include <time.h>

#include <jansson.h>

#include "cli.h"

int rk_cli_plan_load(const char *path, const rk_plan *p, const rk_ring *after, json_t **out)
{
    json_error_t jerr;
    rk_error err = {0};
    json_t *profile = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!profile)
        return rk_cli_fail("plan", RK_EXIT_USAGE, "--load %s: %s (line %d)", path, jerr.text,
                           jerr.line);
    int rc = rk_plan_profile_json(p, after, profile, (int64_t)time(NULL), out, &err);
    json_decref(profile);
    if (rc == RK_ENOMEM)
        return rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory");
    return rc ? rk_cli_fail("plan", RK_EXIT_USAGE, "--load %s: %s%s", path,
                            rc == RK_EHASHMISMATCH ? "" : "in \"load\": ", err.message)
              : RK_EXIT_OK;
}
