/* remote_cmds.c — the one-request server commands (publish, activate, revert, show): a row each
 * says what to send; one runner parses, sends and prints the answer (-o json by default). The
 * writes (POST) take --if-match N: the server answers 412 unless N is still the version the write
 * expects.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* What a one-request command sends: METHOD /versions[/V]<action>[<flag_query>]. */
struct rk_cli_remote {
    const char *method;      /* "GET" or "POST" */
    int operand_is_file;     /* the operand is FILE, sent as the body; else V, a version number */
    const char *action;      /* after /versions/V: "/activate", or "" */
    const char *flag;        /* the command's one extra option (no argument), or NULL */
    const char *flag_query;  /* the query string it adds */
    const rk_cli_view *view; /* how its answer prints */
    int force;               /* takes --force REASON: the body {"force": true, "reason": REASON} */
};

/* --if-match's value: a version number, or 0 (a publish that creates the cluster). */
static int if_match_arg(const char *cmd, const char *n)
{
    unsigned long long v;
    if (!n || rk_cli_number(n, 0, INT64_MAX, &v) == 0)
        return RK_EXIT_OK;
    return rk_cli_fail(cmd, RK_EXIT_USAGE,
                       "--if-match: must be a version number (0: the cluster is new), got \"%s\"",
                       n);
}

/* {"force": true, "reason": REASON} as a new string of *len bytes, or NULL. The server refuses
 * an empty reason with its own message. */
static char *force_body(size_t *len, const char *reason)
{
    json_t *doc = json_pack("{s:b, s:s}", "force", 1, "reason", reason);
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    *len = s ? strlen(s) : 0;
    return s;
}

/* `publish --activate` refused for want of approvals changed nothing: publish the version staged
 * and say how to approve and activate it, by its number. Returns an exit code (2: not active). */
static int publish_unapproved(const char *cmd, const rk_cli_server *s, const rk_cli_body *in)
{
    rk_cli_body out = {0};
    int rc = rk_cli_call(cmd, s, in, &out, "POST", "/versions");
    json_t *doc = rc == RK_EXIT_OK ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    json_int_t v = json_integer_value(json_object_get(doc, "version"));
    json_decref(doc);
    free(out.data);
    if (rc != RK_EXIT_OK)
        return rc;
    return rk_cli_fail(cmd, RK_EXIT_USAGE,
                       "published version %lld, staged: the policy of cluster %s needs approvals "
                       "before it is activated; approve it with: ringkeeper approve %lld, then "
                       "activate it with: ringkeeper activate %lld",
                       (long long)v, s->cluster, (long long)v, (long long)v);
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    const rk_cli_remote *r = cmd->remote;
    rk_cli_server server = {0};
    const char *operand = NULL, *reason = NULL;
    int flag = 0;
    rk_cli_option opts[5] = {RK_CLI_OUTPUT_OPT(r->view)}; /* and a zero row to end them */
    size_t n = 1;
    if (strcmp(r->method, "POST") == 0)
        opts[n++] = (rk_cli_option)RK_CLI_OPT("if-match", RK_CLI_TEXT, &server.if_match);
    if (r->flag)
        opts[n++] = (rk_cli_option)RK_CLI_OPT(r->flag, RK_CLI_FLAG, &flag);
    if (r->force)
        opts[n++] = (rk_cli_option)RK_CLI_OPT("force", RK_CLI_TEXT, &reason);
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, &operand);
    if (rc == RK_EXIT_OK)
        rc = if_match_arg(cmd->name, server.if_match);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_server_check(cmd->name, &server);
    if (rc == RK_EXIT_OK && !r->operand_is_file)
        rc = rk_cli_version_arg(cmd->name, operand);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body in = {0}, out = {0};
    if (r->operand_is_file && !(in.data = rk_cli_read_file(cmd->name, operand, &in.len)))
        return RK_EXIT_USAGE;
    if (reason && !(in.data = force_body(&in.len, reason)))
        return rk_cli_fail(cmd->name, RK_EXIT_FAIL, "out of memory");
    const char *version = r->operand_is_file ? NULL : operand;
    int unapproved = 0; /* publish --activate refused for want of approvals: nothing changed */
    rc = rk_cli_call_except(
        cmd->name, &server, r->operand_is_file && flag ? "approval_required" : NULL, &unapproved,
        in.data ? &in : NULL, &out, r->method, "/versions%s%s%s%s", version ? "/" : "",
        version ? version : "", r->action, flag ? r->flag_query : "");
    if (unapproved)
        rc = publish_unapproved(cmd->name, &server, &in);
    free(in.data);
    return rk_cli_print_answer(cmd->name, rc, &out);
}

/* A version document: JSON by default; --quiet prints its number (activate: nothing). */
static const rk_cli_view version_doc = {"json", NULL, "version"};
static const rk_cli_view silent_doc = {"json", NULL, NULL};

static const rk_cli_remote publish = {"POST", 1, "", "activate", "?activate=true", &version_doc, 0};
static const rk_cli_remote activate = {"POST", 0, "/activate", NULL, NULL, &silent_doc, 1};
static const rk_cli_remote revert = {"POST", 0, "/revert", NULL, NULL, &version_doc, 0};
static const rk_cli_remote show = {"GET", 0, "", NULL, NULL, &version_doc, 0};

const rk_cli_cmd rk_cli_publish = {
    "publish", run,
    "usage: ringkeeper publish FILE --server URL --cluster C [--activate] [--if-match N]\n"
    "                  [--token T] [-o json|table] [--quiet]\n"
    "\n"
    "Publishes the topology in FILE (JSON; a fetched version document may be edited and published\n"
    "again) as the next version of cluster C, created on its first publish, and prints the new\n"
    "version document (--quiet: its version number). The version is staged: nothing moves until\n"
    "it is activated.\n"
    "\n"
    "  --activate     stage and activate in one step\n"
    "  --if-match N   only if N is the latest version (0: only if the cluster is new); else\n"
    "                 the server answers 412 and nothing is published (exit "
    "2)\n" RK_CLI_OUTPUT_HELP("json") SERVER_OPTIONS_HELP
    "\n"
    "A topology the server refuses exits 2 with its message and the field to blame.\n",
    &publish, "FILE"};

const rk_cli_cmd rk_cli_activate = {
    "activate", run,
    "usage: ringkeeper activate V --server URL --cluster C [--if-match N] [--force REASON]\n"
    "                  [--token T] [-o json|table] [--quiet]\n"
    "\n"
    "Cuts cluster C over to version V and prints its version document (--quiet: nothing). V must\n"
    "be newer than the active version (the server answers 409 otherwise, exit 2): to roll back,\n"
    "revert. The cluster's policy may refuse it (exit 2, with the server's reason): too few\n"
    "approvals, over the budget, or a migration window still open (ringkeeper migration finish).\n"
    "\n"
    "  --if-match N   only if N is the active version now; else 412, nothing changes (exit 2)\n"
    "  --force REASON pass the policy's budget (never its approvals); the reason is recorded\n"
    "                 in the events\n" RK_CLI_OUTPUT_HELP("json") SERVER_OPTIONS_HELP,
    &activate, "V"};

const rk_cli_cmd rk_cli_revert = {
    "revert", run,
    "usage: ringkeeper revert V --server URL --cluster C [--if-match N] [--token T]\n"
    "                  [-o json|table] [--quiet]\n"
    "\n"
    "Publishes a copy of version V as the next version of cluster C (staged, with the comment\n"
    "\"revert to vV: ...\") and prints it (--quiet: its version number); activate the copy to "
    "roll\n"
    "back to V's topology.\n"
    "\n"
    "  --if-match N   only if N is the latest version; else 412, nothing changes (exit 2)\n"
    "" RK_CLI_OUTPUT_HELP("json") SERVER_OPTIONS_HELP,
    &revert, "V"};

const rk_cli_cmd rk_cli_show = {
    "show", run,
    "usage: ringkeeper show V --server URL --cluster C [-o json|table] [--quiet]\n"
    "\n"
    "Prints version V of cluster C (state, author, nodes, fingerprint ...): as indented JSON, "
    "which\n"
    "can be edited and published again, or as a table (-o table); --quiet: its version number.\n"
    "\n" RK_CLI_OUTPUT_HELP("json") READ_OPTIONS_HELP,
    &show, "V"};
