/* simulate.c — `ringkeeper simulate`: how real keys move and spread between two topologies, read
 * from files or fetched from the server. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct {
    size_t n; /* plan nodes (union of both sides, by id) */
    const rk_plan_node *node;
    uint32_t *map[2];   /* topology node index -> plan node index, before and after */
    uint64_t *count[2]; /* keys per plan node, before and after */
    uint64_t keys, moved;
    /* The classic baseline: node = hash % (nodes of weight > 0), in the topology's order. */
    rk_hash_alg alg;
    uint32_t *owner[2]; /* the plan node index of each node of weight > 0, before and after */
    size_t owners[2];
    uint64_t modulo_moved;
} tally;

/* Plan nodes are sorted by id, so each topology node is found by binary search. */
static uint32_t plan_index(const tally *t, const char *id)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(t->node[mid].id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

static int tally_init(tally *t, const rk_plan *p, const rk_ring *r[2])
{
    t->node = rk_plan_nodes(p, &t->n);
    for (int s = 0; s < 2; s++) {
        const rk_topology *topo = rk_ring_topology(r[s]);
        t->map[s] = malloc(rk_topology_node_count(topo) * sizeof *t->map[s]);
        t->count[s] = calloc(t->n, sizeof *t->count[s]);
        if (!t->map[s] || !t->count[s])
            return -1;
        t->owner[s] = malloc(rk_topology_node_count(topo) * sizeof *t->owner[s]);
        if (!t->owner[s])
            return -1;
        for (size_t k = 0; k < rk_topology_node_count(topo); k++) {
            t->map[s][k] = plan_index(t, rk_topology_node(topo, k)->id);
            if (rk_topology_node(topo, k)->weight > 0)
                t->owner[s][t->owners[s]++] = t->map[s][k];
        }
    }
    t->alg = rk_topology_hash(rk_ring_topology(r[1])); /* the plan refuses two hashes */
    return 0;
}

static void tally_free(tally *t)
{
    for (int s = 0; s < 2; s++)
        free(t->map[s]), free(t->count[s]), free(t->owner[s]);
}

static int count_keys(tally *t, const rk_ring *r[2], FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    long len;
    while ((len = rk_cli_next_key(f, &line, &cap)) >= 0) {
        uint32_t before = t->map[0][rk_ring_lookup(r[0], line, (size_t)len)];
        uint32_t after = t->map[1][rk_ring_lookup(r[1], line, (size_t)len)];
        t->count[0][before]++;
        t->count[1][after]++;
        t->moved += before != after;
        t->keys++;
        if (t->owners[0] && t->owners[1]) {
            uint64_t h = rk_hash(t->alg, line, (size_t)len);
            t->modulo_moved += t->owner[0][h % t->owners[0]] != t->owner[1][h % t->owners[1]];
        }
    }
    free(line);
    return ferror(f) ? -1 : 0;
}

/* Max, average and coldest over the nodes that own points on side s. */
static void side_summary(const tally *t, int s, uint64_t *max, double *avg, size_t *cold)
{
    size_t owners = 0;
    *max = 0, *cold = t->n;
    for (size_t k = 0; k < t->n; k++) {
        double w = s ? t->node[k].weight_after : t->node[k].weight_before;
        if (w == 0)
            continue;
        owners++;
        if (t->count[s][k] > *max)
            *max = t->count[s][k];
        if (*cold == t->n || t->count[s][k] < t->count[s][*cold])
            *cold = k;
    }
    *avg = owners ? (double)t->keys / (double)owners : 0;
}

/* One side's summary: max, average, max/avg and the coldest node. */
static json_t *side_doc(const tally *t, int s)
{
    uint64_t max;
    double avg;
    size_t cold;
    side_summary(t, s, &max, &avg, &cold);
    return json_pack("{s:I, s:f, s:f, s:s}", "max", (json_int_t)max, "avg", avg, "max_avg",
                     avg > 0 ? (double)max / avg : 0.0, "coldest", t->node[cold].id);
}

/* The report as a document: -o json prints it, the table is made from it. */
static json_t *report(const tally *t, const rk_plan *p)
{
    json_t *nodes = json_array();
    for (size_t k = 0; nodes && k < t->n; k++)
        json_array_append_new(nodes, json_pack("{s:s, s:I, s:I}", "id", t->node[k].id,
                                               "keys_before", (json_int_t)t->count[0][k],
                                               "keys_after", (json_int_t)t->count[1][k]));
    return json_pack("{s:I, s:I, s:f, s:f, s:I, s:[I, I], s:o, s:o, s:o*}", "keys",
                     (json_int_t)t->keys, "moved", (json_int_t)t->moved, "plan_moved_fraction",
                     rk_plan_moved_fraction(p), "plan_minimal_fraction",
                     rk_plan_minimal_fraction(p), "modulo_moved", (json_int_t)t->modulo_moved,
                     "modulo_nodes", (json_int_t)t->owners[0], (json_int_t)t->owners[1], "before",
                     side_doc(t, 0), "after", side_doc(t, 1), "nodes", nodes);
}

static json_int_t int_at(const json_t *doc, const char *key)
{
    return json_integer_value(json_object_get(doc, key));
}

static double real_at(const json_t *doc, const char *side, const char *key)
{
    return json_number_value(json_object_get(side ? json_object_get(doc, side) : doc, key));
}

static double percent(json_int_t part, json_int_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* -o table, the default: the totals, both sides' summaries, and the keys per node. */
static int report_table(const json_t *doc)
{
    json_int_t keys = int_at(doc, "keys"), moved = int_at(doc, "moved");
    json_int_t modulo = int_at(doc, "modulo_moved");
    const json_t *owners = json_object_get(doc, "modulo_nodes"),
                 *nodes = json_object_get(doc, "nodes");
    printf("keys     %lld\n", (long long)keys);
    printf("moved    %lld (%.4f%%); the plan moves %.4f%% of the hash space (minimal %.4f%%)\n",
           (long long)moved, percent(moved, keys), 100 * real_at(doc, NULL, "plan_moved_fraction"),
           100 * real_at(doc, NULL, "plan_minimal_fraction"));
    printf(
        "modulo   %lld (%.4f%%) with hash %% nodes instead (%lld -> %lld nodes of weight > 0)\n\n",
        (long long)modulo, percent(modulo, keys),
        (long long)json_integer_value(json_array_get(owners, 0)),
        (long long)json_integer_value(json_array_get(owners, 1)));
    printf("%-8s %16s %16s\n", "", "before", "after");
    printf("%-8s %16lld %16lld\n", "max", (long long)int_at(json_object_get(doc, "before"), "max"),
           (long long)int_at(json_object_get(doc, "after"), "max"));
    printf("%-8s %16.1f %16.1f\n", "avg", real_at(doc, "before", "avg"),
           real_at(doc, "after", "avg"));
    printf("%-8s %16.3f %16.3f\n", "max/avg", real_at(doc, "before", "max_avg"),
           real_at(doc, "after", "max_avg"));
    printf("%-8s %16s %16s\n\n", "coldest",
           json_string_value(json_object_get(json_object_get(doc, "before"), "coldest")),
           json_string_value(json_object_get(json_object_get(doc, "after"), "coldest")));
    printf("%-24s %16s %16s\n", "node", "keys before", "keys after");
    for (size_t k = 0; k < json_array_size(nodes); k++) {
        const json_t *n = json_array_get(nodes, k);
        printf("%-24s %16lld %16lld\n", json_string_value(json_object_get(n, "id")),
               (long long)int_at(n, "keys_before"), (long long)int_at(n, "keys_after"));
    }
    return RK_EXIT_OK;
}

/* The report: a table by default; --quiet: the keys that move. */
static const rk_cli_view view = {"table", report_table, "moved"};

/* Prints the report of the counted keys; returns an exit code. */
static int print_report(const tally *t, const rk_plan *p)
{
    json_t *doc = report(t, p);
    int rc = doc ? rk_cli_print_result("simulate", doc)
                 : rk_cli_fail("simulate", RK_EXIT_FAIL, "out of memory");
    json_decref(doc);
    return rc;
}

int rk_cli_simulate_rings(const char *keys, const rk_ring *r[2])
{
    rk_error err = {0};
    rk_plan *p = rk_plan_new(r[0], r[1], NULL, &err);
    if (!p)
        return rk_cli_fail("simulate", RK_EXIT_USAGE, "%s", err.message);
    tally t = {0};
    int from_stdin = strcmp(keys, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(keys, "rb");
    int rc = RK_EXIT_OK;
    if (from_stdin)
        keys = "stdin";
    if (!f)
        rc = rk_cli_fail("simulate", RK_EXIT_USAGE, "cannot read %s: %s", keys, strerror(errno));
    else if (tally_init(&t, p, r))
        rc = rk_cli_fail("simulate", RK_EXIT_FAIL, "out of memory");
    else if (count_keys(&t, r, f))
        rc = rk_cli_fail("simulate", RK_EXIT_USAGE, "reading %s failed: %s", keys, strerror(errno));
    else
        rc = print_report(&t, p);
    if (f && !from_stdin)
        fclose(f);
    tally_free(&t);
    rk_plan_free(p);
    return rc;
}

typedef struct {
    const char *keys;
    const char *file[2];    /* --from-file, --to-file */
    const char *version[2]; /* --from, --to (server) */
    rk_cli_server server;
} simulate_args;

static int parse_args(const rk_cli_cmd *cmd, int argc, char **argv, simulate_args *a)
{
    const rk_cli_option opts[] = {
        RK_CLI_OPT("keys", RK_CLI_TEXT, &a->keys, .required = 1),
        RK_CLI_OPT("from-file", RK_CLI_TEXT, &a->file[0]),
        RK_CLI_OPT("to-file", RK_CLI_TEXT, &a->file[1]),
        RK_CLI_OPT("from", RK_CLI_VERSION, &a->version[0]),
        RK_CLI_OPT("to", RK_CLI_VERSION, &a->version[1]),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    return rc == RK_EXIT_OK ? rk_cli_two_sides(cmd, a->file, a->version, &a->server) : rc;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    simulate_args a = {0};
    if (parse_args(cmd, argc, argv, &a))
        return RK_EXIT_USAGE;
    rk_ring *r[2] = {NULL, NULL};
    char label[2][64];
    int rc = rk_cli_load_sides("simulate", a.file, a.version, &a.server, r, label);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_simulate_rings(a.keys, (const rk_ring **)r);
    rk_ring_free(r[0]);
    rk_ring_free(r[1]);
    return rc;
}

const rk_cli_cmd rk_cli_simulate = {
    "simulate", run,
    "usage: ringkeeper simulate --keys FILE --from-file A.json --to-file B.json\n"
    "                           [-o json|table] [--quiet]\n"
    "       ringkeeper simulate --keys FILE --server URL --cluster C [--from A] [--to B]\n"
    "                           [-o json|table] [--quiet]\n"
    "\n"
    "Routes every key of FILE (one a line) with both topologies and prints how many keys move, "
    "and\n"
    "per side the per-node key counts, the max, the average, max/avg and the coldest node, next "
    "to\n"
    "the exact moved fraction of the plan; and, for comparison, how many would move if each key\n"
    "went to node hash(key) % N, N the nodes of weight > 0 (the classic modulo scheme).\n"
    "FILE - reads the keys from stdin. --quiet prints only the number of keys that move.\n"
    "\n" RK_CLI_OUTPUT_HELP(
        "table") "  --from-file, --to-file   topologies or version documents (JSON)\n"
                 "  --server URL             fetch versions A and B of cluster C instead (default "
                 "server:\n"
                 "                           $RINGKEEPER_SERVER); --from defaults to the active "
                 "version, --to\n"
                 "                           to the latest\n"
                 "  -c, --cluster C          the cluster (default $RINGKEEPER_CLUSTER)\n"
                 "  --token T                bearer token (default $RINGKEEPER_TOKEN); reads need "
                 "none\n"
                 "  --ca-file FILE           CA certificates for an https server (default "
                 "$RINGKEEPER_CA_FILE)\n"
                 "  --timeout S              " RK_CLI_TIMEOUT_HELP,
    NULL, NULL};
