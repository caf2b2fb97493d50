/* measure_doc.c — `ringkeeper measure`'s profile document (docs/LOAD.md, "The profile"): each
 * server's tally with its largest and most read keys and the error its sample implies, where the
 * profile goes (a file, stdout, the cluster), and the checkpoint beside --out that a killed run
 * resumes from. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "measure_int.h"

/* A server's largest and most read keys: {"key", "bytes"} and {"key", "requests"} (as sampled:
 * a key's own figures, not scaled), absent when none was weighed or read. */
static int top_keys(json_t *server, const tally *c)
{
    int bad = 0;
    if (c->top_bytes)
        bad = json_object_set_new(
            server, "largest",
            json_pack("{s:s, s:I}", "key", c->top_key, "bytes", (json_int_t)c->top_bytes));
    if (!bad && c->top_hits > 0)
        bad = json_object_set_new(
            server, "most_read",
            json_pack("{s:s, s:f}", "key", c->hot_key, "requests", c->top_hits));
    return bad;
}

/* The standard error of a server's bytes_estimate, the sampled bytes over rate p: each key is in
 * the sample with probability p, so the estimate's variance is (1 - p) / p^2 times the sum of
 * every key's bytes squared, which the sample's sum over p estimates. 0 at p = 1. */
static double bytes_error(const tally *c, double p)
{
    return sqrt((1 - p) * c->bytes_sq) / p;
}

static json_t *servers_doc(const measure *m)
{
    const rk_topology *t = rk_ring_topology(m->ring);
    json_t *list = json_array();
    for (size_t i = 0; list && i < rk_topology_node_count(t); i++) {
        const rk_node *n = rk_topology_node(t, i);
        const tally *c = &m->tallies[i];
        json_t *s = json_pack(
            "{s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:f}", "id", n->id, "addr", n->addr,
            "keys_scanned", (json_int_t)c->scanned, "keys_sampled", (json_int_t)c->sampled,
            "keys_failed", (json_int_t)c->failed, "bytes_sampled", (json_int_t)c->bytes,
            "bytes_estimate", (double)c->bytes / m->rate, "bytes_error", bytes_error(c, m->rate),
            "misplaced_sampled", (json_int_t)c->misplaced, "keys_counted", (json_int_t)c->counted,
            "requests_estimate", c->hits / m->rate);
        if (!s || top_keys(s, c) || json_array_append_new(list, s)) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* The profile document: what was measured, when, how, and the load. */
json_t *rk_cli_measure_profile(const measure *m, long long version, double secs)
{
    char at[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    const rk_topology *t = rk_ring_topology(m->ring);
    double var = 0; /* the servers' samples are apart: their variances add */
    for (size_t i = 0; i < rk_topology_node_count(t); i++)
        var += pow(bytes_error(&m->tallies[i], m->rate), 2);
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:f, s:f, s:f, s:o, s:o}", "profile",
                            PROFILE_FORMAT, "fingerprint", rk_ring_fingerprint_hex(m->ring), "hash",
                            rk_hash_name(rk_topology_hash(t)), "data", rk_topology_data(t),
                            "measured_at", at, "measured_epoch_s", (json_int_t)now, "seconds", secs,
                            "sample_rate", m->rate, "bytes_error", sqrt(var), "servers",
                            servers_doc(m), "load", rk_load_to_json(m->load));
    if (doc && !m->a->topology && /* a cluster's version, not a topology file */
        (json_object_set_new(doc, "cluster", json_string(m->a->server.cluster)) ||
         json_object_set_new(doc, "version", json_integer(version)))) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* The file at `path` replaced whole (rk_cli_replace_file), or made with mode 0644 less the umask.
 */
static int write_file(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0)
        close(fd);
    return rk_cli_replace_file(path, path, text, len);
}

/* The profile sent to the cluster as its stored one (compact: the server keeps at most 1 MiB). */
int rk_cli_measure_store(const measure_args *a, const json_t *doc)
{
    rk_cli_body in = {json_dumps(doc, JSON_COMPACT), 0}, out = {0};
    if (!in.data)
        return rk_cli_fail("measure", RK_EXIT_FAIL, "out of memory sending the profile");
    in.len = strlen(in.data);
    int rc = rk_cli_call("measure", &a->server, &in, &out, "PUT", "/load");
    if (rc == RK_EXIT_OK)
        fprintf(stderr, "ringkeeper measure: stored as the load profile of cluster %s\n",
                a->server.cluster);
    free(in.data);
    free(out.data);
    return rc;
}

int rk_cli_measure_write(const measure_args *a, json_t *doc)
{
    char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    if (!text)
        return rk_cli_fail("measure", RK_EXIT_FAIL, "out of memory writing the profile");
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps's NUL becomes the file's last newline */
    int rc = RK_EXIT_OK;
    if (a->out && write_file(a->out, text, len + 1) != 0)
        rc = rk_cli_fail("measure", RK_EXIT_FAIL, "cannot write %s: %s", a->out, strerror(errno));
    else if (!a->out && !a->store && /* --store alone: the profile goes to the server only */
             (fwrite(text, 1, len + 1, stdout) != len + 1 || fflush(stdout)))
        rc = rk_cli_fail("measure", RK_EXIT_FAIL, "writing stdout failed");
    free(text);
    return rc;
}

/* The checkpoint of the first `done` servers, replacing the last one whole: what a run killed
 * later starts again from (resume). Best effort: a checkpoint that cannot be written costs only a
 * longer rerun, so it is said and the measure goes on. */
void rk_cli_measure_checkpoint(const measure *m, uint32_t done, double secs)
{
    json_t *doc =
        json_pack("{s:i, s:s, s:f, s:I, s:I, s:f, s:o, s:o}", "partial", PROFILE_FORMAT,
                  "fingerprint", rk_ring_fingerprint_hex(m->ring), "sample_rate", m->rate, "bins",
                  (json_int_t)rk_load_bins(m->load), "servers_done", (json_int_t)done, "seconds",
                  secs, "servers", servers_doc(m), "load", rk_load_to_json(m->load));
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (!text || write_file(m->partial, text, strlen(text)) != 0)
        fprintf(stderr, "ringkeeper measure: cannot write the checkpoint %s: %s\n", m->partial,
                text ? strerror(errno) : "out of memory");
    free(text);
    json_decref(doc);
}

static int same_text(const json_t *v, const char *text)
{
    const char *t = json_string_value(v);
    return t && strcmp(t, text) == 0;
}

static uint64_t count_of(const json_t *server, const char *name)
{
    json_int_t v = json_integer_value(json_object_get(server, name));
    return v > 0 ? (uint64_t)v : 0;
}

/* A finished server's largest and most read keys, as its checkpoint kept them. */
static void resume_top(tally *c, const json_t *server)
{
    const json_t *big = json_object_get(server, "largest"),
                 *hot = json_object_get(server, "most_read");
    const char *k = json_string_value(json_object_get(big, "key"));
    if (k && strlen(k) < sizeof c->top_key) {
        strcpy(c->top_key, k);
        c->top_bytes = count_of(big, "bytes");
    }
    k = json_string_value(json_object_get(hot, "key"));
    if (k && strlen(k) < sizeof c->hot_key) {
        strcpy(c->hot_key, k);
        c->top_hits = json_number_value(json_object_get(hot, "requests"));
    }
}

/* The servers a killed run finished, from its checkpoint, when it measured this ring at this
 * rate into as many bins; else nothing (a new measure, the checkpoint replaced as it goes). */
void rk_cli_measure_resume(measure *m)
{
    json_t *doc = json_load_file(m->partial, 0, NULL), *servers = json_object_get(doc, "servers");
    const rk_topology *t = rk_ring_topology(m->ring);
    json_int_t done = json_integer_value(json_object_get(doc, "servers_done"));
    rk_error err = {0};
    rk_load *load = NULL;
    if (doc && json_integer_value(json_object_get(doc, "partial")) == PROFILE_FORMAT &&
        same_text(json_object_get(doc, "fingerprint"), rk_ring_fingerprint_hex(m->ring)) &&
        json_real_value(json_object_get(doc, "sample_rate")) == m->rate &&
        json_integer_value(json_object_get(doc, "bins")) == (json_int_t)rk_load_bins(m->load) &&
        done > 0 && (size_t)done <= rk_topology_node_count(t) &&
        json_array_size(servers) == rk_topology_node_count(t))
        load = rk_load_from_json(json_object_get(doc, "load"), &err);
    for (json_int_t i = 0; load && i < done; i++) {
        const json_t *sv = json_array_get(servers, (size_t)i);
        m->tallies[i] = (tally){
            .scanned = count_of(sv, "keys_scanned"),
            .sampled = count_of(sv, "keys_sampled"),
            .bytes = count_of(sv, "bytes_sampled"),
            .misplaced = count_of(sv, "misplaced_sampled"),
            .failed = count_of(sv, "keys_failed"),
            .counted = count_of(sv, "keys_counted"),
            .hits = json_real_value(json_object_get(sv, "requests_estimate")) * m->rate,
            .bytes_sq =
                m->rate < 1
                    ? pow(json_number_value(json_object_get(sv, "bytes_error")) * m->rate, 2) /
                          (1 - m->rate)
                    : 0,
        };
        resume_top(&m->tallies[i], sv);
    }
    if (load) {
        rk_load_free(m->load);
        m->load = load;
        m->first = (uint32_t)done;
        m->seconds_done = json_real_value(json_object_get(doc, "seconds"));
        fprintf(stderr, "ringkeeper measure: resuming from %s: %u of %zu servers done\n",
                m->partial, m->first, rk_topology_node_count(t));
    }
    json_decref(doc);
}
