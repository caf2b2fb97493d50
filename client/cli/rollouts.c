/* rollouts.c — `ringkeeper rollouts`: the server's rollouts (SPEC 11, docs/MIGRATE.md "Rollouts"):
 * make one from the active version to a topology file (the server reviews and keeps it), show the
 * latest, approve it over its digest, start it (the server then drives it), pause, resume or abort
 * it. `ringkeeper rollout` reviews a change offline, with no server writing anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct {
    const char *action;           /* the operand */
    const char *to_file, *digest; /* create's target; approve's digest */
    unsigned long long id, steps, soak;
    int revert; /* abort --revert */
    double max_step_moved;
    rk_cli_server server;
} rollouts_args;

/* A line for people: "rollout 2 running, step 3 of 5 (hold), digest ..."; the JSON with -o json. */
static int print_line(const json_t *doc)
{
    const json_t *r = doc;
    const char *phase = json_string_value(json_object_get(r, "phase"));
    const char *reason = json_string_value(json_object_get(r, "reason"));
    const char *waiting = json_string_value(json_object_get(r, "waiting"));
    printf("rollout %lld %s, step %lld of %zu%s%s%s, digest %s\n",
           (long long)json_integer_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "state")),
           (long long)json_integer_value(json_object_get(r, "step")),
           json_array_size(json_object_get(r, "steps")), phase ? " (" : "", phase ? phase : "",
           phase ? ")" : "", json_string_value(json_object_get(r, "digest")));
    if (reason && rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "  %s\n", reason))
        return RK_EXIT_FAIL;
    if (waiting && rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "  waiting: %s\n", waiting))
        return RK_EXIT_FAIL;
    return fflush(stdout) ? RK_EXIT_FAIL : RK_EXIT_OK;
}

/* --quiet: the state. */
static const rk_cli_view view = {"table", print_line, "state"};

/* create's body: {"target", "steps" | "max_step_moved", "soak_s"}, or NULL after saying why. */
static json_t *create_body(const rk_cli_cmd *cmd, const rollouts_args *a)
{
    size_t len = 0;
    char *text = rk_cli_read_file(cmd->name, a->to_file, &len);
    json_t *target = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    if (!text)
        return NULL;
    if (!json_is_object(target)) {
        json_decref(target);
        rk_cli_fail(cmd->name, RK_EXIT_USAGE, "%s is not a JSON object (a topology)", a->to_file);
        return NULL;
    }
    json_t *doc = json_pack("{soss}", "target", target, "soak_s", "");
    if (doc)
        json_object_set_new(doc, "soak_s", json_integer((json_int_t)a->soak));
    if (doc && a->steps)
        json_object_set_new(doc, "steps", json_integer((json_int_t)a->steps));
    if (doc && !a->steps)
        json_object_set_new(doc, "max_step_moved", json_real(a->max_step_moved));
    return doc;
}

/* What `action` needs besides the server; an exit code. */
static int check_args(const rk_cli_cmd *cmd, const rollouts_args *a)
{
    static const char *const actions[] = {"show",  "create", "approve", "start",
                                          "pause", "resume", "abort",   NULL};
    size_t i = 0;
    while (actions[i] && strcmp(actions[i], a->action) != 0)
        i++;
    if (!actions[i])
        return rk_cli_usage_error(cmd,
                                  "the operand is show, create, approve, start, pause, "
                                  "resume or abort, not %s",
                                  a->action);
    int create = strcmp(a->action, "create") == 0;
    if (create && (!a->to_file || (a->steps == 0) == (a->max_step_moved == 0)))
        return rk_cli_usage_error(cmd, "create takes --to-file B.json and --steps N or "
                                       "--max-step-moved F, one of them");
    if (!create && strcmp(a->action, "show") != 0 && !a->id)
        return rk_cli_usage_error(cmd, "%s takes --id N, the rollout's id", a->action);
    if (strcmp(a->action, "approve") == 0 && !a->digest)
        return rk_cli_usage_error(cmd, "approve takes --digest D, the rollout's digest as shown");
    return RK_EXIT_OK;
}

/* The cluster's latest rollout (the server keeps only that one); exit 2 when it has none. */
static int show(const rk_cli_cmd *cmd, const rk_cli_server *s)
{
    rk_cli_body out = {0};
    int rc = rk_cli_call(cmd->name, s, NULL, &out, "GET", "/rollouts");
    json_t *doc = rc == RK_EXIT_OK ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    free(out.data);
    const json_t *r = json_array_get(json_object_get(doc, "rollouts"), 0);
    if (rc == RK_EXIT_OK)
        rc = r ? rk_cli_print_result(cmd->name, r)
               : rk_cli_fail(cmd->name, RK_EXIT_USAGE, "the cluster has no rollout");
    json_decref(doc);
    return rc;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rollouts_args a = {0};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("id", RK_CLI_NUMBER, &a.id, .lo = 1, .hi = INT64_MAX),
        RK_CLI_OPT("to-file", RK_CLI_TEXT, &a.to_file),
        RK_CLI_OPT("steps", RK_CLI_NUMBER, &a.steps, .lo = 1, .hi = RK_ROLLOUT_MAX_STEPS),
        RK_CLI_OPT("max-step-moved", RK_CLI_FRACTION, &a.max_step_moved),
        RK_CLI_OPT("soak", RK_CLI_NUMBER, &a.soak, .lo = 0, .hi = 86400),
        RK_CLI_OPT("digest", RK_CLI_TEXT, &a.digest),
        RK_CLI_OPT("revert", RK_CLI_FLAG, &a.revert),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a.server, &a.action);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &a.server);
    rc = rc ? rc : check_args(cmd, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    json_t *body = NULL;
    if (strcmp(a.action, "create") == 0 && !(body = create_body(cmd, &a)))
        return RK_EXIT_USAGE;
    if (strcmp(a.action, "approve") == 0)
        body = json_pack("{ss}", "digest", a.digest);
    if (strcmp(a.action, "abort") == 0 && a.revert)
        body = json_pack("{sb}", "revert", 1);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    rk_cli_body in = {text, text ? strlen(text) : 0}, out = {0};
    if (strcmp(a.action, "show") == 0)
        return show(cmd, &a.server);
    if (strcmp(a.action, "create") == 0)
        rc = rk_cli_call(cmd->name, &a.server, &in, &out, "POST", "/rollouts");
    else
        rc = rk_cli_call(cmd->name, &a.server, text ? &in : NULL, &out, "POST", "/rollouts/%llu/%s",
                         a.id, a.action);
    free(text);
    return rk_cli_print_answer(cmd->name, rc, &out);
}

const rk_cli_cmd rk_cli_rollouts = {
    "rollouts", run,
    "usage: ringkeeper rollouts show --server URL --cluster C [-o table|json] [--quiet]\n"
    "       ringkeeper rollouts create --to-file B.json (--steps N | --max-step-moved F)\n"
    "                          [--soak S] --server URL --cluster C [--token T] [-o ...]\n"
    "       ringkeeper rollouts approve --id N --digest D --server URL --cluster C [--token T]\n"
    "       ringkeeper rollouts start|pause|resume|abort --id N [--revert] --server URL\n"
    "                          --cluster C [--token T] [-o table|json] [--quiet]\n"
    "\n"
    "The server's rollouts (docs/MIGRATE.md, \"Rollouts\"): create has the server review the\n"
    "change from the active version to topology B in steps and keep it; show prints the latest;\n"
    "approve approves it over its digest; start hands it to the server, which then drives each\n"
    "step (publish, activate in a window, wait for the fleet to hold it, for the data to move,\n"
    "and the soak); pause, resume and abort steer it. Prints the rollout (a line; -o json: the\n"
    "document). `ringkeeper rollout` reviews a change offline instead.\n"
    "\n"
    "  --to-file B.json   create: the target topology (same scheme, hash and vnode_factor)\n"
    "  --steps N          create: exactly N steps, 1..100\n"
    "  --max-step-moved F create: the fewest steps none of which moves more than F, 0 < F <= 1\n"
    "  --soak S           create: seconds to wait after each step, 0..86400 (default 0)\n"
    "  --id N             the rollout (create prints its id)\n"
    "  --digest D         approve: the digest the rollout shows\n"
    "  --revert           abort: go back to the start's topology (the server drives it back in\n"
    "                     a window like a step), rather than stay where the last step left "
    "it\n" RK_CLI_OUTPUT_HELP("table: a line; -q: the state") SERVER_OPTIONS_HELP,
    NULL, "show|create|approve|start|pause|resume|abort"};
