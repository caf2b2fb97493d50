/* simulate.c — `ringkeeper simulate`: how real keys move and spread between two topologies, read
 * from files or fetched from the server. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
        uint32_t w = s ? t->node[k].weight_after : t->node[k].weight_before;
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

static void report(const tally *t, const rk_plan *p)
{
    uint64_t max[2];
    double avg[2];
    size_t cold[2];
    side_summary(t, 0, &max[0], &avg[0], &cold[0]);
    side_summary(t, 1, &max[1], &avg[1], &cold[1]);
    printf("keys     %llu\n", (unsigned long long)t->keys);
    printf("moved    %llu (%.4f%%); the plan moves %.4f%% of the hash space (minimal %.4f%%)\n",
           (unsigned long long)t->moved, t->keys ? 100.0 * (double)t->moved / (double)t->keys : 0.0,
           100 * rk_plan_moved_fraction(p), 100 * rk_plan_minimal_fraction(p));
    printf("modulo   %llu (%.4f%%) with hash %% nodes instead (%zu -> %zu nodes of weight > 0)\n\n",
           (unsigned long long)t->modulo_moved,
           t->keys ? 100.0 * (double)t->modulo_moved / (double)t->keys : 0.0, t->owners[0],
           t->owners[1]);
    printf("%-8s %16s %16s\n", "", "before", "after");
    printf("%-8s %16llu %16llu\n", "max", (unsigned long long)max[0], (unsigned long long)max[1]);
    printf("%-8s %16.1f %16.1f\n", "avg", avg[0], avg[1]);
    printf("%-8s %16.3f %16.3f\n", "max/avg", avg[0] > 0 ? (double)max[0] / avg[0] : 0.0,
           avg[1] > 0 ? (double)max[1] / avg[1] : 0.0);
    printf("%-8s %16s %16s\n\n", "coldest", t->node[cold[0]].id, t->node[cold[1]].id);
    printf("%-24s %16s %16s\n", "node", "keys before", "keys after");
    for (size_t k = 0; k < t->n; k++)
        printf("%-24s %16llu %16llu\n", t->node[k].id, (unsigned long long)t->count[0][k],
               (unsigned long long)t->count[1][k]);
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
        report(&t, p);
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
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    return rc == RK_EXIT_OK ? rk_cli_two_sides(cmd, a->file, a->version, &a->server) : rc;
}

/* Both rings from the files, or from the server (from: the active version, to: the latest). */
static int load_rings(simulate_args *a, rk_ring *r[2])
{
    static const rk_cli_default_version dflt[2] = {RK_CLI_ACTIVE, RK_CLI_LATEST};
    if (a->file[0]) {
        r[0] = rk_cli_load_ring("simulate", a->file[0]);
        r[1] = r[0] ? rk_cli_load_ring("simulate", a->file[1]) : NULL;
        return r[1] ? RK_EXIT_OK : RK_EXIT_USAGE;
    }
    int rc = rk_cli_server_check("simulate", &a->server);
    for (int s = 0; s < 2 && rc == RK_EXIT_OK; s++)
        r[s] = rk_cli_fetch_ring("simulate", &a->server, a->version[s], dflt[s], &rc);
    return rc;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    simulate_args a = {0};
    if (parse_args(cmd, argc, argv, &a))
        return RK_EXIT_USAGE;
    rk_ring *r[2] = {NULL, NULL};
    int rc = load_rings(&a, r);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_simulate_rings(a.keys, (const rk_ring **)r);
    rk_ring_free(r[0]);
    rk_ring_free(r[1]);
    return rc;
}

const rk_cli_cmd rk_cli_simulate = {
    "simulate", run,
    "usage: ringkeeper simulate --keys FILE --from-file A.json --to-file B.json\n"
    "       ringkeeper simulate --keys FILE --server URL --cluster C [--from A] [--to B]\n"
    "\n"
    "Routes every key of FILE (one a line) with both topologies and prints how many keys move, "
    "and\n"
    "per side the per-node key counts, the max, the average, max/avg and the coldest node, next "
    "to\n"
    "the exact moved fraction of the plan; and, for comparison, how many would move if each key\n"
    "went to node hash(key) % N, N the nodes of weight > 0 (the classic modulo scheme).\n"
    "FILE - reads the keys from stdin.\n"
    "\n"
    "  --from-file, --to-file   topologies or version documents (JSON)\n"
    "  --server URL             fetch versions A and B of cluster C instead (default server:\n"
    "                           $RINGKEEPER_SERVER); --from defaults to the active version, --to\n"
    "                           to the latest\n"
    "  --cluster C              the cluster\n"
    "  --token T                bearer token (default $RINGKEEPER_TOKEN); reads need none\n"
    "  --ca-file FILE           CA certificates for an https server (default "
    "$RINGKEEPER_CA_FILE)\n"
    "  --timeout S              " RK_CLI_TIMEOUT_HELP,
    NULL, NULL};
