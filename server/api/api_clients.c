/* api_clients.c — the cutover's (docs/API.md) clients: what each ring request says its client holds
 * (If-None-Match) and refuses (RK-Refused), recorded under its RK-Client id, and
 * GET /v1/clusters/{c}/clients, which lists them stragglers first with a summary. */
#include <string.h>

#include "api_internal.h"

/* A version tag of this store (or a bare one): its version, else 0; its fingerprint into fp. */
static int64_t our_version(rkd_call *c, const char *tag, int *open, char fp[RKD_STORE_FP_LEN])
{
    int64_t v = 0;
    char id[RKD_STORE_ID_LEN];
    if (!tag || rkd_parse_etag(tag, &v, open, id, fp) != 0)
        return 0;
    return !id[0] || strcmp(id, rkd_store_id(c->app->store)) == 0 ? v : 0;
}

/* RK-Refused: "<the refused ring's ETag>" <reason>. */
static void parse_refused(rkd_call *c, rkd_claim *out)
{
    char tag[RKD_ETAG_MAX], fp[RKD_STORE_FP_LEN];
    int open = 0;
    const char *s = c->req->header(c->req, "RK-Refused");
    const char *end = s && s[0] == '"' ? strchr(s + 1, '"') : NULL;
    if (!end || (size_t)(end - s) + 2 > sizeof tag)
        return;
    memcpy(tag, s, (size_t)(end - s) + 1);
    tag[end - s + 1] = '\0';
    out->refused = our_version(c, tag, &open, fp);
    if (out->refused)
        out->reason = end + 1 + strspn(end + 1, " \t");
}

rkd_claim rkd_claim_of(rkd_call *c)
{
    rkd_claim claim = {0};
    claim.held =
        our_version(c, c->req->header(c->req, "If-None-Match"), &claim.open, claim.fingerprint);
    if (!claim.held)
        claim.fingerprint[0] = '\0';
    parse_refused(c, &claim);
    return claim;
}

/* Where the call's client is recorded: with its client token, or without a token file, among the
 * clients; with a token file but without one, apart among the strangers (or nowhere when only
 * authenticated clients are recorded). A token file shows in lacks: a read without a token lacks
 * every role. */
static rkd_clients *table_of(rkd_call *c)
{
    return c->req->client_token || !c->req->lacks ? c->app->clients : c->app->strangers;
}

void rkd_client_seen(rkd_call *c, const rkd_claim *claim, int64_t offered)
{
    const char *id = c->req->header(c->req, "RK-Client");
    rkd_clients *t = table_of(c);
    if (!id || !t) /* a request without the header is not tracked */
        return;
    rkd_client_report r = {.id = id,
                           .held = claim->held,
                           .offered = offered,
                           .refused = claim->refused,
                           .reason = claim->reason,
                           .addr = c->req->addr,
                           .agent = c->req->header(c->req, "User-Agent"),
                           .token = c->req->client_token};
    int seen = rkd_clients_seen(t, c->cluster, &r);
    if (seen == RKD_CLIENTS_FOREIGN) /* another token's id: listed apart, as a stranger's */
        seen = rkd_clients_seen(c->app->strangers, c->cluster, &r) == 1;
    if (seen == 1)
        rkd_app_changed(c->app, c->cluster); /* the console's fleet panel is live */
}

/* The active version of the call's cluster, 0 when it has none, and the version an open migration
 * window keeps (0: none): 0, or -1 after answering (an unknown cluster is 404, as on every route of
 * a cluster). */
static int active_version(rkd_call *c, int64_t *active, int64_t *previous)
{
    rk_error err = {0};
    int rc = RK_OK;
    rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, &err);
    *active = e ? ((const rkd_active_doc *)e->value)->version : 0;
    *previous = e ? ((const rkd_active_doc *)e->value)->previous : 0;
    rkd_cache_release(c->app->docs, e);
    if (rc == RK_OK || rc == RKD_STORE_ENOACTIVE)
        return 0;
    rkd_fail(c, rc, &err);
    return -1;
}

/* The fleet reads from both rings while a window is open: its summary says which it keeps. */
static void set_previous(json_t *doc, int64_t previous)
{
    json_object_set_new(json_object_get(doc, "summary"), "previous",
                        previous ? json_integer(previous) : json_null());
}

void rkd_h_clients(rkd_call *c)
{
    int64_t limit = RKD_CLIENTS_LIST_DEFAULT, active = 0, previous = 0;
    if (rkd_query_int(c, "limit", 1, RKD_CLIENTS_LIST_MAX, &limit) < 0 ||
        active_version(c, &active, &previous) < 0)
        return;
    json_t *doc = rkd_clients_json(c->app->clients, c->cluster, active, (size_t)limit);
    json_t *apart = c->app->strangers
                        ? rkd_clients_json(c->app->strangers, c->cluster, active, (size_t)limit)
                        : json_null();
    set_previous(doc, previous);
    set_previous(apart, previous);
    if (doc && apart && json_object_set_new(doc, "unauthenticated", apart) == 0)
        apart = NULL;
    json_decref(apart);
    rkd_answer_json(c->resp, 200, doc);
}

/* Of one table of clients: how many ids, and how many hold version v. */
static void count_holding(rkd_clients *t, const char *cluster, int64_t v, int64_t *total,
                          int64_t *holding)
{
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)v);
    json_t *doc = t ? rkd_clients_json(t, cluster, v, 0) : NULL;
    json_t *s = json_object_get(doc, "summary");
    *total += json_integer_value(json_object_get(s, "total"));
    *holding += json_integer_value(json_object_get(json_object_get(s, "by_version"), key));
    json_decref(doc);
}

/* The ids of the first (stragglers first) clients of `doc` that do not hold `v`, as
 * "web-2 (v6), web-4 (none)", at most WAITING_NAMES of them, into out. */
#define WAITING_NAMES 5
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
        int w = snprintf(out + used, n - used, "%s%s (%s)", used ? ", " : "",
                         json_string_value(json_object_get(cl, "id")), version);
        used += w > 0 ? (size_t)w : 0;
    }
}

void rkd_fleet_waiting(rkd_app *app, const char *cluster, int64_t v, char *out, size_t n)
{
    int64_t total = 0, holding = 0;
    char names[512];
    count_holding(app->clients, cluster, v, &total, &holding);
    count_holding(app->strangers, cluster, v, &total, &holding);
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
    int64_t total = 0, holding = 0;
    count_holding(app->clients, cluster, v, &total, &holding);
    count_holding(app->strangers, cluster, v, &total, &holding);
    return v > 0 && total > 0 && holding == total;
}
