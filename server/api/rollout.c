/* rollout.c — the rules of SPEC 11's rollout over its JSON document (rollout.h), each a rule of
 * the compare-and-set loop of doc_change.c. */
#include <stdio.h>
#include <string.h>

#include "doc_change.h"
#include "rollout.h"

static const char *str_of(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v ? v : "";
}

static int is_state(const json_t *r, const char *state)
{
    return strcmp(str_of(r, "state"), state) == 0;
}

static int64_t id_of(const json_t *r)
{
    return json_integer_value(json_object_get(r, "id"));
}

/* Running or paused: a rollout that holds the cluster. */
static int holds_cluster(const json_t *r)
{
    return r && (is_state(r, "running") || is_state(r, "paused"));
}

static void set_event(rkd_doc_change *c, const char *kind, const char *author)
{
    snprintf(c->detail, sizeof c->detail, "rollout %lld", (long long)id_of(c->doc));
    c->event = (rkd_store_doc_event){
        .kind = kind,
        .author = author,
        .version = json_integer_value(json_object_get(json_object_get(c->doc, "from"), "version")),
        .detail = c->detail};
}

int rkd_rollout_get(rkd_store *s, const char *cluster, int64_t id, json_t **out, rk_error *err)
{
    int64_t rev;
    int rc = rkd_doc_read(s, RKD_DOC_ROLLOUT, cluster, out, &rev, err);
    if (rc == RK_OK && (!*out || id_of(*out) != id)) {
        rc = *out ? rk_error_set(err, RKD_STORE_ENOROLLOUT, NULL,
                                 "cluster %s has no rollout %lld: its latest is rollout %lld, and "
                                 "only the latest is kept (the events keep the history)",
                                 cluster, (long long)id, (long long)id_of(*out))
                  : rk_error_set(err, RKD_STORE_ENOROLLOUT, NULL,
                                 "cluster %s has no rollout yet; POST /v1/clusters/%s/rollouts "
                                 "makes one",
                                 cluster, cluster);
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- Create ---- */

static json_t *new_doc(const rkd_rollout_new *in, const char *cluster, int64_t id, time_t now)
{
    char at[RKD_STORE_TIME_LEN];
    rkd_doc_time(now, at);
    json_t *r = json_pack(
        "{sIss ss s{sIss} sO sO sO sO sO sI s[] ss ss*}", "id", (json_int_t)id, "cluster", cluster,
        "state", "review", "from", "version", (json_int_t)in->from, "fingerprint",
        in->from_fingerprint, "options", in->options, "digest",
        json_object_get(in->review, "digest"), "steps", json_object_get(in->review, "steps"),
        "total_moved", json_object_get(in->review, "total_moved"), "one_shot_moved",
        json_object_get(in->review, "one_shot_moved"), "approvals_needed",
        (json_int_t)in->approvals_needed, "approvals", "created_at", at, "created_by", in->author);
    return r;
}

typedef struct create_arg {
    const rkd_rollout_new *in;
    const char *cluster;
} create_arg;

static int rule_create(rkd_doc_change *c, rk_error *err)
{
    const create_arg *a = c->arg;
    if (holds_cluster(c->doc))
        return rk_error_set(err, RKD_STORE_EROLLOUTSTATE, NULL,
                            "rollout %lld is %s: abort it (POST .../rollouts/%lld/abort) before "
                            "making another",
                            (long long)id_of(c->doc), str_of(c->doc, "state"),
                            (long long)id_of(c->doc));
    json_t *r = new_doc(a->in, a->cluster, c->doc ? id_of(c->doc) + 1 : 1, c->now);
    if (!r)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    size_t size = json_dumpb(r, NULL, 0, JSON_COMPACT);
    if (size > RKD_ROLLOUT_DOC_MAX) {
        json_decref(r);
        return rk_error_set(err, RKD_STORE_EROLLOUTTOOBIG, "steps",
                            "the rollout's document would be %zu bytes, over this server's %u "
                            "(every step holds its topology): ask for fewer steps",
                            size, RKD_ROLLOUT_DOC_MAX);
    }
    json_decref(c->doc);
    c->doc = r;
    set_event(c, "rollout_create", a->in->author);
    return RK_OK;
}

int rkd_rollout_create(rkd_store *s, const char *cluster, const rkd_rollout_new *in, json_t **out,
                       rk_error *err)
{
    create_arg arg = {in, cluster};
    rkd_doc_change c = {.rule = rule_create, .arg = &arg, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_ROLLOUT, cluster, &c, out, err);
}

/* ---- Approve ---- */

typedef struct approve_arg {
    int64_t id;
    const char *digest, *approver;
    int distinct;
} approve_arg;

/* Whether `name` approved the rollout already. */
static int approved_by(const json_t *r, const char *name)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(r, "approvals"), i,
                       a) if (strcmp(str_of(a, "by"), name) == 0) return 1;
    return 0;
}

static int rule_approve(rkd_doc_change *c, rk_error *err)
{
    const approve_arg *a = c->arg;
    const char *by = a->approver ? a->approver : "";
    char at[RKD_STORE_TIME_LEN];
    if (!c->doc || id_of(c->doc) != a->id)
        return rk_error_set(err, RKD_STORE_ENOROLLOUT, NULL, "no rollout %lld to approve",
                            (long long)a->id);
    if (!is_state(c->doc, "review"))
        return rk_error_set(err, RKD_STORE_EROLLOUTSTATE, NULL,
                            "rollout %lld is %s: only a rollout in review is approved",
                            (long long)a->id, str_of(c->doc, "state"));
    if (strcmp(a->digest, str_of(c->doc, "digest")) != 0)
        return rk_error_set(err, RKD_STORE_EPLANCHANGED, "digest",
                            "rollout %lld's digest is %s, not %s: review it again (GET "
                            ".../rollouts/%lld) and approve what it shows",
                            (long long)a->id, str_of(c->doc, "digest"), a->digest,
                            (long long)a->id);
    if (a->distinct && (strcmp(by, str_of(c->doc, "created_by")) == 0 || approved_by(c->doc, by)))
        return rk_error_set(err, RKD_STORE_ESELFAPPROVAL, NULL,
                            "\"%s\" made or approved rollout %lld already, and the policy wants "
                            "approvals by others (distinct_approver)",
                            by, (long long)a->id);
    rkd_doc_time(c->now, at);
    json_t *list = json_object_get(c->doc, "approvals");
    json_array_append_new(list, json_pack("{ssss}", "by", by, "at", at));
    if ((int64_t)json_array_size(list) >=
        json_integer_value(json_object_get(c->doc, "approvals_needed")))
        json_object_set_new(c->doc, "state", json_string("approved"));
    set_event(c, "rollout_approve", a->approver);
    return RK_OK;
}

int rkd_rollout_approve(rkd_store *s, const char *cluster, int64_t id, const char *digest,
                        const char *approver, int distinct_approver, json_t **out, rk_error *err)
{
    approve_arg arg = {id, digest, approver, distinct_approver};
    rkd_doc_change c = {.rule = rule_approve, .arg = &arg, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_ROLLOUT, cluster, &c, out, err);
}
