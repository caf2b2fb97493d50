/* store_etcd_publish.c — publishing in the etcd store: the topology in chunks of at most
 * CHUNK bytes, each named by its SHA-256 and written once, then the version's metadata and its
 * event in one step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/sha2.h>

#include "store_etcd_shared.h"

#define CHUNK (1u << 20) /* bytes of one chunk: one put, under etcd's 1.5 MiB */

/* ---- Publishing ---- */

/* Writes a big topology as content-addressed chunks, before the publish's txn names them in the
 * version's metadata: a chunk nobody names is harmless, and a retry writes the same keys. */
int rke_put_chunks(rke_store *s, const char *doc, json_t **chunks, rk_error *err)
{
    size_t len = strlen(doc);
    int rc = (*chunks = json_array()) ? RK_OK : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    for (size_t off = 0; rc == RK_OK && off < len; off += CHUNK) {
        char hex[2 * SHA256_DIGEST_SIZE + 1], key[RKE_KEY_MAX];
        size_t n = len - off < CHUNK ? len - off : CHUNK;
        rke_txn t;
        int ok, uncertain;
        rke_sha256_hex(doc + off, n, hex);
        rke_blob_key(s, key, hex);
        rke_txn_init(&t);
        rke_txn_put(&t, key, doc + off, n);
        rc = json_array_append_new(*chunks, json_string(hex)) ? RK_ENOMEM : RK_OK;
        rc = rc ? rk_error_set(err, rc, NULL, "out of memory")
                : rke_txn_commit(s->etcd, &t, &ok, &uncertain, err);
        rke_txn_deinit(&t);
    }
    return rc;
}

typedef struct publish_arg {
    const rkd_store_draft *d;
    json_t *chunks;           /* the topology's chunks, or NULL: stored whole */
    rke_cutover_with with;    /* an activation's reads */
    rkd_store_published *out; /* its window as the last build opened it */
} publish_arg;

json_t *rke_draft_meta(const rkd_store_draft *d, json_t *chunks)
{
    json_t *m =
        json_pack("{sssssssssssIsIsIss?ss?}", "created_at", d->created_at, "activated_at",
                  d->activate ? d->created_at : "", "scheme", d->scheme, "hash", d->hash,
                  "fingerprint", d->fingerprint, "vnode_factor", (json_int_t)d->vnode_factor,
                  "points", (json_int_t)d->points, "size", (json_int_t)strlen(d->topology),
                  "author", d->author, "comment", d->comment);
    if (m && chunks && json_object_set(m, "chunks", chunks) != 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static int build_publish(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next,
                         rke_txn *t, rk_error *err)
{
    publish_arg *p = st->arg;
    const rkd_store_draft *d = p->d;
    char key[RKE_KEY_MAX];
    int64_t v = cur->latest + 1, count = 0;
    int rc = rkd_store_check_publish(d, cur->latest, err);
    if (rc == RK_OK && cur->latest == 0 && d->max_clusters > 0) { /* a new cluster: room? */
        rc = rke_count_clusters(s, &count, err);
        rc = rc ? rc : rkd_store_check_room(d, count, err);
    }
    if (rc != RK_OK)
        return rc;
    json_t *meta = rke_draft_meta(d, p->chunks);
    rke_put_meta(s, t, d->cluster, v, meta);
    json_decref(meta);
    rke_key_num(s, key, d->cluster, "t/", v);
    if (!p->chunks)
        rke_txn_put_str(t, key, d->topology);
    next->latest = v;
    st->version = v;
    rke_event e = {
        d->revert_of ? "revert" : "publish", d->author, v, d->revert_of, NULL, -1, d->comment};
    rke_step_event(s, st, next, t, &e);
    rkd_store_activation a = {RKD_STORE_ANY, d->author, d->moved_fraction, NULL, NULL, 0, d->gate};
    rke_plan_target target = {v, d->fingerprint, d->author};
    rke_cutover_reads r = {0};
    if (!d->activate)
        return RK_OK;
    rc = rke_step_cutover_reads(s, st, 0, &p->with, cur, &r, err);
    rc = rc ? rc : rke_gate_in_step(st, cur, &r, d->ring, &a, err);
    rc = rc ? rc : rke_activate_in_step(s, st, cur, next, t, &target, &a, &r, err);
    p->out->previous = rc ? 0 : next->previous;
    snprintf(p->out->previous_fingerprint, sizeof p->out->previous_fingerprint, "%s",
             p->out->previous ? rke_str(r.active_meta, "fingerprint") : "");
    rke_cutover_reads_deinit(&r);
    return rc;
}

/* With activate and a hint, the activation's reads go with the step's head, as rke_activate's. */
int rke_publish(void *b, const rkd_store_draft *d, rkd_store_published *out, rk_error *err)
{
    rke_store *s = b;
    publish_arg p = {.d = d, .out = out};
    rke_step st = {.cluster = d->cluster,
                   .create = 1,
                   .build = build_publish,
                   .arg = &p,
                   .now = d->created_at};
    int rc = rke_cutover_with_head(s, &st, 0, d->activate ? d->active_hint : 0, d->gate != NULL,
                                   &p.with, err);
    if (rc == RK_OK && strlen(d->topology) > RKE_INLINE_MAX)
        rc = rke_put_chunks(s, d->topology, &p.chunks, err);
    rc = rc ? rc : rke_run_step(s, &st, err);
    if (rc == RK_OK)
        out->version = st.version;
    rke_cutover_with_done(&p.with);
    json_decref(p.chunks);
    return rc;
}
