/* cutover.c — the cutover (docs/API.md) for operators: approve a version's plan after reading it,
 * show and set the cluster's policy, and read its events. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* Sends `doc` (stolen; NULL: no body) as the body of METHOD route and prints the answer. With
 * `no_cluster`, the 404 of an unknown cluster is not printed but sets it, for a caller that says
 * more. */
static int send_json(const rk_cli_cmd *c, const rk_cli_server *s, json_t *doc, const char *method,
                     const char *route, int *no_cluster)
{
    const char *cmd = c->name;
    int unused;
    rk_cli_body in = {0}, out = {0};
    in.data = doc ? rk_json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (doc && !in.data)
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory");
    in.len = in.data ? strlen(in.data) : 0;
    int rc = rk_cli_call_except(cmd, s, no_cluster ? "unknown_cluster" : NULL,
                                no_cluster ? no_cluster : &unused, in.data ? &in : NULL, &out,
                                method, "%s", route);
    free(in.data);
    return rk_cli_print_answer(c->name, rc, &out);
}

/* The approval and the policy: JSON by default; --quiet prints nothing. */
static const rk_cli_view answer_view = {"json", NULL, NULL};

/* ---- approve ---- */

/* The person's answer on stdin: non-zero for y or yes. */
static int confirmed(const char *digest, const char *v)
{
    char line[16];
    fprintf(stderr, "approve plan %s of the move to version %s? [y/N] ", digest, v);
    if (!fgets(line, sizeof line, stdin))
        return 0;
    line[strcspn(line, "\n")] = '\0';
    return strcmp(line, "y") == 0 || strcmp(line, "yes") == 0;
}

/* A first activation (SPEC 9: nothing is active, so there is no plan and only the approvals
 * count): what version V is, for people, into *text, and the digest of the move from nothing. */
static int first_activation(const char *cmd, const rk_cli_server *s, const char *v,
                            rk_cli_body *text, char digest[RK_PLAN_DIGEST_LEN])
{
    rk_cli_body got = {0};
    int rc = rk_cli_call(cmd, s, NULL, &got, "GET", "/versions/%s", v);
    json_t *doc = rc == RK_EXIT_OK ? json_loadb(got.data, got.len, 0, NULL) : NULL;
    free(got.data);
    if (rc != RK_EXIT_OK)
        return rc;
    const char *fp = json_string_value(json_object_get(doc, "fingerprint"));
    json_int_t version = json_integer_value(json_object_get(doc, "version"));
    if (!fp || version < 1) {
        json_decref(doc);
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "the server's version %s is no version document", v);
    }
    rk_plan_digest(0, "", version, fp, digest);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (f) {
        fprintf(f,
                "first activation of cluster %s: no version is active, so nothing moves and "
                "there is no plan to review; activating version %lld needs only the approvals\n"
                "version %lld: %zu nodes, %lld points, hash %s, fingerprint %s\ndigest %s\n",
                s->cluster, (long long)version, (long long)version,
                json_array_size(json_object_get(doc, "nodes")),
                (long long)json_integer_value(json_object_get(doc, "points")),
                json_string_value(json_object_get(doc, "hash")), fp, digest);
        fclose(f);
    }
    json_decref(doc);
    text->data = out;
    text->len = out ? len : 0;
    return out ? RK_EXIT_OK : rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory");
}

/* What approving V approves: the server's plan from the active version to V as text, or a first
 * activation's; with its digest. Returns an exit code. */
static int approved_plan(const char *cmd, const rk_cli_server *s, const char *v, rk_cli_body *text,
                         char digest[RK_PLAN_DIGEST_LEN])
{
    int first = 0;
    int rc = rk_cli_call_except(cmd, s, "no_active_version", &first, NULL, text, "GET",
                                "/plan?to=%s&format=text", v);
    if (first)
        return first_activation(cmd, s, v, text, digest);
    if (rc != RK_EXIT_OK)
        return rc;
    const char *line = strstr(text->data, "\ndigest ");
    if (line)
        sscanf(line, "\ndigest %16[0-9a-f]", digest);
    return strlen(digest) == RK_PLAN_DIGEST_LEN - 1
               ? RK_EXIT_OK
               : rk_cli_fail(cmd, RK_EXIT_FAIL, "the server's plan carries no digest");
}

/* Every check of the approval (who may approve, which plan) without recording it, so that a
 * refusal comes before the plan is printed and a person is asked. Returns an exit code. */
static int approval_allowed(const char *cmd, const rk_cli_server *s, const char *v,
                            const char *digest)
{
    rk_cli_body in = {0}, out = {0};
    json_t *doc = json_pack("{s:s, s:b}", "digest", digest, "dry_run", 1);
    in.data = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!in.data)
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory");
    in.len = strlen(in.data);
    int rc = rk_cli_call(cmd, s, &in, &out, "POST", "/versions/%s/approve", v);
    free(in.data);
    free(out.data);
    return rc;
}

static int approve(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rk_cli_server s = {0};
    const char *v = NULL, *comment = NULL;
    int yes = 0;
    const rk_cli_option opts[] = {RK_CLI_OPT("yes", RK_CLI_FLAG, &yes),
                                  RK_CLI_OPT("comment", RK_CLI_TEXT, &comment),
                                  RK_CLI_OUTPUT_OPT(&answer_view),
                                  {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, &v);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    rc = rc ? rc : rk_cli_version_arg(cmd->name, v);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body plan = {0};
    char digest[RK_PLAN_DIGEST_LEN] = "";
    rc = approved_plan(cmd->name, &s, v, &plan, digest);
    rc = rc ? rc : approval_allowed(cmd->name, &s, v, digest);
    if (rc == RK_EXIT_OK && !rk_cli_out.quiet)
        rk_cli_write_safe(stdout, plan.data, plan.len, RK_CLI_SAFE_LINES);
    free(plan.data);
    fflush(stdout);
    if (rc != RK_EXIT_OK)
        return rc;
    if (!yes && !confirmed(digest, v))
        return rk_cli_fail(cmd->name, RK_EXIT_USAGE, "not approved");
    char route[64];
    snprintf(route, sizeof route, "/versions/%s/approve", v);
    return send_json(cmd, &s, json_pack("{s:s, s:s*}", "digest", digest, "comment", comment),
                     "POST", route, NULL);
}

const rk_cli_cmd rk_cli_approve = {
    "approve", approve,
    "usage: ringkeeper approve V --server URL --cluster C [--yes] [--comment TEXT] [--token T]\n"
    "\n"
    "Fetches the plan from the active version to V, checks with the server that you may approve\n"
    "it (a dry run: an author under a distinct-approver policy is told so at once), prints it,\n"
    "then, once you confirm (or with --yes), approves exactly that plan by its digest. With no\n"
    "version active yet (a first activation) there is no plan: it shows what V is and approves\n"
    "the move from nothing. When another version is activated first, the plan changes and the\n"
    "approval no longer counts: approve again.\n"
    "\n"
    "  --yes          do not ask\n"
    "  --comment T    a comment recorded with the approval\n" RK_CLI_OUTPUT_HELP("json")
        SERVER_OPTIONS_HELP,
    NULL, "V"};

/* ---- policy ---- */

/* --max-moved-bytes N|none into `doc`; returns an exit code. */
static int bytes_field(const char *cmd, json_t *doc, const char *bytes)
{
    unsigned long long n;
    if (!bytes)
        return RK_EXIT_OK;
    if (strcmp(bytes, "none") == 0)
        return json_object_set_new(doc, "max_moved_bytes", json_null()) ? RK_EXIT_FAIL : RK_EXIT_OK;
    if (rk_cli_number(bytes, 1, INT64_MAX, &n) != 0)
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "--max-moved-bytes: none or a whole number of bytes, at least 1");
    return json_object_set_new(doc, "max_moved_bytes", json_integer((json_int_t)n)) ? RK_EXIT_FAIL
                                                                                    : RK_EXIT_OK;
}

/* The policy fields the options set, into `doc`; returns an exit code. */
static int policy_fields(const char *cmd, json_t *doc, const char *moved, const char *balance,
                         const char *approvals, const char *const yes_no[3])
{
    char *end = NULL;
    if (moved) {
        double f = strtod(moved, &end);
        if (end == moved || *end)
            return rk_cli_fail(cmd, RK_EXIT_USAGE, "--max-moved-fraction: a number from 0 to 1");
        json_object_set_new(doc, "max_moved_fraction", json_real(f));
    }
    if (balance && strcmp(balance, "none") == 0) {
        json_object_set_new(doc, "max_balance_after", json_null());
    } else if (balance) {
        double b = strtod(balance, &end);
        if (end == balance || *end)
            return rk_cli_fail(cmd, RK_EXIT_USAGE, "--max-balance-after: none or a ratio >= 1");
        json_object_set_new(doc, "max_balance_after", json_real(b));
    }
    unsigned long long n;
    if (approvals && rk_cli_number(approvals, 0, 100, &n) != 0)
        return rk_cli_fail(cmd, RK_EXIT_USAGE, "--approvals: a whole number from 0 to 100");
    if (approvals)
        json_object_set_new(doc, "approvals", json_integer((json_int_t)n));
    static const char *const names[3] = {"distinct_approver", "migration_window", "prewarm"};
    for (int i = 0; i < 3; i++)
        if (yes_no[i])
            json_object_set_new(doc, names[i], json_boolean(strcmp(yes_no[i], "yes") == 0));
    return RK_EXIT_OK;
}

/* GET or PUT the policy. A cluster and its policy exist from its first publish: before it, the
 * server's 404 alone leaves a newcomer guessing what to do, so this says. */
static int send_policy(const rk_cli_cmd *cmd, const rk_cli_server *s, json_t *doc)
{
    int unknown = 0;
    const char *verb = doc ? "set" : "show";
    int rc = send_json(cmd, s, doc, doc ? "PUT" : "GET", "/policy", &unknown);
    if (unknown)
        rk_cli_fail(cmd->name, rc,
                    "cluster %s has no policy to %s yet: a cluster, and its policy, exist from its "
                    "first publish; publish a first version (ringkeeper publish FILE -c %s), then "
                    "%s the policy (HTTP 404)",
                    s->cluster, verb, s->cluster, verb);
    return rc;
}

static int policy(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const char *const yes_no[] = {"yes", "no", NULL};
    rk_cli_server s = {0};
    const char *what = NULL, *moved = NULL, *balance = NULL, *approvals = NULL, *bytes = NULL;
    const char *flags[3] = {NULL, NULL,
                            NULL}; /* --distinct-approver, --migration-window, --prewarm */
    const rk_cli_option opts[] = {
        RK_CLI_OPT("max-moved-fraction", RK_CLI_TEXT, &moved),
        RK_CLI_OPT("max-balance-after", RK_CLI_TEXT, &balance),
        RK_CLI_OPT("max-moved-bytes", RK_CLI_TEXT, &bytes),
        RK_CLI_OPT("approvals", RK_CLI_TEXT, &approvals),
        RK_CLI_OPT("distinct-approver", RK_CLI_CHOICE, &flags[0], .choices = yes_no),
        RK_CLI_OPT("migration-window", RK_CLI_CHOICE, &flags[1], .choices = yes_no),
        RK_CLI_OPT("prewarm", RK_CLI_CHOICE, &flags[2], .choices = yes_no),
        RK_CLI_OUTPUT_OPT(&answer_view),
        {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, &what);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    if (rc != RK_EXIT_OK)
        return rc;
    int set = strcmp(what, "set") == 0;
    if (!set && strcmp(what, "show") != 0)
        return rk_cli_usage_error(cmd, "the operand is show or set, not %s", what);
    if (!set && (moved || balance || approvals || bytes || flags[0] || flags[1] || flags[2]))
        return rk_cli_usage_error(cmd, "policy show takes no policy options; use policy set");
    if (!set)
        return send_policy(cmd, &s, NULL);
    json_t *doc = json_object();
    rc = doc ? policy_fields(cmd->name, doc, moved, balance, approvals, flags) : RK_EXIT_FAIL;
    rc = rc ? rc : bytes_field(cmd->name, doc, bytes);
    if (rc != RK_EXIT_OK) {
        json_decref(doc);
        return rc;
    }
    return send_policy(cmd, &s, doc);
}

const rk_cli_cmd rk_cli_policy = {
    "policy", policy,
    "usage: ringkeeper policy show|set --server URL --cluster C [--max-moved-fraction F]\n"
    "       [--max-balance-after X|none] [--approvals N] [--distinct-approver yes|no]\n"
    "       [--migration-window yes|no] [--prewarm yes|no] [--max-moved-bytes N|none]\n"
    "       [--token T]\n"
    "\n"
    "Shows or sets the cluster's cutover policy (docs/API.md, \"Cutover\"); set changes only the\n"
    "fields given and prints the policy as it is then.\n"
    "\n"
    "  --max-moved-fraction F   the most of the hash space one activation may move, 0..1\n"
    "  --max-balance-after X    the most a node may hold over its ideal share after it, or none\n"
    "  --approvals N            approvals of the plan an activation needs, 0..100\n"
    "  --distinct-approver yes|no  whether a version's author may approve it\n"
    "  --migration-window yes|no   whether an activation opens a migration window: clients keep\n"
    "                           the previous owners until ringkeeper migration finish\n"
    "  --prewarm yes|no         for a cluster served by proxies, which read one ring: activating\n"
    "                           a version that names its data needs its verified pre-warm (a\n"
    "                           before_cutover job of ringkeeper migrate run), and a rollout\n"
    "                           pre-warms each step before activating it (docs/MIGRATE.md)\n"
    "  --max-moved-bytes N|none the most bytes one activation may move, counted by the cluster's\n"
    "                           load profile (stored by ringkeeper measure; docs/LOAD.md): with\n"
    "                           none stored, an activation is refused\n"
    "" RK_CLI_OUTPUT_HELP("json")
        SERVER_OPTIONS_HELP_("bearer token for policy set; show needs none"),
    NULL, "show|set"};

/* ---- migration ---- */

/* -o table (the default): one sentence from the ring document the finish answers with. */
static int finished_line(const json_t *doc)
{
    const char *cluster = json_string_value(json_object_get(doc, "cluster"));
    json_t *v = json_object_get(doc, "version");
    if (!cluster || !json_is_integer(v))
        return rk_cli_fail("migration", RK_EXIT_FAIL, "the answer is not a ring document");
    rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE,
                      "cluster %s: the migration window of version %lld is finished; clients drop "
                      "the previous ring at their next refresh",
                      cluster, (long long)json_integer_value(v));
    return putchar('\n') == EOF || fflush(stdout) ? RK_EXIT_FAIL : RK_EXIT_OK;
}

static int migration(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const rk_cli_view view = {"table", finished_line, NULL};
    rk_cli_server s = {0};
    const char *what = NULL, *comment = NULL, *force = NULL;
    const rk_cli_option opts[] = {RK_CLI_OPT("comment", RK_CLI_TEXT, &comment),
                                  RK_CLI_OPT("force", RK_CLI_TEXT, &force),
                                  RK_CLI_OUTPUT_OPT(&view),
                                  {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, &what);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    if (rc != RK_EXIT_OK)
        return rc;
    if (strcmp(what, "finish") != 0)
        return rk_cli_usage_error(cmd, "the operand is finish, not %s", what);
    json_t *doc = comment || force ? json_object() : NULL;
    if (doc && comment)
        json_object_set_new(doc, "comment", json_string(comment));
    if (doc && force)
        json_object_set_new(doc, "reason", json_string(force));
    if (doc && force)
        json_object_set_new(doc, "force", json_true());
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    rk_cli_body in = {body, body ? strlen(body) : 0}, out = {0};
    rc = (comment || force) && !body
             ? rk_cli_fail(cmd->name, RK_EXIT_FAIL, "out of memory")
             : rk_cli_call(cmd->name, &s, body ? &in : NULL, &out, "POST", "/migration/finish");
    free(body);
    return rk_cli_print_answer(cmd->name, rc, &out);
}

const rk_cli_cmd rk_cli_migration = {
    "migration", migration,
    "usage: ringkeeper migration finish --server URL --cluster C [--comment TEXT]\n"
    "                  [--force REASON] [--token T] [-o json|table] [--quiet]\n"
    "\n"
    "Closes the cluster's migration window (docs/API.md), once the data has moved: the ring\n"
    "no longer names the previous version, clients drop the previous ring, and the next version\n"
    "can be activated. Recorded as a finish event. No window open: exit 2.\n"
    "\n"
    "  --comment T    a comment recorded with the event\n"
    "  --force REASON close it although the window's migration job is not verified (admin\n"
    "                 token): REASON is recorded with the event\n" RK_CLI_OUTPUT_HELP(
        "table: a sentence; json: the ring document") SERVER_OPTIONS_HELP,
    NULL, "finish"};

/* ---- events ---- */

/* An event as the table's row: its cells as text, in the columns' order, "-" for none. */
static json_t *event_row(const json_t *e)
{
    json_t *moved = json_object_get(e, "moved_fraction");
    char v[48] = "-", pct[16] = "-";
    json_int_t to = json_integer_value(json_object_get(e, "version"));
    json_int_t from = json_integer_value(json_object_get(e, "from_version"));
    if (to && from)
        snprintf(v, sizeof v, "v%lld -> v%lld", (long long)from, (long long)to);
    else if (to)
        snprintf(v, sizeof v, "v%lld", (long long)to);
    if (json_is_number(moved))
        snprintf(pct, sizeof pct, "%.4f%%", 100 * json_number_value(moved));
    const char *author = json_string_value(json_object_get(e, "author"));
    const char *digest = json_string_value(json_object_get(e, "digest"));
    const char *detail = json_string_value(json_object_get(e, "detail"));
    const char *at = json_string_value(json_object_get(e, "at"));
    const char *kind = json_string_value(json_object_get(e, "kind"));
    return json_pack(
        "{sIssssssssssssss}", "event", (json_int_t)json_integer_value(json_object_get(e, "event")),
        "at", at ? at : "-", "kind", kind ? kind : "-", "author", author ? author : "-", "versions",
        v, "digest", digest ? digest : "-", "moved", pct, "detail", detail ? detail : "");
}

/* -o table: one line an event under a header, each column as wide as its widest cell, so a long
 * author, kind or digest pushes no column out of line; the detail is last, so a long one only
 * makes its own line longer. */
static int events_table(const json_t *doc)
{
    json_t *list = json_object_get(doc, "events"), *rows = json_array();
    if (!json_is_array(list))
        return rk_cli_fail("events", RK_EXIT_FAIL, "the answer is not a list of events");
    for (size_t i = 0; rows && i < json_array_size(list); i++)
        if (json_array_append_new(rows, event_row(json_array_get(list, i))) != 0)
            json_decref(rows), rows = NULL;
    if (!rows)
        return rk_cli_fail("events", RK_EXIT_FAIL, "out of memory");
    rk_cli_print_columns(rows);
    json_decref(rows);
    return RK_EXIT_OK;
}

/* The events as a table by default; --quiet: their numbers. */
static const rk_cli_view events_view = {"table", events_table, "events[].event"};

static int events(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rk_cli_server s = {0};
    unsigned long long limit = 20;
    const rk_cli_option opts[] = {RK_CLI_OPT("limit", RK_CLI_NUMBER, &limit, .lo = 1, .hi = 1000),
                                  RK_CLI_OUTPUT_OPT(&events_view),
                                  {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, NULL);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    rk_cli_body out = {0};
    rc = rc ? rc : rk_cli_call(cmd->name, &s, NULL, &out, "GET", "/events?limit=%llu", limit);
    return rk_cli_print_answer(cmd->name, rc, &out);
}

const rk_cli_cmd rk_cli_events = {
    "events", events,
    "usage: ringkeeper events --server URL --cluster C [--limit N] [-o json|table] [--quiet]\n"
    "\n"
    "Prints the cluster's audit, newest first: publishes, reverts, approvals, activations (force:\n"
    "past the budget, with the reason), policy changes, finished migrations.\n"
    "\n"
    "  --limit N      the newest N events, 1..1000 (default 20)\n" RK_CLI_OUTPUT_HELP("table")
        READ_OPTIONS_HELP,
    NULL, NULL};
