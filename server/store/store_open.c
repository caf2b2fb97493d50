/* store_open.c — rkd_store_open_with(): the registry of backends, the one place that knows them
 * all, each by the scheme its locations start with ("sqlite:", "etcd://", "etcds://"); a location
 * with no scheme is an SQLite database file, as --db gives it. A backend names its parameters and
 * reads them itself: the registry only routes each to the backend that takes it. A new backend is
 * one row here. */
#include <string.h>

#include "etcd_params.h"
#include "store_sqlite.h"
#ifdef RKD_STORE_ETCD
#include "store_etcd.h"
#else /* built without the etcd store (cmake -DRK_STORE_ETCD=OFF): its locations are still named   \
       */
#define RKD_STORE_ETCD_SCHEME  "etcd://"
#define RKD_STORE_ETCDS_SCHEME "etcds://"
#endif

#define SQLITE_SCHEME "sqlite:"

typedef struct backend {
    const char *name;          /* "sqlite", "etcd" */
    const char *scheme;        /* what its locations start with */
    const char *what;          /* what its stores are, in a message about a parameter */
    const char *const *params; /* its parameters' names, NULL-terminated */
    /* checks its parameters' values without opening anything; NULL: any value */
    int (*check)(const rkd_store_param *p, size_t n, rk_error *err);
    /* the backend's state and *ops its table, for rkd_store_new; NULL: not in this build */
    void *(*open)(const char *location, const rkd_store_param *p, size_t n,
                  const rkd_store_ops **ops, rk_error *err);
    const char *option; /* the CMake option that builds it, or NULL: always built */
} backend;

static void *open_sqlite(const char *location, const rkd_store_param *p, size_t n,
                         const rkd_store_ops **ops, rk_error *err)
{
    return rkd_sqlite_open_params(rkd_store_file(location), p, n, ops, err);
}

#ifdef RKD_STORE_ETCD
static void *open_etcd(const char *location, const rkd_store_param *p, size_t n,
                       const rkd_store_ops **ops, rk_error *err)
{
    rke_security sec;
    char *password;
    void *state = rke_params_read(p, n, &sec, &password, err) == RK_OK
                      ? rkd_etcd_open(location, &sec, ops, err)
                      : NULL;
    rke_password_free(password);
    return state;
}
#else
#define open_etcd NULL
#endif

#define ETCD_WHAT "an etcd store (--store etcd://... or etcds://...)"

static const backend backends[] = {
    {"sqlite", SQLITE_SCHEME, "an SQLite file", rkd_sqlite_param_names, NULL, open_sqlite, NULL},
    {"etcd", RKD_STORE_ETCD_SCHEME, ETCD_WHAT, rke_param_names, rke_params_check, open_etcd,
     "RK_STORE_ETCD"},
    {"etcd", RKD_STORE_ETCDS_SCHEME, ETCD_WHAT, rke_param_names, rke_params_check, open_etcd,
     "RK_STORE_ETCD"},
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The backend of `location`: its scheme's, SQLite's for a plain path, NULL for another scheme. */
static const backend *backend_of(const char *location)
{
    for (size_t i = 0; location && i < N_BACKENDS; i++)
        if (starts_with(location, backends[i].scheme))
            return &backends[i];
    return location && !strstr(location, "://") ? &backends[0] : NULL;
}

static int has_param(const backend *b, const char *name)
{
    for (size_t i = 0; b->params[i]; i++)
        if (strcmp(b->params[i], name) == 0)
            return 1;
    return 0;
}

const char *rkd_store_backend_name(const char *location)
{
    const backend *b = backend_of(location);
    return b ? b->name : NULL;
}

int rkd_store_takes(const char *location, const char *name)
{
    const backend *b = backend_of(location);
    return b && has_param(b, name);
}

const char *rkd_store_file(const char *location)
{
    const backend *b = backend_of(location);
    if (b != &backends[0])
        return NULL;
    return starts_with(location, SQLITE_SCHEME) ? location + strlen(SQLITE_SCHEME) : location;
}

/* RK_EINVAL for the first of p[0 .. n) that `b` does not take, naming the backend that does. */
static int check_names(const backend *b, const rkd_store_param *p, size_t n, rk_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (has_param(b, p[i].name))
            continue;
        for (size_t k = 0; k < N_BACKENDS; k++)
            if (has_param(&backends[k], p[i].name))
                return rk_error_set(err, RK_EINVAL, NULL, "--%s is for %s, not %s", p[i].name,
                                    backends[k].what, b->what);
        return rk_error_set(err, RK_EINVAL, NULL, "--%s is no parameter of any store backend",
                            p[i].name);
    }
    return RK_OK;
}

int rkd_store_check(const char *location, const rkd_store_param *p, size_t n, rk_error *err)
{
    const backend *b = backend_of(location);
    if (!b)
        return RK_OK;
    int rc = check_names(b, p, n, err);
    return rc == RK_OK && b->check ? b->check(p, n, err) : rc;
}

rkd_store *rkd_store_open_with(const char *location, const rkd_store_param *p, size_t n,
                               rk_error *err)
{
    const backend *b = backend_of(location);
    if (!b) {
        rk_error_set(err, RK_EINVAL, "store",
                     "no store backend for '%.200s': sqlite:PATH (or a plain PATH), "
                     "etcd://HOST:PORT[,...][/prefix] or etcds://...",
                     location ? location : "(null)");
        return NULL;
    }
    if (check_names(b, p, n, err) != RK_OK)
        return NULL;
    if (!b->open) {
        rk_error_set(err, RK_EINVAL, "store",
                     "this ringkeeperd was built without the %s store (cmake -D%s=OFF): use an "
                     "SQLite file (--db PATH), or a build with it",
                     b->name, b->option);
        return NULL;
    }
    /* the backend opens its state, and the store is made over it here: no backend calls up */
    const rkd_store_ops *ops = NULL;
    void *state = b->open(location, p, n, &ops, err);
    return state ? rkd_store_new(ops, state, err) : NULL;
}
