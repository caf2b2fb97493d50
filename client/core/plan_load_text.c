/* plan_load_text.c — a plan's load figures (rk_plan_profile_json's document) as lines for people,
 * printed after the plan's table by the CLI and by the server's text plan alike. */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "internal.h"

const char *rk_bytes_text(double bytes, char buf[32])
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

/* Whose profile, when measured and how long ago, at what rate. */
static void profile_line(FILE *f, const json_t *pr)
{
    const char *cluster = json_string_value(json_object_get(pr, "cluster"));
    const char *at = json_string_value(json_object_get(pr, "measured_at"));
    fprintf(f, "\nload: ");
    json_int_t version = json_integer_value(json_object_get(pr, "version"));
    if (cluster)
        fprintf(f, version > 0 ? "%s v%lld, " : "%s, ", cluster, (long long)version);
    fprintf(f, "measured %s", at ? at : "at an unknown time");
    if (json_object_get(pr, "age_s"))
        fprintf(f, " (%.1f h ago)",
                (double)json_integer_value(json_object_get(pr, "age_s")) / 3600);
    fprintf(f, ", sample rate %g\n", num(pr, "sample_rate"));
}

static void figures(FILE *f, const json_t *load)
{
    char b[4][32];
    fprintf(f, "  moves    %.0f of %.0f keys (%.2f%%), %s of %s (%.2f%%)\n",
            num(load, "moving_keys"), num(load, "keys"),
            percent(num(load, "moving_keys"), num(load, "keys")),
            rk_bytes_text(num(load, "moving_bytes"), b[0]), rk_bytes_text(num(load, "bytes"), b[1]),
            percent(num(load, "moving_bytes"), num(load, "bytes")));
    fprintf(f,
            "  by bytes the most loaded node holds %.2fx its weight's share before, %.2fx after; "
            "%.2fx the mean before, %.2fx after\n",
            num(load, "bytes_balance_before"), num(load, "bytes_balance_after"),
            num(load, "bytes_over_mean_before"), num(load, "bytes_over_mean_after"));
    if (num(load, "requests") > 0) /* only a profile whose servers count reads has them */
        fprintf(f,
                "  reads    %.2f%% change owner; by reads the most loaded node holds %.2fx its "
                "weight's share before, %.2fx after; %.2fx the mean before, %.2fx after\n",
                percent(num(load, "moving_requests"), num(load, "requests")),
                num(load, "requests_balance_before"), num(load, "requests_balance_after"),
                num(load, "requests_over_mean_before"), num(load, "requests_over_mean_after"));
    fprintf(f, "  %-24s %14s %14s %14s %14s\n", "node", "bytes before", "bytes after", "gains",
            "loses");
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(load, "nodes"), i, n)
    {
        fprintf(
            f, "  %-24s %14s %14s %14s %14s\n", json_string_value(json_object_get(n, "id")),
            rk_bytes_text(num(n, "bytes_before"), b[0]), rk_bytes_text(num(n, "bytes_after"), b[1]),
            rk_bytes_text(num(n, "bytes_gained"), b[2]), rk_bytes_text(num(n, "bytes_lost"), b[3]));
    }
}

char *rk_plan_load_to_text(const json_t *load)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    profile_line(f, json_object_get(load, "profile"));
    figures(f, load);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}
