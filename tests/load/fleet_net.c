/* fleet_net.c — the fleet's polls on SLICES threads, each driving its share of libcurl's multi
 * interface through epoll and curl_multi_socket_action (curl_multi_poll costs O(its transfers) per
 * turn), and the plain requests rk_fleet asks the server (fleet.h). Its peer (fleet_peer.c) runs
 * on the same threads and connections, with plain GETs set up by peer_init. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <dirent.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fleet.h"

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time `pid` used so far, user and system, in seconds; 0 when unreadable. */
double cpu_s(long pid)
{
    char path[64], line[1024];
    unsigned long user = 0, sys = 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *in = fopen(path, "r");
    const char *after = in && fgets(line, sizeof line, in) ? strrchr(line, ')') : NULL;
    if (in)
        fclose(in);
    /* the fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
     * cmajflt utime stime */
    if (!after ||
        sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &user, &sys) != 2)
        return 0;
    return (double)(user + sys) / (double)sysconf(_SC_CLK_TCK);
}

/* The same for `pid` and its children (/proc/<pid>/task/<tid>/children of each of its threads). */
double cpu_tree_s(long pid)
{
    char path[64];
    double sum = cpu_s(pid);
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *tasks = opendir(path);
    for (struct dirent *t = tasks ? readdir(tasks) : NULL; t; t = readdir(tasks)) {
        char kids[320];
        long kid;
        snprintf(kids, sizeof kids, "/proc/%ld/task/%s/children", pid, t->d_name);
        FILE *in = t->d_name[0] != '.' ? fopen(kids, "r") : NULL;
        while (in && fscanf(in, "%ld", &kid) == 1)
            sum += cpu_s(kid);
        if (in)
            fclose(in);
    }
    if (tasks)
        closedir(tasks);
    return sum;
}

int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints when the polls were answered, `t0` the start of the wave; returns when the last was. */
double answer_times(const fleet *f, double t0)
{
    double *at = calloc((size_t)f->n, sizeof *at), last = -1;
    for (long i = 0; at && i < f->n; i++)
        at[i] = f->p[i].done_at ? f->p[i].done_at - t0 : PHASE_MAX_S;
    if (at) {
        qsort(at, (size_t)f->n, sizeof *at, by_time);
        last = at[f->n - 1];
    }
    printf("answers: the first after %.1f ms, half after %.1f ms, 99%% after %.1f ms, the last "
           "after %.1f ms\n",
           at ? at[0] * 1e3 : -1, at ? at[f->n / 2] * 1e3 : -1, at ? at[f->n * 99 / 100] * 1e3 : -1,
           last * 1e3);
    free(at);
    return last;
}

/* VmRSS of `pid` in KiB, 0 when unreadable. */
long rss_kb(long pid)
{
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *in = fopen(path, "r");
    while (in && fgets(line, sizeof line, in) && sscanf(line, "VmRSS: %ld kB", &kb) != 1)
        ;
    if (in)
        fclose(in);
    return kb;
}

/* ---- plain requests: the ring's ETag, the metrics, the clients ---- */

static size_t keep_text(char *data, size_t size, size_t n, void *arg)
{
    text *t = arg;
    size_t add = size * n;
    char *grown =
        t->len + add < (size_t)STATUS_BODY_MAX ? realloc(t->data, t->len + add + 1) : NULL;
    if (!grown)
        return 0;
    memcpy(grown + t->len, data, add);
    t->data = grown;
    t->len += add;
    t->data[t->len] = '\0';
    return add;
}

static size_t count_body(char *data, size_t size, size_t n, void *arg)
{
    (void)data;
    ((poller *)arg)->body_bytes += (long)(size * n);
    return size * n;
}

/* Keeps the ETag of the header lines into the etag `arg`. */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    etag *e = arg;
    size_t len = size * n;
    if (len > 5 && strncasecmp(data, "ETag:", 5) == 0 &&
        sscanf(data + 5, " %63[^\r\n]", e->tag) == 1 && sscanf(e->tag, "\"v%ld", &e->version) != 1)
        e->version = 0;
    return len;
}

/* `method` `path` (under --url) with `body` (or NULL): the status, the body into *out (free it),
 * the ETag into *tag (may be NULL); 0 when there was no answer. */
long request(const fleet *f, const char *method, const char *path, const char *body, text *out,
             etag *tag)
{
    char url[URL_MAX];
    long status = 0;
    etag e_tag = {0};
    snprintf(url, sizeof url, "%s%s", f->url, path);
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!e || !h)
        goto out;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_text);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &e_tag);
    if (body)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    if (curl_easy_perform(e) == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
out:
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    if (tag)
        *tag = e_tag;
    return status;
}

/* The value of the first metrics line starting with `prefix`, -1 when there is none. */
static long metric(const text *t, const char *prefix)
{
    long v = -1;
    for (const char *p = t->data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            sscanf(p + strlen(prefix), " %ld", &v);
            break;
        }
    }
    return v;
}

/* How many polls the server holds, and how many clients it counts at `version`. */
void server_counts(const fleet *f, long version, long *held, long *counted)
{
    char gauge[256];
    text t = {0};
    *held = *counted = -1;
    if (request(f, "GET", "/metrics", NULL, &t, NULL) == 200) {
        snprintf(gauge, sizeof gauge, "ringkeeper_clients{cluster=\"%s\",version=\"%ld\"}",
                 f->cluster, version);
        *held = metric(&t, "ringkeeper_long_polls_waiting");
        *counted = metric(&t, gauge);
    }
    free(t.data);
}

/* ---- the fleet ---- */

/* The options of every poll of the fleet: its bounds, where its answer goes. */
static void easy_common(poller *p, etag *got)
{
    curl_easy_setopt(p->easy, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(p->easy, CURLOPT_TIMEOUT, (long)(60 + PHASE_MAX_S));
    curl_easy_setopt(p->easy, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(p->easy, CURLOPT_NOSIGNAL, 1L); /* as the library sets it */
    curl_easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, count_body);
    curl_easy_setopt(p->easy, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(p->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(p->easy, CURLOPT_HEADERDATA, got);
    curl_easy_setopt(p->easy, CURLOPT_PRIVATE, p);
}

/* A poll's state before its request: no answer yet. */
static void poller_reset(poller *p)
{
    p->got = (etag){0};
    p->status = 0;
    p->done_at = 0;
    p->again = 0;
}

/* Sets poll `i` up as client fleet-<i> holding `tag`, waiting `wait` s, refusing `refused` (NULL:
 * none), its ETag into `got`. */
static int poll_setup(fleet *f, long i, const char *tag, int wait, const char *refused, etag *got)
{
    char url[URL_MAX], line[256];
    poller *p = &f->p[i];
    curl_slist_free_all(p->headers);
    snprintf(url, sizeof url, "%s/v1/clusters/%s/ring?wait=%d", f->url, f->cluster, wait);
    snprintf(line, sizeof line, "If-None-Match: %s", tag);
    p->headers = curl_slist_append(NULL, line);
    snprintf(line, sizeof line, "RK-Client: fleet-%ld", i);
    if (p->headers && !curl_slist_append(p->headers, line))
        return -1;
    snprintf(line, sizeof line, "RK-Refused: %s %s", refused ? refused : "", REFUSAL);
    if (p->headers && refused && !curl_slist_append(p->headers, line))
        return -1;
    if (!p->easy)
        p->easy = curl_easy_init();
    if (!p->headers || !p->easy)
        return -1;
    curl_easy_setopt(p->easy, CURLOPT_URL, url);
    easy_common(p, got);
    return 0;
}

/* The same, a fresh poll with no answer yet. */
int poller_init(fleet *f, long i, const char *tag, int wait, const char *refused)
{
    poller_reset(&f->p[i]);
    return poll_setup(f, i, tag, wait, refused, &f->p[i].got);
}

/* Poll `i` as a plain GET of `url` (the peer's, fleet_peer.c). */
int peer_init(fleet *f, long i, const char *url, const char *tag, int fresh)
{
    char line[256];
    poller *p = &f->p[i];
    poller_reset(p);
    p->body_bytes = 0;
    curl_slist_free_all(p->headers);
    snprintf(line, sizeof line, "If-None-Match: %s", tag ? tag : "");
    p->headers = tag ? curl_slist_append(NULL, line) : NULL;
    if (!p->easy)
        p->easy = curl_easy_init();
    if ((tag && !p->headers) || !p->easy)
        return -1;
    curl_easy_setopt(p->easy, CURLOPT_URL, url);
    curl_easy_setopt(p->easy, CURLOPT_FRESH_CONNECT, (long)fresh);
    easy_common(p, &p->got);
    return 0;
}

/* Step 4: poll `p`, answered 200, polls again on its connection as what it now holds says. */
static void poll_again(slice *s, poller *p)
{
    fleet *f = s->f;
    long i = p - f->p;
    int refuses = i < f->refusers;
    p->again = 1;
    p->again_got = (etag){0};
    if (poll_setup(f, i, refuses ? f->before.tag : p->got.tag, 60, refuses ? p->got.tag : NULL,
                   &p->again_got) != 0 ||
        curl_multi_add_handle(s->multi, p->easy) != CURLM_OK)
        atomic_fetch_add(&f->ended, 1); /* counted as a failure by converge */
}

/* CURLMOPT_SOCKETFUNCTION: keeps the slice's epoll set as libcurl wants to wait. */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *socketp)
{
    slice *s = arg;
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                                       (what & CURL_POLL_OUT ? EPOLLOUT : 0u),
                             .data.fd = fd};
    (void)e, (void)socketp;
    if (what == CURL_POLL_REMOVE)
        epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL); /* fails harmlessly if already closed */
    else if (epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev) != 0)
        epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

/* CURLMOPT_TIMERFUNCTION */
static int on_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    ((slice *)arg)->due = timeout_ms < 0 ? 0 : now_s() + (double)timeout_ms / 1000;
    return 0;
}

/* Waits up to `timeout_ms` for the slice's sockets (or libcurl's timeout), runs what is ready,
 * and notes the polls answered. */
static void drive(slice *s, int timeout_ms)
{
    struct epoll_event ev[256];
    int running = 0, left = 0;
    CURLMsg *m;
    double now = now_s();
    if (s->due && s->due < now + timeout_ms / 1000.0)
        timeout_ms = s->due <= now ? 0 : (int)((s->due - now) * 1000) + 1;
    int n = epoll_wait(s->ep, ev, 256, timeout_ms);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.fd == s->wake)
            continue; /* edge-triggered: slice_main sees the wave */
        int flags = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                    (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                    (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(s->multi, ev[i].data.fd, flags, &running);
    }
    if (s->due && now_s() >= s->due) {
        s->due = 0; /* before the action, which may set the next */
        curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    while ((m = curl_multi_info_read(s->multi, &left))) {
        poller *p = NULL;
        long status = 0;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&p);
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(m->easy_handle, CURLINFO_NUM_CONNECTS, &p->connects);
        curl_easy_getinfo(m->easy_handle, CURLINFO_LOCAL_PORT, &p->port);
        curl_multi_remove_handle(s->multi, m->easy_handle);
        if (p->again) { /* a poll of step 4 should be held until the fleet stops */
            atomic_store(&s->f->end_why,
                         m->data.result == CURLE_OK ? status : 1000 + (long)m->data.result);
            atomic_fetch_add(&s->f->ended, 1);
            continue;
        }
        p->done_at = now_s();
        p->status = m->data.result == CURLE_OK ? status : 1000 + (long)m->data.result;
        atomic_fetch_add(&s->f->done, 1);
        if (s->f->repoll && p->status == 200)
            poll_again(s, p);
    }
}

/* A slice's thread: opens its polls, its share of RAMP_BATCH every RAMP_EVERY_MS, adds them all
 * again at each wave, and drives them until `stop` is set or the time is up. */
static void *slice_main(void *arg)
{
    slice *s = arg;
    long added = s->from, batch = RAMP_BATCH / SLICES;
    double start = now_s(), next_batch = start;
    while (!atomic_load(&s->f->stop) && now_s() < start + 2 * PHASE_MAX_S) {
        for (long b = 0; added < s->to && b < batch && now_s() >= next_batch; b++)
            curl_multi_add_handle(s->multi, s->f->p[added++].easy);
        if (now_s() >= next_batch)
            next_batch += RAMP_EVERY_MS / 1000.0;
        if (atomic_load(&s->f->wave) != s->wave) {
            s->wave = atomic_load(&s->f->wave);
            for (long j = s->from; j < s->to; j++)
                curl_multi_add_handle(s->multi, s->f->p[j].easy);
        }
        drive(s, 10);
    }
    return NULL;
}

/* Starts the slices; 0, or -1 when one could not be. */
int slices_start(fleet *f)
{
    for (int i = 0; i < SLICES; i++) {
        slice *s = &f->s[i];
        *s = (slice){f,
                     f->n * i / SLICES,
                     f->n * (i + 1) / SLICES,
                     curl_multi_init(),
                     epoll_create1(EPOLL_CLOEXEC),
                     eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
                     atomic_load(&f->wave),
                     0,
                     0};
        struct epoll_event wake = {.events = EPOLLIN | EPOLLET, .data.fd = s->wake};
        if (s->multi) {
            /* a connection per poll, kept while its handle is out of the multi between requests
             * (the default, 4 per handle added, closes them as the handles leave) */
            curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, s->to - s->from);
            curl_multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
            curl_multi_setopt(s->multi, CURLMOPT_SOCKETDATA, s);
            curl_multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_timer);
            curl_multi_setopt(s->multi, CURLMOPT_TIMERDATA, s);
        }
        if (!s->multi || s->ep < 0 || s->wake < 0 ||
            epoll_ctl(s->ep, EPOLL_CTL_ADD, s->wake, &wake) ||
            pthread_create(&s->thread, NULL, slice_main, s) != 0) {
            curl_multi_cleanup(s->multi);
            if (s->ep >= 0)
                close(s->ep);
            if (s->wake >= 0)
                close(s->wake);
            s->multi = NULL;
            return -1;
        }
    }
    return 0;
}

/* Each slice adds its polls again, woken by its eventfd rather than its next 10 ms turn. */
int slices_wave(fleet *f)
{
    uint64_t one = 1;
    int woken = 0;
    atomic_fetch_add(&f->wave, 1);
    for (int i = 0; i < SLICES; i++)
        woken += f->s[i].multi && write(f->s[i].wake, &one, sizeof one) == sizeof one;
    return woken == SLICES ? 0 : -1;
}

/* Stops and joins the slices (their connections close), ready for the next round. */
void slices_stop(fleet *f)
{
    atomic_store(&f->stop, 1);
    for (int i = 0; i < SLICES; i++) {
        slice *s = &f->s[i];
        if (!s->multi)
            continue;
        pthread_join(s->thread, NULL);
        for (long j = s->from; j < s->to; j++)
            curl_multi_remove_handle(s->multi, f->p[j].easy); /* fine when not added */
        curl_multi_cleanup(s->multi);
        close(s->ep);
        close(s->wake);
        s->multi = NULL;
    }
    atomic_store(&f->stop, 0);
    atomic_store(&f->done, 0);
    atomic_store(&f->ended, 0);
    atomic_store(&f->end_why, 0);
}

void pollers_free(fleet *f)
{
    for (long j = 0; j < f->n; j++) {
        curl_easy_cleanup(f->p[j].easy);
        curl_slist_free_all(f->p[j].headers);
    }
}
