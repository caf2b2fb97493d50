/* store_etcd.h — the etcd backend of store.h (docs/ETCD.md): any number of ringkeeperd replicas
 * over one etcd cluster, spoken to through its v3 JSON gateway. rkd_store_open_with() picks it for
 * a location starting with "etcd://". */
#ifndef RKD_STORE_ETCD_H
#define RKD_STORE_ETCD_H

#include "etcd_http.h"
#include "store_backend.h"

#define RKD_STORE_ETCD_SCHEME  "etcd://"
#define RKD_STORE_ETCDS_SCHEME "etcds://"    /* the same over TLS */
#define RKD_STORE_ETCD_PREFIX  "/ringkeeper" /* the key prefix when the location names none */

/* Opens the etcd backend at `location`, "etcd://HOST:PORT[,HOST:PORT...][/prefix]" (etcds://: over
 * TLS), reaching it as `sec` says (NULL: no certificates, no user; its `tls` comes from the
 * scheme): reads (or, in an empty prefix, creates) the store id, which needs a majority of the
 * members. NULL with err set: RK_EINVAL for a malformed location or certificates without etcds://,
 * RKD_STORE_EUNAVAILABLE when etcd does not answer or refuses the user. Else the backend's state,
 * with *ops its table of operations, for rkd_store_new (store_open.c), which then owns it. */
void *rkd_etcd_open(const char *location, const rke_security *sec, const rkd_store_ops **ops,
                    rk_error *err) RK_MUST_CHECK;

#endif /* RKD_STORE_ETCD_H */
