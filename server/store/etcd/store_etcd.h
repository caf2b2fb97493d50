/* store_etcd.h — the etcd backend of store.h (docs/ETCD.md): any number of ringkeeperd replicas
 * over one etcd cluster, spoken to through its v3 JSON gateway. rkd_store_open() picks it for a
 * location starting with "etcd://". */
#ifndef RKD_STORE_ETCD_H
#define RKD_STORE_ETCD_H

#include "etcd_http.h"
#include "store.h"

#define RKD_STORE_ETCD_SCHEME  "etcd://"
#define RKD_STORE_ETCDS_SCHEME "etcds://"    /* the same over TLS */
#define RKD_STORE_ETCD_PREFIX  "/ringkeeper" /* the key prefix when the location names none */

/* Opens the store at `location`, "etcd://HOST:PORT[,HOST:PORT...][/prefix]" (etcds://: over TLS),
 * reaching it as `sec` says (NULL: no certificates, no user; its `tls` comes from the scheme):
 * reads (or, in an empty prefix, creates) the store id, which needs a majority of the members.
 * NULL with err set: RK_EINVAL for a malformed location or certificates without etcds://,
 * RKD_STORE_EUNAVAILABLE when etcd does not answer or refuses the user. */
rkd_store *rkd_store_open_etcd(const char *location, const rke_security *sec,
                               rk_error *err) RK_MUST_CHECK;

#endif /* RKD_STORE_ETCD_H */
