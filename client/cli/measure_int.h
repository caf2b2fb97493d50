/* measure_int.h — what the two files of `ringkeeper measure` share (measure.c: the scan, the
 * weighing and the command; measure_doc.c: the profile's document, where it goes, and the
 * checkpoint a killed run resumes from): the run's state and the calls between them. Not used
 * outside client/cli/measure*.c. */
#ifndef RK_CLI_MEASURE_INT_H
#define RK_CLI_MEASURE_INT_H

#include <stdint.h>

#include <jansson.h>

#include "cli.h"
#include "driver.h"
#include "throttle.h"

#define PROFILE_FORMAT 1          /* the document's "profile" member: its format */
#define PARTIAL        ".partial" /* the checkpoint beside --out: the servers done so far */
#define KEY_SHOWN      128        /* bytes of a key kept to name it (escaped, 4 a byte at most) */

typedef struct {
    const char *topology, *version, *out;
    int store; /* --store: PUT the profile to the cluster (docs/API.md, "The load profile") */
    double sample_rate;
    unsigned long long bins, rate;
    rk_cli_server server;
} measure_args;

/* One server's tally (of its node in the topology): `failed` keys were sampled and could not be
 * weighed (the server answered their size query with an error), so no figure counts them;
 * `counted` keys had an estimate of their reads (a Redis with an LFU policy), adding to `hits`. */
typedef struct {
    uint64_t scanned, sampled, bytes, misplaced, failed, counted;
    double hits, bytes_sq; /* bytes_sq: the sampled keys' bytes squared, summed (bytes_error) */
    /* the largest key and the most read one, to name a key that weights cannot balance */
    uint64_t top_bytes;
    double top_hits;
    char top_key[4 * KEY_SHOWN + 1], hot_key[4 * KEY_SHOWN + 1]; /* escaped as key_shown does */
} tally;

typedef struct {
    const measure_args *a;
    const rk_ring *ring;
    rk_load *load;
    rkm_throttle *throttle;
    tally *tallies;
    int64_t started_ms, shown_ms;
    char *partial;       /* --out's checkpoint (PARTIAL), or NULL without --out */
    uint32_t first;      /* servers done by an earlier run, read back from the checkpoint */
    double seconds_done; /* the time those took */
    uint64_t scanned;    /* over every server so far */
    double rate;         /* the fraction of keys weighed (rate_of) */
    rk_error why;        /* the first key that could not be weighed, on the current server */
} measure;

/* ---- measure_doc.c ---- */

/* The profile document: what was measured (each server's tally), when, how, and the load; of
 * `version` of the cluster unless the topology came from a file. New reference, or NULL. */
json_t *rk_cli_measure_profile(const measure *m, long long version, double secs);
/* The profile to --out (replaced whole), or to stdout without --out nor --store; an exit code. */
int rk_cli_measure_write(const measure_args *a, json_t *doc);
/* The profile PUT as the cluster's stored one; an exit code. */
int rk_cli_measure_store(const measure_args *a, const json_t *doc);
/* The checkpoint of the first `done` servers, `secs` into the run, replacing the last one whole;
 * best effort (a failure is said, and the measure goes on). */
void rk_cli_measure_checkpoint(const measure *m, uint32_t done, double secs);
/* The servers a killed run finished, from m->partial, when it measured this ring at this rate
 * into as many bins: their tallies, the load and m->first; else nothing. */
void rk_cli_measure_resume(measure *m);

#endif
