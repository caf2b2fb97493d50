/* envoy_read.c — the envoy format's reader (format.h, envoy.h): an Envoy Cluster and its
 * ClusterLoadAssignment, JSON or YAML (read with libyaml into the same JSON), into a topology of
 * the envoy_ring_hash or maglev scheme, refusing, field by field, what no ring says. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "envoy.h"
#include "ringkeeper.h" /* RK_MAX_NODES */

#define YAML_NODES_MAX 1000000 /* nodes converted at most: aliases cannot blow a file up */
#define YAML_DEPTH_MAX 64

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

/* ---- YAML as JSON ---- */

/* A plain scalar as YAML 1.2's core schema reads it: null, a boolean, a number, else a string. */
static json_t *scalar_json(const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_string(s);
    if (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0)
        return json_null();
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        return json_boolean(s[0] == 't');
    char *end;
    errno = 0;
    long long i = strtoll(s, &end, 10);
    if (!*end && !errno)
        return json_integer((json_int_t)i);
    double d = strtod(s, &end);
    if (!*end && !errno)
        return json_real(d);
    return json_string(s);
}

static json_t *yaml_json(yaml_document_t *d, yaml_node_t *n, int depth, size_t *budget)
{
    if (!n || depth > YAML_DEPTH_MAX || (*budget)-- == 0)
        return NULL;
    if (n->type == YAML_SCALAR_NODE)
        return scalar_json(n);
    json_t *out = n->type == YAML_SEQUENCE_NODE ? json_array() : json_object();
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *i = n->data.sequence.items.start;
             out && i < n->data.sequence.items.top; i++)
            if (json_array_append_new(
                    out, yaml_json(d, yaml_document_get_node(d, *i), depth + 1, budget)) != 0)
                json_decref(out), out = NULL;
        return out;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; out && p < n->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (!k || k->type != YAML_SCALAR_NODE ||
            json_object_set_new(
                out, (const char *)k->data.scalar.value,
                yaml_json(d, yaml_document_get_node(d, p->value), depth + 1, budget)) != 0)
            json_decref(out), out = NULL;
    }
    return out;
}

/* `text` as JSON when it is, else as YAML (a superset, for the files people write); several YAML
 * documents (`---` apart, as kubectl's files) as a list of them. */
static json_t *load(const char *text, size_t len, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (doc)
        return doc;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return fail(msg, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    size_t budget = YAML_NODES_MAX;
    json_t *docs = json_array();
    for (int more = 1; docs && more;) {
        yaml_document_t d;
        if (!yaml_parser_load(&p, &d)) {
            fail(msg, "neither JSON nor YAML: line %zu: %s", p.problem_mark.line + 1,
                 p.problem ? p.problem : "unreadable");
            json_decref(docs), docs = NULL;
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&d);
        json_t *one = root ? yaml_json(&d, root, 0, &budget) : NULL;
        more = root != NULL;
        if (root && (!one || json_array_append_new(docs, one) != 0)) {
            fail(msg, "the YAML is nested deeper than %d or has over %d nodes (aliases counted)",
                 YAML_DEPTH_MAX, YAML_NODES_MAX);
            json_decref(docs), docs = NULL;
        }
        yaml_document_delete(&d);
    }
    yaml_parser_delete(&p);
    if (docs && json_array_size(docs) == 0)
        json_decref(docs), docs = fail(msg, "the file is empty");
    if (docs && json_array_size(docs) == 1) {
        doc = json_incref(json_array_get(docs, 0));
        json_decref(docs);
        return doc;
    }
    return docs;
}

/* ---- Finding the cluster ---- */

static const char *str(const json_t *o, const char *name)
{
    return json_string_value(json_object_get(o, name));
}

/* Whether o is a resource of the xDS type that ends in `type` ("Cluster"), by its "@type", or
 * else by the fields only that type has. */
static int is_type(const json_t *o, const char *type)
{
    const char *t = str(o, "@type");
    if (t) {
        const char *dot = strrchr(t, '.');
        return strcmp(dot ? dot + 1 : t, type) == 0;
    }
    if (strcmp(type, "Cluster") == 0)
        return str(o, "name") && !json_object_get(o, "cluster_name");
    return str(o, "cluster_name") && json_object_get(o, "endpoints");
}

/* The resources of doc: a bootstrap's static_resources.clusters, a list, a `resources` list (a
 * DiscoveryResponse), or doc itself. A borrowed array, or doc. */
static const json_t *resources(const json_t *doc)
{
    const json_t *st = json_object_get(json_object_get(doc, "static_resources"), "clusters");
    if (json_is_array(st))
        return st;
    if (json_is_array(json_object_get(doc, "resources")))
        return json_object_get(doc, "resources");
    return doc;
}

/* The resource of type `type` named `name` by `key` ("name", "cluster_name") among `all` (an
 * array, or one object), or with `name` NULL the only one; *count how many of that type there
 * are. */
static const json_t *find(const json_t *all, const char *type, const char *key, const char *name,
                          size_t *count)
{
    const json_t *found = NULL, *r;
    size_t n = json_is_array(all) ? json_array_size(all) : 1;
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        r = json_is_array(all) ? json_array_get(all, i) : all;
        if (!json_is_object(r) || !is_type(r, type))
            continue;
        (*count)++;
        if (!found && (!name || (str(r, key) && strcmp(str(r, key), name) == 0)))
            found = r;
    }
    return name || *count == 1 ? found : NULL;
}

/* The cluster's load assignment: its own, or the file's ClusterLoadAssignment of its EDS
 * service name (its name when it sets none). */
static const json_t *assignment(const json_t *all, const json_t *cluster)
{
    const json_t *own = json_object_get(cluster, "load_assignment");
    if (json_is_object(own))
        return own;
    const char *service = str(json_object_get(cluster, "eds_cluster_config"), "service_name");
    size_t n;
    return find(all, "ClusterLoadAssignment", "cluster_name",
                service ? service : str(cluster, "name"), &n);
}

/* ---- Numbers as protobuf's JSON writes them ---- */

/* A whole number of field `name` of o: a number, a string of digits (64-bit integers), or a
 * wrapper {"value": n}. 1 and *out when present and whole, 0 when absent, -1 when neither. */
static int whole(const json_t *o, const char *name, long long *out)
{
    const json_t *v = json_object_get(o, name);
    if (json_is_object(v))
        v = json_object_get(v, "value");
    if (!v)
        return 0;
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    char *end;
    const char *s = json_string_value(v);
    errno = 0;
    *out = s ? strtoll(s, &end, 10) : 0;
    return s && *s && !*end && !errno ? 1 : -1;
}

/* ---- The cluster's settings ---- */

/* Refuses what makes the balancer pick by more than the ring: each with its field and why. */
static const char *refused_setting(const json_t *c)
{
    const json_t *common = json_object_get(c, "common_lb_config");
    const json_t *consistent = json_object_get(common, "consistent_hashing_lb_config");
    if (json_object_get(c, "load_balancing_policy"))
        return "load_balancing_policy: a typed policy is not read; write lb_policy RING_HASH or "
               "MAGLEV with its ring_hash_lb_config or maglev_lb_config";
    if (json_object_get(common, "locality_weighted_lb_config"))
        return "common_lb_config.locality_weighted_lb_config: localities weighted apart pick a "
               "locality before the ring";
    if (json_object_get(common, "zone_aware_lb_config"))
        return "common_lb_config.zone_aware_lb_config: zone-aware routing picks a zone before the "
               "ring";
    if (json_object_get(consistent, "hash_balance_factor"))
        return "common_lb_config.consistent_hashing_lb_config.hash_balance_factor: bounded load "
               "moves requests off a loaded host at run time, which no ring says";
    if (json_object_get(c, "lb_subset_config"))
        return "lb_subset_config: subsets pick a subset before the ring";
    return NULL;
}

/* The scheme and its parameters into t, from the cluster's lb_policy and its config. */
static json_t *scheme_of(const json_t *c, const char *name, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *policy = str(c, "lb_policy");
    const char *why = refused_setting(c);
    long long n;
    if (why)
        return fail(msg, "cluster %s: %s", name, why);
    int ring = policy && strcmp(policy, "RING_HASH") == 0;
    if (!ring && !(policy && strcmp(policy, "MAGLEV") == 0))
        return fail(msg,
                    "cluster %s: lb_policy is %s: no ring to read (RING_HASH or MAGLEV are read)",
                    name, policy ? policy : "ROUND_ROBIN (the default)");
    const json_t *cfg = json_object_get(c, ring ? "ring_hash_lb_config" : "maglev_lb_config");
    const char *hash = str(cfg, "hash_function");
    json_t *t = json_pack("{s:s, s:s}", "scheme", ring ? "envoy_ring_hash" : "maglev", "hash",
                          hash && strcmp(hash, "MURMUR_HASH_2") == 0 ? "murmur_hash_2" : "xx_hash");
    if (hash && strcmp(hash, "XX_HASH") != 0 && strcmp(hash, "MURMUR_HASH_2") != 0) {
        json_decref(t);
        return fail(msg,
                    "cluster %s: ring_hash_lb_config.hash_function %.40s: XX_HASH or "
                    "MURMUR_HASH_2",
                    name, hash);
    }
    static const char *const sizes[2][2] = {{"minimum_ring_size", "maximum_ring_size"},
                                            {"table_size", NULL}};
    for (int i = 0; t && i < 2 && sizes[!ring][i]; i++) {
        int got = whole(cfg, sizes[!ring][i], &n);
        if (got < 0 || (got && n < 1)) {
            json_decref(t);
            return fail(msg, "cluster %s: %s is not a whole number above 0", name, sizes[!ring][i]);
        }
        if (got)
            json_object_set_new(t, sizes[!ring][i], json_integer((json_int_t)n));
    }
    const json_t *host = json_object_get(
        json_object_get(json_object_get(c, "common_lb_config"), "consistent_hashing_lb_config"),
        "use_hostname_for_hashing");
    if (t && json_is_true(host))
        json_object_set_new(t, "use_hostname_for_hashing", json_true());
    return t;
}

/* ---- The endpoints ---- */

/* "ip:port" of an endpoint's socket address, "[ip]:port" for IPv6, into out; -1 without one. */
static int address_of(const json_t *e, char *out, size_t size)
{
    const json_t *sa = json_object_get(json_object_get(e, "address"), "socket_address");
    const char *ip = str(sa, "address");
    long long port;
    if (!ip || whole(sa, "port_value", &port) != 1 || port < 1 || port > 65535)
        return -1;
    snprintf(out, size, strchr(ip, ':') ? "[%s]:%lld" : "%s:%lld", ip, port);
    return 0;
}

/* One lb_endpoint as a node: its id the key Envoy hashes (hash_key, else the hostname with
 * use_hostname_for_hashing, else the address). NULL with a sentence. */
static json_t *node_of(const json_t *le, int by_hostname, const char *name,
                       char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const json_t *e = json_object_get(le, "endpoint");
    const char *health = str(le, "health_status");
    const char *key =
        str(json_object_get(json_object_get(json_object_get(le, "metadata"), "filter_metadata"),
                            "envoy.lb"),
            "hash_key");
    char addr[300];
    long long w = 1;
    if (address_of(e, addr, sizeof addr) != 0)
        return fail(msg,
                    "cluster %s: an lb_endpoint has no endpoint.address.socket_address with "
                    "an address and a port_value 1..65535",
                    name);
    if (health && strcmp(health, "UNKNOWN") != 0 && strcmp(health, "HEALTHY") != 0)
        return fail(msg,
                    "cluster %s: endpoint %s: health_status %.20s takes it out of the ring "
                    "at run time; publish the cluster without it, or with weight 0",
                    name, addr, health);
    if (whole(le, "load_balancing_weight", &w) < 0 || w < 1 || w > RK_ENVOY_MAX_WEIGHT)
        return fail(msg, "cluster %s: endpoint %s: load_balancing_weight is 1..%d here", name, addr,
                    RK_ENVOY_MAX_WEIGHT);
    const char *host = str(e, "hostname");
    if (!key && by_hostname && !host)
        return fail(msg,
                    "cluster %s: endpoint %s has no hostname, which "
                    "use_hostname_for_hashing hashes",
                    name, addr);
    const char *id = key ? key : by_hostname ? host : addr;
    return json_pack("{s:s, s:s, s:I}", "id", id, "addr", addr, "weight", (json_int_t)w);
}

/* The nodes of load assignment `la`, in its order: one priority only. */
static json_t *nodes_of(const json_t *la, int by_hostname, const char *name,
                        char msg[RK_CLI_FORMAT_MSG_MAX])
{
    json_t *nodes = json_array();
    const json_t *loc, *le;
    size_t i, j;
    json_array_foreach(json_object_get(la, "endpoints"), i, loc)
    {
        long long priority = 0;
        if (whole(loc, "priority", &priority) != 0 && priority != 0) {
            json_decref(nodes);
            return fail(msg,
                        "cluster %s: endpoints of priority %lld: several priorities fail "
                        "over at run time, which no ring says",
                        name, priority);
        }
        json_array_foreach(json_object_get(loc, "lb_endpoints"), j, le)
        {
            json_t *n = json_array_size(nodes) < RK_MAX_NODES ? node_of(le, by_hostname, name, msg)
                                                              : fail(msg,
                                                                     "cluster %s: over %d "
                                                                     "endpoints",
                                                                     name, RK_MAX_NODES);
            if (!n || json_array_append_new(nodes, n) != 0) {
                json_decref(nodes);
                return NULL;
            }
        }
    }
    if (nodes && !json_array_size(nodes)) {
        json_decref(nodes);
        return fail(msg, "cluster %s: its load assignment lists no endpoint", name);
    }
    return nodes;
}

json_t *rk_envoy_import(const char *text, size_t len, const char *name,
                        char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX])
{
    size_t count;
    json_t *doc = load(text, len, msg);
    const json_t *all = doc ? resources(doc) : NULL;
    const json_t *c = all ? find(all, "Cluster", "name", name, &count) : NULL;
    if (doc && !c && name)
        fail(msg, "no cluster named %s", name);
    else if (doc && !c && count)
        fail(msg, "%zu clusters: name one with --envoy-cluster", count);
    else if (doc && !c)
        fail(msg, "no Cluster (CDS) in the file");
    const json_t *la = c ? assignment(all, c) : NULL;
    if (c && !la)
        fail(msg,
             "cluster %s: no load_assignment, and no ClusterLoadAssignment (EDS) of it in the "
             "file",
             str(c, "name") ? str(c, "name") : "(unnamed)");
    const char *cname = c && str(c, "name") ? str(c, "name") : "(unnamed)";
    json_t *t = la ? scheme_of(c, cname, msg) : NULL;
    json_t *nodes =
        t ? nodes_of(la, json_is_true(json_object_get(t, "use_hostname_for_hashing")), cname, msg)
          : NULL;
    if (nodes)
        json_object_set_new(t, "nodes", nodes);
    else
        json_decref(t), t = NULL;
    if (t && strcmp(str(t, "scheme"), "envoy_ring_hash") == 0)
        snprintf(note, RK_CLI_FORMAT_MSG_MAX,
                 "cluster %s: for proxyless gRPC clients (xDS ring_hash), publish it with "
                 "\"scheme\": \"grpc_ring_hash\" (docs/ENVOY.md)",
                 cname);
    json_decref(doc);
    return t;
}
