/* nutcracker_read.c — the nutcracker format's reader (format.h, nutcracker.h): a twemproxy pool
 * read with libyaml into a ketama topology, for `ringkeeper import --nutcracker` and for the
 * writer's in-place rewrite (nutcracker.c), which checks the pool it rewrites against it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "nutcracker.h"
#include "ringkeeper.h" /* RK_MAX_NODES */

void *rk_nc_fail(char msg[RK_CLI_FORMAT_MSG_MAX], const char *fmt, ...)
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

yaml_node_t *rk_nc_lookup(yaml_document_t *doc, yaml_node_t *map, const char *key)
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
        return rk_nc_fail(msg, "server \"%.60s...\" is longer than %zu bytes", entry,
                          sizeof buf - 1);
    char *name = strrchr(buf, ' ');
    if (name)
        *name++ = '\0';
    char *weight = strrchr(buf, ':');
    if (!weight || (name && !*name))
        return rk_nc_fail(msg, "server \"%s\" is not host:port:weight [name]", entry);
    *weight++ = '\0';
    char *end;
    long w = strtol(weight, &end, 10);
    if (!*weight || *end || w < 0 || w > 1000000)
        return rk_nc_fail(msg, "server \"%s\": weight \"%s\" is not a whole number", entry, weight);
    const char *addr = buf;
    char id[1024];
    char *port = buf[0] == '/' ? NULL : strrchr(buf, ':');
    if (buf[0] != '/' && !port)
        return rk_nc_fail(msg, "server \"%s\" is not host:port:weight [name]", entry);
    if (name)
        snprintf(id, sizeof id, "%s", name);
    else if (port && strcmp(port + 1, RK_NC_DEFAULT_PORT) == 0)
        snprintf(id, sizeof id, "%.*s", (int)(port - buf), buf);
    else
        snprintf(id, sizeof id, "%s", buf);
    return json_pack("{s:s, s:s, s:I}", "id", id, "addr", addr, "weight", (json_int_t)w);
}

static json_t *servers(yaml_document_t *doc, yaml_node_t *seq, const char *pool,
                       char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return rk_nc_fail(msg, "pool \"%s\" has no list of servers", pool);
    json_t *nodes = json_array();
    for (yaml_node_item_t *i = seq->data.sequence.items.start;
         nodes && i < seq->data.sequence.items.top; i++) {
        const char *entry = scalar(yaml_document_get_node(doc, *i));
        json_t *node = entry ? server_node(entry, msg)
                             : rk_nc_fail(msg,
                                          "pool \"%s\": a server is not "
                                          "a string",
                                          pool);
        if (!node || json_array_append_new(nodes, node) != 0) {
            json_decref(nodes);
            return node ? rk_nc_fail(msg, "out of memory") : NULL;
        }
    }
    return nodes;
}

/* Refuses what ringkeeper cannot represent, saying why and what to do instead. */
static int check_pool(yaml_document_t *doc, yaml_node_t *p, const char *pool,
                      char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *dist = scalar(rk_nc_lookup(doc, p, "distribution"));
    if (dist && strcmp(dist, "ketama") != 0) {
        rk_nc_fail(msg,
                   "pool \"%s\" uses distribution %s: ringkeeper plans only consistent hashing "
                   "(ketama), where a change moves a fraction of the keys; move the pool to ketama "
                   "first",
                   pool, dist);
        return -1;
    }
    const char *eject = scalar(rk_nc_lookup(doc, p, "auto_eject_hosts"));
    if (eject && strcmp(eject, "true") == 0) {
        rk_nc_fail(msg,
                   "pool \"%s\" has auto_eject_hosts: true: twemproxy then rebuilds the ring "
                   "whenever a server fails, so no fixed topology describes it; set it to false "
                   "and drain a server by publishing it with weight 0",
                   pool);
        return -1;
    }
    const char *tag = scalar(rk_nc_lookup(doc, p, "hash_tag"));
    if (tag && strlen(tag) != 2) {
        rk_nc_fail(msg, "pool \"%s\": hash_tag \"%s\" must be two characters", pool, tag);
        return -1;
    }
    return 0;
}

const char *rk_nc_pool_name(yaml_document_t *doc, const char *pool, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (pool)
        return pool;
    if (root->type != YAML_MAPPING_NODE)
        return rk_nc_fail(msg, "the configuration is not a mapping of pools");
    size_t n = (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
    const char *only =
        n == 1 ? scalar(yaml_document_get_node(doc, root->data.mapping.pairs.start->key)) : NULL;
    return only ? only
                : rk_nc_fail(msg, "the configuration has %zu pools: name one with --pool", n);
}

/* The topology's "data" for pool `p`: twemproxy speaks Redis to its servers with `redis: true`,
 * else memcached (its default). */
static const char *pool_data(yaml_document_t *doc, yaml_node_t *p)
{
    const char *redis = scalar(rk_nc_lookup(doc, p, "redis"));
    return redis && strcmp(redis, "true") == 0 ? "redis" : "memcached";
}

json_t *rk_nc_pool_topology(yaml_document_t *doc, const char *pool, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_node_t *p = rk_nc_lookup(doc, yaml_document_get_root_node(doc), pool);
    if (!p || p->type != YAML_MAPPING_NODE)
        return rk_nc_fail(msg, "no pool \"%s\" in the configuration", pool);
    if (check_pool(doc, p, pool, msg) != 0)
        return NULL;
    json_t *nodes = servers(doc, rk_nc_lookup(doc, p, "servers"), pool, msg);
    if (!nodes)
        return NULL;
    const char *hash = scalar(rk_nc_lookup(doc, p, "hash"));
    const char *tag = scalar(rk_nc_lookup(doc, p, "hash_tag"));
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
    return t ? t : rk_nc_fail(msg, "out of memory");
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
        rk_nc_fail(msg, "out of memory");
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
            rc = -1, rk_nc_fail(msg,
                                "nested over %d levels deep (line %zu): a nutcracker configuration "
                                "is a few levels deep; refused",
                                YAML_DEPTH_MAX, ev.start_mark.line + 1);
        else if (anchors > YAML_ANCHORS_MAX)
            rc = -1,
            rk_nc_fail(msg,
                       "over %d anchors and aliases (line %zu): a nutcracker configuration "
                       "needs none; refused",
                       YAML_ANCHORS_MAX, ev.start_mark.line + 1);
        else if (values > YAML_VALUES_MAX)
            rc = -1, rk_nc_fail(msg,
                                "over %d values (line %zu): a pool of ringkeeper's most servers "
                                "(%d) and its options hold fewer; refused",
                                YAML_VALUES_MAX, ev.start_mark.line + 1, RK_MAX_NODES);
        else if (ev.type == YAML_STREAM_END_EVENT)
            rc = 0;
        yaml_event_delete(&ev);
    }
    if (rc > 0) /* the parser failed: rk_nc_load() says where */
        rc = 0;
    yaml_parser_delete(&parser);
    return rc;
}

int rk_nc_load(const char *yaml, size_t len, yaml_document_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    yaml_parser_t parser;
    if (check_shape(yaml, len, msg) != 0)
        return -1;
    if (!yaml_parser_initialize(&parser)) {
        rk_nc_fail(msg, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    int rc = -1;
    if (!yaml_parser_load(&parser, doc))
        rk_nc_fail(msg, "not YAML: %s at line %zu", parser.problem ? parser.problem : "unreadable",
                   parser.problem_mark.line + 1);
    else if (!yaml_document_get_root_node(doc))
        rk_nc_fail(msg, "the configuration is empty"), yaml_document_delete(doc);
    else
        rc = 0;
    yaml_parser_delete(&parser);
    return rc;
}

json_t *rk_nc_import(const char *yaml, size_t len, const char *pool,
                     char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX])
{
    (void)note;
    yaml_document_t doc;
    if (rk_nc_load(yaml, len, &doc, msg) != 0)
        return NULL;
    const char *name = rk_nc_pool_name(&doc, pool, msg);
    json_t *t = name ? rk_nc_pool_topology(&doc, name, msg) : NULL;
    yaml_document_delete(&doc);
    return t;
}
