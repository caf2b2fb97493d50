/* hash.c — the hashes of docs/RING.md (the rows of RK_HASH_MAP in ringkeeper.h), for keys and for
 * ring points.
 *
 * Each hash `name` of RK_HASH_MAP has two functions here, which everything else reaches through the
 * switches and the table that RK_HASH_MAP generates below:
 *   uint64_t key_<name>(const void *data, size_t len): H(data), for keys (rk_hash);
 *   void points_<name>(const char *id, size_t id_len, uint32_t count, uint64_t *out): the positions
 *     H("<id>#<i>") of a node's points 0..count-1 (the ringkeeper scheme, scheme/ringkeeper.c). */
#include <stdio.h>
#include <string.h>

#include <nettle/md5.h>
#define XXH_INLINE_ALL /* short keys: inlining saves the call and lets the compiler specialise */
#include <xxhash.h>

#include "internal.h"
#include "ketama_hash.h"

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

#define FNV_OFFSET 2166136261u
#define FNV_PRIME  16777619u

/* Name and bits of every hash, indexed by rk_hash_alg; which scheme may name which is the
 * schemes' own (rki_scheme.hashes). */
static const struct {
    const char *name; /* as in topologies; NULL for a value no hash has */
    unsigned bits;    /* the hash space is 2^bits */
} hashes[] = {
#define HASH_ROW_(suffix, name, value, bits) [value] = {#name, bits},
    RK_HASH_MAP(HASH_ROW_)
#undef HASH_ROW_
#define KETAMA_ROW_(suffix, name, value) [value] = {#name, 32},
        RK_KETAMA_HASH_MAP(KETAMA_ROW_) RK_HAPROXY_HASH_MAP(KETAMA_ROW_)
#undef KETAMA_ROW_
};

#define N_HASHES (sizeof hashes / sizeof hashes[0])

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

static inline uint64_t key_fnv1a_32(const void *data, size_t len)
{
    return fnv1a_update(FNV_OFFSET, data, len);
}

/* Out of line, so the other hashes of rk_hash() do not set up its stack frame. */
static NOINLINE uint64_t key_md5_32(const void *data, size_t len)
{
    struct md5_ctx ctx;
    md5_init(&ctx);
    md5_update(&ctx, len, data);
    return md5_finish(&ctx);
}

static inline uint64_t key_xxh3_64(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

uint64_t rk_hash(rk_hash_alg alg, const void *data, size_t len)
{
    switch (alg) {
#define HASH_CASE_(suffix, name, value, bits)                                                      \
    case RK_HASH_##suffix:                                                                         \
        return key_##name(data, len);
        RK_HASH_MAP(HASH_CASE_)
#undef HASH_CASE_
#define KETAMA_CASE_(suffix, name, value)                                                          \
    case RK_HASH_##suffix:                                                                         \
        return rki_kh_##name(data, len);
        RK_KETAMA_HASH_MAP(KETAMA_CASE_)
#undef KETAMA_CASE_
#define HAPROXY_CASE_(suffix, name, value)                                                         \
    case RK_HASH_##suffix:                                                                         \
        return rki_hp_##name(data, len);
        RK_HAPROXY_HASH_MAP(HAPROXY_CASE_)
#undef HAPROXY_CASE_
    }
    return 0;
}

const char *rk_hash_name(rk_hash_alg alg)
{
    if ((unsigned)alg >= N_HASHES)
        return NULL;
    return hashes[alg].name;
}

unsigned rk_hash_bits(rk_hash_alg alg)
{
    return rk_hash_name(alg) ? hashes[alg].bits : 32; /* 32 for an unknown value, as ever */
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

void rki_hash_points(rk_hash_alg alg, const char *id, size_t id_len, uint32_t count, uint64_t *out)
{
    switch (alg) {
#define POINTS_CASE_(suffix, name, value, bits)                                                    \
    case RK_HASH_##suffix:                                                                         \
        points_##name(id, id_len, count, out);                                                     \
        break;
        RK_HASH_MAP(POINTS_CASE_)
#undef POINTS_CASE_
    default: /* the ketama hashes hash keys only: that scheme's points are MD5's */
        break;
    }
}
