/* client_verify.c — the checks a fetched version document passes before the client routes by it. */
#include <inttypes.h>
#include <string.h>

#include <jansson.h>

#include "client_internal.h"

size_t rki_max_body(const rk_client_config *cfg)
{
    return cfg->max_body ? cfg->max_body : RKI_DEFAULT_MAX_BODY;
}

static int load(const char *text, size_t len, json_t **doc, rk_error *err)
{
    json_error_t jerr;
    *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*doc)
        return rk_error_set(err, RK_EDOCUMENT, NULL,
                            "the response is not JSON (line %d, column %d: %s): check that the "
                            "server URL points at ringkeeperd",
                            jerr.line, jerr.column, jerr.text);
    if (!json_is_object(*doc))
        return rk_error_set(err, RK_EDOCUMENT, NULL,
                            "the response is not a JSON object: check that the server URL points "
                            "at ringkeeperd");
    return RK_OK;
}

static int check_cluster(const rk_client_config *cfg, const json_t *doc, rk_error *err)
{
    const json_t *v = json_object_get(doc, "cluster");
    if (!json_is_string(v))
        return rk_error_set(err, RK_EDOCUMENT, "cluster",
                            "missing or not a string: the response is not a version document; "
                            "check the server URL");
    if (strcmp(json_string_value(v), cfg->cluster) != 0)
        return rk_error_set(err, RK_ECLUSTER, "cluster",
                            "the ring is of cluster \"%.64s\" but this client is for \"%.64s\": "
                            "check the server URL and the cluster name",
                            json_string_value(v), cfg->cluster);
    return RK_OK;
}

static int check_version(const json_t *doc, int64_t *version, rk_error *err)
{
    const json_t *v = json_object_get(doc, "version");
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > RKI_MAX_VERSION)
        return rk_error_set(err, RK_EDOCUMENT, "version",
                            "missing or not an integer from 1 to 2^53-1: the response is not a "
                            "version document; check the server URL");
    *version = json_integer_value(v);
    return RK_OK;
}

/* Only the active version is the ring: a staged one may never be activated. The previous ring
 * of a migration window (`exact` > 0) is any state, but exactly that version. */
static int check_state(const json_t *doc, int64_t version, int64_t exact, rk_error *err)
{
    const char *state = json_string_value(json_object_get(doc, "state"));
    if (exact && version != exact)
        return rk_error_set(err, RK_EDOCUMENT, "version",
                            "the server sent version %" PRId64 " when asked for version %" PRId64
                            ", the previous ring of the migration window; check the server URL",
                            version, exact);
    if (exact || (state && strcmp(state, "active") == 0))
        return RK_OK;
    return rk_error_set(err, RK_EDOCUMENT, "state",
                        "version %" PRId64 " is in state \"%.16s\", not \"active\": only the "
                        "active version is the ring; check the server URL",
                        version, state ? state : "(none)");
}

/* The scheme the configuration expects, or -1 for any. */
static int expected_scheme(const rk_client_config *cfg)
{
    rk_scheme s = RK_SCHEME_RINGKEEPER;
    if (cfg->expect_scheme)
        rk_scheme_from_name(cfg->expect_scheme, &s); /* checked by rk_client_new */
    return cfg->expect_scheme || cfg->expect_hash ? (int)s : -1;
}

static int check_hash(const rk_client_config *cfg, const json_t *doc, rk_error *err)
{
    const json_t *v = json_object_get(doc, "hash");
    const char *scheme_name = json_string_value(json_object_get(doc, "scheme"));
    rk_scheme scheme = RK_SCHEME_RINGKEEPER;
    rk_hash_alg alg;
    if (!json_is_string(v))
        return rk_error_set(err, RK_EDOCUMENT, "hash",
                            "missing or not a string: the response is not a version document");
    const char *name = json_string_value(v);
    char names[RKI_HASH_NAMES_MAX];
    if ((scheme_name && rk_scheme_from_name(scheme_name, &scheme) != RK_OK) ||
        rk_hash_from_scheme_name(scheme, name, &alg) != RK_OK)
        return rk_error_set(err, RK_EUNKNOWNHASH, "hash",
                            "the ring hashes with \"%.32s\" in the \"%.16s\" scheme, which this "
                            "library does not know: upgrade libringkeeper or publish a topology "
                            "with %s",
                            name, scheme_name ? scheme_name : rk_scheme_at(0),
                            rki_hash_names(RK_SCHEME_RINGKEEPER, names, sizeof names, "", " or "));
    int want = expected_scheme(cfg);
    if (want >= 0 && (int)scheme != want)
        return rk_error_set(err, RK_EEXPECT, "scheme",
                            "the server's ring is of the %s scheme but this application expects "
                            "the %s scheme: fix the application's configuration or publish a "
                            "topology of the %s scheme",
                            rk_scheme_name(scheme), rk_scheme_name((rk_scheme)want),
                            rk_scheme_name((rk_scheme)want));
    if (cfg->expect_hash && strcmp(name, cfg->expect_hash) != 0)
        return rk_error_set(err, RK_EEXPECT, "hash",
                            "the server's ring hashes with %s but this application expects %s: "
                            "fix the application's configuration or publish a topology with %s",
                            name, cfg->expect_hash, cfg->expect_hash);
    return RK_OK;
}

static int check_vnode_factor(const rk_client_config *cfg, const json_t *doc, rk_error *err)
{
    const json_t *v = json_object_get(doc, "vnode_factor");
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, rk_scheme_at(0)) != 0 && !v) { /* a scheme without one (ketama) */
        if (cfg->expect_vnode_factor)
            return rk_error_set(err, RK_EEXPECT, "vnode_factor",
                                "the server's ring is of the %.16s scheme, which has no "
                                "vnode_factor, but this application expects vnode_factor %" PRIu32
                                ": fix the application's configuration",
                                scheme, cfg->expect_vnode_factor);
        return RK_OK;
    }
    if (!json_is_integer(v))
        return rk_error_set(err, RK_EDOCUMENT, "vnode_factor",
                            "missing or not an integer: the response is not a version document");
    json_int_t vf = json_integer_value(v);
    if (cfg->expect_vnode_factor && vf != (json_int_t)cfg->expect_vnode_factor)
        return rk_error_set(err, RK_EEXPECT, "vnode_factor",
                            "the server's ring has vnode_factor %" JSON_INTEGER_FORMAT
                            " but this application expects %" PRIu32
                            ": fix the application's configuration or publish a topology with "
                            "vnode_factor %" PRIu32,
                            vf, cfg->expect_vnode_factor, cfg->expect_vnode_factor);
    return RK_OK;
}

/* "" when absent (a server from before store ids). */
static int get_store_id(const json_t *doc, char out[RKI_STORE_ID_LEN], rk_error *err)
{
    const json_t *v = json_object_get(doc, "store_id");
    const char *s = json_string_value(v);
    out[0] = '\0';
    if (!v)
        return RK_OK;
    if (!s || strlen(s) != RKI_STORE_ID_LEN - 1 ||
        strspn(s, "0123456789abcdef") != RKI_STORE_ID_LEN - 1)
        return rk_error_set(err, RK_EDOCUMENT, "store_id",
                            "not 16 lowercase hex digits: the response is not a version document; "
                            "check the server URL");
    memcpy(out, s, RKI_STORE_ID_LEN);
    return RK_OK;
}

int rki_same_ring(const rki_ring_id *a, const rki_ring_id *b)
{
    return a->version == b->version && strcmp(a->store_id, b->store_id) == 0 &&
           strcmp(a->fingerprint, b->fingerprint) == 0;
}

static int check_not_older(const rki_ring_id *id, const rki_ring_id *floor, int any_store,
                           rk_error *err)
{
    if (!floor || id->version >= floor->version ||
        (!any_store && strcmp(id->store_id, floor->store_id) != 0))
        return RK_OK;
    int64_t version = id->version, min = floor->version;
    return rk_error_set(err, RK_EOLDVERSION, "version",
                        "the ring is version %" PRId64 ", older than version %" PRId64
                        " already accepted (by this process or in the last-known-good file): "
                        "activate a newer version on the server (a restored backup rolls it "
                        "back), or delete the last-known-good file if the rollback is wanted",
                        version, min);
}

static int get_fingerprint(const json_t *doc, const char **out, rk_error *err)
{
    const json_t *v = json_object_get(doc, "fingerprint");
    const char *s = json_string_value(v);
    if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
        return rk_error_set(err, RK_EDOCUMENT, "fingerprint",
                            "missing or not 16 lowercase hex digits: the server must send the "
                            "ring fingerprint; upgrade ringkeeperd");
    *out = s;
    return RK_OK;
}

/* The topology's own checks, then the ring, then the fingerprint; *ring set on success. */
static int check_ring(const json_t *doc, const char *fingerprint, int64_t version, rk_ring **ring,
                      rk_error *err)
{
    rk_error terr = {0};
    rk_topology *t = rk_topology_from_json(doc, &terr);
    if (!t) {
        int code = terr.code == RK_ENOMEM ? RK_ENOMEM : RK_EDOCUMENT;
        return rk_error_set(err, code, terr.field, "%s (in the server's version %" PRId64 ")",
                            terr.message + (terr.field[0] ? strlen(terr.field) + 2 : 0), version);
    }
    *ring = rk_ring_build(t, err);
    rk_topology_free(t); /* the ring holds its own reference */
    if (!*ring)
        return err ? err->code : RK_ENOMEM;
    if (strcmp(rk_ring_fingerprint_hex(*ring), fingerprint) == 0)
        return RK_OK;
    rk_error_set(err, RK_EFINGERPRINT, "fingerprint",
                 "version %" PRId64 " recomputed gives ring fingerprint %s but the server says "
                 "%s: server and library disagree on the ring; do not route by it, report both "
                 "versions of ringkeeper",
                 version, rk_ring_fingerprint_hex(*ring), fingerprint);
    rk_ring_free(*ring);
    *ring = NULL;
    return RK_EFINGERPRINT;
}

/* "previous": null (or absent: a server from before migration windows), or {"version": an older
 * version, "fingerprint": 16 lowercase hex digits}. */
static int get_window(const json_t *doc, int64_t version, rki_window *w, rk_error *err)
{
    const json_t *p = json_object_get(doc, "previous");
    const json_t *v = json_object_get(p, "version");
    const char *fp = json_string_value(json_object_get(p, "fingerprint"));
    memset(w, 0, sizeof *w);
    if (!p || json_is_null(p))
        return RK_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) >= version ||
        !fp || strlen(fp) != 16 || strspn(fp, "0123456789abcdef") != 16)
        return rk_error_set(err, RK_EDOCUMENT, "previous",
                            "neither null nor {\"version\": a version older than %" PRId64
                            ", \"fingerprint\": 16 lowercase hex digits}: the response is not a "
                            "ring document; check the server URL",
                            version);
    w->previous = json_integer_value(v);
    memcpy(w->fingerprint, fp, sizeof w->fingerprint);
    return RK_OK;
}

/* `exact`: 0 for a ring document, else the version of a window's previous ring. */
static int verify_json(const rk_client_config *cfg, const json_t *doc, const rki_ring_id *floor,
                       int any_store, int64_t exact, rki_ring_id *id, rki_window *w, rk_ring **ring,
                       rk_error *err)
{
    const char *fp = NULL;
    int rc = check_cluster(cfg, doc, err);
    if (rc == RK_OK)
        rc = check_version(doc, &id->version, err);
    if (rc == RK_OK)
        rc = get_store_id(doc, id->store_id, err);
    if (rc == RK_OK)
        rc = check_state(doc, id->version, exact, err);
    if (rc == RK_OK)
        rc = get_window(doc, id->version, w, err);
    if (rc == RK_OK)
        rc = check_hash(cfg, doc, err);
    if (rc == RK_OK)
        rc = check_vnode_factor(cfg, doc, err);
    if (rc == RK_OK)
        rc = check_not_older(id, floor, any_store, err);
    if (rc == RK_OK)
        rc = get_fingerprint(doc, &fp, err);
    if (rc == RK_OK)
        rc = check_ring(doc, fp, id->version, ring, err);
    if (rc == RK_OK) /* recomputed: the ring's own, whatever the server says */
        memcpy(id->fingerprint, fp, sizeof id->fingerprint);
    return rc;
}

/* Loads `text` and runs verify_json on it; *id as rki_verify_doc says. */
static int verify_text(const rk_client_config *cfg, const char *text, size_t len,
                       const rki_ring_id *floor, int any_store, int64_t exact, rki_ring_id *id,
                       rki_window *w, rk_ring **ring, rk_error *err)
{
    json_t *doc = NULL;
    rki_ring_id got = {0};
    rki_window scratch;
    int rc;
    *ring = NULL;
    memset(id, 0, sizeof *id);
    if (!cfg || !cfg->cluster || !text)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "a configuration with a cluster and a text "
                            "are needed");
    if (len > rki_max_body(cfg)) {
        rc = rk_error_set(err, RK_ETOOLARGE, NULL,
                          "the document is %zu bytes, over the cap of %zu: raise max_body", len,
                          rki_max_body(cfg));
        goto out;
    }
    rc = load(text, len, &doc, err);
    if (rc == RK_OK)
        rc = verify_json(cfg, doc, floor, any_store, exact, &got, w ? w : &scratch, ring, err);
    *id = got;
out:
    json_decref(doc);
    return rc;
}

int rki_verify_doc(const rk_client_config *cfg, const char *text, size_t len,
                   const rki_ring_id *floor, int any_store, rki_ring_id *id, rki_window *window,
                   rk_ring **ring, rk_error *err)
{
    return verify_text(cfg, text, len, floor, any_store, 0, id, window, ring, err);
}

int rki_verify_previous(const rk_client_config *cfg, const char *text, size_t len,
                        const rki_ring_id *of, const rki_window *w, rk_ring **ring, rk_error *err)
{
    rki_ring_id id;
    int rc = verify_text(cfg, text, len, NULL, 0, w->previous, &id, NULL, ring, err);
    if (rc == RK_OK && strcmp(id.store_id, of->store_id) != 0)
        rc = rk_error_set(err, RK_EDOCUMENT, "store_id",
                          "version %" PRId64 " comes from store %.16s, not %.16s like version "
                          "%" PRId64
                          ": the server's database changed; the next refresh sorts it out",
                          w->previous, id.store_id, of->store_id, of->version);
    if (rc == RK_OK && strcmp(rk_ring_fingerprint_hex(*ring), w->fingerprint) != 0)
        rc = rk_error_set(err, RK_EFINGERPRINT, "fingerprint",
                          "version %" PRId64 " has fingerprint %s but version %" PRId64
                          " names %s as its previous ring: the server contradicts itself; do not "
                          "route by it, report both versions of ringkeeper",
                          w->previous, rk_ring_fingerprint_hex(*ring), of->version, w->fingerprint);
    if (rc != RK_OK) {
        rk_ring_free(*ring);
        *ring = NULL;
    }
    return rc;
}

int rki_verify_latest(const rk_client_config *cfg, const char *text, size_t len,
                      rki_ring_id *latest, rk_error *err)
{
    json_t *doc = NULL;
    int rc = load(text, len, &doc, err);
    const json_t *newest = json_array_get(json_object_get(doc, "versions"), 0);
    if (rc == RK_OK && !json_is_object(newest))
        rc = rk_error_set(err, RK_EDOCUMENT, "versions",
                          "missing or empty: the response is not a version list; check the "
                          "server URL");
    if (rc == RK_OK)
        rc = check_cluster(cfg, newest, err);
    if (rc == RK_OK)
        rc = check_version(newest, &latest->version, err);
    if (rc == RK_OK)
        rc = get_store_id(newest, latest->store_id, err);
    if (rc != RK_OK)
        memset(latest, 0, sizeof *latest);
    json_decref(doc);
    return rc;
}

rk_topology *rk_client_verify(const rk_client_config *cfg, const char *text, size_t len,
                              int64_t expect_version_min, int64_t *version, rk_error *err)
{
    rk_ring *ring = NULL;
    rki_ring_id floor = {expect_version_min, "", ""}, id;
    if (rki_verify_doc(cfg, text, len, &floor, 1, &id, NULL, &ring, err) != RK_OK)
        return NULL;
    if (version)
        *version = id.version;
    rk_topology *t = rk_topology_ref((rk_topology *)rk_ring_topology(ring));
    rk_ring_free(ring);
    return t;
}
