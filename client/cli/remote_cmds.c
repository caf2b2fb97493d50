/* remote_cmds.c — the one-request server commands (publish, activate, show): a row each says what
 * to send; one runner parses, sends and prints the answer as indented JSON. */
#include <stdlib.h>

#include "cli.h"

/* What a one-request command sends: METHOD /versions[/V]<action>[<flag_query>]. */
struct rk_cli_remote {
    const char *method;     /* "GET" or "POST" */
    int operand_is_file;    /* the operand is FILE, sent as the body; else V, a version number */
    const char *action;     /* after /versions/V: "/activate", or "" */
    const char *flag;       /* the command's one extra option (no argument), or NULL */
    const char *flag_query; /* the query string it adds */
};

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    const rk_cli_remote *r = cmd->remote;
    rk_cli_server server = {0};
    const char *operand = NULL;
    int flag = 0;
    const rk_cli_option opts[] = {RK_CLI_OPT(r->flag, RK_CLI_FLAG, &flag), {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, &operand);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_server_check(cmd->name, &server);
    if (rc == RK_EXIT_OK && !r->operand_is_file)
        rc = rk_cli_version_arg(cmd->name, operand);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body in = {0}, out = {0};
    if (r->operand_is_file && !(in.data = rk_cli_read_file(cmd->name, operand, &in.len)))
        return RK_EXIT_USAGE;
    const char *version = r->operand_is_file ? NULL : operand;
    rc = rk_cli_call(cmd->name, &server, in.data ? &in : NULL, &out, r->method, "/versions%s%s%s%s",
                     version ? "/" : "", version ? version : "", r->action,
                     flag ? r->flag_query : "");
    free(in.data);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_json(cmd->name, &out);
    free(out.data);
    return rc;
}

static const rk_cli_remote publish = {"POST", 1, "", "activate", "?activate=true"};
static const rk_cli_remote activate = {"POST", 0, "/activate", NULL, NULL};
static const rk_cli_remote show = {"GET", 0, "", NULL, NULL};

const rk_cli_cmd rk_cli_publish = {
    "publish", run,
    "usage: ringkeeper publish FILE --server URL --cluster C [--activate] [--token T]\n"
    "\n"
    "Publishes the topology in FILE (JSON; a fetched version document may be edited and published\n"
    "again) as the next version of cluster C, created on its first publish, and prints the new\n"
    "version document. The version is staged: nothing moves until it is activated.\n"
    "\n"
    "  --activate     stage and activate in one step\n" SERVER_OPTIONS_HELP "\n"
    "A topology the server refuses exits 2 with its message and the field to blame.\n",
    &publish, "FILE"};

const rk_cli_cmd rk_cli_activate = {
    "activate", run,
    "usage: ringkeeper activate V --server URL --cluster C [--token T]\n"
    "\n"
    "Cuts cluster C over to version V and prints its version document. V must be newer than the\n"
    "active version (the server answers 409 otherwise, exit 2): to roll back, publish the old\n"
    "version again.\n"
    "\n" SERVER_OPTIONS_HELP,
    &activate, "V"};

const rk_cli_cmd rk_cli_show = {"show", run,
                                "usage: ringkeeper show V --server URL --cluster C\n"
                                "\n"
                                "Prints version V of cluster C (state, author, nodes, fingerprint "
                                "...) as indented JSON; it can\n"
                                "be edited and published again.\n"
                                "\n" SERVER_OPTIONS_HELP,
                                &show, "V"};
