/* clients.c — `ringkeeper clients`: how many clients (RK-Client ids) of a cluster hold, were
 * offered and refuse each version, stragglers first, then whether the fleet has converged on the
 * active version and who refuses it. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* One row of the table: a version and how many clients hold it, were last offered it, refuse it. */
typedef struct version_row {
    long long version, holding, offered, refusing;
} version_row;

static int by_version(const void *a, const void *b)
{
    const version_row *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

/* The row of `v` in rows[0..*n), added (zeroed) when it is not there yet; rows has room. */
static version_row *row_of(version_row *rows, size_t *n, long long v)
{
    size_t i = 0;
    while (i < *n && rows[i].version != v)
        i++;
    if (i == *n)
        rows[(*n)++] = (version_row){.version = v};
    return &rows[i];
}

/* The summary's three version tables, as rows lowest version first (JSON keys have no order): a
 * new array of *n rows (free it), NULL with *n = 0 when there are none. */
static version_row *rows_of(const json_t *summary, size_t *n)
{
    static const char *const tables[] = {"by_version", "offered_by_version", "refusing_by_version"};
    size_t cap = 0;
    *n = 0;
    for (size_t t = 0; t < 3; t++)
        cap += json_object_size(json_object_get(summary, tables[t]));
    version_row *rows = cap ? calloc(cap, sizeof *rows) : NULL;
    for (size_t t = 0; rows && t < 3; t++) {
        const char *key;
        json_t *count;
        json_object_foreach(json_object_get(summary, tables[t]), key, count)
        {
            unsigned long long v;
            if (!json_is_integer(count) || rk_cli_number(key, 1, INT64_MAX, &v) != 0)
                continue;
            version_row *r = row_of(rows, n, (long long)v);
            long long *cell[] = {&r->holding, &r->offered, &r->refusing};
            *cell[t] = json_integer_value(count);
        }
    }
    if (rows)
        qsort(rows, *n, sizeof *rows, by_version);
    return rows;
}

/* " (nginx)" for a client that is the agent of a proxy (docs/AGENT.md), else "". */
static void proxy_note(const json_t *client, char *out, size_t n)
{
    const char *proxy = json_string_value(json_object_get(client, "proxy"));
    snprintf(out, n, " (%s)", proxy ? proxy : "");
    if (!proxy)
        out[0] = '\0';
}

/* The listed clients that refuse a version, with the reason their library gave. */
static void print_refusers(const json_t *clients)
{
    size_t i;
    json_t *c;
    char kind[32];
    json_array_foreach(clients, i, c)
    {
        json_t *refused = json_object_get(c, "refused");
        if (!json_is_integer(refused))
            continue;
        const char *reason = json_string_value(json_object_get(c, "reason"));
        proxy_note(c, kind, sizeof kind);
        printf("refuses v%lld: %s%s: %s\n", (long long)json_integer_value(refused),
               json_string_value(json_object_get(c, "id")), kind, reason && *reason ? reason : "-");
    }
}

/* The listed clients that are proxies' agents, each with its proxy and the version it holds. */
static void print_proxies(const json_t *clients)
{
    size_t i;
    json_t *c;
    char kind[32];
    json_array_foreach(clients, i, c)
    {
        json_t *held = json_object_get(c, "held");
        proxy_note(c, kind, sizeof kind);
        if (!kind[0])
            continue;
        if (json_is_integer(held))
            printf("proxy %s%s: holds v%lld\n", json_string_value(json_object_get(c, "id")), kind,
                   (long long)json_integer_value(held));
        else
            printf("proxy %s%s: holds none\n", json_string_value(json_object_get(c, "id")), kind);
    }
}

/* -o table (the default): per version how many clients hold it, were offered it and refuse it;
 * then those holding none, the active version, converged, the refusing clients listed, and how
 * many ids were seen without a client token (a server with tokens keeps them apart). */
static int print_table(const json_t *doc)
{
    json_t *summary = json_object_get(doc, "summary");
    json_t *active = json_object_get(summary, "active");
    json_t *converged = json_object_get(summary, "converged");
    if (!json_is_boolean(converged) || !(json_is_integer(active) || json_is_null(active)))
        return rk_cli_fail("clients", RK_EXIT_FAIL, "the server's answer has no client summary");
    size_t n = 0;
    version_row *rows = rows_of(summary, &n);
    printf("%7s  %7s  %7s  %8s\n", "version", "holding", "offered", "refusing");
    for (size_t i = 0; i < n; i++)
        printf("%7lld  %7lld  %7lld  %8lld\n", rows[i].version, rows[i].holding, rows[i].offered,
               rows[i].refusing);
    printf("holding none: %lld\n", (long long)json_integer_value(json_object_get(summary, "none")));
    if (json_is_null(active))
        printf("active: none\n");
    else
        printf("active: %lld\n", (long long)json_integer_value(active));
    printf("converged: %s\n", json_is_true(converged) ? "yes" : "no");
    print_refusers(json_object_get(doc, "clients"));
    print_proxies(json_object_get(doc, "clients"));
    json_t *apart = json_object_get(json_object_get(doc, "unauthenticated"), "summary");
    json_int_t strangers = json_integer_value(json_object_get(apart, "total"));
    if (strangers > 0) /* a server with tokens: ids without a client token, not counted above */
        printf("unauthenticated (not counted above): %lld\n", (long long)strangers);
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
    /* the summary counts every client; the table names the refusers among the first 100
     * (stragglers first: refusers hold older rings), -o json shows as many as the route gives */
    int json = !rk_cli_out.quiet && strcmp(rk_cli_format(), "json") == 0;
    rc = rk_cli_call("clients", &server, NULL, &out, "GET",
                     json ? "/clients?limit=1000" : "/clients?limit=100");
    return rk_cli_print_answer(cmd->name, rc, &out);
}

const rk_cli_cmd rk_cli_clients = {
    "clients", run,
    "usage: ringkeeper clients --server URL --cluster C [-o json|table] [--quiet]\n"
    "\n"
    "How many clients of cluster C hold each version (what their own latest request says they\n"
    "hold), were last offered it, and refuse it, lowest version (the stragglers) first; then how\n"
    "many hold none, the active version, whether every client holds it (converged: yes; no\n"
    "while none is seen), each refusing client among the first 100 with the reason its\n"
    "application was given, and each proxy's agent among them (ringkeeper agent) with its\n"
    "proxy and the version it holds. A client is an RK-Client id the server saw fetch or long-poll "
    "the\n"
    "ring in the last 180 s (ringkeeperd's clients-expiry flag). -o json prints the server's\n"
    "answer: the summary and the clients one by one (1000 at most, stragglers first); --quiet\n"
    "prints true or false, whether the fleet has converged.\n"
    "\n"
    "  --server URL   the server (default $RINGKEEPER_SERVER)\n"
    "  -c, --cluster C  the cluster (default $RINGKEEPER_CLUSTER)\n"
    "  --token T      bearer token (default $RINGKEEPER_TOKEN); this read needs none\n"
    "  --ca-file F    CA certificates for an https server (default $RINGKEEPER_CA_FILE)\n"
    "  --timeout S    " RK_CLI_TIMEOUT_HELP RK_CLI_OUTPUT_HELP("table"),
    NULL, NULL};
