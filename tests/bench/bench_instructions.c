/* bench_instructions.c: one ring build and LOOKUPS lookups, for counting instructions under
 * callgrind (tests/bench/ab_instructions.sh): unlike times, counts do not move with the machine's
 * load, so two builds of the library compare exactly.
 *
 * bench_instructions HASH NODES VNODE_FACTOR LOOKUPS: a ringkeeper topology of NODES nodes of
 * weight 1 hashed by HASH (its name), its ring, then LOOKUPS lookups of "key:%08d". Prints the sum
 * of the owners (so that no lookup is dead code); exit 1 on a refused topology, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>

#include "ringkeeper.h"

#define ID_MAX 32

int main(int argc, char **argv)
{
    rk_hash_alg alg;
    if (argc != 5 || rk_hash_from_name(argv[1], &alg) != RK_OK) {
        fprintf(stderr, "usage: bench_instructions HASH NODES VNODE_FACTOR LOOKUPS\n");
        return 2;
    }
    long nodes = atol(argv[2]), vf = atol(argv[3]), lookups = atol(argv[4]);
    rk_node *n = calloc(nodes > 0 ? (size_t)nodes : 1, sizeof *n);
    char(*names)[2][ID_MAX] = calloc(nodes > 0 ? (size_t)nodes : 1, sizeof *names);
    for (long i = 0; n && names && i < nodes; i++) {
        snprintf(names[i][0], ID_MAX, "node-%ld", i);
        snprintf(names[i][1], ID_MAX, "10.0.%ld.%ld:11211", i / 256, i % 256);
        n[i] = (rk_node){names[i][0], names[i][1], 1};
    }
    rk_error err = {0};
    rk_topology *t =
        n && names ? rk_topology_new(alg, (uint32_t)vf, n, (size_t)nodes, NULL, &err) : NULL;
    rk_ring *r = t ? rk_ring_build(t, &err) : NULL;
    unsigned long sum = 0;
    char key[32];
    for (long i = 0; r && i < lookups; i++) {
        int len = snprintf(key, sizeof key, "key:%08ld", i);
        sum += rk_ring_lookup(r, key, (size_t)len);
    }
    if (r)
        printf("%lu\n", sum);
    else
        fprintf(stderr, "bench_instructions: %s\n", err.message);
    rk_ring_free(r);
    rk_topology_free(t);
    free(n), free(names);
    return r ? 0 : 1;
}
