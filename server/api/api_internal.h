/* api_internal.h — what the files of the HTTP API share: the handlers of api.c's route table
 * (api_admin.c, api_versions.c, api_ring.c, api_plan.c ...) and the response and query helpers of
 * api_common.c, over the services of server/app/. Not installed, not used outside server/ and its
 * tests.
 */
#ifndef RKD_API_INTERNAL_H
#define RKD_API_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api.h"
#include "app.h"
#include "cache.h"
#include "changes.h"
#include "doc_change.h"
#include "docs.h"
#include "fleet.h"
#include "gate.h"
#include "migration_job.h"
#include "picture.h"
#include "rings.h"
#include "rollout.h"
#include "rollout_driver.h"
#include "store.h"
#include "version_doc.h"

#define RKD_CT_JSON    "application/json; charset=utf-8"
#define RKD_CT_TEXT    "text/plain; charset=utf-8"
#define RKD_CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

/* ---- The handlers of api.c's route table: each answers c->resp, errors included ---- */

void rkd_h_healthz(rkd_call *c);            /* api_admin.c */
void rkd_h_readyz(rkd_call *c);             /* api_admin.c */
void rkd_h_metrics(rkd_call *c);            /* api_admin.c */
void rkd_h_clusters(rkd_call *c);           /* api_admin.c */
void rkd_h_changes(rkd_call *c);            /* api_changes.c */
void rkd_h_publish(rkd_call *c);            /* api_versions.c */
void rkd_h_list_versions(rkd_call *c);      /* api_versions.c */
void rkd_h_get_version(rkd_call *c);        /* api_versions.c */
void rkd_h_activate(rkd_call *c);           /* api_versions.c */
void rkd_h_revert(rkd_call *c);             /* api_versions.c */
void rkd_h_ring(rkd_call *c);               /* api_ring.c */
void rkd_h_plan(rkd_call *c);               /* api_plan.c */
void rkd_h_ui_redirect(rkd_call *c);        /* api_ui.c */
void rkd_h_ui_file(rkd_call *c);            /* api_ui.c */
void rkd_h_get_policy(rkd_call *c);         /* api_cutover.c */
void rkd_h_put_policy(rkd_call *c);         /* api_cutover.c */
void rkd_h_approve(rkd_call *c);            /* api_cutover.c */
void rkd_h_events(rkd_call *c);             /* api_cutover.c */
void rkd_h_finish(rkd_call *c);             /* api_cutover.c */
void rkd_h_clients(rkd_call *c);            /* api_clients.c */
void rkd_h_migration(rkd_call *c);          /* api_migration.c */
void rkd_h_migration_start(rkd_call *c);    /* api_migration.c */
void rkd_h_migration_claim(rkd_call *c);    /* api_migration.c */
void rkd_h_migration_progress(rkd_call *c); /* api_migration.c */
void rkd_h_migration_throttle(rkd_call *c); /* api_migration.c */
void rkd_h_migration_pause(rkd_call *c);    /* api_migration.c */
void rkd_h_migration_resume(rkd_call *c);   /* api_migration.c */
void rkd_h_migration_cancel(rkd_call *c);   /* api_migration.c */
void rkd_h_rollout_create(rkd_call *c);     /* api_rollouts.c */
void rkd_h_rollouts(rkd_call *c);           /* api_rollouts.c */
void rkd_h_rollout(rkd_call *c);            /* api_rollouts.c */
void rkd_h_rollout_approve(rkd_call *c);    /* api_rollouts.c */
void rkd_h_rollout_start(rkd_call *c);      /* api_rollouts.c */
void rkd_h_rollout_pause(rkd_call *c);      /* api_rollouts.c */
void rkd_h_rollout_resume(rkd_call *c);     /* api_rollouts.c */
void rkd_h_rollout_abort(rkd_call *c);      /* api_rollouts.c */
void rkd_h_picture(rkd_call *c);            /* api_picture.c */
void rkd_h_arc(rkd_call *c);                /* api_picture.c */

/* ---- api_common.c ---- */

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
