/* reply.h — how every handler of the API answers (reply.c): the response's body, shared with its
 * owner or not, JSON, errors of api_errors.h with a message for people, failures of the store and
 * the library mapped to them, and the answers of plans. A response owns its body (api.h); every
 * `doc` given here is stolen.
 */
#ifndef RKD_REPLY_H
#define RKD_REPLY_H

#include <stddef.h>

#include <jansson.h>

#include "api.h"
#include "app.h"
#include "cache.h"

#define RKD_CT_JSON    "application/json; charset=utf-8"
#define RKD_CT_TEXT    "text/plain; charset=utf-8"
#define RKD_CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

/* Makes `resp` a `status` answer of `ctype` (static) with `body` (stolen, `len` bytes). */
void rkd_set_body(rkd_response *resp, int status, const char *ctype, char *body, size_t len);
/* The same with a shared `body` that `owner` keeps alive: the response takes the caller's hold on
 * `owner` and drops it with release(owner) once the body is sent (no copy per connection). */
void rkd_set_shared_body(rkd_response *resp, int status, const char *ctype, const char *body,
                         size_t len, void (*release)(void *owner), void *owner);
/* The fixed 500 body, for when even an error body cannot be built. */
void rkd_out_of_memory(rkd_response *resp);
/* Answers `doc` (stolen) as JSON with `status`. */
void rkd_answer_json(rkd_response *resp, int status, json_t *doc);
/* Answers the failure `rc` (RK_* or RKD_STORE_*) as its HTTP error, with the message of `err`
 * (may be NULL for out of memory); database failures count as RKD_COUNT_DB_ERRORS. */
void rkd_fail(rkd_call *c, int rc, const rk_error *err);

/* Answers 200 with the document of held entry `e` (docs.h; the hold is taken over): shared with
 * the cache and every other connection sending it, released once sent. */
void rkd_answer_doc(rkd_response *resp, rkd_entry *e);

/* Answers a plan's failure: plan_too_large for one over --max-plan-arcs or rkd_plan_rings'
 * max_nodes (then 1), else as rkd_fail (0). */
int rkd_fail_plan(rkd_call *c, int rc, const rk_error *err);
/* Answers plan_too_large for a plan whose rendering would pass --max-plan-rows: `what` says how
 * many rows, `fewer` how to ask for less. */
void rkd_fail_rows(rkd_call *c, const char *what, const char *fewer);

/* Takes one of the --plan-concurrency slots for the request's address (rkd_plan_slot_take): 1,
 * or 0 after answering 503 with Retry-After. Release a taken slot with rkd_plan_slot_release. */
int rkd_plan_slot(rkd_call *c);
void rkd_plan_slot_release(rkd_call *c);

#endif
