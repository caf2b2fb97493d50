/* store_versions.c — publishing (gap-free numbering) and activating versions in the SQLite store,
 * two data operations of its rkd_store_ops; reading them is store_reads.c. The connection,
 * statements and transactions come from store_sqlite_db.c; what a version holds comes ready-made
 * from store_domain.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

static const char sql_insert_version[] =
    "INSERT INTO versions (cluster_id, version, state, created_at, author, comment, hash, "
    "vnode_factor, points, fingerprint, topology, scheme) VALUES (:cid, :v, 'staged', :now, "
    ":author, :comment, :hash, :vnode_factor, :points, :fingerprint, :topology, :scheme)";

/* ---- Publishing and activating ---- */

/* The state changes of an activation, inside the caller's transaction. Retiring first keeps the
 * one-active-version index satisfied at every statement. */
static int apply_activation(rks_store *s, int64_t cid, int64_t v, const char *now, rk_error *err)
{
    static const char *const steps[] = {
        "UPDATE versions SET state = 'retired' WHERE cluster_id = :cid AND state = 'active'",
        "UPDATE versions SET state = 'superseded' WHERE cluster_id = :cid AND state = 'staged' "
        "AND version < :v",
        "UPDATE versions SET state = 'active', activated_at = :now WHERE cluster_id = :cid AND "
        "version = :v",
    };
    rks_params p = {.cid = cid, .v = v, .now = now};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc = rks_exec_params(s, steps[i], &p, "activating", err);
        if (rc != RK_OK)
            return rc;
    }
    return RK_OK;
}

/* The migration window, the approvals, the state changes, the event of activating p->v over
 * `active` (whose preconditions and gate the caller has checked, `moved` the gate's figure) and
 * the window it opens. */
static int activate_checked(rks_store *s, const rks_params *p, int64_t active,
                            const rkd_store_activation *a, double moved, rk_error *err)
{
    char digest[RK_PLAN_DIGEST_LEN] = "";
    int rc = rks_check_window_locked(s, p, err);
    rc = rc ? rc
            : rks_gate_locked(s, p->cluster, p->cid, active, p->v, a->rollout != NULL, digest, err);
    rc = rc ? rc : apply_activation(s, p->cid, p->v, p->now, err);
    rks_event e = {.kind = a->reason ? "force" : "activate",
                   .author = a->author,
                   .version = p->v,
                   .from_version = active,
                   .digest = active ? digest : NULL,
                   .moved_fraction = moved,
                   .detail = a->reason ? a->reason : a->rollout};
    rc = rc ? rc : rks_add_event(s, p->cid, &e, p->now, err);
    return rc ? rc : rks_open_window_locked(s, p, active, a->rollout != NULL, a->author, err);
}

int rks_insert_version(rks_store *s, int64_t cid, int64_t v, const rkd_store_draft *d,
                       rk_error *err)
{
    sqlite3_stmt *st = NULL;
    rks_params p = {.cid = cid, .v = v, .now = d->created_at};
    int rc = rks_statement(s, sql_insert_version, &p, &st, err);
    if (rc != RK_OK)
        goto done;
    int b = rks_bind_text(st, ":author", d->author);
    b = b ? b : rks_bind_text(st, ":comment", d->comment);
    b = b ? b : rks_bind_text(st, ":hash", d->hash);
    b = b ? b : rks_bind_int(st, ":vnode_factor", d->vnode_factor);
    b = b ? b : rks_bind_text(st, ":scheme", d->scheme);
    b = b ? b : rks_bind_int(st, ":points", (int64_t)d->points);
    b = b ? b : rks_bind_text(st, ":fingerprint", d->fingerprint);
    b = b ? b : rks_bind_text(st, ":topology", d->topology);
    b = b ? b : sqlite3_step(st);
    if (b != SQLITE_DONE)
        rc = rks_db_err(s, err, b, "storing the version");
done:
    sqlite3_finalize(st);
    return rc;
}

/* Numbers the version after the latest one inside the caller's BEGIN IMMEDIATE transaction:
 * holding the write lock from this read to the insert is what keeps numbers gap-free. */
static int publish_locked(rks_store *s, const rkd_store_draft *d, rkd_store_published *out,
                          rk_error *err)
{
    rks_params p = {.cluster = d->cluster, .now = d->created_at};
    int64_t latest = 0, count = 0;
    int rc = rks_int_query(s, rks_sql_cluster_id, &p, &p.cid, err);
    if (rc == RK_OK && p.cid == 0 && d->max_clusters > 0) { /* a new cluster: is there room? */
        rc = rks_int_query(s, "SELECT COUNT(*) FROM clusters", &p, &count, err);
        rc = rc ? rc : rkd_store_check_room(d, count, err);
    }
    if (rc == RK_OK && p.cid == 0)
        rc = rks_exec_params(s, "INSERT INTO clusters (name, created_at) VALUES (:cluster, :now)",
                             &p, "creating the cluster", err);
    rc = rc || p.cid ? rc : rks_int_query(s, rks_sql_cluster_id, &p, &p.cid, err);
    rc = rc ? rc : rks_int_query(s, rks_sql_max_version, &p, &latest, err);
    rc = rc ? rc : rkd_store_check_publish(d, latest, err);
    rc = rc ? rc : rks_insert_version(s, p.cid, latest + 1, d, err);
    rks_event e = {.kind = d->revert_of ? "revert" : "publish",
                   .author = d->author,
                   .version = latest + 1,
                   .from_version = d->revert_of,
                   .moved_fraction = -1,
                   .detail = d->comment};
    rc = rc ? rc : rks_add_event(s, p.cid, &e, d->created_at, err);
    if (rc == RK_OK && d->activate) {
        rkd_store_activation a = {RKD_STORE_ANY, d->author, d->moved_fraction, NULL, NULL, 0,
                                  d->gate};
        int64_t active = 0;
        double moved = a.moved_fraction;
        p.v = latest + 1;
        rc = rks_int_query(s, rks_sql_active_version, &p, &active, err);
        rc = rc ? rc : rks_gate_view_locked(s, &p, active, d->ring, a.gate, &moved, err);
        rc = rc ? rc : activate_checked(s, &p, active, &a, moved, err);
        rc =
            rc ? rc : rks_window_kept_locked(s, &p, &out->previous, out->previous_fingerprint, err);
    }
    if (rc == RK_OK)
        out->version = latest + 1;
    return rc;
}

int rks_publish(void *b, const rkd_store_draft *d, rkd_store_published *out, rk_error *err)
{
    rks_store *s = b;
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : publish_locked(s, d, out, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Reads what the checks need, lets them decide (the caller's gate first, as its checks come
 * before the store's), then applies the activation. */
static int activate_locked(rks_store *s, rks_params *p, const rkd_store_activation *a,
                           rk_error *err)
{
    int64_t exists = 0, active = 0;
    double moved = a->moved_fraction;
    int rc = rks_int_query(s, rks_sql_cluster_id, p, &p->cid, err);
    if (rc == RK_OK && p->cid == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, p->cluster, p->v);
    rc = rc ? rc : rks_int_query(s, rks_sql_max_version, p, &exists, err);
    rc = rc ? rc : rks_int_query(s, rks_sql_active_version, p, &active, err);
    if (rc == RK_OK && p->v >= 1 && p->v <= exists) /* the gate's checks come first, if it does */
        rc = rks_gate_view_locked(s, p, active, NULL, a->gate, &moved, err);
    rc = rc ? rc
            : rkd_store_check_activation(p->cluster, p->v, exists, active, a->if_match_active, err);
    return rc ? rc : activate_checked(s, p, active, a, moved, err);
}

int rks_activate(void *b, const char *cluster, int64_t v, const rkd_store_activation *a,
                 const char *now, rkd_store_version **out, char **doc, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster, .v = v, .now = now};
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : activate_locked(s, &p, a, err);
    rc = rc ? rc : rks_fetch_locked(s, RKD_PICK_VERSION, &p, out, doc, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
