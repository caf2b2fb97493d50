/* request.h — how every handler of the API reads its request (request.c): the body as a JSON
 * object and its fields, query parameters, If-Match, and version ETags. A value that does not
 * parse is answered 400 here (or 412 for another store's If-Match): the handler just returns.
 * Strings handed back are borrowed from the request or its parsed body.
 */
#ifndef RKD_REQUEST_H
#define RKD_REQUEST_H

#include <stdint.h>

#include <jansson.h>

#include "api.h"
#include "app.h"

/* The request body as a JSON object (an empty body is {} when empty_ok), new reference; NULL
 * after answering 400. */
json_t *rkd_body_object(rkd_call *c, int empty_ok);
/* 0 when every key of `doc` is one of `allowed` (NULL-terminated; `list` names them for people),
 * else -1 after answering 400. */
int rkd_known_fields(rkd_call *c, json_t *doc, const char *const *allowed, const char *list);
/* Optional string field `name` of at most RK_MAX_COMMENT bytes into *out (borrowed from doc;
 * NULL when absent): 0, or -1 after answering 400. */
int rkd_text_field(rkd_call *c, json_t *doc, const char *name, const char **out);

/* A decimal integer 0..INT64_MAX: digits only, no sign, no spaces. 0, or -1. */
int rkd_parse_int(const char *s, int64_t *out);
/* A version ETag, quotes included: "v<N>.<store id>.<fingerprint>" as the server sends a ring's
 * ("v<N>+..." while a migration window is open), "v<N>.<store id>" (a version's picture, and
 * clients before the fingerprint), or the bare "v<N>" / "v<N>+" of older clients, into *version,
 * *open (may be NULL), store_id and fingerprint (may be NULL; "" for the parts not sent): 0, or -1.
 */
int rkd_parse_etag(const char *s, int64_t *version, int *open, char store_id[RKD_STORE_ID_LEN],
                   char fingerprint[RKD_STORE_FP_LEN]);
/* "v<N>.<store id>.<fingerprint>" with the quotes ("v<N>.<store id>" when fingerprint is NULL),
 * "v<N>+..." when `open` (docs/API.md: the ring document names a previous version): a version
 * number names a ring only together with the store id, since a restored backup numbers its
 * versions on from where it was taken, and a 304 must mean "the ring you hold is this one", which
 * only the fingerprint of what the client holds can say (a hostile server may have sent it a
 * ring under this store's id and a number this store had not yet issued). */
void rkd_format_etag(char out[RKD_ETAG_MAX], int64_t version, int open, const char *store_id,
                     const char *fingerprint);

/* Query integer `name` in min..max: 1 and *out set when present, 0 when absent, -1 after
 * answering 400. */
int rkd_query_int(rkd_call *c, const char *name, int64_t min, int64_t max, int64_t *out);
/* Query boolean `name` ("true" or "false"; *out keeps its default when absent): 0, or -1 after
 * answering 400. */
int rkd_query_bool(rkd_call *c, const char *name, int *out);
/* If-Match as a version (RKD_STORE_ANY when absent): 0, or -1 after answering 400, or 412 when
 * it names another store id (the version it names is from before a restore). */
int rkd_if_match(rkd_call *c, int64_t *version);

#endif
