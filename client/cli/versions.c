/* versions.c — `ringkeeper versions`: the versions of a cluster, newest first (a table, or -o
 * json). */
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"

#define MAX_LIMIT 1000

/* A string field, "-" when absent or null. */
static const char *text(const json_t *v, const char *key)
{
    const char *s = json_string_value(json_object_get(v, key));
    return s ? s : "-";
}

/* The server's text is escaped: a comment with CR/LF or ESC must not forge rows. */
static void print_row(const json_t *v)
{
    rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%7lld  %-10s  %-20s  %-16s  %8lld  %-16s  %s",
                      (long long)json_integer_value(json_object_get(v, "version")),
                      text(v, "state"), text(v, "created_at"), text(v, "author"),
                      (long long)json_integer_value(json_object_get(v, "points")),
                      text(v, "fingerprint"), text(v, "comment"));
    putchar('\n');
}

/* -o table: the default. */
static int print_table(const json_t *doc)
{
    json_t *list = json_object_get(doc, "versions");
    if (!json_is_array(list))
        return rk_cli_fail("versions", RK_EXIT_FAIL, "the server's answer has no version list");
    printf("%7s  %-10s  %-20s  %-16s  %8s  %-16s  %s\n", "version", "state", "created_at", "author",
           "points", "fingerprint", "comment");
    for (size_t i = 0; i < json_array_size(list); i++)
        print_row(json_array_get(list, i));
    if (!json_is_null(json_object_get(doc, "next_before")))
        fprintf(stderr, "ringkeeper versions: older versions not shown (--limit up to %d)\n",
                MAX_LIMIT);
    return RK_EXIT_OK;
}

/* A table by default; --quiet: the version numbers, newest first. */
static const rk_cli_view view = {"table", print_table, "versions[].version"};

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    unsigned long long limit = 100;
    rk_cli_server server = {0};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("limit", RK_CLI_NUMBER, &limit, .lo = 1, .hi = MAX_LIMIT),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, NULL);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_server_check(cmd->name, &server);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body out = {0};
    rc = rk_cli_call("versions", &server, NULL, &out, "GET", "/versions?limit=%llu", limit);
    return rk_cli_print_answer(cmd->name, rc, &out);
}

const rk_cli_cmd rk_cli_versions = {
    "versions", run,
    "usage: ringkeeper versions --server URL --cluster C [--limit N] [-o json|table] [--quiet]\n"
    "\n"
    "Lists the versions of cluster C, newest first: version, state (staged, active, retired,\n"
    "superseded), created_at, author, points, fingerprint and comment.\n"
    "\n"
    "  --limit N      at most N versions, 1..1000 (default 100)\n" RK_CLI_OUTPUT_HELP("table")
        READ_OPTIONS_HELP,
    NULL, NULL};
