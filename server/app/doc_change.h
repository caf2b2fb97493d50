/* doc_change.h — changing a cluster's document (store.h: the migration job, the rollout) by one
 * compare-and-set loop: read it, let a rule decide on it, write it back unless another request or
 * server changed it meanwhile, and then decide again on what won. So no change is lost and none
 * is applied twice. Also the documents' times, written and read back. */
#ifndef RKD_DOC_CHANGE_H
#define RKD_DOC_CHANGE_H

#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "store.h"

#define RKD_DOC_SAME 1 /* a rule's answer: nothing to write, the document is answered as it is */

/* One change in progress: the rule, its input, and what it decided. */
typedef struct rkd_doc_change {
    int (*rule)(struct rkd_doc_change *c, rk_error *err); /* RK_OK (write), SAME or an error */
    const void *arg;
    time_t now;
    json_t *doc;               /* the document as read (NULL: none), changed in place or replaced */
    rkd_store_doc_event event; /* written with the change when event.kind is set */
    char detail[256];          /* the event's detail, when the rule writes one */
    int after;                 /* an error to answer once the change is written (0: none) */
    rk_error after_err;
} rkd_doc_change;

/* The cluster's document of `kind`, parsed: *doc NULL when it has none (RK_OK). RK_EIO for a
 * stored document that is not a JSON object. */
int rkd_doc_read(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, json_t **doc,
                 int64_t *rev, rk_error *err);

/* Runs c->rule on the cluster's document until its compare and set wins (at most 16 rounds,
 * then RKD_STORE_EUNAVAILABLE): RK_OK with the document after it in *out (new reference), or
 * the rule's or the store's error. Sets "updated_at" on what it writes. */
int rkd_doc_run(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, rkd_doc_change *c,
                json_t **out, rk_error *err);

/* `t` as the documents write times ("2026-12-02T20:47:23Z"), and back (0 when `s` is not one). */
void rkd_doc_time(time_t t, char out[RKD_STORE_TIME_LEN]);
time_t rkd_doc_parse_time(const char *s);

#endif
