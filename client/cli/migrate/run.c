/* run.c — `ringkeeper migrate run`, the worker: takes the cluster's job (starting one
 * when there is none), claims it, builds both versions' rings, connects to the data servers, and
 * for each step from the job's own copies every source not done from its stored cursor and
 * counters, then verifies, reporting each batch; with --finish it closes the window once the job
 * is verified. A resumed run goes on where the last report left the job. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "migrate.h"

/* At most this many passes over the job's phases: every step, the verify, and a few answers
 * that only move the job on. */
#define EXTRA_ROUNDS 4

/* ---- starting and claiming ---- */

static json_t *start_body(const mig_opts *o)
{
    json_t *b = json_pack("{ss}", "mode", o->before_cutover ? "before_cutover" : "window");
    if (b && o->to)
        json_object_set_new(b, "to", json_integer(strtoll(o->to, NULL, 10)));
    if (b && o->max_step > 0)
        json_object_set_new(b, "max_step", json_real(o->max_step));
    if (b && o->delete_source)
        json_object_set_new(b, "delete_source", json_true());
    json_t *t = json_object();
    if (t && o->keys_per_s >= 0)
        json_object_set_new(t, "keys_per_s", json_integer(o->keys_per_s));
    if (t && o->bytes_per_s >= 0)
        json_object_set_new(t, "bytes_per_s", json_integer(o->bytes_per_s));
    if (b && t && json_object_size(t))
        json_object_set(b, "throttle", t);
    json_decref(t);
    return b;
}

/* Whether the job deletes each verified key from its source (started with delete_source). */
static int job_deletes(const json_t *job)
{
    return json_is_true(json_object_get(job, "delete_source"));
}

/* Whether the job pre-warms a staged version: its verify catches up, writing over copies. */
static int job_prewarms(const json_t *job)
{
    return strcmp(mig_str(job, "mode"), "before_cutover") == 0;
}

/* A job still under way for other versions than the run's: never worked on in its place. */
static int refuse_other(mig_run *r, const mig_cutover *want)
{
    const json_t *j = r->job;
    char wanted[96];
    if (want->from)
        snprintf(wanted, sizeof wanted, "the %s v%lld -> v%lld", want->mode, (long long)want->from,
                 (long long)want->to);
    else
        snprintf(wanted, sizeof wanted, "a window (none is open)");
    return rk_cli_fail(r->cmd, RK_EXIT_USAGE,
                       "job %lld (%s, v%lld -> v%lld) is %s, and this run is for %s: run that "
                       "job to its end, or ringkeeper migrate cancel it first",
                       (long long)mig_int(j, "id"), mig_str(j, "mode"),
                       (long long)mig_int(j, "from"), (long long)mig_int(j, "to"),
                       mig_str(j, "state"), wanted);
}

/* The job to work on in r->job: the cluster's job when it is this cutover's and unfinished or
 * verified, else a new one; an unfinished job of other versions is refused. */
static int take_job(mig_run *r)
{
    mig_cutover want;
    int rc = mig_get_job(r->cmd, r->s, &r->job);
    rc = rc ? rc : mig_cutover_now(r->cmd, r->s, r->o, &want);
    if (rc != RK_EXIT_OK)
        return rc;
    int mine = r->job && mig_job_is_for(r->job, &want);
    if (r->job && mig_unfinished(r->job) && !mine)
        return refuse_other(r, &want);
    if (mine && (mig_unfinished(r->job) || strcmp(mig_str(r->job, "state"), "verified") == 0)) {
        if (r->o->delete_source && !job_deletes(r->job))
            fprintf(stderr,
                    "ringkeeper %s: --delete-source is ignored: job %lld was started "
                    "without it, and keeps its sources' keys\n",
                    r->cmd, (long long)mig_int(r->job, "id"));
        return RK_EXIT_OK;
    }
    json_decref(r->job);
    r->job = NULL;
    rc = mig_call(r->cmd, r->s, "POST", "/migration", start_body(r->o), &r->job, NULL, NULL);
    r->created = rc == RK_EXIT_OK;
    if (rc == RK_EXIT_OK && r->o->delete_source)
        fprintf(stderr,
                "ringkeeper %s: with delete_source: each key verified on its new owner "
                "is deleted from its old one\n",
                r->cmd);
    if (rc == RK_EXIT_OK)
        fprintf(stderr, "ringkeeper %s: started job %lld: v%lld -> v%lld, %lld step(s)\n", r->cmd,
                (long long)mig_int(r->job, "id"), (long long)mig_int(r->job, "from"),
                (long long)mig_int(r->job, "to"), (long long)mig_int(r->job, "steps"));
    return rc;
}

/* The rates given on the command line, for a job that was there already. */
static int set_throttle(mig_run *r)
{
    if (r->created || (r->o->keys_per_s < 0 && r->o->bytes_per_s < 0))
        return RK_EXIT_OK;
    json_t *t = json_object(), *job = NULL;
    if (t && r->o->keys_per_s >= 0)
        json_object_set_new(t, "keys_per_s", json_integer(r->o->keys_per_s));
    if (t && r->o->bytes_per_s >= 0)
        json_object_set_new(t, "bytes_per_s", json_integer(r->o->bytes_per_s));
    int rc = mig_call(r->cmd, r->s, "PUT", "/migration/throttle", t, &job, NULL, NULL);
    json_decref(job);
    return rc;
}

/* ---- the data servers ---- */

/* The address and id of node i of ring r. */
static const rk_node *node_of(const rk_ring *r, size_t i)
{
    return rk_topology_node(rk_ring_topology(r), (uint32_t)i);
}

/* A fatal failure of the source `node` of the current step: reported with "error" (the job
 * pauses with it), and the command's message. */
static int fatal(mig_run *r, const char *node, json_t *counters, const char *cursor,
                 const char *message)
{
    mig_show_end();
    r->node = node;
    mig_report_fatal(r, counters, cursor, 0, message);
    return rk_cli_fail(r->cmd, RK_EXIT_FAIL,
                       "%s; job %lld is paused: fix it, then ringkeeper migrate resume and run "
                       "again",
                       message, (long long)mig_int(r->job, "id"));
}

/* The first source of the current step that is not done (whom a connection failure is reported
 * of), with its counters. */
static json_t *first_open_source(const json_t *job)
{
    size_t i;
    json_t *src;
    json_array_foreach(json_object_get(job, "sources"), i, src)
    {
        if (!json_is_true(json_object_get(src, "done")))
            return src;
    }
    return json_array_get(json_object_get(job, "sources"), 0);
}

/* A connection to node i of ring `r`'s data server, or NULL with *message naming the node. A
 * pre-warm's destinations may be written over (its catch-up): nobody else writes to them before
 * the cutover; nothing else ever may. */
static rkm_conn *connect_node(mig_run *run, const rk_ring *r, size_t i, char *message, size_t n)
{
    rk_error err = {0};
    const rk_node *node = node_of(r, i);
    rkm_options opt = {.overwrite = r == run->ring[1] && job_prewarms(run->job),
                       .relay = run->o->relay != 0};
    rkm_conn *c = rkm_conn_new(mig_str(run->job, "data"), node->addr, &opt, &err);
    if (!c)
        snprintf(message, n, "node %s (%s): %s", node->id, node->addr, err.message);
    return c;
}

/* Every destination: the new ring's nodes. */
static int connect_dests(mig_run *r)
{
    size_t n = rk_topology_node_count(rk_ring_topology(r->ring[1]));
    char message[RK_ERROR_MESSAGE_MAX + 128];
    r->dest = calloc(n, sizeof *r->dest);
    r->src = calloc(rk_topology_node_count(rk_ring_topology(r->ring[0])), sizeof *r->src);
    if (!r->dest || !r->src)
        return rk_cli_fail(r->cmd, RK_EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        r->dest[i] = connect_node(r, r->ring[1], i, message, sizeof message);
        if (!r->dest[i]) {
            json_t *src = first_open_source(r->job);
            r->phase = strcmp(mig_str(src, "phase"), "verify") == 0 ? "verify" : "copy";
            r->step = mig_int(r->job, "step");
            r->seq = mig_int(src, "seq");
            return fatal(r, mig_str(src, "node"), json_incref(json_object_get(src, "counters")),
                         mig_str(src, "cursor"), message);
        }
    }
    return RK_EXIT_OK;
}

/* ---- one source ---- */

/* A source's counters as the job stores them (`c`), into a copy's or a verify's. */
static void load_copy(rkm_copy_counters *k, const json_t *c)
{
    k->rule.scanned = (uint64_t)mig_int(c, "scanned");
    k->rule.stay = (uint64_t)mig_int(c, "stay");
    k->rule.not_owned = (uint64_t)mig_int(c, "not_owned");
    k->rule.later = (uint64_t)mig_int(c, "later");
    k->copied = (uint64_t)mig_int(c, "copied");
    k->present = (uint64_t)mig_int(c, "present");
    k->skipped = (uint64_t)mig_int(c, "skipped");
    k->bytes = (uint64_t)mig_int(c, "bytes");
    k->errors = (uint64_t)mig_int(c, "errors");
    k->expired = (uint64_t)mig_int(c, "expired");
}

static void load_verify(rkm_verify_counters *k, const json_t *c)
{
    k->rule.scanned = (uint64_t)mig_int(c, "scanned");
    k->checked = (uint64_t)mig_int(c, "checked");
    k->matched = (uint64_t)mig_int(c, "matched");
    k->skipped = (uint64_t)mig_int(c, "skipped");
    k->missing = (uint64_t)mig_int(c, "missing");
    k->value = (uint64_t)mig_int(c, "value");
    k->ttl = (uint64_t)mig_int(c, "ttl");
    k->errors = (uint64_t)mig_int(c, "errors");
    k->expired = (uint64_t)mig_int(c, "expired");
    k->updated = (uint64_t)mig_int(c, "updated");
    k->deleted = (uint64_t)mig_int(c, "deleted");
}

/* The config of source `src` of the current step, its connection opened when first needed. */
static int source_config(mig_run *r, const json_t *src, char *message, size_t n)
{
    long i = mig_node_index(r->ring[0], mig_str(src, "node"));
    if (i < 0) {
        snprintf(message, n, "source %s is not a node of version %lld", mig_str(src, "node"),
                 (long long)mig_int(r->job, "from"));
        return RK_EXIT_FAIL;
    }
    if (!r->src[i] && !(r->src[i] = connect_node(r, r->ring[0], (size_t)i, message, n)))
        return RK_EXIT_UNREACHABLE;
    int verify = strcmp(r->phase, "verify") == 0;
    r->cfg = (rkm_copy_config){.old_ring = r->ring[0],
                               .new_ring = r->ring[1],
                               .source = (uint32_t)i,
                               .src = r->src[i],
                               .dest = r->dest,
                               .n_dest = rk_topology_node_count(rk_ring_topology(r->ring[1])),
                               .batch = r->o->batch,
                               .throttle = r->throttle,
                               .arcs = verify ? NULL : r->arcs,
                               .n_arcs = verify ? 0 : r->n_arcs,
                               .delete_matched = verify && job_deletes(r->job),
                               .catch_up = verify && job_prewarms(r->job)};
    long long keys = atomic_load(&r->keys_per_s);
    if (keys > 0 && (unsigned long long)keys < r->cfg.batch)
        r->cfg.batch = (size_t)keys;
    r->node = mig_str(src, "node");
    r->seq = mig_int(src, "seq");
    r->sent[0] = r->sent[1] = 0;
    r->cb_exit = 0;
    return RK_EXIT_OK;
}

/* How a source's run ended, as an exit code; MIG_STOPPED_EXIT when the job said stop. */
#define MIG_STOPPED_EXIT (-1)

static int source_ended(mig_run *r, int rc, int stopped, json_t *counters, const char *cursor,
                        const rk_error *err)
{
    char message[RK_ERROR_MESSAGE_MAX + 128];
    if (rc == RK_OK) {
        json_decref(counters);
        return stopped ? MIG_STOPPED_EXIT : RK_EXIT_OK;
    }
    if (r->cb_exit) { /* the report failed: the server has the last boundary */
        json_decref(counters);
        mig_show_end();
        return r->cb_exit;
    }
    long i = mig_node_index(r->ring[0], r->node);
    snprintf(message, sizeof message, "node %s (%s): %s", r->node,
             i >= 0 ? node_of(r->ring[0], (size_t)i)->addr : "?", err->message);
    return fatal(r, r->node, counters, cursor, message);
}

/* A source whose connections could not be made: the worker's fatal error, at the state it had. */
static int config_failed(mig_run *r, const json_t *src, json_t *counters, const char *cursor,
                         const char *message)
{
    r->node = mig_str(src, "node");
    r->seq = mig_int(src, "seq");
    return fatal(r, r->node, counters, cursor, message);
}

/* A source's state in its phase, a copy's or a verify's: what one flow (run_source) runs and
 * reports for both. */
typedef struct source_state {
    int verify;
    union {
        rkm_copy_state copy;
        rkm_verify_state verify;
    } u;
    const char *cursor;  /* the state's cursor.pos */
    const bool *stopped; /* the state's stopped */
} source_state;

/* Initialises st for its phase from the job's source `src` (undone by state_deinit). */
static void state_load(source_state *st, int verify, const json_t *src)
{
    const json_t *c = json_object_get(src, "counters");
    rkm_cursor *at;
    st->verify = verify;
    if (verify) {
        rkm_verify_state_init(&st->u.verify);
        load_verify(&st->u.verify.counters, c);
        at = &st->u.verify.cursor;
        st->stopped = &st->u.verify.stopped;
    } else {
        rkm_copy_state_init(&st->u.copy);
        load_copy(&st->u.copy.counters, c);
        at = &st->u.copy.cursor;
        st->stopped = &st->u.copy.stopped;
    }
    snprintf(at->pos, sizeof at->pos, "%s", mig_str(src, "cursor"));
    at->done = json_is_true(json_object_get(src, "done"));
    st->cursor = at->pos;
}

static void state_deinit(source_state *st)
{
    if (st->verify)
        rkm_verify_state_deinit(&st->u.verify);
    else
        rkm_copy_state_deinit(&st->u.copy);
}

static uint64_t state_keys(const source_state *st)
{
    return st->verify ? mig_verify_keys(&st->u.verify.counters)
                      : mig_copy_keys(&st->u.copy.counters);
}

/* The counters as a report sends them (the caller's). */
static json_t *state_counters(const source_state *st)
{
    return st->verify ? mig_verify_counters(&st->u.verify.counters)
                      : mig_copy_counters(&st->u.copy.counters);
}

static int state_run(mig_run *r, source_state *st, rk_error *err)
{
    return st->verify ? rkm_verify_run(&r->cfg, &st->u.verify, mig_on_verify, r, err)
                      : rkm_copy_run(&r->cfg, &st->u.copy, mig_on_copy, r, err);
}

/* One source of the running phase, from where the job left it: its connection, then its copy or
 * verify; an exit code (MIG_STOPPED_EXIT when the job said stop). */
static int run_source(mig_run *r, const json_t *src, int verify)
{
    char message[RK_ERROR_MESSAGE_MAX + 128];
    source_state st;
    rk_error err = {0};
    state_load(&st, verify, src);
    int rc = source_config(r, src, message, sizeof message);
    r->src_keys = state_keys(&st);
    if (rc != RK_EXIT_OK) {
        rc = config_failed(r, src, state_counters(&st), st.cursor, message);
    } else {
        rc = state_run(r, &st, &err); /* before st is read below */
        rc = source_ended(r, rc, *st.stopped, state_counters(&st), st.cursor, &err);
    }
    state_deinit(&st);
    return rc;
}

/* ---- steps ---- */

/* The arcs of the job's current step: all of them (NULL) for a job of one step. */
static int step_arcs(mig_run *r)
{
    free(r->arcs);
    r->arcs = NULL;
    r->n_arcs = 0;
    if (mig_int(r->job, "steps") <= 1)
        return RK_EXIT_OK;
    if (!r->plan) {
        char route[160];
        snprintf(route, sizeof route, "/plan?from=%lld&to=%lld&max_step=%.17g",
                 (long long)mig_int(r->job, "from"), (long long)mig_int(r->job, "to"),
                 json_number_value(json_object_get(r->job, "max_step")));
        int rc = mig_call(r->cmd, r->s, "GET", route, NULL, &r->plan, NULL, NULL);
        if (rc != RK_EXIT_OK)
            return rc;
        if (strcmp(mig_str(r->plan, "digest"), mig_str(r->job, "digest")) != 0)
            return rk_cli_fail(r->cmd, RK_EXIT_FAIL,
                               "the server's plan has digest %s, job %lld was started over %s",
                               mig_str(r->plan, "digest"), (long long)mig_int(r->job, "id"),
                               mig_str(r->job, "digest"));
    }
    return mig_step_arcs(r->cmd, r->plan, mig_int(r->job, "step"), &r->arcs, &r->n_arcs);
}

/* Every source of the current step or of the verify that is not done, in the job's order. */
static int run_phase(mig_run *r, int verify)
{
    int rc = verify ? RK_EXIT_OK : step_arcs(r);
    json_t *sources = json_incref(json_object_get(r->job, "sources")); /* answers replace r->job */
    size_t i;
    json_t *src;
    r->phase = verify ? "verify" : "copy";
    r->step = mig_int(r->job, "step");
    json_array_foreach(sources, i, src)
    {
        if (rc != RK_EXIT_OK || atomic_load(&r->stop) != MIG_GO)
            break;
        if (json_is_true(json_object_get(src, "done")))
            continue;
        rc = run_source(r, src, verify);
    }
    json_decref(sources);
    if (rc == RK_EXIT_OK && atomic_load(&r->stop) != MIG_GO)
        rc = MIG_STOPPED_EXIT;
    return rc;
}

/* ---- the end ---- */

static int stopped(mig_run *r)
{
    int why = atomic_load(&r->stop);
    const char *state = mig_str(r->job, "state");
    long long id = (long long)mig_int(r->job, "id");
    mig_show_end();
    if (why == MIG_LEASE_LOST)
        return rk_cli_fail(r->cmd, RK_EXIT_FAIL, "worker %s lost job %lld's lease: stopped",
                           r->o->worker, id);
    if (why == MIG_INTERRUPTED)
        return rk_cli_fail(r->cmd, RK_EXIT_FAIL,
                           "interrupted: job %lld stopped at a batch boundary and stays %s, its "
                           "progress kept; run ringkeeper migrate run again to go on from there",
                           id, state);
    if (why == MIG_CANCELLED || strcmp(state, "cancelled") == 0)
        return rk_cli_fail(r->cmd, RK_EXIT_OK,
                           "job %lld was cancelled: stopped; what was copied stays, nothing "
                           "was deleted",
                           id);
    return rk_cli_fail(r->cmd, RK_EXIT_OK,
                       "job %lld is paused: stopped at a batch boundary; resume with ringkeeper "
                       "migrate resume, then run ringkeeper migrate run again",
                       id);
}

static int finish(mig_run *r)
{
    json_t *ring = NULL;
    int rc = mig_call(r->cmd, r->s, "POST", "/migration/finish", NULL, &ring, NULL, NULL);
    json_decref(ring);
    if (rc == RK_EXIT_OK)
        fprintf(stderr, "ringkeeper %s: the migration window is finished\n", r->cmd);
    return rc;
}

/* The job as it ended: verified (and finished with --finish), or why not. */
static int ended(mig_run *r)
{
    const char *state = mig_str(r->job, "state");
    int rc = RK_EXIT_OK;
    mig_show_end();
    int finishes = r->o->finish && strcmp(mig_str(r->job, "mode"), "window") == 0;
    if (strcmp(state, "verified") == 0 && finishes)
        rc = finish(r);
    else if (strcmp(state, "verified") != 0 && strcmp(state, "finished") != 0)
        rc = rk_cli_fail(r->cmd, RK_EXIT_FAIL, "job %lld ended %s",
                         (long long)mig_int(r->job, "id"), state);
    if (rc == RK_EXIT_OK && strcmp(state, "verified") == 0 && finishes) {
        json_decref(r->job);
        r->job = NULL;
        if (mig_get_job(r->cmd, r->s, &r->job) != RK_EXIT_OK || !r->job)
            return rk_cli_fail(r->cmd, RK_EXIT_FAIL, "the job is gone after the finish");
    }
    if (r->o->json) {
        json_t *line = json_pack("{sIss}", "job", (json_int_t)mig_int(r->job, "id"), "state",
                                 mig_str(r->job, "state"));
        char *text = line ? rk_json_dumps(line, JSON_COMPACT) : NULL;
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(line);
    } else {
        mig_show_job(r->job);
    }
    return fflush(stdout) ? RK_EXIT_FAIL : rc;
}

/* The phases from the job's step on, until it is verified, ended, or the run stops. */
static int work(mig_run *r)
{
    int64_t rounds = mig_int(r->job, "steps") + EXTRA_ROUNDS;
    for (int64_t k = 0; k < rounds; k++) {
        const char *state = mig_str(r->job, "state");
        int verify = strcmp(state, "verifying") == 0;
        if (!verify && strcmp(state, "copying") != 0)
            break;
        int rc = run_phase(r, verify);
        if (rc == MIG_STOPPED_EXIT)
            return stopped(r);
        if (rc != RK_EXIT_OK)
            return rc;
        json_t *job = NULL; /* the last answer may lag a step another report moved on */
        rc = mig_get_job(r->cmd, r->s, &job);
        if (rc != RK_EXIT_OK)
            return rc;
        json_decref(r->job);
        r->job = job;
    }
    if (strcmp(mig_str(r->job, "state"), "paused") == 0)
        return stopped(r);
    return ended(r);
}

/* After the job is claimed: rings, connections, the heartbeat, the work. */
static int prepare_and_work(mig_run *r)
{
    int rc = RK_EXIT_OK;
    r->ring[0] = mig_version_ring(r->cmd, r->s, mig_int(r->job, "from"), &rc);
    r->ring[1] = r->ring[0] ? mig_version_ring(r->cmd, r->s, mig_int(r->job, "to"), &rc) : NULL;
    if (!r->ring[1])
        return rc;
    rk_error err = {0};
    r->throttle = rkm_throttle_new(0, 0, NULL, &err);
    if (!r->throttle)
        return rk_cli_fail(r->cmd, RK_EXIT_FAIL, "%s", err.message);
    mig_take_throttle(r, r->job);
    rc = connect_dests(r);
    rc = rc ? rc : mig_beat_start(r);
    r->started = mig_now_ms();
    r->fraction0 = -1;
    r->rate_at[0] = (mig_sample){r->started, 0};
    r->n_samples = 1;
    rc = rc ? rc : work(r);
    mig_beat_stop(r);
    return rc;
}

static void run_free(mig_run *r)
{
    for (int side = 0; side < 2; side++) {
        rkm_conn **c = side ? r->dest : r->src;
        size_t n = r->ring[side] ? rk_topology_node_count(rk_ring_topology(r->ring[side])) : 0;
        for (size_t i = 0; c && i < n; i++)
            rkm_conn_free(c[i]);
        free(c);
        rk_ring_free(r->ring[side]);
    }
    rkm_throttle_free(r->throttle);
    json_decref(r->plan);
    json_decref(r->job);
    free(r->arcs);
}

/* The job taken, not verified yet: claimed, worked on, let go. */
static int run_taken(mig_run *r)
{
    if (strcmp(mig_str(r->job, "state"), "paused") == 0)
        return rk_cli_fail(r->cmd, RK_EXIT_USAGE,
                           "job %lld is paused: ringkeeper migrate resume first, then run again",
                           (long long)mig_int(r->job, "id"));
    int rc = set_throttle(r);
    mig_catch_signals(&r->stop);
    rc = rc ? rc : mig_claim(r);
    rc = rc ? rc : prepare_and_work(r);
    mig_release(r);
    mig_catch_signals(NULL);
    return rc;
}

int mig_run_job(mig_run *r)
{
    curl_global_init(CURL_GLOBAL_DEFAULT); /* before the heartbeat thread: it is not thread-safe */
    int rc = take_job(r);
    if (rc == RK_EXIT_OK)
        rc = strcmp(mig_str(r->job, "state"), "verified") == 0 ? ended(r) : run_taken(r);
    run_free(r);
    curl_global_cleanup();
    return rc;
}
