/* registry.c — the ring schemes of this build, by name and value, and the hashes each may name
 * (rk_hash and the names of hashes answer from the schemes' lists).
 *
 * The list comes from client/CMakeLists.txt: each `rk_scheme(<name> <file>)` there compiles the
 * file and writes RKI_SCHEME(<name>) into schemes.def, so a scheme is registered by the same line
 * that builds it and a build registers exactly the schemes it has. The first line is the
 * ringkeeper scheme, the default one. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define RKI_SCHEME(name) extern const rki_scheme rki_scheme_##name;
#include "schemes.def"
#undef RKI_SCHEME

static const rki_scheme *const schemes[] = {
#define RKI_SCHEME(name) &rki_scheme_##name,
#include "schemes.def"
#undef RKI_SCHEME
};
#define N_SCHEMES (sizeof schemes / sizeof schemes[0])

const rki_scheme *rki_scheme_of(rk_scheme id)
{
    for (size_t i = 0; i < N_SCHEMES; i++)
        if (schemes[i]->id == id)
            return schemes[i];
    return NULL;
}

uint64_t rki_key_hash_whole(const rki_hash *hash, const void *params, const void *key, size_t len)
{
    (void)params;
    return hash->key(key, len);
}

const char *rk_scheme_name(rk_scheme scheme)
{
    const rki_scheme *s = rki_scheme_of(scheme);
    return s ? s->name : NULL;
}

int rk_scheme_from_name(const char *name, rk_scheme *out)
{
    for (size_t i = 0; name && i < N_SCHEMES; i++) {
        if (strcmp(name, schemes[i]->name) == 0) {
            *out = schemes[i]->id;
            return RK_OK;
        }
    }
    return RK_EINVAL;
}

const char *rk_scheme_at(size_t i)
{
    return i < N_SCHEMES ? schemes[i]->name : NULL;
}

const char *rk_hash_at(rk_scheme scheme, size_t i)
{
    const rki_scheme *s = rki_scheme_of(scheme);
    return s && i < s->n_hashes ? s->hashes[i]->name : NULL;
}

int rki_scheme_has_hash(const rki_scheme *s, rk_hash_alg hash)
{
    for (size_t i = 0; i < s->n_hashes; i++)
        if (s->hashes[i]->value == hash)
            return 1;
    return 0;
}

const rki_hash *rki_hash_of(rk_hash_alg alg)
{
    for (size_t i = 0; i < N_SCHEMES; i++)
        for (size_t k = 0; k < schemes[i]->n_hashes; k++)
            if (schemes[i]->hashes[k]->value == alg)
                return schemes[i]->hashes[k];
    return NULL;
}

uint64_t rk_hash(rk_hash_alg alg, const void *data, size_t len)
{
    const rki_hash *h = rki_hash_of(alg);
    return h ? h->key(data, len) : 0;
}

const char *rk_hash_name(rk_hash_alg alg)
{
    const rki_hash *h = rki_hash_of(alg);
    return h ? h->name : NULL;
}

unsigned rk_hash_bits(rk_hash_alg alg)
{
    const rki_hash *h = rki_hash_of(alg);
    return h ? h->bits : 32; /* 32 for an unknown value, as ever */
}

int rk_hash_from_scheme_name(rk_scheme scheme, const char *name, rk_hash_alg *out)
{
    const rki_scheme *s = rki_scheme_of(scheme);
    for (size_t i = 0; s && name && i < s->n_hashes; i++) {
        if (strcmp(name, s->hashes[i]->name) == 0) {
            *out = s->hashes[i]->value;
            return RK_OK;
        }
    }
    return RK_EINVAL;
}

int rk_hash_from_name(const char *name, rk_hash_alg *out)
{
    return rk_hash_from_scheme_name(RK_SCHEME_RINGKEEPER, name, out);
}

rk_scheme rk_hash_scheme(rk_hash_alg alg)
{
    for (size_t i = 0; i < N_SCHEMES; i++)
        if (rki_scheme_has_hash(schemes[i], alg))
            return schemes[i]->id;
    return RK_SCHEME_RINGKEEPER;
}

const char *rki_list_names(size_t n, const char *(*name)(const void *, size_t), const void *of,
                           const char *first_note, char *buf, size_t size, const char *quote,
                           const char *last_sep)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++) {
        const char *sep = i + 2 < n ? ", " : i + 2 == n ? last_sep : "";
        at += (size_t)snprintf(buf + at, size - at, "%s%s%s%s%s", quote, name(of, i), quote,
                               i ? "" : first_note, sep);
    }
    return buf;
}

static const char *hash_at(const void *s, size_t i)
{
    return ((const rki_scheme *)s)->hashes[i]->name;
}

static const char *scheme_at(const void *unused, size_t i)
{
    (void)unused;
    return schemes[i]->name;
}

const char *rki_hash_names(rk_scheme scheme, char *buf, size_t size, const char *quote,
                           const char *last_sep)
{
    const rki_scheme *s = rki_scheme_of(scheme);
    return rki_list_names(s ? s->n_hashes : 0, hash_at, s, "", buf, size, quote, last_sep);
}

const char *rki_scheme_names(char *buf, size_t size)
{
    return rki_list_names(N_SCHEMES, scheme_at, NULL, " (the default)", buf, size, "\"", " or ");
}
