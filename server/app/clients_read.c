/* clients_read.c — the table of clients (clients.c) read: a cluster's report, stragglers first,
 * with its summary from the tallies, and the Prometheus gauges of every cluster. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clients_internal.h"

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

#define AGENT_PREFIX "ringkeeper-agent/"
#define PROXY_MAX    16 /* a proxy's name, its NUL */

/* The proxy a `ringkeeper agent` drives, from its User-Agent ("ringkeeper-agent/0.2.0 (nginx)
 * libringkeeper/0.2.0", docs/AGENT.md), into out; NULL for any other client. Only a short
 * lowercase word is taken: the header is the client's own to say. */
static const char *proxy_of(const char *agent, char out[PROXY_MAX])
{
    const char *open = agent && strncmp(agent, AGENT_PREFIX, strlen(AGENT_PREFIX)) == 0
                           ? strstr(agent, " (")
                           : NULL;
    size_t n = open ? strspn(open + 2, "abcdefghijklmnopqrstuvwxyz") : 0;
    if (!n || n >= PROXY_MAX || open[2 + n] != ')')
        return NULL;
    memcpy(out, open + 2, n);
    out[n] = '\0';
    return out;
}

/* `replica`: this replica's name while the fleet is shared (then every client names the replica
 * that serves it), else NULL. */
static json_t *client_json(const entry *e, const char *replica)
{
    char at[32], proxy[PROXY_MAX];
    rfc3339(at, e->seen_at);
    json_t *c = json_pack("{s:s,s:o,s:o,s:o,s:s?,s:s?,s:s?,s:s*,s:s?,s:s}", "id", e->id, "held",
                          version_json(e->held), "offered", version_json(e->offered), "refused",
                          version_json(e->refused), "reason", e->reason, "addr",
                          e->addr[0] ? e->addr : NULL, "user_agent", e->agent, "proxy",
                          proxy_of(e->agent, proxy), "token", e->token[0] ? e->token : NULL,
                          "last_seen", at);
    const char *by = e->replica ? e->replica : replica;
    if (c && by && json_object_set_new(c, "replica", json_string(by)) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* Appends the ids of `g` at `version` to `list`, in the order they were last seen, until it holds
 * `limit`: 0, or -1 when out of memory. */
static int append_version(json_t *list, const group *g, int64_t version, size_t limit,
                          const char *replica)
{
    for (const entry *e = g->ids.head; e && json_array_size(list) < limit; e = e->peers.next) {
        if (e->held == version && json_array_append_new(list, client_json(e, replica)) != 0)
            return -1;
    }
    return 0;
}

/* The first `limit` ids of `g`, stragglers first: the lowest version held, then the one seen
 * longest ago. NULL when out of memory. */
static json_t *list_json(const group *g, size_t limit, const char *replica)
{
    const tally *held = &g->tallies[T_HELD];
    json_t *list = json_array();
    for (size_t r = 0; list && r < held->n && json_array_size(list) < limit; r++) {
        if (append_version(list, g, held->rows[r].version, limit, replica) != 0) {
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
    rkd_clients_expire(t, rkd_clients_mono_ms());
    group *g = rkd_clients_group(t, cluster);
    if (!g || rkd_clients_fresh_tallies(g) == 0)
        doc = json_pack("{s:o,s:o}", "clients", g ? list_json(g, limit, t->replica) : json_array(),
                        "summary", summary_json(g, active));
    pthread_mutex_unlock(&t->mu);
    return doc;
}

/* One gauge's rows: the versions of field k in each cluster, none (0) as `none`, or left out. */
static void gauge_rows(rkd_clients *t, FILE *f, const char *name, int k, const char *none)
{
    for (group *g = t->groups; g; g = g->next) {
        const tally_row *rows = rkd_clients_fresh_tallies(g) == 0 ? g->tallies[k].rows : NULL;
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
    rkd_clients_expire(t, rkd_clients_mono_ms());
    gauge_rows(t, f, "ringkeeper_clients", T_HELD, "none");
    fputs("# HELP ringkeeper_clients_refusing Clients seen in the last expiry that refuse a "
          "version, by cluster and that version.\n# TYPE ringkeeper_clients_refusing gauge\n",
          f);
    gauge_rows(t, f, "ringkeeper_clients_refusing", T_REFUSED, NULL);
    pthread_mutex_unlock(&t->mu);
}
