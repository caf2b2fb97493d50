/* store_rules.c — what every backend decides the same way, so that no store can answer
 * differently (store_backend.h, "Shared by backends"): missing clusters and versions, the
 * preconditions of a publish, an activation and an approval, the window, the plan's digest, times
 * and copies of strings. No state: pure functions over what the backend read in its atomic step. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_backend.h"

int rkd_store_strdup(const char *src, char **dst, rk_error *err)
{
    *dst = NULL;
    if (!src)
        return RK_OK;
    *dst = strdup(src);
    if (!*dst)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory copying a string");
    return RK_OK;
}

int rkd_store_missing(rk_error *err, int code, const char *cluster, int64_t v)
{
    if (code == RKD_STORE_ENOACTIVE)
        return rk_error_set(err, code, NULL,
                            "cluster %s has no active version yet; activate one first", cluster);
    if (code == RKD_STORE_ENOVERSION)
        return rk_error_set(err, code, NULL, "cluster %s has no version %lld", cluster,
                            (long long)v);
    return rk_error_set(err, RKD_STORE_ENOCLUSTER, NULL,
                        "there is no cluster named %s; publishing a version "
                        "creates it",
                        cluster);
}

int rkd_store_check_publish(const rkd_store_draft *d, int64_t latest, rk_error *err)
{
    if (d->if_match_latest == RKD_STORE_ANY || d->if_match_latest == latest)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_EPRECONDITION, NULL,
                        "cluster %s: the latest version is %lld, not "
                        "%lld; fetch it, review, and publish again",
                        d->cluster, (long long)latest, (long long)d->if_match_latest);
}

int rkd_store_check_room(const rkd_store_draft *d, int64_t count, rk_error *err)
{
    if (d->max_clusters <= 0 || count < d->max_clusters)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ETOOMANYCLUSTERS, "cluster",
                        "%s is a new cluster, and the store holds %lld clusters, this server's "
                        "limit (ringkeeperd --max-clusters %lld); publish to an existing cluster, "
                        "or raise --max-clusters",
                        d->cluster, (long long)count, (long long)d->max_clusters);
}

int rkd_store_check_activation(const char *cluster, int64_t v, int64_t latest, int64_t active,
                               int64_t if_match_active, rk_error *err)
{
    if (v < 1 || v > latest)
        return rkd_store_missing(err, RKD_STORE_ENOVERSION, cluster, v);
    if (if_match_active != RKD_STORE_ANY && if_match_active != active)
        return rk_error_set(err, RKD_STORE_EPRECONDITION, NULL,
                            "cluster %s: the active version is %lld, not "
                            "%lld",
                            cluster, (long long)active, (long long)if_match_active);
    if (v <= active)
        return rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                            "cluster %s: version %lld is not newer than the "
                            "active version %lld; to roll back, revert to it and activate "
                            "the copy",
                            cluster, (long long)v, (long long)active);
    return RK_OK;
}

void rkd_store_digest(int64_t active, const char *active_fp, int64_t v, const char *v_fp,
                      char out[RK_PLAN_DIGEST_LEN])
{
    rk_plan_digest(active, active ? active_fp : "", v, v_fp, out);
}

int rkd_store_check_approval(const char *cluster, int64_t v, const char *digest, const char *want,
                             const rkd_store_policy *p, const char *author, const char *approver,
                             rk_error *err)
{
    if (strcmp(digest, want) != 0) /* rkd_store_approve says which plan `digest` is, if any */
        return rk_error_set(err, RKD_STORE_EPLANCHANGED, "digest",
                            "cluster %s: the plan to version %lld is now %s, not %s", cluster,
                            (long long)v, want, digest);
    if (p->distinct_approver && author && approver && strcmp(author, approver) == 0)
        return rk_error_set(err, RKD_STORE_ESELFAPPROVAL, NULL,
                            "cluster %s: %s published version %lld and the policy asks for a "
                            "distinct approver; another operator must approve it",
                            cluster, approver, (long long)v);
    return RK_OK;
}

int rkd_store_check_approvals(const char *cluster, int64_t v, int64_t active, const char *digest,
                              const rkd_store_policy *p, int64_t have, rk_error *err)
{
    char over[40] = "(a first activation)";
    if (have >= p->approvals)
        return RK_OK;
    if (active)
        snprintf(over, sizeof over, "over %lld", (long long)active);
    return rk_error_set(err, RKD_STORE_EAPPROVAL, NULL,
                        "cluster %s: activating version %lld %s needs %lld approval%s of plan %s "
                        "and has %lld; approve it with: ringkeeper approve %lld",
                        cluster, (long long)v, over, (long long)p->approvals,
                        p->approvals == 1 ? "" : "s", digest, (long long)have, (long long)v);
}

int rkd_store_run_gate(const rkd_store_gate *gate, const rkd_store_gate_view *view, double *moved,
                       rk_error *err)
{
    return gate ? gate->check(gate->arg, view, moved, err) : RK_OK;
}

int rkd_store_check_window(const char *cluster, int64_t open, int64_t previous, rk_error *err)
{
    if (!open)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_EWINDOWOPEN, NULL,
                        "cluster %s: the migration window from version %lld to %lld is open; "
                        "once the data has moved, finish it (ringkeeper migration finish "
                        "--cluster %s, or POST /v1/clusters/%s/migration/finish), then activate",
                        cluster, (long long)previous, (long long)open, cluster, cluster);
}

int rkd_store_no_window(const char *cluster, rk_error *err)
{
    return rk_error_set(err, RKD_STORE_ENOWINDOW, NULL,
                        "cluster %s has no open migration window: one opens when a version is "
                        "activated over another under a policy with migration_window set",
                        cluster);
}

void rkd_store_draft_of(const rkd_store_version *v, const char *doc, rkd_store_draft *d)
{
    *d = (rkd_store_draft){
        .cluster = v->cluster,
        .topology = doc,
        .scheme = rk_scheme_name(v->scheme),
        .hash = rk_hash_name(v->hash),
        .vnode_factor = v->vnode_factor,
        .points = v->points,
        .fingerprint = v->fingerprint,
        .created_at = v->created_at,
        .author = v->author,
        .comment = v->comment,
        .if_match_latest = RKD_STORE_ANY,
        .moved_fraction = -1,
    };
}
