/* nutcracker.c — the nutcracker format (format.h): twemproxy (nutcracker) pool configurations to
 * and from ketama topologies, for `ringkeeper import --nutcracker` and `ringkeeper export --format
 * nutcracker [--into]` (docs/KETAMA.md). Reads YAML with libyaml; writes the pool as text. Only
 * what decides where keys go is carried over: the key hash, the hash tag and the servers (weights
 * and names); every other pool option is the operator's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "format.h"
#include "ringkeeper.h" /* RK_MAX_NODES */

#define KETAMA_DEFAULT_PORT 11211 /* twemproxy leaves this port out of a server's name */

static void *fail(char msg[RK_CLI_FORMAT_MSG_MAX], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void *fail(char msg[RK_CLI_FORMAT_MSG_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, RK_CLI_FORMAT_MSG_MAX, fmt, ap);
    va_end(ap);
    return NULL;
}

/* ---- Reading a pool ---- */

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of `key` in mapping `map`, or NULL. */
static yaml_node_t *lookup(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(doc, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* One server entry, "host:port:weight [name]" or "/unix/path:weight [name]", as twemproxy reads
 * it: from the end, so a name has no spaces and a host no colon after the port. */
static json_t *server_node(const char *entry, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", entry) >= (int)sizeof buf)
        return fail(msg, "server \"%.60s...\" is longer than %zu bytes", entry, sizeof buf - 1);
    char *name = strrchr(buf, ' ');
    if (name)
        *name++ = '\0';
    char *weight = strrchr(buf, ':');
    if (!weight || (name && !*name))
        return fail(msg, "server \"%s\" is not host:port:weight [name]", entry);
    *weight++ = '\0';
    char *end;
    long w = strtol(weight, &end, 10);
    if (!*weight || *end || w < 0 || w > 1000000)
        return fail(msg, "server \"%s\": weight \"%s\" is not a whole number", entry, weight);
    const char *addr = buf;
    char id[1024];
    char *port = buf[0] == '/' ? NULL : strrchr(buf, ':');
    if (buf[0] != '/' && !port)
        return fail(msg, "server \"%s\" is not host:port:weight [name]", entry);
    if (name)
        snprintf(id, sizeof id, "%s", name);
    else if (port && strcmp(port + 1, "11211") == 0)
        snprintf(id, sizeof id, "%.*s", (int)(port - buf), buf);
    else
        snprintf(id, sizeof id, "%s", buf);
    return json_pack("{s:s, s:s, s:I}", "id", id, "addr", addr, "weight", (json_int_t)w);
}

static json_t *servers(yaml_document_t *doc, yaml_node_t *seq, const char *pool,
                       char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return fail(msg, "pool \"%s\" has no list of servers", pool);
    json_t *nodes = json_array();
    for (yaml_node_item_t *i = seq->data.sequence.items.start;
         nodes && i < seq->data.sequence.items.top; i++) {
        const char *entry = scalar(yaml_document_get_node(doc, *i));
        json_t *node = entry ? server_node(entry, msg)
                             : fail(msg,
                                    "pool \"%s\": a server is not "
                                    "a string",
                                    pool);
        if (!node || json_array_append_new(nodes, node) != 0) {
            json_decref(nodes);
            return node ? fail(msg, "out of memory") : NULL;
        }
    }
    return nodes;
}

/* Refuses what ringkeeper cannot represent, saying why and what to do instead. */
static int check_pool(yaml_document_t *doc, yaml_node_t *p, const char *pool,
                      char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *dist = scalar(lookup(doc, p, "distribution"));
    if (dist && strcmp(dist, "ketama") != 0) {
        fail(msg,
             "pool \"%s\" uses distribution %s: ringkeeper plans only consistent hashing "
             "(ketama), where a change moves a fraction of the keys; move the pool to ketama "
             "first",
             pool, dist);
        return -1;
    }
    const char *eject = scalar(lookup(doc, p, "auto_eject_hosts"));
    if (eject && strcmp(eject, "true") == 0) {
        fail(msg,
             "pool \"%s\" has auto_eject_hosts: true: twemproxy then rebuilds the ring "
             "whenever a server fails, so no fixed topology describes it; set it to false "
             "and drain a server by publishing it with weight 0",
             pool);
        return -1;
    }
    const char *tag = scalar(lookup(doc, p, "hash_tag"));
    if (tag && strlen(tag) != 2) {
        fail(msg, "pool \"%s\": hash_tag \"%s\" must be two characters", pool, tag);
        return -1;
    }
    return 0;
}

/* `pool`, or when it is NULL the configuration's only pool; NULL with a sentence in msg. */
static const char *pool_name(yaml_document_t *doc, const char *pool,
                             char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (pool)
        return pool;
    if (root->type != YAML_MAPPING_NODE)
        return fail(msg, "the configuration is not a mapping of pools");
    size_t n = (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
    const char *only =
        n == 1 ? scalar(yaml_document_get_node(doc, root->data.mapping.pairs.start->key)) : NULL;
    return only ? only : fail(msg, "the configuration has %zu pools: name one with --pool", n);
}

/* The topology's "data" for pool `p`: twemproxy speaks Redis to its servers with `redis: true`,
 * else memcached (its default). */
static const char *pool_data(yaml_document_t *doc, yaml_node_t *p)
{
    const char *redis = scalar(lookup(doc, p, "redis"));
    return redis && strcmp(redis, "true") == 0 ? "redis" : "memcached";
}

static json_t *pool_topology(yaml_document_t *doc, const char *pool,
                             char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_node_t *p = lookup(doc, yaml_document_get_root_node(doc), pool);
    if (!p || p->type != YAML_MAPPING_NODE)
        return fail(msg, "no pool \"%s\" in the configuration", pool);
    if (check_pool(doc, p, pool, msg) != 0)
        return NULL;
    json_t *nodes = servers(doc, lookup(doc, p, "servers"), pool, msg);
    if (!nodes)
        return NULL;
    const char *hash = scalar(lookup(doc, p, "hash"));
    const char *tag = scalar(lookup(doc, p, "hash_tag"));
    json_t *t = json_pack("{s:s, s:s}", "scheme", "ketama", "hash",
                          hash ? hash : "fnv1a_64"); /* fnv1a_64: twemproxy's default */
    if (t && tag && json_object_set_new(t, "hash_tag", json_string(tag)) != 0)
        json_decref(t), t = NULL;
    if (t && json_object_set_new(t, "data", json_string(pool_data(doc, p))) != 0)
        json_decref(t), t = NULL;
    if (t && json_object_set_new(t, "nodes", nodes) != 0)
        json_decref(t), t = NULL;
    else if (!t)
        json_decref(nodes);
    return t ? t : fail(msg, "out of memory");
}

/* A nutcracker configuration is a mapping of pools, each a mapping of options and a list of
 * servers: a few levels deep, with no use for anchors. libyaml's composer looks anchors up one by
 * one and its scanner walks every open level at each token, so a hostile file cost O(n^2) (100k
 * anchors: 38 s; 200 KB of nested mappings: 56 s). The events are streamed first and counted,
 * and a file past these limits is refused before it is composed. */
#define YAML_DEPTH_MAX   32   /* nested mappings and sequences */
#define YAML_ANCHORS_MAX 1000 /* anchors and aliases together */
/* Values (scalars, mappings, sequences): a pool of the most servers a topology takes, and room for
 * other pools and options. Past it composing alone took seconds and gigabytes (2M servers in 51
 * MB: 9 s, 1.7 GB), for a pool that would be refused anyway. */
#define YAML_VALUES_MAX (2 * RK_MAX_NODES + 100000)

/* Streams the events of `yaml`, stopping at the first limit passed: 0, or -1 with msg set. */
static int check_shape(const char *yaml, size_t len, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, anchors = 0, rc = 1;
    long values = 0;
    if (!yaml_parser_initialize(&parser)) {
        fail(msg, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    while (rc > 0 && yaml_parser_parse(&parser, &ev)) {
        int start = ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT;
        values += start || ev.type == YAML_SCALAR_EVENT;
        depth += start - (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT);
        anchors += ev.type == YAML_ALIAS_EVENT ||
                   (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.anchor) ||
                   (ev.type == YAML_MAPPING_START_EVENT && ev.data.mapping_start.anchor) ||
                   (ev.type == YAML_SEQUENCE_START_EVENT && ev.data.sequence_start.anchor);
        if (depth > YAML_DEPTH_MAX)
            rc = -1, fail(msg,
                          "nested over %d levels deep (line %zu): a nutcracker configuration "
                          "is a few levels deep; refused",
                          YAML_DEPTH_MAX, ev.start_mark.line + 1);
        else if (anchors > YAML_ANCHORS_MAX)
            rc = -1, fail(msg,
                          "over %d anchors and aliases (line %zu): a nutcracker configuration "
                          "needs none; refused",
                          YAML_ANCHORS_MAX, ev.start_mark.line + 1);
        else if (values > YAML_VALUES_MAX)
            rc = -1, fail(msg,
                          "over %d values (line %zu): a pool of ringkeeper's most servers "
                          "(%d) and its options hold fewer; refused",
                          YAML_VALUES_MAX, ev.start_mark.line + 1, RK_MAX_NODES);
        else if (ev.type == YAML_STREAM_END_EVENT)
            rc = 0;
        yaml_event_delete(&ev);
    }
    if (rc > 0) /* the parser failed: load() says where */
        rc = 0;
    yaml_parser_delete(&parser);
    return rc;
}

/* Parses `yaml` into *doc (yaml_document_delete it): 0, or -1 with a sentence in msg. */
static int load(const char *yaml, size_t len, yaml_document_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_parser_t parser;
    if (check_shape(yaml, len, msg) != 0)
        return -1;
    if (!yaml_parser_initialize(&parser)) {
        fail(msg, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    int rc = -1;
    if (!yaml_parser_load(&parser, doc))
        fail(msg, "not YAML: %s at line %zu", parser.problem ? parser.problem : "unreadable",
             parser.problem_mark.line + 1);
    else if (!yaml_document_get_root_node(doc))
        fail(msg, "the configuration is empty"), yaml_document_delete(doc);
    else
        rc = 0;
    yaml_parser_delete(&parser);
    return rc;
}

/* The ketama topology (scheme, hash, hash_tag when set, data, nodes) of pool `pool` (NULL: the
 * configuration's only pool) in the nutcracker configuration `yaml` (len bytes): data "redis" for a
 * pool with `redis: true`, else "memcached" (twemproxy's default). Node ids are the names twemproxy
 * hashes: the configured name, else `host` for port 11211, else `host:port`. Refuses, with a
 * sentence in msg, a pool ringkeeper cannot represent (distribution other than ketama,
 * auto_eject_hosts true) or an unreadable one. No note. */
static json_t *nc_import(const char *yaml, size_t len, const char *pool,
                         char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX])
{
    (void)note;
    yaml_document_t doc;
    if (load(yaml, len, &doc, msg) != 0)
        return NULL;
    const char *name = pool_name(&doc, pool, msg);
    json_t *t = name ? pool_topology(&doc, name, msg) : NULL;
    yaml_document_delete(&doc);
    return t;
}

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
    if (addr[0] != '/' && port && strcmp(port + 1, "11211") == 0)
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
        fail(msg, "node \"%s\": addr \"%s\" is not host:port or a unix socket path", id ? id : "?",
             addr ? addr : "");
        return -1;
    }
    if (w == 0)
        return 1;
    char dflt[512];
    default_name(addr, dflt, sizeof dflt);
    if (strcmp(dflt, id) != 0 && strpbrk(id, " \t")) {
        fail(msg, "node \"%s\": twemproxy names cannot hold spaces", id);
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
            return rc < 0 ? -1 : (fail(msg, "out of memory"), -1);
    }
    return n;
}

/* Refuses a topology that is not of the ketama scheme, which no twemproxy pool routes like. */
static int check_ketama(const json_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, "ketama") == 0)
        return 0;
    fail(msg,
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
        return n < 0 ? NULL : fail(msg, "out of memory");
    }
    if (t.oom) {
        free(t.s);
        return fail(msg, "out of memory");
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
            fail(msg,
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
    fail(msg,
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
        lookup(ydoc, lookup(ydoc, yaml_document_get_root_node(ydoc), name), "servers");
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return fail(msg, "pool \"%s\" has no list of servers", name);
    size_t from = byte_at(yaml, len, seq->start_mark), to;
    int flow = yaml[from] == '[';
    yaml_node_item_t *last = seq->data.sequence.items.top - 1;
    if (flow || last < seq->data.sequence.items.start)
        to = byte_at(yaml, len, seq->end_mark);
    else
        to = byte_at(yaml, len, yaml_document_get_node(ydoc, *last)->end_mark);
    text sep = {0}, list = {0}, out = {0};
    put(&sep, flow ? ", " : "\n%*s- ", (int)seq->start_mark.column, "");
    int n = sep.oom ? -1 : put_servers(&list, doc, sep.s, msg);
    if (n >= 0)
        put(&out, "%.*s%s%s%s%s", (int)from, yaml, flow || !n ? "[" : "- ", n ? list.s : "",
            flow || !n ? "]" : "", yaml + to);
    free(sep.s);
    free(list.s);
    if (n < 0 || sep.oom || list.oom || out.oom) {
        free(out.s);
        return n < 0 ? NULL : fail(msg, "out of memory");
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
    if (check_ketama(doc, msg) != 0 || load(yaml, len, &ydoc, msg) != 0)
        return NULL;
    const char *name = pool_name(&ydoc, pool, msg);
    json_t *have = name ? pool_topology(&ydoc, name, msg) : NULL;
    char *out = have && check_same_hash(have, doc, name, msg) == 0 &&
                        check_same_data(have, doc, name, msg) == 0
                    ? splice_servers(yaml, len, &ydoc, name, doc, msg)
                    : NULL;
    json_decref(have);
    /* read back: the pool must now be the topology's, the rest of the file as it was */
    json_t *now = out ? nc_import(out, strlen(out), name, msg, NULL) : NULL;
    json_t *want = now ? served_nodes(doc) : NULL;
    if (out && (!now || !want || !json_equal(json_object_get(now, "nodes"), want))) {
        if (now && want)
            fail(msg,
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
    .import = nc_import,
    .export = nc_export,
    .into = nc_into,
};
