/* hash.c — the three hash functions of SPEC section 2, for keys and for ring points. */
#include <string.h>

#include <nettle/md5.h>
#define XXH_INLINE_ALL /* short keys: inlining saves the call and lets the compiler specialise */
#include <xxhash.h>

#include "internal.h"

#define FNV_OFFSET 2166136261u
#define FNV_PRIME  16777619u

static const char *const hash_names[] = {"fnv1a_32", "md5_32", "xxh3_64"};

static inline uint32_t fnv1a_update(uint32_t h, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static inline uint64_t md5_finish(struct md5_ctx *ctx)
{
    uint8_t d[MD5_DIGEST_SIZE];
    md5_digest(ctx, sizeof d, d);
    return (uint64_t)d[0] << 24 | (uint64_t)d[1] << 16 | (uint64_t)d[2] << 8 | d[3];
}

uint64_t rk_hash(rk_hash_alg alg, const void *data, size_t len)
{
    switch (alg) {
    case RK_HASH_FNV1A_32:
        return fnv1a_update(FNV_OFFSET, data, len);
    case RK_HASH_MD5_32: {
        struct md5_ctx ctx;
        md5_init(&ctx);
        md5_update(&ctx, len, data);
        return md5_finish(&ctx);
    }
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

/* Decimal digits of a counter, kept as text and incremented in place. */
typedef struct {
    char d[12];
    size_t n;
} decimal;

static void decimal_inc(decimal *c)
{
    size_t i = c->n;
    while (i > 0 && c->d[i - 1] == '9')
        c->d[--i] = '0';
    if (i > 0) {
        c->d[i - 1]++;
        return;
    }
    memmove(c->d + 1, c->d, c->n++);
    c->d[0] = '1';
}

void rki_hash_points(rk_hash_alg alg, const char *id, size_t id_len, uint32_t count, uint64_t *out)
{
    decimal c = {{'0'}, 1};
    if (alg == RK_HASH_FNV1A_32) {
        uint32_t base = fnv1a_update(FNV_OFFSET, (const unsigned char *)id, id_len);
        base = fnv1a_update(base, (const unsigned char *)"#", 1);
        for (uint32_t i = 0; i < count; i++, decimal_inc(&c))
            out[i] = fnv1a_update(base, (const unsigned char *)c.d, c.n);
    } else if (alg == RK_HASH_MD5_32) {
        struct md5_ctx base, ctx;
        md5_init(&base);
        md5_update(&base, id_len, (const uint8_t *)id);
        md5_update(&base, 1, (const uint8_t *)"#");
        for (uint32_t i = 0; i < count; i++, decimal_inc(&c)) {
            ctx = base;
            md5_update(&ctx, c.n, (const uint8_t *)c.d);
            out[i] = md5_finish(&ctx);
        }
    } else {
        char buf[RK_MAX_ID_BYTES + 1 + sizeof c.d];
        memcpy(buf, id, id_len);
        buf[id_len] = '#';
        for (uint32_t i = 0; i < count; i++, decimal_inc(&c)) {
            memcpy(buf + id_len + 1, c.d, c.n);
            out[i] = XXH3_64bits(buf, id_len + 1 + c.n);
        }
    }
}
