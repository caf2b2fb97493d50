/* etcd_opts.h — the etcd flags ringkeeperd and its migrate-store share (as etcdctl names them):
 * --etcd-cacert, --etcd-cert, --etcd-key, --etcd-user, --etcd-password-file; checked and turned
 * into rkd_store_options in one place. */
#ifndef RKD_ETCD_OPTS_H
#define RKD_ETCD_OPTS_H

#include "store.h"

/* The flags as given; NULL when absent. */
typedef struct rkd_etcd_flags {
    const char *cacert;        /* --etcd-cacert FILE */
    const char *cert;          /* --etcd-cert FILE */
    const char *key;           /* --etcd-key FILE */
    const char *user;          /* --etcd-user NAME */
    const char *password_file; /* --etcd-password-file FILE */
} rkd_etcd_flags;

/* Checks `f` for a store at `location` (etcd flags with an SQLite store, a certificate without its
 * key, a user without a password file or the reverse) and reads the password file (refused when
 * others may read it); fills the etcd fields of *opt, *password holding the password read (the
 * caller frees it with rkd_etcd_password_free). Returns 0, or 2 after logging why (log.h). */
int rkd_etcd_flags_apply(const rkd_etcd_flags *f, const char *location, rkd_store_options *opt,
                         char **password);
/* Overwrites and frees the password; NULL is fine. */
void rkd_etcd_password_free(char *password);

#endif /* RKD_ETCD_OPTS_H */
