/* load.c — a measured load over a hash space in equal bins (docs/RING.md, "Load over the ring"):
 * samples added by hash value, and the load in any stretch of the space, pro rata within a bin. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

struct rk_load {
    unsigned bits;       /* hash space 2^bits: 32 or 64 */
    unsigned shift;      /* hash >> shift = bin: bits - log2(bins); 64 for one bin of 2^64 */
    size_t bins;         /* a power of two */
    double sample_rate;  /* the fraction of the keys sampled, (0, 1] */
    rk_load_amount *bin; /* what was sampled, per bin */
};

static uint64_t top_of(unsigned bits)
{
    return bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

static size_t bin_of(const rk_load *l, uint64_t hash)
{
    return l->shift == 64 ? 0 : (size_t)(hash >> l->shift);
}

static uint64_t bin_first(const rk_load *l, size_t b)
{
    return l->shift == 64 ? 0 : (uint64_t)b << l->shift;
}

int rki_load_check(unsigned bits, size_t bins, double sample_rate, rk_error *err)
{
    if (bits != 32 && bits != 64)
        return rk_error_set(err, RK_EINVAL, "bits",
                            "must be 32 or 64 (a ring's hash space), not %u", bits);
    if (bins < 1 || bins > RK_LOAD_MAX_BINS || (bins & (bins - 1)))
        return rk_error_set(err, RK_EINVAL, "bins", "must be a power of two 1..%d, not %zu",
                            RK_LOAD_MAX_BINS, bins);
    if (!(sample_rate > 0 && sample_rate <= 1))
        return rk_error_set(err, RK_EINVAL, "sample_rate",
                            "must be the fraction of the keys sampled, in (0, 1], not %g",
                            sample_rate);
    return RK_OK;
}

rk_load *rk_load_new(unsigned bits, size_t bins, double sample_rate, rk_error *err)
{
    if (rki_load_check(bits, bins, sample_rate, err))
        return NULL;
    rk_load *l = calloc(1, sizeof *l);
    rk_load_amount *bin = calloc(bins, sizeof *bin);
    if (!l || !bin) {
        free(l), free(bin);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory for a load of %zu bins", bins);
        return NULL;
    }
    unsigned log2 = 0;
    while ((size_t)1 << log2 < bins)
        log2++;
    *l = (rk_load){bits, bits - log2, bins, sample_rate, bin};
    return l;
}

void rk_load_free(rk_load *l)
{
    if (l)
        free(l->bin);
    free(l);
}

int rki_load_amount_check(double keys, double bytes, double requests, const char *path,
                          rk_error *err)
{
    const struct {
        const char *name;
        double value;
    } fields[] = {{"keys", keys}, {"bytes", bytes}, {"requests", requests}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!(fields[i].value >= 0) || isinf(fields[i].value))
            return rk_error_set(err, RK_EINVAL, path ? path : fields[i].name,
                                "must be a finite number >= 0, not %g", fields[i].value);
    return RK_OK;
}

int rk_load_add(rk_load *l, uint64_t hash, double keys, double bytes, double requests,
                rk_error *err)
{
    if (hash > top_of(l->bits))
        return rk_error_set(err, RK_EINVAL, "hash", "%llu is outside the hash space of 2^%u",
                            (unsigned long long)hash, l->bits);
    if (rki_load_amount_check(keys, bytes, requests, NULL, err))
        return RK_EINVAL;
    rk_load_amount *b = &l->bin[bin_of(l, hash)];
    b->keys += keys, b->bytes += bytes, b->requests += requests;
    return RK_OK;
}

void rki_load_set_bin(rk_load *l, size_t b, rk_load_amount a)
{
    l->bin[b] = a;
}

unsigned rk_load_bits(const rk_load *l)
{
    return l->bits;
}

size_t rk_load_bins(const rk_load *l)
{
    return l->bins;
}

double rk_load_sample_rate(const rk_load *l)
{
    return l->sample_rate;
}

rk_load_amount rk_load_bin(const rk_load *l, size_t b)
{
    return l->bin[b];
}

void rki_load_scale(rk_load_amount *a, double by)
{
    a->keys *= by, a->bytes *= by, a->requests *= by;
}

rk_load_amount rk_load_total(const rk_load *l)
{
    rk_load_amount t = {0, 0, 0};
    rki_load_spread(l, 0, top_of(l->bits), &t);
    rki_load_scale(&t, 1 / l->sample_rate);
    return t;
}

void rki_load_spread(const rk_load *l, uint64_t first, uint64_t last, rk_load_amount *into)
{
    uint64_t width_less_one = l->shift == 64 ? UINT64_MAX : (UINT64_C(1) << l->shift) - 1;
    double width = ldexp(1.0, (int)l->shift);
    for (size_t b = bin_of(l, first); b <= bin_of(l, last); b++) {
        uint64_t lo = bin_first(l, b), hi = lo + width_less_one;
        lo = first > lo ? first : lo, hi = last < hi ? last : hi;
        double part = ((double)(hi - lo) + 1.0) / width; /* 1 for a whole bin, exactly */
        into->keys += part * l->bin[b].keys;
        into->bytes += part * l->bin[b].bytes;
        into->requests += part * l->bin[b].requests;
    }
}
