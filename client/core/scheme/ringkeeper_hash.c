/* ringkeeper_hash.c — the hashes of the ringkeeper scheme (docs/RING.md), for keys and for ring
 * points: rki_hash_fnv1a_32, rki_hash_md5_32 and rki_hash_xxh3_64 (scheme.h).
 *
 * Each hash has two functions here, which its definition at the end hands to everything else:
 *   uint64_t key_<name>(const void *data, size_t len): H(data), for keys;
 *   void points_<name>(const char *id, size_t id_len, uint32_t count, uint64_t *out): the positions
 *     H("<id>#<i>") of a node's points 0..count-1 (scheme/ringkeeper.c). */
#include <stdio.h>
#include <string.h>

#include <nettle/md5.h>
#define XXH_INLINE_ALL /* short keys: inlining saves the call and lets the compiler specialise */
#include <xxhash.h>

#include "internal.h"

#define FNV_OFFSET 2166136261u
#define FNV_PRIME  16777619u

/* Unrolled by four: the multiplications are one chain either way, but a loop a byte at a time
 * spends nearly as many instructions counting as hashing, which leaves the CPU less room to overlap
 * keys. */
static inline uint32_t fnv1a_update(uint32_t h, const unsigned char *p, size_t len)
{
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        h = (h ^ p[i]) * FNV_PRIME;
        h = (h ^ p[i + 1]) * FNV_PRIME;
        h = (h ^ p[i + 2]) * FNV_PRIME;
        h = (h ^ p[i + 3]) * FNV_PRIME;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static inline uint64_t md5_finish(struct md5_ctx *ctx)
{
    uint8_t d[MD5_DIGEST_SIZE];
    md5_digest(ctx, sizeof d, d);
    return (uint64_t)d[0] << 24 | (uint64_t)d[1] << 16 | (uint64_t)d[2] << 8 | d[3];
}

/* ---- key hashes ---- */

static uint64_t key_fnv1a_32(const void *data, size_t len)
{
    return fnv1a_update(FNV_OFFSET, data, len);
}

static uint64_t key_md5_32(const void *data, size_t len)
{
    struct md5_ctx ctx;
    md5_init(&ctx);
    md5_update(&ctx, len, data);
    return md5_finish(&ctx);
}

static uint64_t key_xxh3_64(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

/* ---- ring points ---- */

/* A point index as decimal ASCII held in a register, its first digit in the low byte: one store
 * writes it and no read of it waits for byte stores to land. Eight digits are enough: indexes stay
 * below RK_MAX_VNODE_FACTOR * RK_MAX_WEIGHT = 4096000. */
typedef struct {
    uint64_t d;
    unsigned n;
} decimal;

static inline unsigned digit_at(const decimal *c, unsigned k)
{
    return (unsigned)(c->d >> (8 * k)) & 0xff;
}

static inline void decimal_inc(decimal *c)
{
    unsigned k = c->n;
    while (k > 0 && digit_at(c, k - 1) == '9')
        c->d -= (uint64_t)9 << (8 * --k); /* '9' -> '0', carry on */
    if (k > 0)
        c->d += (uint64_t)1 << (8 * (k - 1));
    else
        c->d = c->d << 8 | '1', c->n++; /* 99..9 -> 100..0 */
}

/* Writes all eight bytes (the name's length bounds what is hashed); compilers make it one store. */
static inline void decimal_put(const decimal *c, char *p)
{
    for (unsigned k = 0; k < 8; k++)
        p[k] = (char)digit_at(c, k);
}

#define BATCH 16 /* xxh3 names written ahead of hashing, so reads never wait for the writes */

static void points_xxh3_64(const char *id, size_t id_len, uint32_t count, uint64_t *out)
{
    char name[BATCH][RK_MAX_ID_BYTES + 1 + 8];
    size_t len[BATCH];
    decimal c = {'0', 1};
    for (size_t j = 0; j < BATCH && j < count; j++) {
        memcpy(name[j], id, id_len);
        name[j][id_len] = '#';
    }
    for (uint32_t i = 0; i < count; i += BATCH) {
        size_t m = count - i < BATCH ? count - i : BATCH;
        for (size_t j = 0; j < m; j++, decimal_inc(&c)) {
            decimal_put(&c, name[j] + id_len + 1);
            len[j] = id_len + 1 + c.n;
        }
        for (size_t j = 0; j < m; j++)
            out[i + j] = XXH3_64bits(name[j], len[j]);
    }
}

static void points_fnv1a_32(const char *id, size_t id_len, uint32_t count, uint64_t *out)
{
    decimal c = {'0', 1};
    uint32_t base = fnv1a_update(FNV_OFFSET, (const unsigned char *)id, id_len);
    base = fnv1a_update(base, (const unsigned char *)"#", 1);
    for (uint32_t i = 0; i < count; i++, decimal_inc(&c)) {
        uint32_t h = base;
        for (unsigned k = 0; k < c.n; k++)
            h = (h ^ digit_at(&c, k)) * FNV_PRIME;
        out[i] = h;
    }
}

static void points_md5_32(const char *id, size_t id_len, uint32_t count, uint64_t *out)
{
    decimal c = {'0', 1};
    struct md5_ctx base, ctx;
    char digits[8];
    md5_init(&base);
    md5_update(&base, id_len, (const uint8_t *)id);
    md5_update(&base, 1, (const uint8_t *)"#");
    for (uint32_t i = 0; i < count; i++, decimal_inc(&c)) {
        ctx = base;
        decimal_put(&c, digits);
        md5_update(&ctx, c.n, (const uint8_t *)digits);
        out[i] = md5_finish(&ctx);
    }
}

/* Values 0..15 are the ringkeeper scheme's (ringkeeper.h). */
const rki_hash rki_hash_fnv1a_32 = {RK_HASH_FNV1A_32, "fnv1a_32", 32, key_fnv1a_32,
                                    points_fnv1a_32};
const rki_hash rki_hash_md5_32 = {RK_HASH_MD5_32, "md5_32", 32, key_md5_32, points_md5_32};
const rki_hash rki_hash_xxh3_64 = {RK_HASH_XXH3_64, "xxh3_64", 64, key_xxh3_64, points_xxh3_64};
