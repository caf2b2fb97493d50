/* hash.c — the three hash functions of SPEC section 2, for keys and for ring points. */
#include <string.h>

#include <nettle/md5.h>
#define XXH_INLINE_ALL /* short keys: inlining saves the call and lets the compiler specialise */
#include <xxhash.h>

#include "internal.h"

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

#define FNV_OFFSET 2166136261u
#define FNV_PRIME  16777619u

static const char *const hash_names[] = {"fnv1a_32", "md5_32", "xxh3_64"};

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

/* Out of line, so the other hashes of rk_hash() do not set up its stack frame. */
static NOINLINE uint64_t md5_32(const void *data, size_t len)
{
    struct md5_ctx ctx;
    md5_init(&ctx);
    md5_update(&ctx, len, data);
    return md5_finish(&ctx);
}

uint64_t rk_hash(rk_hash_alg alg, const void *data, size_t len)
{
    switch (alg) {
    case RK_HASH_FNV1A_32:
        return fnv1a_update(FNV_OFFSET, data, len);
    case RK_HASH_MD5_32:
        return md5_32(data, len);
    case RK_HASH_XXH3_64:
        return XXH3_64bits(data, len);
    }
    return 0;
}

const char *rk_hash_name(rk_hash_alg alg)
{
    if ((unsigned)alg >= sizeof hash_names / sizeof hash_names[0])
        return NULL;
    return hash_names[alg];
}

int rk_hash_from_name(const char *name, rk_hash_alg *out)
{
    for (unsigned i = 0; i < sizeof hash_names / sizeof hash_names[0]; i++) {
        if (name && strcmp(name, hash_names[i]) == 0) {
            *out = (rk_hash_alg)i;
            return RK_OK;
        }
    }
    return RK_EINVAL;
}

unsigned rk_hash_bits(rk_hash_alg alg)
{
    return alg == RK_HASH_XXH3_64 ? 64 : 32;
}

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

static void xxh3_points(const char *id, size_t id_len, uint32_t count, uint64_t *out)
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

void rki_hash_points(rk_hash_alg alg, const char *id, size_t id_len, uint32_t count, uint64_t *out)
{
    decimal c = {'0', 1};
    if (alg == RK_HASH_FNV1A_32) {
        uint32_t base = fnv1a_update(FNV_OFFSET, (const unsigned char *)id, id_len);
        base = fnv1a_update(base, (const unsigned char *)"#", 1);
        for (uint32_t i = 0; i < count; i++, decimal_inc(&c)) {
            uint32_t h = base;
            for (unsigned k = 0; k < c.n; k++)
                h = (h ^ digit_at(&c, k)) * FNV_PRIME;
            out[i] = h;
        }
    } else if (alg == RK_HASH_MD5_32) {
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
    } else {
        xxh3_points(id, id_len, count, out);
    }
}
