/* clients.c — the table of RK-Client ids (docs/API.md): a hash of (cluster, id) for the record
 * on every ring request, and two lists in the order ids were last seen, one of all ids (for the
 * expiry and the total cap) and one per cluster (for the cluster's cap and its listing), and per
 * cluster the counts by version, kept as ids change so that a summary costs the versions, not the
 * ids. One mutex: a record is a hash lookup, a few pointer moves and three binary searches, so the
 * ring's threads wait on it for microseconds; a listing walks one cluster's ids under it until it
 * has its `limit` (at most the per-cluster cap). The report and the gauges are clients_read.c's,
 * the records shared with other replicas clients_share.c's. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <xxhash.h>

#include "clients_internal.h"

int64_t rkd_clients_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

rkd_clients *rkd_clients_new(const rkd_clients_limits *limits)
{
    rkd_clients *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->limits.max_total = limits && limits->max_total ? limits->max_total : RKD_CLIENTS_MAX_TOTAL;
    t->limits.max_per_cluster =
        limits && limits->max_per_cluster ? limits->max_per_cluster : RKD_CLIENTS_MAX_PER_CLUSTER;
    t->limits.expiry_s = limits && limits->expiry_s ? limits->expiry_s : RKD_CLIENTS_EXPIRY_S;
    t->n_buckets = 16;
    while (t->n_buckets < t->limits.max_total)
        t->n_buckets *= 2;
    t->buckets = calloc(t->n_buckets, sizeof *t->buckets);
    if (!t->buckets) {
        free(t);
        return NULL;
    }
    if (getrandom(&t->seed, sizeof t->seed, 0) != sizeof t->seed)
        t->seed = (uint64_t)rkd_clients_mono_ms() ^ (uint64_t)(uintptr_t)t; /* less hardened */
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

static void free_entries(entry *e)
{
    for (entry *next; e; e = next) {
        next = e->all.next;
        free(e->agent);
        free(e->reason);
        free(e);
    }
}

void rkd_clients_free(rkd_clients *t)
{
    if (!t)
        return;
    free_entries(t->all.head);
    free_entries(t->others.head);
    for (group *g = t->groups, *next; g; g = next) {
        next = g->next;
        for (int k = 0; k < TALLIES; k++)
            free(g->tallies[k].rows);
        free(g);
    }
    pthread_mutex_destroy(&t->mu);
    free(t->buckets);
    free(t->replica);
    free(t->tombs);
    for (size_t i = 0; i < t->n_names; i++)
        free(t->names[i]);
    free(t);
}

uint64_t rkd_clients_hash(const rkd_clients *t, const char *cluster, const char *id)
{
    char key[CLUSTER_BYTES + RK_CLIENT_ID_MAX + 1];
    size_t c = strlen(cluster) + 1, n = strlen(id);
    memcpy(key, cluster, c); /* the NUL between them: ("a", "bc") is not ("ab", "c") */
    memcpy(key + c, id, n);
    return XXH3_64bits_withSeed(key, c + n, t->seed);
}

/* ---- the lists ---- */

static lru_link *link_of(entry *e, size_t which)
{
    return (lru_link *)((char *)e + which);
}

static void unlink_from(lru_list *l, entry *e, size_t which)
{
    lru_link *k = link_of(e, which);
    *(k->prev ? &link_of(k->prev, which)->next : &l->head) = k->next;
    *(k->next ? &link_of(k->next, which)->prev : &l->tail) = k->prev;
    k->prev = k->next = NULL;
}

void rkd_clients_append(lru_list *l, entry *e, size_t which)
{
    lru_link *k = link_of(e, which);
    k->prev = l->tail;
    *(l->tail ? &link_of(l->tail, which)->next : &l->head) = e;
    l->tail = e;
}

/* Moves `e` (in `l` or in no list) to the tail of `l`: seen last. */
static void move_to_tail(lru_list *l, entry *e, size_t which)
{
    lru_link *k = link_of(e, which);
    if (k->prev || l->head == e)
        unlink_from(l, e, which);
    rkd_clients_append(l, e, which);
}

void rkd_clients_unlink(rkd_clients *t, entry *e, size_t which)
{
    if (which == PEERS)
        unlink_from(&e->group->ids, e, PEERS);
    else if (which == QUEUE && e->queued)
        unlink_from(&t->queue, e, QUEUE);
    else if (which == ALL && e->listed)
        unlink_from(e->in_others ? &t->others : &t->all, e, ALL);
    e->queued = which == QUEUE ? 0 : e->queued;
    e->listed = which == ALL ? 0 : e->listed;
}

void rkd_clients_place(rkd_clients *t, entry *e)
{
    rkd_clients_unlink(t, e, ALL);
    e->in_others = e->replica != NULL;
    rkd_clients_append(e->in_others ? &t->others : &t->all, e, ALL);
    e->listed = 1;
    move_to_tail(&e->group->ids, e, PEERS);
}

group *rkd_clients_group(rkd_clients *t, const char *cluster)
{
    for (group *g = t->groups; g; g = g->next) {
        if (strcmp(g->name, cluster) == 0)
            return g;
    }
    return NULL;
}

static void free_group(rkd_clients *t, group *g)
{
    group **link = &t->groups;
    while (*link != g)
        link = &(*link)->next;
    *link = g->next;
    for (int k = 0; k < TALLIES; k++)
        free(g->tallies[k].rows);
    free(g);
}

/* ---- counts by version ---- */

static int64_t version_in(const entry *e, int k)
{
    return k == T_HELD ? e->held : k == T_OFFERED ? e->offered : e->refused;
}

/* The index of version v's row in t, or where it would go (*found 0). */
static size_t row_of(const tally *t, int64_t v, int *found)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].version < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < t->n && t->rows[lo].version == v;
    return lo;
}

/* Counts one id more (up) or less at version v: 0, or -1 when a new row found no memory (or the
 * count to lower is missing, which only a stale tally can do). */
static int tally_add(tally *t, int64_t v, int up)
{
    int found;
    size_t i = row_of(t, v, &found);
    if (!found && !up)
        return -1;
    if (!found && t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4;
        tally_row *grown = realloc(t->rows, cap * sizeof *grown);
        if (!grown)
            return -1;
        t->rows = grown;
        t->cap = cap;
    }
    if (!found) {
        memmove(&t->rows[i + 1], &t->rows[i], (t->n++ - i) * sizeof *t->rows);
        t->rows[i] = (tally_row){v, 0};
    }
    if (up)
        t->rows[i].count++;
    else if (--t->rows[i].count == 0)
        memmove(&t->rows[i], &t->rows[i + 1], (--t->n - i) * sizeof *t->rows);
    return 0;
}

/* Past a failure the tallies wait for a recount. */
void rkd_clients_count(entry *e, int up)
{
    group *g = e->group;
    for (int k = 0; k < TALLIES && !g->stale; k++)
        g->stale = tally_add(&g->tallies[k], version_in(e, k), up) != 0;
}

int rkd_clients_fresh_tallies(group *g)
{
    if (!g->stale)
        return 0;
    g->stale = 0;
    for (int k = 0; k < TALLIES; k++)
        g->tallies[k].n = 0;
    for (entry *e = g->ids.head; e && !g->stale; e = e->peers.next)
        rkd_clients_count(e, 1);
    return g->stale ? -1 : 0;
}

void rkd_clients_drop(rkd_clients *t, entry *e)
{
    entry **link = &t->buckets[e->hash & (t->n_buckets - 1)];
    while (*link != e)
        link = &(*link)->chain;
    *link = e->chain;
    rkd_clients_share_drop(t, e);
    rkd_clients_unlink(t, e, ALL);
    rkd_clients_unlink(t, e, PEERS);
    rkd_clients_unlink(t, e, QUEUE);
    rkd_clients_count(e, 0);
    t->total--;
    if (--e->group->count == 0)
        free_group(t, e->group);
    free(e->agent);
    free(e->reason);
    free(e);
}

/* This replica's ids silent for the expiry are at the head of its list (others' expire there). */
void rkd_clients_expire(rkd_clients *t, int64_t now)
{
    int64_t ttl = (int64_t)t->limits.expiry_s * 1000;
    while (t->all.head && now - t->all.head->seen_ms >= ttl)
        rkd_clients_drop(t, t->all.head);
}

entry *rkd_clients_find(rkd_clients *t, uint64_t hash, const char *cluster, const char *id)
{
    for (entry *e = t->buckets[hash & (t->n_buckets - 1)]; e; e = e->chain) {
        if (e->hash == hash && strcmp(e->id, id) == 0 && strcmp(e->group->name, cluster) == 0)
            return e;
    }
    return NULL;
}

/* ---- what is shared with other replicas (clients_share.c writes and hears it) ---- */

void rkd_clients_queue(rkd_clients *t, entry *e)
{
    if (e->queued)
        return;
    rkd_clients_append(&t->queue, e, QUEUE);
    e->queued = 1;
}

void rkd_clients_tomb(rkd_clients *t, const char *cluster, const char *id, int64_t rev)
{
    if (t->n_tombs == t->cap_tombs) {
        size_t cap = t->cap_tombs ? 2 * t->cap_tombs : 16;
        tombstone *grown = realloc(t->tombs, cap * sizeof *grown);
        if (!grown)
            return; /* the record stays until this replica's lease expires */
        t->tombs = grown;
        t->cap_tombs = cap;
    }
    tombstone *d = &t->tombs[t->n_tombs++];
    snprintf(d->cluster, sizeof d->cluster, "%s", cluster);
    snprintf(d->id, sizeof d->id, "%s", id);
    d->rev = rev;
}

void rkd_clients_share_seen(rkd_clients *t, entry *e, int changed)
{
    if (!t->replica || (!e->replica && !changed))
        return;
    if (e->replica && !changed && time(NULL) - e->written < t->limits.expiry_s / 2)
        return;        /* another replica's record, recent: that one still counts it */
    e->replica = NULL; /* this replica's from now on, written under its lease */
    rkd_clients_queue(t, e);
}

void rkd_clients_share_drop(rkd_clients *t, entry *e)
{
    if (t->replica && !e->replica && e->rev > 0)
        rkd_clients_tomb(t, e->group->name, e->id, e->rev);
}

/* ---- recording ---- */

/* A client's text as kept: cut to `max` bytes, every byte outside 0x20..0x7e a '?' (it is shown to
 * people). NULL for NULL, or out of memory. */
static char *clean_text(const char *text, size_t max)
{
    if (!text)
        return NULL;
    size_t n = strnlen(text, max);
    char *out = malloc(n + 1);
    for (size_t i = 0; out && i < n; i++)
        out[i] = text[i] >= 0x20 && text[i] <= 0x7e ? text[i] : '?';
    if (out)
        out[n] = '\0';
    return out;
}

void rkd_clients_keep_text(char **kept, const char *text, size_t max)
{
    if (!text == !*kept && (!text || strncmp(text, *kept, max) == 0))
        return;
    free(*kept);
    *kept = clean_text(text, max); /* out of memory: none */
}

/* Makes room for one more id of `cluster`: the one seen longest ago there, or of all (this
 * replica's first), goes. */
static void make_room(rkd_clients *t, const char *cluster)
{
    group *g = rkd_clients_group(t, cluster);
    if (g && g->count >= t->limits.max_per_cluster)
        rkd_clients_drop(t, g->ids.head);
    if (t->total >= t->limits.max_total)
        rkd_clients_drop(t, t->all.head ? t->all.head : t->others.head);
}

entry *rkd_clients_insert(rkd_clients *t, uint64_t hash, const char *cluster, const char *id)
{
    make_room(t, cluster);
    group *g = rkd_clients_group(t, cluster);
    if (!g) {
        g = calloc(1, sizeof *g);
        if (!g)
            return NULL;
        snprintf(g->name, sizeof g->name, "%s", cluster);
        g->next = t->groups;
        t->groups = g;
    }
    size_t n = strlen(id) + 1;
    entry *e = calloc(1, sizeof *e + n);
    if (!e) {
        if (g->count == 0)
            free_group(t, g);
        return NULL;
    }
    memcpy(e->id, id, n);
    e->hash = hash;
    e->group = g;
    e->chain = t->buckets[hash & (t->n_buckets - 1)];
    t->buckets[hash & (t->n_buckets - 1)] = e;
    g->count++;
    t->total++;
    rkd_clients_count(e, 1);
    return e;
}

/* What a report changed of an entry: what it counts, and of that what the fleet's records carry
 * (the version held and the one refused: a version merely offered is written with the next). */
enum { COUNTS = 1, SHARED = 2 };

/* Records r in e: COUNTS and SHARED as what the report changed. */
static int update(entry *e, const rkd_client_report *r, int64_t now)
{
    int64_t held = e->held, offered = e->offered, refused = e->refused;
    rkd_clients_count(e, 0);
    e->held = r->held > 0 ? r->held : 0;
    if (r->offered > 0)
        e->offered = r->offered;
    e->refused = r->refused > 0 ? r->refused : 0;
    rkd_clients_count(e, 1);
    rkd_clients_keep_text(&e->reason, e->refused ? (r->reason ? r->reason : "") : NULL,
                          RKD_CLIENTS_REASON_MAX);
    e->seen_ms = now;
    e->seen_at = time(NULL);
    snprintf(e->addr, sizeof e->addr, "%s", r->addr ? r->addr : "");
    snprintf(e->token, sizeof e->token, "%s", r->token ? r->token : "");
    rkd_clients_keep_text(&e->agent, r->agent, RKD_CLIENTS_AGENT_MAX);
    int shared = held != e->held || refused != e->refused;
    return (shared || offered != e->offered ? COUNTS : 0) | (shared ? SHARED : 0);
}

int rkd_clients_seen(rkd_clients *t, const char *cluster, const rkd_client_report *r)
{
    const char *id = r ? r->id : NULL;
    if (!t || !cluster || strlen(cluster) >= CLUSTER_BYTES || !rk_client_id_valid(id))
        return 0;
    uint64_t hash = rkd_clients_hash(t, cluster, id);
    int64_t now = rkd_clients_mono_ms();
    pthread_mutex_lock(&t->mu);
    rkd_clients_expire(t, now);
    entry *e = rkd_clients_find(t, hash, cluster, id);
    if (e && e->token[0] && r->token && strcmp(e->token, r->token) != 0) {
        pthread_mutex_unlock(&t->mu); /* another token's id: it cannot speak for it */
        return RKD_CLIENTS_FOREIGN;
    }
    int fresh = !e;
    if (!e)
        e = rkd_clients_insert(t, hash, cluster, id);
    int changed = e ? update(e, r, now) | (fresh ? COUNTS | SHARED : 0) : 0;
    if (e) {
        rkd_clients_share_seen(t, e, changed & SHARED); /* may make it this replica's */
        rkd_clients_place(t, e);
    }
    pthread_mutex_unlock(&t->mu);
    return (changed & COUNTS) != 0;
}
