/* api_harness.h — requests to ringkeeperd's API in-process, for the API's unit tests: an app on a
 * SQLite store, one rkd_api_handle call per request (query "a=1&b=2", headers "Name: value\n..."),
 * and cmocka checks of the answers. A failed check ends the test (cmocka's fail_msg). */
#ifndef RK_TEST_API_HARNESS_H
#define RK_TEST_API_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api.h"
#include "metrics.h"
#include "store.h"

/* An app on a new store `dir`/`name`.db; metrics may be NULL. Closed by app_close. */
rkd_app *app_open(const char *dir, const char *name, rkd_store **store, rkd_metrics *metrics);
void app_close(rkd_app *app, rkd_store *store);

/* One request through rkd_api_handle (`resumed` as rkd_request's); the caller clears the answer
 * (rkd_response_clear) or hands it to expect_json/expect_error. query, headers, body may be NULL.
 */
rkd_response run(rkd_app *app, const char *method, const char *path, const char *query,
                 const char *headers, const char *body, int resumed);
rkd_response get(rkd_app *app, const char *path, const char *query, const char *headers);

/* The JSON body of `r` (a new reference); fails the test when it is not JSON. */
json_t *body_json(const rkd_response *r);
/* Checks an error answer's status, code and field (NULL: no field), and clears it. */
void expect_error(rkd_response r, int status, const char *code, const char *field);
/* Checks `r`'s status and returns its JSON body (a new reference), clearing the answer. */
json_t *expect_json(rkd_response r, int status);
/* doc's integer or string `key` (borrowed); fails the test when it is not one. */
int64_t int_at(json_t *doc, const char *key);
const char *str_at(json_t *doc, const char *key);

/* A topology of the first n of six nodes as compact JSON (the caller frees it); comment NULL for
 * none. */
char *topology(size_t n, const char *hash, const char *comment);
/* Publishes n nodes and returns the new version's number; `query` may ask to activate. */
int64_t publish(rkd_app *app, const char *cluster, size_t n, const char *query);
/* Activates v: its document (a new reference) when `status` is 200, else checks the error is
 * `status` with code "conflict" and returns NULL. */
json_t *activate(rkd_app *app, const char *cluster, int64_t v, const char *headers, int status);
/* The string `key` of version v's document, copied to `out` (returned). */
const char *version_str(rkd_app *app, const char *cluster, int64_t v, const char *key, char *out,
                        size_t cap);
const char *state_of(rkd_app *app, const char *cluster, int64_t v, char *out, size_t cap);

#endif
