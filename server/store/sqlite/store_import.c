/* store_import.c — copying a whole store into the SQLite one (migrate-store): every version with
 * its own number, state and timestamps, the events, approvals, policy and migration window of a
 * cluster, written in one transaction; the approvals read back for a copy the other way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

static const char sql_approvals[] =
    "SELECT version, digest, approver, comment, created_at FROM approvals WHERE cluster_id = "
    "(SELECT id FROM clusters WHERE name = :cluster) ORDER BY version, digest, approver";
static const char sql_state[] = "UPDATE versions SET state = :state, activated_at = :at WHERE "
                                "cluster_id = :cid AND version = :v";
static const char sql_window[] =
    "INSERT INTO migration_windows (cluster_id, version, previous, opened_at, opened_by) VALUES "
    "(:cid, :v, :previous, :now, :author)";

static void copy_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *text = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", text ? (const char *)text : "");
}

static int row_to_approval(sqlite3_stmt *st, rkd_store_approval *a, rk_error *err)
{
    a->version = sqlite3_column_int64(st, 0);
    copy_text(a->digest, sizeof a->digest, st, 1);
    copy_text(a->created_at, sizeof a->created_at, st, 4);
    int rc = rkd_store_strdup((const char *)sqlite3_column_text(st, 2), &a->approver, err);
    return rc ? rc : rkd_store_strdup((const char *)sqlite3_column_text(st, 3), &a->comment, err);
}

static int approvals_locked(rks_store *s, const rks_params *p, rkd_store_approval_list *out,
                            rk_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = rks_statement(s, sql_approvals, p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_DONE;
    for (; rc == RK_OK && step == SQLITE_ROW; step = sqlite3_step(st)) {
        if (out->count == cap) {
            cap = cap ? 2 * cap : 16;
            rkd_store_approval *grown = realloc(out->items, cap * sizeof *grown);
            if (!grown) {
                rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
                break;
            }
            out->items = grown;
        }
        memset(&out->items[out->count], 0, sizeof *out->items);
        rc = row_to_approval(st, &out->items[out->count++], err);
    }
    if (rc == RK_OK && step != SQLITE_DONE)
        rc = rks_db_err(s, err, step, "reading the approvals");
    sqlite3_finalize(st);
    return rc;
}

int rks_list_approvals(void *b, const char *cluster, rkd_store_approval_list *out, rk_error *err)
{
    rks_store *s = b;
    rks_params p = {.cluster = cluster};
    pthread_mutex_lock(&s->lock);
    int rc = approvals_locked(s, &p, out, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int adopt_locked(rks_store *s, const char *id, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int64_t clusters = 0;
    int rc = rks_int_query(s, "SELECT COUNT(*) FROM clusters", &(rks_params){0}, &clusters, err);
    if (rc == RK_OK && clusters > 0)
        rc = rkd_store_refuse_import("clusters", err);
    rc = rc ? rc : rks_statement(s, "UPDATE meta SET store_id = :id", &(rks_params){0}, &st, err);
    if (rc == RK_OK) {
        int step = rks_bind_text(st, ":id", id);
        step = step ? step : sqlite3_step(st);
        rc = step == SQLITE_DONE ? RK_OK : rks_db_err(s, err, step, "writing the store id");
    }
    sqlite3_finalize(st);
    return rc;
}

int rks_adopt_id(void *b, const char *id, rk_error *err)
{
    rks_store *s = b;
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : adopt_locked(s, id, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Runs `sql` with p's parameters and `text` bound to :state (state) or :author (window). */
static int exec_with(rks_store *s, const char *sql, const rks_params *p, const char *name,
                     const char *text, int64_t previous, const char *what, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = rks_statement(s, sql, p, &st, err);
    if (rc == RK_OK) {
        int step = rks_bind_text(st, name, text);
        step = step ? step : rks_bind_int(st, ":previous", previous);
        step = step ? step : rks_bind_text(st, ":at", p->now[0] ? p->now : NULL);
        step = step ? step : sqlite3_step(st);
        rc = step == SQLITE_DONE ? RK_OK : rks_db_err(s, err, step, what);
    }
    sqlite3_finalize(st);
    return rc;
}

static int import_version(rks_store *s, int64_t cid, const rkd_store_version *v, const char *doc,
                          rk_error *err)
{
    rkd_store_draft d;
    rks_params p = {.cid = cid, .v = v->version, .now = v->activated_at};
    rkd_store_draft_of(v, doc, &d);
    int rc = rks_insert_version(s, cid, v->version, &d, err);
    return rc ? rc
              : exec_with(s, sql_state, &p, ":state", rkd_store_state_name(v->state), 0,
                          "restoring the version's state", err);
}

static int import_event(rks_store *s, int64_t cid, const rkd_store_event *e, rk_error *err)
{
    rks_event re = {e->kind,   e->author,         e->version, e->from_version,
                    e->digest, e->moved_fraction, e->detail};
    return rks_add_event(s, cid, &re, e->at, err);
}

/* The window was opened by the activation of the active version: its time, and the author of its
 * last "activate" or "force" event. */
static int import_window(rks_store *s, int64_t cid, const rkd_store_history *h, rk_error *err)
{
    const rkd_store_version *active = NULL;
    const char *author = NULL;
    for (size_t i = 0; i < h->versions_count; i++)
        if (h->versions[i]->state == RKD_STATE_ACTIVE)
            active = h->versions[i];
    for (size_t i = 0; active && i < h->events_count; i++)
        if (h->events[i].version == active->version &&
            (strcmp(h->events[i].kind, "activate") == 0 || strcmp(h->events[i].kind, "force") == 0))
            author = h->events[i].author;
    if (!active)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "cluster %s: a migration window is open but no version is active",
                            h->cluster);
    rks_params p = {.cid = cid, .v = active->version, .now = active->activated_at};
    return exec_with(s, sql_window, &p, ":author", author, h->window_previous,
                     "restoring the migration window", err);
}

static int import_locked(rks_store *s, const rkd_store_history *h, char *const *docs, rk_error *err)
{
    rks_params p = {.cluster = h->cluster, .now = h->versions[0]->created_at};
    int rc = rks_int_query(s, rks_sql_cluster_id, &p, &p.cid, err);
    if (rc == RK_OK && p.cid != 0)
        rc = rkd_store_refuse_import(h->cluster, err);
    rc = rc ? rc
            : rks_exec_params(s, "INSERT INTO clusters (name, created_at) VALUES (:cluster, :now)",
                              &p, "creating the cluster", err);
    rc = rc ? rc : rks_int_query(s, rks_sql_cluster_id, &p, &p.cid, err);
    for (size_t i = 0; rc == RK_OK && i < h->versions_count; i++)
        rc = import_version(s, p.cid, h->versions[i], docs[i], err);
    for (size_t i = 0; rc == RK_OK && i < h->events_count; i++)
        rc = import_event(s, p.cid, &h->events[i], err);
    for (size_t i = 0; rc == RK_OK && i < h->approvals_count; i++) {
        const rkd_store_approval *a = &h->approvals[i];
        rks_params ap = {.cid = p.cid, .v = a->version, .now = a->created_at};
        rc = rks_insert_approval(s, &ap, a->digest, a->approver, a->comment, err);
    }
    rc = rc || !h->policy ? rc : rks_policy_row(s, &p, h->policy, err);
    return rc || !h->window_previous ? rc : import_window(s, p.cid, h, err);
}

int rks_import(void *b, const rkd_store_history *h, char *const *docs, rk_error *err)
{
    rks_store *s = b;
    pthread_mutex_lock(&s->lock);
    int rc = rks_begin(s, err);
    rc = rc ? rc : import_locked(s, h, docs, err);
    rc = rks_finish(s, rc, err);
    pthread_mutex_unlock(&s->lock);
    return rc;
}
