/* store_migrate.c — the schema of the SQLite store: finding, ordering and reading the NNNN_*.sql
 * migrations, checking that a database is ours (application_id, user_version, foreign tables)
 * before anything is written, and applying each missing migration in its own transaction. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

#define RK_APPLICATION_ID   0x52696e67 /* "Ring": marks a ringkeeper database in the file header */
#define MAX_MIGRATIONS      1000       /* files NNNN_*.sql; more means a wrong directory */
#define MAX_MIGRATION_BYTES (1 << 20)  /* one migration file */

struct rks_migration {
    int number; /* NNNN of the file name */
    char *path; /* owned */
};

/* NNNN of a file named NNNN_what.sql, or -1 for any other name. */
static int migration_number(const char *name)
{
    size_t len = strlen(name);
    if (len < 9 || name[4] != '_' || strcmp(name + len - 4, ".sql") != 0)
        return -1;
    int n = 0;
    for (int i = 0; i < 4; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        n = n * 10 + (name[i] - '0');
    }
    return n;
}

static int by_number(const void *a, const void *b)
{
    const rks_migration *x = a, *y = b;
    return (x->number > y->number) - (x->number < y->number);
}

void rks_migrations_free(rks_migration_set *set)
{
    for (size_t i = 0; i < set->count; i++)
        free(set->items[i].path);
    free(set->items);
}

static int add_migration(rks_migration_set *set, const char *dir, const char *name, int number,
                         rk_error *err)
{
    if (set->count == MAX_MIGRATIONS)
        return rk_error_set(err, RKD_STORE_EMIGRATION, NULL, "more than %d migrations in %s",
                            MAX_MIGRATIONS, dir);
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);
    if (!path)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading migrations");
    snprintf(path, len, "%s/%s", dir, name);
    set->items[set->count].number = number;
    set->items[set->count].path = path;
    set->count++;
    return RK_OK;
}

/* Numbers must run 1, 2, 3 ...: a gap or a duplicate means a broken deployment. */
static int check_numbering(const rks_migration_set *set, const char *dir, rk_error *err)
{
    if (set->count == 0)
        return rk_error_set(err, RKD_STORE_EMIGRATION, NULL, "no migrations (NNNN_name.sql) in %s",
                            dir);
    for (size_t i = 0; i < set->count; i++) {
        if (set->items[i].number != (int)i + 1)
            return rk_error_set(err, RKD_STORE_EMIGRATION, NULL,
                                "migrations in %s must be numbered 0001, "
                                "0002 ... without gaps or repeats; %s breaks that",
                                dir, set->items[i].path);
    }
    return RK_OK;
}

int rks_migrations_load(const char *dir, rks_migration_set *set, rk_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return rk_error_set(err, RKD_STORE_EMIGRATION, NULL,
                            "cannot read the migrations directory %s: %s", dir, strerror(errno));
    int rc = RK_OK;
    set->items = calloc(MAX_MIGRATIONS, sizeof *set->items);
    if (!set->items)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading migrations");
    while (rc == RK_OK) {
        struct dirent *e = readdir(d);
        if (!e)
            break;
        int number = migration_number(e->d_name);
        if (number >= 0)
            rc = add_migration(set, dir, e->d_name, number, err);
    }
    closedir(d);
    if (rc != RK_OK)
        return rc;
    qsort(set->items, set->count, sizeof *set->items, by_number);
    return check_numbering(set, dir, err);
}

static int read_file(const char *path, char **out, rk_error *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    int rc = RK_OK;
    if (!f)
        return rk_error_set(err, RKD_STORE_EMIGRATION, NULL, "cannot open %s: %s", path,
                            strerror(errno));
    buf = malloc(MAX_MIGRATION_BYTES + 1);
    if (!buf) {
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading %s", path);
        goto done;
    }
    size_t n = fread(buf, 1, MAX_MIGRATION_BYTES + 1, f);
    if (ferror(f) || n > MAX_MIGRATION_BYTES)
        rc = rk_error_set(err, RKD_STORE_EMIGRATION, NULL, "cannot read %s, or it is over %d bytes",
                          path, MAX_MIGRATION_BYTES);
    buf[n > MAX_MIGRATION_BYTES ? MAX_MIGRATION_BYTES : n] = '\0';
done:
    fclose(f);
    if (rc != RK_OK)
        free(buf);
    else
        *out = buf;
    return rc;
}

/* Runs one migration's SQL and records it, inside the caller's transaction. */
static int run_migration(rks_store *s, const rks_migration *m, const char *sql, rk_error *err)
{
    char *msg = NULL;
    char pragmas[96];
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        rk_error_set(
            err, rks_map_rc(rc) == RKD_STORE_EUNAVAILABLE ? RKD_STORE_EMIGRATION : rks_map_rc(rc),
            NULL, "migration %s failed: %s", m->path, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return err->code;
    }
    /* Integers of our own making: PRAGMA takes no bound parameters. */
    snprintf(pragmas, sizeof pragmas, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
             m->number, RK_APPLICATION_ID);
    return rks_exec(s, pragmas, "recording the schema version", err);
}

/* Applies `m` unless the database has it already (another process may have got there first:
 * the version is read again under the write lock). */
static int apply_migration(rks_store *s, const rks_migration *m, rk_error *err)
{
    char *sql = NULL;
    int64_t current = 0;
    rks_params p = {0};
    int rc = read_file(m->path, &sql, err);
    if (rc != RK_OK)
        return rc;
    rc = rks_begin(s, err);
    rc = rc ? rc : rks_int_query(s, "PRAGMA user_version", &p, &current, err);
    if (rc == RK_OK && current < m->number)
        rc = run_migration(s, m, sql, err);
    rc = rks_finish(s, rc, err);
    free(sql);
    return rc;
}

/* Reads what marks a file as ours: application_id, user_version and the count of schema objects.
 * A file that is not SQLite at all comes back as RKD_STORE_ENOTRK with a message saying so. */
static int read_marks(rks_store *s, const char *path, int64_t *app, int64_t *user, int64_t *objects,
                      rk_error *err)
{
    rks_params p = {0};
    int rc = rks_int_query(s, "PRAGMA application_id", &p, app, err);
    rc = rc ? rc : rks_int_query(s, "PRAGMA user_version", &p, user, err);
    rc = rc ? rc : rks_int_query(s, "SELECT COUNT(*) FROM sqlite_master", &p, objects, err);
    if (rc == RKD_STORE_ENOTRK)
        return rk_error_set(err, rc, NULL,
                            "%s is not a ringkeeper database (not an SQLite file at all); "
                            "point --db at a ringkeeper database or a new path",
                            path);
    return rc;
}

/* Decides, before anything is written, whether the file at `path` may be used: a ringkeeper
 * database no newer than the last migration of `set`, or an empty file. */
int rks_check_identity(rks_store *s, const char *path, const rks_migration_set *set, rk_error *err)
{
    int known = set->items[set->count - 1].number; /* rks_migrations_load refuses an empty set */
    int64_t app = 0, user = 0, objects = 0;
    int rc = read_marks(s, path, &app, &user, &objects, err);
    if (rc != RK_OK)
        return rc;
    if (app == RK_APPLICATION_ID && user > known)
        return rk_error_set(err, RKD_STORE_ETOONEW, NULL,
                            "%s has schema version %lld but this ringkeeperd "
                            "knows up to %d; run a newer ringkeeperd",
                            path, (long long)user, known);
    if (app == RK_APPLICATION_ID || (app == 0 && user == 0 && objects == 0))
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ENOTRK, NULL,
                        "%s is an SQLite database of another application "
                        "(application_id %lld, %lld schema objects); point --db at a ringkeeper "
                        "database or a new path",
                        path, (long long)app, (long long)objects);
}

/* Stricter than rks_check_identity: an empty file is not (yet) a ringkeeper database either. */
int rks_check_ours(rks_store *s, const char *path, rk_error *err)
{
    int64_t app = 0, user = 0, objects = 0;
    int rc = read_marks(s, path, &app, &user, &objects, err);
    if (rc != RK_OK || (app == RK_APPLICATION_ID && user >= 1))
        return rc;
    return rk_error_set(err, RKD_STORE_ENOTRK, NULL,
                        "%s is not a ringkeeper database (application_id %lld, schema version "
                        "%lld, %lld schema objects)",
                        path, (long long)app, (long long)user, (long long)objects);
}

/* Stops at the first migration that fails; those before it stay applied. An up-to-date schema
 * needs no write transaction, so a database file that is read-only can still be served. */
int rks_migrate(rks_store *s, const rks_migration_set *set, rk_error *err)
{
    int64_t current = 0;
    rks_params p = {0};
    int rc = rks_int_query(s, "PRAGMA user_version", &p, &current, err);
    for (size_t i = 0; rc == RK_OK && i < set->count; i++) {
        if (set->items[i].number > current)
            rc = apply_migration(s, &set->items[i], err);
    }
    return rc;
}

/* ---- The store id (migration 0003) ---- */

int rks_store_id(void *b, char id[RKD_STORE_ID_LEN], rk_error *err)
{
    rks_store *s = b;
    sqlite3_stmt *st = NULL;
    rks_params p = {0};
    pthread_mutex_lock(&s->lock);
    int rc = rks_statement(s, "SELECT store_id FROM meta WHERE id = 1", &p, &st, err);
    int step = rc == RK_OK ? sqlite3_step(st) : SQLITE_OK;
    const char *text = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (rc == RK_OK && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = rks_db_err(s, err, step, "reading the store id");
    else if (rc == RK_OK && (!text || strlen(text) != RKD_STORE_ID_LEN - 1 ||
                             strspn(text, "0123456789abcdef") != RKD_STORE_ID_LEN - 1))
        rc = rk_error_set(err, RKD_STORE_EMIGRATION, NULL,
                          "%s has no valid store id in table meta; restore it from a backup",
                          s->path);
    else if (rc == RK_OK)
        memcpy(id, text, RKD_STORE_ID_LEN);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int rks_renew_store_id(rks_store *s, rk_error *err)
{
    int64_t has_meta = 0;
    rks_params p = {0};
    int rc = rks_int_query(
        s, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", &p,
        &has_meta, err);
    if (rc != RK_OK || !has_meta)
        return rc;
    return rks_exec(s, "UPDATE meta SET store_id = lower(hex(randomblob(8))) WHERE id = 1",
                    "giving the copy a new store id", err);
}
