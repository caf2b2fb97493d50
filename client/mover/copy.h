/* copy.h — the copy engine (docs/MIGRATE.md, "The copy engine"): for one source node, copy the
 * keys that move from the old ring to the new one to their new owners, in batches a job can
 * report and resume, throttled; and verify such a copy. A copy never writes over a value and
 * never deletes. Only a verify may, when its config says so: delete_matched deletes each key it
 * found matched from its source (a job started with delete_source), catch_up writes the source's
 * value over a copy that differs (a before_cutover job, whose new owners nobody else writes to).
 *
 * The rule (SPEC 10): a key the source's scan passes moves when its owner under the new ring is
 * another node than the source (by id: the two topologies number their nodes differently) and
 * its owner under the old ring is the source. A key the source holds but does not own under the
 * old ring is not this source's to move: it is counted `not_owned` and left alone.
 *
 * Thread safety: a run uses the connections of its config, which are one thread's at a time
 * (driver.h); runs for different sources with their own connections may go on in parallel and
 * share the rings (immutable) and a throttle (thread-safe). */
#ifndef RKM_COPY_H
#define RKM_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"
#include "keylist.h"
#include "throttle.h"

#define RKM_DEFAULT_BATCH 2000 /* keys per scan step */

/* A range of key hashes (rk_ring_key_hash), both ends included: first <= last. A plan's arc that
 * wraps past the top of the hash space is two of them. */
typedef struct rkm_arc {
    uint64_t first, last;
} rkm_arc;

/* Sorts arcs[0 .. n) by first and merges those that overlap or touch, as a config's `arcs` must
 * be; returns how many are left (at most n). An arc with first > last is dropped. */
size_t rkm_arcs_normalize(rkm_arc *arcs, size_t n);

/* One source and where its keys go: everything borrowed, for the run's duration. */
typedef struct rkm_copy_config {
    const rk_ring *old_ring; /* the ring the source's keys were placed by */
    const rk_ring *new_ring; /* the ring they move to */
    uint32_t source;         /* the source: its node's index in old_ring's topology */
    rkm_conn *src;           /* the source's data server; its rkm_options' size cap applies */
    rkm_conn *const *dest;   /* dest[i]: the data server of new_ring's node i; NULL for a node
                                no key of this source may go to (a key that does: RK_EINVAL) */
    size_t n_dest;           /* entries of dest: new_ring's node count */
    size_t batch;            /* keys per scan step, 1 .. RKM_SCAN_MAX; 0: RKM_DEFAULT_BATCH */
    rkm_throttle *throttle;  /* counts every moving key and the bytes read for it; shared
                                with whoever changes its rates; NULL: unlimited */
    const rkm_arc *arcs;     /* NULL: every key that moves; else only those whose hash lies in
                                one of arcs[0 .. n_arcs) (a plan's step: the others are counted
                                `later`), sorted and merged as rkm_arcs_normalize leaves them */
    size_t n_arcs;
    /* verify only (a copy refuses them); never both: a pre-warm's sources still serve */
    bool delete_matched; /* delete each key found matched from the source, right after the
                            comparison; never one missing, different, skipped or failed */
    bool catch_up;       /* a before_cutover job's: a key that differs (or is missing) on its new
                            owner is written over with the source's value (rkm_put; every dest
                            opened with rkm_options.overwrite), then compared again */
} rkm_copy_config;

/* What the rule said of the keys a scan passed;
 * scanned = stay + not_owned + later + the keys that move. */
typedef struct rkm_rule_counts {
    uint64_t scanned;   /* keys the scan passed (a key passed twice counts twice) */
    uint64_t stay;      /* owned by the source under both rings */
    uint64_t not_owned; /* on the source, owned by another node under the old ring: left alone */
    uint64_t later;     /* would move, but their hash is outside the config's arcs: another
                           step's, left alone in this run */
} rkm_rule_counts;

/* SPEC 10's counters and the rest of what happened to the keys that move:
 * rule.scanned - rule.stay - rule.not_owned - rule.later
 *   = copied + present + skipped + expired + errors. */
typedef struct rkm_copy_counters {
    rkm_rule_counts rule;
    uint64_t copied;  /* written to the new owner */
    uint64_t present; /* already on the new owner: left as it was, never written over */
    uint64_t skipped; /* over the size cap: not copied, listed with its size */
    uint64_t bytes;   /* bytes of the values copied, as the store gives them (Redis: DUMP's) */
    uint64_t errors;  /* keys whose copy failed for that key alone, listed with the error */
    uint64_t expired; /* gone from the source between the scan and the get: nothing to copy */
} rkm_copy_counters;

/* A copy's state, which the job stores and gives back to resume. Storage the caller owns:
 * rkm_copy_state_init before the first run, rkm_copy_state_deinit after the last. */
typedef struct rkm_copy_state {
    rkm_cursor cursor;          /* where the source's scan is; "" at the start */
    rkm_copy_counters counters; /* since the start, over every run */
    rkm_keylist skipped;        /* keys over the size cap, `number` their size */
    rkm_keylist failed;         /* keys that failed, `number` the rk_status, `note` why */
    bool stopped;               /* the last run ended because the progress callback said so */
} rkm_copy_state;

void rkm_copy_state_init(rkm_copy_state *s);
void rkm_copy_state_deinit(rkm_copy_state *s);

/* What a progress callback returns: RK_OK goes on, RKM_STOP stops at this batch boundary (pause,
 * cancel), a negative rk_status stops the run with that error (a lost lease). */
#define RKM_STOP 1

/* Called after every batch with the state at its boundary (borrowed for the call): what the job
 * reports, so that a worker killed later redoes at most the batch after it. */
typedef int (*rkm_copy_progress_fn)(void *ctx, const rkm_copy_state *state);

/* Copies the keys of cfg->src that move, from state->cursor on, batch by batch (each batch's
 * keys read with rkm_get_many, then written with rkm_add_many per new owner, with their remaining
 * TTL, in chunks that bound the values held), until the scan is done or `progress` (may be NULL)
 * stops it: then RK_OK, state->stopped telling which. A failure a key alone has (RK_EIO,
 * RK_EINVAL) is counted and listed and the copy goes on. One that stops it is returned with
 * `err`: RK_EUNREACHABLE after the driver's tries, RK_ENOMEM, a config that cannot work or a key
 * whose new owner has no connection (RK_EINVAL), with the state put back to the last boundary
 * (the cursor, counters and lists the last progress call saw); or a progress callback's error,
 * with the state that call saw. */
int rkm_copy_run(const rkm_copy_config *cfg, rkm_copy_state *state, rkm_copy_progress_fn progress,
                 void *ctx, rk_error *err);

/* ---- verify ---- */

#define RKM_TTL_TOLERANCE_MS  2000 /* TTLs agree within this, or within RKM_TTL_TOLERANCE_PCT */
#define RKM_TTL_TOLERANCE_PCT 5    /* per cent of the source's TTL */

/* Why a moved key does not match (rkm_listed.number of a verify's mismatches). */
typedef enum rkm_mismatch {
    RKM_MISSING = 1, /* not on the new owner */
    RKM_VALUE = 2,   /* there with another value (checksum or size) */
    RKM_TTL = 3,     /* the same value, a TTL outside the tolerance (or one with none) */
} rkm_mismatch;

/* "missing", "value", "ttl"; NULL for another value. */
const char *rkm_mismatch_name(int reason);

/* rule.scanned - rule.stay - rule.not_owned - rule.later = checked + expired + errors
 *   - (the delete errors: matched keys whose delete failed, listed, counted in both);
 * checked = matched + skipped + missing + value + ttl; updated and deleted count matched keys. */
typedef struct rkm_verify_counters {
    rkm_rule_counts rule;
    uint64_t checked; /* keys that move, compared on the source and the new owner */
    uint64_t matched; /* the same on both */
    uint64_t skipped; /* over the size cap and not on the new owner: skipped, not a mismatch */
    uint64_t missing; /* the mismatches, by reason */
    uint64_t value;
    uint64_t ttl;
    uint64_t errors;  /* keys whose comparison failed for that key alone, listed */
    uint64_t expired; /* gone from the source before it was compared */
    uint64_t updated; /* catch_up: written over with the source's value, then matched */
    uint64_t deleted; /* delete_matched: matched and deleted from the source */
} rkm_verify_counters;

/* A verify's state, like a copy's. */
typedef struct rkm_verify_state {
    rkm_cursor cursor;            /* where the source's scan is; "" at the start */
    rkm_verify_counters counters; /* since the start */
    rkm_keylist mismatches;       /* `number` the rkm_mismatch */
    rkm_keylist failed;           /* as a copy's */
    bool stopped;                 /* as a copy's */
} rkm_verify_state;

void rkm_verify_state_init(rkm_verify_state *s);
void rkm_verify_state_deinit(rkm_verify_state *s);

typedef int (*rkm_verify_progress_fn)(void *ctx, const rkm_verify_state *state);

/* Scans cfg->src again and, for every key that moves (the same rule), compares the checksums on
 * the source and the new owner: existence, value, TTL within the tolerance. Reads only, unless
 * cfg->delete_matched or cfg->catch_up (above); a delete or a catch-up write that fails for the
 * key alone is listed in `failed` and counted in `errors`, never tried again. Batches, throttle,
 * progress, stopping and errors as rkm_copy_run; RK_EINVAL for catch_up with delete_matched or
 * with a dest that may not be overwritten. A clean copy ends with 0 mismatches. */
int rkm_verify_run(const rkm_copy_config *cfg, rkm_verify_state *state,
                   rkm_verify_progress_fn progress, void *ctx, rk_error *err);

#endif
