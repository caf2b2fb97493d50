/* rollout.c — `ringkeeper rollout`: a change from topology A to topology B broken into steps that
 * ramp weights (docs/MIGRATE.md, "Rollouts"), for review: every step's plan, moved fraction and
 * balance, and the total against the one-shot change. Each side is a file or a version of the
 * server's cluster; the steps are computed here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"

typedef struct {
    const char *file[2];    /* --from-file, --to-file */
    const char *version[2]; /* --from, --to (server) */
    unsigned long long steps;
    const char *load; /* --load: a profile of `ringkeeper measure` */
    rk_rollout_options opt;
    rk_cli_server server;
} rollout_args;

static int print_table(const json_t *doc);

/* --quiet: the digest a reviewer approves. */
static const rk_cli_view view = {"table", print_table, "digest"};

/* "n10 0 -> 0.2, n3 1 -> 0.8" for a step's first changes, "+N more" past three. */
static void changes_text(const json_t *changes, char *out, size_t size)
{
    size_t i, len = 0;
    const json_t *c;
    out[0] = '\0';
    json_array_foreach(changes, i, c)
    {
        if (i == 3) {
            snprintf(out + len, size - len, ", +%zu more", json_array_size(changes) - 3);
            return;
        }
        int k = snprintf(out + len, size - len, "%s%s %g -> %g", i ? ", " : "",
                         json_string_value(json_object_get(c, "id")),
                         json_number_value(json_object_get(c, "weight_before")),
                         json_number_value(json_object_get(c, "weight_after")));
        if (k < 0 || (size_t)k >= size - len)
            return;
        len += (size_t)k;
    }
}

static int print_table(const json_t *doc)
{
    const json_t *steps = json_object_get(doc, "steps"), *s, *load = json_object_get(doc, "load");
    double total = json_number_value(json_object_get(doc, "total_moved"));
    double one = json_number_value(json_object_get(doc, "one_shot_moved"));
    size_t i;
    printf("%-5s %9s %14s  %s%s\n", "step", "moved", "balance after",
           load ? "bytes moved  bytes over mean  " : "", "weights");
    json_array_foreach(steps, i, s)
    {
        char changes[512], b[32];
        const json_t *l = json_object_get(s, "load");
        changes_text(json_object_get(s, "changes"), changes, sizeof changes);
        printf("%-5lld %8.3f%% %13.3fx  ", (long long)json_integer_value(json_object_get(s, "n")),
               100 * json_number_value(json_object_get(s, "moved_fraction")),
               json_number_value(json_object_get(s, "balance_after")));
        if (load)
            printf("%11s  %14.3fx  ",
                   rk_bytes_text(json_number_value(json_object_get(l, "moving_bytes")), b),
                   json_number_value(json_object_get(l, "bytes_over_mean_after")));
        if (rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%s", changes) || putchar('\n') == EOF)
            return RK_EXIT_FAIL;
    }
    printf("\n%zu steps move %.3f%% in total; the one-shot change moves %.3f%%", i, 100 * total,
           100 * one);
    if (one > 0)
        printf(" (%.4fx)", total / one);
    if (load) {
        char b[2][32];
        double bytes = json_number_value(json_object_get(load, "bytes"));
        double moving = json_number_value(json_object_get(load, "moving_bytes"));
        printf("\nby the load profile: %s of %s move in total (%.3f%%)",
               rk_bytes_text(moving, b[0]), rk_bytes_text(bytes, b[1]),
               bytes > 0 ? 100 * moving / bytes : 0);
    }
    printf("\ndigest %s\n", json_string_value(json_object_get(doc, "digest")));
    return fflush(stdout) ? RK_EXIT_FAIL : RK_EXIT_OK;
}

static int parse_args(const rk_cli_cmd *cmd, int argc, char **argv, rollout_args *a)
{
    const rk_cli_option opts[] = {
        RK_CLI_OPT("from-file", RK_CLI_TEXT, &a->file[0]),
        RK_CLI_OPT("to-file", RK_CLI_TEXT, &a->file[1]),
        RK_CLI_OPT("steps", RK_CLI_NUMBER, &a->steps, .lo = 1, .hi = RK_ROLLOUT_MAX_STEPS),
        RK_CLI_OPT("max-step-moved", RK_CLI_FRACTION, &a->opt.max_step_moved),
        RK_CLI_OPT("from", RK_CLI_VERSION, &a->version[0]),
        RK_CLI_OPT("to", RK_CLI_VERSION, &a->version[1]),
        RK_CLI_OPT("load", RK_CLI_TEXT, &a->load),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    a->opt.steps = (uint32_t)a->steps;
    if ((a->steps == 0) == (a->opt.max_step_moved == 0))
        return rk_cli_usage_error(cmd, "give --steps N or --max-step-moved F, one of them");
    return rk_cli_two_sides(cmd, a->file, a->version, &a->server);
}

/* --load: every step weighed by the profile in file `path` (rk_rollout_load_json). */
static int weigh(const char *path, const rk_rollout *ro, const rk_ring *from, json_t *doc)
{
    rk_error err = {0};
    json_t *profile;
    if (rk_cli_read_profile("rollout", path, &profile) != RK_EXIT_OK)
        return RK_EXIT_USAGE;
    int rc = rk_rollout_load_json(ro, from, profile, (int64_t)time(NULL), doc, &err);
    json_decref(profile);
    if (rc == RK_OK)
        return RK_EXIT_OK;
    return rk_cli_fail("rollout", rc == RK_ENOMEM ? RK_EXIT_FAIL : RK_EXIT_USAGE, "--load %s: %s",
                       path, err.message);
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rollout_args a = {0};
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_ring *r[2] = {NULL, NULL};
    char label[2][64];
    rk_error err = {0};
    rk_rollout *ro = NULL;
    json_t *doc = NULL;
    rc = rk_cli_load_sides("rollout", a.file, a.version, &a.server, r, label);
    if (rc == RK_EXIT_OK && !(ro = rk_rollout_new(r[0], r[1], &a.opt, &err)))
        rc = rk_cli_fail("rollout", err.code == RK_ENOMEM ? RK_EXIT_FAIL : RK_EXIT_USAGE, "%s",
                         err.message);
    if (rc == RK_EXIT_OK && !(doc = rk_rollout_to_json(ro)))
        rc = rk_cli_fail("rollout", RK_EXIT_FAIL, "out of memory rendering the rollout");
    if (rc == RK_EXIT_OK && a.load)
        rc = weigh(a.load, ro, r[0], doc);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_result("rollout", doc);
    json_decref(doc);
    rk_rollout_free(ro);
    rk_ring_free(r[0]);
    rk_ring_free(r[1]);
    return rc;
}

const rk_cli_cmd rk_cli_rollout = {
    "rollout", run,
    "usage: ringkeeper rollout --from-file A.json --to-file B.json (--steps N | --max-step-moved "
    "F)\n"
    "                          [--load PROFILE] [-o table|json] [--quiet]\n"
    "       ringkeeper rollout --server URL --cluster C [--from A] (--to B | --to-file B.json)\n"
    "                          (--steps N | --max-step-moved F) [--load PROFILE] [-o table|json]\n"
    "                          [--quiet]\n"
    "\n"
    "Breaks the change from topology A to topology B into steps that ramp weights in units of\n"
    "1/vnode_factor (docs/MIGRATE.md, \"Rollouts\"): the nodes that gain weight first, then those\n"
    "that lose it; a node B drops ramps to 0 and is removed at the last step, which is B itself.\n"
    "Prints every step's moved fraction, balance after and weight changes, their total against\n"
    "the one-shot change, and the digest over the steps' plans. Each side is a file or a version\n"
    "of cluster C; the steps are computed here.\n"
    "\n"
    "  --from-file, --to-file   topologies or version documents (JSON): same scheme, hash and\n"
    "                           vnode_factor\n"
    "  --steps N                exactly N steps, 1..100\n"
    "  --max-step-moved F       the fewest steps (at most 100) none of which moves more than F\n"
    "                           of the hash space, 0 < F <= 1\n"
    "  --load FILE              weigh every step by a load profile (ringkeeper measure): the\n"
    "                           bytes each moves, and the largest node's bytes over the "
    "mean\n" RK_CLI_OUTPUT_HELP(
        "table") "  --server URL             the server (default $RINGKEEPER_SERVER)\n"
                 "  -c, --cluster C          the cluster (default $RINGKEEPER_CLUSTER)\n"
                 "  --from A, --to B         its versions; --from defaults to the active version, "
                 "--to to the\n"
                 "                           latest\n"
                 "  --token T                bearer token (default $RINGKEEPER_TOKEN); reads need "
                 "none\n"
                 "  --ca-file FILE           CA certificates for an https server (default "
                 "$RINGKEEPER_CA_FILE)\n"
                 "  --timeout S              " RK_CLI_TIMEOUT_HELP,
    NULL, NULL};
