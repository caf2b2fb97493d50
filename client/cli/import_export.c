/* import_export.c — `ringkeeper import` and `ringkeeper export`: a twemproxy pool to a ketama
 * topology and back (docs/KETAMA.md), so a fleet routed by nutcracker adopts ringkeeper with no key
 * moved, and every change reviewed in ringkeeper goes back to nutcracker as a pool it loads. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
        RK_CLI_OPT("pool", RK_CLI_TEXT, &pool),
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

/* Replaces `path` with `data` atomically: a temporary file beside it with its mode, fsync,
 * rename. Returns an exit code. */
static int replace_file(const char *cmd, const char *path, const char *data)
{
    struct stat st;
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.ringkeeper-XXXXXX", path);
    int fd = n > 0 && (size_t)n < sizeof tmp && stat(path, &st) == 0 ? mkstemp(tmp) : -1;
    if (fd < 0)
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "--into %s: cannot write beside it", path);
    size_t len = strlen(data);
    int ok = fchmod(fd, st.st_mode & 07777) == 0 && write(fd, data, len) == (ssize_t)len &&
             fsync(fd) == 0;
    ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok ? RK_EXIT_OK : rk_cli_fail(cmd, RK_EXIT_FAIL, "--into %s: writing it failed", path);
}

/* `export --into FILE`: FILE's pool (or its only one) gets the topology's servers, the rest of the
 * file kept as it is. Returns an exit code. */
static int export_into(const char *cmd, const char *into, const char *pool, const json_t *doc)
{
    size_t len;
    char msg[RK_NC_MSG_MAX], chosen[RK_NC_MSG_MAX];
    char *yaml = rk_cli_read_file(cmd, into, &len);
    if (!yaml)
        return RK_EXIT_USAGE;
    char *out = rk_nc_into(yaml, len, pool, doc, chosen, msg);
    free(yaml);
    int rc =
        out ? replace_file(cmd, into, out) : rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", into, msg);
    free(out);
    if (rc == RK_EXIT_OK)
        printf("%s: the servers of pool %s rewritten; every other line kept\n", into, chosen);
    return rc;
}

static int run_export(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const char *const formats[] = {"nutcracker", NULL};
    const char *format = NULL, *pool = NULL, *file = NULL, *version = NULL, *into = NULL;
    const char *listen = NULL;
    rk_cli_server server = {0};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("format", RK_CLI_CHOICE, &format, .required = 1, .choices = formats),
        RK_CLI_OPT("pool", RK_CLI_TEXT, &pool),
        RK_CLI_OPT("listen", RK_CLI_TEXT, &listen),
        RK_CLI_OPT("file", RK_CLI_TEXT, &file),
        RK_CLI_OPT("version", RK_CLI_VERSION, &version),
        RK_CLI_OPT("into", RK_CLI_TEXT, &into),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    int online = server.url || server.cluster || version;
    if (file && online)
        return rk_cli_usage_error(cmd, "--file and the server options (--server, --cluster, "
                                       "--version) do not mix");
    if (into && listen)
        return rk_cli_usage_error(cmd, "--into keeps the pool's own listen address: drop --listen");
    if (!into && !pool)
        return rk_cli_usage_error(cmd, "--pool is required (with --into, when FILE has one pool, "
                                       "it may be left out)");
    if (!file && (rc = rk_cli_server_check(cmd->name, &server)) != RK_EXIT_OK)
        return rc;
    json_t *doc = load_doc(cmd->name, file, &server, version, &rc);
    if (rc == RK_EXIT_OK && into) {
        rc = export_into(cmd->name, into, pool, doc);
        json_decref(doc);
        return rc;
    }
    char msg[RK_NC_MSG_MAX],
        *yaml = rc == RK_EXIT_OK ? rk_nc_export(doc, pool, listen ? listen : "127.0.0.1:22121", msg)
                                 : NULL;
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
    "usage: ringkeeper import --nutcracker FILE [--pool NAME]\n"
    "\n"
    "Prints the ketama topology (JSON) of pool NAME of the twemproxy (nutcracker) configuration\n"
    "FILE: its key hash, hash tag and servers, each named as twemproxy names it (the configured\n"
    "name, else host for port 11211, else host:port), so the ring is the pool's, point for point,\n"
    "and its data protocol (\"data\": \"redis\" for redis: true, else \"memcached\").\n"
    "Publish it as it is: no key moves. Refused: distribution modula or random (not a ring), and\n"
    "auto_eject_hosts: true (the ring changes whenever a server fails; drain with weight 0).\n"
    "\n"
    "  --nutcracker FILE  the nutcracker configuration (YAML)\n"
    "  --pool NAME        the pool (may be left out when FILE has one pool)\n",
    NULL, NULL};

const rk_cli_cmd rk_cli_export = {
    "export", run_export,
    "usage: ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --file FILE\n"
    "       ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --server URL\n"
    "                         --cluster C [--version V]\n"
    "       ringkeeper export --format nutcracker --into NUTCRACKER_YML [--pool NAME]\n"
    "                         (--file FILE | --server URL --cluster C [--version V])\n"
    "\n"
    "Prints a twemproxy pool NAME (YAML for nutcracker -c) that routes exactly as the ketama\n"
    "topology in FILE, or as version V of cluster C (default: the active version). Servers keep\n"
    "the topology's order; a node with weight 0 (draining) is left out, which leaves every other\n"
    "server's points as they are; a name is written where a node id is not twemproxy's default\n"
    "name for its addr. With --into, the pool's servers in that nutcracker configuration are\n"
    "rewritten in place instead, and every other line of it is kept: its timeouts, backlog,\n"
    "server_retry_timeout, comments, the other pools (refused when the pool's hash or hash_tag\n"
    "is not the topology's, or its redis option not the topology's data). A topology whose data\n"
    "is redis exports with redis: true.\n"
    "\n"
    "  --format nutcracker  the output format (twemproxy's)\n"
    "  --pool NAME     the pool (with --into it may be left out when the file has one pool)\n"
    "  --listen ADDR   the pool's listen address (default 127.0.0.1:22121; not with --into)\n"
    "  --into FILE     rewrite the servers of the pool in this nutcracker configuration\n"
    "  --file FILE     the ketama topology to export (JSON)\n"
    "  --server URL    or the server's (default $RINGKEEPER_SERVER) ...\n"
    "  --cluster C     ... cluster ...\n"
    "  --version V     ... version (default: the active one)\n",
    NULL, NULL};
