/* plan.c — `ringkeeper plan`: the migration plan between two topologies, each a file or a version
 * of the server's cluster. Two versions: the server computes it; a file on either side: computed
 * here (like `kubectl diff`: the active version against a file about to be published). As a
 * table, JSON or an SVG picture. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct {
    const char *file[2];    /* --from-file, --to-file */
    const char *version[2]; /* --from, --to (server) */
    const char *format;     /* "text", "json" or "svg": from --format, -o or --quiet */
    const char *load;       /* --load: a profile of `ringkeeper measure` */
    unsigned long long keys;
    rk_plan_options opt;
    rk_cli_server server;
} plan_args;

/* -o table is the library's text (or the server's), not a generic table; --quiet: the fraction of
 * the hash space that moves. */
static const rk_cli_view view = {"table", NULL, "moved_fraction"};

/* The one format from --format, -o and --quiet (which needs the JSON); default text. */
static int choose_format(const rk_cli_cmd *cmd, plan_args *a)
{
    if (a->format && rk_cli_out.format)
        return rk_cli_usage_error(cmd, "--format and -o/--output do not mix: give one");
    if (rk_cli_out.quiet || (rk_cli_out.format && strcmp(rk_cli_out.format, "json") == 0))
        a->format = "json";
    else if (!a->format)
        a->format = "text";
    if (strcmp(a->format, "json") == 0) /* printed by rk_cli_print_result */
        rk_cli_out.format = "json";
    return RK_EXIT_OK;
}

static int parse_args(const rk_cli_cmd *cmd, int argc, char **argv, plan_args *a)
{
    static const char *const formats[] = {"json", "text", "svg", NULL};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("from-file", RK_CLI_TEXT, &a->file[0]),
        RK_CLI_OPT("to-file", RK_CLI_TEXT, &a->file[1]),
        RK_CLI_OPT("max-step", RK_CLI_FRACTION, &a->opt.max_step),
        RK_CLI_OPT("keys", RK_CLI_NUMBER, &a->keys, .lo = 1, .hi = UINT64_MAX,
                   .must = "a whole number above 0"),
        RK_CLI_OPT("format", RK_CLI_CHOICE, &a->format, .choices = formats),
        RK_CLI_OPT("from", RK_CLI_VERSION, &a->version[0]),
        RK_CLI_OPT("to", RK_CLI_VERSION, &a->version[1]),
        RK_CLI_OPT("load", RK_CLI_TEXT, &a->load),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    a->opt.keys = a->keys;
    rc = rc ? rc : choose_format(cmd, a);
    return rc ? rc : rk_cli_two_sides(cmd, a->file, a->version, &a->server);
}

/* The plan as JSON, with the load's figures under "load" when there are some. */
static int print_json(const rk_plan *p, json_t *load)
{
    json_t *doc = rk_plan_to_json(p, NULL, 0);
    if (doc && load && json_object_set(doc, "load", load)) {
        json_decref(doc);
        doc = NULL;
    }
    int rc = doc ? rk_cli_print_result("plan", doc) : RK_EXIT_FAIL;
    json_decref(doc);
    return doc ? rc : rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory rendering the plan");
}

static int print_plan(const rk_plan *p, const plan_args *a, char label[2][64], json_t *load)
{
    if (strcmp(a->format, "json") == 0)
        return print_json(p, load);
    rk_plan_meta meta = {.from_label = label[0], .to_label = label[1]};
    char *out =
        strcmp(a->format, "svg") == 0 ? rk_plan_to_svg(p, &meta) : rk_plan_to_text(p, &meta);
    if (!out)
        return rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory rendering the plan");
    int bad = rk_cli_write_safe(stdout, out, strlen(out), RK_CLI_SAFE_LINES);
    free(out);
    char *lines = load && strcmp(a->format, "text") == 0 ? rk_plan_load_to_text(load) : NULL;
    if (!bad && load && strcmp(a->format, "text") == 0)
        bad = !lines || rk_cli_write_safe(stdout, lines, strlen(lines), RK_CLI_SAFE_LINES);
    free(lines);
    bad = bad || fflush(stdout);
    return bad ? rk_cli_fail("plan", RK_EXIT_FAIL, "writing the plan failed") : RK_EXIT_OK;
}

/* GET .../plan with the same options; printed as the server sends it, escaped (--quiet: its
 * moved_fraction). */
static int plan_remote(plan_args *a)
{
    int rc = rk_cli_server_check("plan", &a->server);
    if (rc != RK_EXIT_OK)
        return rc;
    char from[32] = "", to[32] = "", step[48] = "", keys[40] = "";
    if (a->version[0])
        snprintf(from, sizeof from, "&from=%s", a->version[0]);
    if (a->version[1])
        snprintf(to, sizeof to, "&to=%s", a->version[1]);
    if (a->opt.max_step > 0)
        snprintf(step, sizeof step, "&max_step=%.17g", a->opt.max_step);
    if (a->opt.keys > 0)
        snprintf(keys, sizeof keys, "&keys=%llu", (unsigned long long)a->opt.keys);
    rk_cli_body out = {0};
    rc = rk_cli_call("plan", &a->server, NULL, &out, "GET", "/plan?format=%s%s%s%s%s", a->format,
                     from, to, step, keys);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_safe_mode mode = strcmp(a->format, "json") == 0 ? RK_CLI_SAFE_JSON : RK_CLI_SAFE_LINES;
    if (rk_cli_out.quiet)
        rc = rk_cli_print_body("plan", &out);
    else if (rk_cli_write_safe(stdout, out.data, out.len, mode) || fflush(stdout))
        rc = rk_cli_fail("plan", RK_EXIT_FAIL, "writing the plan failed");
    free(out.data);
    return rc;
}

/* A file on one side or both, or a load: the plan computed here. */
static int plan_local(plan_args *a)
{
    rk_ring *r[2] = {NULL, NULL};
    char label[2][64];
    rk_error err = {0};
    rk_plan *p = NULL;
    json_t *load = NULL;
    int rc = rk_cli_load_sides("plan", a->file, a->version, &a->server, r, label);
    if (rc == RK_EXIT_OK && !(p = rk_plan_new(r[0], r[1], &a->opt, &err)))
        rc = rk_cli_fail("plan", RK_EXIT_USAGE, "%s", err.message);
    if (rc == RK_EXIT_OK && a->load)
        rc = rk_cli_plan_load(a->load, p, r[1], &load);
    if (rc == RK_EXIT_OK)
        rc = print_plan(p, a, label, load);
    json_decref(load);
    rk_plan_free(p);
    rk_ring_free(r[0]);
    rk_ring_free(r[1]);
    return rc;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    plan_args a = {0};
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    return a.file[0] || a.file[1] || a.load ? plan_local(&a) : plan_remote(&a);
}

const rk_cli_cmd rk_cli_plan = {
    "plan", run,
    "usage: ringkeeper plan --from-file A.json --to-file B.json [--max-step F] [--keys K]\n"
    "                       [--load PROFILE]\n"
    "                       [--format text|json|svg | -o table|json] [--quiet]\n"
    "       ringkeeper plan --server URL --cluster C [--from A] [--to B] [--max-step F] [--keys "
    "K]\n"
    "                       [--format text|json|svg | -o table|json] [--quiet] [--token T]\n"
    "       ringkeeper plan --server URL --cluster C [--from A] --to-file B.json ...\n"
    "       ringkeeper plan --server URL --cluster C --from-file A.json [--to B] ...\n"
    "\n"
    "Computes the exact migration plan from topology A to topology B: which arcs of the hash "
    "space\n"
    "move between which nodes, how balanced both rings are, and warnings (docs/RING.md, "
    "\"Migration\n"
    "plan\"). Each side is a file or a version of cluster C; with a file on one side, the plan is\n"
    "computed here against the server's version (like kubectl diff: the active version against a\n"
    "topology before it is published). The file is checked like a publish.\n"
    "\n"
    "  --from-file, --to-file   topologies or version documents (JSON); both must use the same "
    "hash\n"
    "  --max-step F             also pack the arcs into steps moving at most F (0 < F <= 1) each\n"
    "  --keys K                 add estimated key counts for K keys to transfers and steps\n"
    "  --load FILE              weigh the plan by a load profile (ringkeeper measure): the keys\n"
    "                           and bytes that move, and the balance by bytes (computed here)\n"
    "  --format text|json|svg   a table for people (default), the plan document, or a picture of\n"
    "                           the two rings, the moving arcs and the shares (SVG)\n"
    "  -o, --output table|json  the same as --format text|json\n"
    "  -q, --quiet              print only the fraction of the hash space that moves\n"
    "  --server URL             the server (default $RINGKEEPER_SERVER); with two versions it\n"
    "                           computes the plan and it is printed as the server sends it\n"
    "  -c, --cluster C          the cluster (default $RINGKEEPER_CLUSTER)\n"
    "  --from A, --to B         its versions; --from defaults to the active version, --to to the\n"
    "                           latest\n"
    "  --token T                bearer token (default $RINGKEEPER_TOKEN); reads need none\n"
    "  --ca-file FILE           CA certificates for an https server (default "
    "$RINGKEEPER_CA_FILE)\n"
    "  --timeout S              " RK_CLI_TIMEOUT_HELP,
    NULL, NULL};
