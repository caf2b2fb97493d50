/* lookup.c — `ringkeeper lookup`: the owner (and replicas) of each key read from stdin. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_REPLICAS 64

static int check_expected(const rk_ring *r, const char *hash, unsigned long long vf)
{
    const rk_topology *t = rk_ring_topology(r);
    const char *has = rk_hash_name(rk_topology_hash(t));
    if (hash && strcmp(hash, has) != 0)
        return rk_cli_fail("lookup", RK_EXIT_REFUSED,
                           "ring refused: it hashes with %s, this application expects %s; routing "
                           "with it would send keys to the wrong nodes",
                           has, hash);
    if (vf && vf != rk_topology_vnode_factor(t))
        return rk_cli_fail("lookup", RK_EXIT_REFUSED,
                           "ring refused: its vnode_factor is %u, this application expects %llu",
                           rk_topology_vnode_factor(t), vf);
    return RK_EXIT_OK;
}

static int route_keys(const rk_ring *r, size_t replicas)
{
    const rk_topology *t = rk_ring_topology(r);
    uint32_t owners[MAX_REPLICAS];
    char *line = NULL;
    size_t cap = 0;
    long len;
    while ((len = rk_cli_next_key(stdin, &line, &cap)) >= 0) {
        size_t got = rk_ring_lookup_replicas(r, line, (size_t)len, owners, replicas);
        fwrite(line, 1, (size_t)len, stdout);
        for (size_t k = 0; k < got; k++)
            printf("\t%s", rk_topology_node(t, owners[k])->id);
        putchar('\n');
    }
    free(line);
    if (ferror(stdin) || fflush(stdout))
        return rk_cli_fail("lookup", RK_EXIT_FAIL, "reading keys or writing results failed");
    return RK_EXIT_OK;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"topology", required_argument, NULL, 't'},
                                         {"replicas", required_argument, NULL, 'r'},
                                         {"expect-hash", required_argument, NULL, 'H'},
                                         {"expect-vnode-factor", required_argument, NULL, 'v'},
                                         {NULL, 0, NULL, 0}};
    const char *file = NULL, *hash = NULL;
    unsigned long long replicas = 1, vf = 0;
    rk_hash_alg alg;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            file = optarg;
            break;
        case 'r':
            if (rk_cli_number(optarg, 1, MAX_REPLICAS, &replicas))
                return rk_cli_fail("lookup", RK_EXIT_USAGE, "--replicas: must be 1..%d, got \"%s\"",
                                   MAX_REPLICAS, optarg);
            break;
        case 'H':
            hash = optarg;
            if (rk_hash_from_name(hash, &alg))
                return rk_cli_fail("lookup", RK_EXIT_USAGE,
                                   "--expect-hash: must be fnv1a_32, md5_32 or xxh3_64, got \"%s\"",
                                   hash);
            break;
        case 'v':
            if (rk_cli_number(optarg, 1, RK_MAX_VNODE_FACTOR, &vf))
                return rk_cli_fail("lookup", RK_EXIT_USAGE,
                                   "--expect-vnode-factor: must be 1..%d, got \"%s\"",
                                   RK_MAX_VNODE_FACTOR, optarg);
            break;
        default:
            return rk_cli_usage(&rk_cli_lookup);
        }
    }
    if (!file || optind != argc)
        return rk_cli_usage(&rk_cli_lookup);
    rk_ring *r = rk_cli_load_ring("lookup", file);
    if (!r)
        return RK_EXIT_USAGE;
    int rc = check_expected(r, hash, vf);
    if (rc == RK_EXIT_OK)
        rc = route_keys(r, (size_t)replicas);
    rk_ring_free(r);
    return rc;
}

const rk_cli_cmd rk_cli_lookup = {
    "lookup", run,
    "usage: ringkeeper lookup --topology FILE [--replicas R] [--expect-hash H]\n"
    "                         [--expect-vnode-factor N] < keys\n"
    "\n"
    "Reads keys from stdin, one a line (the bytes before \\n; an empty line is the empty key), "
    "and\n"
    "prints \"key<TAB>node id\" for each; with --replicas R, the first R distinct nodes "
    "clockwise.\n"
    "\n"
    "  --topology FILE           a topology or a version document (JSON)\n"
    "  --replicas R              1..64 nodes per key (default 1)\n"
    "  --expect-hash H           refuse the ring (exit 3) unless it hashes with H\n"
    "  --expect-vnode-factor N   refuse the ring (exit 3) unless its vnode_factor is N\n"};
