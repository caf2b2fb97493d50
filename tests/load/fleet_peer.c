/* fleet_peer.c — rk_fleet's peer (--peer-file, tests/bench/bench_fanout.sh): the fan-out of a
 * ringkeeperd activation measured against nginx, with the same fleet (its threads, its libcurl
 * multi handles driven through epoll, a connection per client):
 *   1. every client GETs the file nginx serves (PATH at URL/<its name>) on a connection of its own
 *      (the ramp of the long polls), which it keeps;
 *   2. the file is replaced, atomically (rename), by one of the same size with one digit changed
 *      and its mtime a second later: nginx's ETag ("<mtime>-<size>" in hex) changes;
 *   3. every client sends If-None-Match with the old ETag on its kept connection, all at once (the
 *      slices woken by their eventfd), and the time runs from the wave's start to the last full
 *      200 received: that is the peer of "activation to the last client holding it"; nginx's CPU
 *      (master and workers, from /proc) over the same span, per client.
 * Checks: every answer of step 1 a 200 of the file's size on a new connection; step 3's a 200
 * with the new ETag and the whole body, none on a new connection. How many of the N kept
 * connections step 3 used is printed: libcurl gives each request an idle connection of its
 * thread's, and a client answered while its thread is still starting the others' requests may
 * leave its connection to one of them (the clients of ringkeeperd take theirs the same way). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet.h"

/* Waits (PHASE_MAX_S at most) until every poll is answered; 0 when they are. */
static int all_answered(fleet *f)
{
    struct timespec pause = {0, 1000 * 1000};
    double start = now_s();
    while (atomic_load(&f->done) < f->n && now_s() < start + PHASE_MAX_S)
        nanosleep(&pause, NULL);
    return atomic_load(&f->done) == f->n ? 0 : -1;
}

/* The first digit of data[0..len) changed to another: the bytes change, their size does not. */
static void change_a_digit(char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (data[i] >= '0' && data[i] <= '9') {
            data[i] = data[i] == '9' ? '0' : (char)(data[i] + 1);
            return;
        }
    }
}

/* Step 2: `path` replaced as said above; 0, or -1 with errno's reason printed. */
static int replace_file(const char *path)
{
    char next[URL_MAX];
    struct stat st;
    snprintf(next, sizeof next, "%s.next", path);
    int in = open(path, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
    char *data = in >= 0 && fstat(in, &st) == 0 ? malloc((size_t)st.st_size + 1) : NULL;
    if (data && read(in, data, (size_t)st.st_size) == st.st_size) {
        change_a_digit(data, (size_t)st.st_size);
        struct timespec times[2] = {st.st_atim, {st.st_mtim.tv_sec + 1, st.st_mtim.tv_nsec}};
        out = open(next, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        rc = out >= 0 && write(out, data, (size_t)st.st_size) == st.st_size &&
                     futimens(out, times) == 0
                 ? 0
                 : -1;
    }
    if (out >= 0 && close(out) != 0)
        rc = -1;
    if (rc == 0 && rename(next, path) != 0)
        rc = -1;
    if (rc != 0)
        perror(path);
    free(data);
    if (in >= 0)
        close(in);
    return rc;
}

static int by_port(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* How many connections (local ports) the polls' last requests used. */
static long ports_used(const fleet *f)
{
    long *port = malloc((size_t)f->n * sizeof *port), used = 1;
    if (!port)
        return 0;
    for (long i = 0; i < f->n; i++)
        port[i] = f->p[i].port;
    qsort(port, (size_t)f->n, sizeof *port, by_port);
    for (long i = 1; i < f->n; i++)
        used += port[i] != port[i - 1];
    free(port);
    return used;
}

/* Sets every poll up (see peer_init); 0, or -1 after a FAIL line. */
static int peer_setup(fleet *f, const char *url, const char *tag, int fresh)
{
    for (long i = 0; i < f->n; i++) {
        if (peer_init(f, i, url, tag, fresh) != 0) {
            fail(&f->failures, "out of memory for client %ld", i);
            return -1;
        }
    }
    return 0;
}

/* Checks the answers of a step: a 200 of `size` bytes (with ETag `tag` unless NULL) for every
 * client, on a new connection when `fresh`, on a kept one otherwise. */
static void check_answers(fleet *f, const char *step, long size, const char *tag, int fresh)
{
    long wrong = 0, conns = 0;
    for (long i = 0; i < f->n; i++) {
        const poller *p = &f->p[i];
        wrong += p->status != 200 || p->body_bytes != size || (tag && strcmp(p->got.tag, tag));
        conns += p->connects;
    }
    printf("%s: %ld answers, %ld not a 200 of %ld bytes%s; %ld connections opened\n", step, f->n,
           wrong, size, tag ? " with the new ETag" : "", conns);
    if (wrong)
        fail(&f->failures, "%s: %ld of %ld answers were not a 200 of %ld bytes%s", step, wrong,
             f->n, size, tag ? " with the new ETag" : "");
    if (conns != (fresh ? f->n : 0))
        fail(&f->failures, "%s: %ld connections opened, want %ld", step, conns, fresh ? f->n : 0);
}

/* Steps 2 and 3, the slices running with their kept connections. */
static void revalidate(fleet *f, const char *url, const char *path, const etag *old, long size)
{
    etag now = {0};
    text t = {0};
    if (replace_file(f->peer_file) != 0 || request(f, "GET", path, NULL, &t, &now) != 200 ||
        strcmp(now.tag, old->tag) == 0) {
        fail(&f->failures, "the replaced file should be served with a new ETag (old %s, now %s)",
             old->tag, now.tag);
        free(t.data);
        return;
    }
    free(t.data);
    if (peer_setup(f, url, old->tag, 0) != 0)
        return;
    atomic_store(&f->done, 0);
    double cpu0 = cpu_tree_s(f->pid), own0 = cpu_s((long)getpid()), t0 = now_s();
    if (slices_wave(f) != 0 || all_answered(f) != 0)
        fail(&f->failures, "the revalidation: %ld of %ld clients answered", atomic_load(&f->done),
             f->n);
    double cpu = cpu_tree_s(f->pid) - cpu0, own = cpu_s((long)getpid()) - own0;
    printf("revalidation: %ld clients sent If-None-Match %s on their kept connections; the last "
           "full 200 (%s) after %.1f ms; nginx's CPU meanwhile %.0f ms, %.1f us per client (the "
           "fleet's own %.0f ms)\n",
           f->n, old->tag, now.tag, answer_times(f, t0) * 1e3, cpu * 1e3, cpu * 1e6 / f->n,
           own * 1e3);
    printf("revalidation: the %ld requests used %ld of the %ld kept connections\n", f->n,
           ports_used(f), f->n);
    check_answers(f, "revalidation", size, now.tag, 0);
}

int peer_run(fleet *f)
{
    char url[URL_MAX], path[URL_MAX];
    const char *name = strrchr(f->peer_file, '/');
    etag old = {0};
    text t = {0};
    snprintf(path, sizeof path, "/%s", name ? name + 1 : f->peer_file);
    snprintf(url, sizeof url, "%s%s", f->url, path);
    long status = request(f, "GET", path, NULL, &t, &old), size = (long)t.len;
    free(t.data);
    if (status != 200 || !old.tag[0]) {
        fail(&f->failures, "GET %s should be 200 with an ETag, got %ld", url, status);
        return 1;
    }
    if (peer_setup(f, url, NULL, 1) != 0)
        return 1;
    double t0 = now_s();
    if (slices_start(f) != 0 || all_answered(f) != 0) {
        fail(&f->failures, "the first GETs: %ld of %ld clients answered", atomic_load(&f->done),
             f->n);
        return 1;
    }
    printf("ramp: %ld clients fetched %s (%ld bytes, ETag %s) in %.1f s\n", f->n, path, size,
           old.tag, now_s() - t0);
    check_answers(f, "ramp", size, NULL, 1);
    if (!f->failures)
        revalidate(f, url, path, &old, size);
    slices_stop(f);
    return f->failures ? 1 : 0;
}
