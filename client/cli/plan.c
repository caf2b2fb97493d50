/* plan.c — `ringkeeper plan`: the migration plan between two topology files (computed here) or two
 * versions on the server (computed there), as a table or JSON. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct {
    const char *from, *to;  /* --from-file, --to-file */
    const char *version[2]; /* --from, --to (server) */
    int json;
    rk_plan_options opt;
    rk_cli_server server;
} plan_args;

static int parse_step(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0 && v <= 1))
        return rk_cli_fail("plan", RK_EXIT_USAGE,
                           "--max-step: must be a fraction in (0, 1], got \"%s\"", s);
    *out = v;
    return RK_EXIT_OK;
}

static int parse_args(int argc, char **argv, plan_args *a)
{
    static const struct option opts[] = {{"from-file", required_argument, NULL, 'f'},
                                         {"to-file", required_argument, NULL, 't'},
                                         {"max-step", required_argument, NULL, 's'},
                                         {"keys", required_argument, NULL, 'k'},
                                         {"format", required_argument, NULL, 'F'},
                                         {"from", required_argument, NULL, 'a'},
                                         {"to", required_argument, NULL, 'b'},
                                         RK_CLI_SERVER_OPTIONS,
                                         {NULL, 0, NULL, 0}};
    unsigned long long keys;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            a->from = optarg;
            break;
        case 't':
            a->to = optarg;
            break;
        case 's':
            if (parse_step(optarg, &a->opt.max_step))
                return RK_EXIT_USAGE;
            break;
        case 'k':
            if (rk_cli_number(optarg, 1, UINT64_MAX, &keys))
                return rk_cli_fail("plan", RK_EXIT_USAGE,
                                   "--keys: must be a whole number above 0, got \"%s\"", optarg);
            a->opt.keys = keys;
            break;
        case 'F':
            if (strcmp(optarg, "json") && strcmp(optarg, "text"))
                return rk_cli_fail("plan", RK_EXIT_USAGE,
                                   "--format: must be json or text, got \"%s\"", optarg);
            a->json = strcmp(optarg, "json") == 0;
            break;
        case 'a':
        case 'b':
            a->version[c == 'b'] = optarg;
            break;
        default:
            if (!rk_cli_server_option(&a->server, c, optarg))
                return rk_cli_usage(&rk_cli_plan);
        }
    }
    int offline = a->from || a->to;
    int online = a->version[0] || a->version[1] || a->server.url || a->server.cluster;
    if (optind != argc || (offline && online) || (offline && !(a->from && a->to)))
        return rk_cli_usage(&rk_cli_plan);
    return RK_EXIT_OK;
}

static int print_plan(const rk_plan *p, const plan_args *a)
{
    char *out = NULL;
    rk_plan_meta meta = {.from_label = a->from, .to_label = a->to};
    if (a->json) {
        json_t *doc = rk_plan_to_json(p, NULL, 0);
        out = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(doc);
    } else {
        out = rk_plan_to_text(p, &meta);
    }
    if (!out)
        return rk_cli_fail("plan", RK_EXIT_FAIL, "out of memory rendering the plan");
    int bad = fputs(out, stdout) < 0 || (a->json && putchar('\n') == EOF) || fflush(stdout);
    free(out);
    return bad ? rk_cli_fail("plan", RK_EXIT_FAIL, "writing the plan failed") : RK_EXIT_OK;
}

/* GET .../plan with the same options; the server's table or JSON is printed as it comes, escaped.
 */
static int plan_remote(plan_args *a)
{
    int rc = rk_cli_server_check("plan", &a->server);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_version_arg("plan", "--from", a->version[0]);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_version_arg("plan", "--to", a->version[1]);
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
                     a->json ? "json" : "text", from, to, step, keys);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_safe_mode mode = a->json ? RK_CLI_SAFE_JSON : RK_CLI_SAFE_LINES;
    int bad = rk_cli_write_safe(stdout, out.data, out.len, mode) || fflush(stdout);
    free(out.data);
    return bad ? rk_cli_fail("plan", RK_EXIT_FAIL, "writing the plan failed") : RK_EXIT_OK;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    plan_args a = {0};
    if (parse_args(argc, argv, &a))
        return RK_EXIT_USAGE;
    if (!a.from)
        return plan_remote(&a);
    rk_ring *from = rk_cli_load_ring("plan", a.from);
    rk_ring *to = from ? rk_cli_load_ring("plan", a.to) : NULL;
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
    "                       [--format text|json]\n"
    "       ringkeeper plan --server URL --cluster C [--from A] [--to B] [--max-step F] [--keys "
    "K]\n"
    "                       [--format text|json] [--token T]\n"
    "\n"
    "Computes the exact migration plan from topology A to topology B (SPEC section 3): which arcs "
    "of\n"
    "the hash space move between which nodes, how balanced both rings are, and warnings.\n"
    "\n"
    "  --from-file, --to-file   topologies or version documents (JSON); both must use the same "
    "hash\n"
    "  --max-step F             also pack the arcs into steps moving at most F (0 < F <= 1) each\n"
    "  --keys K                 add estimated key counts for K keys to transfers and steps\n"
    "  --format text|json       a table for people (default) or the plan document\n"
    "  --server URL             ask the server for the plan between versions A and B of cluster C\n"
    "                           (default server: $RINGKEEPER_SERVER); --from defaults to the\n"
    "                           active version, --to to the latest; printed as the server sends "
    "it\n"
    "  --cluster C              the cluster\n"
    "  --token T                bearer token (default $RINGKEEPER_TOKEN); reads need none\n"
    "  --ca-file FILE           CA certificates for an https server (default "
    "$RINGKEEPER_CA_FILE)\n",
    NULL};
