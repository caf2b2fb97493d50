/* show.c — what `ringkeeper migrate` prints: the progress of a run (a one-line bar on a
 * terminal, or a JSON line per report with -o json) and the job for people (migrate status). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrate.h"

static int bar_drawn; /* a bar line is on stderr without its newline */

double mig_job_fraction(const json_t *job, const char *phase, int64_t step)
{
    json_t *sources = json_object_get(job, "sources");
    size_t n = json_array_size(sources), done = 0, i;
    json_t *src;
    json_array_foreach(sources, i, src) done += json_is_true(json_object_get(src, "done"));
    double steps = (double)mig_int(job, "steps") + 1; /* the verify is one more */
    double at = strcmp(phase, "verify") == 0 ? steps - 1 : (double)(step - 1);
    return (at + (n ? (double)done / (double)n : 0)) / steps;
}

static void human_bytes(uint64_t b, char out[16])
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)b;
    size_t u = 0;
    while (v >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1000;
        u++;
    }
    snprintf(out, 16, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* The ETA from how fast this run's share of the job grew: a resumed run counts only its own. */
static void eta_text(mig_run *r, double secs, char eta[32])
{
    double f = mig_job_fraction(r->job, r->phase, r->step);
    snprintf(eta, 32, "-");
    if (r->fraction0 < 0)
        r->fraction0 = f;
    if (f - r->fraction0 > 0.01 && f < 1) {
        long left = (long)(secs * (1 - f) / (f - r->fraction0));
        snprintf(eta, 32, "%ld:%02ld", left / 60, left % 60);
    }
}

static void draw_bar(mig_run *r, const json_t *counters, double rate, double secs)
{
    char bytes[16], eta[32];
    human_bytes((uint64_t)mig_int(counters, "bytes"), bytes);
    eta_text(r, secs, eta);
    fprintf(stderr,
            "\r\033[Kstep %lld/%lld %s %s: %llu scanned, %llu %s, %llu present, %s, %.0f keys/s, "
            "ETA %s",
            (long long)r->step, (long long)mig_int(r->job, "steps"), r->phase, r->node,
            (unsigned long long)mig_int(counters, "scanned"),
            (unsigned long long)(strcmp(r->phase, "verify") == 0 ? mig_int(counters, "checked")
                                                                 : mig_int(counters, "copied")),
            strcmp(r->phase, "verify") == 0 ? "checked" : "copied",
            (unsigned long long)mig_int(counters, "present"), bytes, rate, eta);
    fflush(stderr);
    bar_drawn = 1;
}

static void json_line(const mig_run *r, const json_t *counters, double rate)
{
    json_t *line = json_pack(
        "{sIsssssIsIsIsIsIsIsIss}", "step", (json_int_t)r->step, "phase", r->phase, "node", r->node,
        "scanned", mig_int(counters, "scanned"), "copied", mig_int(counters, "copied"), "present",
        mig_int(counters, "present"), "skipped", mig_int(counters, "skipped"), "errors",
        mig_int(counters, "errors"), "bytes", mig_int(counters, "bytes"), "keys_per_s",
        (json_int_t)rate, "state", mig_str(r->job, "state"));
    if (line && strcmp(r->phase, "verify") == 0) {
        json_object_set_new(line, "checked", json_integer(mig_int(counters, "checked")));
        json_object_set_new(line, "mismatches",
                            json_integer(mig_int(counters, "missing") + mig_int(counters, "value") +
                                         mig_int(counters, "ttl")));
        json_object_set_new(line, "updated", json_integer(mig_int(counters, "updated")));
        json_object_set_new(line, "deleted", json_integer(mig_int(counters, "deleted")));
    }
    mig_json_line(line);
    json_decref(line);
}

void mig_json_line(const json_t *doc)
{
    char *text = doc ? rk_json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) {
        rk_cli_write_safe(stdout, text, strlen(text), RK_CLI_SAFE_JSON);
        putchar('\n');
        fflush(stdout);
    }
    free(text);
}

/* Keys per second over the last MIG_RATE_WINDOW_MS of this run, across sources and steps: the
 * oldest sample kept within the window against now, which joins the samples. */
static double recent_rate(mig_run *r, int64_t now)
{
    size_t keep = 0;
    while (keep + 1 < r->n_samples && now - r->rate_at[keep + 1].ms >= MIG_RATE_WINDOW_MS)
        keep++;
    if (keep || r->n_samples == MIG_RATE_SAMPLES) {
        keep += keep == 0; /* full: the oldest goes */
        memmove(r->rate_at, r->rate_at + keep, (r->n_samples - keep) * sizeof *r->rate_at);
        r->n_samples -= keep;
    }
    r->rate_at[r->n_samples++] = (mig_sample){now, r->run_keys};
    const mig_sample *old = &r->rate_at[0];
    return now > old->ms ? (double)(r->run_keys - old->keys) * 1000 / (double)(now - old->ms) : 0;
}

void mig_show_progress(mig_run *r, const json_t *counters)
{
    int64_t now = mig_now_ms();
    double secs = (double)(now - r->started) / 1000;
    double rate = recent_rate(r, now);
    if (r->o->json)
        json_line(r, counters, rate);
    else if (isatty(STDERR_FILENO))
        draw_bar(r, counters, rate, secs);
}

void mig_show_end(void)
{
    if (bar_drawn)
        fputc('\n', stderr);
    bar_drawn = 0;
}

static void counters_line(const char *label, const json_t *c, const char *const *names, size_t n)
{
    printf("%-10s", label);
    for (size_t i = 0; i < n; i++)
        printf(" %s=%lld", names[i], (long long)mig_int(c, names[i]));
    putchar('\n');
}

/* The listed keys of `name` ("errors", "skipped_keys", "mismatch_keys"): node, key, why. */
static void key_lines(const json_t *job, const char *name, const char *why)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(job, name), i, e)
    {
        json_t *w = json_object_get(e, why);
        char *cell = rk_cli_cell(w);
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "  %-8s %s %s%s%s", name, mig_str(e, "node"),
                          mig_str(e, "key"), *mig_str(e, "key") ? ": " : "", cell ? cell : "");
        putchar('\n');
        free(cell);
    }
}

int mig_show_job(const json_t *job)
{
    static const char *const copy[] = {"scanned", "copied",  "present", "skipped",  "bytes",
                                       "errors",  "expired", "stay",    "not_owned"};
    static const char *const verify[] = {"scanned", "checked", "matched", "skipped", "missing",
                                         "value",   "ttl",     "errors",  "expired"};
    static const char *const reasons[] = {"missing", "value",       "ttl",      "errors",
                                          "skipped", "copy_errors", "unchecked"};
    json_t *w = json_object_get(job, "worker"), *t = json_object_get(job, "throttle");
    json_t *v = json_object_get(job, "verify");
    rk_cli_print_safe(
        stdout, RK_CLI_SAFE_LINE, "job %lld: %s (%s, v%lld -> v%lld, %s), step %lld of %lld",
        (long long)mig_int(job, "id"), mig_str(job, "state"), mig_str(job, "mode"),
        (long long)mig_int(job, "from"), (long long)mig_int(job, "to"), mig_str(job, "data"),
        (long long)mig_int(job, "step"), (long long)mig_int(job, "steps"));
    putchar('\n');
    printf("throttle   %lld keys/s, %lld bytes/s (0: unlimited)\n",
           (long long)mig_int(t, "keys_per_s"), (long long)mig_int(t, "bytes_per_s"));
    rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "worker     %s%s%s",
                      json_is_object(w) ? mig_str(w, "id") : "none",
                      json_is_object(w) ? ", lease until " : "",
                      json_is_object(w) ? mig_str(w, "lease_until") : "");
    putchar('\n');
    counters_line("copy", json_object_get(job, "counters"), copy, 9);
    counters_line("verify", json_object_get(v, "counters"), verify, 9);
    char *mismatches = rk_cli_cell(json_object_get(v, "mismatches"));
    printf("mismatches %s\n", mismatches ? mismatches : "-");
    free(mismatches);
    if (json_is_object(json_object_get(v, "reasons")))
        counters_line("  by", json_object_get(v, "reasons"), reasons, 7);
    key_lines(job, "errors", "message");
    key_lines(job, "skipped_keys", "bytes");
    key_lines(job, "mismatch_keys", "reason");
    return fflush(stdout) ? RK_EXIT_FAIL : RK_EXIT_OK;
}
