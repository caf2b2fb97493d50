/* request_key.c — a balancer's key from a request: the "request_key" of nginx and haproxy
 * topologies read, written and checked, and rk_request_key, which hands a request to the
 * evaluator of the topology's scheme (scheme/nginx_key.c, scheme/haproxy_key.c). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

int rki_key_add(rki_key *k, const void *s, size_t n)
{
    if (k->len + n + 1 > k->cap) {
        size_t cap = k->cap ? k->cap : 64;
        while (cap < k->len + n + 1)
            cap *= 2;
        char *d = realloc(k->data, cap);
        if (!d)
            return RK_ENOMEM;
        k->data = d;
        k->cap = cap;
    }
    memcpy(k->data + k->len, s, n);
    k->len += n;
    k->data[k->len] = 0;
    return RK_OK;
}

const size_t rki_request_key_strings[] = {offsetof(rki_request_key_params, request_key),
                                          RKI_PARAMS_END};

int rki_request_key_read(const json_t *doc, void *params, rk_error *err)
{
    rki_request_key_params *p = params;
    const json_t *v = json_object_get(doc, "request_key");
    return v ? rki_json_text(v, "request_key", "how the balancer takes its key from a request",
                             &p->request_key, err)
             : RK_OK;
}

int rki_request_key_write(const void *params, json_t *doc)
{
    const char *spec = ((const rki_request_key_params *)params)->request_key;
    return spec ? json_object_set_new(doc, "request_key", json_string(spec)) : 0;
}

/* A topology that does not say how its balancer takes keys is not told apart from one that does:
 * an import of the same configuration adds what the balancer already did. */
int rki_request_key_differ(const void *a, const void *b, rk_error *err)
{
    const char *ka = ((const rki_request_key_params *)a)->request_key;
    const char *kb = ((const rki_request_key_params *)b)->request_key;
    if (ka && kb && strcmp(ka, kb) != 0)
        return rk_error_set(err, RK_EHASHMISMATCH, "request_key",
                            "the versions take keys from requests as \"%s\" and \"%s\": every "
                            "request's key would change",
                            ka, kb);
    return RK_OK;
}

const char *rk_topology_request_key(const rk_topology *t)
{
    return rki_topology_scheme(t)->request_keys
               ? ((const rki_request_key_params *)rki_topology_params(t))->request_key
               : NULL;
}

int rki_request_key_check(const rki_request_keys *k, const char *spec, rk_error *err)
{
    if (!spec)
        return RK_OK;
    size_t n = strlen(spec);
    for (size_t i = 0; i < n; i++)
        if (spec[i] < 0x20 || spec[i] > 0x7e || strchr("\"'#;\\", spec[i]))
            return rk_error_set(err, RK_ETOPOLOGY, "request_key",
                                "must be printable ASCII without quotes, '#', ';' or '\\', as "
                                "the configuration writes it unquoted: %s",
                                k->allowed);
    if (n == 0 || n > RKI_REQUEST_KEY_MAX)
        return rk_error_set(err, RK_ETOPOLOGY, "request_key", "must be 1..%d bytes: %s",
                            RKI_REQUEST_KEY_MAX, k->allowed);
    return k->check(spec, err);
}

int rk_request_key_check(rk_scheme scheme, const char *spec, rk_error *err)
{
    const rki_scheme *s = rki_scheme_of(scheme);
    if (!s || !s->request_keys)
        return rk_error_set(err, RK_ETOPOLOGY, "request_key",
                            "only the balancer schemes (nginx, haproxy) take keys from requests");
    return rki_request_key_check(s->request_keys, spec ? spec : "", err);
}

int rk_request_key(const rk_topology *t, const rk_request *req, char **key, size_t *len,
                   rk_error *err)
{
    const rki_scheme *s = rki_scheme_of(rk_topology_scheme(t));
    const char *spec = rk_topology_request_key(t);
    *key = NULL;
    *len = 0;
    if (!spec || !s->request_keys)
        return rk_error_set(err, RK_EINVAL, "request_key",
                            "the topology does not say how its balancer takes a key from a "
                            "request: import its configuration again, or add \"request_key\" "
                            "(docs/LOADBALANCERS.md)");
    if (!req->uri || req->uri[0] != '/')
        return rk_error_set(err, RK_EINVAL, "uri",
                            "must be a request target in origin form, starting with '/' "
                            "(\"/path?query\")");
    rki_key k = {0};
    int rc = rki_key_add(&k, "", 0);
    if (rc == RK_OK)
        rc = s->request_keys->eval(spec, req, &k, err);
    if (rc == RK_ENOMEM)
        rk_error_set(err, rc, NULL, "out of memory building a request's key");
    if (rc != RK_OK) {
        free(k.data);
        return rc;
    }
    *key = k.data;
    *len = k.len;
    return RK_OK;
}
