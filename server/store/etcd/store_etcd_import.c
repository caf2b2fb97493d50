/* store_etcd_import.c — copying a whole store into the etcd one (migrate-store), and its approvals
 * read back for a copy the other way. A cluster's history is too big for one txn (etcd refuses
 * requests over 1.5 MiB), so versions, events, approvals and the policy go in as many txns as
 * they need, and the cluster's head last: until it is there the cluster does not exist for any
 * reader (the cluster list is the range of heads), and it appears whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_etcd_shared.h"

#define EVENT_OVERHEAD 512 /* an event's bytes beyond its author and detail, generously */

/* ---- Reading approvals ---- */

/* "<v>/<digest>/<approver>" after the cluster's "a/" and the value {"created_at","comment"}. */
static int parse_approval(const rke_kv *kv, size_t skip, rkd_store_approval *a, rk_error *err)
{
    const char *rest = kv->key + skip;
    char digest[RK_PLAN_DIGEST_LEN];
    long long v = 0;
    int used = 0;
    json_t *j = rke_kv_json(kv);
    int rc = sscanf(rest, "%20lld/%16[0-9a-f]/%n", &v, digest, &used) == 2 && used > 0 &&
                     json_is_object(j)
                 ? RK_OK
                 : rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                                "the approval %s is damaged in etcd", kv->key);
    if (rc == RK_OK) {
        a->version = v;
        memcpy(a->digest, digest, sizeof a->digest);
        snprintf(a->created_at, sizeof a->created_at, "%s", rke_str(j, "created_at"));
        rc = rkd_store_strdup(rest + used, &a->approver, err);
        rc = rc ? rc
                : rkd_store_strdup(json_string_value(json_object_get(j, "comment")), &a->comment,
                                   err);
    }
    json_decref(j);
    return rc;
}

int rke_list_approvals(void *b, const char *cluster, rkd_store_approval_list *out, rk_error *err)
{
    rke_store *s = b;
    rke_kvs kvs = {0};
    char from[RKE_KEY_MAX];
    rke_key(s, from, cluster, "a/");
    char *to = rke_prefix_end(from);
    int rc = to ? rke_range(s->etcd, from, to, &kvs, err)
                : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    out->items = rc || !kvs.count ? NULL : calloc(kvs.count, sizeof *out->items);
    if (rc == RK_OK && kvs.count && !out->items)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory listing approvals");
    for (size_t i = 0; rc == RK_OK && i < kvs.count; i++)
        rc = parse_approval(&kvs.items[i], strlen(from), &out->items[out->count++], err);
    rke_kvs_free(&kvs);
    free(to);
    return rc;
}

/* ---- Writing ---- */

/* Sends what `t` holds (when anything) and starts it again empty. */
static int flush(rke_store *s, rke_txn *t, rk_error *err)
{
    int ok = 1, unknown = 0, rc = RK_OK;
    if (json_array_size(t->success) > 0)
        rc = rke_txn_commit(s->etcd, t, &ok, &unknown, err);
    rke_txn_deinit(t);
    rke_txn_init(t);
    return rc;
}

/* Flushes `t` first when `need` more bytes would take it over what one request may carry. */
static int room(rke_store *s, rke_txn *t, size_t need, rk_error *err)
{
    return t->bytes + need > RKE_REQUEST_MAX ? flush(s, t, err) : RK_OK;
}

int rke_adopt_id(void *b, const char *id, rk_error *err)
{
    rke_store *s = b;
    rke_kvs kvs = {0};
    char from[RKE_KEY_MAX], key[RKE_KEY_MAX];
    rke_head_key(s, from, "");
    char *to = rke_prefix_end(from);
    int rc = to ? rke_range(s->etcd, from, to, &kvs, err)
                : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    if (rc == RK_OK && kvs.count > 0)
        rc = rkd_store_refuse_import("clusters", err);
    rke_txn t;
    rke_txn_init(&t);
    rke_id_key(s, key);
    rke_txn_put_str(&t, key, id);
    rc = rc ? rc : flush(s, &t, err);
    rke_txn_deinit(&t);
    rke_kvs_free(&kvs);
    free(to);
    return rc;
}

/* Version v's metadata (its own activated_at) and topology: inline, or chunks written first. */
static int put_version(rke_store *s, rke_txn *t, const rkd_store_version *v, const char *doc,
                       rk_error *err)
{
    rkd_store_draft d;
    json_t *chunks = NULL;
    char key[RKE_KEY_MAX];
    size_t len = strlen(doc);
    rkd_store_draft_of(v, doc, &d);
    int rc = len > RKE_INLINE_MAX ? rke_put_chunks(s, doc, &chunks, err) : RK_OK;
    json_t *meta = rc ? NULL : rke_draft_meta(&d, chunks);
    if (rc == RK_OK &&
        (!meta || json_object_set_new(meta, "activated_at", json_string(v->activated_at)) != 0))
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rc = rc ? rc : room(s, t, (chunks ? 0 : len) + RKE_KEY_MAX + 1024, err);
    if (rc == RK_OK) {
        rke_put_meta(s, t, v->cluster, v->version, meta);
        rke_key_num(s, key, v->cluster, "t/", v->version);
        if (!chunks)
            rke_txn_put(t, key, doc, len);
    }
    json_decref(meta);
    json_decref(chunks);
    return rc;
}

/* Event number i + 1, as it was (its own time); its op id is empty: no call of this store's. */
static int put_event(rke_store *s, rke_txn *t, const char *cluster, size_t i,
                     const rkd_store_event *e, rk_error *err)
{
    rke_step st = {.cluster = cluster, .now = e->at};
    rke_head next = {.events = (int64_t)i};
    rke_event re = {e->kind,   e->author,         e->version, e->from_version,
                    e->digest, e->moved_fraction, e->detail};
    size_t need =
        EVENT_OVERHEAD + (e->author ? strlen(e->author) : 0) + (e->detail ? strlen(e->detail) : 0);
    int rc = room(s, t, need, err);
    if (rc == RK_OK)
        rke_step_event(s, &st, &next, t, &re);
    return rc;
}

static int put_approval(rke_store *s, rke_txn *t, const char *cluster, const rkd_store_approval *a,
                        rk_error *err)
{
    char key[RKE_KEY_MAX];
    int rc = room(s, t, RKE_KEY_MAX + 64 + (a->comment ? strlen(a->comment) : 0), err);
    if (rc == RK_OK) {
        json_t *j = json_pack("{ssss?}", "created_at", a->created_at, "comment", a->comment);
        rke_approval_key(s, key, cluster, a->version, a->digest, a->approver);
        rke_put_json(t, key, j);
        json_decref(j);
    }
    return rc;
}

/* Everything but the head, in as many txns as it takes. */
static int put_history(rke_store *s, rke_txn *t, const rkd_store_history *h, char *const *docs,
                       rk_error *err)
{
    int rc = RK_OK;
    for (size_t i = 0; rc == RK_OK && i < h->versions_count; i++)
        rc = put_version(s, t, h->versions[i], docs[i], err);
    for (size_t i = 0; rc == RK_OK && i < h->events_count; i++)
        rc = put_event(s, t, h->cluster, i, &h->events[i], err);
    for (size_t i = 0; rc == RK_OK && i < h->approvals_count; i++)
        rc = put_approval(s, t, h->cluster, &h->approvals[i], err);
    if (rc == RK_OK && h->policy)
        rke_put_policy_json(s, t, h->cluster, h->policy);
    return rc ? rc : flush(s, t, err);
}

/* The head, last and only if the cluster still has none: the cluster appears whole, with its open
 * migration window (kept in the head, like every window on etcd). */
static int put_head_last(rke_store *s, rke_txn *t, const rkd_store_history *h, rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_head head = {(int64_t)h->versions_count, 0, (int64_t)h->events_count, h->window_previous};
    int ok = 0, unknown = 0;
    for (size_t i = 0; i < h->versions_count; i++)
        if (h->versions[i]->state == RKD_STATE_ACTIVE)
            head.active = h->versions[i]->version;
    rke_head_key(s, key, h->cluster);
    rke_txn_if_mod(t, key, 0);
    rke_put_head(s, t, h->cluster, &head);
    int rc = rke_txn_commit(s->etcd, t, &ok, &unknown, err);
    return rc || ok ? rc : rkd_store_refuse_import(h->cluster, err);
}

int rke_import(void *b, const rkd_store_history *h, char *const *docs, rk_error *err)
{
    rke_store *s = b;
    rke_head cur;
    int64_t rev = 0;
    rke_txn t;
    int rc = rke_read_head(s, h->cluster, &cur, &rev, err);
    if (rc == RK_OK && rev != 0)
        rc = rkd_store_refuse_import(h->cluster, err);
    rke_txn_init(&t);
    rc = rc ? rc : put_history(s, &t, h, docs, err);
    rc = rc ? rc : put_head_last(s, &t, h, err);
    rke_txn_deinit(&t);
    return rc;
}
