/* metrics.c — ringkeeperd's counters, gauges and latency histograms, and their Prometheus text
 * exposition. Request recording takes one mutex and scans small fixed tables: no allocation on the
 * request path, and memory stays bounded whatever methods and routes clients make us see. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"
#include "ringkeeper.h"

#define MAX_SERIES   512  /* distinct (method, route, code) request series */
#define MAX_ROUTES   64   /* distinct routes with a latency histogram */
#define MAX_CLUSTERS 4096 /* distinct clusters with an active-version gauge */
#define ROUTE_BYTES  96   /* a route pattern longer than this is counted as "other" */
#define OTHER        "other"

/* Upper bounds of the latency buckets, as printed in `le` (+Inf is implicit). */
static const char *const bucket_text[] = {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
                                          "0.05",   "0.1",   "0.25",   "0.5",   "1",    "2.5",
                                          "5",      "10",    "30",     "60"};
static const double bucket_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                   0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
#define N_BUCKETS (sizeof bucket_le / sizeof bucket_le[0])

/* Methods get a label of their own; any other is "other", so clients can't mint series. */
static const char *const known_methods[] = {"GET",    "HEAD",    "POST",  "PUT",
                                            "DELETE", "OPTIONS", "PATCH", "TRACE"};

static const char *const counter_names[] = {
    [RKD_COUNT_PUBLISHES] = "ringkeeper_publishes_total",
    [RKD_COUNT_ACTIVATIONS] = "ringkeeper_activations_total",
    [RKD_COUNT_DB_ERRORS] = "ringkeeper_database_errors_total",
    [RKD_COUNT_DOC_CACHE_HITS] = "ringkeeper_document_cache_hits_total",
    [RKD_COUNT_PLAN_REFUSALS_REMEMBERED] = "ringkeeper_plan_refusals_remembered_total",
};
static const char *const counter_help[] = {
    [RKD_COUNT_PUBLISHES] = "Topology versions published.",
    [RKD_COUNT_ACTIVATIONS] = "Topology versions activated.",
    [RKD_COUNT_DB_ERRORS] = "Store calls that failed because of the database.",
    [RKD_COUNT_DOC_CACHE_HITS] = "Version documents (the ring, a version) answered from the cache.",
    [RKD_COUNT_PLAN_REFUSALS_REMEMBERED] =
        "Plans refused as too large answered from memory, not computed again.",
};
#define N_COUNTERS (sizeof counter_names / sizeof counter_names[0])

typedef struct series {
    const char *method;      /* one of known_methods or OTHER (static) */
    int status;              /* HTTP status */
    char route[ROUTE_BYTES]; /* route pattern (copied: callers' strings are borrowed) */
    uint64_t count;          /* requests */
} series;

typedef struct histogram {
    char route[ROUTE_BYTES];    /* route pattern, or OTHER once the table is full */
    uint64_t bucket[N_BUCKETS]; /* requests per bucket, not cumulative (render sums) */
    uint64_t count;             /* all requests, +Inf included */
    double sum;                 /* seconds */
} histogram;

/* The request tables; copied whole under the lock by render, so that formatting runs unlocked. */
typedef struct request_tables {
    size_t n_series;            /* used entries of series */
    series series[MAX_SERIES];  /* request counters */
    uint64_t overflow;          /* requests of series beyond MAX_SERIES */
    size_t n_hist;              /* used entries of hist */
    histogram hist[MAX_ROUTES]; /* latency per route; the last one is "other" when full */
} request_tables;

static const char *const job_states[] = {"copying",  "paused",    "verifying", "verified",
                                         "finished", "cancelled", "failed"};
static const char *const job_kinds[RKD_JOB_KINDS] = {"scanned", "copied", "present",
                                                     "skipped", "errors", "expired"};
#define N_JOB_STATES (sizeof job_states / sizeof job_states[0])

typedef struct cluster_gauge {
    char *name;                       /* cluster name (owned) */
    int64_t version;                  /* active version; 0: none seen */
    int job_state;                    /* index into job_states; -1: no job seen */
    uint64_t job_keys[RKD_JOB_KINDS]; /* the job's counters, by job_kinds */
    uint64_t job_bytes;
} cluster_gauge;

struct rkd_metrics {
    pthread_mutex_t req_lock;                 /* guards req */
    request_tables req;                       /* HTTP requests */
    pthread_mutex_t cluster_lock;             /* guards clusters, n_clusters */
    size_t n_clusters;                        /* used entries of clusters */
    cluster_gauge clusters[MAX_CLUSTERS];     /* active version per cluster */
    atomic_uint_fast64_t counter[N_COUNTERS]; /* rkd_counter values */
    atomic_int waiting;                       /* long polls held now */
};

rkd_metrics *rkd_metrics_new(void)
{
    rkd_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->req_lock, NULL);
    pthread_mutex_init(&m->cluster_lock, NULL);
    for (size_t i = 0; i < N_COUNTERS; i++)
        atomic_init(&m->counter[i], 0);
    atomic_init(&m->waiting, 0);
    return m;
}

void rkd_metrics_free(rkd_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_clusters; i++)
        free(m->clusters[i].name);
    pthread_mutex_destroy(&m->req_lock);
    pthread_mutex_destroy(&m->cluster_lock);
    free(m);
}

static const char *method_label(const char *method)
{
    for (size_t i = 0; method && i < sizeof known_methods / sizeof known_methods[0]; i++) {
        if (strcmp(method, known_methods[i]) == 0)
            return known_methods[i];
    }
    return OTHER;
}

/* A route that can't be stored whole would merge with another when cut: count it as "other". */
static const char *route_label(const char *route)
{
    if (!route || strlen(route) >= ROUTE_BYTES)
        return OTHER;
    return route;
}

/* The counter of (method, route, status), added when there is room; NULL when the table is full.
 * `method` is static, so pointers compare. */
static uint64_t *series_slot(request_tables *t, const char *method, const char *route, int status)
{
    for (size_t i = 0; i < t->n_series; i++) {
        series *s = &t->series[i];
        if (s->status == status && s->method == method && strcmp(s->route, route) == 0)
            return &s->count;
    }
    if (t->n_series == MAX_SERIES)
        return NULL;
    series *s = &t->series[t->n_series++];
    s->method = method;
    s->status = status;
    snprintf(s->route, sizeof s->route, "%s", route);
    return &s->count;
}

/* The histogram of `route`; the last slot is kept for "other" so a full table still counts. */
static histogram *hist_slot(request_tables *t, const char *route)
{
    for (size_t i = 0; i < t->n_hist; i++) {
        if (strcmp(t->hist[i].route, route) == 0)
            return &t->hist[i];
    }
    if (t->n_hist >= MAX_ROUTES - 1 && strcmp(route, OTHER) != 0)
        return hist_slot(t, OTHER);
    histogram *h = &t->hist[t->n_hist++];
    snprintf(h->route, sizeof h->route, "%s", route);
    return h;
}

static void hist_add(histogram *h, double seconds)
{
    size_t b = 0;
    while (b < N_BUCKETS && seconds > bucket_le[b])
        b++;
    if (b < N_BUCKETS)
        h->bucket[b]++;
    h->count++;
    h->sum += seconds;
}

void rkd_metrics_request(rkd_metrics *m, const char *method, const char *route, int status,
                         double seconds)
{
    if (!m)
        return;
    const char *mlabel = method_label(method);
    const char *rlabel = route_label(route);
    /* A clock step can give a negative or odd duration; it must not poison _sum. */
    if (!(seconds >= 0) || isinf(seconds))
        seconds = 0;
    pthread_mutex_lock(&m->req_lock);
    uint64_t *count = series_slot(&m->req, mlabel, rlabel, status);
    if (count)
        (*count)++;
    else
        m->req.overflow++;
    hist_add(hist_slot(&m->req, rlabel), seconds);
    pthread_mutex_unlock(&m->req_lock);
}

void rkd_metrics_count(rkd_metrics *m, rkd_counter which)
{
    if (!m || (unsigned)which >= N_COUNTERS)
        return;
    atomic_fetch_add_explicit(&m->counter[which], 1, memory_order_relaxed);
}

/* The gauges of `cluster` (cluster_lock held), added when new; NULL past MAX_CLUSTERS. */
static cluster_gauge *gauge_of(rkd_metrics *m, const char *cluster)
{
    for (size_t i = 0; i < m->n_clusters; i++) {
        if (strcmp(m->clusters[i].name, cluster) == 0)
            return &m->clusters[i];
    }
    char *name = m->n_clusters < MAX_CLUSTERS ? strdup(cluster) : NULL;
    if (!name)
        return NULL;
    m->clusters[m->n_clusters] = (cluster_gauge){.name = name, .job_state = -1};
    return &m->clusters[m->n_clusters++];
}

/* Activations are rare, so a linear scan is fine; past MAX_CLUSTERS new clusters go unreported
 * (a gauge can't be summed into "other"). */
void rkd_metrics_active_version(rkd_metrics *m, const char *cluster, int64_t version)
{
    if (!m || !cluster)
        return;
    pthread_mutex_lock(&m->cluster_lock);
    cluster_gauge *g = gauge_of(m, cluster);
    if (g)
        g->version = version;
    pthread_mutex_unlock(&m->cluster_lock);
}

void rkd_metrics_migration(rkd_metrics *m, const char *cluster, const char *state,
                           const uint64_t keys[RKD_JOB_KINDS], uint64_t bytes)
{
    size_t k = 0;
    while (m && state && k < N_JOB_STATES && strcmp(job_states[k], state) != 0)
        k++;
    if (!m || !cluster || k == N_JOB_STATES)
        return;
    pthread_mutex_lock(&m->cluster_lock);
    cluster_gauge *g = gauge_of(m, cluster);
    if (g) {
        g->job_state = (int)k;
        memcpy(g->job_keys, keys, sizeof g->job_keys);
        g->job_bytes = bytes;
    }
    pthread_mutex_unlock(&m->cluster_lock);
}

const char *rkd_metrics_job_kind(size_t i)
{
    return i < RKD_JOB_KINDS ? job_kinds[i] : NULL;
}

void rkd_metrics_waiting(rkd_metrics *m, int delta)
{
    if (!m)
        return;
    atomic_fetch_add_explicit(&m->waiting, delta, memory_order_relaxed);
}

/* ---- Rendering ---- */

/* A label value with \, " and newline escaped as the exposition format requires. */
static void put_label(FILE *f, const char *value)
{
    for (const char *p = value; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", f);
        else if (*p == '"')
            fputs("\\\"", f);
        else if (*p == '\n')
            fputs("\\n", f);
        else
            fputc(*p, f);
    }
}

static void put_header(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_requests(FILE *f, const request_tables *t)
{
    static const char name[] = "ringkeeper_http_requests_total";
    put_header(f, name, "counter", "HTTP requests answered, by method, route pattern and status.");
    for (size_t i = 0; i < t->n_series; i++) {
        const series *s = &t->series[i];
        fprintf(f, "%s{method=\"%s\",route=\"", name, s->method);
        put_label(f, s->route);
        fprintf(f, "\",code=\"%d\"} %llu\n", s->status, (unsigned long long)s->count);
    }
    if (t->overflow)
        fprintf(f, "%s{method=\"other\",route=\"other\",code=\"other\"} %llu\n", name,
                (unsigned long long)t->overflow);
}

static void render_histogram(FILE *f, const char *name, const histogram *h)
{
    uint64_t cumulative = 0;
    for (size_t b = 0; b < N_BUCKETS; b++) {
        cumulative += h->bucket[b];
        fprintf(f, "%s_bucket{route=\"", name);
        put_label(f, h->route);
        fprintf(f, "\",le=\"%s\"} %llu\n", bucket_text[b], (unsigned long long)cumulative);
    }
    fprintf(f, "%s_bucket{route=\"", name);
    put_label(f, h->route);
    fprintf(f, "\",le=\"+Inf\"} %llu\n%s_sum{route=\"", (unsigned long long)h->count, name);
    put_label(f, h->route);
    fprintf(f, "\"} %.12g\n%s_count{route=\"", h->sum, name);
    put_label(f, h->route);
    fprintf(f, "\"} %llu\n", (unsigned long long)h->count);
}

static void render_latency(FILE *f, const request_tables *t)
{
    static const char name[] = "ringkeeper_http_request_duration_seconds";
    put_header(f, name, "histogram", "Time to answer an HTTP request, by route pattern.");
    for (size_t i = 0; i < t->n_hist; i++)
        render_histogram(f, name, &t->hist[i]);
}

static void render_counters(FILE *f, rkd_metrics *m)
{
    for (size_t i = 0; i < N_COUNTERS; i++) {
        uint64_t v = atomic_load_explicit(&m->counter[i], memory_order_relaxed);
        put_header(f, counter_names[i], "counter", counter_help[i]);
        fprintf(f, "%s %llu\n", counter_names[i], (unsigned long long)v);
    }
}

static void render_clusters(FILE *f, rkd_metrics *m)
{
    static const char name[] = "ringkeeper_active_version";
    put_header(f, name, "gauge", "Active topology version, by cluster.");
    pthread_mutex_lock(&m->cluster_lock);
    for (size_t i = 0; i < m->n_clusters; i++) {
        if (!m->clusters[i].version)
            continue; /* known for its migration job only */
        fprintf(f, "%s{cluster=\"", name);
        put_label(f, m->clusters[i].name);
        fprintf(f, "\"} %lld\n", (long long)m->clusters[i].version);
    }
    pthread_mutex_unlock(&m->cluster_lock);
}

/* `name`{cluster="..."[,label="value"]} v, for one cluster. */
static void put_cluster_sample(FILE *f, const char *name, const char *cluster, const char *label,
                               const char *value, unsigned long long v)
{
    fprintf(f, "%s{cluster=\"", name);
    put_label(f, cluster);
    if (label)
        fprintf(f, "\",%s=\"%s", label, value);
    fprintf(f, "\"} %llu\n", v);
}

/* The migration jobs this server wrote or read last, per cluster (SPEC 10's metrics). */
static void render_jobs(FILE *f, rkd_metrics *m)
{
    static const char keys[] = "ringkeeper_migration_keys_total",
                      bytes[] = "ringkeeper_migration_bytes_total",
                      state[] = "ringkeeper_migration_state";
    put_header(f, keys, "counter", "Keys of the cluster's migration job, by what became of them.");
    put_header(f, bytes, "counter", "Bytes the cluster's migration job copied.");
    put_header(f, state, "gauge",
               "The state of the cluster's migration job: 1 for the one it is in.");
    pthread_mutex_lock(&m->cluster_lock);
    for (size_t i = 0; i < m->n_clusters; i++) {
        const cluster_gauge *g = &m->clusters[i];
        if (g->job_state < 0)
            continue;
        for (size_t k = 0; k < RKD_JOB_KINDS; k++)
            put_cluster_sample(f, keys, g->name, "kind", job_kinds[k], g->job_keys[k]);
        put_cluster_sample(f, bytes, g->name, NULL, NULL, g->job_bytes);
        for (size_t k = 0; k < N_JOB_STATES; k++)
            put_cluster_sample(f, state, g->name, "state", job_states[k], (int)k == g->job_state);
    }
    pthread_mutex_unlock(&m->cluster_lock);
}

static void render_waiting(FILE *f, rkd_metrics *m)
{
    static const char name[] = "ringkeeper_long_polls_waiting";
    put_header(f, name, "gauge", "Long-poll requests held waiting for an activation.");
    fprintf(f, "%s %d\n", name, atomic_load_explicit(&m->waiting, memory_order_relaxed));
}

static void render_build_info(FILE *f)
{
    static const char name[] = "ringkeeper_build_info";
    put_header(f, name, "gauge", "Always 1; the version of ringkeeperd in its label.");
    fprintf(f, "%s{version=\"%s\"} 1\n", name, rk_version());
}

/* The one number after `skip` whitespace-separated fields of `path`'s first line matching
 * `prefix` (any line when ""); -1 when unreadable. */
static double proc_field(const char *path, const char *prefix, int skip)
{
    char line[1024];
    double v = -1;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, prefix, strlen(prefix)) != 0)
            continue;
        char *p = strrchr(line, ')'); /* /proc/self/stat: the command name may hold spaces */
        p = p ? p + 1 : line + strlen(prefix);
        for (int i = 0; i < skip && p; i++)
            p = strchr(p + strspn(p, " "), ' ');
        if (!p || sscanf(p, "%lf", &v) != 1)
            v = -1;
        break;
    }
    if (f)
        fclose(f);
    return v;
}

static double open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    double n = -1; /* the listing's own descriptor is not one of ours */
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The standard process metrics of Prometheus clients, from /proc (omitted where unreadable). */
static void render_process(FILE *f)
{
    /* /proc/self/stat after the ")": field 22, starttime in clock ticks after boot, is the 20th */
    double ticks = proc_field("/proc/self/stat", "", 19),
           boot = proc_field("/proc/stat", "btime", 0);
    const struct {
        const char *name, *type, *help;
        double value;
    } rows[] = {
        {"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         proc_field("/proc/self/statm", "", 1) * (double)sysconf(_SC_PAGESIZE)},
        {"process_open_fds", "gauge", "Number of open file descriptors.", open_fds()},
        {"process_start_time_seconds", "gauge", "Start time of the process since the epoch.",
         ticks < 0 || boot < 0 ? -1 : boot + ticks / (double)sysconf(_SC_CLK_TCK)},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].value < 0)
            continue;
        put_header(f, rows[i].name, rows[i].type, rows[i].help);
        fprintf(f, "%s %.17g\n", rows[i].name, rows[i].value);
    }
}

char *rkd_metrics_render(rkd_metrics *m)
{
    /* A snapshot keeps the request lock for a memcpy, not for the whole formatting. */
    request_tables *snap = malloc(sizeof *snap);
    char *text = NULL;
    size_t len = 0;
    FILE *f = snap ? open_memstream(&text, &len) : NULL;
    if (!f) {
        free(snap);
        return NULL;
    }
    pthread_mutex_lock(&m->req_lock);
    memcpy(snap, &m->req, sizeof *snap);
    pthread_mutex_unlock(&m->req_lock);
    render_requests(f, snap);
    render_latency(f, snap);
    render_counters(f, m);
    render_clusters(f, m);
    render_jobs(f, m);
    render_waiting(f, m);
    render_build_info(f);
    render_process(f);
    int failed = ferror(f);
    free(snap);
    if (fclose(f) != 0 || failed) {
        free(text);
        return NULL;
    }
    return text;
}
