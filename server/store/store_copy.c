/* store_copy.c — rkd_store_copy(): a whole store into another through store.h alone, so it works
 * between any two backends; each cluster is read whole, written with rkd_store_import, and read
 * back from both sides to be compared version for version. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store_copy.h"

/* A cluster as read from the source; owns what rkd_store_history points to. */
typedef struct history {
    rkd_store_history h;
    rkd_store_version **versions;
    rkd_store_event_list events; /* oldest first once read */
    rkd_store_approval_list approvals;
    rkd_store_policy policy;
} history;

static void history_free(history *c)
{
    for (size_t i = 0; c->versions && i < c->h.versions_count; i++)
        rkd_store_version_free(c->versions[i]);
    free(c->versions);
    rkd_store_event_list_free(&c->events);
    rkd_store_approval_list_free(&c->approvals);
}

/* Versions 1..latest, each with its topology; the open window from the active one. */
static int read_versions(rkd_store *s, const rkd_store_cluster *cl, history *c, rk_error *err)
{
    c->versions = calloc((size_t)cl->latest_version, sizeof *c->versions);
    if (!c->versions)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    int rc = RK_OK;
    for (int64_t v = 1; rc == RK_OK && v <= cl->latest_version; v++) {
        rc = rkd_store_get(s, cl->name, v, &c->versions[v - 1], err);
        c->h.versions_count = (size_t)v;
    }
    for (size_t i = 0; rc == RK_OK && i < c->h.versions_count; i++)
        if (c->versions[i]->state == RKD_STATE_ACTIVE) {
            rkd_store_version *active = NULL;
            rc = rkd_store_get_active(s, cl->name, &active, err);
            c->h.window_previous = rc ? 0 : active->previous;
            rkd_store_version_free(active);
        }
    return rc;
}

/* Every event, oldest first (pages come newest first). */
static int read_events(rkd_store *s, const char *cluster, history *c, rk_error *err)
{
    int64_t before = 0;
    int rc = RK_OK;
    do {
        rkd_store_event_list page = {0};
        rc = rkd_store_list_events(s, cluster, RKD_STORE_LIST_MAX, before, &page, err);
        size_t n = c->events.count + page.count;
        rkd_store_event *all = rc ? NULL : realloc(c->events.items, (n ? n : 1) * sizeof *all);
        if (rc == RK_OK && !all)
            rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        if (rc != RK_OK) {
            rkd_store_event_list_free(&page);
            break;
        }
        memcpy(all + c->events.count, page.items, page.count * sizeof *all);
        c->events.items = all;
        c->events.count = n;
        before = page.next_before;
        free(page.items); /* the strings moved into c->events */
    } while (before > 0);
    for (size_t i = 0; rc == RK_OK && i < c->events.count / 2; i++) {
        rkd_store_event t = c->events.items[i];
        c->events.items[i] = c->events.items[c->events.count - 1 - i];
        c->events.items[c->events.count - 1 - i] = t;
    }
    return rc;
}

static int read_history(rkd_store *s, const rkd_store_cluster *cl, history *c, rk_error *err)
{
    c->h.cluster = cl->name;
    int rc = read_versions(s, cl, c, err);
    rc = rc ? rc : read_events(s, cl->name, c, err);
    rc = rc ? rc : rkd_store_list_approvals(s, cl->name, &c->approvals, err);
    rc = rc ? rc : rkd_store_get_policy(s, cl->name, &c->policy, err);
    c->h.versions = c->versions;
    c->h.events = c->events.items;
    c->h.events_count = c->events.count;
    c->h.approvals = c->approvals.items;
    c->h.approvals_count = c->approvals.count;
    /* a policy ever set is copied; one never set stays the defaults, stored nowhere */
    for (size_t i = 0; i < c->events.count; i++)
        if (strcmp(c->events.items[i].kind, "policy") == 0)
            c->h.policy = &c->policy;
    return rc;
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The topology's document as a publish stores it (compact JSON); NULL when out of memory. */
static char *document(const rkd_store_version *v)
{
    json_t *j = rk_topology_to_json(v->topology);
    char *doc = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return doc;
}

/* The first field in which a and b differ, or NULL. */
static const char *difference(const rkd_store_version *a, const rkd_store_version *b)
{
    char *da = document(a), *db = document(b);
    const char *what = !da || !db                                      ? "document (out of memory)"
                       : strcmp(da, db) != 0                           ? "document"
                       : strcmp(a->fingerprint, b->fingerprint) != 0   ? "fingerprint"
                       : a->state != b->state                          ? "state"
                       : strcmp(a->created_at, b->created_at) != 0     ? "created_at"
                       : strcmp(a->activated_at, b->activated_at) != 0 ? "activated_at"
                       : !same_str(a->author, b->author)               ? "author"
                       : !same_str(a->comment, b->comment)             ? "comment"
                       : a->hash != b->hash || a->points != b->points  ? "hash or points"
                       : strcmp(a->store_id, b->store_id) != 0         ? "store id"
                       : a->previous != b->previous                    ? "migration window"
                                                                       : NULL;
    free(da);
    free(db);
    return what;
}

/* Reads every version of the copy back and compares it with the source's, and the counts. */
static int verify(rkd_store *to, const history *c, rk_error *err)
{
    int rc = RK_OK;
    for (size_t i = 0; rc == RK_OK && i < c->h.versions_count; i++) {
        rkd_store_version *got = NULL;
        const rkd_store_version *want = c->versions[i];
        rc = rkd_store_get(to, c->h.cluster, want->version, &got, err);
        const char *what = rc ? NULL : difference(want, got);
        if (what)
            rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                              "verification failed: cluster %s version %lld differs in its %s",
                              c->h.cluster, (long long)want->version, what);
        rkd_store_version_free(got);
    }
    history back = {0};
    rc = rc ? rc : read_events(to, c->h.cluster, &back, err);
    rc = rc ? rc : rkd_store_list_approvals(to, c->h.cluster, &back.approvals, err);
    if (rc == RK_OK &&
        (back.events.count != c->events.count || back.approvals.count != c->approvals.count))
        rc = rk_error_set(err, RKD_STORE_ECONFLICT, NULL,
                          "verification failed: cluster %s has %zu events and %zu approvals in "
                          "the copy, %zu and %zu in the source",
                          c->h.cluster, back.events.count, back.approvals.count, c->events.count,
                          c->approvals.count);
    history_free(&back);
    return rc;
}

static int copy_cluster(rkd_store *from, rkd_store *to, const rkd_store_cluster *cl, FILE *log,
                        rkd_copy_summary *sum, rk_error *err)
{
    history c = {0};
    int rc = read_history(from, cl, &c, err);
    rc = rc ? rc : rkd_store_import(to, &c.h, err);
    rc = rc ? rc : verify(to, &c, err);
    if (rc == RK_OK) {
        sum->clusters++;
        sum->versions += c.h.versions_count;
        sum->events += c.h.events_count;
        sum->approvals += c.h.approvals_count;
        if (log)
            fprintf(log, "cluster %s: %zu versions (active %lld), %zu events, %zu approvals%s%s\n",
                    cl->name, c.h.versions_count, (long long)cl->active_version, c.h.events_count,
                    c.h.approvals_count, c.h.policy ? ", policy" : "",
                    c.h.window_previous ? ", migration window open" : "");
    }
    history_free(&c);
    return rc;
}

/* What copying each cluster needs (rkd_store_each_cluster's argument). */
typedef struct copy_run {
    rkd_store *from, *to;
    FILE *log;
    rkd_copy_summary *sum;
} copy_run;

static int copy_one(void *arg, const rkd_store_cluster *cl, rk_error *err)
{
    copy_run *run = arg;
    return copy_cluster(run->from, run->to, cl, run->log, run->sum, err);
}

int rkd_store_copy(rkd_store *from, rkd_store *to, FILE *log, rkd_copy_summary *sum, rk_error *err)
{
    copy_run run = {from, to, log, sum};
    memset(sum, 0, sizeof *sum);
    int rc = rkd_store_adopt_id(to, rkd_store_id(from), err);
    return rc ? rc : rkd_store_each_cluster(from, copy_one, &run, err);
}
