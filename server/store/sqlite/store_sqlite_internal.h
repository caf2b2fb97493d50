/* store_sqlite_internal.h — what the files of the SQLite store share and no other file sees: its
 * state (rks_store), statement parameters, the connection, error, statement and transaction
 * helpers of store_sqlite_db.c, the data operations of store_reads.c and store_versions.c, and
 * the migration steps of store_migrate.c. Only the SQLite backend's store_*.c files include it. */
#ifndef RKD_STORE_SQLITE_INTERNAL_H
#define RKD_STORE_SQLITE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store_backend.h"
#include "store_sqlite.h"

/* The backend's state behind rkd_store_ops' `void *b`. */
typedef struct rks_store {
    sqlite3 *db;          /* the connection; used only under lock */
    char *path;           /* the database file, for reopening the connection */
    pthread_mutex_t lock; /* serialises use of db */
} rks_store;

/* Named parameters a statement may use; rks_statement binds those it has. */
typedef struct rks_params {
    const char *cluster; /* :cluster */
    int64_t cid;         /* :cid, clusters.id */
    int64_t v;           /* :v, a version number */
    int64_t limit;       /* :limit */
    const char *now;     /* :now, RFC 3339 */
} rks_params;

/* ---- store_sqlite_db.c: the connection, errors, statements, transactions (call with s->lock
 * held) ---- */

/* Opens a connection to `path` with `flags` (SQLITE_OPEN_NOMUTEX added) and the busy timeout. */
int rks_open_db(rks_store *s, const char *path, int flags, rk_error *err);
/* The same, read-write and creating the file, for the store's own connection. */
int rks_connect(rks_store *s, const char *path, rk_error *err);
/* The durability settings (docs/OPERATIONS.md): WAL really on (else refused), synchronous=FULL,
 * foreign keys. */
int rks_configure(rks_store *s, rk_error *err);
/* The store code for an SQLite result code. */
int rks_map_rc(int rc);
/* Sets err from the connection's last error while doing `what`; returns the code. */
int rks_db_err(rks_store *s, rk_error *err, int rc, const char *what);
/* Runs SQL without parameters or rows. */
int rks_exec(rks_store *s, const char *sql, const char *what, rk_error *err);
/* Bind a named parameter if the statement has it; SQLite result codes. */
int rks_bind_text(sqlite3_stmt *st, const char *name, const char *val);
int rks_bind_int(sqlite3_stmt *st, const char *name, int64_t val);
int rks_statement(rks_store *s, const char *sql, const rks_params *p, sqlite3_stmt **st,
                  rk_error *err);
int rks_exec_params(rks_store *s, const char *sql, const rks_params *p, const char *what,
                    rk_error *err);
int rks_int_query(rks_store *s, const char *sql, const rks_params *p, int64_t *out, rk_error *err);
/* BEGIN IMMEDIATE, on a new connection first when this one was opened read-only (the file may be
 * writable again); rks_finish commits when rc is RK_OK and rolls back otherwise. */
int rks_begin(rks_store *s, rk_error *err);
int rks_finish(rks_store *s, int rc, rk_error *err);

/* ---- store_reads.c and store_versions.c: the data operations of rkd_store_ops
 * (store_backend.h), `b` an rks_store; each takes the lock itself ---- */

int rks_get(void *b, const char *cluster, rkd_store_pick pick, int64_t v, rkd_store_version **out,
            char **doc, rk_error *err);
int rks_list(void *b, const char *cluster, size_t limit, int64_t before,
             rkd_store_version_list *out, rk_error *err);
int rks_list_clusters(void *b, size_t limit, const char *after, rkd_store_cluster_list *out,
                      rk_error *err);
int rks_publish(void *b, const rkd_store_draft *d, rkd_store_published *out, rk_error *err);
int rks_activate(void *b, const char *cluster, int64_t v, const rkd_store_activation *a,
                 const char *now, rkd_store_version **out, char **doc, rk_error *err);

/* One version by `pick` (with s->lock held): a new record without its topology, and a copy of the
 * topology text for store_domain.c to parse. */
int rks_fetch_locked(rks_store *s, rkd_store_pick pick, const rks_params *p,
                     rkd_store_version **out, char **doc, rk_error *err);

/* Inserts version v of cluster `cid` from `d` as staged (the caller's transaction). */
int rks_insert_version(rks_store *s, int64_t cid, int64_t v, const rkd_store_draft *d,
                       rk_error *err);

/* The queries of store_reads.c that the writing files share. */
extern const char rks_sql_cluster_id[];
extern const char rks_sql_max_version[];
extern const char rks_sql_active_version[];

/* ---- store_events.c: docs/API.md (policies, approvals, events) ---- */

typedef rkd_store_event_draft rks_event;

/* What an approval or an activation of a version is checked against. */
typedef struct rks_plan_state {
    char digest[RK_PLAN_DIGEST_LEN]; /* of the plan from the active version */
    char *author;                    /* the version's author, or NULL; the caller frees it */
    rkd_store_policy policy;         /* the cluster's */
} rks_plan_state;

/* Inside the caller's transaction (s->lock held): */
int rks_add_event(rks_store *s, int64_t cid, const rks_event *e, const char *now, rk_error *err);
int rks_policy_locked(rks_store *s, int64_t cid, rkd_store_policy *out, rk_error *err);
int rks_plan_locked(rks_store *s, int64_t cid, int64_t active, int64_t v, rks_plan_state *out,
                    rk_error *err);
/* The approvals an activation of v over `active` needs (rkd_store_check_approvals; none for a
 * rollout's step, `rollout` non-zero: the rollout's rules checked its approvals); the plan's
 * digest into `digest` for its event. */
int rks_gate_locked(rks_store *s, const char *cluster, int64_t cid, int64_t active, int64_t v,
                    int rollout, char digest[RK_PLAN_DIGEST_LEN], rk_error *err);

/* Sets the policy of cluster p->cid, without an event. */
int rks_policy_row(rks_store *s, const rks_params *p, const rkd_store_policy *pol, rk_error *err);
/* Records an approval of p->v by `approver` at p->now (once: approving twice is one approval). */
int rks_insert_approval(rks_store *s, const rks_params *p, const char *digest, const char *approver,
                        const char *comment, rk_error *err);

/* The operations of rkd_store_ops; each takes the lock itself. */
int rks_get_policy(void *b, const char *cluster, rkd_store_policy *out, rk_error *err);
int rks_put_policy(void *b, const char *cluster, const rkd_store_policy *p, const char *author,
                   const char *detail, const char *now, rk_error *err);
int rks_approve(void *b, const char *cluster, const rkd_store_approval_req *a, const char *now,
                rk_error *err);
int rks_list_events(void *b, const char *cluster, size_t limit, int64_t before,
                    rkd_store_event_list *out, rk_error *err);

/* ---- store_window.c: the migration window (docs/API.md) ---- */

/* Inside the caller's transaction (s->lock held), for an activation of p->v of cluster p->cid: */
/* RKD_STORE_EWINDOWOPEN while a window is open (rkd_store_check_window). */
int rks_check_window_locked(rks_store *s, const rks_params *p, rk_error *err);
/* Opens a window over p->v keeping `previous` (the version active before; 0: none, nothing
 * opens) when the cluster's policy has migration_window, or `always` (a rollout's step); `author`
 * opened it. */
int rks_open_window_locked(rks_store *s, const rks_params *p, int64_t previous, int always,
                           const char *author, rk_error *err);
/* The version an open window of p->cid keeps and its fingerprint (0 and "": none open). */
int rks_window_kept_locked(rks_store *s, const rks_params *p, int64_t *previous,
                           char fingerprint[RKD_STORE_FP_LEN], rk_error *err);
/* rkd_store_ops.finish_migration; takes the lock itself. */
int rks_finish_migration(void *b, const char *cluster, const char *author, const char *comment,
                         const char *now, rkd_store_version **out, char **doc, rk_error *err);

/* ---- store_docs.c: a cluster's documents (rkd_store_ops get_doc, put_doc; each takes the lock
 * itself) ---- */
/* Inside the caller's transaction (s->lock held): the caller's gate of an activation of cluster
 * p->cid over `active` (NULL: none), run over the policy, the open window, the rollout document
 * and a publish's `ring` (NULL: an activation), as rkd_store_run_gate. */
int rks_gate_view_locked(rks_store *s, const rks_params *p, int64_t active, const rk_ring *ring,
                         const rkd_store_gate *gate, double *moved, rk_error *err);

int rks_get_doc(void *b, rkd_store_doc_kind kind, const char *cluster, char **doc, int64_t *rev,
                rk_error *err);
int rks_put_doc(void *b, rkd_store_doc_kind kind, const char *cluster, const char *doc, int64_t rev,
                const rkd_store_doc_event *e, const char *now, rk_error *err);

/* ---- store_import.c: copying a whole store (rkd_store_ops list_approvals, adopt_id, import;
 * each takes the lock itself) ---- */

int rks_list_approvals(void *b, const char *cluster, rkd_store_approval_list *out, rk_error *err);
int rks_adopt_id(void *b, const char *id, rk_error *err);
int rks_import(void *b, const rkd_store_history *h, char *const *docs, rk_error *err);

/* ---- store_migrate.c: the schema ---- */

typedef struct rks_migration rks_migration;

typedef struct rks_migration_set {
    rks_migration *items; /* sorted by number: 1, 2, 3 ... */
    size_t count;         /* how many; at least one once loaded */
} rks_migration_set;

/* Reads the names of the NNNN_*.sql files in `dir`, before any database is touched. */
int rks_migrations_load(const char *dir, rks_migration_set *set, rk_error *err);
void rks_migrations_free(rks_migration_set *set);
/* Refuses a database that is not ours or newer than `set`, before anything is written. */
int rks_check_identity(rks_store *s, const char *path, const rks_migration_set *set, rk_error *err);
/* Refuses (RKD_STORE_ENOTRK) anything but a ringkeeper database with a schema: for reading one. */
int rks_check_ours(rks_store *s, const char *path, rk_error *err);
/* Applies the migrations the database lacks, in order, each in its own transaction. */
int rks_migrate(rks_store *s, const rks_migration_set *set, rk_error *err);
/* rkd_store_ops.store_id: the id in table meta (migration 0003); `b` an rks_store. */
int rks_store_id(void *b, char id[RKD_STORE_ID_LEN], rk_error *err);
/* Gives the database a new random store id; one from before migration 0003 has none and gets it
 * when a server opens it. Call without s->lock (a backup's own connection). */
int rks_renew_store_id(rks_store *s, rk_error *err);

#endif /* RKD_STORE_SQLITE_INTERNAL_H */
