/* envoy_hash.c — the hashes of Envoy's and gRPC's balancers (docs/ENVOY.md): rki_hash_xx_hash,
 * xxHash64 with seed 0 as Envoy's HashUtil::xxHash64 and grpc-js-xds compute it (libxxhash), and
 * rki_hash_murmur_hash_2, Envoy's MurmurHash::murmurHash2 (source/common/common/hash.cc, a port of
 * libstdc++'s 64-bit std::hash<string>) with its default seed STD_HASH_SEED, 0xc70f6907.
 *
 * Keys only: these schemes place their ring points themselves (scheme/envoy_ring_hash.c). */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal.h"

#define MURMUR_MUL      0xc6a4a7935bd1e995ULL
#define MURMUR_STD_SEED 0xc70f6907ULL
#define XX_HASH_VALUE   48 /* rk_hash_alg values of their own (ringkeeper.h) */
#define MURMUR_2_VALUE  49

static uint64_t key_xx_hash(const void *data, size_t len)
{
    return XXH64(data, len, 0);
}

static inline uint64_t shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

/* Little-endian words, as Envoy reads them on every platform (its unalignedLoad and loadBytes). */
static inline uint64_t load_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    while (n--)
        v = (v << 8) | p[n];
    return v;
}

static uint64_t key_murmur_hash_2(const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t aligned = len & ~(size_t)7;
    uint64_t h = MURMUR_STD_SEED ^ ((uint64_t)len * MURMUR_MUL);
    for (size_t i = 0; i < aligned; i += 8) {
        h ^= shift_mix(load_le(p + i, 8) * MURMUR_MUL) * MURMUR_MUL;
        h *= MURMUR_MUL;
    }
    if (len & 7) {
        h ^= load_le(p + aligned, len & 7);
        h *= MURMUR_MUL;
    }
    return shift_mix(shift_mix(h) * MURMUR_MUL);
}

const rki_hash rki_hash_xx_hash = {(rk_hash_alg)XX_HASH_VALUE, "xx_hash", 64, key_xx_hash, NULL};
const rki_hash rki_hash_murmur_hash_2 = {(rk_hash_alg)MURMUR_2_VALUE, "murmur_hash_2", 64,
                                         key_murmur_hash_2, NULL};
