/* store_etcd_read.c — reading the etcd store (docs/ETCD.md): one version, its metadata and its
 * topology from the chunks it was written in (each checked against its SHA-256 name), and the
 * pages of versions and clusters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "store_etcd_shared.h"

/* ---- Versions ---- */

int rke_read_meta(rke_store *s, const char *cluster, int64_t v, json_t **meta, rk_error *err)
{
    char key[RKE_KEY_MAX];
    rke_kv kv = {0};
    rke_key_num(s, key, cluster, "v/", v);
    int rc = rke_get(s->etcd, key, &kv, err);
    *meta = rc == RK_OK ? rke_kv_json(&kv) : NULL;
    if (rc == RK_OK && !json_is_object(*meta))
        rc = rke_damaged(err, cluster, "a version's metadata");
    rke_kv_deinit(&kv);
    return rc;
}

static int parse_state(const rke_head *h, int64_t v, const char *activated_at)
{
    if (v == h->active)
        return RKD_STATE_ACTIVE;
    if (v > h->active)
        return RKD_STATE_STAGED;
    return activated_at[0] ? RKD_STATE_RETIRED : RKD_STATE_SUPERSEDED;
}

/* Fills rec (zeroed) from version v's metadata. */
static int meta_to_record(json_t *meta, const char *cluster, int64_t v, const rke_head *h,
                          rkd_store_version *rec, rk_error *err)
{
    rec->version = v;
    snprintf(rec->created_at, sizeof rec->created_at, "%s", rke_str(meta, "created_at"));
    snprintf(rec->activated_at, sizeof rec->activated_at, "%s", rke_str(meta, "activated_at"));
    snprintf(rec->fingerprint, sizeof rec->fingerprint, "%s", rke_str(meta, "fingerprint"));
    rec->state = parse_state(h, v, rec->activated_at);
    rec->vnode_factor = (uint32_t)rke_num(meta, "vnode_factor");
    rec->points = (uint64_t)rke_num(meta, "points");
    int rc = rkd_store_strdup(cluster, &rec->cluster, err);
    rc = rc ? rc
            : rkd_store_strdup(json_string_value(json_object_get(meta, "author")), &rec->author,
                               err);
    rc = rc ? rc
            : rkd_store_strdup(json_string_value(json_object_get(meta, "comment")), &rec->comment,
                               err);
    if (rc == RK_OK &&
        (rk_scheme_from_name(rke_str(meta, "scheme"), &rec->scheme) != RK_OK ||
         rk_hash_from_scheme_name(rec->scheme, rke_str(meta, "hash"), &rec->hash) != RK_OK))
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "cluster %s version %lld is damaged in etcd: unknown scheme or hash",
                          cluster, (long long)v);
    return rc;
}

void rke_blob_key(const rke_store *s, char key[RKE_KEY_MAX], const char *hex)
{
    snprintf(key, RKE_KEY_MAX, "%s/blobs/%s", s->prefix, hex);
}

void rke_sha256_hex(const char *data, size_t len, char hex[2 * SHA256_DIGEST_SIZE + 1])
{
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, (const uint8_t *)data);
    sha256_digest(&ctx, sizeof digest, digest);
    for (size_t i = 0; i < sizeof digest; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

/* Appends the chunk named `hex` to *doc (of *len bytes), checking its content against its name. */
static int read_chunk(rke_store *s, const char *cluster, const char *hex, char **doc, size_t *len,
                      rk_error *err)
{
    char key[RKE_KEY_MAX], got[2 * SHA256_DIGEST_SIZE + 1];
    rke_kv kv = {0};
    rke_blob_key(s, key, hex ? hex : "");
    int rc = rke_get(s->etcd, key, &kv, err);
    if (rc == RK_OK)
        rke_sha256_hex(kv.value ? kv.value : "", kv.len, got);
    if (rc == RK_OK && (!hex || !kv.mod_revision || strcmp(got, hex) != 0))
        rc = rke_damaged(err, cluster, "a topology chunk");
    char *grown = rc == RK_OK ? realloc(*doc, *len + kv.len + 1) : NULL;
    if (rc == RK_OK && !grown)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading a topology");
    if (grown) {
        memcpy(grown + *len, kv.value, kv.len);
        *len += kv.len;
        grown[*len] = '\0';
        *doc = grown;
    }
    rke_kv_deinit(&kv);
    return rc;
}

/* Version v's topology text into *doc: `text` when its key was read with the metadata (taken),
 * else its own key, or the chunks its metadata lists. */
static int read_topology(rke_store *s, const char *cluster, int64_t v, json_t *meta, char *text,
                         char **doc, rk_error *err)
{
    char key[RKE_KEY_MAX];
    json_t *chunks = json_object_get(meta, "chunks");
    size_t len = 0;
    rke_kv kv = {0};
    if (!chunks && text) {
        *doc = text;
        return RK_OK;
    }
    free(text);
    if (!chunks) {
        rke_key_num(s, key, cluster, "t/", v);
        int rc = rke_get(s->etcd, key, &kv, err);
        *doc = kv.value; /* NULL when missing: store_domain.c reports it damaged */
        kv.value = NULL;
        rke_kv_deinit(&kv);
        return rc;
    }
    int rc = RK_OK;
    for (size_t i = 0; rc == RK_OK && i < json_array_size(chunks); i++)
        rc = read_chunk(s, cluster, json_string_value(json_array_get(chunks, i)), doc, &len, err);
    return rc;
}

/* The number `pick` names, or the error for a missing one. */
static int pick_number(const char *cluster, rkd_store_pick pick, int64_t v, const rke_head *h,
                       int64_t *out, rk_error *err)
{
    *out = pick == RKD_PICK_ACTIVE ? h->active : pick == RKD_PICK_LATEST ? h->latest : v;
    if (pick == RKD_PICK_ACTIVE && *out == 0)
        return rkd_store_missing(err, RKD_STORE_ENOACTIVE, cluster, 0);
    if (*out < 1 || *out > h->latest)
        return rkd_store_missing(err, RKD_STORE_ENOVERSION, cluster, v);
    return RK_OK;
}

/* The version kept by the migration window open over rec (the active one), for dual reads. */
static int window_previous(rke_store *s, const rke_head *h, rkd_store_version *rec, rk_error *err)
{
    json_t *meta = NULL;
    if (rec->version != h->active || !h->previous)
        return RK_OK;
    int rc = rke_read_meta(s, rec->cluster, h->previous, &meta, err);
    if (rc == RK_OK) {
        rec->previous = h->previous;
        snprintf(rec->previous_fingerprint, sizeof rec->previous_fingerprint, "%s",
                 rke_str(meta, "fingerprint"));
    }
    json_decref(meta);
    return rc;
}

int rke_version_out(rke_store *s, const char *cluster, int64_t n, const rke_head *h, json_t *meta,
                    char *text, rkd_store_version **out, char **doc, rk_error *err)
{
    *out = calloc(1, sizeof **out);
    int rc = *out ? meta_to_record(meta, cluster, n, h, *out, err)
                  : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rc = rc ? rc : window_previous(s, h, *out, err);
    if (rc != RK_OK)
        free(text);
    return rc ? rc : read_topology(s, cluster, n, meta, text, doc, err);
}

int rke_meta_from(const rke_kvs *got, int64_t n, const char *cluster, json_t **meta, rk_error *err)
{
    *meta = n && got->count == 1 ? rke_kv_json(&got->items[0]) : NULL;
    return n && !json_is_object(*meta) ? rke_damaged(err, cluster, "a version's metadata") : RK_OK;
}

int rke_get_version(void *b, const char *cluster, rkd_store_pick pick, int64_t v,
                    rkd_store_version **out, char **doc, rk_error *err)
{
    rke_store *s = b;
    rke_head h;
    int64_t rev, n = pick == RKD_PICK_VERSION ? v : 0;
    json_t *meta = NULL;
    char key[2][RKE_KEY_MAX], *text = NULL;
    rke_range_req req[2] = {{key[0], NULL}, {key[1], NULL}};
    rke_kvs got[2] = {{0}};
    rke_key_num(s, key[0], cluster, "v/", n);
    rke_key_num(s, key[1], cluster, "t/", n);
    /* a version asked by number is read with the head; the active or latest one after it */
    int rc = rke_read_head_and(s, cluster, &h, &rev, req, n ? 2 : 0, got, err);
    if (rc == RK_OK && rev == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, v);
    rc = rc ? rc : pick_number(cluster, pick, v, &h, &n, err);
    if (rc == RK_OK && pick != RKD_PICK_VERSION) {
        rke_key_num(s, key[0], cluster, "v/", n);
        rke_key_num(s, key[1], cluster, "t/", n);
        rc = rke_ranges(s->etcd, req, 2, got, err);
    }
    rc = rc ? rc : rke_meta_from(&got[0], n, cluster, &meta, err);
    text = rc ? NULL : rke_kvs_take_value(&got[1]); /* NULL for a chunked topology */
    rc = rc ? rc : rke_version_out(s, cluster, n, &h, meta, text, out, doc, err);
    json_decref(meta);
    rke_kvs_free(&got[0]);
    rke_kvs_free(&got[1]);
    return rc;
}

/* ---- Lists ---- */

static int list_range(rke_store *s, const char *cluster, const rke_head *h, int64_t lo, int64_t hi,
                      rkd_store_version_list *out, rk_error *err)
{
    rke_kvs kvs = {0};
    int rc = rke_read_numbered(s, cluster, "v/", lo, hi, &kvs, err);
    out->items = rc ? NULL : calloc(kvs.count, sizeof *out->items);
    if (rc == RK_OK && !out->items)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory listing versions");
    for (size_t i = kvs.count; rc == RK_OK && i-- > 0;) { /* newest first */
        json_t *meta = rke_kv_json(&kvs.items[i]);
        rc = meta
                 ? meta_to_record(meta, cluster, lo + (int64_t)i, h, &out->items[out->count++], err)
                 : rke_damaged(err, cluster, "a version's metadata");
        json_decref(meta);
    }
    rke_kvs_free(&kvs);
    return rc;
}

void rke_page(int64_t count, size_t limit, int64_t before, int64_t *lo, int64_t *hi,
              int64_t *next_before)
{
    *hi = before > 0 && before - 1 < count ? before - 1 : count;
    *lo = *hi - (int64_t)limit + 1 > 1 ? *hi - (int64_t)limit + 1 : 1;
    *next_before = *hi >= 1 && *lo > 1 ? *lo : 0;
}

/* Numbering is gapless, so a page is the key range of its numbers: no server-side sort. */
int rke_list(void *b, const char *cluster, size_t limit, int64_t before,
             rkd_store_version_list *out, rk_error *err)
{
    rke_store *s = b;
    rke_head h;
    int64_t rev, lo, hi;
    int rc = rke_read_head(s, cluster, &h, &rev, err);
    if (rc == RK_OK && rev == 0)
        rc = rkd_store_missing(err, RKD_STORE_ENOCLUSTER, cluster, 0);
    rke_page(h.latest, limit, before, &lo, &hi, &out->next_before);
    if (rc != RK_OK || hi < 1)
        return rc;
    return list_range(s, cluster, &h, lo, hi, out, err);
}

static int add_cluster(const rke_store *s, const rke_kv *kv, rkd_store_cluster *c, rk_error *err)
{
    json_t *j = rke_kv_json(kv);
    const char *name = kv->key + strlen(s->prefix) + strlen("/heads/");
    c->active_version = rke_num(j, "active");
    c->latest_version = rke_num(j, "latest");
    int rc = json_is_object(j) ? rkd_store_strdup(name, &c->name, err)
                               : rke_damaged(err, name, "the head");
    json_decref(j);
    return rc;
}

/* The heads from `after` on (itself included when it exists, hence one more) in etcd's key order:
 * the names' byte order, as SQLite's ORDER BY name; one range read with a limit. */
int rke_list_clusters(void *b, size_t limit, const char *after, rkd_store_cluster_list *out,
                      rk_error *err)
{
    rke_store *s = b;
    rke_kvs kvs = {0};
    char heads[RKE_KEY_MAX], from[RKE_KEY_MAX];
    rke_head_key(s, heads, "");
    rke_head_key(s, from, after);
    char *to = rke_prefix_end(heads);
    rke_range_opts o = {.limit = (int64_t)limit + 1};
    int rc = to ? rke_range_with(s->etcd, from, to, &o, &kvs, err)
                : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    size_t skip = rc == RK_OK && kvs.count && strcmp(kvs.items[0].key, from) == 0 && after[0];
    size_t n = kvs.count - skip < limit ? kvs.count - skip : limit;
    out->items = rc || !n ? NULL : calloc(n, sizeof *out->items);
    if (rc == RK_OK && n && !out->items)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory listing clusters");
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        rc = add_cluster(s, &kvs.items[skip + i], &out->items[out->count++], err);
    if (rc == RK_OK && n && (kvs.count > skip + n || kvs.more))
        rc = rkd_store_strdup(out->items[n - 1].name, &out->next_after, err);
    rke_kvs_free(&kvs);
    free(to);
    return rc;
}

int rke_count_clusters(rke_store *s, int64_t *count, rk_error *err)
{
    rke_kvs kvs = {0};
    char heads[RKE_KEY_MAX];
    rke_head_key(s, heads, "");
    char *to = rke_prefix_end(heads);
    rke_range_opts o = {.count_only = 1};
    int rc = to ? rke_range_with(s->etcd, heads, to, &o, &kvs, err)
                : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    *count = kvs.total;
    rke_kvs_free(&kvs);
    free(to);
    return rc;
}
