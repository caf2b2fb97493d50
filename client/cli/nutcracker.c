/* nutcracker.c — twemproxy pools to and from ketama topologies (nutcracker.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "nutcracker.h"

#define KETAMA_DEFAULT_PORT 11211 /* twemproxy leaves this port out of a server's name */

static void *fail(char msg[RK_NC_MSG_MAX], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void *fail(char msg[RK_NC_MSG_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, RK_NC_MSG_MAX, fmt, ap);
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
static json_t *server_node(const char *entry, char msg[RK_NC_MSG_MAX])
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
                       char msg[RK_NC_MSG_MAX])
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
                      char msg[RK_NC_MSG_MAX])
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

static json_t *pool_topology(yaml_document_t *doc, const char *pool, char msg[RK_NC_MSG_MAX])
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
    if (t && json_object_set_new(t, "nodes", nodes) != 0)
        json_decref(t), t = NULL;
    else if (!t)
        json_decref(nodes);
    return t ? t : fail(msg, "out of memory");
}

json_t *rk_nc_import(const char *yaml, size_t len, const char *pool, char msg[RK_NC_MSG_MAX])
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return fail(msg, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    json_t *t = NULL;
    if (!yaml_parser_load(&parser, &doc))
        fail(msg, "not YAML: %s at line %zu", parser.problem ? parser.problem : "unreadable",
             parser.problem_mark.line + 1);
    else if (!yaml_document_get_root_node(&doc))
        fail(msg, "the configuration is empty"), yaml_document_delete(&doc);
    else
        t = pool_topology(&doc, pool, msg), yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
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

static int put_server(text *t, const json_t *node, char msg[RK_NC_MSG_MAX])
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
        return 0;
    char dflt[512];
    default_name(addr, dflt, sizeof dflt);
    if (strcmp(dflt, id) != 0 && strpbrk(id, " \t")) {
        fail(msg, "node \"%s\": twemproxy names cannot hold spaces", id);
        return -1;
    }
    char entry[1024];
    snprintf(entry, sizeof entry, "%s:%lld%s%s", addr, (long long)w,
             strcmp(dflt, id) != 0 ? " " : "", strcmp(dflt, id) != 0 ? id : "");
    put(t, "    - ");
    put_quoted(t, entry);
    put(t, "\n");
    return 0;
}

char *rk_nc_export(const json_t *doc, const char *pool, const char *listen, char msg[RK_NC_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (!scheme || strcmp(scheme, "ketama") != 0)
        return fail(msg,
                    "only a ketama topology (\"scheme\": \"ketama\") routes like a "
                    "twemproxy pool; this one uses the %s scheme",
                    scheme ? scheme : "ringkeeper");
    const char *hash = json_string_value(json_object_get(doc, "hash"));
    const char *tag = json_string_value(json_object_get(doc, "hash_tag"));
    const json_t *nodes = json_object_get(doc, "nodes");
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
    put(&t, "  servers:\n");
    size_t i;
    const json_t *node;
    json_array_foreach(nodes, i, node)
    {
        if (put_server(&t, node, msg) != 0) {
            free(t.s);
            return NULL;
        }
    }
    if (t.oom) {
        free(t.s);
        return fail(msg, "out of memory");
    }
    return t.s;
}
