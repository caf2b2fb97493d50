/* store_domain.c — the store-neutral layer: every rkd_store_* call of store.h, implemented once
 * over a backend's rkd_store_ops (store_backend.h). It checks arguments, builds what a publish
 * stores, parses what reads return and counts activations for watchers. The rules every backend
 * applies the same way (missing versions, preconditions) are store_rules.c's. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "store_domain_internal.h"

/* ---- The handle ---- */

/* Calls the watch (`v`: the active version, or NULL); only activations move the sequence. */
static void notify(rkd_store *s, const char *cluster, int64_t version, rkd_store_change what,
                   const rkd_store_version *v)
{
    uint64_t seq =
        what == RKD_CHANGE_ACTIVATION ? atomic_fetch_add(&s->seq, 1) + 1 : atomic_load(&s->seq);
    pthread_mutex_lock(&s->watch_mu);
    if (s->watch)
        s->watch(s->watch_arg, cluster, version, what, seq, v);
    pthread_mutex_unlock(&s->watch_mu);
}

/* ops->watch's callback: another handle changed `cluster`'s ring. */
static void remote_change(void *arg, const char *cluster, int64_t version, rkd_store_change what)
{
    notify(arg, cluster, version, what, NULL);
}

rkd_store *rkd_store_new(const rkd_store_ops *ops, void *b, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    rkd_store *s = calloc(1, sizeof *s);
    if (!s) {
        ops->close(b);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    if (pthread_mutex_init(&s->watch_mu, NULL) != 0) {
        ops->close(b);
        free(s);
        rk_error_set(err, RK_ENOMEM, NULL, "cannot create a mutex");
        return NULL;
    }
    s->ops = ops;
    s->b = b;
    atomic_init(&s->seq, 0);
    int rc = ops->store_id(b, s->id, err);
    rc = rc || !ops->watch ? rc : ops->watch(b, remote_change, s, err);
    if (rc == RK_OK)
        return s;
    rkd_store_close(s);
    return NULL;
}

void rkd_store_close(rkd_store *s)
{
    if (!s)
        return;
    s->ops->close(s->b); /* first: a backend's watch thread may still call remote_change */
    pthread_mutex_destroy(&s->watch_mu);
    free(s);
}

const char *rkd_store_id(const rkd_store *s)
{
    return s->id;
}

int rkd_store_ping(rkd_store *s, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    if (s->ops->ping(s->b, err) == RK_OK)
        return RK_OK;
    err->code = RKD_STORE_EUNAVAILABLE; /* any failure here means not ready */
    return RKD_STORE_EUNAVAILABLE;
}

int rkd_store_read_only(rkd_store *s)
{
    return s->ops->read_only ? s->ops->read_only(s->b) : 0;
}

int rkd_store_stale(rkd_store *s, char out[RKD_STORE_STALE_LEN])
{
    out[0] = '\0';
    return s->ops->stale ? s->ops->stale(s->b, out) : 0;
}

int rkd_store_check_cluster(const char *cluster, rk_error *err)
{
    if (!cluster || !cluster[0])
        return rk_error_set(err, RK_EINVAL, NULL, "a cluster name is required");
    return RK_OK;
}

void rkd_store_format_time(time_t t, char out[RKD_STORE_TIME_LEN])
{
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, RKD_STORE_TIME_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, RKD_STORE_TIME_LEN, "1970-01-01T00:00:00Z");
}

static void now_rfc3339(char out[RKD_STORE_TIME_LEN])
{
    rkd_store_format_time(time(NULL), out);
}

/* ---- Reading versions ---- */

/* Parses the stored topology into rec; libringkeeper validates it again, so a damaged one is
 * reported instead of served. */
static int attach_topology(rkd_store_version *rec, const char *doc, rk_error *err)
{
    rk_error perr = {0};
    rec->topology = rk_topology_parse(doc ? doc : "", doc ? strlen(doc) : 0, &perr);
    if (rec->topology)
        return RK_OK;
    if (perr.code == RK_ENOMEM)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory parsing a topology");
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                        "cluster %s version %lld is damaged in the database: "
                        "%s",
                        rec->cluster, (long long)rec->version, perr.message);
}

/* Hands out rec with its topology parsed from doc and the store's id when rc is RK_OK; frees
 * what is left. */
static int finish_read(const rkd_store *s, int rc, rkd_store_version *rec, char *doc,
                       rkd_store_version **out, rk_error *err)
{
    rc = rc ? rc : attach_topology(rec, doc, err);
    if (rc == RK_OK) {
        memcpy(rec->store_id, s->id, sizeof rec->store_id);
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rkd_store_version_free(rec);
    return rc;
}

static int get_one(rkd_store *s, const char *cluster, rkd_store_pick pick, int64_t v,
                   rkd_store_version **out, rk_error *err)
{
    rk_error scratch;
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    *out = NULL;
    int rc = rkd_store_check_cluster(cluster, err);
    if (rc != RK_OK)
        return rc;
    rc = s->ops->get(s->b, cluster, pick, v, &rec, &doc, err);
    return finish_read(s, rc, rec, doc, out, err);
}

int rkd_store_get(rkd_store *s, const char *cluster, int64_t v, rkd_store_version **out,
                  rk_error *err)
{
    return get_one(s, cluster, RKD_PICK_VERSION, v, out, err);
}

int rkd_store_get_active(rkd_store *s, const char *cluster, rkd_store_version **out, rk_error *err)
{
    return get_one(s, cluster, RKD_PICK_ACTIVE, 0, out, err);
}

int rkd_store_latest(rkd_store *s, const char *cluster, rkd_store_version **out, rk_error *err)
{
    return get_one(s, cluster, RKD_PICK_LATEST, 0, out, err);
}

/* A page of versions (into `versions`) or of events (into `events`; the other NULL): the arguments
 * checked, then the backend's list. The one flow of both pages; the caller empties its list first
 * and frees it when this fails. */
static int list_page(rkd_store *s, const char *cluster, size_t limit, int64_t before,
                     rkd_store_version_list *versions, rkd_store_event_list *events, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    int rc = rkd_store_check_cluster(cluster, err);
    if (rc != RK_OK)
        return rc;
    if (limit < 1 || limit > RKD_STORE_LIST_MAX || before < 0)
        return rk_error_set(err, RK_EINVAL, NULL, "limit must be 1..%d and before %s number",
                            RKD_STORE_LIST_MAX, events ? "an event" : "a version");
    return events ? s->ops->list_events(s->b, cluster, limit, before, events, err)
                  : s->ops->list(s->b, cluster, limit, before, versions, err);
}

int rkd_store_list(rkd_store *s, const char *cluster, size_t limit, int64_t before,
                   rkd_store_version_list *out, rk_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = list_page(s, cluster, limit, before, out, NULL, err);
    if (rc != RK_OK)
        rkd_store_version_list_free(out);
    for (size_t i = 0; i < out->count; i++)
        memcpy(out->items[i].store_id, s->id, sizeof out->items[i].store_id);
    return rc;
}

int rkd_store_list_clusters(rkd_store *s, size_t limit, const char *after,
                            rkd_store_cluster_list *out, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    memset(out, 0, sizeof *out);
    if (limit < 1 || limit > RKD_STORE_LIST_MAX)
        return rk_error_set(err, RK_EINVAL, NULL, "limit must be 1..%d", RKD_STORE_LIST_MAX);
    int rc = s->ops->list_clusters(s->b, limit, after ? after : "", out, err);
    if (rc != RK_OK)
        rkd_store_cluster_list_free(out);
    return rc;
}

int rkd_store_each_cluster(rkd_store *s, rkd_store_cluster_fn fn, void *arg, rk_error *err)
{
    rk_error scratch;
    rkd_store_cluster_list page = {0};
    char *after = NULL;
    err = err ? err : &scratch;
    int rc;
    do {
        rc = rkd_store_list_clusters(s, RKD_STORE_LIST_MAX, after, &page, err);
        for (size_t i = 0; rc == RK_OK && i < page.count; i++)
            rc = fn(arg, &page.items[i], err);
        free(after);
        after = page.next_after; /* taken from the page */
        page.next_after = NULL;
        rkd_store_cluster_list_free(&page);
    } while (rc == RK_OK && after);
    free(after);
    return rc;
}

void rkd_store_set_max_clusters(rkd_store *s, int64_t max)
{
    s->max_clusters = max > 0 ? max : 0;
}

/* ---- Publishing and activating ---- */

/* A record for `t` with everything but the version number, its JSON text in *doc and its ring in
 * *ring (the caller frees both). The ring is built here, before the backend is involved, for the
 * fingerprint, and kept for an activation's gate. */
static int new_record(const char *cluster, rk_topology *t, const char *author,
                      rkd_store_version **out, char **doc, rk_ring **ring, rk_error *err)
{
    rkd_store_version *rec = calloc(1, sizeof *rec);
    json_t *json = NULL;
    int rc = rec ? RK_OK : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    if (rc != RK_OK)
        goto done;
    rec->topology = rk_topology_ref(t);
    rec->scheme = rk_topology_scheme(t);
    rec->hash = rk_topology_hash(t);
    rec->vnode_factor = rk_topology_vnode_factor(t);
    rec->points = rk_topology_points(t);
    now_rfc3339(rec->created_at);
    rc = rkd_store_strdup(cluster, &rec->cluster, err);
    rc = rc ? rc : rkd_store_strdup(author, &rec->author, err);
    rc = rc ? rc : rkd_store_strdup(rk_topology_comment(t), &rec->comment, err);
    *ring = rc ? NULL : rk_ring_build(t, err);
    if (rc == RK_OK && !*ring)
        rc = err->code;
    if (rc != RK_OK)
        goto done;
    snprintf(rec->fingerprint, sizeof rec->fingerprint, "%s", rk_ring_fingerprint_hex(*ring));
    json = rk_topology_to_json(t);
    *doc = json ? json_dumps(json, JSON_COMPACT) : NULL;
    if (!*doc)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory serialising the topology");
done:
    json_decref(json);
    if (rc == RK_OK) {
        *out = rec;
    } else {
        rkd_store_version_free(rec);
        rk_ring_free(*ring);
        *ring = NULL;
    }
    return rc;
}

/* Stores rec (numbered on success) through the backend; `ring` is its topology's. */
static int store_record(rkd_store *s, rkd_store_version *rec, const char *doc, const rk_ring *ring,
                        const rkd_store_publish_opts *opt, rk_error *err)
{
    rkd_store_draft d;
    rkd_store_draft_of(rec, doc, &d);
    d.if_match_latest = opt->if_match_latest;
    d.activate = opt->activate;
    d.revert_of = opt->revert_of;
    d.moved_fraction = opt->moved_fraction;
    d.active_hint = opt->active_hint;
    d.gate = opt->gate;
    d.ring = ring;
    d.max_clusters = s->max_clusters;
    rkd_store_published pub = {0};
    int rc = s->ops->publish(s->b, &d, &pub, err);
    rec->version = pub.version;
    if (rc != RK_OK || !opt->activate)
        return rc;
    rec->state = RKD_STATE_ACTIVE;
    memcpy(rec->activated_at, rec->created_at, sizeof rec->activated_at);
    rec->previous = pub.previous;
    memcpy(rec->previous_fingerprint, pub.previous_fingerprint, sizeof rec->previous_fingerprint);
    notify(s, rec->cluster, rec->version, RKD_CHANGE_ACTIVATION, rec); /* as activate does */
    return RK_OK;
}

int rkd_store_publish(rkd_store *s, const char *cluster, rk_topology *t,
                      const rkd_store_publish_opts *opt, rkd_store_version **out, rk_error *err)
{
    static const rkd_store_publish_opts defaults = {NULL, RKD_STORE_ANY, 0, 0, -1, 0, NULL, NULL};
    rk_error scratch;
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    rk_ring *ring = NULL;
    err = err ? err : &scratch;
    opt = opt ? opt : &defaults;
    *out = NULL;
    int rc = rkd_store_check_cluster(cluster, err);
    if (rc == RK_OK && !t)
        rc = rk_error_set(err, RK_EINVAL, NULL, "a topology is required");
    rc = rc ? rc : new_record(cluster, t, opt->author, &rec, &doc, &ring, err);
    if (rc != RK_OK)
        return rc;
    memcpy(rec->store_id, s->id, sizeof rec->store_id);
    rc = store_record(s, rec, doc, ring, opt, err);
    if (rc == RK_OK && opt->ring) {
        *opt->ring = ring;
        ring = NULL;
    }
    rk_ring_free(ring);
    if (rc == RKD_STORE_EAPPROVAL) /* the message named the version this publish would have been */
        rk_error_set(err, rc, NULL,
                     "cluster %s: the policy needs approvals before a version is activated, and "
                     "one published with activate=true has none yet; nothing was published: "
                     "publish it without activate=true, then approve it (ringkeeper approve V) "
                     "and activate it",
                     cluster);
    if (rc == RK_OK) {
        *out = rec;
        rec = NULL;
    }
    free(doc);
    rkd_store_version_free(rec);
    return rc;
}

int rkd_store_activate(rkd_store *s, const char *cluster, int64_t v, const rkd_store_activation *a,
                       rkd_store_version **out, rk_error *err)
{
    rk_error scratch;
    char now[RKD_STORE_TIME_LEN];
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    *out = NULL;
    now_rfc3339(now);
    int rc = rkd_store_check_cluster(cluster, err);
    if (rc != RK_OK)
        return rc;
    rc = s->ops->activate(s->b, cluster, v, a, now, &rec, &doc, err);
    int committed = rc == RK_OK;
    rc = finish_read(s, rc, rec, doc, out, err);
    if (committed) /* the watch gets the version as it answers, rather than reading it again */
        notify(s, cluster, v, RKD_CHANGE_ACTIVATION, rc == RK_OK ? *out : NULL);
    return rc;
}

/* ---- Cutover (docs/API.md) ---- */

int rkd_store_finish_migration(rkd_store *s, const char *cluster, const char *author,
                               const char *comment, rkd_store_version **out, rk_error *err)
{
    rk_error scratch;
    char now[RKD_STORE_TIME_LEN];
    rkd_store_version *rec = NULL;
    char *doc = NULL;
    err = err ? err : &scratch;
    *out = NULL;
    now_rfc3339(now);
    int rc = rkd_store_check_cluster(cluster, err);
    rc = rc ? rc : s->ops->finish_migration(s->b, cluster, author, comment, now, &rec, &doc, err);
    return finish_read(s, rc, rec, doc, out, err);
}

const char *rkd_store_doc_name(rkd_store_doc_kind kind)
{
    static const char *const names[RKD_DOC_KINDS] = {
        [RKD_DOC_JOB] = "migration job",
        [RKD_DOC_ROLLOUT] = "rollout",
        [RKD_DOC_LOAD] = "load profile",
    };
    return names[kind];
}

int rkd_store_get_doc(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, char **doc,
                      int64_t *rev, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    *doc = NULL;
    *rev = 0;
    int rc = rkd_store_check_cluster(cluster, err);
    return rc ? rc : s->ops->get_doc(s->b, kind, cluster, doc, rev, err);
}

int rkd_store_put_doc(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, const char *doc,
                      int64_t rev, const rkd_store_doc_event *e, rk_error *err)
{
    rk_error scratch;
    char now[RKD_STORE_TIME_LEN];
    err = err ? err : &scratch;
    now_rfc3339(now);
    int rc = rkd_store_check_cluster(cluster, err);
    return rc ? rc : s->ops->put_doc(s->b, kind, cluster, doc, rev, e, now, err);
}

int rkd_store_get_policy(rkd_store *s, const char *cluster, rkd_store_policy *out, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    *out = RKD_STORE_POLICY_DEFAULTS;
    int rc = rkd_store_check_cluster(cluster, err);
    return rc ? rc : s->ops->get_policy(s->b, cluster, out, err);
}

static int check_policy(const rkd_store_policy *p, rk_error *err)
{
    if (!(p->max_moved_fraction >= 0 && p->max_moved_fraction <= 1))
        return rk_error_set(err, RK_EINVAL, "max_moved_fraction",
                            "max_moved_fraction is a fraction of the hash space from 0 to 1");
    if (!(p->max_balance_after == 0 || (p->max_balance_after >= 1 && p->max_balance_after < 1e9)))
        return rk_error_set(err, RK_EINVAL, "max_balance_after",
                            "max_balance_after is null (no limit) or a ratio of at least 1, such "
                            "as 1.25 (the most loaded node may hold 1.25x its ideal share)");
    if (p->approvals < 0 || p->approvals > RKD_STORE_APPROVALS_MAX)
        return rk_error_set(err, RK_EINVAL, "approvals", "approvals is a whole number from 0 to %d",
                            RKD_STORE_APPROVALS_MAX);
    if (p->max_moved_bytes < 0)
        return rk_error_set(err, RK_EINVAL, "max_moved_bytes",
                            "max_moved_bytes is null (no limit) or a whole number of bytes");
    return RK_OK;
}

int rkd_store_put_policy(rkd_store *s, const char *cluster, const rkd_store_policy *p,
                         const char *author, const char *detail, rk_error *err)
{
    rk_error scratch;
    char now[RKD_STORE_TIME_LEN];
    err = err ? err : &scratch;
    now_rfc3339(now);
    int rc = rkd_store_check_cluster(cluster, err);
    rc = rc ? rc : check_policy(p, err);
    return rc ? rc : s->ops->put_policy(s->b, cluster, p, author, detail, now, err);
}

/* Why `digest` is not the plan from the active version to `v`: it is the plan from a version
 * active before (the review was overtaken by an activation), or none from any of the
 * RKD_STORE_LIST_MAX versions before v (a digest mistyped, or of another version). Replaces err's
 * message; one page of version records, on this refusal only. */
static void explain_digest(rkd_store *s, const char *cluster, int64_t v, const char *digest,
                           rk_error *err)
{
    rkd_store_version_list l = {0};
    rk_error ignored;
    char d[RK_PLAN_DIGEST_LEN], want[RK_PLAN_DIGEST_LEN] = "", was[48] = "";
    if (rkd_store_list(s, cluster, RKD_STORE_LIST_MAX, v + 1, &l, &ignored) != RK_OK || !l.count ||
        l.items[0].version != v) {
        rkd_store_version_list_free(&l);
        return; /* the backend's message stands */
    }
    const char *to = l.items[0].fingerprint;
    int64_t active = 0;
    rkd_store_digest(0, "", v, to, d);
    if (strcmp(d, digest) == 0)
        snprintf(was, sizeof was, "nothing (a first activation)");
    for (size_t i = 1; i < l.count; i++) {
        rkd_store_digest(l.items[i].version, l.items[i].fingerprint, v, to, d);
        if (l.items[i].state == RKD_STATE_ACTIVE) {
            active = l.items[i].version;
            memcpy(want, d, sizeof want);
        }
        if (!was[0] && strcmp(d, digest) == 0)
            snprintf(was, sizeof was, "version %lld", (long long)l.items[i].version);
    }
    if (!want[0]) /* nothing active: the plan is from nothing */
        rkd_store_digest(0, "", v, to, want);
    rkd_store_version_list_free(&l); /* `to` points into it */
    if (was[0])
        rk_error_set(err, RKD_STORE_EPLANCHANGED, "digest",
                     "cluster %s: the plan to version %lld is now %s, not %s, which is the plan "
                     "from %s: version %lld was activated since that review; review the plan from "
                     "it and approve its digest",
                     cluster, (long long)v, want, digest, was, (long long)active);
    else
        rk_error_set(err, RKD_STORE_EPLANCHANGED, "digest",
                     "cluster %s: the plan to version %lld is now %s, not %s, which is no plan to "
                     "it from any earlier version: check the digest (ringkeeper approve %lld reads "
                     "it from the server)",
                     cluster, (long long)v, want, digest, (long long)v);
}

int rkd_store_approve(rkd_store *s, const char *cluster, const rkd_store_approval_req *a,
                      rk_error *err)
{
    const char *digest = a->digest;
    rk_error scratch;
    char now[RKD_STORE_TIME_LEN];
    err = err ? err : &scratch;
    now_rfc3339(now);
    int rc = rkd_store_check_cluster(cluster, err);
    if (rc == RK_OK && (!digest || strlen(digest) != RK_PLAN_DIGEST_LEN - 1 ||
                        strspn(digest, "0123456789abcdef") != RK_PLAN_DIGEST_LEN - 1))
        rc = rk_error_set(err, RK_EINVAL, "digest",
                          "digest is the plan's 16 lowercase hex digits, as GET .../plan shows");
    rc = rc ? rc : s->ops->approve(s->b, cluster, a, now, err);
    if (rc == RKD_STORE_EPLANCHANGED)
        explain_digest(s, cluster, a->version, digest, err);
    return rc == RKD_STORE_EDRYRUN ? RK_OK : rc;
}

void rkd_store_event_list_free(rkd_store_event_list *list)
{
    for (size_t i = 0; list && i < list->count; i++) {
        free(list->items[i].author);
        free(list->items[i].detail);
    }
    if (list) {
        free(list->items);
        memset(list, 0, sizeof *list);
    }
}

int rkd_store_list_events(rkd_store *s, const char *cluster, size_t limit, int64_t before,
                          rkd_store_event_list *out, rk_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = list_page(s, cluster, limit, before, NULL, out, err);
    if (rc != RK_OK)
        rkd_store_event_list_free(out);
    return rc;
}

/* ---- Watching ---- */

uint64_t rkd_store_watch_seq(rkd_store *s)
{
    return atomic_load(&s->seq);
}

void rkd_store_set_watch(rkd_store *s, rkd_store_watch_fn fn, void *arg)
{
    pthread_mutex_lock(&s->watch_mu);
    s->watch = fn;
    s->watch_arg = arg;
    pthread_mutex_unlock(&s->watch_mu);
}
