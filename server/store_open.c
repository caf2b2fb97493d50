/* store_open.c — rkd_store_open(): the one place that knows every backend and picks one by the
 * location it is given: "etcd://..." is the etcd store, anything else an SQLite database file. */
#include <string.h>

#include "store_etcd.h"
#include "store_sqlite.h"

rkd_store *rkd_store_open(const char *location, const char *migrations_dir, rk_error *err)
{
    if (location && strncmp(location, RKD_STORE_ETCD_SCHEME, strlen(RKD_STORE_ETCD_SCHEME)) == 0)
        return rkd_store_open_etcd(location, err);
    return rkd_store_open_sqlite(location, migrations_dir, err);
}
