/* plan_load.c — `plan --load PROFILE`: the plan weighed by a profile of `ringkeeper measure`
 * (docs/LOAD.md): its figures as JSON under the plan's "load", or as lines after its table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"

/* What the profile says of itself, and how old it is: shown wherever its figures are. */
static json_t *about(const json_t *profile)
{
    static const char *const kept[] = {"cluster",     "version",          "fingerprint", "hash",
                                       "measured_at", "measured_epoch_s", "sample_rate", NULL};
    json_t *d = json_object();
    for (size_t i = 0; d && kept[i]; i++) {
        json_t *v = json_object_get(profile, kept[i]);
        if (v && json_object_set(d, kept[i], v)) {
            json_decref(d);
            return NULL;
        }
    }
    json_t *at = json_object_get(profile, "measured_epoch_s");
    if (d && json_is_integer(at) &&
        json_object_set_new(d, "age_s",
                            json_integer((json_int_t)time(NULL) - json_integer_value(at)))) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* The profile's load: its "load" member (a whole profile), or the document itself (a bare load). */
static rk_load *profile_load(const char *path, json_t *profile)
{
    rk_error err = {0};
    json_t *doc = json_object_get(profile, "load");
    rk_load *l = rk_load_from_json(doc ? doc : profile, &err);
    if (!l)
        rk_cli_fail("plan", RK_EXIT_USAGE, "--load %s: %s%s", path, doc ? "in \"load\": " : "",
                    err.message);
    return l;
}

/* The hash the profile placed keys with must be the plan's: else its bins are other places. */
static int same_hash(const char *path, const json_t *profile, const rk_ring *after)
{
    const char *hash = json_string_value(json_object_get(profile, "hash"));
    const char *plan = rk_hash_name(rk_topology_hash(rk_ring_topology(after)));
    if (!hash || strcmp(hash, plan) == 0)
        return RK_EXIT_OK;
    return rk_cli_fail("plan", RK_EXIT_USAGE,
                       "%s: the profile placed keys with hash %s, the plan's rings use %s: "
                       "measure the cluster again",
                       path, hash, plan);
}

int rk_cli_plan_load(const char *path, const rk_plan *p, const rk_ring *after, json_t **out)
{
    json_error_t jerr;
    json_t *profile = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!profile)
        return rk_cli_fail("plan", RK_EXIT_USAGE, "--load %s: %s (line %d)", path, jerr.text,
                           jerr.line);
    int rc = same_hash(path, profile, after);
    rk_load *l = rc ? NULL : profile_load(path, profile);
    size_t n;
    rk_plan_nodes(p, &n);
    rk_plan_node_load *nodes = l ? calloc(n ? n : 1, sizeof *nodes) : NULL;
    rk_plan_load_figures f;
    rk_error err = {0};
    if (!rc && !l)
        rc = RK_EXIT_USAGE;
    else if (!rc && !nodes)
        rc = rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory");
    else if (!rc && rk_plan_load(p, after, l, &f, nodes, &err) != RK_OK)
        rc = rk_cli_fail("plan", RK_EXIT_USAGE, "--load %s: %s", path, err.message);
    *out = rc ? NULL : rk_plan_load_to_json(p, &f, nodes);
    if (*out && json_object_set_new(*out, "profile", about(profile)))
        json_decref(*out), *out = NULL;
    if (!rc && !*out)
        rc = rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory");
    free(nodes);
    rk_load_free(l);
    json_decref(profile);
    return rc;
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
