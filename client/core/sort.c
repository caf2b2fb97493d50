/* sort.c: a stable radix sort of (key, value) pairs, for grouping a plan's arcs (plan.c, steps.c).
 */
#include <stdlib.h>

#include "internal.h"

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_PASS 6 /* ceil(64 / RADIX_BITS) */

/* Below this many pairs an insertion sort is cheaper than the passes over 2048 counters each. */
#define SMALL_SORT 64

static void insertion_sort(uint64_t *key, uint32_t *val, size_t n)
{
    for (size_t j = 1; j < n; j++) {
        uint64_t k = key[j];
        uint32_t v = val[j];
        size_t i = j;
        for (; i > 0 && key[i - 1] > k; i--)
            key[i] = key[i - 1], val[i] = val[i - 1];
        key[i] = k, val[i] = v;
    }
}

/* Passes whose digit is the same for every key are skipped. */
int rki_radix_sort(uint64_t **key, uint32_t **val, size_t n)
{
    if (n <= SMALL_SORT) {
        insertion_sort(*key, *val, n);
        return RK_OK;
    }
    uint32_t(*count)[RADIX_SIZE] = calloc(RADIX_PASS, sizeof *count);
    uint64_t *k2 = malloc(n * sizeof *k2);
    uint32_t *v2 = malloc(n * sizeof *v2);
    if (!count || !k2 || !v2) {
        free(count), free(k2), free(v2);
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned p = 0; p < RADIX_PASS; p++)
            count[p][((*key)[i] >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
    for (unsigned p = 0; p < RADIX_PASS; p++) {
        unsigned shift = p * RADIX_BITS;
        if (count[p][((*key)[0] >> shift) & (RADIX_SIZE - 1)] == n)
            continue;
        uint32_t sum = 0;
        for (unsigned d = 0; d < RADIX_SIZE; d++) {
            uint32_t c = count[p][d];
            count[p][d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t at = count[p][((*key)[i] >> shift) & (RADIX_SIZE - 1)]++;
            k2[at] = (*key)[i];
            v2[at] = (*val)[i];
        }
        uint64_t *tk = *key;
        uint32_t *tv = *val;
        *key = k2, *val = v2, k2 = tk, v2 = tv;
    }
    free(count), free(k2), free(v2);
    return RK_OK;
}
