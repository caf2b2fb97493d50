/* plan.c — `ringkeeper plan`: the migration plan between two topology files (computed here) or two
 * versions on the server (computed there), as a table, JSON or an SVG picture. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct {
    const char *file[2];    /* --from-file, --to-file */
    const char *version[2]; /* --from, --to (server) */
    const char *format;     /* --format: "text" (default), "json" or "svg" */
    unsigned long long keys;
    rk_plan_options opt;
    rk_cli_server server;
    int json; /* --format json */
    int svg;  /* --format svg */
} plan_args;

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
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    a->opt.keys = a->keys;
    a->json = a->format && strcmp(a->format, "json") == 0;
    a->svg = a->format && strcmp(a->format, "svg") == 0;
    return rc == RK_EXIT_OK ? rk_cli_two_sides(cmd, a->file, a->version, &a->server) : rc;
}

static int print_plan(const rk_plan *p, const plan_args *a)
{
    char *out = NULL;
    rk_plan_meta meta = {.from_label = a->file[0], .to_label = a->file[1]};
    if (a->json) {
        json_t *doc = rk_plan_to_json(p, NULL, 0);
        out = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(doc);
    } else if (a->svg) {
        out = rk_plan_to_svg(p, &meta);
    } else {
        out = rk_plan_to_text(p, &meta);
    }
    if (!out)
        return rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory rendering the plan");
    int bad = fputs(out, stdout) < 0 || (a->json && putchar('\n') == EOF) || fflush(stdout);
    free(out);
    return bad ? rk_cli_fail("plan", RK_EXIT_FAIL, "writing the plan failed") : RK_EXIT_OK;
}

/* GET .../plan with the same options; the server's table, JSON or SVG is printed as it comes,
 * escaped. */
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
    rc = rk_cli_call("plan", &a->server, NULL, &out, "GET", "/plan?format=%s%s%s%s%s",
                     a->format ? a->format : "text", from, to, step, keys);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_safe_mode mode = a->json ? RK_CLI_SAFE_JSON : RK_CLI_SAFE_LINES;
    int bad = rk_cli_write_safe(stdout, out.data, out.len, mode) || fflush(stdout);
    free(out.data);
    return bad ? rk_cli_fail("plan", RK_EXIT_FAIL, "writing the plan failed") : RK_EXIT_OK;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    plan_args a = {0};
    if (parse_args(cmd, argc, argv, &a))
        return RK_EXIT_USAGE;
    if (!a.file[0])
        return plan_remote(&a);
    rk_ring *from = rk_cli_load_ring("plan", a.file[0]);
    rk_ring *to = from ? rk_cli_load_ring("plan", a.file[1]) : NULL;
    rk_error err = {0};
    rk_plan *p = to ? rk_plan_new(from, to, &a.opt, &err) : NULL;
    int rc = !to  ? RK_EXIT_USAGE
             : !p ? rk_cli_fail("plan", RK_EXIT_USAGE, "%s", err.message)
                  : print_plan(p, &a);
    rk_plan_free(p);
    rk_ring_free(from);
    rk_ring_free(to);
    return rc;
}

const rk_cli_cmd rk_cli_plan = {
    "plan", run,
    "usage: ringkeeper plan --from-file A.json --to-file B.json [--max-step F] [--keys K]\n"
    "                       [--format text|json|svg]\n"
    "       ringkeeper plan --server URL --cluster C [--from A] [--to B] [--max-step F] [--keys "
    "K]\n"
    "                       [--format text|json|svg] [--token T]\n"
    "\n"
    "Computes the exact migration plan from topology A to topology B (SPEC section 3): which arcs "
    "of\n"
    "the hash space move between which nodes, how balanced both rings are, and warnings.\n"
    "\n"
    "  --from-file, --to-file   topologies or version documents (JSON); both must use the same "
    "hash\n"
    "  --max-step F             also pack the arcs into steps moving at most F (0 < F <= 1) each\n"
    "  --keys K                 add estimated key counts for K keys to transfers and steps\n"
    "  --format text|json|svg   a table for people (default), the plan document, or a picture of\n"
    "                           the two rings, the moving arcs and the shares (SVG)\n"
    "  --server URL             ask the server for the plan between versions A and B of cluster C\n"
    "                           (default server: $RINGKEEPER_SERVER); --from defaults to the\n"
    "                           active version, --to to the latest; printed as the server sends "
    "it\n"
    "  --cluster C              the cluster\n"
    "  --token T                bearer token (default $RINGKEEPER_TOKEN); reads need none\n"
    "  --ca-file FILE           CA certificates for an https server (default "
    "$RINGKEEPER_CA_FILE)\n"
    "  --timeout S              " RK_CLI_TIMEOUT_HELP,
    NULL, NULL};
