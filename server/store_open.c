/* store_open.c — rkd_store_open(): the one place that knows every backend and picks one by the
 * location it is given: "etcd://..." or "etcds://..." is the etcd store, anything else an SQLite
 * database file. */
#include <string.h>

#include "store_etcd.h"
#include "store_sqlite.h"

int rkd_store_is_etcd(const char *location)
{
    return location &&
           (strncmp(location, RKD_STORE_ETCD_SCHEME, strlen(RKD_STORE_ETCD_SCHEME)) == 0 ||
            strncmp(location, RKD_STORE_ETCDS_SCHEME, strlen(RKD_STORE_ETCDS_SCHEME)) == 0);
}

rkd_store *rkd_store_open_with(const char *location, const rkd_store_options *opt, rk_error *err)
{
    if (!rkd_store_is_etcd(location))
        return rkd_store_open_sqlite(location, opt->migrations_dir, err);
    rke_security sec = {
        0, opt->etcd_cacert, opt->etcd_cert, opt->etcd_key, opt->etcd_user, opt->etcd_password};
    return rkd_store_open_etcd(location, &sec, err);
}

rkd_store *rkd_store_open(const char *location, const char *migrations_dir, rk_error *err)
{
    return rkd_store_open_with(location, &(rkd_store_options){.migrations_dir = migrations_dir},
                               err);
}
