/* api_load.c — GET and PUT /v1/clusters/{c}/load: the cluster's load profile (docs/LOAD.md),
 * kept by load_profile.c. A PUT answers what was stored without its bins, which the caller has.
 * A body over BODY_MAX is refused before it is parsed: no profile that long can be kept, and
 * parsing a long array of numbers costs some 50 bytes of memory a number. */
#include <time.h>

#include "api_load.h"
#include "load_profile.h"
#include "reply.h"
#include "request.h"

/* Bytes of a PUT's body at most: the stored bound, and room for measure's indented output. */
#define BODY_MAX (2 * (size_t)RKD_LOAD_PROFILE_MAX)

void rkd_h_get_load(rkd_call *c)
{
    rk_error err = {0};
    json_t *p = NULL;
    int rc = rkd_load_profile_get(c->app->store, c->cluster, time(NULL), &p, &err);
    if (rc != RK_OK)
        rkd_fail(c, rc, &err);
    else if (!p)
        rkd_response_error(c->resp, RKD_E_NO_LOAD_PROFILE, NULL,
                           "cluster %s has no load profile yet: `ringkeeper measure -c %s "
                           "--store` measures its data servers and stores one",
                           c->cluster, c->cluster);
    else
        rkd_answer_json(c->resp, 200, p);
}

void rkd_h_put_load(rkd_call *c)
{
    rk_error err = {0};
    if (c->req->body_len > BODY_MAX) {
        rkd_response_error(c->resp, RKD_E_INVALID_BODY, "load",
                           "load: the profile is %zu bytes, a stored one at most %u (compact "
                           "JSON): measure with fewer --bins",
                           c->req->body_len, RKD_LOAD_PROFILE_MAX);
        return;
    }
    json_t *stored = NULL, *doc = rkd_body_object(c, 0);
    if (!doc)
        return;
    int rc = rkd_load_profile_put(c->app->store, c->cluster, doc, c->req->author, time(NULL),
                                  &stored, &err);
    if (rc != RK_OK) {
        rkd_fail(c, rc, &err);
    } else {
        json_object_del(stored, "load");
        rkd_answer_json(c->resp, 200, stored);
    }
    json_decref(doc);
}
