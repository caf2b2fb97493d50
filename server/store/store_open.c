/* store_open.c — rkd_store_open(): the registry of backends, the one place that knows them all,
 * each by the scheme its locations start with ("sqlite:", "etcd://", "etcds://"); a location with
 * no scheme is an SQLite database file, as --db gives it. A new backend is one row here. */
#include <string.h>

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
    const char *name;   /* "sqlite", "etcd" */
    const char *scheme; /* what its locations start with */
    /* the backend's state and *ops its table, for rkd_store_new; NULL: not in this build */
    void *(*open)(const char *location, const rkd_store_options *opt, const rkd_store_ops **ops,
                  rk_error *err);
    const char *option; /* the CMake option that builds it, or NULL: always built */
} backend;

static void *open_sqlite(const char *location, const rkd_store_options *opt,
                         const rkd_store_ops **ops, rk_error *err)
{
    return rkd_sqlite_open(rkd_store_sqlite_path(location), opt->migrations_dir, ops, err);
}

#ifdef RKD_STORE_ETCD
static void *open_etcd(const char *location, const rkd_store_options *opt,
                       const rkd_store_ops **ops, rk_error *err)
{
    rke_security sec = {
        0, opt->etcd_cacert, opt->etcd_cert, opt->etcd_key, opt->etcd_user, opt->etcd_password};
    return rkd_etcd_open(location, &sec, ops, err);
}
#else
#define open_etcd NULL
#endif

static const backend backends[] = {
    {"sqlite", SQLITE_SCHEME, open_sqlite, NULL},
    {"etcd", RKD_STORE_ETCD_SCHEME, open_etcd, "RK_STORE_ETCD"},
    {"etcd", RKD_STORE_ETCDS_SCHEME, open_etcd, "RK_STORE_ETCD"},
};

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The backend of `location`: its scheme's, SQLite's for a plain path, NULL for another scheme. */
static const backend *backend_of(const char *location)
{
    for (size_t i = 0; location && i < sizeof backends / sizeof backends[0]; i++)
        if (starts_with(location, backends[i].scheme))
            return &backends[i];
    return location && !strstr(location, "://") ? &backends[0] : NULL;
}

const char *rkd_store_backend_name(const char *location)
{
    const backend *b = backend_of(location);
    return b ? b->name : NULL;
}

int rkd_store_is_etcd(const char *location)
{
    const char *name = rkd_store_backend_name(location);
    return name && strcmp(name, "etcd") == 0;
}

const char *rkd_store_sqlite_path(const char *location)
{
    const char *name = rkd_store_backend_name(location);
    if (!name || strcmp(name, "sqlite") != 0)
        return NULL;
    return starts_with(location, SQLITE_SCHEME) ? location + strlen(SQLITE_SCHEME) : location;
}

rkd_store *rkd_store_open_with(const char *location, const rkd_store_options *opt, rk_error *err)
{
    const backend *b = backend_of(location);
    if (!b) {
        rk_error_set(err, RK_EINVAL, "store",
                     "no store backend for '%.200s': sqlite:PATH (or a plain PATH), "
                     "etcd://HOST:PORT[,...][/prefix] or etcds://...",
                     location ? location : "(null)");
        return NULL;
    }
    if (!b->open) {
        rk_error_set(err, RK_EINVAL, "store",
                     "this ringkeeperd was built without the %s store (cmake -D%s=OFF): use an "
                     "SQLite file (--db PATH), or a build with it",
                     b->name, b->option);
        return NULL;
    }
    /* the backend opens its state, and the store is made over it here: no backend calls up */
    const rkd_store_ops *ops = NULL;
    void *state = b->open(location, opt, &ops, err);
    return state ? rkd_store_new(ops, state, err) : NULL;
}

rkd_store *rkd_store_open(const char *location, const char *migrations_dir, rk_error *err)
{
    return rkd_store_open_with(location, &(rkd_store_options){.migrations_dir = migrations_dir},
                               err);
}
