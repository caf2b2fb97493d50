/* envoy.c — the envoy format (format.h): an Envoy Cluster (CDS) and its ClusterLoadAssignment
 * (EDS) for `ringkeeper import --envoy` (envoy_read.c) and `ringkeeper export --format envoy`,
 * which writes them from a topology of the envoy_ring_hash, grpc_ring_hash or maglev scheme with
 * each endpoint's hash_key its node id, so that a node readdressed moves nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envoy.h"

#define TYPE_PREFIX "type.googleapis.com/envoy.config."

static const char *str(const json_t *o, const char *name)
{
    return json_string_value(json_object_get(o, name));
}

/* {"socket_address": {"address", "port_value"}} of "host:port" or "[ip]:port"; NULL when addr is
 * neither. */
static json_t *socket_of(const char *addr)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr)
        return NULL;
    size_t n = (size_t)(colon - addr);
    if (addr[0] == '[' && addr[n - 1] == ']')
        addr++, n -= 2;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (n >= sizeof host || *end || port < 1 || port > 65535)
        return NULL;
    snprintf(host, sizeof host, "%.*s", (int)n, addr);
    return json_pack("{s:{s:s, s:i}}", "socket_address", "address", host, "port_value", (int)port);
}

/* The ClusterLoadAssignment of `doc`'s nodes for cluster `name`: weight 0 left out (Envoy
 * takes 1 and up), hash_key the node id. NULL with a sentence. */
static json_t *assignment(const json_t *doc, const char *name, int by_hostname,
                          char msg[RK_CLI_FORMAT_MSG_MAX])
{
    json_t *lbs = json_array(), *node;
    size_t i;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        json_int_t w = json_integer_value(json_object_get(node, "weight"));
        json_t *sa = socket_of(str(node, "addr") ? str(node, "addr") : "");
        if (!sa) {
            snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "node %s: addr %s is not host:port",
                     str(node, "id"), str(node, "addr") ? str(node, "addr") : "(none)");
            json_decref(lbs);
            return NULL;
        }
        json_t *e = json_pack("{s:o}", "address", sa);
        if (e && by_hostname)
            json_object_set_new(e, "hostname", json_string(str(node, "id")));
        if (w > 0)
            json_array_append_new(lbs, json_pack("{s:o, s:I, s:{s:{s:{s:s}}}}", "endpoint", e,
                                                 "load_balancing_weight", w, "metadata",
                                                 "filter_metadata", "envoy.lb", "hash_key",
                                                 str(node, "id")));
        else
            json_decref(e);
    }
    return json_pack("{s:s, s:s, s:[{s:o}]}", "@type",
                     TYPE_PREFIX "endpoint.v3.ClusterLoadAssignment", "cluster_name", name,
                     "endpoints", "lb_endpoints", lbs);
}

/* The Cluster of `doc`'s scheme and parameters, named `name`, of type `type` (STATIC: its load
 * assignment inline; EDS: served apart). NULL with a sentence. */
static json_t *cluster(const json_t *doc, const char *name, const char *type,
                       char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *scheme = str(doc, "scheme") ? str(doc, "scheme") : "ringkeeper";
    int maglev = strcmp(scheme, "maglev") == 0;
    if (!maglev && strcmp(scheme, "envoy_ring_hash") != 0 &&
        strcmp(scheme, "grpc_ring_hash") != 0) {
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
                 "the topology is of the %s scheme, which Envoy does not route by: "
                 "envoy_ring_hash, grpc_ring_hash or maglev are written",
                 scheme);
        return NULL;
    }
    json_t *cfg = json_object();
    static const char *const sizes[] = {"minimum_ring_size", "maximum_ring_size", "table_size"};
    for (size_t i = maglev ? 2 : 0; i < (maglev ? 3u : 2u); i++)
        if (json_object_get(doc, sizes[i]))
            json_object_set(cfg, sizes[i], json_object_get(doc, sizes[i]));
    if (!maglev)
        json_object_set_new(
            cfg, "hash_function",
            json_string(str(doc, "hash") && strcmp(str(doc, "hash"), "murmur_hash_2") == 0
                            ? "MURMUR_HASH_2"
                            : "XX_HASH"));
    json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "@type",
                          TYPE_PREFIX "cluster.v3.Cluster", "name", name, "connect_timeout", "1s",
                          "type", type, "lb_policy", maglev ? "MAGLEV" : "RING_HASH",
                          maglev ? "maglev_lb_config" : "ring_hash_lb_config", cfg);
    if (c && json_is_true(json_object_get(doc, "use_hostname_for_hashing")))
        json_object_set_new(
            c, "common_lb_config",
            json_pack("{s:{s:b}}", "consistent_hashing_lb_config", "use_hostname_for_hashing", 1));
    if (c && strcmp(type, "EDS") == 0)
        json_object_set_new(
            c, "eds_cluster_config",
            json_pack("{s:{s:{}}, s:s}", "eds_config", "ads", "service_name", name));
    return c;
}

/* STATIC: one Cluster with its load_assignment; EDS: {"resources": [Cluster, its assignment]}. */
static char *envoy_export(const json_t *doc, const char *name, const char *type,
                          char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (strcmp(type, "STATIC") != 0 && strcmp(type, "EDS") != 0) {
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "--cluster-type %s: STATIC or EDS", type);
        return NULL;
    }
    json_t *c = cluster(doc, name, type, msg);
    json_t *la = c ? assignment(doc, name,
                                json_is_true(json_object_get(doc, "use_hostname_for_hashing")), msg)
                   : NULL;
    json_t *out = NULL;
    if (la && strcmp(type, "STATIC") == 0) {
        json_object_del(la, "@type");
        json_object_set_new(c, "load_assignment", la);
        out = c, c = NULL;
    } else if (la) {
        out = json_pack("{s:[o, o]}", "resources", c, la);
        c = NULL;
    }
    json_decref(c);
    char *text = out ? json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(out);
    if (!text && out)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *nl = realloc(text, n + 2); /* a file ends with a newline */
    if (!nl) {
        free(text);
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
        return NULL;
    }
    memcpy(nl + n, "\n", 2);
    return nl;
}

static char *envoy_into(const char *text, size_t len, const char *part, const json_t *doc,
                        char chosen[RK_CLI_FORMAT_MSG_MAX], char msg[RK_CLI_FORMAT_MSG_MAX])
{
    (void)text, (void)len, (void)part, (void)doc, (void)chosen;
    snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
             "--into is not for --format envoy: a control plane serves the Cluster and its "
             "ClusterLoadAssignment; export prints them to hand to it");
    return NULL;
}

const rk_cli_conf_format rk_cli_conf_format_envoy = {
    .name = "envoy",
    .part = "envoy-cluster",
    .part_optional = 1,
    .setting = "cluster-type",
    .setting_value = "STATIC|EDS",
    .setting_default = "STATIC",
    .setting_kept = "type",
    .import_about = "an Envoy cluster (the envoy_ring_hash or maglev scheme)",
    .import_help =
        "With --envoy, prints the topology of Envoy cluster NAME (the file's only one when\n"
        "--envoy-cluster is left out) read from FILE, JSON or YAML: a Cluster (CDS) with its\n"
        "load_assignment, or with its ClusterLoadAssignment (EDS) beside it in a list, a\n"
        "\"resources\" list or a bootstrap's static_resources. lb_policy RING_HASH gives the\n"
        "envoy_ring_hash scheme, MAGLEV maglev, with their sizes; each endpoint is a node whose "
        "id\n"
        "is the key Envoy hashes (its envoy.lb hash_key, else its hostname with\n"
        "use_hostname_for_hashing, else ip:port). Refused, naming the field: another lb_policy,\n"
        "typed load_balancing_policy, locality weighting, zone-aware routing, subsets, bounded\n"
        "load (hash_balance_factor), several priorities, a health_status other than HEALTHY or\n"
        "UNKNOWN, weights over 1000.\n",
    .import_options =
        "  --envoy FILE             an Envoy Cluster and its endpoints (JSON or YAML) ...\n"
        "  --envoy-cluster NAME     ... and the cluster (optional when FILE has one)\n",
    .export_about = "an Envoy cluster (envoy)",
    .export_usage =
        "ringkeeper export --format envoy [--envoy-cluster NAME] [--cluster-type STATIC|EDS]\n"
        "                  (--file FILE | --server URL --cluster C [--version V])\n",
    .export_help =
        "With --format envoy, prints the Envoy Cluster NAME of a topology of the\n"
        "envoy_ring_hash, grpc_ring_hash or maglev scheme: lb_policy\n"
        "and its ring or table sizes, and its endpoints with each node id as their envoy.lb\n"
        "hash_key (a node readdressed moves nothing); STATIC (default) writes the endpoints as\n"
        "its load_assignment, EDS writes {\"resources\": [Cluster, ClusterLoadAssignment]} for a\n"
        "control plane to serve. A node of weight 0 is left out (Envoy takes 1 and up).\n",
    .export_options = "  --envoy-cluster NAME    the Envoy cluster's name\n"
                      "  --cluster-type T        STATIC (the default) or EDS\n",
    .import = rk_envoy_import,
    .export = envoy_export,
    .into = envoy_into,
};
