/* plan_load.c — `plan --load PROFILE`: the plan weighed by a profile of `ringkeeper measure`
 * (docs/LOAD.md): its figures as JSON under the plan's "load", or as lines after its table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A byte count for people: B, KiB, MiB, GiB, TiB. */
static const char *human(double bytes, char buf[32])
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    for (; u < 4 && bytes >= 1024; u++)
        bytes /= 1024;
    snprintf(buf, 32, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

static double num(const json_t *o, const char *name)
{
    return json_number_value(json_object_get(o, name));
}

static double percent(double part, double whole)
{
    return whole > 0 ? 100 * part / whole : 0;
}

static void profile_line(const json_t *pr)
{
    char age[32] = "";
    json_t *a = json_object_get(pr, "age_s");
    if (a)
        snprintf(age, sizeof age, " (%.1f h ago)", (double)json_integer_value(a) / 3600);
    const char *cluster = json_string_value(json_object_get(pr, "cluster"));
    const char *at = json_string_value(json_object_get(pr, "measured_at"));
    printf("\nload: ");
    if (cluster)
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%s v%lld, ", cluster,
                          (long long)json_integer_value(json_object_get(pr, "version")));
    rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "measured %s%s, sample rate %g",
                      at ? at : "at an unknown time", age, num(pr, "sample_rate"));
    putchar('\n');
}

int rk_cli_plan_load_text(const json_t *load)
{
    char b[4][32];
    profile_line(json_object_get(load, "profile"));
    printf("  moves    %.0f of %.0f keys (%.2f%%), %s of %s (%.2f%%)\n", num(load, "moving_keys"),
           num(load, "keys"), percent(num(load, "moving_keys"), num(load, "keys")),
           human(num(load, "moving_bytes"), b[0]), human(num(load, "bytes"), b[1]),
           percent(num(load, "moving_bytes"), num(load, "bytes")));
    printf("  by bytes the most loaded node holds %.2fx its share before, %.2fx after\n",
           num(load, "bytes_balance_before"), num(load, "bytes_balance_after"));
    if (num(load, "requests") > 0) /* only a profile whose servers count reads has them */
        printf(
            "  reads    %.2f%% change owner; by reads the most loaded node holds %.2fx its share "
            "before, %.2fx after\n",
            percent(num(load, "moving_requests"), num(load, "requests")),
            num(load, "requests_balance_before"), num(load, "requests_balance_after"));
    printf("  %-24s %14s %14s %14s %14s\n", "node", "bytes before", "bytes after", "gains",
           "loses");
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(load, "nodes"), i, n)
    {
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "  %-24s",
                          json_string_value(json_object_get(n, "id")));
        printf(" %14s %14s %14s %14s\n", human(num(n, "bytes_before"), b[0]),
               human(num(n, "bytes_after"), b[1]), human(num(n, "bytes_gained"), b[2]),
               human(num(n, "bytes_lost"), b[3]));
    }
    return ferror(stdout) ? -1 : 0;
}
