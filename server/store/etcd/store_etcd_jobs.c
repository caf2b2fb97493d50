/* store_etcd_jobs.c — the migration job (SPEC 10) in the etcd store: one key per cluster,
 * "<prefix>/c/<cluster>/job", holding the job's document; its revision is the key's
 * mod_revision. A change is one rke_step that also compares that revision, so its event, the
 * cluster's head and the job move together or not at all. The rules are migration_job.c's. */
#include <stdlib.h>

#include "store_etcd_shared.h"

static int read_job(rke_store *s, const char *cluster, rke_kv *kv, rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_key(s, key, cluster, "job");
    return rke_get(s->etcd, key, kv, err);
}

int rke_get_job(void *b, const char *cluster, char **doc, int64_t *rev, rk_error *err)
{
    rke_store *s = b;
    rke_head h;
    rke_kv kv = {0};
    int64_t head_rev;
    int rc = rke_read_head(s, cluster, &h, &head_rev, err);
    if (rc == RK_OK && head_rev == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, 0);
    rc = rc ? rc : read_job(s, cluster, &kv, err);
    if (rc == RK_OK && kv.mod_revision) {
        *rev = kv.mod_revision;
        rc = rkd_store_strdup(kv.value, doc, err);
    }
    rke_kv_deinit(&kv);
    return rc;
}

typedef struct job_arg {
    const char *doc;
    int64_t rev;
    const rkd_store_job_event *e;
} job_arg;

static int build_job(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next, rke_txn *t,
                     rk_error *err)
{
    const job_arg *a = st->arg;
    char key[RKE_KEY_MAX];
    rke_kv kv = {0};
    (void)cur;
    int rc = read_job(s, st->cluster, &kv, err);
    if (rc == RK_OK && kv.mod_revision != a->rev)
        rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                          "cluster %s: the migration job changed meanwhile (revision %lld, not "
                          "%lld)",
                          st->cluster, (long long)kv.mod_revision, (long long)a->rev);
    rke_kv_deinit(&kv);
    if (rc != RK_OK)
        return rc;
    rke_key(s, key, st->cluster, "job");
    rke_txn_if_mod(t, key, a->rev);
    rke_txn_put_str(t, key, a->doc);
    if (a->e) {
        rke_event e = {a->e->kind, a->e->author, a->e->version, a->e->from_version,
                       NULL,       -1,           a->e->detail};
        rke_step_event(s, st, next, t, &e);
    }
    return RK_OK;
}

int rke_put_job(void *b, const char *cluster, const char *doc, int64_t rev,
                const rkd_store_job_event *e, const char *now, rk_error *err)
{
    job_arg arg = {doc, rev, e};
    rke_step st = {.cluster = cluster, .build = build_job, .arg = &arg, .now = now};
    return rke_run_step(b, &st, err);
}
