/* clients.c — `ringkeeper clients`: how many clients (RK-Client ids) of a cluster hold each
 * version, stragglers first, then whether the fleet has converged on the active version. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct version_count {
    long long version, clients;
} version_count;

static int by_version(const void *a, const void *b)
{
    const version_count *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

/* The rows of summary.by_version, lowest version first (JSON keys have no order): a new array of
 * *n rows (free it), NULL with *n = 0 when there are none or it is not a version table. */
static version_count *rows_of(const json_t *by, size_t *n)
{
    const char *key;
    json_t *count;
    *n = 0;
    version_count *rows = json_is_object(by) && json_object_size(by)
                              ? calloc(json_object_size(by), sizeof *rows)
                              : NULL;
    json_object_foreach((json_t *)by, key, count)
    {
        unsigned long long v;
        if (!rows || !json_is_integer(count) || rk_cli_number(key, 1, INT64_MAX, &v) != 0)
            continue;
        rows[(*n)++] = (version_count){(long long)v, json_integer_value(count)};
    }
    if (rows)
        qsort(rows, *n, sizeof *rows, by_version);
    return rows;
}

/* -o table (the default): the counts by version, then the active version and converged. */
static int print_table(const json_t *doc)
{
    json_t *summary = json_object_get(doc, "summary");
    json_t *active = json_object_get(summary, "active");
    json_t *converged = json_object_get(summary, "converged");
    if (!json_is_boolean(converged) || !(json_is_integer(active) || json_is_null(active)))
        return rk_cli_fail("clients", RK_EXIT_FAIL, "the server's answer has no client summary");
    size_t n = 0;
    version_count *rows = rows_of(json_object_get(summary, "by_version"), &n);
    printf("%7s  %7s\n", "version", "clients");
    for (size_t i = 0; i < n; i++)
        printf("%7lld  %7lld\n", rows[i].version, rows[i].clients);
    if (json_is_null(active))
        printf("active: none\n");
    else
        printf("active: %lld\n", (long long)json_integer_value(active));
    printf("converged: %s\n", json_is_true(converged) ? "yes" : "no");
    free(rows);
    return fflush(stdout) ? rk_cli_fail("clients", RK_EXIT_FAIL, "writing the table failed")
                          : RK_EXIT_OK;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const rk_cli_view view = {"table", print_table, "summary.converged"};
    rk_cli_server server = {0};
    const rk_cli_option opts[] = {RK_CLI_OUTPUT_OPT(&view), {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, NULL);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_server_check(cmd->name, &server);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body out = {0};
    /* the summary counts every client: the table needs no list (one is the least the route
     * lists), -o json shows as many as the route gives */
    int json = !rk_cli_out.quiet && strcmp(rk_cli_format(), "json") == 0;
    rc = rk_cli_call("clients", &server, NULL, &out, "GET",
                     json ? "/clients?limit=1000" : "/clients?limit=1");
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_body(cmd->name, &out);
    free(out.data);
    return rc;
}

const rk_cli_cmd rk_cli_clients = {
    "clients", run,
    "usage: ringkeeper clients --server URL --cluster C [-o json|table] [--quiet]\n"
    "\n"
    "How many clients of cluster C hold each version, lowest (the stragglers) first, then the\n"
    "active version and whether every client holds it (converged: yes; no while none is seen).\n"
    "A client is an RK-Client id the server saw fetch or long-poll the ring in the last 180 s\n"
    "(ringkeeperd's clients-expiry flag). -o json prints the server's answer: the summary and the\n"
    "clients one by one (1000 at most, stragglers first); --quiet prints true or false, whether\n"
    "the fleet has converged.\n"
    "\n"
    "  --server URL   the server (default $RINGKEEPER_SERVER)\n"
    "  --cluster C    the cluster\n"
    "  --token T      bearer token (default $RINGKEEPER_TOKEN); reads need none\n"
    "  --ca-file F    CA certificates for an https server (default $RINGKEEPER_CA_FILE)\n"
    "  --timeout S    " RK_CLI_TIMEOUT_HELP RK_CLI_OUTPUT_HELP("table"),
    NULL, NULL};
