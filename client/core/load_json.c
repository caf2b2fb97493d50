/* load_json.c — a load profile as JSON (docs/RING.md, "Load over the ring"), read strictly and
 * bounded by RK_LOAD_MAX_BINS, blaming the exact field. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

/* The per-bin arrays, in rk_load_amount's order. */
static const char *const amounts[] = {"keys", "bytes", "requests"};
static const char *const fields[] = {"bits", "bins", "sample_rate", "keys", "bytes", "requests"};

static int known_fields(const json_t *doc, rk_error *err)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)doc, key, v)
    {
        size_t i = 0;
        while (i < sizeof fields / sizeof fields[0] && strcmp(key, fields[i]))
            i++;
        if (i == sizeof fields / sizeof fields[0])
            return rk_error_set(err, RK_EINVAL, key,
                                "unknown field; a load profile has bits, bins, sample_rate, keys, "
                                "bytes and requests");
    }
    return RK_OK;
}

/* A whole number from field `name` of doc into *out; RK_EINVAL naming it otherwise. */
static int get_count(const json_t *doc, const char *name, size_t *out, rk_error *err)
{
    const json_t *v = json_object_get(doc, name);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > 2 * RK_LOAD_MAX_BINS)
        return rk_error_set(err, RK_EINVAL, name, "must be an integer (docs/RING.md)");
    *out = (size_t)json_integer_value(v);
    return RK_OK;
}

/* Array `name` of doc, of exactly `bins` numbers (their range: rki_load_amount_check). */
static const json_t *get_array(const json_t *doc, const char *name, size_t bins, rk_error *err)
{
    const json_t *v = json_object_get(doc, name);
    if (json_is_array(v) && json_array_size(v) == bins)
        return v;
    rk_error_set(err, RK_EINVAL, name, "must be an array of %zu numbers, one a bin", bins);
    return NULL;
}

/* Bin b of the three arrays into l; RK_EINVAL naming the element ("bytes[12]") otherwise. */
static int get_bin(rk_load *l, const json_t *const arrays[3], size_t b, rk_error *err)
{
    double v[3];
    for (size_t k = 0; k < 3; k++) {
        const json_t *x = json_array_get(arrays[k], b);
        v[k] = json_is_number(x) ? json_number_value(x) : NAN;
        if (v[k] >= 0)
            continue;
        char path[32];
        snprintf(path, sizeof path, "%s[%zu]", amounts[k], b);
        return rki_load_amount_check(v[k], 0, 0, path, err);
    }
    rki_load_set_bin(l, b, (rk_load_amount){v[0], v[1], v[2]});
    return RK_OK;
}

rk_load *rk_load_from_json(const json_t *doc, rk_error *err)
{
    size_t bits = 0, bins = 0;
    if (!json_is_object(doc)) {
        rk_error_set(err, RK_EINVAL, NULL, "a load profile must be a JSON object");
        return NULL;
    }
    if (known_fields(doc, err) || get_count(doc, "bits", &bits, err) ||
        get_count(doc, "bins", &bins, err))
        return NULL;
    const json_t *rate = json_object_get(doc, "sample_rate");
    const json_t *arrays[3] = {NULL, NULL, NULL};
    if (rki_load_check((unsigned)bits, bins, json_is_number(rate) ? json_number_value(rate) : NAN,
                       err))
        return NULL;
    for (size_t k = 0; k < 3; k++)
        if (!(arrays[k] = get_array(doc, amounts[k], bins, err)))
            return NULL;
    rk_load *l = rk_load_new((unsigned)bits, bins, json_number_value(rate), err);
    for (size_t b = 0; l && b < bins; b++)
        if (get_bin(l, arrays, b, err)) {
            rk_load_free(l);
            return NULL;
        }
    return l;
}

/* `v` as JSON: an integer when it is one that a double holds exactly, else a real. */
static json_t *number_json(double v)
{
    return v == floor(v) && v < 0x1p53 ? json_integer((json_int_t)v) : json_real(v);
}

json_t *rk_load_to_json(const rk_load *l)
{
    json_t *doc = json_pack("{s:i, s:I, s:f, s:[], s:[], s:[]}", "bits", (int)rk_load_bits(l),
                            "bins", (json_int_t)rk_load_bins(l), "sample_rate",
                            rk_load_sample_rate(l), "keys", "bytes", "requests");
    json_t *arrays[3] = {json_object_get(doc, "keys"), json_object_get(doc, "bytes"),
                         json_object_get(doc, "requests")};
    for (size_t b = 0; doc && b < rk_load_bins(l); b++) {
        rk_load_amount a = rk_load_bin(l, b);
        double v[3] = {a.keys, a.bytes, a.requests};
        for (size_t k = 0; doc && k < 3; k++)
            if (json_array_append_new(arrays[k], number_json(v[k])))
                json_decref(doc), doc = NULL;
    }
    return doc;
}
