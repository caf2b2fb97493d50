/* etcd_params.h — the etcd backend's parameters, read and checked by the backend itself: the
 * daemon's --etcd-cacert, --etcd-cert, --etcd-key, --etcd-user and --etcd-password-file (as
 * etcdctl names them), passed through as rkd_store_params. Built with the registry
 * (store_open.c) whether or not the backend is, so they are checked alike in every build. */
#ifndef RKD_ETCD_PARAMS_H
#define RKD_ETCD_PARAMS_H

#include "etcd_http.h"
#include "store.h"

/* The parameters' names, NULL-terminated. */
extern const char *const rke_param_names[];

/* Reads p[0 .. n) (each one of rke_param_names) into *sec, its strings borrowed from `p`, and the
 * password file's first line into *password (new, or NULL without one; free it with
 * rke_password_free): refuses a certificate without its key or a user without a password file
 * or the reverse, a PEM file that cannot be read, and a password file others may read. RK_OK,
 * or RK_EINVAL with a message that starts with the flag ("--etcd-cert needs its pair: ...") and
 * *password NULL. */
int rke_params_read(const rkd_store_param *p, size_t n, rke_security *sec, char **password,
                    rk_error *err);
/* rke_params_read, keeping nothing: store_open.c's check of etcd's parameters. */
int rke_params_check(const rkd_store_param *p, size_t n, rk_error *err);
/* Overwrites and frees a password rke_params_read gave; NULL is fine. */
void rke_password_free(char *password);

#endif /* RKD_ETCD_PARAMS_H */
