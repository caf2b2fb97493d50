/* store_etcd.c — the etcd backend of store.h (docs/ETCD.md has the key layout): opening the store,
 * the write step every change runs through, and publishing. Reading versions and lists is
 * store_etcd_read.c; the cutover half (activation, policies, approvals, events) is
 * store_etcd_cutover.c.
 *
 * A version's state is not stored: it follows from the head's active number and whether the version
 * was ever activated (its activated_at), exactly as SQLite's UPDATEs would leave it. So an
 * activation writes three keys whatever the number of staged versions it supersedes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/sha2.h>

#include "store_etcd_internal.h"

#define CHUNK (1u << 20) /* bytes of one chunk: one put, under etcd's 1.5 MiB */

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

int rke_damaged(rk_error *err, const char *cluster, const char *what)
{
    return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cluster %s: %s is damaged in etcd",
                        cluster, what);
}

/* 2n lowercase hex digits of random bytes into out. */
static int random_hex(char *out, size_t n, rk_error *err)
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

int64_t rke_num(json_t *o, const char *name)
{
    return (int64_t)json_integer_value(json_object_get(o, name));
}

/* ---- The head ---- */

int rke_read_head(rke_store *s, const char *cluster, rke_head *h, int64_t *rev, rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_kv kv = {0};
    memset(h, 0, sizeof *h);
    rke_head_key(s, key, cluster);
    int rc = rke_get(s->etcd, key, &kv, err);
    *rev = kv.mod_revision;
    json_t *j = rc == RK_OK && kv.mod_revision ? rke_kv_json(&kv) : NULL;
    if (rc == RK_OK && kv.mod_revision && !json_is_object(j))
        rc = rke_damaged(err, cluster, "the head");
    if (j) {
        h->latest = rke_num(j, "latest");
        h->active = rke_num(j, "active");
        h->events = rke_num(j, "events");
        h->previous = rke_num(j, "previous");
    }
    json_decref(j);
    rke_kv_deinit(&kv);
    return rc;
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
        rc = rke_read_head(s, st->cluster, &cur, &rev, err);
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
    int rc = random_hex(st->op, (RKE_OP_LEN - 1) / 2, err);
    if (rc != RK_OK)
        return rc;
    pthread_mutex_lock(&s->write_lock);
    rc = run_step_locked(s, st, err);
    pthread_mutex_unlock(&s->write_lock);
    return rc;
}

/* ---- Publishing ---- */

void rke_put_meta(rke_store *s, rke_txn *t, const char *cluster, int64_t v, json_t *meta)
{
    char key[RKE_KEY_MAX];
    rke_key_num(s, key, cluster, "v/", v);
    rke_put_json(t, key, meta);
}

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
    json_t *chunks; /* the topology's chunks, or NULL: stored whole */
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
    const publish_arg *p = st->arg;
    const rkd_store_draft *d = p->d;
    char key[RKE_KEY_MAX];
    int64_t v = cur->latest + 1;
    int rc = rkd_store_check_publish(d, cur->latest, err);
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
    rkd_store_activation a = {RKD_STORE_ANY, d->author, d->moved_fraction, NULL};
    rke_plan_target target = {v, d->fingerprint, d->author};
    return d->activate ? rke_activate_in_step(s, st, cur, next, t, &target, &a, err) : RK_OK;
}

static int rke_publish(void *b, const rkd_store_draft *d, int64_t *version, rk_error *err)
{
    rke_store *s = b;
    publish_arg p = {d, NULL};
    rke_step st = {.cluster = d->cluster,
                   .create = 1,
                   .build = build_publish,
                   .arg = &p,
                   .now = d->created_at};
    int rc = strlen(d->topology) > RKE_INLINE_MAX ? rke_put_chunks(s, d->topology, &p.chunks, err)
                                                  : RK_OK;
    rc = rc ? rc : rke_run_step(s, &st, err);
    if (rc == RK_OK)
        *version = st.version;
    json_decref(p.chunks);
    return rc;
}

/* ---- The store ---- */

void rke_id_key(const rke_store *s, char key[RKE_KEY_MAX])
{
    snprintf(key, RKE_KEY_MAX, "%s/store_id", s->prefix);
}

/* A linearizable read: it needs a leader and a majority. */
static int rke_ping(void *b, rk_error *err)
{
    rke_store *s = b;
    char key[RKE_KEY_MAX];
    rke_kv kv = {0};
    rke_id_key(s, key);
    int rc = rke_get(s->etcd, key, &kv, err);
    rke_kv_deinit(&kv);
    return rc;
}

/* Reads the store id, creating it first in an empty prefix (the first replica to open wins). */
static int rke_store_id(void *b, char id[RKD_STORE_ID_LEN], rk_error *err)
{
    rke_store *s = b;
    char key[RKE_KEY_MAX], fresh[RKD_STORE_ID_LEN];
    rke_kv kv = {0};
    rke_txn t;
    int ok, uncertain;
    rke_id_key(s, key);
    int rc = random_hex(fresh, (RKD_STORE_ID_LEN - 1) / 2, err);
    rke_txn_init(&t);
    rke_txn_if_mod(&t, key, 0);
    rke_txn_put_str(&t, key, fresh);
    rc = rc ? rc : rke_txn_commit(s->etcd, &t, &ok, &uncertain, err);
    rke_txn_deinit(&t);
    rc = rc ? rc : rke_get(s->etcd, key, &kv, err);
    if (rc == RK_OK && (kv.len != RKD_STORE_ID_LEN - 1 ||
                        strspn(kv.value, "0123456789abcdef") != RKD_STORE_ID_LEN - 1))
        rc = rk_error_set(err, RKD_STORE_ENOTRK, NULL,
                          "%s in etcd is not a ringkeeper store id; is the prefix another "
                          "program's?",
                          key);
    if (rc == RK_OK)
        memcpy(id, kv.value, RKD_STORE_ID_LEN);
    rke_kv_deinit(&kv);
    return rc;
}

static void rke_close(void *b)
{
    rke_store *s = b;
    rke_watch_stop(s->watcher); /* first: it uses the client */
    rke_client_free(s->etcd);
    free(s->prefix);
    pthread_mutex_destroy(&s->write_lock);
    free(s);
}

static const rkd_store_ops etcd_ops = {
    .close = rke_close,
    .store_id = rke_store_id,
    .ping = rke_ping,
    .publish = rke_publish,
    .activate = rke_activate,
    .get = rke_get_version,
    .list = rke_list,
    .list_clusters = rke_list_clusters,
    .get_policy = rke_get_policy,
    .put_policy = rke_put_policy,
    .get_job = rke_get_job,
    .put_job = rke_put_job,
    .approve = rke_approve,
    .finish_migration = rke_finish_migration,
    .list_events = rke_list_events,
    .list_approvals = rke_list_approvals,
    .adopt_id = rke_adopt_id,
    .import = rke_import,
    .watch = rke_watch_start,
    .stale = rke_watch_stale,
};

/* "HOST:PORT,...[/prefix]" into the endpoints and the prefix ("/ringkeeper" when none). */
static int parse_location(rke_store *s, const char *rest, const rke_security *sec, rk_error *err)
{
    const char *slash = strchr(rest, '/');
    char *hosts = slash ? strndup(rest, (size_t)(slash - rest)) : strdup(rest);
    s->prefix = strdup(slash ? slash : RKD_STORE_ETCD_PREFIX);
    if (!hosts || !s->prefix) {
        free(hosts);
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    }
    size_t n = strlen(s->prefix);
    int rc = n < 2 || n > 128 || s->prefix[n - 1] == '/' ||
                     strspn(s->prefix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789._-/") != n
                 ? rk_error_set(err, RK_EINVAL, NULL,
                                "the etcd key prefix \"%s\" must be /NAME[/NAME...] of letters, "
                                "digits, '.', '_' and '-' (at most 128 bytes)",
                                s->prefix)
                 : RK_OK;
    s->etcd = rc ? NULL : rke_client_new(hosts, sec, err);
    free(hosts);
    return rc ? rc : s->etcd ? RK_OK : err->code;
}

/* The scheme's length (0: not an etcd location, err set) and whether it asks for TLS;
 * certificates without TLS are refused, as they would go unused. */
static size_t check_scheme(const char *location, rke_security *sec, rk_error *err)
{
    size_t plain = strlen(RKD_STORE_ETCD_SCHEME), tls = strlen(RKD_STORE_ETCDS_SCHEME);
    sec->tls = location && strncmp(location, RKD_STORE_ETCDS_SCHEME, tls) == 0;
    if (sec->tls)
        return tls;
    if (!location || strncmp(location, RKD_STORE_ETCD_SCHEME, plain) != 0) {
        rk_error_set(err, RK_EINVAL, NULL, "an etcd location starts with %s or %s (TLS)",
                     RKD_STORE_ETCD_SCHEME, RKD_STORE_ETCDS_SCHEME);
        return 0;
    }
    if (sec->cacert || sec->cert || sec->key) {
        rk_error_set(err, RK_EINVAL, NULL,
                     "--etcd-cacert, --etcd-cert and --etcd-key are for TLS: give the location as "
                     "%s...",
                     RKD_STORE_ETCDS_SCHEME);
        return 0;
    }
    return plain;
}

rkd_store *rkd_store_open_etcd(const char *location, const rke_security *how, rk_error *err)
{
    static const rke_security plain = {0};
    rk_error scratch;
    rke_security sec = how ? *how : plain;
    err = err ? err : &scratch;
    size_t skip = check_scheme(location, &sec, err);
    if (!skip)
        return NULL;
    rke_store *s = calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->write_lock, NULL) != 0) {
        free(s);
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    if (random_hex(s->writer, (RKE_OP_LEN - 1) / 2, err) == RK_OK &&
        parse_location(s, location + skip, &sec, err) == RK_OK)
        return rkd_store_new(&etcd_ops, s, err);
    rke_close(s);
    return NULL;
}
