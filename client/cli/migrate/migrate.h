/* migrate.h — `ringkeeper migrate` (docs/MIGRATE.md, "ringkeeper migrate"): what its files share.
 * migrate.c parses the subcommands, job.c speaks to the job's routes, run.c is the worker's flow
 * over steps and sources, report.c turns the copy engine's state into progress reports, beat.c is
 * the heartbeat thread, show.c prints progress and the job, watch.c follows it (status --watch),
 * verify.c the local read-only verify, signals.c the signals that stop a worker. */
#ifndef RK_CLI_MIGRATE_H
#define RK_CLI_MIGRATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "../cli.h"
#include "copy.h"

#define MIG_LEASE_RENEW_MS 3000  /* re-claim this often: the server's lease is 10 s */
#define MIG_POLL_MS        1000  /* GET the job this often: a pause or throttle seen within it */
#define MIG_LEASE_WAIT_MS  12000 /* a dead worker's lease (10 s) runs out within this */
#define MIG_REPORT_TRIES   4     /* a report that got no answer is sent again (same seq) */
#define MIG_REPORT_MS      250   /* a batch boundary is reported at least this far apart */
#define MIG_KEY_TEXT       (3 * RKM_LIST_KEY_MAX + 1) /* a key percent-encoded, its NUL */

/* Why the heartbeat or an answer says to stop at the next batch boundary. */
enum { MIG_GO = 0, MIG_PAUSED, MIG_CANCELLED, MIG_ENDED, MIG_LEASE_LOST, MIG_INTERRUPTED };

/* ---- the job's routes (job.c) ---- */

/* METHOD <cluster route> with `body` (stolen; NULL: none); the answer parsed into *out (may be
 * NULL: dropped). An error whose code is `quiet` (NULL: none) is not printed and sets *had.
 * Returns an exit code. */
int mig_call(const char *cmd, const rk_cli_server *s, const char *method, const char *route,
             json_t *body, json_t **out, const char *quiet, int *had);
/* The cluster's job into *job, or NULL when it has none (404 no_migration). An exit code. */
int mig_get_job(const char *cmd, const rk_cli_server *s, json_t **job);
/* A text field of a document, "" when absent; a whole number, 0 when absent. */
const char *mig_str(const json_t *o, const char *name);
int64_t mig_int(const json_t *o, const char *name);
/* Whether a job in this state may still copy or verify (copying, paused, verifying). */
int mig_unfinished(const json_t *job);
/* `key` percent-encoded into out (MIG_KEY_TEXT bytes): bytes < 0x21, > 0x7e and '%' as %XX, so
 * any key is a JSON string and reads back exactly. */
void mig_encode_key(const char *key, size_t len, char *out);
/* The ring of version `v` of the cluster; NULL with *rc set. */
rk_ring *mig_version_ring(const char *cmd, const rk_cli_server *s, int64_t v, int *rc);
/* A step's arcs from a plan document ("first"/"last" hex, inclusive; a wrapping one split),
 * normalised, into a new array *out (free it) of *n. An exit code. */
int mig_step_arcs(const char *cmd, const json_t *plan, int64_t step, rkm_arc **out, size_t *n);
/* Node `id`'s index in ring r, or -1. */
long mig_node_index(const rk_ring *r, const char *id);

/* ---- the worker (run.c and the files below it) ---- */

typedef struct mig_opts {
    const char *worker;   /* --worker, else host:pid */
    int before_cutover;   /* --before-cutover */
    int delete_source;    /* --delete-source */
    const char *to;       /* --to V */
    double max_step;      /* --max-step, 0: none */
    long long keys_per_s; /* --keys-per-s, -1: not given */
    long long bytes_per_s;
    size_t batch; /* --batch: the most keys per batch */
    int relay;    /* --relay: never copy server to server */
    int finish;   /* --finish */
    int no_wait;  /* --no-wait: a lease held elsewhere fails the run at once */
    int follow;   /* --follow: every window's job, until a signal (implies finish) */
    int json;     /* -o json: a line per report on stdout */
} mig_opts;

#define MIG_RATE_WINDOW_MS 10000 /* the rate shown is over this much of the recent run */
#define MIG_RATE_SAMPLES   64    /* reports are >= MIG_REPORT_MS apart: 16 s of them */

typedef struct mig_sample {
    int64_t ms;
    uint64_t keys;
} mig_sample;

typedef struct mig_run {
    const char *cmd;
    rk_cli_server *s;
    const mig_opts *o;
    json_t *job;            /* the last answer of the server: the main thread's */
    rk_ring *ring[2];       /* the job's from and to versions */
    rkm_conn **src;         /* by ring[0]'s node index, opened when a source needs it */
    rkm_conn **dest;        /* by ring[1]'s node index: every node */
    rkm_throttle *throttle; /* the job's rates; the heartbeat sets them */
    json_t *plan;           /* the stepped plan (GET .../plan), or NULL for one step */
    rkm_arc *arcs;          /* the current step's arcs, or NULL: every key that moves */
    size_t n_arcs;
    rkm_copy_config cfg; /* of the source running; its batch follows the throttle */
    /* the source running */
    const char *node, *phase;
    int64_t step, seq;
    int64_t reported_ms; /* when the last report was answered (mig_now_ms) */
    size_t sent[2];      /* entries of its two lists already reported */
    int cb_exit;         /* an exit code a progress callback failed with, or 0 */
    int created;         /* this run started the job (its throttle is the options' already) */
    int claimed;         /* this run holds (or held) the lease: it lets go at the end */
    int64_t started;     /* ms: when this run began, for the ETA */
    uint64_t src_keys;   /* the running source's keys moved or checked, as last counted */
    uint64_t run_keys;   /* keys moved or checked by this run, over every source and step */
    double fraction0;    /* the share of the job done when this run first showed it; -1 unset */
    mig_sample rate_at[MIG_RATE_SAMPLES]; /* (ms, run_keys) of recent reports, for the rate */
    size_t n_samples;
    /* what the heartbeat thread shares */
    atomic_int stop;         /* MIG_GO, or why to stop at the next boundary */
    atomic_int over;         /* the run ended: the heartbeat returns */
    atomic_llong keys_per_s; /* the throttle's rate as last seen, for the batch size */
    pthread_t beat;
    int beating;
} mig_run;

/* The whole run: start or take the job, claim it, copy, verify, finish. An exit code. */
int mig_run_job(mig_run *r);

/* The cutover a run is for (SPEC 10: a job is one cutover's): the open window, from its previous
 * version to the active one, or the pre-warm of --to from the active version (job.c). */
typedef struct mig_cutover {
    const char *mode;
    int64_t from, to; /* a window's from is 0 when none is open */
} mig_cutover;
/* The cutover in hand for the options `o`, as the server says now. An exit code. */
int mig_cutover_now(const char *cmd, const rk_cli_server *s, const mig_opts *o, mig_cutover *c);
/* Whether `job` is that cutover's: the same mode, from and to. */
int mig_job_is_for(const json_t *job, const mig_cutover *c);

/* signals.c: SIGINT and SIGTERM set *stop (a run's r->stop; NULL: none) to
 * MIG_INTERRUPTED, so the run stops at its next batch boundary, and end --follow's loop; a second
 * signal ends the process at once. */
void mig_catch_signals(atomic_int *stop);
/* Whether a signal came since the first mig_catch_signals. */
int mig_signalled(void);
/* follow.c: run --follow: runs each window's job to its finish, one window after another (a
 * rollout's steps too), until a signal. Exit 0 then; never for a failed job, which it leaves to a
 * person. */
int mig_follow(const mig_run *base);

/* report.c: the progress callbacks of a copy and of a verify (ctx: the mig_run), and the
 * report of a fatal failure (the job pauses with it). */
int mig_on_copy(void *ctx, const rkm_copy_state *st);
int mig_on_verify(void *ctx, const rkm_verify_state *st);
int mig_report_fatal(mig_run *r, json_t *counters, const char *cursor, int done,
                     const char *message);
json_t *mig_copy_counters(const rkm_copy_counters *c);
json_t *mig_verify_counters(const rkm_verify_counters *c);
/* The keys a source's copy moved (or found present, skipped, failed, expired) and those its
 * verify judged: what the throttle counts, and the rate shows. */
uint64_t mig_copy_keys(const rkm_copy_counters *c);
uint64_t mig_verify_keys(const rkm_verify_counters *c);
/* The running source's keys are now `keys`: what grew since the last count joins the run's. */
void mig_count_keys(mig_run *r, uint64_t keys);
/* Applies a job's throttle to the run's throttle and batch size. */
void mig_take_throttle(mig_run *r, const json_t *job);
/* The current ms of CLOCK_MONOTONIC. */
int64_t mig_now_ms(void);

/* lease.c: claims the job's lease for r->o->worker (r->job becomes the claimed job,
 * r->claimed 1), waiting up to MIG_LEASE_WAIT_MS for a dead worker's lease unless --no-wait; an
 * exit code. The release lets it go (if claimed), so the next run need not wait it out. */
int mig_claim(mig_run *r);
void mig_release(mig_run *r);

/* beat.c: starts and stops the heartbeat (lease renewal, job polling). */
int mig_beat_start(mig_run *r);
void mig_beat_stop(mig_run *r);

/* show.c */
/* One line of progress: the bar on a terminal (stderr), or a JSON line with -o json. */
void mig_show_progress(mig_run *r, const json_t *counters);
/* Ends the bar's line, if one was drawn. */
void mig_show_end(void);
/* The job for people (migrate status, and the end of a run). */
int mig_show_job(const json_t *job);
/* `doc` as one compact JSON line on stdout, flushed (nothing for NULL). */
void mig_json_line(const json_t *doc);
/* The share of `job` done, 0..1, at `step` of `phase` ("copy", "verify"), from the plan's steps
 * and the sources done in this one: a rough estimate (a source's key count is not known before
 * its scan ends). */
double mig_job_fraction(const json_t *job, const char *phase, int64_t step);

/* watch.c: `migrate status --watch`: the job shown every MIG_WATCH_MS until it ends or a
 * signal, as a bar on a terminal, else (or with `json`) a JSON line at each change. Exit 0 when
 * it ended verified or finished; 1 failed, cancelled, or interrupted before it ended. */
#define MIG_WATCH_MS 2000
int mig_watch_job(const char *cmd, const rk_cli_server *s, int json);

/* verify.c: `migrate verify`'s pass over the job's versions. */
int mig_verify_local(const char *cmd, rk_cli_server *s, size_t batch);

#endif
