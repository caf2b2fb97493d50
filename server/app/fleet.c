/* fleet.c — the fleet of each cluster as this server sees it (fleet.h): the reports of ring
 * requests recorded in the app's tables of clients (clients.h), and what a rollout or a migration
 * job asks of them: whether every client holds a version, and who does not yet. */
#include <stdio.h>

#include "changes.h"
#include "fleet.h"

void rkd_fleet_seen(rkd_app *app, const char *cluster, int authenticated,
                    const rkd_client_report *r)
{
    rkd_clients *t = authenticated ? app->clients : app->strangers;
    if (!r->id || !t) /* a request without the header is not tracked */
        return;
    int seen = rkd_clients_seen(t, cluster, r);
    if (seen == RKD_CLIENTS_FOREIGN) /* another token's id: listed apart, as a stranger's */
        seen = rkd_clients_seen(app->strangers, cluster, r) == 1;
    if (seen == 1)
        rkd_app_changed(app, cluster); /* the console's fleet panel is live */
}

/* Of one table of clients: how many ids, how many hold version v, and how many refuse it. */
static void count_holding(rkd_clients *t, const char *cluster, int64_t v, int64_t *total,
                          int64_t *holding, int64_t *refusing)
{
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)v);
    json_t *doc = t ? rkd_clients_json(t, cluster, v, 0) : NULL;
    json_t *s = json_object_get(doc, "summary");
    *total += json_integer_value(json_object_get(s, "total"));
    *holding += json_integer_value(json_object_get(json_object_get(s, "by_version"), key));
    *refusing +=
        json_integer_value(json_object_get(json_object_get(s, "refusing_by_version"), key));
    json_decref(doc);
}

/* count_holding of both tables. */
static void count_fleet(rkd_app *app, const char *cluster, int64_t v, int64_t *total,
                        int64_t *holding, int64_t *refusing)
{
    *total = *holding = *refusing = 0;
    count_holding(app->clients, cluster, v, total, holding, refusing);
    count_holding(app->strangers, cluster, v, total, holding, refusing);
}

/* The reason client `cl` (of a report) gives for refusing version v, or NULL when it does not. */
static const char *refusal(const json_t *cl, int64_t v)
{
    if (json_integer_value(json_object_get(cl, "refused")) != v)
        return NULL;
    const char *why = json_string_value(json_object_get(cl, "reason"));
    return why && why[0] ? why : "no reason given";
}

/* The ids of the first (stragglers first) clients of `doc` that do not hold `v`, as
 * "web-2 (v6), web-4 (none), nginx@h1 (v6, refusing it: validate: ...)", at most WAITING_NAMES of
 * them (a reason cut to WAITING_REASON bytes), into out. */
#define WAITING_NAMES  5
#define WAITING_REASON 120
static void stragglers(const json_t *doc, int64_t v, char *out, size_t n)
{
    size_t i, used = 0;
    json_t *cl;
    out[0] = '\0';
    json_array_foreach(json_object_get(doc, "clients"), i, cl)
    {
        const json_t *held = json_object_get(cl, "held");
        if (json_integer_value(held) == v || used >= n)
            continue;
        char version[24] = "none";
        if (json_is_integer(held))
            snprintf(version, sizeof version, "v%lld", (long long)json_integer_value(held));
        int w = snprintf(out + used, n - used, "%s%s (%s%s%.*s)", used ? ", " : "",
                         json_string_value(json_object_get(cl, "id")), version,
                         refusal(cl, v) ? ", refusing it: " : "", WAITING_REASON,
                         refusal(cl, v) ? refusal(cl, v) : "");
        used += w > 0 ? (size_t)w : 0;
    }
}

void rkd_fleet_waiting(rkd_app *app, const char *cluster, int64_t v, char *out, size_t n)
{
    int64_t total, holding, refusing;
    char names[1024];
    count_fleet(app, cluster, v, &total, &holding, &refusing);
    json_t *doc = rkd_clients_json(app->clients, cluster, v, WAITING_NAMES);
    stragglers(doc, v, names, sizeof names);
    json_decref(doc);
    if (total == 0)
        snprintf(out, n,
                 "hold: no client of the cluster has been seen by this server: the step waits "
                 "for at least one, and every one, to hold v%lld",
                 (long long)v);
    else
        snprintf(out, n, "hold: %lld of %lld clients hold v%lld%s%s", (long long)holding,
                 (long long)total, (long long)v, names[0] ? "; still not: " : "", names);
}

int rkd_fleet_holds(rkd_app *app, const char *cluster, int64_t v)
{
    int64_t total, holding, refusing;
    count_fleet(app, cluster, v, &total, &holding, &refusing);
    return v > 0 && total > 0 && holding == total;
}

int64_t rkd_fleet_refusing(rkd_app *app, const char *cluster, int64_t v)
{
    int64_t total, holding, refusing;
    count_fleet(app, cluster, v, &total, &holding, &refusing);
    return refusing;
}
