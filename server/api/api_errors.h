/* api_errors.h — every error code of the HTTP API (the "code" of an error body) with its HTTP
 * status, as rows of one X-macro, so that no call site chooses a status or writes a code string
 * itself. api.c's header comment is the same table for people, with when each is answered
 * (docs/API.md is generated from it); tests/server/test_api_doc.sh checks that the two agree. */
#ifndef RKD_API_ERRORS_H
#define RKD_API_ERRORS_H

#define RKD_API_ERRORS(X)                                                                          \
    X(MALFORMED_JSON, 400, "malformed_json")                                                       \
    X(INVALID_TOPOLOGY, 400, "invalid_topology")                                                   \
    X(INVALID_PARAMETER, 400, "invalid_parameter")                                                 \
    X(INVALID_HEADER, 400, "invalid_header")                                                       \
    X(INVALID_CLUSTER, 400, "invalid_cluster")                                                     \
    X(INVALID_VERSION, 400, "invalid_version")                                                     \
    X(INVALID_PATH, 400, "invalid_path")                                                           \
    X(INVALID_BODY, 400, "invalid_body")                                                           \
    X(UNAUTHORIZED, 401, "unauthorized")                                                           \
    X(FORBIDDEN, 403, "forbidden")                                                                 \
    X(SELF_APPROVAL, 403, "self_approval")                                                         \
    X(ROLE_REQUIRED, 403, "role_required")                                                         \
    X(ADMIN_REQUIRED, 403, "admin_required")                                                       \
    X(CROSS_ORIGIN, 403, "cross_origin")                                                           \
    X(NOT_FOUND, 404, "not_found")                                                                 \
    X(UNKNOWN_CLUSTER, 404, "unknown_cluster")                                                     \
    X(UNKNOWN_VERSION, 404, "unknown_version")                                                     \
    X(NO_ACTIVE_VERSION, 404, "no_active_version")                                                 \
    X(NO_MIGRATION, 404, "no_migration")                                                           \
    X(NO_ROLLOUT, 404, "no_rollout")                                                               \
    X(NO_LOAD_PROFILE, 404, "no_load_profile")                                                     \
    X(METHOD_NOT_ALLOWED, 405, "method_not_allowed")                                               \
    X(CONFLICT, 409, "conflict")                                                                   \
    X(APPROVAL_REQUIRED, 409, "approval_required")                                                 \
    X(PLAN_CHANGED, 409, "plan_changed")                                                           \
    X(MIGRATION_OPEN, 409, "migration_open")                                                       \
    X(NO_MIGRATION_WINDOW, 409, "no_migration_window")                                             \
    X(JOB_STATE, 409, "job_state")                                                                 \
    X(LEASED, 409, "leased")                                                                       \
    X(NOT_VERIFIED, 409, "not_verified")                                                           \
    X(VERSION_CHANGED, 409, "version_changed")                                                     \
    X(ROLLOUT_STATE, 409, "rollout_state")                                                         \
    X(ROLLOUT_RUNNING, 409, "rollout_running")                                                     \
    X(PRECONDITION_FAILED, 412, "precondition_failed")                                             \
    X(BODY_TOO_LARGE, 413, "body_too_large")                                                       \
    X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type")                                       \
    X(UNKNOWN_HOST, 421, "unknown_host")                                                           \
    X(TOO_MANY_POINTS, 422, "too_many_points")                                                     \
    X(HASH_MISMATCH, 422, "hash_mismatch")                                                         \
    X(PLAN_TOO_LARGE, 422, "plan_too_large")                                                       \
    X(BUDGET_EXCEEDED, 422, "budget_exceeded")                                                     \
    X(DATA_UNKNOWN, 422, "data_unknown")                                                           \
    X(JOB_TOO_LARGE, 422, "job_too_large")                                                         \
    X(ROLLOUT_TOO_LARGE, 422, "rollout_too_large")                                                 \
    X(TOO_MANY_CLUSTERS, 422, "too_many_clusters")                                                 \
    X(INTERNAL, 500, "internal")                                                                   \
    X(UNAVAILABLE, 503, "unavailable")                                                             \
    X(BUSY, 503, "busy")

typedef enum rkd_error_code {
#define RKD_ERROR_ENUM_(name, status, code) RKD_E_##name,
    RKD_API_ERRORS(RKD_ERROR_ENUM_)
#undef RKD_ERROR_ENUM_
} rkd_error_code;

/* The HTTP status of `e`, and its code ("invalid_body"); 500 and "internal" for an unknown value.
 */
int rkd_error_status(rkd_error_code e);
const char *rkd_error_name(rkd_error_code e);

#endif
