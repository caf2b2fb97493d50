/* import_export.c — `ringkeeper import` and `ringkeeper export`: a twemproxy pool to a ketama
 * topology and back (docs/KETAMA.md), so a fleet routed by nutcracker adopts ringkeeper with no key
 * moved, and every change reviewed in ringkeeper goes back to nutcracker as a pool it loads. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "nutcracker.h"

/* The document in `text` checked by the library (so what is printed or exported is a topology the
 * server accepts); returns an exit code. */
static int check_topology(const char *cmd, const char *label, const json_t *doc)
{
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(doc, &err);
    if (!t)
        return rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", label, err.message);
    rk_topology_free(t);
    return RK_EXIT_OK;
}

static int run_import(const rk_cli_cmd *cmd, int argc, char **argv)
{
    const char *file = NULL, *pool = NULL;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("nutcracker", RK_CLI_TEXT, &file, .required = 1),
        RK_CLI_OPT("pool", RK_CLI_TEXT, &pool, .required = 1),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, NULL, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    size_t len;
    char *yaml = rk_cli_read_file(cmd->name, file, &len), msg[RK_NC_MSG_MAX];
    if (!yaml)
        return RK_EXIT_USAGE;
    json_t *t = rk_nc_import(yaml, len, pool, msg);
    free(yaml);
    if (!t)
        return rk_cli_fail(cmd->name, RK_EXIT_USAGE, "%s: %s", file, msg);
    rc = check_topology(cmd->name, file, t);
    char *text = rc == RK_EXIT_OK ? json_dumps(t, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(t);
    if (rc == RK_EXIT_OK && (!text || printf("%s\n", text) < 0 || fflush(stdout)))
        rc = rk_cli_fail(cmd->name, RK_EXIT_FAIL, "writing the topology failed");
    free(text);
    return rc;
}

/* The topology to export: a file, or version V (default: the active one) of a server's cluster. */
static json_t *load_doc(const char *cmd, const char *file, const rk_cli_server *s,
                        const char *version, int *rc)
{
    rk_cli_body body = {0};
    if (file && !(body.data = rk_cli_read_file(cmd, file, &body.len)))
        *rc = RK_EXIT_USAGE;
    else if (!file && version)
        *rc = rk_cli_call(cmd, s, NULL, &body, "GET", "/versions/%s", version);
    else if (!file)
        *rc = rk_cli_call(cmd, s, NULL, &body, "GET", "/ring");
    if (*rc != RK_EXIT_OK)
        return NULL;
    json_error_t jerr;
    json_t *doc = json_loadb(body.data, body.len, JSON_REJECT_DUPLICATES, &jerr);
    free(body.data);
    if (!doc)
        *rc = rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: not JSON: %s",
                          file ? file : "the server's answer", jerr.text);
    else
        *rc = check_topology(cmd, file ? file : "the server's version", doc);
    return doc;
}

static int run_export(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const char *const formats[] = {"nutcracker", NULL};
    const char *format = NULL, *pool = NULL, *file = NULL, *version = NULL;
    const char *listen = "127.0.0.1:22121";
    rk_cli_server server = {0};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("format", RK_CLI_CHOICE, &format, .required = 1, .choices = formats),
        RK_CLI_OPT("pool", RK_CLI_TEXT, &pool, .required = 1),
        RK_CLI_OPT("listen", RK_CLI_TEXT, &listen),
        RK_CLI_OPT("file", RK_CLI_TEXT, &file),
        RK_CLI_OPT("version", RK_CLI_VERSION, &version),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    int online = server.url || server.cluster || version;
    if (file && online)
        return rk_cli_usage_error(cmd, "--file and the server options (--server, --cluster, "
                                       "--version) do not mix");
    if (!file && (rc = rk_cli_server_check(cmd->name, &server)) != RK_EXIT_OK)
        return rc;
    json_t *doc = load_doc(cmd->name, file, &server, version, &rc);
    char msg[RK_NC_MSG_MAX], *yaml = rc == RK_EXIT_OK ? rk_nc_export(doc, pool, listen, msg) : NULL;
    json_decref(doc);
    if (rc == RK_EXIT_OK && !yaml)
        rc = rk_cli_fail(cmd->name, RK_EXIT_USAGE, "%s", msg);
    if (yaml && (fputs(yaml, stdout) == EOF || fflush(stdout)))
        rc = rk_cli_fail(cmd->name, RK_EXIT_FAIL, "writing the pool failed");
    free(yaml);
    return rc;
}

const rk_cli_cmd rk_cli_import = {
    "import", run_import,
    "usage: ringkeeper import --nutcracker FILE --pool NAME\n"
    "\n"
    "Prints the ketama topology (JSON) of pool NAME of the twemproxy (nutcracker) configuration\n"
    "FILE: its key hash, hash tag and servers, each named as twemproxy names it (the configured\n"
    "name, else host for port 11211, else host:port), so the ring is the pool's, point for point.\n"
    "Publish it as it is: no key moves. Refused: distribution modula or random (not a ring), and\n"
    "auto_eject_hosts: true (the ring changes whenever a server fails; drain with weight 0).\n",
    NULL, NULL};

const rk_cli_cmd rk_cli_export = {
    "export", run_export,
    "usage: ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --file FILE\n"
    "       ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --server URL\n"
    "                         --cluster C [--version V]\n"
    "\n"
    "Prints a twemproxy pool NAME (YAML for nutcracker -c) that routes exactly as the ketama\n"
    "topology in FILE, or as version V of cluster C (default: the active version). Servers keep\n"
    "the topology's order; a node with weight 0 (draining) is left out, which leaves every other\n"
    "server's points as they are; a name is written where a node id is not twemproxy's default\n"
    "name for its addr. Other pool options (timeouts, redis: true ...) are yours to add.\n"
    "\n"
    "  --listen ADDR   the pool's listen address (default 127.0.0.1:22121)\n",
    NULL, NULL};
