/* load_profile.c — the cluster's load profile: checked, stored, read back (load_profile.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc_change.h"
#include "load_profile.h"

#define PROFILE_FORMAT 1 /* the "profile" member measure writes */
#define HASH_NAME_MAX  64

static int bad(rk_error *err, const char *field, const char *what)
{
    return rk_error_set(err, RK_EINVAL, field, "%s", what);
}

/* RK_OK when `doc` is a profile the plans can read: its format, hash, time, rate and load. */
static int check(const json_t *doc, const char *cluster, rk_error *err)
{
    const json_t *hash = json_object_get(doc, "hash"), *named = json_object_get(doc, "cluster");
    const json_t *rate = json_object_get(doc, "sample_rate");
    if (!json_is_object(doc))
        return bad(err, "profile", "the body must be a load profile (a JSON object)");
    if (json_integer_value(json_object_get(doc, "profile")) != PROFILE_FORMAT)
        return bad(err, "profile", "must be 1, the profile format of `ringkeeper measure`");
    if (!json_is_string(hash) || json_string_length(hash) == 0 ||
        json_string_length(hash) > HASH_NAME_MAX)
        return bad(err, "hash", "must name the hash the keys were placed by (1..64 characters)");
    if (json_integer_value(json_object_get(doc, "measured_epoch_s")) <= 0)
        return bad(err, "measured_epoch_s", "must be when it was measured, seconds since 1970");
    if (!json_is_number(rate) || !(json_number_value(rate) > 0 && json_number_value(rate) <= 1))
        return bad(err, "sample_rate", "must be a number, 0 < rate <= 1");
    if (named && (!json_is_string(named) || strcmp(json_string_value(named), cluster) != 0))
        return bad(err, "cluster", "names another cluster than the path's");
    rk_error in = {0};
    rk_load *l = rk_load_from_json(json_object_get(doc, "load"), &in);
    if (!l) { /* in names a field of the load: "bins: ...", said here as "load.bins: ..." */
        char field[RK_ERROR_FIELD_MAX];
        snprintf(field, sizeof field, "load%s%.58s", in.field[0] ? "." : "", in.field);
        size_t prefix = in.field[0] ? strlen(in.field) + 2 : 0;
        return rk_error_set(err, in.code, field, "%s",
                            in.message + (prefix < strlen(in.message) ? prefix : 0));
    }
    rk_load_free(l);
    return RK_OK;
}

typedef struct {
    const json_t *doc;
    const char *author;
} put_arg;

/* The rule of a store: the new profile replaces whatever was there. */
static int replace(rkd_doc_change *c, rk_error *err)
{
    const put_arg *a = c->arg;
    json_decref(c->doc);
    c->doc = json_deep_copy(a->doc);
    if (!c->doc || json_object_set_new(c->doc, "stored_by", json_string(a->author)))
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    const char *at = json_string_value(json_object_get(a->doc, "measured_at"));
    snprintf(c->detail, sizeof c->detail, "measured %.64s, sample rate %g",
             at ? at : "at an unknown time",
             json_number_value(json_object_get(a->doc, "sample_rate")));
    c->event = (rkd_store_doc_event){.kind = "load", .author = a->author, .detail = c->detail};
    return RK_OK;
}

int rkd_load_profile_put(rkd_store *s, const char *cluster, const json_t *doc, const char *author,
                         time_t now, json_t **out, rk_error *err)
{
    *out = NULL;
    int rc = check(doc, cluster, err);
    char *text = rc ? NULL : json_dumps(doc, JSON_COMPACT);
    size_t len = text ? strlen(text) : 0;
    free(text);
    if (rc == RK_OK && len > RKD_LOAD_PROFILE_MAX)
        return rk_error_set(err, RK_EINVAL, "load",
                            "the profile is %zu bytes, a stored one at most %u: measure "
                            "with fewer --bins",
                            len, RKD_LOAD_PROFILE_MAX);
    put_arg a = {doc, author ? author : "anonymous"};
    rkd_doc_change c = {.rule = replace, .arg = &a, .now = now};
    rc = rc ? rc : rkd_doc_run(s, RKD_DOC_LOAD, cluster, &c, out, err);
    json_decref(c.doc);
    return rc;
}

int rkd_load_profile_get(rkd_store *s, const char *cluster, time_t now, json_t **out, rk_error *err)
{
    int64_t rev;
    int rc = rkd_doc_read(s, RKD_DOC_LOAD, cluster, out, &rev, err);
    json_int_t at = json_integer_value(json_object_get(*out, "measured_epoch_s"));
    if (rc == RK_OK && *out && json_object_set_new(*out, "age_s", json_integer(now - at))) {
        json_decref(*out);
        *out = NULL;
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    }
    return rc;
}
