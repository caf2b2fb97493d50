/* measure.c — `ringkeeper measure` (docs/LOAD.md): a load profile of a cluster's data. Every data
 * server of a version (or of a topology file) is scanned through the mover's drivers, read-only;
 * a sample of its keys, chosen by a hash of the key so that two runs sample the same keys, is
 * weighed (memcached: the item's size from the scan; Redis: MEMORY USAGE) and placed by the ring's
 * key hash into the bins of an rk_load. The profile is a JSON document that `plan --load` reads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <xxhash.h>

#include "measure_int.h"

#define SCAN_STEP    1000      /* keys a scan step passes at most: the batch weighed at once */
#define DEFAULT_BINS 4096      /* 2^12 bins: 1/4096 of the hash space each */
#define SAMPLE_SEED  0x5eedULL /* a key's sampling hash is not the ring's, so no arc is favoured */
#define PROGRESS_MS  1000      /* a progress line or bar at most this often */
#define FAILED_SHARE 0.01      /* a server with more sampled keys unweighed fails the measure */

/* The sampled keys of the current scan step, their bytes copied out of the scan's buffer, and
 * room for their sizes. A step passes about SCAN_STEP keys (Redis's SCAN COUNT is a hint), so the
 * room grows when it must. */
typedef struct {
    rkm_key *keys;
    uint64_t *bytes;
    double *hits;
    rkm_result *res;
    size_t n, cap;
    uint64_t threshold; /* a key is sampled when its sampling hash is at most this */
    tally *t;
} step;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void step_clear(step *s)
{
    for (size_t i = 0; i < s->n; i++)
        free((char *)s->keys[i].key);
    s->n = 0;
}

static void step_free(step *s)
{
    step_clear(s);
    free(s->keys), free(s->bytes), free(s->hits), free(s->res);
}

/* p grown to `cap` items of `size` bytes; p itself, and *failed set, when out of memory (or when
 * *failed was set already). */
static void *grow(void *p, size_t cap, size_t size, int *failed)
{
    void *q = *failed ? NULL : realloc(p, cap * size);
    *failed |= !q;
    return q ? q : p;
}

/* Room for one more key. */
static int step_room(step *s)
{
    if (s->n < s->cap)
        return RK_OK;
    size_t cap = s->cap ? 2 * s->cap : SCAN_STEP;
    int failed = 0;
    s->keys = grow(s->keys, cap, sizeof *s->keys, &failed);
    s->bytes = grow(s->bytes, cap, sizeof *s->bytes, &failed);
    s->hits = grow(s->hits, cap, sizeof *s->hits, &failed);
    s->res = grow(s->res, cap, sizeof *s->res, &failed);
    if (failed)
        return RK_ENOMEM;
    s->cap = cap;
    return RK_OK;
}

/* The scan's callback: counts the key, and keeps a copy of it when it is sampled. */
static int take_key(void *ctx, const rkm_key *key, rk_error *err)
{
    step *s = ctx;
    s->t->scanned++;
    if (XXH3_64bits_withSeed(key->key, key->len, SAMPLE_SEED) > s->threshold)
        return RK_OK;
    char *copy = step_room(s) == RK_OK ? malloc(key->len ? key->len : 1) : NULL;
    if (!copy)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory sampling keys");
    memcpy(copy, key->key, key->len);
    s->keys[s->n] = *key;
    s->keys[s->n++].key = copy;
    return RK_OK;
}

/* A key as text a JSON document and a terminal take: printable ASCII as it is, other bytes and
 * the backslash as \xNN, its first KEY_SHOWN bytes. */
static void key_shown(const rkm_key *k, char out[4 * KEY_SHOWN + 1])
{
    size_t o = 0;
    for (size_t i = 0; i < k->len && i < KEY_SHOWN; i++) {
        unsigned char c = (unsigned char)k->key[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
    }
    out[o] = 0;
}

/* Keeps key i of the step when it is the largest or the most read of its server so far. */
static void note_top(tally *t, const step *s, size_t i, double hits)
{
    if (s->bytes[i] > t->top_bytes) {
        t->top_bytes = s->bytes[i];
        key_shown(&s->keys[i], t->top_key);
    }
    if (hits > t->top_hits) {
        t->top_hits = hits;
        key_shown(&s->keys[i], t->hot_key);
    }
}

/* The step's sampled keys weighed and placed: a key gone since the scan is left out, a key the
 * server would not weigh is counted as failed. */
static int weigh(measure *m, rkm_conn *c, step *s, uint32_t node, rk_error *err)
{
    int rc = s->n ? rkm_sizes_many(c, s->keys, s->n, s->bytes, s->res, err) : RK_OK;
    rc = rc ? rc : rkm_hits_many(c, s->keys, s->n, s->hits, err);
    for (size_t i = 0; rc == RK_OK && i < s->n; i++) {
        if (s->res[i].rc != RK_OK && s->t->failed++ == 0)
            m->why = s->res[i].err;
        if (s->res[i].rc != RK_OK || s->bytes[i] == 0)
            continue;
        const rkm_key *k = &s->keys[i];
        uint64_t hash = rk_ring_key_hash(m->ring, k->key, k->len);
        double hits = s->hits[i] >= 0 ? s->hits[i] : 0;
        rc = rk_load_add(m->load, hash, 1, (double)s->bytes[i], hits, err);
        s->t->counted += s->hits[i] >= 0;
        s->t->hits += hits;
        s->t->sampled++;
        s->t->bytes += s->bytes[i];
        s->t->bytes_sq += (double)s->bytes[i] * (double)s->bytes[i];
        s->t->misplaced += rk_ring_lookup_hash(m->ring, hash) != node;
        note_top(s->t, s, i, hits);
    }
    return rc;
}

/* Progress on stderr, at most every PROGRESS_MS and at a server's end: a bar on a terminal, else a
 * JSON line. */
static void show(measure *m, const rk_node *n, const tally *t, int done)
{
    int64_t now = now_ms();
    if (!done && now - m->shown_ms < PROGRESS_MS)
        return;
    m->shown_ms = now;
    double secs = (double)(now - m->started_ms) / 1000;
    double rate = secs > 0 ? (double)(m->scanned) / secs : 0;
    if (isatty(STDERR_FILENO)) {
        fprintf(
            stderr,
            "\rmeasure %-16.16s %12llu keys scanned %10llu sampled %6llu failed %10.0f keys/s%s",
            n->id, (unsigned long long)t->scanned, (unsigned long long)t->sampled,
            (unsigned long long)t->failed, rate, done ? "\n" : "");
        return;
    }
    json_t *line = json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:f}", "server", n->id, "scanned",
                             (json_int_t)t->scanned, "sampled", (json_int_t)t->sampled, "failed",
                             (json_int_t)t->failed, "bytes", (json_int_t)t->bytes, "done", done,
                             "keys_per_s", rate);
    if (line && json_dumpf(line, stderr, JSON_COMPACT) == 0)
        fputc('\n', stderr);
    json_decref(line);
}

/* RK_OK, or an error when more than FAILED_SHARE of the server's sampled keys could not be
 * weighed: the profile would undercount it by as much. */
static int check_failed(const measure *m, const rk_node *n, const tally *t, rk_error *err)
{
    uint64_t tried = t->sampled + t->failed;
    if (t->failed <= FAILED_SHARE * (double)tried)
        return RK_OK;
    return rk_error_set(err, RK_EIO, NULL,
                        "%s (%s): %llu of %llu sampled keys could not be weighed, more than %g%% "
                        "(the first: %s)",
                        n->id, n->addr, (unsigned long long)t->failed, (unsigned long long)tried,
                        100 * FAILED_SHARE, m->why.message);
}

/* Scans node `node`'s server to its end. */
static int scan_server(measure *m, uint32_t node, step *s, rk_error *err)
{
    const rk_topology *t = rk_ring_topology(m->ring);
    const rk_node *n = rk_topology_node(t, node);
    rkm_conn *c = rkm_conn_new(rk_topology_data(t), n->addr, NULL, err);
    if (!c)
        return err->code;
    rkm_cursor cursor = {0};
    int rc = RK_OK;
    s->t = &m->tallies[node];
    while (rc == RK_OK && !cursor.done) { /* ends: every step moves the cursor on */
        uint64_t before = s->t->scanned;
        rc = rkm_scan(c, &cursor, SCAN_STEP, take_key, s, err);
        rc = rc ? rc : weigh(m, c, s, node, err);
        step_clear(s);
        m->scanned += s->t->scanned - before;
        rkm_throttle_take(m->throttle, s->t->scanned - before, 0);
        show(m, n, s->t, 0);
    }
    if (rc == RK_OK)
        show(m, n, s->t, 1);
    rc = rc ? rc : check_failed(m, n, s->t, err);
    rkm_conn_free(c);
    return rc;
}

/* The fraction of keys weighed: every one when the scan gives sizes (memcached's metadump), so
 * that weighing costs nothing more; --sample-rate's when it costs a request each (Redis). */
static double rate_of(const measure_args *a, const rk_topology *t)
{
    const rkm_driver *d = rkm_driver_find(rk_topology_data(t));
    return d && !d->sizes_many ? 1.0 : a->sample_rate;
}

/* Every server of the ring's topology, one after the other. */
static int measure_ring(const measure_args *a, const rk_ring *ring, long long version)
{
    const rk_topology *t = rk_ring_topology(ring);
    rk_error err = {0};
    measure m = {.a = a, .ring = ring, .started_ms = now_ms(), .rate = rate_of(a, t)};
    step s = {.threshold = m.rate >= 1 ? UINT64_MAX : (uint64_t)ldexp(m.rate, 64)};
    m.tallies = calloc(rk_topology_node_count(t), sizeof *m.tallies);
    m.load = rk_load_new(rk_ring_bits(ring), a->bins, m.rate, &err);
    m.throttle = m.load ? rkm_throttle_new(a->rate, 0, NULL, &err) : NULL;
    m.partial = a->out ? malloc(strlen(a->out) + sizeof PARTIAL) : NULL;
    int rc = m.tallies && m.throttle && (m.partial || !a->out) ? RK_OK : RK_ENOMEM;
    if (rc == RK_OK && m.partial) {
        strcat(strcpy(m.partial, a->out), PARTIAL);
        rk_cli_measure_resume(&m);
    }
    for (uint32_t i = m.first; rc == RK_OK && i < rk_topology_node_count(t); i++) {
        rc = scan_server(&m, i, &s, &err);
        if (rc == RK_OK && m.partial && i + 1 < rk_topology_node_count(t))
            rk_cli_measure_checkpoint(&m, i + 1,
                                      m.seconds_done + (double)(now_ms() - m.started_ms) / 1000);
    }
    int exit = RK_EXIT_OK;
    if (rc == RK_ENOMEM && !err.message[0])
        exit = rk_cli_fail("measure", RK_EXIT_FAIL, "out of memory");
    else if (rc)
        exit = rk_cli_fail("measure",
                           rc == RK_EINVAL         ? RK_EXIT_USAGE
                           : rc == RK_EUNREACHABLE ? RK_EXIT_UNREACHABLE
                                                   : RK_EXIT_FAIL,
                           "%s", err.message);
    json_t *doc =
        exit ? NULL
             : rk_cli_measure_profile(&m, version,
                                      m.seconds_done + (double)(now_ms() - m.started_ms) / 1000);
    exit = exit ? exit : rk_cli_measure_write(a, doc);
    exit = exit || !a->store ? exit : rk_cli_measure_store(a, doc);
    if (exit == RK_EXIT_OK && m.partial)
        unlink(m.partial); /* the profile is whole: nothing is left to resume */
    json_decref(doc);
    free(m.partial);
    step_free(&s);
    free(m.tallies);
    rk_load_free(m.load);
    rkm_throttle_free(m.throttle);
    return exit;
}

/* The ring of --version (default: the active one) and its number, from the server. */
static rk_ring *fetch(measure_args *a, long long *version, int *rc)
{
    rk_cli_body doc = {0};
    *rc = rk_cli_server_check("measure", &a->server);
    if (*rc == RK_EXIT_OK && a->version)
        *rc = rk_cli_call("measure", &a->server, NULL, &doc, "GET", "/versions/%s", a->version);
    else if (*rc == RK_EXIT_OK)
        *rc = rk_cli_call("measure", &a->server, NULL, &doc, "GET", "/ring");
    if (*rc != RK_EXIT_OK)
        return NULL;
    json_t *parsed = json_loadb(doc.data, doc.len, 0, NULL);
    *version = json_integer_value(json_object_get(parsed, "version"));
    json_decref(parsed);
    rk_ring *r =
        rk_cli_ring_from_text("measure", "the server's version document", doc.data, doc.len);
    free(doc.data);
    *rc = r ? RK_EXIT_OK : RK_EXIT_FAIL;
    return r;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    measure_args a = {.sample_rate = 1, .bins = DEFAULT_BINS};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("topology", RK_CLI_TEXT, &a.topology),
        RK_CLI_OPT("version", RK_CLI_VERSION, &a.version),
        RK_CLI_OPT("sample-rate", RK_CLI_FRACTION, &a.sample_rate),
        RK_CLI_OPT("bins", RK_CLI_NUMBER, &a.bins, .lo = 1, .hi = RK_LOAD_MAX_BINS,
                   .must = "a power of two, 1..65536"),
        RK_CLI_OPT("rate", RK_CLI_NUMBER, &a.rate, .lo = 0, .hi = UINT32_MAX,
                   .must = "keys per second, 0 for no limit"),
        RK_CLI_OPT("out", RK_CLI_TEXT, &a.out),
        RK_CLI_OPT("store", RK_CLI_FLAG, &a.store),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a.server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    if (a.bins & (a.bins - 1))
        return rk_cli_usage_error(cmd, "--bins: must be a power of two, 1..65536, got %llu",
                                  a.bins);
    if (a.topology && a.version)
        return rk_cli_usage_error(cmd, "--topology and --version name two rings: give one");
    if (a.topology && a.store)
        return rk_cli_usage_error(cmd, "--store keeps the profile with a cluster: measure one "
                                       "with -c C, not --topology");
    long long version = 0;
    rk_ring *r = a.topology ? rk_cli_load_ring("measure", a.topology) : fetch(&a, &version, &rc);
    if (!r)
        return a.topology ? RK_EXIT_USAGE : rc;
    if (!rk_topology_data(rk_ring_topology(r)))
        rc = rk_cli_fail("measure", RK_EXIT_USAGE,
                         "the topology names no data servers (\"data\": \"memcached\" or "
                         "\"redis\"), so there is nothing to measure");
    else
        rc = measure_ring(&a, r, version);
    rk_ring_free(r);
    return rc;
}

const rk_cli_cmd rk_cli_measure = {
    "measure", run,
    "usage: ringkeeper measure --server URL --cluster C [--version V] [--sample-rate F]\n"
    "                          [--bins N] [--rate K] [--out FILE] [--store]\n"
    "       ringkeeper measure --topology FILE [--sample-rate F] [--bins N] [--rate K] [--out "
    "FILE]\n"
    "\n"
    "Measures what a cluster's data servers hold: scans each one (read-only: nothing is written\n"
    "to them), weighs a sample of its keys (memcached: the item's size; Redis: MEMORY USAGE)\n"
    "and places them on the ring, into a load profile (JSON) that `ringkeeper plan` weighs a plan "
    "by:\n"
    "keys and bytes moved, and the balance by bytes (docs/LOAD.md). Progress on stderr: a bar on\n"
    "a terminal, else a JSON line a second.\n"
    "\n"
    "  --version V       the version whose servers to scan (default: the active one)\n"
    "  --topology FILE   a topology file instead of the server's version\n"
    "  --sample-rate F   the fraction of keys weighed, 0 < F <= 1 (default 1), where weighing\n"
    "                    costs a request a key (Redis: MEMORY USAGE); every key is still\n"
    "                    scanned, the same keys are sampled run after run, and memcached's\n"
    "                    keys are all weighed (its scan gives their sizes)\n"
    "  --bins N          bins of the profile over the hash space, a power of two (default 4096)\n"
    "  --rate K          scan at most K keys per second over all servers (default 0: no limit)\n"
    "  --out FILE        write the profile to FILE (replaced whole), else to stdout; with it,\n"
    "                    FILE.partial keeps the servers done, and a run stopped half-way\n"
    "                    resumes from there\n"
    "  --store           send the profile to the server as the cluster's load profile, which\n"
    "                    its plans are then weighed by (PUT .../load; stdout stays "
    "quiet)\n" READ_OPTIONS_HELP,
    NULL, NULL};
