/* test_store_sqlite.c — the SQLite store's own (server/store/sqlite/): reopening, upgrading the
 * schema, databases it must refuse, the modes of the files it creates (and of backups), its id;
 * and the store-neutral layer over a backend that is not SQLite (store_backend.h). What every
 * backend must do alike is test_store.c's. */
#include <sqlite3.h>

#include "store_backend.h"
#include "store_fixture.h"
#include "store_sqlite.h"

/* Runs `sql` on the file at `path` directly, as another program would. */
static void raw_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static const char *raw_text(const char *path, const char *sql, char *buf, size_t cap)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return buf;
}

/* The highest NNNN of the NNNN_*.sql files in `dir`: the schema version a store opened with them
 * ends at. */
static int64_t latest_migration(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int64_t top = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        long long n = 0;
        if (sscanf(e->d_name, "%4lld_", &n) == 1 && strstr(e->d_name, ".sql"))
            top = n > top ? n : top;
    }
    closedir(d);
    assert_true(top >= 2);
    return top;
}

static void test_reopen(void **state)
{
    (void)state;
    char path[256], buf[16];
    db_path(path, sizeof path, "reopen");
    rkd_store *s = open_ok(path);
    publish(s, "r", 2, RKD_STORE_ANY, 1, RK_OK);
    publish(s, "r", 3, RKD_STORE_ANY, 0, RK_OK);
    rkd_store_close(s);
    int64_t schema = latest_migration(RK_MIGRATIONS_DIR);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), schema);

    s = open_ok(path); /* a re-applied 0001 would fail: CREATE TABLE clusters exists */
    assert_int_equal(active(s, "r"), 1);
    assert_int_equal(latest(s, "r"), 2);
    assert_int_equal(publish(s, "r", 1, 2, 0, RK_OK), 3);
    rkd_store_close(s);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), schema);
    assert_string_equal(raw_text(path, "PRAGMA journal_mode", buf, sizeof buf), "wal");
    /* Versions are immutable below the store too. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_not_equal(sqlite3_exec(db, "DELETE FROM versions", NULL, NULL, NULL), SQLITE_OK);
    assert_int_not_equal(sqlite3_exec(db, "UPDATE versions SET author = 'x'", NULL, NULL, NULL),
                         SQLITE_OK);
    sqlite3_close(db);
}

static unsigned mode_of(const char *path, const char *suffix)
{
    char name[300];
    struct stat st;
    snprintf(name, sizeof name, "%s%s", path, suffix);
    if (stat(name, &st) != 0)
        fail_msg("stat(%s) failed", name);
    return (unsigned)(st.st_mode & 07777);
}

/* Under the usual umask 022, the database, its -wal and -shm, and a backup are the owner's alone;
 * an existing database keeps the mode the operator gave it. */
static void test_file_modes(void **state)
{
    (void)state;
    char path[256], copy[300], old[256];
    mode_t saved = umask(022);
    db_path(path, sizeof path, "modes");
    rkd_store *s = open_ok(path);
    publish(s, "m", 2, RKD_STORE_ANY, 1, RK_OK);
    assert_int_equal(mode_of(path, ""), 0600);
    assert_int_equal(mode_of(path, "-wal"), 0600);
    assert_int_equal(mode_of(path, "-shm"), 0600);
    snprintf(copy, sizeof copy, "%s.backup", path);
    rk_error err = {0};
    if (rkd_sqlite_backup(path, copy, 0, &err) != RK_OK)
        fail_msg("rkd_sqlite_backup: %s", err.message);
    assert_int_equal(mode_of(copy, ""), 0600);
    rkd_store_close(s);

    db_path(old, sizeof old, "modes-existing");
    assert_int_equal(rename(copy, old), 0);
    assert_int_equal(chmod(old, 0640), 0);
    s = open_ok(old);
    assert_int_equal(mode_of(old, ""), 0640);
    rkd_store_close(s);
    umask(saved);
}

static void assert_store_id(const char *id)
{
    assert_int_equal(strlen(id), RKD_STORE_ID_LEN - 1);
    assert_int_equal(strspn(id, "0123456789abcdef"), RKD_STORE_ID_LEN - 1);
}

/* The store id is made with the database, kept across reopening, and new in a backup copy, whose
 * versions then number on from where it was taken under an id of its own. */
static void test_store_id(void **state)
{
    (void)state;
    char path[256], copy[300], id[RKD_STORE_ID_LEN], again[RKD_STORE_ID_LEN];
    db_path(path, sizeof path, "identity");
    rkd_store *s = open_ok(path);
    snprintf(id, sizeof id, "%s", rkd_store_id(s));
    assert_store_id(id);
    publish(s, "i", 2, RKD_STORE_ANY, 1, RK_OK);
    snprintf(copy, sizeof copy, "%s.backup", path);
    rk_error err = {0};
    if (rkd_sqlite_backup(path, copy, 0, &err) != RK_OK)
        fail_msg("rkd_sqlite_backup: %s", err.message);
    assert_string_equal(rkd_store_id(s), id); /* the live database keeps its own */
    rkd_store_close(s);

    s = open_ok(path);
    assert_string_equal(rkd_store_id(s), id);
    assert_string_equal(raw_text(path, "SELECT store_id FROM meta", again, sizeof again), id);
    rkd_store_close(s);

    s = open_ok(copy);
    assert_store_id(rkd_store_id(s));
    assert_string_not_equal(rkd_store_id(s), id);
    assert_int_equal(latest(s, "i"), 1);
    rkd_store_close(s);
}

static void expect_refused(const char *path, int want, const char *migrations)
{
    rk_error err = {0};
    rkd_store *s = rkd_store_open_with(path, &(rkd_store_param){"migrations", migrations}, 1, &err);
    if (s)
        fail_msg("%s opened, want %s", path, rkd_store_errname(want));
    assert_int_equal(err.code, want);
    assert_true(strlen(err.message) > 10);
}

/* A database of the first schema (0001 alone, as the first release made it) holding the rows of
 * `src`: the program of today writes only today's schema, so old rows are copied column by column.
 */
static void forge_first_schema(const char *path, const char *src)
{
    char file[512], *sql = malloc(1 << 16), pragmas[128], attach[512];
    snprintf(file, sizeof file, "%s/0001_init.sql", RK_MIGRATIONS_DIR);
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    assert_non_null(sql);
    size_t n = fread(sql, 1, (1 << 16) - 1, f);
    fclose(f);
    sql[n] = '\0';
    snprintf(pragmas, sizeof pragmas, "PRAGMA user_version = 1; PRAGMA application_id = %lld;",
             (long long)raw_int(src, "PRAGMA application_id"));
    snprintf(attach, sizeof attach, "ATTACH '%s' AS src;", src);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, pragmas, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, attach, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "INSERT INTO clusters SELECT * FROM src.clusters; INSERT INTO versions "
                     "SELECT cluster_id, version, state, created_at, activated_at, author, "
                     "comment, hash, vnode_factor, points, fingerprint, topology FROM src.versions",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    free(sql);
}

/* A database made by the first schema alone is brought up to date on open, keeping its versions
 * and getting a store id, and activations then find superseded versions through the
 * staged-versions index. */
static void test_upgrade(void **state)
{
    (void)state;
    char path[256], src[256];
    db_path(path, sizeof path, "upgrade");
    db_path(src, sizeof src, "upgrade-rows");
    rkd_store *s = open_ok(src);
    publish(s, "u", 2, RKD_STORE_ANY, 1, RK_OK);
    publish(s, "u", 3, RKD_STORE_ANY, 0, RK_OK);
    publish(s, "u", 4, RKD_STORE_ANY, 0, RK_OK);
    rkd_store_close(s);
    forge_first_schema(path, src);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 1);

    s = open_ok(path);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), latest_migration(RK_MIGRATIONS_DIR));
    assert_store_id(rkd_store_id(s)); /* an older database gets one at the upgrade */
    assert_int_equal(active(s, "u"), 1);
    assert_int_equal(latest(s, "u"), 3);
    assert_int_equal(activate(s, "u", 3, 1), RK_OK);
    assert_int_equal(state_of(s, "u", 1), RKD_STATE_RETIRED);
    assert_int_equal(state_of(s, "u", 2), RKD_STATE_SUPERSEDED);
    assert_int_equal(state_of(s, "u", 3), RKD_STATE_ACTIVE);
    rkd_store_close(s);
    /* EXPLAIN QUERY PLAN's first row: (id, parent, notused, detail). */
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "EXPLAIN QUERY PLAN UPDATE versions SET state = "
                                        "'superseded' WHERE cluster_id = 1 AND state = 'staged' "
                                        "AND version < 9",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_non_null(strstr((const char *)sqlite3_column_text(st, 3), "versions_staged"));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A copy of the migrations up to `last` in `dir`: a store opened with it is of that schema. */
static void migrations_upto(const char *dir, int last)
{
    assert_true(mkdir(dir, 0700) == 0);
    DIR *d = opendir(RK_MIGRATIONS_DIR);
    assert_non_null(d);
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        int n = 0;
        char from[512], to[512], buf[1 << 14];
        if (sscanf(e->d_name, "%4d_", &n) != 1 || n > last || !strstr(e->d_name, ".sql"))
            continue;
        snprintf(from, sizeof from, "%s/%s", RK_MIGRATIONS_DIR, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
        assert_true(in && out);
        for (size_t got; (got = fread(buf, 1, sizeof buf, in)) > 0;)
            assert_int_equal(fwrite(buf, 1, got, out), got);
        fclose(in);
        fclose(out);
    }
    closedir(d);
}

static void fingerprint_of(rkd_store *s, const char *cluster, int64_t v, char out[17])
{
    rkd_store_version *rec = NULL;
    assert_int_equal(rkd_store_get(s, cluster, v, &rec, NULL), RK_OK);
    snprintf(out, 17, "%s", rec->fingerprint);
    rkd_store_version_free(rec);
}

/* 0008 takes the schemes' rules out of the schema: a database of 0007 holding versions of both
 * schemes and an open migration window (whose foreign keys name two versions) comes through the
 * rebuild with every row, fingerprint and the window as they were, and the table then takes a
 * scheme it never heard of while still refusing a malformed name. */
static void test_upgrade_scheme_rules(void **state)
{
    (void)state;
    char path[256], dir[256], before[2][17], after[2][17];
    rk_error err = {0};
    db_path(path, sizeof path, "scheme-rules");
    snprintf(dir, sizeof dir, "%s/migrations-0007", tmpdir);
    migrations_upto(dir, 7);
    rkd_store *s = rkd_store_open_with(path, &(rkd_store_param){"migrations", dir}, 1, &err);
    assert_non_null(s);
    /* Staged by the store, activated and the window opened by hand: an activation reads the
     * policy as the latest schema has it, which 0007 does not. */
    publish(s, "k", 2, RKD_STORE_ANY, 0, RK_OK);
    rk_node nodes[] = {{"a", "10.0.0.1:1", 1}, {"b", "10.0.0.2:1", 2}};
    rk_topology *t = rk_topology_new_ketama(RK_HASH_KETAMA_FNV1A_64, "{}", nodes, 2, NULL, &err);
    rkd_store_publish_opts opt = {"ops", RKD_STORE_ANY, 0, 0, -1, 0, NULL, NULL};
    rkd_store_version *v = NULL;
    assert_int_equal(rkd_store_publish(s, "k", t, &opt, &v, &err), RK_OK);
    rkd_store_version_free(v);
    rk_topology_free(t);
    raw_sql(path, "UPDATE versions SET state = 'retired', activated_at = 'x' WHERE version = 1");
    raw_sql(path, "UPDATE versions SET state = 'active', activated_at = 'x' WHERE version = 2");
    raw_sql(path, "INSERT INTO policies (cluster_id, max_moved_fraction, approvals, "
                  "distinct_approver, migration_window) VALUES (1, 1.0, 0, 0, 1)");
    raw_sql(path, "INSERT INTO migration_windows (cluster_id, version, previous, opened_at) "
                  "VALUES (1, 2, 1, 'x')");
    assert_int_equal(window_of(s, "k"), 1);
    fingerprint_of(s, "k", 1, before[0]);
    fingerprint_of(s, "k", 2, before[1]);
    rkd_store_close(s);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 7);

    s = open_ok(path);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), latest_migration(RK_MIGRATIONS_DIR));
    assert_int_equal(window_of(s, "k"), 1);
    fingerprint_of(s, "k", 1, after[0]);
    fingerprint_of(s, "k", 2, after[1]);
    assert_string_equal(after[0], before[0]);
    assert_string_equal(after[1], before[1]);
    rkd_store_version *rec = NULL;
    assert_int_equal(rkd_store_get(s, "k", 2, &rec, NULL), RK_OK);
    assert_int_equal(rec->scheme, RK_SCHEME_KETAMA);
    assert_string_equal(rk_topology_hash_tag(rec->topology), "{}");
    rkd_store_version_free(rec);
    assert_int_equal(rkd_store_finish_migration(s, "k", "ops", NULL, &v, NULL), RK_OK);
    rkd_store_version_free(v);
    rkd_store_close(s);

    raw_sql(path, "INSERT INTO versions (cluster_id, version, state, created_at, scheme, hash, "
                  "vnode_factor, points, fingerprint, topology) VALUES (1, 9, 'staged', 'x', "
                  "'rendezvous', 'xxh3_64', 0, 256, '0123456789abcdef', '{}')");
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO versions (cluster_id, version, state, created_at, "
                                  "scheme, hash, vnode_factor, points, fingerprint, topology) "
                                  "VALUES (1, 10, 'staged', 'x', 'Bad Name', 'xxh3_64', 0, 256, "
                                  "'0123456789abcdef', '{}')",
                                  NULL, NULL, NULL),
                     SQLITE_CONSTRAINT);
    sqlite3_close(db);
}

static void test_refuse_too_new(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "toonew");
    rkd_store_close(open_ok(path));
    raw_sql(path, "PRAGMA user_version = 99");
    expect_refused(path, RKD_STORE_ETOONEW, RK_MIGRATIONS_DIR);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 99);
}

static void test_refuse_foreign(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "foreign");
    raw_sql(path, "CREATE TABLE other (x INTEGER)");
    expect_refused(path, RKD_STORE_ENOTRK, RK_MIGRATIONS_DIR);
    assert_int_equal(raw_int(path, "SELECT COUNT(*) FROM sqlite_master"), 1); /* untouched */

    db_path(path, sizeof path, "foreign_app");
    raw_sql(path, "PRAGMA application_id = 42");
    expect_refused(path, RKD_STORE_ENOTRK, RK_MIGRATIONS_DIR);
}

static void test_refuse_garbage(void **state)
{
    (void)state;
    char path[256], buf[8192];
    db_path(path, sizeof path, "garbage");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    memset(buf, 'x', sizeof buf);
    assert_int_equal(fwrite(buf, 1, sizeof buf, f), sizeof buf);
    fclose(f);
    expect_refused(path, RKD_STORE_ENOTRK, RK_MIGRATIONS_DIR);
}

static void test_bad_migrations(void **state)
{
    (void)state;
    char path[256];
    db_path(path, sizeof path, "nomigrations");
    expect_refused(path, RKD_STORE_EMIGRATION, "/nonexistent/migrations");
    expect_refused(path, RKD_STORE_EMIGRATION, tmpdir); /* a directory without NNNN_*.sql */
}

/* ---- The seam: the store-neutral layer over a backend that is not SQLite ---- */

/* An in-memory backend of one cluster, enough to see what store_domain.c hands a backend. */
typedef struct fake_backend {
    int64_t latest;                     /* versions published */
    char *topology;                     /* the last draft's topology text */
    char fingerprint[RKD_STORE_FP_LEN]; /* the last draft's fingerprint */
    uint64_t points;                    /* the last draft's points */
    int calls;                          /* data operations reached */
    int closed;                         /* close calls */
} fake_backend;

static void fake_close(void *b)
{
    ((fake_backend *)b)->closed++;
}

static int fake_ping(void *b, rk_error *err)
{
    (void)b;
    return rk_error_set(err, RK_ENOMEM, NULL, "the fake never answers");
}

static int fake_publish(void *b, const rkd_store_draft *d, rkd_store_published *out, rk_error *err)
{
    fake_backend *f = b;
    f->calls++;
    int rc = rkd_store_check_publish(d, f->latest, err);
    if (rc != RK_OK)
        return rc;
    free(f->topology);
    f->topology = strdup(d->topology);
    snprintf(f->fingerprint, sizeof f->fingerprint, "%s", d->fingerprint);
    f->points = d->points;
    out->version = ++f->latest;
    return RK_OK;
}

static int fake_store_id(void *b, char id[RKD_STORE_ID_LEN], rk_error *err)
{
    (void)b;
    (void)err;
    snprintf(id, RKD_STORE_ID_LEN, "00000000000000fa");
    return RK_OK;
}

/* Knows only the latest version, which it reports active. */
static int fake_get(void *b, const char *cluster, rkd_store_pick pick, int64_t v,
                    rkd_store_version **out, char **doc, rk_error *err)
{
    fake_backend *f = b;
    f->calls++;
    if (pick != RKD_PICK_LATEST || f->latest == 0)
        return rkd_store_missing(err, RKD_STORE_ENOVERSION, cluster, v);
    rkd_store_version *rec = calloc(1, sizeof *rec);
    assert_non_null(rec);
    *out = rec;
    *doc = strdup(f->topology);
    rec->version = f->latest;
    rec->state = RKD_STATE_ACTIVE;
    return rkd_store_strdup(cluster, &rec->cluster, err);
}

static int fake_activate(void *b, const char *cluster, int64_t v, const rkd_store_activation *a,
                         const char *now, rkd_store_version **out, char **doc, rk_error *err)
{
    (void)now;
    fake_backend *f = b;
    int rc = rkd_store_check_activation(cluster, v, f->latest, 0, a->if_match_active, err);
    return rc ? rc : fake_get(b, cluster, RKD_PICK_LATEST, v, out, doc, err);
}

static void test_other_backend(void **state)
{
    (void)state;
    /* no read_only: never read-only; no lists: this test does not reach them */
    static const rkd_store_ops ops = {.close = fake_close,
                                      .store_id = fake_store_id,
                                      .ping = fake_ping,
                                      .publish = fake_publish,
                                      .activate = fake_activate,
                                      .get = fake_get};
    fake_backend f = {0};
    rk_error err = {0};
    rkd_store *s = rkd_store_new(&ops, &f, &err);
    assert_non_null(s);
    assert_int_equal(rkd_store_read_only(s), 0);
    assert_string_equal(rkd_store_id(s), "00000000000000fa");
    assert_int_equal(rkd_store_ping(s, &err), RKD_STORE_EUNAVAILABLE);
    assert_int_equal(err.code, RKD_STORE_EUNAVAILABLE);
    publish(s, "", 3, RKD_STORE_ANY, 0, RK_EINVAL);
    assert_int_equal(f.calls, 0); /* refused before the backend */

    assert_int_equal(publish(s, "c", 3, RKD_STORE_ANY, 0, RK_OK), 1);
    publish(s, "c", 3, 5, 0, RKD_STORE_EPRECONDITION);
    rk_topology *t = topo(3);
    rk_ring *ring = rk_ring_build(t, &err);
    assert_non_null(ring);
    assert_string_equal(f.fingerprint, rk_ring_fingerprint_hex(ring));
    assert_int_equal(f.points, rk_topology_points(t));

    assert_int_equal(activate(s, "c", 2, RKD_STORE_ANY), RKD_STORE_ENOVERSION);
    assert_int_equal(rkd_store_watch_seq(s), 0);
    assert_int_equal(activate(s, "c", 1, 0), RK_OK);
    assert_int_equal(rkd_store_watch_seq(s), 1);
    rkd_store_version *rec = NULL;
    assert_int_equal(rkd_store_latest(s, "c", &rec, NULL), RK_OK);
    assert_int_equal(rk_topology_points(rec->topology), rk_topology_points(t)); /* parsed back */

    rkd_store_version_free(rec);
    rk_ring_free(ring);
    rk_topology_free(t);
    rkd_store_close(s);
    assert_int_equal(f.closed, 1);
    free(f.topology);
}

int main(void)
{
    const struct CMUnitTest sqlite_only[] = {
        cmocka_unit_test(test_reopen),         cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_refuse_too_new), cmocka_unit_test(test_refuse_foreign),
        cmocka_unit_test(test_refuse_garbage), cmocka_unit_test(test_bad_migrations),
        cmocka_unit_test(test_other_backend),  cmocka_unit_test(test_file_modes),
        cmocka_unit_test(test_store_id),       cmocka_unit_test(test_upgrade_scheme_rules),
    };
    unsetenv("RK_TEST_ETCD"); /* SQLite's own, whatever the environment says */
    if (tmpdir_setup(NULL) != 0)
        return 1;
    int failed = cmocka_run_group_tests(sqlite_only, NULL, NULL);
    return tmpdir_teardown(NULL) != 0 ? 1 : failed;
}
