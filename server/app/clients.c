/* clients.c — the table of RK-Client ids (docs/API.md): a hash of (cluster, id) for the record
 * on every ring request, and two lists in the order ids were last seen, one of all ids (for the
 * expiry and the total cap) and one per cluster (for the cluster's cap and its listing), and per
 * cluster the counts by version, kept as ids change so that a summary costs the versions, not the
 * ids. One mutex: a record is a hash lookup, a few pointer moves and three binary searches, so the
 * ring's threads wait on it for microseconds; a listing walks one cluster's ids under it until it
 * has its `limit` (at most the per-cluster cap). */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <xxhash.h>

#include "clients.h"

#define CLUSTER_BYTES 64 /* a cluster name (docs/RING.md: at most 63 bytes) and its NUL */

typedef struct group group;
typedef struct entry entry;

/* An entry's place in one of the lists, and a list: seen longest ago first. */
typedef struct lru_link {
    entry *prev, *next;
} lru_link;
typedef struct lru_list {
    entry *head, *tail;
} lru_list;

/* One id of one cluster. */
struct entry {
    entry *chain;                      /* next in its hash bucket */
    lru_link all;                      /* in rkd_clients.all */
    lru_link peers;                    /* in its group's ids */
    group *group;                      /* its cluster */
    uint64_t hash;                     /* of (cluster, id) */
    int64_t held;                      /* the version it says it holds; 0: none */
    int64_t offered;                   /* the version it was last sent or confirmed; 0: none */
    int64_t refused;                   /* the version it says it refuses; 0: none */
    char *reason;                      /* owned, cut and made printable; NULL unless refused */
    int64_t seen_ms;                   /* CLOCK_MONOTONIC: for the expiry */
    time_t seen_at;                    /* CLOCK_REALTIME: for people */
    char addr[RKD_CLIENTS_ADDR_MAX];   /* numeric address, or "" */
    char token[RKD_CLIENTS_TOKEN_MAX]; /* the client token's name, or "" */
    char *agent;                       /* owned, cut and made printable; NULL when none was sent */
    char id[];                         /* the id, NUL-terminated */
};

#define ALL   offsetof(entry, all)   /* the lists' `which`: the list of all ids ... */
#define PEERS offsetof(entry, peers) /* ... or of a cluster's */

/* How many ids of a cluster have one version (0: none) in one of their fields. */
typedef struct tally_row {
    int64_t version;
    size_t count;
} tally_row;

/* The counts of one field of a cluster's ids: rows sorted by version, none with a count of 0. A
 * client may claim any version in its headers, so there can be a row per id, no more. */
typedef struct tally {
    tally_row *rows;
    size_t n, cap;
} tally;

enum { T_HELD, T_OFFERED, T_REFUSED, TALLIES }; /* the fields counted */

/* The ids of one cluster; freed when its last id goes. */
struct group {
    group *next;              /* in rkd_clients.groups */
    lru_list ids;             /* its ids (entry.peers) */
    size_t count;             /* how many */
    tally tallies[TALLIES];   /* their counts by version held, offered, refused */
    int stale;                /* a count found no memory: counted again when next read */
    char name[CLUSTER_BYTES]; /* the cluster */
};

struct rkd_clients {
    pthread_mutex_t mu;        /* guards everything below */
    rkd_clients_limits limits; /* with the defaults applied */
    entry **buckets;           /* hash table, n_buckets (a power of two) long */
    size_t n_buckets;          /* at least max_total: chains stay short */
    uint64_t seed;             /* random: ids chosen to collide cannot be computed offline */
    lru_list all;              /* all ids (entry.all) */
    size_t total;              /* how many */
    group *groups;             /* clusters with at least one id */
};

static int64_t mono_ms(void)
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
        t->seed = (uint64_t)mono_ms() ^ (uint64_t)(uintptr_t)t; /* still a table, less hardened */
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void rkd_clients_free(rkd_clients *t)
{
    if (!t)
        return;
    for (entry *e = t->all.head, *next; e; e = next) {
        next = e->all.next;
        free(e->agent);
        free(e->reason);
        free(e);
    }
    for (group *g = t->groups, *next; g; g = next) {
        next = g->next;
        for (int k = 0; k < TALLIES; k++)
            free(g->tallies[k].rows);
        free(g);
    }
    pthread_mutex_destroy(&t->mu);
    free(t->buckets);
    free(t);
}

static uint64_t key_hash(const rkd_clients *t, const char *cluster, const char *id)
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

/* Moves `e` (in `l` or in no list) to the tail of `l`: seen last. */
static void move_to_tail(lru_list *l, entry *e, size_t which)
{
    lru_link *k = link_of(e, which);
    if (k->prev || l->head == e)
        unlink_from(l, e, which);
    k->prev = l->tail;
    *(l->tail ? &link_of(l->tail, which)->next : &l->head) = e;
    l->tail = e;
}

static group *find_group(rkd_clients *t, const char *cluster)
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

/* Counts e in (up) or out of its cluster's tallies; past a failure they wait for a recount. */
static void count(entry *e, int up)
{
    group *g = e->group;
    for (int k = 0; k < TALLIES && !g->stale; k++)
        g->stale = tally_add(&g->tallies[k], version_in(e, k), up) != 0;
}

/* Counts g's ids again when its tallies are stale: 0, or -1 when out of memory still. */
static int fresh_tallies(group *g)
{
    if (!g->stale)
        return 0;
    g->stale = 0;
    for (int k = 0; k < TALLIES; k++)
        g->tallies[k].n = 0;
    for (entry *e = g->ids.head; e && !g->stale; e = e->peers.next)
        count(e, 1);
    return g->stale ? -1 : 0;
}

/* Forgets `e` everywhere, and its cluster with its last id. */
static void drop(rkd_clients *t, entry *e)
{
    entry **link = &t->buckets[e->hash & (t->n_buckets - 1)];
    while (*link != e)
        link = &(*link)->chain;
    *link = e->chain;
    unlink_from(&t->all, e, ALL);
    unlink_from(&e->group->ids, e, PEERS);
    count(e, 0);
    t->total--;
    if (--e->group->count == 0)
        free_group(t, e->group);
    free(e->agent);
    free(e->reason);
    free(e);
}

/* Forgets the ids silent for the expiry: they are at the head of the list of all. */
static void expire(rkd_clients *t, int64_t now)
{
    int64_t ttl = (int64_t)t->limits.expiry_s * 1000;
    while (t->all.head && now - t->all.head->seen_ms >= ttl)
        drop(t, t->all.head);
}

static entry *find(rkd_clients *t, uint64_t hash, const char *cluster, const char *id)
{
    for (entry *e = t->buckets[hash & (t->n_buckets - 1)]; e; e = e->chain) {
        if (e->hash == hash && strcmp(e->id, id) == 0 && strcmp(e->group->name, cluster) == 0)
            return e;
    }
    return NULL;
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

/* Replaces *kept with `text` as kept, unless it is that already. */
static void keep_text(char **kept, const char *text, size_t max)
{
    if (!text == !*kept && (!text || strncmp(text, *kept, max) == 0))
        return;
    free(*kept);
    *kept = clean_text(text, max); /* out of memory: none */
}

/* Makes room for one more id of `cluster`: the one seen longest ago there, or of all, goes. */
static void make_room(rkd_clients *t, const char *cluster)
{
    group *g = find_group(t, cluster);
    if (g && g->count >= t->limits.max_per_cluster)
        drop(t, g->ids.head);
    if (t->total >= t->limits.max_total)
        drop(t, t->all.head);
}

/* A new entry of `cluster` in the table, NULL when out of memory. */
static entry *insert(rkd_clients *t, uint64_t hash, const char *cluster, const char *id)
{
    make_room(t, cluster);
    group *g = find_group(t, cluster);
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
    count(e, 1);
    return e;
}

/* Sets what `e` was seen with, and moves it to the tails (seen last). */
/* Records r in e: non-zero when what the report counts changed. */
static int update(rkd_clients *t, entry *e, const rkd_client_report *r, int64_t now)
{
    int64_t held = e->held, offered = e->offered, refused = e->refused;
    count(e, 0);
    e->held = r->held > 0 ? r->held : 0;
    if (r->offered > 0)
        e->offered = r->offered;
    e->refused = r->refused > 0 ? r->refused : 0;
    count(e, 1);
    keep_text(&e->reason, e->refused ? (r->reason ? r->reason : "") : NULL, RKD_CLIENTS_REASON_MAX);
    e->seen_ms = now;
    e->seen_at = time(NULL);
    snprintf(e->addr, sizeof e->addr, "%s", r->addr ? r->addr : "");
    snprintf(e->token, sizeof e->token, "%s", r->token ? r->token : "");
    keep_text(&e->agent, r->agent, RKD_CLIENTS_AGENT_MAX);
    move_to_tail(&t->all, e, ALL);
    move_to_tail(&e->group->ids, e, PEERS);
    return held != e->held || offered != e->offered || refused != e->refused;
}

int rkd_clients_seen(rkd_clients *t, const char *cluster, const rkd_client_report *r)
{
    const char *id = r ? r->id : NULL;
    if (!t || !cluster || strlen(cluster) >= CLUSTER_BYTES || !rk_client_id_valid(id))
        return 0;
    uint64_t hash = key_hash(t, cluster, id);
    int64_t now = mono_ms();
    pthread_mutex_lock(&t->mu);
    expire(t, now);
    entry *e = find(t, hash, cluster, id);
    if (e && e->token[0] && r->token && strcmp(e->token, r->token) != 0) {
        pthread_mutex_unlock(&t->mu); /* another token's id: it cannot speak for it */
        return RKD_CLIENTS_FOREIGN;
    }
    int fresh = !e;
    if (!e)
        e = insert(t, hash, cluster, id);
    int changed = e && (update(t, e, r, now) || fresh);
    pthread_mutex_unlock(&t->mu);
    return changed;
}

/* ---- reading ---- */

/* "2026-12-01T05:02:20Z" */
static void rfc3339(char out[32], time_t when)
{
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A version as JSON: null for none. */
static json_t *version_json(int64_t v)
{
    return v > 0 ? json_integer((json_int_t)v) : json_null();
}

static json_t *client_json(const entry *e)
{
    char at[32];
    rfc3339(at, e->seen_at);
    return json_pack("{s:s,s:o,s:o,s:o,s:s?,s:s?,s:s?,s:s?,s:s}", "id", e->id, "held",
                     version_json(e->held), "offered", version_json(e->offered), "refused",
                     version_json(e->refused), "reason", e->reason, "addr",
                     e->addr[0] ? e->addr : NULL, "user_agent", e->agent, "token",
                     e->token[0] ? e->token : NULL, "last_seen", at);
}

/* Appends the ids of `g` at `version` to `list`, in the order they were last seen, until it holds
 * `limit`: 0, or -1 when out of memory. */
static int append_version(json_t *list, const group *g, int64_t version, size_t limit)
{
    for (const entry *e = g->ids.head; e && json_array_size(list) < limit; e = e->peers.next) {
        if (e->held == version && json_array_append_new(list, client_json(e)) != 0)
            return -1;
    }
    return 0;
}

/* The first `limit` ids of `g`, stragglers first: the lowest version held, then the one seen
 * longest ago. NULL when out of memory. */
static json_t *list_json(const group *g, size_t limit)
{
    const tally *held = &g->tallies[T_HELD];
    json_t *list = json_array();
    for (size_t r = 0; list && r < held->n && json_array_size(list) < limit; r++) {
        if (append_version(list, g, held->rows[r].version, limit) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* How many ids have a version: the one asked about, and none. */
typedef struct counts {
    size_t at, none;
} counts;

/* {"<version>": count, ...} of the versions of field k in `g` (none left out), with the counts of
 * `version` and of none in *c. NULL when out of memory. */
static json_t *versions_json(const group *g, int k, int64_t version, counts *c)
{
    const tally_row *rows = g ? g->tallies[k].rows : NULL;
    size_t n = g ? g->tallies[k].n : 0;
    json_t *by = json_object();
    *c = (counts){0, 0};
    for (size_t i = 0; by && i < n; i++) {
        char v[24];
        snprintf(v, sizeof v, "%lld", (long long)rows[i].version);
        c->at += rows[i].version == version ? rows[i].count : 0;
        c->none += rows[i].version == 0 ? rows[i].count : 0;
        if (rows[i].version > 0 &&
            json_object_set_new(by, v, json_integer((json_int_t)rows[i].count)) != 0) {
            json_decref(by);
            by = NULL;
        }
    }
    return by;
}

/* converged: at least one id, and all hold the active version. */
static json_t *summary_json(const group *g, int64_t active)
{
    counts held, offered, refused;
    size_t total = g ? g->count : 0;
    json_t *by_held = versions_json(g, T_HELD, active, &held);
    json_t *by_offered = versions_json(g, T_OFFERED, active, &offered);
    json_t *by_refused = versions_json(g, T_REFUSED, active, &refused);
    return json_pack("{s:o,s:o,s:o,s:I,s:I,s:o,s:b,s:I}", "by_version", by_held,
                     "offered_by_version", by_offered, "refusing_by_version", by_refused, "none",
                     (json_int_t)held.none, "refusing", (json_int_t)refused.at, "active",
                     version_json(active), "converged", active > 0 && total && held.at == total,
                     "total", (json_int_t)total);
}

json_t *rkd_clients_json(rkd_clients *t, const char *cluster, int64_t active, size_t limit)
{
    json_t *doc = NULL;
    pthread_mutex_lock(&t->mu);
    expire(t, mono_ms());
    group *g = find_group(t, cluster);
    if (!g || fresh_tallies(g) == 0)
        doc = json_pack("{s:o,s:o}", "clients", g ? list_json(g, limit) : json_array(), "summary",
                        summary_json(g, active));
    pthread_mutex_unlock(&t->mu);
    return doc;
}

/* One gauge's rows: the versions of field k in each cluster, none (0) as `none`, or left out. */
static void gauge_rows(rkd_clients *t, FILE *f, const char *name, int k, const char *none)
{
    for (group *g = t->groups; g; g = g->next) {
        const tally_row *rows = fresh_tallies(g) == 0 ? g->tallies[k].rows : NULL;
        size_t n = rows ? g->tallies[k].n : 0;
        for (size_t i = 0; i < n; i++) {
            if (rows[i].version > 0)
                fprintf(f, "%s{cluster=\"%s\",version=\"%lld\"} %zu\n", name, g->name,
                        (long long)rows[i].version, rows[i].count);
            else if (none)
                fprintf(f, "%s{cluster=\"%s\",version=\"%s\"} %zu\n", name, g->name, none,
                        rows[i].count);
        }
    }
}

void rkd_clients_metrics(rkd_clients *t, FILE *f)
{
    fputs("# HELP ringkeeper_clients Clients (RK-Client ids) seen in the last expiry, by cluster "
          "and the version they hold (none: no ring yet).\n# TYPE ringkeeper_clients gauge\n",
          f);
    pthread_mutex_lock(&t->mu);
    expire(t, mono_ms());
    gauge_rows(t, f, "ringkeeper_clients", T_HELD, "none");
    fputs("# HELP ringkeeper_clients_refusing Clients seen in the last expiry that refuse a "
          "version, by cluster and that version.\n# TYPE ringkeeper_clients_refusing gauge\n",
          f);
    gauge_rows(t, f, "ringkeeper_clients_refusing", T_REFUSED, NULL);
    pthread_mutex_unlock(&t->mu);
}
