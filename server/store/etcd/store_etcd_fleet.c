/* store_etcd_fleet.c — the fleet shared between replicas on etcd (store_fleet.h; docs/ETCD.md,
 * "The fleet across replicas"). One key per client, "<prefix>/fleet/<cluster>/<c|s>/<id>" (c: the
 * clients, s: the strangers kept apart), its value the record as compact JSON with the id of the
 * handle that wrote it (so a replica's watch skips its own writes). Every replica puts its records
 * under its own lease, as long as the clients' expiry: when a replica dies its records go with the
 * lease, unless another replica has written them since (the key is then on that one's lease). A
 * replica's watch over the whole prefix keeps its table of the others' records; when the watch
 * ends it reads the prefix again in pages at one revision and watches on from there.
 *
 * Writes are batched: one txn of at most FLEET_TXN_OPS records (etcd's --max-txn-ops is 128 by
 * default), puts, and deletes each nested in a txn that compares the record's revision, so a
 * delete never takes a record another replica wrote since. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_etcd_shared.h"

#define FLEET_TXN_OPS    128  /* etcd's default --max-txn-ops */
#define FLEET_WRITERS    8    /* txns sent at once */
#define FLEET_PAGE       1000 /* keys per page of a full reading */
#define FLEET_PAUSE_MS   500  /* between the end of a watch and the next reading */
#define FLEET_KEEPALIVES 3    /* the lease is renewed this many times per ttl */

struct rke_fleet {
    rke_store *s;                        /* borrowed: the fleet lives inside it */
    char replica[RKD_FLEET_REPLICA_MAX]; /* this replica's name, in every record it writes */
    int64_t ttl;                         /* the lease's seconds */
    rkd_fleet_sink sink;                 /* the app's */
    int64_t lease;                       /* this replica's lease; writer thread only */
    struct timespec renewed;             /* when it was last renewed; writer thread only */
    char from_key[RKE_KEY_MAX];          /* "<prefix>/fleet/" */
    char *to_key;                        /* the end of its range */
    uint64_t round;                      /* full readings so far; watch thread only */
    int64_t from;                        /* the revision to watch from; watch thread only */
    pthread_t thread;                    /* runs watch_main */
    int started;                         /* the thread runs */
    atomic_int stop;                     /* set by rke_fleet_stop */
};

/* ---- Records as stored ---- */

/* 0, or -1 when the key would not fit (a prefix near its longest and an id near its longest). */
static int fleet_key(const rke_fleet *f, char key[RKE_KEY_MAX], const rkd_fleet_record *r)
{
    int n = snprintf(key, RKE_KEY_MAX, "%s%s/%c/%s", f->from_key, r->cluster,
                     r->stranger ? 's' : 'c', r->id);
    return n < 0 || n >= RKE_KEY_MAX ? -1 : 0;
}

/* The value of r as written by this replica now: a new string, NULL when out of memory. */
static char *fleet_value(const rke_fleet *f, const rkd_fleet_record *r)
{
    json_t *v = json_pack("{sIsIsIss?ss?ss?ss?sIssss}", "h", (json_int_t)r->held, "o",
                          (json_int_t)r->offered, "r", (json_int_t)r->refused, "why", r->reason,
                          "ip", r->addr, "ua", r->agent, "tok", r->token, "at",
                          (json_int_t)time(NULL), "rep", f->replica, "by", f->s->writer);
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return text;
}

/* Splits key "<from_key><cluster>/<c|s>/<id>" into r (pointing into `copy`, a copy of it): 0, or
 * -1 for a key of another shape. */
static int parse_key(const rke_fleet *f, const char *key, char *copy, rkd_fleet_record *r)
{
    size_t skip = strlen(f->from_key);
    if (strncmp(key, f->from_key, skip) != 0)
        return -1;
    strcpy(copy, key + skip);
    char *slash = strchr(copy, '/');
    if (!slash || (slash[1] != 'c' && slash[1] != 's') || slash[2] != '/' || !slash[3])
        return -1;
    *slash = '\0';
    r->cluster = copy;
    r->stranger = slash[1] == 's';
    r->id = slash + 3;
    return 0;
}

/* Tells the sink of one key read or watched, unless this replica wrote it. */
static void heard(rke_fleet *f, const rke_kv *kv, int deleted, uint64_t round)
{
    char copy[RKE_KEY_MAX];
    rkd_fleet_record r = {.rev = kv->mod_revision, .deleted = deleted, .round = round};
    if (strlen(kv->key) >= sizeof copy || parse_key(f, kv->key, copy, &r) != 0)
        return;
    json_t *v = deleted ? NULL : rke_kv_json(kv);
    if (!deleted && (!json_is_object(v) || strcmp(rke_str(v, "by"), f->s->writer) == 0)) {
        json_decref(v); /* our own, or damaged: not a record of another replica */
        return;
    }
    if (v) {
        r.held = rke_num(v, "h");
        r.offered = rke_num(v, "o");
        r.refused = rke_num(v, "r");
        r.reason = rke_str(v, "why");
        r.addr = rke_str(v, "ip");
        r.agent = rke_str(v, "ua");
        r.token = rke_str(v, "tok");
        r.at = rke_num(v, "at");
        r.replica = rke_str(v, "rep");
    }
    f->sink.record(f->sink.arg, &r);
    json_decref(v);
}

/* ---- Reading and watching ---- */

/* Reads every record, in pages at one revision, as full reading number ++round, and sets the
 * revision to watch from. */
static int read_all(rke_fleet *f, rk_error *err)
{
    char after[RKE_KEY_MAX];
    rke_range_opts o = {.limit = FLEET_PAGE};
    snprintf(after, sizeof after, "%s", f->from_key);
    uint64_t round = ++f->round;
    int rc = RK_OK, more = 1;
    while (rc == RK_OK && more) {
        rke_kvs kvs = {0};
        rc = rke_range_with(f->s->etcd, after, f->to_key, &o, &kvs, err);
        o.revision = o.revision ? o.revision : kvs.revision;
        for (size_t i = 0; rc == RK_OK && i < kvs.count; i++) /* a page starts at the last one */
            if (strcmp(kvs.items[i].key, after) != 0)
                heard(f, &kvs.items[i], 0, round);
        more = rc == RK_OK && kvs.more && kvs.count > 1;
        if (more)
            snprintf(after, sizeof after, "%s", kvs.items[kvs.count - 1].key);
        rke_kvs_free(&kvs);
    }
    if (rc == RK_OK) {
        f->sink.read_all(f->sink.arg, round);
        f->from = o.revision + 1;
    }
    return rc;
}

static void on_change(void *arg, const rke_kv *kv, int deleted)
{
    heard(arg, kv, deleted, 0);
}

/* Watches from where the last full reading ended; reads everything again whenever the watch ends
 * (nothing is missed: at worst heard twice). */
static void *watch_main(void *arg)
{
    rke_fleet *f = arg;
    int current = 1; /* rke_fleet_share read everything before the thread started */
    while (!atomic_load(&f->stop)) {
        rk_error err;
        if (current)
            rke_watch(f->s->etcd, f->from_key, f->to_key, f->from, on_change, f, &f->stop, &err);
        for (int i = 0; i < 10 && !atomic_load(&f->stop); i++)
            nanosleep(&(struct timespec){0, FLEET_PAUSE_MS / 10 * 1000000L}, NULL);
        current = !atomic_load(&f->stop) && read_all(f, &err) == RK_OK;
    }
    return NULL;
}

/* ---- The lease ---- */

static double seconds_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static int grant(rke_fleet *f, rk_error *err)
{
    int rc = rke_lease_grant(f->s->etcd, f->ttl, &f->lease, err);
    if (rc == RK_OK)
        clock_gettime(CLOCK_MONOTONIC, &f->renewed);
    return rc;
}

/* Renews the lease when a third of its time has passed; a lease etcd no longer has is replaced
 * (*lost set: the records under it are gone). */
static int renew(rke_fleet *f, int *lost, rk_error *err)
{
    int alive;
    if (seconds_since(&f->renewed) < (double)f->ttl / FLEET_KEEPALIVES)
        return RK_OK;
    int rc = rke_lease_keepalive(f->s->etcd, f->lease, &alive, err);
    if (rc == RK_OK && alive)
        clock_gettime(CLOCK_MONOTONIC, &f->renewed);
    if (rc == RK_OK && !alive) {
        *lost = 1;
        rc = grant(f, err);
    }
    return rc;
}

/* ---- Writing ---- */

/* Adds record r to t: a put under the lease, or a delete while its revision is r->rev. */
static void add_record(rke_fleet *f, rke_txn *t, const rkd_fleet_record *r)
{
    char key[RKE_KEY_MAX];
    if (fleet_key(f, key, r) != 0)
        return; /* such a client is counted by the replica it polls only */
    if (r->deleted) {
        rke_txn_delete_if(t, key, r->rev);
        return;
    }
    char *value = fleet_value(f, r);
    if (value)
        rke_txn_put_leased(t, key, value, strlen(value), f->lease);
    t->failed |= !value;
    free(value);
}

/* Writes recs[0 .. n) (n <= FLEET_TXN_OPS) in one txn, and sets their revision. */
static int write_txn(rke_fleet *f, rkd_fleet_record *recs, size_t n, rk_error *err)
{
    rke_txn t;
    int ok, unknown;
    int64_t rev;
    rke_txn_init(&t);
    for (size_t i = 0; i < n; i++)
        add_record(f, &t, &recs[i]);
    int rc = rke_txn_commit_at(f->s->etcd, &t, &ok, &unknown, &rev, err);
    rke_txn_deinit(&t);
    for (size_t i = 0; rc == RK_OK && i < n; i++)
        recs[i].rev = recs[i].deleted ? 0 : rev;
    return rc;
}

/* One writer's share of a write: every FLEET_WRITERS-th txn from its first. */
typedef struct writer {
    rke_fleet *f;
    rkd_fleet_record *recs;
    size_t n, first;
    pthread_t thread;
    int threaded; /* runs on `thread` (else it ran on the caller's) */
    int rc;
    rk_error err;
} writer;

static void *write_share(void *arg)
{
    writer *w = arg;
    size_t step = FLEET_WRITERS * FLEET_TXN_OPS;
    w->rc = RK_OK;
    for (size_t at = w->first * FLEET_TXN_OPS; w->rc == RK_OK && at < w->n; at += step)
        w->rc = write_txn(w->f, w->recs + at, w->n - at < FLEET_TXN_OPS ? w->n - at : FLEET_TXN_OPS,
                          &w->err);
    return NULL;
}

/* etcd commits txns that arrive together in one raft round (one fsync): a cutover's records go in
 * up to FLEET_WRITERS txns at once. */
int rke_fleet_write(void *b, rkd_fleet_record *recs, size_t n, int *lost, rk_error *err)
{
    rke_store *s = b;
    rke_fleet *f = s->fleet;
    int rc = f ? renew(f, lost, err)
               : rk_error_set(err, RK_EINVAL, NULL, "the fleet is written before it is shared");
    writer w[FLEET_WRITERS];
    size_t txns = (n + FLEET_TXN_OPS - 1) / FLEET_TXN_OPS;
    size_t shares = rc == RK_OK ? (txns < FLEET_WRITERS ? txns : FLEET_WRITERS) : 0;
    for (size_t i = 0; i < shares; i++) {
        w[i] = (writer){.f = f, .recs = recs, .n = n, .first = i};
        w[i].threaded =
            i + 1 < shares && pthread_create(&w[i].thread, NULL, write_share, &w[i]) == 0;
        if (!w[i].threaded) /* the last share, or no thread: on this one */
            write_share(&w[i]);
    }
    for (size_t i = 0; i < shares; i++) {
        if (w[i].threaded)
            pthread_join(w[i].thread, NULL);
        if (w[i].rc != RK_OK && rc == RK_OK) {
            rc = w[i].rc;
            *err = w[i].err;
        }
    }
    if (rc != RK_OK && f) /* perhaps the lease expired between two renewals: ask etcd next time */
        f->renewed = (struct timespec){0, 0};
    return rc;
}

/* ---- Starting and stopping ---- */

int rke_fleet_share(void *b, const char *replica, unsigned ttl_s, const rkd_fleet_sink *sink,
                    rk_error *err)
{
    rke_store *s = b;
    if (s->fleet)
        return rk_error_set(err, RK_EINVAL, NULL, "the fleet is shared already");
    rke_fleet *f = calloc(1, sizeof *f);
    if (!f)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    f->s = s;
    snprintf(f->replica, sizeof f->replica, "%s", replica);
    f->ttl = ttl_s;
    f->sink = *sink;
    atomic_init(&f->stop, 0);
    snprintf(f->from_key, sizeof f->from_key, "%s/fleet/", s->prefix);
    f->to_key = rke_prefix_end(f->from_key);
    int rc = f->to_key ? grant(f, err) : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rc = rc ? rc : read_all(f, err);
    if (rc == RK_OK && pthread_create(&f->thread, NULL, watch_main, f) != 0)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "cannot start the fleet's watch thread");
    f->started = rc == RK_OK;
    s->fleet = f;
    return rc;
}

void rke_fleet_unshare(void *b)
{
    rke_store *s = b;
    rke_fleet *f = s->fleet;
    if (!f)
        return;
    s->fleet = NULL;
    atomic_store(&f->stop, 1);
    if (f->started)
        pthread_join(f->thread, NULL);
    free(f->to_key);
    free(f);
}
