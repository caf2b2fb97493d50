/* store_etcd.c — the etcd backend of store.h (docs/ETCD.md has the key layout): opening the store
 * and its table of operations, over the write step of store_etcd_step.c, publishing
 * (store_etcd_publish.c), the reads (store_etcd_read.c), the cutover half (activation, policies,
 * approvals, events: store_etcd_cutover.c), the migration job and the watch.
 *
 * A version's state is not stored: it follows from the head's active number and whether the version
 * was ever activated (its activated_at), exactly as SQLite's UPDATEs would leave it. So an
 * activation writes three keys whatever the number of staged versions it supersedes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/sha2.h>

#include "store_etcd_shared.h"

/* ---- The store ---- */

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
    int rc = rke_random_hex(fresh, (RKD_STORE_ID_LEN - 1) / 2, err);
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
    rke_fleet_unshare(s); /* first: they use the client */
    rke_watch_stop(s->watcher);
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
    .get_doc = rke_get_doc,
    .put_doc = rke_put_doc,
    .approve = rke_approve,
    .finish_migration = rke_finish_migration,
    .list_events = rke_list_events,
    .list_approvals = rke_list_approvals,
    .adopt_id = rke_adopt_id,
    .import = rke_import,
    .watch = rke_watch_start,
    .stale = rke_watch_stale,
    .fleet_share = rke_fleet_share,
    .fleet_write = rke_fleet_write,
    .fleet_unshare = rke_fleet_unshare,
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

void *rkd_etcd_open(const char *location, const rke_security *how, const rkd_store_ops **ops,
                    rk_error *err)
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
    *ops = &etcd_ops;
    if (rke_random_hex(s->writer, (RKE_OP_LEN - 1) / 2, err) == RK_OK &&
        parse_location(s, location + skip, &sec, err) == RK_OK)
        return s;
    rke_close(s);
    return NULL;
}
