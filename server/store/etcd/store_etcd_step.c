/* store_etcd_step.c — what every change of the etcd store runs through (docs/ETCD.md): the keys,
 * JSON values, the cluster's head, and the write step, one txn guarded by the head's revision,
 * retried when it lost a race and, when its fate was unknown, first looked for in the events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/sha2.h>

#include "store_etcd_shared.h"

/* ---- Keys ---- */

void rke_key(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster, const char *what)
{
    snprintf(key, RKE_KEY_MAX, "%s/c/%s/%s", s->prefix, cluster, what);
}

void rke_key_num(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster, const char *what,
                 int64_t n)
{
    snprintf(key, RKE_KEY_MAX, "%s/c/%s/%s%020lld", s->prefix, cluster, what, (long long)n);
}

void rke_head_key(const rke_store *s, char key[RKE_KEY_MAX], const char *cluster)
{
    snprintf(key, RKE_KEY_MAX, "%s/heads/%s", s->prefix, cluster);
}

void rke_id_key(const rke_store *s, char key[RKE_KEY_MAX])
{
    snprintf(key, RKE_KEY_MAX, "%s/store_id", s->prefix);
}

int rke_damaged(rk_error *err, const char *cluster, const char *what)
{
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cluster %s: %s is damaged in etcd",
                        cluster, what);
}

/* 2n lowercase hex digits of random bytes into out. */
int rke_random_hex(char *out, size_t n, rk_error *err)
{
    unsigned char bytes[16];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f && n <= sizeof bytes ? fread(bytes, 1, n, f) : 0;
    if (f)
        fclose(f);
    if (got != n)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cannot read /dev/urandom");
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    return RK_OK;
}

/* ---- JSON values ---- */

void rke_put_json(rke_txn *t, const char *key, json_t *j)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (text)
        rke_txn_put_str(t, key, text);
    t->failed |= !text;
    free(text);
}

json_t *rke_kv_json(const rke_kv *kv)
{
    return kv->value ? json_loadb(kv->value, kv->len, 0, NULL) : NULL;
}

const char *rke_str(json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v ? v : "";
}

int64_t rke_num(json_t *o, const char *name)
{
    return (int64_t)json_integer_value(json_object_get(o, name));
}

/* ---- The head ---- */

int rke_read_head_and(rke_store *s, const char *cluster, rke_head *h, int64_t *rev,
                      const rke_range_req *more, size_t n, rke_kvs *got, rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_range_req req[1 + RKE_READ_MORE_MAX] = {{key, NULL}};
    rke_kvs all[1 + RKE_READ_MORE_MAX] = {{0}};
    memset(h, 0, sizeof *h);
    *rev = 0;
    if (n > RKE_READ_MORE_MAX)
        return rk_error_set(err, RK_EINVAL, NULL, "at most %d keys are read with the head, not %zu",
                            RKE_READ_MORE_MAX, n);
    rke_head_key(s, key, cluster);
    for (size_t i = 0; i < n; i++)
        req[1 + i] = more[i];
    int rc =
        n ? rke_ranges(s->etcd, req, 1 + n, all, err) : rke_range(s->etcd, key, NULL, all, err);
    const rke_kv *kv = rc == RK_OK && all[0].count == 1 ? &all[0].items[0] : NULL;
    json_t *j = kv ? rke_kv_json(kv) : NULL;
    if (kv && !json_is_object(j))
        rc = rke_damaged(err, cluster, "the head");
    if (j) {
        *rev = kv->mod_revision;
        h->latest = rke_num(j, "latest");
        h->active = rke_num(j, "active");
        h->events = rke_num(j, "events");
        h->previous = rke_num(j, "previous");
    }
    json_decref(j);
    rke_kvs_free(&all[0]);
    for (size_t i = 0; i < n; i++)
        got[i] = all[1 + i];
    return rc;
}

int rke_read_head(rke_store *s, const char *cluster, rke_head *h, int64_t *rev, rk_error *err)
{
    return rke_read_head_and(s, cluster, h, rev, NULL, 0, NULL, err);
}

void rke_put_head(rke_store *s, rke_txn *t, const char *cluster, const rke_head *h)
{
    char key[RKE_KEY_MAX];
    rke_head_key(s, key, cluster);
    json_t *j = json_pack("{sIsIsIsIss}", "latest", (json_int_t)h->latest, "active",
                          (json_int_t)h->active, "events", (json_int_t)h->events, "previous",
                          (json_int_t)h->previous, "writer", s->writer);
    rke_put_json(t, key, j);
    json_decref(j);
}

/* ---- The write step ---- */

void rke_step_event(rke_store *s, const rke_step *st, rke_head *next, rke_txn *t,
                    const rke_event *e)
{
    char key[RKE_KEY_MAX];
    rke_key_num(s, key, st->cluster, "e/", ++next->events);
    json_t *j = json_pack("{sssssIsIsssoss?ss?}", "kind", e->kind, "at", st->now, "version",
                          (json_int_t)e->version, "from_version", (json_int_t)e->from_version, "op",
                          st->op, "moved_fraction",
                          e->moved_fraction < 0 ? json_null() : json_real(e->moved_fraction),
                          "author", e->author, "detail", e->detail);
    if (j && e->digest && e->digest[0])
        t->failed |= json_object_set_new(j, "digest", json_string(e->digest)) != 0;
    rke_put_json(t, key, j);
    json_decref(j);
}

int rke_read_numbered(rke_store *s, const char *cluster, const char *what, int64_t lo, int64_t hi,
                      rke_kvs *kvs, rk_error *err)
{
    char from[RKE_KEY_MAX], to[RKE_KEY_MAX];
    rke_key_num(s, from, cluster, what, lo);
    rke_key_num(s, to, cluster, what, hi + 1);
    int rc = rke_range(s->etcd, from, to, kvs, err);
    if (rc == RK_OK && kvs->count != (size_t)(hi - lo + 1))
        rc = rke_damaged(err, cluster,
                         what[0] == 'v' ? "the numbering of versions" : "the numbering of events");
    return rc;
}

/* Sets *found when an event after `after` up to `upto` carries st->op: the step was applied. */
static int find_op(rke_store *s, rke_step *st, int64_t after, int64_t upto, int *found,
                   rk_error *err)
{
    rke_kvs kvs = {0};
    *found = 0;
    if (upto <= after)
        return RK_OK;
    if (upto - after > RKD_STORE_LIST_MAX)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                            "etcd did not confirm a change of cluster %s and %lld others followed "
                            "it; check its events before retrying",
                            st->cluster, (long long)(upto - after));
    int rc = rke_read_numbered(s, st->cluster, "e/", after + 1, upto, &kvs, err);
    for (size_t i = 0; rc == RK_OK && i < kvs.count && !*found; i++) {
        json_t *e = rke_kv_json(&kvs.items[i]);
        *found = strcmp(rke_str(e, "op"), st->op) == 0;
        st->version = *found ? rke_num(e, "version") : st->version;
        json_decref(e);
    }
    rke_kvs_free(&kvs);
    return rc;
}

/* One attempt: the txn built on the head as it is now. *retry when it lost the race or etcd may
 * apply it later (then *uncertain stays set for the rest of the step); otherwise it applied (RK_OK)
 * or the build or etcd refused (the error). */
static int attempt(rke_store *s, rke_step *st, const rke_head *cur, int64_t rev, int *retry,
                   int *uncertain, rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_head next = *cur;
    rke_txn t;
    int ok = 0, unknown = 0;
    rke_txn_init(&t);
    int rc = st->build(s, st, cur, &next, &t, err);
    rke_head_key(s, key, st->cluster);
    rke_txn_if_mod(&t, key, rev);
    rke_put_head(s, &t, st->cluster, &next);
    rc = rc ? rc : rke_txn_commit(s->etcd, &t, &ok, &unknown, err);
    rke_txn_deinit(&t);
    *uncertain |= unknown;
    *retry = unknown || (rc == RK_OK && !ok);
    return unknown ? RK_OK : rc;
}

/* A random pause after the i-th lost race, so that racing replicas spread out. */
static void backoff(int i, unsigned *seed)
{
    long cap_ms = i < 6 ? 1L << i : RKE_BACKOFF_MS;
    long ms = rand_r(seed) % (cap_ms + 1);
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* A write etcd did not confirm, and etcd cannot be asked now whether it applied it. */
static int unconfirmed(const rke_step *st, rk_error *err)
{
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                        "etcd did not confirm the change to cluster %s and cannot be asked now "
                        "(%s); it may still be applied: read the cluster's events before "
                        "retrying",
                        st->cluster, why);
}

static int run_step_locked(rke_store *s, rke_step *st, rk_error *err)
{
    int64_t first_events = -1;
    int uncertain = 0, done = 0;
    unsigned seed = (unsigned)strtoul(st->op + 8, NULL, 16);
    int rc = RK_OK;
    for (int i = 0; rc == RK_OK && !done && i < RKE_STEP_ATTEMPTS; i++) {
        rke_head cur;
        int64_t rev;
        if (i > 0)
            backoff(i, &seed);
        for (size_t k = 0; k < st->with_n; k++)
            rke_kvs_free(&st->with_got[k]); /* the last attempt's */
        rc = rke_read_head_and(s, st->cluster, &cur, &rev, st->with, st->with_n, st->with_got, err);
        if (rc == RK_OK && rev == 0 && !st->create)
            return rkd_store_missing(err, RKD_STORE_ENOCLUSTER, st->cluster, 0);
        first_events = first_events < 0 ? cur.events : first_events;
        rc = rc || !uncertain ? rc : find_op(s, st, first_events, cur.events, &done, err);
        if (rc == RK_OK && !done) {
            int retry = 0;
            rc = attempt(s, st, &cur, rev, &retry, &uncertain, err);
            done = !retry;
        }
    }
    if (rc == RKD_STORE_EUNAVAILABLE && uncertain)
        return unconfirmed(st, err);
    if (rc != RK_OK || done)
        return rc;
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                        "cluster %s changed under %d attempts in a row; nothing was changed, retry",
                        st->cluster, RKE_STEP_ATTEMPTS);
}

int rke_run_step(rke_store *s, rke_step *st, rk_error *err)
{
    int rc = rke_random_hex(st->op, (RKE_OP_LEN - 1) / 2, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->write_lock);
    rc = run_step_locked(s, st, err);
    pthread_mutex_unlock(&s->write_lock);
    return rc;
}

void rke_put_meta(rke_store *s, rke_txn *t, const char *cluster, int64_t v, json_t *meta)
{
    char key[RKE_KEY_MAX];
    rke_key_num(s, key, cluster, "v/", v);
    rke_put_json(t, key, meta);
}
