/* ketama_hash.c — the twelve key hashes of twemproxy 0.5 (docs/KETAMA.md), bit for bit: the
 * hashes of the ketama scheme (rki_ketama_hashes), under twemproxy's names.
 *
 * twemproxy hands keys to its hashes as `const char *` and most of them widen a byte with a plain
 * cast, so on the platforms it runs on (signed char) a byte >= 0x80 enters as 0xffffffXX. That
 * quirk is part of where keys live in a fleet today, so it is reproduced on purpose: `sbyte()`
 * below is the widening of a signed char, `ubyte()` that of an unsigned one, and each function
 * uses the one twemproxy's does. The CRC-32 variants come from zlib, where the sign of a byte
 * cannot matter (only its low 8 bits meet the table). */
#include <stdint.h>
#include <string.h>

#include <nettle/md5.h>
#include <zlib.h>

#include "internal.h"

static inline uint32_t sbyte(const unsigned char *p, size_t i)
{
    return (uint32_t)(int32_t)(signed char)p[i];
}

static inline uint32_t ubyte(const unsigned char *p, size_t i)
{
    return p[i];
}

static inline uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t kh_one_at_a_time(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 0;
    for (size_t i = 0; i < len; i++) {
        h += sbyte(p, i);
        h += h << 10;
        h ^= h >> 6;
    }
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    return h;
}

static uint64_t kh_md5(const void *key, size_t len)
{
    struct md5_ctx ctx;
    uint8_t d[MD5_DIGEST_SIZE];
    md5_init(&ctx);
    md5_update(&ctx, len, key);
    md5_digest(&ctx, sizeof d, d);
    return le32(d);
}

/* twemproxy 0.5's crc16: the table of CRC-16/XMODEM (0x1021, not reflected), but the register is
 * 32 bits wide and never cut to 16, so the bits shifted past 16 stay in the value hashed onto the
 * ring. A table entry is computed bit by bit: it is the rarest of the twelve, and 512 bytes of
 * constants would be one more thing to check by eye. */
static uint32_t xmodem_entry(uint32_t i)
{
    uint32_t c = i << 8;
    for (int b = 0; b < 8; b++)
        c = c & 0x8000 ? (c << 1) ^ 0x1021u : c << 1;
    return c & 0xffff;
}

static uint64_t kh_crc16(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (crc << 8) ^ xmodem_entry(((crc >> 8) ^ p[i]) & 0xff);
    return crc;
}

static uint32_t zlib_crc32(const void *key, size_t len)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    const Bytef *p = key;
    while (len > 0) { /* zlib takes lengths as uInt */
        uInt n = len > 0x40000000u ? 0x40000000u : (uInt)len;
        crc = crc32(crc, p, n);
        p += n, len -= n;
    }
    return (uint32_t)crc;
}

/* libmemcached's "crc32": the top half of the standard CRC-32, cut to 15 bits. */
static uint64_t kh_crc32(const void *key, size_t len)
{
    return (zlib_crc32(key, len) >> 16) & 0x7fff;
}

static uint64_t kh_crc32a(const void *key, size_t len)
{
    return zlib_crc32(key, len);
}

#define FNV32_OFFSET 2166136261u
#define FNV32_PRIME  16777619u
#define FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME  UINT64_C(0x100000001b3)

static uint64_t kh_fnv1_64(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = FNV64_OFFSET;
    for (size_t i = 0; i < len; i++)
        h = (h * FNV64_PRIME) ^ (uint64_t)(int64_t)(signed char)p[i];
    return (uint32_t)h;
}

/* twemproxy keeps only 32 bits of state here, which equals the low half of the 64-bit FNV-1a:
 * the low bits of a product depend only on the low bits of its factors. */
static uint64_t kh_fnv1a_64(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = (uint32_t)FNV64_OFFSET;
    for (size_t i = 0; i < len; i++)
        h = (h ^ sbyte(p, i)) * (uint32_t)FNV64_PRIME;
    return h;
}

static uint64_t kh_fnv1_32(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = FNV32_OFFSET;
    for (size_t i = 0; i < len; i++)
        h = (h * FNV32_PRIME) ^ sbyte(p, i);
    return h;
}

static uint64_t kh_fnv1a_32(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = FNV32_OFFSET;
    for (size_t i = 0; i < len; i++)
        h = (h ^ sbyte(p, i)) * FNV32_PRIME;
    return h;
}

/* Paul Hsieh's SuperFastHash; only its 3-byte tail widens a signed byte. */
static uint64_t kh_hsieh(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 0;
    if (len == 0)
        return 0;
    for (size_t n = len / 4; n > 0; n--, p += 4) {
        h += ubyte(p, 0) | ubyte(p, 1) << 8;
        uint32_t tmp = ((ubyte(p, 2) | ubyte(p, 3) << 8) << 11) ^ h;
        h = (h << 16) ^ tmp;
        h += h >> 11;
    }
    switch (len & 3) {
    case 3:
        h += ubyte(p, 0) | ubyte(p, 1) << 8;
        h ^= h << 16;
        h ^= sbyte(p, 2) << 18;
        h += h >> 11;
        break;
    case 2:
        h += ubyte(p, 0) | ubyte(p, 1) << 8;
        h ^= h << 11;
        h += h >> 17;
        break;
    case 1:
        h += ubyte(p, 0);
        h ^= h << 10;
        h += h >> 1;
        break;
    }
    h ^= h << 3;
    h += h >> 5;
    h ^= h << 4;
    h += h >> 17;
    h ^= h << 25;
    h += h >> 6;
    return h;
}

/* MurmurHash2 with twemproxy's seed (0xdeadbeef times the length), words read little-endian. */
static uint64_t kh_murmur(const void *key, size_t len)
{
    const uint32_t m = 0x5bd1e995;
    const unsigned char *p = key;
    uint32_t h = (0xdeadbeefu * (uint32_t)len) ^ (uint32_t)len;
    for (; len >= 4; len -= 4, p += 4) {
        uint32_t k = le32(p) * m;
        k ^= k >> 24;
        h = (h * m) ^ (k * m);
    }
    switch (len) {
    case 3:
        h ^= ubyte(p, 2) << 16;
        /* fall through */
    case 2:
        h ^= ubyte(p, 1) << 8;
        /* fall through */
    case 1:
        h ^= ubyte(p, 0);
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

/* Bob Jenkins' lookup3 hashlittle() with initial value 13, bytes little-endian. */
static uint64_t kh_jenkins(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t a, b, c;
    a = b = c = 0xdeadbeefu + (uint32_t)len + 13u;
    if (len == 0)
        return c;
    for (; len > 12; len -= 12, p += 12) {
        a += le32(p), b += le32(p + 4), c += le32(p + 8);
        a -= c, a ^= ROT(c, 4), c += b;
        b -= a, b ^= ROT(a, 6), a += c;
        c -= b, c ^= ROT(b, 8), b += a;
        a -= c, a ^= ROT(c, 16), c += b;
        b -= a, b ^= ROT(a, 19), a += c;
        c -= b, c ^= ROT(b, 4), b += a;
    }
    unsigned char tail[12] = {0}; /* the last 1..12 bytes, zero-padded as lookup3 masks them */
    memcpy(tail, p, len);
    a += le32(tail), b += le32(tail + 4), c += le32(tail + 8);
    c ^= b, c -= ROT(b, 14);
    a ^= c, a -= ROT(c, 11);
    b ^= a, b -= ROT(a, 25);
    c ^= b, c -= ROT(b, 16);
    a ^= c, a -= ROT(c, 4);
    b ^= a, b -= ROT(a, 14);
    c ^= b, c -= ROT(b, 24);
    return c;
}

/* The ketama scheme's hashes, in the order messages list them. Their values start at 16, above
 * every ringkeeper hash, and stay so (ringkeeper.h). */
#define KETAMA_HASHES(H)                                                                           \
    H(ONE_AT_A_TIME, one_at_a_time)                                                                \
    H(MD5, md5)                                                                                    \
    H(CRC16, crc16)                                                                                \
    H(CRC32, crc32)                                                                                \
    H(CRC32A, crc32a)                                                                              \
    H(FNV1_64, fnv1_64)                                                                            \
    H(FNV1A_64, fnv1a_64)                                                                          \
    H(FNV1_32, fnv1_32)                                                                            \
    H(FNV1A_32, fnv1a_32)                                                                          \
    H(HSIEH, hsieh)                                                                                \
    H(MURMUR, murmur)                                                                              \
    H(JENKINS, jenkins)

#define DEF_(suffix, name)                                                                         \
    const rki_hash rki_ketama_##name = {RK_HASH_KETAMA_##suffix, #name, 32, kh_##name, NULL};
KETAMA_HASHES(DEF_)
#undef DEF_

#define PTR_(suffix, name) &rki_ketama_##name,
const rki_hash *const rki_ketama_hashes[RKI_KETAMA_N_HASHES] = {KETAMA_HASHES(PTR_)};
#undef PTR_
