/* registry.c — the ring schemes of this build, by name and value, and the hashes each may name.
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

void rki_tie_order_by_id(const rk_topology *t, uint32_t *order)
{
    memcpy(order, rki_topology_order(t), rk_topology_node_count(t) * sizeof *order);
}

uint64_t rki_key_hash_whole(rk_hash_alg hash, const char *hash_tag, const void *key, size_t len)
{
    (void)hash_tag;
    return rk_hash(hash, key, len);
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

int rki_scheme_has_hash(const rki_scheme *s, rk_hash_alg hash)
{
    for (size_t i = 0; i < s->n_hashes; i++)
        if (s->hashes[i] == hash)
            return 1;
    return 0;
}

int rk_hash_from_scheme_name(rk_scheme scheme, const char *name, rk_hash_alg *out)
{
    const rki_scheme *s = rki_scheme_of(scheme);
    for (size_t i = 0; s && name && i < s->n_hashes; i++) {
        if (strcmp(name, rk_hash_name(s->hashes[i])) == 0) {
            *out = s->hashes[i];
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
    return rk_hash_name(((const rki_scheme *)s)->hashes[i]);
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
