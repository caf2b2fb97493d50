/* store_etcd_cutover.c — the cutover (docs/API.md) in the etcd store: activation with its approval
 * gate and migration window, policies, approvals and the audit of events. Each change is one
 * rke_step (one txn guarded by the cluster's head), its event written in that txn, and the
 * approvals an activation needs are read in its step: an approval added meanwhile moves the head,
 * so the activation is rebuilt on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_etcd_shared.h"

/* ---- Policies and plans ---- */

/* The policy in `kv` (the defaults when it is absent). */
static int policy_from_kv(const rke_kv *kv, const char *cluster, rkd_store_policy *out,
                          rk_error *err)
{
    *out = RKD_STORE_POLICY_DEFAULTS;
    if (!kv->mod_revision)
        return RK_OK;
    json_t *j = rke_kv_json(kv);
    int rc = json_is_object(j) ? RK_OK : rke_damaged(err, cluster, "the policy");
    if (rc == RK_OK) {
        out->max_moved_fraction = json_number_value(json_object_get(j, "max_moved_fraction"));
        out->max_balance_after = json_number_value(json_object_get(j, "max_balance_after"));
        out->approvals = json_integer_value(json_object_get(j, "approvals"));
        out->distinct_approver = json_is_true(json_object_get(j, "distinct_approver"));
        out->migration_window = json_is_true(json_object_get(j, "migration_window"));
        out->prewarm = json_is_true(json_object_get(j, "prewarm"));
        out->max_moved_bytes = json_integer_value(json_object_get(j, "max_moved_bytes"));
    }
    json_decref(j);
    return rc;
}

int rke_policy_from(const rke_kvs *got, const char *cluster, rkd_store_policy *out, rk_error *err)
{
    static const rke_kv none = {0};
    return policy_from_kv(got->count ? &got->items[0] : &none, cluster, out, err);
}

/* "a/<v>/<digest>/" then the approver: an approval's key, so a range counts a plan's approvals. */
void rke_approval_key(rke_store *s, char key[RKE_KEY_MAX], const char *cluster, int64_t v,
                      const char *digest, const char *approver)
{
    char what[RKE_KEY_MAX];
    snprintf(what, sizeof what, "a/%020lld/%s/%s", (long long)v, digest, approver ? approver : "");
    rke_key(s, key, cluster, what);
}

enum {
    READ_ACTIVE = RKE_CUTOVER_ACTIVE,
    READ_POLICY,
    READ_ROLLOUT,
    READ_V,
    READ_TOPOLOGY,
    READ_APPROVALS
};

void rke_cutover_reads_deinit(rke_cutover_reads *r)
{
    json_decref(r->active_meta);
    json_decref(r->meta);
    free(r->rollout);
    free(r->text);
    rke_kvs_free(&r->approvals);
    memset(r, 0, sizeof *r);
}

int rke_cutover_keys_init(rke_store *s, const char *cluster, int64_t v, int64_t active, int rollout,
                          rke_cutover_keys *k, rk_error *err)
{
    char what[64];
    rke_key(s, k->key[READ_POLICY], cluster, "policy");
    rke_doc_key(s, k->key[READ_ROLLOUT], cluster, RKD_DOC_ROLLOUT);
    rke_key_num(s, k->key[READ_ACTIVE], cluster, "v/", active);
    rke_key_num(s, k->key[READ_V], cluster, "v/", v);
    rke_key_num(s, k->key[READ_TOPOLOGY], cluster, "t/", v);
    snprintf(what, sizeof what, "a/%020lld/", (long long)v);
    rke_key(s, k->key[READ_APPROVALS], cluster, what);
    k->end = rke_prefix_end(k->key[READ_APPROVALS]);
    k->n = 0;
    for (int i = 0; i < RKE_CUTOVER_READS; i++) {
        int read = (i != READ_ROLLOUT || rollout) && (v || i < READ_V);
        k->at[i] = read ? (int)k->n : -1;
        if (read)
            k->req[k->n++] = (rke_range_req){k->key[i], i == READ_APPROVALS ? k->end : NULL};
    }
    k->active = active;
    return k->end ? RK_OK : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
}

void rke_cutover_keys_deinit(rke_cutover_keys *k)
{
    free(k->end);
    k->end = NULL;
}

int rke_cutover_from(const rke_cutover_keys *k, rke_kvs got[RKE_CUTOVER_READS], const char *cluster,
                     int64_t v, int64_t active, rke_cutover_reads *r, rk_error *err)
{
    rke_kvs none[RKE_CUTOVER_READS] = {{0}}, *at[RKE_CUTOVER_READS];
    for (int i = 0; i < RKE_CUTOVER_READS; i++) /* a range not read: as one read empty */
        at[i] = k->at[i] >= 0 ? &got[k->at[i]] : &none[i];
    memset(r, 0, sizeof *r);
    int rc = rke_policy_from(at[READ_POLICY], cluster, &r->policy, err);
    rc = rc ? rc : rke_meta_from(at[READ_ACTIVE], active, cluster, &r->active_meta, err);
    rc = rc ? rc : rke_meta_from(at[READ_V], v, cluster, &r->meta, err);
    r->rollout = rke_kvs_take_value(at[READ_ROLLOUT]);
    r->text = rke_kvs_take_value(at[READ_TOPOLOGY]);
    r->approvals = *at[READ_APPROVALS];
    *at[READ_APPROVALS] = (rke_kvs){0};
    return rc;
}

int rke_read_cutover(rke_store *s, const char *cluster, int64_t v, int64_t active, int rollout,
                     rke_cutover_reads *r, rk_error *err)
{
    rke_cutover_keys k;
    rke_kvs got[RKE_CUTOVER_READS] = {{0}};
    memset(r, 0, sizeof *r);
    int rc = rke_cutover_keys_init(s, cluster, v, active, rollout, &k, err);
    rc = rc ? rc : rke_ranges(s->etcd, k.req, k.n, got, err);
    rc = rc ? rc : rke_cutover_from(&k, got, cluster, v, active, r, err);
    for (int i = 0; i < RKE_CUTOVER_READS; i++)
        rke_kvs_free(&got[i]);
    rke_cutover_keys_deinit(&k);
    return rc;
}

/* The digest of the plan from the active version (r->active_meta; none: 0) to `to`. */
static void plan_digest(const rke_head *cur, const rke_cutover_reads *r, const rke_plan_target *to,
                        char digest[RK_PLAN_DIGEST_LEN])
{
    rkd_store_digest(cur->active, rke_str(r->active_meta, "fingerprint"), to->v, to->fingerprint,
                     digest);
}

/* Approvals of plan `digest` for v among r's, by anyone but `excluded` (NULL: count all). */
static int64_t count_approvals(rke_store *s, const char *cluster, const rke_cutover_reads *r,
                               int64_t v, const char *digest, const char *excluded)
{
    char plan[RKE_KEY_MAX], skip[RKE_KEY_MAX];
    int64_t have = 0;
    rke_approval_key(s, plan, cluster, v, digest, NULL);
    rke_approval_key(s, skip, cluster, v, digest, excluded);
    for (size_t i = 0; i < r->approvals.count; i++) {
        const char *key = r->approvals.items[i].key;
        have += strncmp(key, plan, strlen(plan)) == 0 && (!excluded || strcmp(key, skip) != 0);
    }
    return have;
}

/* ---- Activation ---- */

int rke_gate_in_step(const rke_step *st, const rke_head *cur, const rke_cutover_reads *r,
                     const rk_ring *ring, rkd_store_activation *a, rk_error *err)
{
    rkd_store_gate_view view = {.cluster = st->cluster,
                                .active = cur->active,
                                .previous = cur->previous,
                                .policy = r->policy,
                                .rollout = r->rollout,
                                .ring = ring};
    return rkd_store_run_gate(a->gate, &view, &a->moved_fraction, err);
}

int rke_activate_in_step(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next,
                         rke_txn *t, const rke_plan_target *to, const rkd_store_activation *a,
                         const rke_cutover_reads *r, rk_error *err)
{
    char digest[RK_PLAN_DIGEST_LEN];
    rkd_store_policy policy = r->policy;
    int64_t have = 0;
    int rc =
        rkd_store_check_window(st->cluster, cur->previous ? cur->active : 0, cur->previous, err);
    plan_digest(cur, r, to, digest);
    if (a->rollout) /* its approvals are the rollout's, and it opens a window unless pre-warmed */
        policy.approvals = 0, policy.migration_window |= !policy.prewarm;
    if (rc == RK_OK && policy.approvals > 0)
        have = count_approvals(s, st->cluster, r, to->v, digest,
                               policy.distinct_approver ? to->author : NULL);
    rc =
        rc ? rc
           : rkd_store_check_approvals(st->cluster, to->v, cur->active, digest, &policy, have, err);
    if (rc != RK_OK)
        return rc;
    next->active = to->v;
    next->previous = policy.migration_window ? cur->active : 0; /* a first activation keeps none */
    rke_event e = {a->reason ? "force" : "activate",
                   a->author,
                   to->v,
                   cur->active,
                   cur->active ? digest : NULL,
                   a->moved_fraction,
                   a->reason ? a->reason : a->rollout};
    rke_step_event(s, st, next, t, &e);
    return RK_OK;
}

int rke_cutover_with_head(rke_store *s, rke_step *st, int64_t v, int64_t hint, int rollout,
                          rke_cutover_with *w, rk_error *err)
{
    memset(w, 0, sizeof *w);
    w->rollout = rollout;
    if (hint <= 0)
        return RK_OK;
    int rc = rke_cutover_keys_init(s, st->cluster, v, hint, rollout, &w->keys, err);
    if (rc == RK_OK)
        w->used = 1, st->with = w->keys.req, st->with_n = w->keys.n, st->with_got = w->got;
    return rc;
}

void rke_cutover_with_done(rke_cutover_with *w)
{
    for (int i = 0; i < RKE_CUTOVER_READS; i++)
        rke_kvs_free(&w->got[i]);
    rke_cutover_keys_deinit(&w->keys);
}

int rke_step_cutover_reads(rke_store *s, rke_step *st, int64_t v, rke_cutover_with *w,
                           const rke_head *cur, rke_cutover_reads *r, rk_error *err)
{
    if (!w->used)
        return rke_read_cutover(s, st->cluster, v, cur->active, w->rollout, r, err);
    int rc = RK_OK;
    rke_kvs *active = &w->got[RKE_CUTOVER_ACTIVE];
    if (w->keys.active != cur->active) {
        char key[RKE_KEY_MAX];
        rke_key_num(s, key, st->cluster, "v/", cur->active);
        rke_kvs_free(active);
        rc = rke_range(s->etcd, key, NULL, active, err);
    }
    return rc ? rc : rke_cutover_from(&w->keys, w->got, st->cluster, v, cur->active, r, err);
}

typedef struct activate_arg {
    int64_t v;
    const rkd_store_activation *a;
    json_t *meta;     /* v's metadata as the last build wrote it */
    char *text;       /* v's topology as the last build read it (NULL: chunked) */
    int64_t previous; /* the migration window the last build opened (0: none) */
    rke_cutover_with with;
} activate_arg;

static int build_activate(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next,
                          rke_txn *t, rk_error *err)
{
    activate_arg *p = st->arg;
    json_decref(p->meta);
    free(p->text);
    p->meta = NULL, p->text = NULL;
    rke_cutover_reads r = {0};
    rkd_store_activation a = *p->a;
    int exists = p->v >= 1 && p->v <= cur->latest; /* the gate's checks come first, if it does */
    int rc = exists ? rke_step_cutover_reads(s, st, p->v, &p->with, cur, &r, err) : RK_OK;
    rc = rc || !exists ? rc : rke_gate_in_step(st, cur, &r, NULL, &a, err);
    rc = rc ? rc
            : rkd_store_check_activation(st->cluster, p->v, cur->latest, cur->active,
                                         a.if_match_active, err);
    if (rc != RK_OK) {
        rke_cutover_reads_deinit(&r);
        return rc;
    }
    p->meta = json_incref(r.meta);
    p->text = r.text, r.text = NULL;
    const char *author = json_string_value(json_object_get(p->meta, "author"));
    rke_plan_target to = {p->v, rke_str(p->meta, "fingerprint"), author};
    rc = rke_activate_in_step(s, st, cur, next, t, &to, &a, &r, err);
    rke_cutover_reads_deinit(&r);
    p->previous = next->previous;
    t->failed |= json_object_set_new(p->meta, "activated_at", json_string(st->now)) != 0;
    rke_put_meta(s, t, st->cluster, p->v, p->meta);
    return rc;
}

/* The record is made from the metadata the step wrote, as active: what this activation did, even
 * if another one follows before the answer leaves. */
int rke_activate(void *b, const char *cluster, int64_t v, const rkd_store_activation *a,
                 const char *now, rkd_store_version **out, char **doc, rk_error *err)
{
    rke_store *s = b;
    activate_arg p = {v, a, NULL, NULL, 0, {.used = 0}};
    rke_step st = {.cluster = cluster, .build = build_activate, .arg = &p, .now = now};
    int rc = rke_cutover_with_head(s, &st, v, a->active_hint, a->gate != NULL, &p.with, err);
    rc = rc ? rc : rke_run_step(s, &st, err);
    rke_cutover_with_done(&p.with);
    rke_head h = {.latest = v, .active = v, .previous = p.previous};
    if (rc == RK_OK && !p.meta) /* applied late, found in the events: read it back */
        rc = rke_read_meta(s, cluster, v, &p.meta, err);
    if (rc == RK_OK)
        rc = rke_version_out(s, cluster, v, &h, p.meta, p.text, out, doc, err); /* takes p.text */
    else
        free(p.text);
    json_decref(p.meta);
    return rc;
}

/* ---- Policies ---- */

int rke_get_policy(void *b, const char *cluster, rkd_store_policy *out, rk_error *err)
{
    rke_store *s = b;
    rke_head h;
    int64_t rev;
    char key[RKE_KEY_MAX];
    rke_range_req req = {key, NULL};
    rke_kvs got = {0};
    rke_key(s, key, cluster, "policy");
    int rc = rke_read_head_and(s, cluster, &h, &rev, &req, 1, &got, err);
    if (rc == RK_OK && rev == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, 0);
    rc = rc ? rc : rke_policy_from(&got, cluster, out, err);
    rke_kvs_free(&got);
    return rc;
}

typedef struct policy_arg {
    const rkd_store_policy *p;
    const char *author;
    const char *detail;
} policy_arg;

void rke_put_policy_json(rke_store *s, rke_txn *t, const char *cluster, const rkd_store_policy *p)
{
    char key[RKE_KEY_MAX];
    json_t *j = json_pack(
        "{sfsosIsbsbsbsI}", "max_moved_fraction", p->max_moved_fraction, "max_balance_after",
        p->max_balance_after == 0 ? json_null() : json_real(p->max_balance_after), "approvals",
        (json_int_t)p->approvals, "distinct_approver", p->distinct_approver != 0,
        "migration_window", p->migration_window != 0, "prewarm", p->prewarm != 0, "max_moved_bytes",
        (json_int_t)p->max_moved_bytes);
    rke_key(s, key, cluster, "policy");
    rke_put_json(t, key, j);
    json_decref(j);
}

static int build_policy(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next, rke_txn *t,
                        rk_error *err)
{
    const policy_arg *p = st->arg;
    (void)cur;
    (void)err;
    rke_put_policy_json(s, t, st->cluster, p->p);
    rke_event e = {"policy", p->author, 0, 0, NULL, -1, p->detail};
    rke_step_event(s, st, next, t, &e);
    return RK_OK;
}

int rke_put_policy(void *b, const char *cluster, const rkd_store_policy *p, const char *author,
                   const char *detail, const char *now, rk_error *err)
{
    policy_arg arg = {p, author, detail};
    rke_step st = {.cluster = cluster, .build = build_policy, .arg = &arg, .now = now};
    return rke_run_step(b, &st, err);
}

/* ---- Approvals ---- */

typedef struct approve_arg {
    const rkd_store_approval_req *a;
    rke_cutover_with with;
} approve_arg;

/* Puts the approval unless the approver already gave it (approving twice is one approval). */
static void put_approval(rke_store *s, rke_step *st, const rkd_store_approval_req *p,
                         const rke_cutover_reads *r, rke_txn *t)
{
    char key[RKE_KEY_MAX];
    rke_approval_key(s, key, st->cluster, p->version, p->digest, p->approver);
    for (size_t i = 0; i < r->approvals.count; i++)
        if (strcmp(r->approvals.items[i].key, key) == 0)
            return;
    json_t *j = json_pack("{ssss?}", "created_at", st->now, "comment", p->comment);
    rke_put_json(t, key, j);
    json_decref(j);
}

static int build_approve(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next,
                         rke_txn *t, rk_error *err)
{
    approve_arg *arg = st->arg;
    const rkd_store_approval_req *p = arg->a;
    char want[RK_PLAN_DIGEST_LEN];
    rke_cutover_reads r = {0};
    int rc = rkd_store_check_activation(st->cluster, p->version, cur->latest, cur->active,
                                        RKD_STORE_ANY, err);
    rc = rc ? rc : rke_step_cutover_reads(s, st, p->version, &arg->with, cur, &r, err);
    if (rc != RK_OK) {
        rke_cutover_reads_deinit(&r);
        return rc;
    }
    const char *author = json_string_value(json_object_get(r.meta, "author"));
    rke_plan_target to = {p->version, rke_str(r.meta, "fingerprint"), author};
    plan_digest(cur, &r, &to, want);
    rc = rkd_store_check_approval(st->cluster, p->version, p->digest, want, &r.policy, author,
                                  p->approver, err);
    rc = rc ? rc : p->dry_run ? RKD_STORE_EDRYRUN : RK_OK;
    if (rc == RK_OK)
        put_approval(s, st, p, &r, t);
    rke_cutover_reads_deinit(&r);
    rke_event e = {"approve", p->approver, p->version, cur->active, p->digest, -1, p->comment};
    if (rc == RK_OK)
        rke_step_event(s, st, next, t, &e);
    return rc;
}

/* Read with the head, as an activation's (the same keys): two requests when the hint is right. */
int rke_approve(void *b, const char *cluster, const rkd_store_approval_req *a, const char *now,
                rk_error *err)
{
    rke_store *s = b;
    approve_arg arg = {a, {.used = 0}};
    rke_step st = {.cluster = cluster, .build = build_approve, .arg = &arg, .now = now};
    int rc = rke_cutover_with_head(s, &st, a->version, a->active_hint, 0, &arg.with, err);
    rc = rc ? rc : rke_run_step(s, &st, err);
    rke_cutover_with_done(&arg.with);
    return rc;
}

/* ---- The migration window ---- */

typedef struct finish_arg {
    const char *author;
    const char *comment;
} finish_arg;

/* The window is the head's `previous`, so closing it moves the head: other replicas' watches see
 * it, and an activation racing the finish is rebuilt on it. */
static int build_finish(rke_store *s, rke_step *st, const rke_head *cur, rke_head *next, rke_txn *t,
                        rk_error *err)
{
    const finish_arg *p = st->arg;
    if (!cur->previous)
        return rkd_store_no_window(st->cluster, err);
    next->previous = 0;
    st->version = cur->active;
    rke_event e = {"finish", p->author, cur->active, cur->previous, NULL, -1, p->comment};
    rke_step_event(s, st, next, t, &e);
    return RK_OK;
}

/* The active version is read back after the step: its metadata no longer changes once it is
 * active, and st.version is the one the finish concerned, even if an activation follows. */
int rke_finish_migration(void *b, const char *cluster, const char *author, const char *comment,
                         const char *now, rkd_store_version **out, char **doc, rk_error *err)
{
    rke_store *s = b;
    finish_arg arg = {author, comment};
    rke_step st = {.cluster = cluster, .build = build_finish, .arg = &arg, .now = now};
    json_t *meta = NULL;
    int rc = rke_run_step(s, &st, err);
    rke_head h = {.latest = st.version, .active = st.version};
    rc = rc ? rc : rke_read_meta(s, cluster, st.version, &meta, err);
    rc = rc ? rc : rke_version_out(s, cluster, st.version, &h, meta, NULL, out, doc, err);
    json_decref(meta);
    return rc;
}

/* ---- Events ---- */

static int parse_event(const rke_kv *kv, int64_t n, rkd_store_event *e, rk_error *err)
{
    json_t *j = rke_kv_json(kv);
    json_t *moved = json_object_get(j, "moved_fraction");
    e->event = n;
    snprintf(e->kind, sizeof e->kind, "%s", rke_str(j, "kind"));
    snprintf(e->at, sizeof e->at, "%s", rke_str(j, "at"));
    snprintf(e->digest, sizeof e->digest, "%s", rke_str(j, "digest"));
    e->version = json_integer_value(json_object_get(j, "version"));
    e->from_version = json_integer_value(json_object_get(j, "from_version"));
    e->moved_fraction = json_is_number(moved) ? json_number_value(moved) : -1;
    int rc = j ? rkd_store_strdup(json_string_value(json_object_get(j, "author")), &e->author, err)
               : rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "an event is damaged in etcd");
    rc = rc ? rc
            : rkd_store_strdup(json_string_value(json_object_get(j, "detail")), &e->detail, err);
    json_decref(j);
    return rc;
}

int rke_list_events(void *b, const char *cluster, size_t limit, int64_t before,
                    rkd_store_event_list *out, rk_error *err)
{
    rke_store *s = b;
    rke_head h;
    rke_kvs kvs = {0};
    int64_t rev, lo, hi;
    int rc = rke_read_head(s, cluster, &h, &rev, err);
    if (rc == RK_OK && rev == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, 0);
    rke_page(h.events, limit, before, &lo, &hi, &out->next_before);
    if (rc != RK_OK || hi < 1)
        return rc;
    rc = rke_read_numbered(s, cluster, "e/", lo, hi, &kvs, err);
    out->items = rc ? NULL : calloc(kvs.count, sizeof *out->items);
    if (rc == RK_OK && !out->items)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory listing events");
    for (size_t i = kvs.count; rc == RK_OK && i-- > 0;) /* newest first */
        rc = parse_event(&kvs.items[i], lo + (int64_t)i, &out->items[out->count++], err);
    rke_kvs_free(&kvs);
    return rc;
}
