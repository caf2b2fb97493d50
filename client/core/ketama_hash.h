/* ketama_hash.h — twemproxy's twelve key hashes (ketama_hash.c); internal to libringkeeper.
 * Each returns the 32-bit hash of `len` bytes at `key` exactly as twemproxy 0.5 computes it. */
#ifndef RK_KETAMA_HASH_H
#define RK_KETAMA_HASH_H

#include <stddef.h>
#include <stdint.h>

uint32_t rki_kh_one_at_a_time(const void *key, size_t len);
uint32_t rki_kh_md5(const void *key, size_t len);
uint32_t rki_kh_crc16(const void *key, size_t len);
uint32_t rki_kh_crc32(const void *key, size_t len);
uint32_t rki_kh_crc32a(const void *key, size_t len);
uint32_t rki_kh_fnv1_64(const void *key, size_t len);
uint32_t rki_kh_fnv1a_64(const void *key, size_t len);
uint32_t rki_kh_fnv1_32(const void *key, size_t len);
uint32_t rki_kh_fnv1a_32(const void *key, size_t len);
uint32_t rki_kh_hsieh(const void *key, size_t len);
uint32_t rki_kh_murmur(const void *key, size_t len);
uint32_t rki_kh_jenkins(const void *key, size_t len);

#endif
