/* store_etcd_docs.c — a cluster's documents in the etcd store: one key per cluster and kind,
 * "<prefix>/c/<cluster>/job" for the migration job (SPEC 10), ".../rollout" for the rollout
 * (SPEC 11) and ".../load" for the load profile (docs/LOAD.md), holding the document; its revision
 * is the key's mod_revision. A change is one rke_step that also compares that revision, so its
 * event, the cluster's head and the document move together or not at all. The rules are
 * migration_job.c's and rollout.c's. */
#include <stdlib.h>

#include "store_etcd_shared.h"

static const char *const suffix[RKD_DOC_KINDS] = {
    [RKD_DOC_JOB] = "job",
    [RKD_DOC_ROLLOUT] = "rollout",
    [RKD_DOC_LOAD] = "load",
};

void rke_doc_key(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster,
                 rkd_store_doc_kind kind)
{
    rke_key(s, key, cluster, suffix[kind]);
}

static int read_doc(rke_store *s, rkd_store_doc_kind kind, const char *cluster, rke_kv *kv,
                    rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_doc_key(s, key, cluster, kind);
    return rke_get(s->etcd, key, kv, err);
}

int rke_get_doc(void *b, rkd_store_doc_kind kind, const char *cluster, char **doc, int64_t *rev,
                rk_error *err)
{
    rke_store *s = b;
    rke_head h;
    char key[RKE_KEY_MAX];
    rke_range_req req = {key, NULL};
    rke_kvs got = {0};
    int64_t head_rev;
    rke_doc_key(s, key, cluster, kind);
    int rc = rke_read_head_and(s, cluster, &h, &head_rev, &req, 1, &got, err);
    if (rc == RK_OK && head_rev == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, 0);
    if (rc == RK_OK && got.count == 1) {
        *rev = got.items[0].mod_revision;
        rc = rkd_store_strdup(got.items[0].value, doc, err);
    }
    rke_kvs_free(&got);
    return rc;
}

typedef struct doc_arg {
    rkd_store_doc_kind kind;
    const char *doc;
    int64_t rev;
    const rkd_store_doc_event *e;
} doc_arg;

static int build_doc(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next, rke_txn *t,
                     rk_error *err)
{
    const doc_arg *a = st->arg;
    char key[RKE_KEY_MAX];
    rke_kv kv = {0};
    (void)cur;
    int rc = read_doc(s, a->kind, st->cluster, &kv, err);
    if (rc == RK_OK && kv.mod_revision != a->rev)
        rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                          "cluster %s: the %s changed meanwhile (revision %lld, not %lld)",
                          st->cluster, rkd_store_doc_name(a->kind), (long long)kv.mod_revision,
                          (long long)a->rev);
    rke_kv_deinit(&kv);
    if (rc != RK_OK)
        return rc;
    rke_doc_key(s, key, st->cluster, a->kind);
    rke_txn_if_mod(t, key, a->rev);
    rke_txn_put_str(t, key, a->doc);
    if (a->e) {
        rke_event e = {a->e->kind, a->e->author, a->e->version, a->e->from_version,
                       NULL,       -1,           a->e->detail};
        rke_step_event(s, st, next, t, &e);
    }
    return RK_OK;
}

int rke_put_doc(void *b, rkd_store_doc_kind kind, const char *cluster, const char *doc, int64_t rev,
                const rkd_store_doc_event *e, const char *now, rk_error *err)
{
    doc_arg arg = {kind, doc, rev, e};
    rke_step st = {.cluster = cluster, .build = build_doc, .arg = &arg, .now = now};
    return rke_run_step(b, &st, err);
}
