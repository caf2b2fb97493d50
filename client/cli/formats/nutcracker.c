/* nutcracker.c — the nutcracker format (format.h): twemproxy (nutcracker) pool configurations to
 * and from ketama topologies, for `ringkeeper import --nutcracker` and `ringkeeper export --format
 * nutcracker [--into]` (docs/KETAMA.md). Reads YAML with libyaml; writes the pool as text. Only
 * what decides where keys go is carried over: the key hash, the hash tag and the servers (weights
 * and names); every other pool option is the operator's. The reader is nutcracker_read.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "nutcracker.h"

/* ---- Writing a pool ---- */

typedef struct text {
    char *s;
    size_t len, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->oom || n < 0)
        return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->oom = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* A YAML double-quoted scalar of s. */
static void put_quoted(text *t, const char *s)
{
    put(t, "\"");
    for (; *s; s++)
        put(t, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    put(t, "\"");
}

/* twemproxy's name for a server at `addr` without a configured name. */
static void default_name(const char *addr, char *out, size_t cap)
{
    const char *port = strrchr(addr, ':');
    if (addr[0] != '/' && port && strcmp(port + 1, RK_NC_DEFAULT_PORT) == 0)
        snprintf(out, cap, "%.*s", (int)(port - addr), addr);
    else
        snprintf(out, cap, "%s", addr);
}

/* The server entry of `node` as a quoted YAML scalar ("host:port:weight [name]") into t: 0, 1
 * when the node is drained (no entry: twemproxy refuses weight 0), -1 with a sentence in msg. */
static int put_server(text *t, const json_t *node, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *id = json_string_value(json_object_get(node, "id"));
    const char *addr = json_string_value(json_object_get(node, "addr"));
    json_int_t w = json_integer_value(json_object_get(node, "weight"));
    if (!id || !addr || (addr[0] != '/' && !strchr(addr, ':')) || strpbrk(addr, " \t")) {
        rk_nc_fail(msg, "node \"%s\": addr \"%s\" is not host:port or a unix socket path",
                   id ? id : "?", addr ? addr : "");
        return -1;
    }
    if (w == 0)
        return 1;
    char dflt[512];
    default_name(addr, dflt, sizeof dflt);
    if (strcmp(dflt, id) != 0 && strpbrk(id, " \t")) {
        rk_nc_fail(msg, "node \"%s\": twemproxy names cannot hold spaces", id);
        return -1;
    }
    char entry[1024];
    snprintf(entry, sizeof entry, "%s:%lld%s%s", addr, (long long)w,
             strcmp(dflt, id) != 0 ? " " : "", strcmp(dflt, id) != 0 ? id : "");
    put_quoted(t, entry);
    return 0;
}

/* The servers of ketama topology `doc` as YAML list items, each after `sep` but the first
 * (block items: "\n<indent>- "; flow items: ", "), into t: how many, or -1 with msg set. */
static int put_servers(text *t, const json_t *doc, const char *sep, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    size_t i;
    const json_t *node;
    int n = 0;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        text entry = {0};
        int rc = put_server(&entry, node, msg);
        if (rc == 0)
            put(t, "%s%s", n++ ? sep : "", entry.s ? entry.s : "");
        free(entry.s);
        if (rc < 0 || entry.oom)
            return rc < 0 ? -1 : (rk_nc_fail(msg, "out of memory"), -1);
    }
    return n;
}

/* Refuses a topology that is not of the ketama scheme, which no twemproxy pool routes like. */
static int check_ketama(const json_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, "ketama") == 0)
        return 0;
    rk_nc_fail(msg,
               "only a ketama topology (\"scheme\": \"ketama\") routes like a twemproxy pool; this "
               "one uses the %s scheme",
               scheme ? scheme : "ringkeeper");
    return -1;
}

static int is_redis(const json_t *doc)
{
    const char *data = json_string_value(json_object_get(doc, "data"));
    return data && strcmp(data, "redis") == 0;
}

/* The nutcracker pool `pool` listening on `listen` for the ketama topology (or version document)
 * `doc`: `redis: true` when its data is "redis", servers in the topology's order, drained nodes
 * (weight 0) left out (they own nothing and twemproxy refuses weight 0; the other servers' points
 * do not change), a name where the node id is not twemproxy's default name for its address. */
static char *nc_export(const json_t *doc, const char *pool, const char *listen,
                       char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (check_ketama(doc, msg) != 0)
        return NULL;
    const char *hash = json_string_value(json_object_get(doc, "hash"));
    const char *tag = json_string_value(json_object_get(doc, "hash_tag"));
    text t = {0};
    put_quoted(&t, pool);
    put(&t, ":\n  listen: ");
    put_quoted(&t, listen);
    put(&t, "\n  hash: %s\n  distribution: ketama\n  auto_eject_hosts: false\n", hash ? hash : "");
    if (tag) {
        put(&t, "  hash_tag: ");
        put_quoted(&t, tag);
        put(&t, "\n");
    }
    if (is_redis(doc)) /* twemproxy's default is memcached: only Redis needs saying */
        put(&t, "  redis: true\n");
    text list = {0};
    int n = put_servers(&list, doc, "\n    - ", msg);
    if (n > 0)
        put(&t, "  servers:\n    - %s\n", list.s);
    else
        put(&t, "  servers: []\n"); /* every node drained */
    free(list.s);
    if (n < 0 || list.oom) {
        free(t.s);
        return n < 0 ? NULL : rk_nc_fail(msg, "out of memory");
    }
    if (t.oom) {
        free(t.s);
        return rk_nc_fail(msg, "out of memory");
    }
    return t.s;
}

/* ---- Rewriting a pool's servers in place ---- */

/* The byte offset in `text` of libyaml's mark (its line, and its column in characters). */
static size_t byte_at(const char *text, size_t len, yaml_mark_t m)
{
    size_t i = 0;
    for (size_t line = 0; i < len && line < m.line; i++)
        line += text[i] == '\n';
    for (size_t c = 0; i < len && c < m.column; c++)
        for (i++; i < len && ((unsigned char)text[i] & 0xC0) == 0x80; i++)
            ; /* a UTF-8 character's continuation bytes */
    return i;
}

/* Refuses a pool whose key hash or hash tag is not the topology's: its servers alone would not
 * route like the topology (change those options first, or export the whole pool). */
static int check_same_hash(const json_t *have, const json_t *doc, const char *pool,
                           char msg[RK_CLI_FORMAT_MSG_MAX])
{
    static const char *const fields[] = {"hash", "hash_tag"};
    for (size_t i = 0; i < 2; i++) {
        const char *a = json_string_value(json_object_get(have, fields[i]));
        const char *b = json_string_value(json_object_get(doc, fields[i]));
        if (!a != !b || (a && strcmp(a, b) != 0)) {
            rk_nc_fail(msg,
                       "pool \"%s\" has %s %s but the topology %s: rewriting its servers would not "
                       "route like the topology; set the pool's %s first, or export the whole pool",
                       pool, fields[i], a ? a : "(none)", b ? b : "(none)", fields[i]);
            return -1;
        }
    }
    return 0;
}

/* Refuses a pool that speaks another protocol than the topology's "data" (when it says one):
 * with the topology's servers, twemproxy would speak memcached to Redis servers, or the reverse. */
static int check_same_data(const json_t *have, const json_t *doc, const char *pool,
                           char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *a = json_string_value(json_object_get(have, "data"));
    const char *b = json_string_value(json_object_get(doc, "data"));
    if (!a || !b || strcmp(a, b) == 0)
        return 0;
    rk_nc_fail(msg,
               "pool \"%s\" speaks %s to its servers but the topology's data is %s; set the pool's "
               "redis: %s first, or export the whole pool",
               pool, a, b, strcmp(b, "redis") == 0 ? "true" : "false");
    return -1;
}

/* The text of `yaml` with the servers of pool `name` replaced by the topology's: block items at
 * the first item's column, or a flow list where the file had one. */
static char *splice_servers(const char *yaml, size_t len, yaml_document_t *ydoc, const char *name,
                            const json_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_node_t *seq =
        rk_nc_lookup(ydoc, rk_nc_lookup(ydoc, yaml_document_get_root_node(ydoc), name), "servers");
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return rk_nc_fail(msg, "pool \"%s\" has no list of servers", name);
    size_t from = byte_at(yaml, len, seq->start_mark), to;
    int flow = from < len && yaml[from] == '['; /* yaml is len bytes, no NUL after them */
    yaml_node_item_t *last = seq->data.sequence.items.top - 1;
    if (flow || last < seq->data.sequence.items.start)
        to = byte_at(yaml, len, seq->end_mark);
    else
        to = byte_at(yaml, len, yaml_document_get_node(ydoc, *last)->end_mark);
    text sep = {0}, list = {0}, out = {0};
    put(&sep, flow ? ", " : "\n%*s- ", (int)seq->start_mark.column, "");
    int n = sep.oom ? -1 : put_servers(&list, doc, sep.s, msg);
    if (n >= 0)
        put(&out, "%.*s%s%s%s%.*s", (int)from, yaml, flow || !n ? "[" : "- ", n ? list.s : "",
            flow || !n ? "]" : "", (int)(len - to), yaml + to);
    free(sep.s);
    free(list.s);
    if (n < 0 || sep.oom || list.oom || out.oom) {
        free(out.s);
        return n < 0 ? NULL : rk_nc_fail(msg, "out of memory");
    }
    return out.s;
}

/* The servers twemproxy reads for topology `doc`, as nc_import gives them: its nodes with a
 * weight, as {id, addr, weight}. NULL when out of memory. */
static json_t *served_nodes(const json_t *doc)
{
    json_t *out = json_array();
    size_t i;
    const json_t *node;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        json_t *w = json_object_get(node, "weight");
        if (out && json_integer_value(w) > 0 &&
            json_array_append_new(
                out, json_pack("{s:O, s:O, s:O}", "id", json_object_get(node, "id"), "addr",
                               json_object_get(node, "addr"), "weight", w)) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/* `yaml` with only the servers of pool `pool` (NULL: the file's only pool, whose name goes to
 * `chosen`) replaced by those of ketama topology `doc`, and every other byte as it was (comments
 * and the pool's other options included). Refused, with a sentence in msg, when the pool's hash or
 * hash_tag differ from the topology's (its servers alone would not route like it) or its protocol
 * from the topology's data (when it has one), and checked by reading the pool back. */
static char *nc_into(const char *yaml, size_t len, const char *pool, const json_t *doc,
                     char chosen[RK_CLI_FORMAT_MSG_MAX], char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_document_t ydoc;
    if (check_ketama(doc, msg) != 0 || rk_nc_load(yaml, len, &ydoc, msg) != 0)
        return NULL;
    const char *name = rk_nc_pool_name(&ydoc, pool, msg);
    json_t *have = name ? rk_nc_pool_topology(&ydoc, name, msg) : NULL;
    char *out = have && check_same_hash(have, doc, name, msg) == 0 &&
                        check_same_data(have, doc, name, msg) == 0
                    ? splice_servers(yaml, len, &ydoc, name, doc, msg)
                    : NULL;
    json_decref(have);
    /* read back: the pool must now be the topology's, the rest of the file as it was */
    json_t *now = out ? rk_nc_import(out, strlen(out), name, msg, NULL) : NULL;
    json_t *want = now ? served_nodes(doc) : NULL;
    if (out && (!now || !want || !json_equal(json_object_get(now, "nodes"), want))) {
        if (now && want)
            rk_nc_fail(msg,
                       "pool \"%s\": the rewritten servers do not read back as the topology's "
                       "(a bug: the file was not changed)",
                       name);
        free(out);
        out = NULL;
    }
    json_decref(now);
    json_decref(want);
    snprintf(chosen, RK_CLI_FORMAT_MSG_MAX, "%s", out ? name : "");
    yaml_document_delete(&ydoc);
    return out;
}

const rk_cli_conf_format rk_cli_conf_format_nutcracker = {
    .name = "nutcracker",
    .part = "pool",
    .part_optional = 1,
    .setting = "listen",
    .setting_value = "ADDR",
    .setting_default = "127.0.0.1:22121",
    .setting_kept = "listen address",
    .import_about = "a twemproxy pool (the ketama scheme)",
    .import_help =
        "With --nutcracker, prints the ketama topology of pool NAME of the twemproxy (nutcracker)\n"
        "configuration FILE: its key hash, hash tag and servers, each named as twemproxy names it\n"
        "(the configured name, else host for port 11211, else host:port), so the ring is the "
        "pool's,\n"
        "point for point, and its data protocol (\"data\": \"redis\" for redis: true, else\n"
        "\"memcached\").\n"
        "Publish it as it is: no key moves. Refused: distribution modula or random (not a ring), "
        "and\n"
        "auto_eject_hosts: true (the ring changes whenever a server fails; drain with weight 0).\n",
    .import_options = "  --nutcracker FILE  the nutcracker configuration (YAML)\n"
                      "  --pool NAME        the pool (may be left out when FILE has one pool)\n",
    .export_about = "a twemproxy pool (nutcracker, from a ketama topology)",
    .export_usage =
        "ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --file FILE\n"
        "ringkeeper export --format nutcracker --pool NAME [--listen ADDR] --server URL\n"
        "                  --cluster C [--version V]\n"
        "ringkeeper export --format nutcracker --into NUTCRACKER_YML [--pool NAME]\n"
        "                  (--file FILE | --server URL --cluster C [--version V])\n",
    .export_help =
        "With --format nutcracker, prints a twemproxy pool NAME (YAML for nutcracker -c) for a\n"
        "ketama topology. Servers keep the topology's order; a node with weight 0 (draining) is "
        "left\n"
        "out, which leaves every other server's points as they are; a name is written where a "
        "node\n"
        "id is not twemproxy's default name for its addr. A topology whose data is redis exports\n"
        "with redis: true. --into keeps the pool's timeouts, backlog, server_retry_timeout, "
        "comments\n"
        "and the other pools; refused when the pool's hash or hash_tag is not the topology's, or "
        "its\n"
        "redis option not the topology's data.\n",
    .export_options =
        "  --pool NAME     the pool (with --into it may be left out when the file has one pool)\n"
        "  --listen ADDR   the pool's listen address (default 127.0.0.1:22121; not with --into)\n",
    .import = rk_nc_import,
    .export = nc_export,
    .into = nc_into,
};
