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

/* Running, paused or reverting: a rollout that holds the cluster. */
static int holds_cluster(const json_t *r)
{
    return r && (is_state(r, "running") || is_state(r, "paused") || is_state(r, "reverting"));
}

/* Running or reverting: a rollout its driver moves on. */
static int driven(const json_t *r)
{
    return r && (is_state(r, "running") || is_state(r, "reverting"));
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
    static const char *const weighed[] = {"load", "load_error"}; /* by the cluster's profile */
    for (size_t i = 0; r && i < 2; i++) {
        json_t *v = json_object_get(in->review, weighed[i]);
        if (v && json_object_set(r, weighed[i], v))
            json_decref(r), r = NULL;
    }
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

/* ---- Running it ---- */

int rkd_rollout_check_hand(const char *cluster, const char *doc, rk_error *err)
{
    json_t *r = doc ? json_loads(doc, 0, NULL) : NULL;
    int rc = RK_OK;
    if (doc && !json_is_object(r))
        rc = rk_error_set(err, RK_EIO, NULL, "cluster %s: the stored rollout is damaged", cluster);
    else if (holds_cluster(r))
        rc = rk_error_set(err, RKD_STORE_EROLLOUTRUNNING, NULL,
                          "rollout %lld is %s and drives the activations of cluster %s: abort it "
                          "(POST .../rollouts/%lld/abort) to change the cluster by hand",
                          (long long)id_of(r), str_of(r, "state"), cluster, (long long)id_of(r));
    json_decref(r);
    return rc;
}

int rkd_rollout_check_approvals(const char *cluster, const char *doc, const rkd_store_policy *pol,
                                rk_error *err)
{
    json_t *r = doc ? json_loads(doc, 0, NULL) : NULL, *a;
    size_t i, have = 0;
    json_array_foreach(json_object_get(r, "approvals"), i, a) have +=
        !pol->distinct_approver || strcmp(str_of(a, "by"), str_of(r, "created_by")) != 0;
    int rc = RK_OK;
    if ((int64_t)have < pol->approvals)
        rc = rk_error_set(err, RKD_STORE_EAPPROVAL, NULL,
                          "cluster %s's policy asks for %lld approvals%s now, and rollout %lld has "
                          "%zu: loosen the policy (admin) and resume, or abort and review it again",
                          cluster, (long long)pol->approvals,
                          pol->distinct_approver ? " by others than its author" : "",
                          (long long)id_of(r), have);
    json_decref(r);
    return rc;
}

/* RKD_STORE_ENOROLLOUT unless the document is rollout `id`. */
static int need(const rkd_doc_change *c, int64_t id, rk_error *err)
{
    if (c->doc && id_of(c->doc) == id)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ENOROLLOUT, NULL,
                        "no rollout %lld here (only the latest is "
                        "kept)",
                        (long long)id);
}

static void set_time(json_t *r, const char *name, time_t t)
{
    char at[RKD_STORE_TIME_LEN];
    rkd_doc_time(t, at);
    json_object_set_new(r, name, json_string(at));
}

static void set_phase(rkd_doc_change *c, const char *phase)
{
    json_object_set_new(c->doc, "phase", phase ? json_string(phase) : json_null());
    set_time(c->doc, "phase_since", c->now);
}

typedef struct control_arg {
    int64_t id, active;
    const char *action, *author;
    json_t *revert; /* abort's: the start's topology to go back to, or NULL to stay */
} control_arg;

static int rule_start(rkd_doc_change *c, rk_error *err)
{
    const control_arg *a = c->arg;
    int64_t from = json_integer_value(json_object_get(json_object_get(c->doc, "from"), "version"));
    int rc = need(c, a->id, err);
    if (rc == RK_OK && !is_state(c->doc, "approved"))
        return rk_error_set(err, RKD_STORE_EROLLOUTSTATE, NULL,
                            "rollout %lld is %s: start takes an approved rollout", (long long)a->id,
                            str_of(c->doc, "state"));
    if (rc == RK_OK && from != a->active)
        return rk_error_set(err, RKD_STORE_EVERSIONCHANGED, NULL,
                            "the active version is %lld, not %lld where rollout %lld starts: make "
                            "a new rollout from here",
                            (long long)a->active, (long long)from, (long long)a->id);
    if (rc != RK_OK)
        return rc;
    json_object_set_new(c->doc, "state", json_string("running"));
    json_object_set_new(c->doc, "step", json_integer(1));
    set_phase(c, "publish");
    set_time(c->doc, "started_at", c->now);
    json_object_set_new(c->doc, "started_by", a->author ? json_string(a->author) : json_null());
    set_event(c, "rollout_start", a->author);
    return RK_OK;
}

int rkd_rollout_start(rkd_store *s, const char *cluster, int64_t id, int64_t active,
                      const char *author, json_t **out, rk_error *err)
{
    control_arg arg = {id, active, "start", author, NULL};
    rkd_doc_change c = {.rule = rule_start, .arg = &arg, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_ROLLOUT, cluster, &c, out, err);
}

/* Whether `action` may act on a rollout in its state, and the state it leaves it in. */
static const char *control_to(const char *action, const json_t *r)
{
    if (strcmp(action, "pause") == 0)
        return is_state(r, "running") ? "paused" : NULL;
    if (strcmp(action, "resume") == 0)
        return is_state(r, "paused") ? "running" : NULL;
    if (strcmp(action, "revert") == 0 && (is_state(r, "running") || is_state(r, "paused")))
        return "reverting"; /* an abort that goes back; before the start there is nothing to undo */
    return holds_cluster(r) || is_state(r, "review") || is_state(r, "approved") ? "aborted" : NULL;
}

/* The revert as a step of its own (step 0), walked by the driver like the others: first the
 * open window closed, then the start's topology published and activated in a window. */
static void begin_revert(rkd_doc_change *c, json_t *topology)
{
    json_object_set(c->doc, "aborted_at_step", json_object_get(c->doc, "step"));
    json_object_set_new(c->doc, "revert",
                        json_pack("{sOsnss}", "topology", topology, "version", "state", "pending"));
    json_object_set_new(c->doc, "step", json_integer(0));
    set_phase(c, "close");
    json_object_del(c->doc, "reason");
}

static int rule_control(rkd_doc_change *c, rk_error *err)
{
    const control_arg *a = c->arg;
    int rc = need(c, a->id, err);
    const char *to = rc == RK_OK ? control_to(a->action, c->doc) : NULL;
    if (rc == RK_OK && !to)
        return rk_error_set(err, RKD_STORE_EROLLOUTSTATE, NULL,
                            "rollout %lld is %s: %s does not "
                            "apply",
                            (long long)a->id, str_of(c->doc, "state"), a->action);
    if (rc != RK_OK)
        return rc;
    json_object_set_new(c->doc, "state", json_string(to));
    if (strcmp(to, "running") == 0)
        json_object_del(c->doc, "reason");
    if (strcmp(to, "reverting") == 0)
        begin_revert(c, a->revert);
    set_event(c,
              strcmp(to, "paused") == 0      ? "rollout_pause"
              : strcmp(to, "running") == 0   ? "rollout_resume"
              : strcmp(to, "reverting") == 0 ? "rollout_revert"
                                             : "rollout_abort",
              a->author);
    return RK_OK;
}

int rkd_rollout_control(rkd_store *s, const char *cluster, int64_t id, const char *action,
                        const char *author, json_t *revert, json_t **out, rk_error *err)
{
    control_arg arg = {id, 0, action, author, revert};
    rkd_doc_change c = {.rule = rule_control, .arg = &arg, .now = time(NULL)};
    return rkd_doc_run(s, RKD_DOC_ROLLOUT, cluster, &c, out, err);
}

/* The step after `step` begins, or after the last the rollout is done. */
static void step_done(rkd_doc_change *c, json_t *step, int64_t n)
{
    size_t steps = json_array_size(json_object_get(c->doc, "steps"));
    json_object_set_new(step, "state", json_string("done"));
    if ((size_t)n >= steps) {
        json_object_set_new(c->doc, "state", json_string("done"));
        set_phase(c, NULL);
        set_event(c, "rollout_done", NULL);
        return;
    }
    json_object_set_new(c->doc, "step", json_integer(n + 1));
    set_phase(c, "publish");
    set_event(c, "rollout_step", NULL);
    snprintf(c->detail, sizeof c->detail, "rollout %lld: step %lld of %zu done",
             (long long)id_of(c->doc), (long long)n, steps);
}

static int rule_advance(rkd_doc_change *c, rk_error *err)
{
    const rkd_rollout_move *m = c->arg;
    (void)err;
    if (!c->doc || id_of(c->doc) != m->id || !driven(c->doc) ||
        json_integer_value(json_object_get(c->doc, "step")) != m->step ||
        strcmp(str_of(c->doc, "phase"), m->phase) != 0)
        return RKD_DOC_SAME;
    json_t *step = m->step ? json_array_get(json_object_get(c->doc, "steps"), (size_t)m->step - 1)
                           : json_object_get(c->doc, "revert");
    if (m->pause) {
        json_object_set_new(c->doc, "state", json_string(m->fail ? "failed" : "paused"));
        json_object_set_new(c->doc, "reason", json_string(m->pause));
        set_event(c, m->fail ? "rollout_failed" : "rollout_pause", NULL);
        snprintf(c->detail, sizeof c->detail, "rollout %lld step %lld: %s", (long long)m->id,
                 (long long)m->step, m->pause);
        return RK_OK;
    }
    if (m->version > 0)
        json_object_set_new(step, "version", json_integer(m->version));
    if (!m->to && !m->step) { /* the revert is done */
        json_object_set_new(step, "state", json_string("done"));
        json_object_set_new(c->doc, "state", json_string("aborted"));
        set_phase(c, NULL);
        set_event(c, "rollout_abort", NULL);
        c->event.version = json_integer_value(json_object_get(step, "version"));
        snprintf(c->detail, sizeof c->detail, "rollout %lld: reverted to its start as version %lld",
                 (long long)m->id, (long long)c->event.version);
        return RK_OK;
    }
    if (!m->to) {
        step_done(c, step, m->step);
        c->event.version = json_integer_value(json_object_get(step, "version"));
        return RK_OK;
    }
    set_phase(c, m->to);
    if (strcmp(m->to, "hold") == 0) {
        json_object_set_new(step, "state", json_string("active"));
        set_event(c, "rollout_step", NULL);
        c->event.version = json_integer_value(json_object_get(step, "version"));
        snprintf(c->detail, sizeof c->detail, "rollout %lld: step %lld active as version %lld",
                 (long long)m->id, (long long)m->step, (long long)c->event.version);
    }
    if (strcmp(m->to, "soak") == 0)
        set_time(c->doc, "soak_until", m->soak_until);
    return RK_OK;
}

int rkd_rollout_advance(rkd_store *s, const char *cluster, const rkd_rollout_move *m, rk_error *err)
{
    json_t *out = NULL;
    rkd_doc_change c = {.rule = rule_advance, .arg = m, .now = time(NULL)};
    int rc = rkd_doc_run(s, RKD_DOC_ROLLOUT, cluster, &c, &out, err);
    json_decref(out);
    return rc;
}

static int rule_lease(rkd_doc_change *c, rk_error *err)
{
    const char *me = c->arg;
    const json_t *d = json_object_get(c->doc, "driver");
    time_t until = rkd_doc_parse_time(str_of(d, "until"));
    int mine = strcmp(str_of(d, "id"), me) == 0;
    if (!driven(c->doc))
        return rk_error_set(err, RKD_STORE_EROLLOUTSTATE, NULL, "not running");
    if (!mine && until > c->now)
        return rk_error_set(err, RKD_STORE_ELEASED, NULL, "driven by %s", str_of(d, "id"));
    if (mine && until - c->now > RKD_ROLLOUT_LEASE_S / 2)
        return RKD_DOC_SAME;
    char at[RKD_STORE_TIME_LEN];
    rkd_doc_time(c->now + RKD_ROLLOUT_LEASE_S, at);
    json_object_set_new(c->doc, "driver", json_pack("{ssss}", "id", me, "until", at));
    return RK_OK;
}

int rkd_rollout_lease(rkd_store *s, const char *cluster, const char *me, rk_error *err)
{
    json_t *out = NULL;
    rkd_doc_change c = {.rule = rule_lease, .arg = me, .now = time(NULL)};
    int rc = rkd_doc_run(s, RKD_DOC_ROLLOUT, cluster, &c, &out, err);
    json_decref(out);
    return rc == RK_OK;
}
