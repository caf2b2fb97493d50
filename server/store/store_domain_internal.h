/* store_domain_internal.h — what the files of the store-neutral layer (store_domain.c,
 * store_domain_copy.c, store_fleet.c) share: the handle over a backend. Not used outside them. */
#ifndef RKD_STORE_DOMAIN_INTERNAL_H
#define RKD_STORE_DOMAIN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "store_backend.h"

struct rkd_store {
    const rkd_store_ops *ops;  /* the backend's table; borrowed */
    void *b;                   /* the backend's state; owned, released by ops->close */
    atomic_uint_fast64_t seq;  /* activations committed through this handle or seen by ops->watch */
    pthread_mutex_t watch_mu;  /* guards watch and watch_arg, held while calling watch */
    rkd_store_watch_fn watch;  /* called after each activation, or NULL */
    void *watch_arg;           /* its argument */
    char id[RKD_STORE_ID_LEN]; /* the backend's store id, read at open */
    int64_t max_clusters;      /* rkd_store_set_max_clusters; 0: no cap */
};

/* Refuses a NULL or empty cluster name (RK_EINVAL): the caller checks the name's rule. */
int rkd_store_check_cluster(const char *cluster, rk_error *err);

#endif
