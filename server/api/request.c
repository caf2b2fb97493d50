/* request.c — how every handler of the API reads its request (request.h): the body as a JSON
 * object and its fields, query parameters, If-Match, and the version ETags of this store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "reply.h"
#include "request.h"

/* The body as a JSON object (an empty body is {} when `empty_ok`): new reference, or NULL after
 * answering 400. */
json_t *rkd_body_object(rkd_call *c, int empty_ok)
{
    json_error_t jerr;
    if (empty_ok && c->req->body_len == 0)
        return json_object();
    json_t *doc = json_loadb(c->req->body ? c->req->body : "", c->req->body_len,
                             JSON_REJECT_DUPLICATES, &jerr);
    if (!doc || !json_is_object(doc)) {
        rkd_response_error(c->resp, RKD_E_MALFORMED_JSON, NULL,
                           "the request body must be a JSON object%s%s", doc ? "" : ": ",
                           doc ? "" : jerr.text);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* 0 when every key of `doc` is one of `allowed` (NULL-terminated), else -1 after answering 400. */
int rkd_known_fields(rkd_call *c, json_t *doc, const char *const *allowed, const char *list)
{
    const char *key;
    json_t *val;
    json_object_foreach(doc, key, val)
    {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i]) {
            rkd_response_error(c->resp, RKD_E_INVALID_BODY, key,
                               "unknown field %.64s; the fields are %s", key, list);
            return -1;
        }
    }
    return 0;
}

/* Optional string field `name` of at most RK_MAX_COMMENT bytes into *out (borrowed from doc;
 * NULL when absent): 0, or -1 after answering 400. */
int rkd_text_field(rkd_call *c, json_t *doc, const char *name, const char **out)
{
    json_t *v = json_object_get(doc, name);
    *out = v ? json_string_value(v) : NULL;
    if (!v || (*out && strlen(*out) <= RK_MAX_COMMENT))
        return 0;
    rkd_response_error(c->resp, RKD_E_INVALID_BODY, name, "%s is a string of at most %d bytes",
                       name, RK_MAX_COMMENT);
    return -1;
}

/* A decimal integer 0..INT64_MAX: digits only, no sign, no spaces. */
int rkd_parse_int(const char *s, int64_t *out)
{
    if (!s || s[0] < '0' || s[0] > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* Whether s..end is `len` lowercase hex digits. */
static int hex_part(const char *s, size_t len, const char *end)
{
    return (size_t)(end - s) == len && strspn(s, "0123456789abcdef") >= len;
}

int rkd_parse_etag(const char *s, int64_t *version, int *open, char store_id[RKD_STORE_ID_LEN],
                   char fingerprint[RKD_STORE_FP_LEN])
{
    char digits[24];
    size_t len = s ? strlen(s) : 0;
    if (len < 4 || s[0] != '"' || s[1] != 'v' || s[len - 1] != '"')
        return -1;
    const char *end = s + len - 1;     /* the closing quote */
    size_t n = strcspn(s + 2, "+.\""); /* the digits */
    const char *rest = s + 2 + n;      /* "+" (a migration window is open), ".", or the end */
    int plus = *rest == '+';
    rest += plus;
    const char *id = *rest == '.' ? rest + 1 : end; /* the store id, after the dot */
    const char *id_end = id + strcspn(id, ".\"");
    const char *fp = *id_end == '.' ? id_end + 1 : end; /* the fingerprint, after another */
    if (n >= sizeof digits || (*rest != '.' && rest != end) || (fp == end && id_end != end) ||
        (id != end && !hex_part(id, RKD_STORE_ID_LEN - 1, id_end)) ||
        (fp != end && !hex_part(fp, RKD_STORE_FP_LEN - 1, end)))
        return -1;
    memcpy(digits, s + 2, n);
    digits[n] = '\0';
    memcpy(store_id, id, (size_t)(id_end - id));
    store_id[id_end - id] = '\0';
    if (fingerprint) {
        memcpy(fingerprint, fp, (size_t)(end - fp));
        fingerprint[end - fp] = '\0';
    }
    if (open)
        *open = plus;
    return rkd_parse_int(digits, version);
}

void rkd_format_etag(char out[RKD_ETAG_MAX], int64_t version, int open, const char *store_id,
                     const char *fingerprint)
{
    snprintf(out, RKD_ETAG_MAX, "\"v%lld%s.%s%s%s\"", (long long)version, open ? "+" : "", store_id,
             fingerprint ? "." : "", fingerprint ? fingerprint : "");
}

/* Query integer `name` in min..max: 1 and *out set when present, 0 when absent, -1 after
 * answering 400. */
int rkd_query_int(rkd_call *c, const char *name, int64_t min, int64_t max, int64_t *out)
{
    const char *s = c->req->query(c->req, name);
    if (!s)
        return 0;
    if (rkd_parse_int(s, out) == 0 && *out >= min && *out <= max)
        return 1;
    if (max == INT64_MAX)
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, name,
                           "query parameter %s must be an integer of at least %lld", name,
                           (long long)min);
    else
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, name,
                           "query parameter %s must be an integer from %lld to %lld", name,
                           (long long)min, (long long)max);
    return -1;
}

/* Query boolean `name` ("true" or "false"; *out keeps its default when absent): 0, or -1 after
 * answering 400. */
int rkd_query_bool(rkd_call *c, const char *name, int *out)
{
    const char *s = c->req->query(c->req, name);
    if (!s)
        return 0;
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        *out = s[0] == 't';
        return 0;
    }
    rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, name,
                       "query parameter %s must be true or false", name);
    return -1;
}

/* If-Match as a version (RKD_STORE_ANY when absent): 0, or -1 after answering 400. */
int rkd_if_match(rkd_call *c, int64_t *version)
{
    const char *s = c->req->header(c->req, "If-Match");
    char id[RKD_STORE_ID_LEN];
    const char *ours = rkd_store_id(c->app->store);
    *version = RKD_STORE_ANY;
    if (s && rkd_parse_etag(s, version, NULL, id, NULL) != 0) {
        rkd_response_error(c->resp, RKD_E_INVALID_HEADER, "If-Match",
                           "If-Match must be a version ETag such as \"v4\" (with the quotes)");
        return -1;
    }
    if (!s || !id[0] || strcmp(id, ours) == 0)
        return 0;
    rkd_response_error(c->resp, RKD_E_PRECONDITION_FAILED, "If-Match",
                       "If-Match names store %s but this server's store is %s (the database was "
                       "restored from a backup since): fetch the versions again, review, and retry",
                       id, ours);
    return -1;
}
