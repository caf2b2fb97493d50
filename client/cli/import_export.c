/* import_export.c — `ringkeeper import` and `ringkeeper export`: a twemproxy pool, an nginx
 * upstream or a HAProxy backend to a topology of its scheme (ketama, nginx, haproxy) and back
 * (docs/KETAMA.md, docs/LOADBALANCERS.md), so a fleet routed by nutcracker, nginx or HAProxy adopts
 * ringkeeper with no key moved, and every change reviewed in ringkeeper goes back to the balancer's
 * own file (`--into`: its servers rewritten, the rest of the file kept). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "haproxyconf.h"
#include "nginxconf.h"
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

/* The topology of `file`'s pool, upstream or backend, by its format (`nc`, `ngx` or `hap`). */
static json_t *import_text(const char *cmd, const char *file, const char *nc, const char *ngx,
                           const char *name)
{
    size_t len;
    char *text = rk_cli_read_file(cmd, file, &len), msg[RK_NC_MSG_MAX], note[RK_HAP_MSG_MAX] = "";
    if (!text)
        return NULL;
    json_t *t = file == nc    ? rk_nc_import(text, len, name, msg)
                : file == ngx ? rk_ngx_import(text, len, name, msg, note)
                              : rk_hap_import(text, len, name, msg, note);
    free(text);
    if (!t)
        rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", file, msg);
    /* the notes name servers and settings as the file writes them: printed safe */
    for (char *line = note, *next; t && *line; line = next) {
        next = line + strcspn(line, "\n");
        int last = *next == '\0';
        *next = '\0';
        rk_cli_print_safe(stderr, RK_CLI_SAFE_LINE, "%s: note: %s", cmd, line);
        fputc('\n', stderr);
        next += !last;
    }
    return t;
}

static int run_import(const rk_cli_cmd *cmd, int argc, char **argv)
{
    const char *nc = NULL, *ngx = NULL, *hap = NULL, *pool = NULL, *upstream = NULL,
               *backend = NULL;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("nutcracker", RK_CLI_TEXT, &nc),
        RK_CLI_OPT("pool", RK_CLI_TEXT, &pool),
        RK_CLI_OPT("nginx", RK_CLI_TEXT, &ngx),
        RK_CLI_OPT("upstream", RK_CLI_TEXT, &upstream),
        RK_CLI_OPT("haproxy", RK_CLI_TEXT, &hap),
        RK_CLI_OPT("backend", RK_CLI_TEXT, &backend),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, NULL, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    if (!!nc + !!ngx + !!hap != 1 || !!ngx != !!upstream || !!hap != !!backend || (pool && !nc))
        return rk_cli_usage_error(cmd, "give --nutcracker FILE [--pool NAME], --nginx FILE "
                                       "--upstream NAME or --haproxy FILE --backend NAME");
    const char *file = nc ? nc : ngx ? ngx : hap;
    json_t *t = import_text(cmd->name, file, nc, ngx, nc ? pool : ngx ? upstream : backend);
    if (!t)
        return RK_EXIT_USAGE;
    rc = check_topology(cmd->name, file, t);
    char *out = rc == RK_EXIT_OK ? json_dumps(t, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(t);
    if (rc == RK_EXIT_OK && (!out || printf("%s\n", out) < 0 || fflush(stdout)))
        rc = rk_cli_fail(cmd->name, RK_EXIT_FAIL, "writing the topology failed");
    free(out);
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

/* `export --into FILE`: FILE's pool (or its only one), upstream or backend `name`, by `format`,
 * gets the topology's servers, the rest of the file kept as it is. Returns an exit code. */
static int export_into(const char *cmd, const char *into, const char *format, const char *name,
                       const json_t *doc)
{
    size_t len;
    char msg[RK_NC_MSG_MAX], chosen[RK_NC_MSG_MAX] = "";
    char *text = rk_cli_read_file(cmd, into, &len);
    if (!text)
        return RK_EXIT_USAGE;
    int ngx = strcmp(format, "nginx") == 0, hap = strcmp(format, "haproxy") == 0;
    char *out = ngx   ? rk_ngx_into(text, len, name, doc, msg)
                : hap ? rk_hap_into(text, len, name, doc, msg)
                      : rk_nc_into(text, len, name, doc, chosen, msg);
    free(text);
    int rc =
        out ? replace_file(cmd, into, out) : rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", into, msg);
    free(out);
    if (rc == RK_EXIT_OK)
        printf("%s: the servers of %s %s rewritten; every other line kept\n", into,
               ngx   ? "upstream"
               : hap ? "backend"
                     : "pool",
               chosen[0] ? chosen : name);
    return rc;
}

/* Prints an export's `text` (freed here), or says why there is none (msg) after a step that went
 * well (rc); returns the exit code. */
static int print_export(const char *cmd, int rc, char *text, const char *msg, const char *what)
{
    if (rc == RK_EXIT_OK && !text)
        rc = rk_cli_fail(cmd, RK_EXIT_USAGE, "%s", msg);
    if (text && (fputs(text, stdout) == EOF || fflush(stdout)))
        rc = rk_cli_fail(cmd, RK_EXIT_FAIL, "writing %s failed", what);
    free(text);
    return rc;
}

/* The key an export writes: the topology's request_key, else `given` (--key, --balance), else
 * `fallback`; NULL (and *rc set) when the option names another than the topology's. */
static const char *export_key(const char *cmd, const json_t *doc, const char *option,
                              const char *given, const char *fallback, int *rc)
{
    const char *own = json_string_value(json_object_get(doc, "request_key"));
    if (own && given && strcmp(own, given) != 0) {
        *rc = rk_cli_fail(cmd, RK_EXIT_USAGE,
                          "%s %s: the topology takes its keys as \"%s\" (request_key); leave "
                          "%s out, or publish a version with the new request_key (every key "
                          "moves)",
                          option, given, own, option);
        return NULL;
    }
    return own ? own : given ? given : fallback;
}

/* `export --format nginx|haproxy`: the upstream block or the backend section `name`, keys by
 * `key` (nginx's hash expression, or HAProxy's balance method), printed; or with `into`, the
 * servers of that upstream or backend in that file rewritten. Returns an exit code. */
static int export_balancer(const rk_cli_cmd *cmd, const char *format, const char *file,
                           rk_cli_server *server, const char *version, const char *name,
                           const char *key, const char *into, int others)
{
    int rc = RK_EXIT_OK, hap = strcmp(format, "haproxy") == 0;
    if (!name || others)
        return rk_cli_usage_error(cmd, hap ? "--format haproxy takes --backend NAME [--balance "
                                             "METHOD] or --backend NAME --into FILE (not --pool, "
                                             "--listen, --upstream or --key)"
                                           : "--format nginx takes --upstream NAME [--key EXPR] "
                                             "or --upstream NAME --into FILE (not --pool, "
                                             "--listen, --backend or --balance)");
    if (into && key)
        return rk_cli_usage_error(cmd,
                                  hap ? "--into keeps the backend's own balance: drop "
                                        "--balance"
                                      : "--into keeps the upstream's own hash key: drop --key");
    if (file && (server->url || server->cluster || version))
        return rk_cli_usage_error(cmd, "--file and the server options (--server, --cluster, "
                                       "--version) do not mix");
    if (!file && (rc = rk_cli_server_check(cmd->name, server)) != RK_EXIT_OK)
        return rc;
    json_t *doc = load_doc(cmd->name, file, server, version, &rc);
    char msg[RK_NGX_MSG_MAX + RK_HAP_MSG_MAX], *text = NULL;
    if (rc == RK_EXIT_OK && into)
        rc = export_into(cmd->name, into, format, name, doc);
    else if (rc == RK_EXIT_OK && (key = export_key(cmd->name, doc, hap ? "--balance" : "--key", key,
                                                   hap ? "uri" : "$request_uri", &rc)))
        text = hap ? rk_hap_export(doc, name, key, msg) : rk_ngx_export(doc, name, key, msg);
    json_decref(doc);
    return into ? rc : print_export(cmd->name, rc, text, msg, hap ? "the backend" : "the upstream");
}

static int run_export(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const char *const formats[] = {"nutcracker", "nginx", "haproxy", NULL};
    const char *format = NULL, *pool = NULL, *file = NULL, *version = NULL, *into = NULL;
    const char *listen = NULL, *upstream = NULL, *key = NULL, *backend = NULL, *balance = NULL;
    rk_cli_server server = {0};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("format", RK_CLI_CHOICE, &format, .required = 1, .choices = formats),
        RK_CLI_OPT("pool", RK_CLI_TEXT, &pool),
        RK_CLI_OPT("listen", RK_CLI_TEXT, &listen),
        RK_CLI_OPT("file", RK_CLI_TEXT, &file),
        RK_CLI_OPT("version", RK_CLI_VERSION, &version),
        RK_CLI_OPT("into", RK_CLI_TEXT, &into),
        RK_CLI_OPT("upstream", RK_CLI_TEXT, &upstream),
        RK_CLI_OPT("key", RK_CLI_TEXT, &key),
        RK_CLI_OPT("backend", RK_CLI_TEXT, &backend),
        RK_CLI_OPT("balance", RK_CLI_TEXT, &balance),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    int others = pool || listen;
    if (strcmp(format, "nginx") == 0)
        return export_balancer(cmd, format, file, &server, version, upstream, key, into,
                               others || backend || balance);
    if (strcmp(format, "haproxy") == 0)
        return export_balancer(cmd, format, file, &server, version, backend, balance, into,
                               others || upstream || key);
    if (upstream || key || backend || balance)
        return rk_cli_usage_error(cmd, "--upstream, --key, --backend and --balance are for "
                                       "--format nginx or haproxy");
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
        rc = export_into(cmd->name, into, format, pool, doc);
        json_decref(doc);
        return rc;
    }
    char msg[RK_NC_MSG_MAX],
        *yaml = rc == RK_EXIT_OK ? rk_nc_export(doc, pool, listen ? listen : "127.0.0.1:22121", msg)
                                 : NULL;
    json_decref(doc);
    return print_export(cmd->name, rc, yaml, msg, "the pool");
}

const rk_cli_cmd rk_cli_import = {
    "import", run_import,
    "usage: ringkeeper import --nutcracker FILE [--pool NAME]\n"
    "       ringkeeper import --nginx FILE --upstream NAME\n"
    "       ringkeeper import --haproxy FILE --backend NAME\n"
    "\n"
    "Prints the topology (JSON) that routes as a balancer's configuration does: a twemproxy\n"
    "pool (the ketama scheme), an nginx upstream (nginx) or a HAProxy backend (haproxy).\n"
    "\n"
    "With --nutcracker, prints the ketama topology of pool NAME of the twemproxy (nutcracker)\n"
    "configuration FILE: its key hash, hash tag and servers, each named as twemproxy names it\n"
    "(the configured name, else host for port 11211, else host:port), so the ring is the pool's,\n"
    "point for point, and its data protocol (\"data\": \"redis\" for redis: true, else\n"
    "\"memcached\").\n"
    "Publish it as it is: no key moves. Refused: distribution modula or random (not a ring), and\n"
    "auto_eject_hosts: true (the ring changes whenever a server fails; drain with weight 0).\n"
    "\n"
    "With --nginx, prints the nginx topology (docs/LOADBALANCERS.md) of upstream NAME of the "
    "nginx\n"
    "configuration FILE: its servers as written, with their weights, so the ring is nginx's for\n"
    "`hash KEY consistent`, and KEY as its request_key when ringkeeper evaluates it ($uri,\n"
    "$arg_NAME, ...; else a note says why not). Refused: no `hash ... consistent` (round robin,\n"
    "random, least_conn, ip_hash, hash without consistent), backup, down and resolve servers,\n"
    "service= (each says why). An include is not followed.\n"
    "\n"
    "With --haproxy, prints the haproxy topology of backend (or listen section) NAME of the\n"
    "HAProxy configuration FILE: node ids are the servers' ids (their `id`, else the number\n"
    "HAProxy gives them by their place: a note names such servers), with their addresses and\n"
    "weights and the hash-type's function, so the ring is HAProxy's, and the balance as its\n"
    "request_key when ringkeeper evaluates it (uri ..., hdr(NAME)). Refused: a balance that is\n"
    "no hash, hash-type map-based, hash-balance-factor, backup and disabled servers,\n"
    "server-template, hash-key other than id (each says why).\n"
    "\n"
    "  --nutcracker FILE  the nutcracker configuration (YAML)\n"
    "  --pool NAME        the pool (may be left out when FILE has one pool)\n"
    "  --nginx FILE       or an nginx configuration ...\n"
    "  --upstream NAME    ... and its upstream\n"
    "  --haproxy FILE     or a HAProxy configuration ...\n"
    "  --backend NAME     ... and its backend\n",
    NULL, NULL};

const rk_cli_cmd rk_cli_export = {
    "export", run_export,
    "usage: ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --file FILE\n"
    "       ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --server URL\n"
    "                         --cluster C [--version V]\n"
    "       ringkeeper export --format nutcracker --into NUTCRACKER_YML [--pool NAME]\n"
    "                         (--file FILE | --server URL --cluster C [--version V])\n"
    "       ringkeeper export --format nginx --upstream NAME [--key EXPR]\n"
    "                         (--file FILE | --server URL --cluster C [--version V])\n"
    "       ringkeeper export --format nginx --upstream NAME --into NGINX_CONF\n"
    "                         (--file FILE | --server URL --cluster C [--version V])\n"
    "       ringkeeper export --format haproxy --backend NAME [--balance METHOD]\n"
    "                         (--file FILE | --server URL --cluster C [--version V])\n"
    "       ringkeeper export --format haproxy --backend NAME --into HAPROXY_CFG\n"
    "                         (--file FILE | --server URL --cluster C [--version V])\n"
    "\n"
    "Writes a topology, or version V of cluster C (default: the active version), in a balancer's\n"
    "format: a twemproxy pool (nutcracker, from a ketama topology), an nginx upstream (nginx) or "
    "a\n"
    "HAProxy backend (haproxy). With --into, only the servers of that pool, upstream or backend\n"
    "are rewritten in the balancer's file, in place (atomically, its mode kept), every other line\n"
    "kept, and the result read back before it is written; refused, the file unchanged, when its\n"
    "hash settings are not the topology's.\n"
    "\n"
    "With --format nutcracker, prints a twemproxy pool NAME (YAML for nutcracker -c) for a\n"
    "ketama topology. Servers keep the topology's order; a node with weight 0 (draining) is left\n"
    "out, which leaves every other server's points as they are; a name is written where a node\n"
    "id is not twemproxy's default name for its addr. A topology whose data is redis exports\n"
    "with redis: true. --into keeps the pool's timeouts, backlog, server_retry_timeout, comments\n"
    "and the other pools; refused when the pool's hash or hash_tag is not the topology's, or its\n"
    "redis option not the topology's data.\n"
    "\n"
    "With --format nginx, prints the upstream block NAME hashing the topology's request_key (or\n"
    "EXPR for a topology without one, default $request_uri) consistently, for an nginx\n"
    "topology: nginx loads it and routes every key as ringkeeper does.\n"
    "--into keeps each server's own options (max_fails=, fail_timeout=, ...) and sets only its\n"
    "weight=; a server the topology lacks or drains (weight 0) goes with its line, and new ones\n"
    "follow the last kept server; keepalive, the hash line and comments stay. Refused when the\n"
    "upstream has no hash ... consistent, or hashes another key than the topology's request_key.\n"
    "\n"
    "With --format haproxy, prints the backend section NAME balancing by the topology's\n"
    "request_key (or METHOD for a topology without one, default uri) with hash-type\n"
    "consistent, for a haproxy topology: each server named s<id>, its id pinned.\n"
    "--into matches servers by id, keeps their names and options (check, inter, ...), sets the\n"
    "address and weight, and pins `id N` on a server numbered by its place (so that no server\n"
    "added or removed before it moves its keys); new ones are written as export writes them.\n"
    "Refused when the backend's hash-type (with its defaults') is not the topology's hash, or\n"
    "its balance not the topology's request_key.\n"
    "\n"
    "  --format nutcracker  the output format (twemproxy's), nginx or haproxy\n"
    "  --upstream NAME ... nginx's upstream name\n"
    "  --key EXPR      ... and its hash key (default $request_uri; not with --into)\n"
    "  --backend NAME  HAProxy's backend name ...\n"
    "  --balance METHOD ... and its balance (default uri; hdr(X-Key), url_param id, ...; not\n"
    "                  with --into)\n"
    "  --pool NAME     the pool (with --into it may be left out when the file has one pool)\n"
    "  --listen ADDR   the pool's listen address (default 127.0.0.1:22121; not with --into)\n"
    "  --into FILE     rewrite the servers of the pool, upstream or backend in this file\n"
    "  --file FILE     the topology to export (JSON)\n"
    "  --server URL    or the server's (default $RINGKEEPER_SERVER) ...\n"
    "  -c, --cluster C ... cluster (default $RINGKEEPER_CLUSTER) ...\n"
    "  --version V     ... version (default: the active one)\n",
    NULL, NULL};
