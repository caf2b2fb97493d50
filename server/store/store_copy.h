/* store_copy.h — copying one store into another, whatever their backends (ringkeeperd
 * migrate-store): every cluster with its whole history, then a check of the copy version for
 * version. Uses only store.h. */
#ifndef RKD_STORE_COPY_H
#define RKD_STORE_COPY_H

#include <stdio.h>

#include "store.h"

/* What was copied. */
typedef struct rkd_copy_summary {
    size_t clusters;  /* clusters copied */
    size_t versions;  /* versions copied and checked, all clusters */
    size_t events;    /* events copied, all clusters */
    size_t approvals; /* approvals copied, all clusters */
} rkd_copy_summary;

/* Copies every cluster of `from` into `to`, which must hold none (RKD_STORE_ECONFLICT, nothing
 * written), and gives `to` the store id of `from`: same numbers, states, timestamps, authors,
 * comments, fingerprints, topologies, events, approvals, policies and open migration windows. Then
 * reads each version back from both and compares them (RKD_STORE_ECONFLICT naming the first
 * difference). One line per cluster goes to `log` (NULL: none). The source should take no writes
 * meanwhile. */
int rkd_store_copy(rkd_store *from, rkd_store *to, FILE *log, rkd_copy_summary *sum,
                   rk_error *err) RK_MUST_CHECK;

#endif /* RKD_STORE_COPY_H */
