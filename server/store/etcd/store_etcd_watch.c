/* store_etcd_watch.c — rkd_store_ops.watch for the etcd store: one thread per replica watches every
 * cluster's head (one etcd watch over the heads' prefix) and reports the activations and finished
 * migration windows other replicas commit, so that a long poll held here wakes and this replica's
 * cached ring is replaced.
 *
 * It keeps the active number and window of every cluster it has seen. A head written by this
 * replica only updates them (the write already notified, or its caller refreshed); one written by
 * another replica with a new active number, or with the window closed, is reported. Whenever the
 * watch ends (etcd lost its leader, compacted the revisions it was to resume from, the member went
 * away), the heads are read again and every difference is reported before watching from there:
 * nothing is missed, at worst reported twice. While the heads can be neither watched nor read (no
 * quorum), the replica says its cached rings may be stale. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_etcd_shared.h"

#define RESTART_PAUSE_MS 500 /* between the end of a watch and the next try */

typedef struct seen_cluster {
    char *name;
    int64_t active;   /* its head's active number */
    int64_t previous; /* its head's open migration window (0: none) */
} seen_cluster;

struct rke_watcher {
    rke_store *s;           /* borrowed: the watcher lives inside it */
    rkd_store_remote_fn fn; /* the store-neutral layer's callback */
    void *arg;              /* its argument */
    pthread_t thread;       /* runs watch_main */
    atomic_int stop;        /* set by rke_watch_stop */
    seen_cluster *seen;     /* the active number of each cluster seen; only the thread uses it */
    size_t count, cap;      /* entries in seen, its room */
    int synced;             /* the heads were read once: differences are reported from then */
    _Atomic int64_t unseen_since; /* since when (epoch seconds) changes may be missed; 0: none */
};

/* Records cluster `name`'s head `h`; when the report is asked for (`report`) and the first reading
 * is done, reports a new active number, else a closed migration window. Out of memory: it is
 * reported and not recorded. */
static void saw(rke_watcher *w, const char *name, const seen_cluster *h, int report)
{
    size_t i = 0;
    while (i < w->count && strcmp(w->seen[i].name, name) != 0)
        i++;
    seen_cluster was = i < w->count ? w->seen[i] : (seen_cluster){NULL, 0, 0};
    report = report && w->synced;
    if (report && was.active != h->active)
        w->fn(w->arg, name, h->active, RKD_CHANGE_ACTIVATION);
    else if (report && was.previous && !h->previous)
        w->fn(w->arg, name, h->active, RKD_CHANGE_WINDOW_CLOSED);
    if (i < w->count) {
        w->seen[i].active = h->active;
        w->seen[i].previous = h->previous;
        return;
    }
    size_t cap = w->cap ? w->cap * 2 : 16;
    seen_cluster *grown = w->count == w->cap ? realloc(w->seen, cap * sizeof *grown) : w->seen;
    char *copy = grown ? strdup(name) : NULL;
    if (!copy) {
        w->seen = grown ? grown : w->seen;
        return;
    }
    w->seen = grown;
    w->cap = w->count == w->cap ? cap : w->cap;
    w->seen[w->count++] = (seen_cluster){copy, h->active, h->previous};
}

/* One head as read or watched: its cluster's name and JSON. */
static void saw_head(rke_watcher *w, const rke_kv *kv)
{
    size_t skip = strlen(w->s->prefix) + strlen("/heads/");
    json_t *head = strlen(kv->key) > skip ? rke_kv_json(kv) : NULL;
    seen_cluster h = {NULL, json_integer_value(json_object_get(head, "active")),
                      json_integer_value(json_object_get(head, "previous"))};
    if (json_is_object(head))
        saw(w, kv->key + skip, &h, strcmp(rke_str(head, "writer"), w->s->writer) != 0);
    json_decref(head);
}

static void on_change(void *arg, const rke_kv *kv, int deleted)
{
    if (!deleted) /* heads are never deleted but by hand */
        saw_head(arg, kv);
}

/* Reads every head, reporting what changed, and the revision to watch from into *from. */
static int resync(rke_watcher *w, const char *from_key, const char *to_key, int64_t *from)
{
    rke_kvs kvs = {0};
    rk_error err;
    int rc = rke_range(w->s->etcd, from_key, to_key, &kvs, &err);
    for (size_t i = 0; rc == RK_OK && i < kvs.count; i++)
        saw_head(w, &kvs.items[i]);
    *from = kvs.revision + 1;
    w->synced |= rc == RK_OK;
    rke_kvs_free(&kvs);
    return rc;
}

/* Sleeps RESTART_PAUSE_MS in slices, returning early once asked to stop. */
static void pause_unless_stopped(rke_watcher *w)
{
    for (int i = 0; i < 10 && !atomic_load(&w->stop); i++)
        nanosleep(&(struct timespec){0, RESTART_PAUSE_MS / 10 * 1000000L}, NULL);
}

static void *watch_main(void *arg)
{
    rke_watcher *w = arg;
    char from_key[RKE_KEY_MAX];
    snprintf(from_key, sizeof from_key, "%s/heads/", w->s->prefix);
    char *to_key = rke_prefix_end(from_key);
    time_t seen = time(NULL); /* when the heads were last known current: the store just opened */
    while (to_key && !atomic_load(&w->stop)) {
        int64_t from = 0;
        rk_error err;
        if (resync(w, from_key, to_key, &from) == RK_OK) {
            atomic_store(&w->unseen_since, 0);
            rke_watch(w->s->etcd, from_key, to_key, from, on_change, w, &w->stop, &err);
            seen = time(NULL);
        } else {
            atomic_store(&w->unseen_since, (int64_t)seen);
        }
        pause_unless_stopped(w);
    }
    free(to_key);
    return NULL;
}

int rke_watch_start(void *b, rkd_store_remote_fn fn, void *arg, rk_error *err)
{
    rke_store *s = b;
    rke_watcher *w = calloc(1, sizeof *w);
    if (!w)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    *w = (rke_watcher){.s = s, .fn = fn, .arg = arg};
    atomic_init(&w->stop, 0);
    atomic_init(&w->unseen_since, 0);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        free(w);
        return rk_error_set(err, RK_ENOMEM, NULL, "cannot start the etcd watch thread");
    }
    s->watcher = w;
    return RK_OK;
}

/* Stale from the end of the last watch, once the heads cannot be read either: a watch merely ended
 * (a compaction, its member gone) is resumed at once, and nothing was missed. */
int rke_watch_stale(void *b, char out[RKD_STORE_STALE_LEN])
{
    const rke_store *s = b;
    char at[RKD_STORE_TIME_LEN];
    time_t since = s->watcher ? (time_t)atomic_load(&s->watcher->unseen_since) : 0;
    if (!since)
        return 0;
    rkd_store_format_time(since, at);
    snprintf(out, RKD_STORE_STALE_LEN, "etcd unreachable since %s", at);
    return 1;
}

void rke_watch_stop(rke_watcher *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->count; i++)
        free(w->seen[i].name);
    free(w->seen);
    free(w);
}
