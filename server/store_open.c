/* store_open.c — rkd_store_open(): the one place that knows every backend and picks one by the
 * location it is given. A new backend adds its case here (say, an "etcd://" prefix) and nothing
 * else outside its own files. */
#include "store_sqlite.h"

rkd_store *rkd_store_open(const char *location, const char *migrations_dir, rk_error *err)
{
    return rkd_store_open_sqlite(location, migrations_dir, err);
}
