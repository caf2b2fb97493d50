/* store_backup.c — the SQLite backend's online backup (rkd_sqlite_backup): a consistent copy of a
 * live database through SQLite's backup API, checked and synced under a temporary name next to the
 * destination before it takes its final one.
 *
 * The source is in WAL mode, so one sqlite3_backup_step(-1) copies every page inside a single read
 * transaction: a snapshot of one moment that never blocks the server's writers (stepping in small
 * batches would restart from scratch at every write another process commits).
 *
 * The copy gets a store id of its own: once restored it numbers versions on from where it was
 * taken, reusing numbers the live database gave to other rings, and clients tell the two histories
 * apart by that id. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store_sqlite_internal.h"

#define BACKUP_RETRIES   100 /* SQLITE_BUSY or SQLITE_LOCKED answers tolerated... */
#define RETRY_SLEEP_MS   50  /* ...this far apart */
#define TEMP_SUFFIX      ".tmp-XXXXXX"
#define JOURNAL_SUFFIX   "-journal"
#define TEMP_EXTRA_BYTES (sizeof TEMP_SUFFIX + sizeof JOURNAL_SUFFIX)

typedef struct backup_job {
    const char *from; /* the database; borrowed */
    const char *to;   /* the final name of the copy; borrowed */
    char *tmp;        /* the copy's temporary name; owned; NULL until created */
    rks_store src;    /* connection to the database; only .db is used */
    rks_store dst;    /* connection to the temporary copy; only .db is used */
} backup_job;

/* Creates the empty temporary file; SQLite opens it by name afterwards. The descriptor is closed
 * at once: closing a second descriptor later would drop SQLite's POSIX locks on the file. mkstemp
 * creates it 0600 (POSIX), whatever the umask, and the copy keeps that mode under its final name.
 */
static int make_temp(backup_job *j, rk_error *err)
{
    size_t len = strlen(j->to) + TEMP_EXTRA_BYTES;
    char *tmp = malloc(len);
    if (!tmp)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    snprintf(tmp, len, "%s%s", j->to, TEMP_SUFFIX);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cannot create a file next to %s: %s",
                     j->to, strerror(errno));
        free(tmp);
        return err->code;
    }
    close(fd);
    j->tmp = tmp;
    return RK_OK;
}

/* Copies every page in one step; retries while a lock is briefly unavailable. */
static int copy_pages(backup_job *j, rk_error *err)
{
    sqlite3_backup *b = sqlite3_backup_init(j->dst.db, "main", j->src.db, "main");
    if (!b)
        return rks_db_err(&j->dst, err, sqlite3_errcode(j->dst.db), "starting the backup");
    int rc = SQLITE_BUSY;
    for (int tries = 0; tries < BACKUP_RETRIES; tries++) {
        rc = sqlite3_backup_step(b, -1);
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
            break;
        sqlite3_sleep(RETRY_SLEEP_MS);
    }
    int fin = sqlite3_backup_finish(b);
    if (rc == SQLITE_DONE && fin == SQLITE_OK)
        return RK_OK;
    rc = rc == SQLITE_DONE ? fin : rc;
    return rk_error_set(err, rks_map_rc(rc) == RK_ENOMEM ? RK_ENOMEM : RKD_STORE_EUNAVAILABLE, NULL,
                        "backup of %s failed: %s", j->from, sqlite3_errstr(rc));
}

/* PRAGMA integrity_check on the copy must answer exactly "ok". */
static int check_copy(backup_job *j, rk_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(j->dst.db, "PRAGMA integrity_check", -1, &st, NULL);
    int step = rc == SQLITE_OK ? sqlite3_step(st) : rc;
    const char *answer = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    rc = RK_OK;
    if (step != SQLITE_ROW)
        rc = rks_db_err(&j->dst, err, step, "checking the copy");
    else if (!answer || strcmp(answer, "ok") != 0)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "the copy of %s fails PRAGMA integrity_check: %s", j->from,
                          answer ? answer : "(no answer)");
    sqlite3_finalize(st);
    return rc;
}

static int sync_path(const char *path, int flags, rk_error *err)
{
    int fd = open(path, flags);
    if (fd < 0)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cannot open %s to sync it: %s",
                            path, strerror(errno));
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    if (rc != 0)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cannot sync %s: %s", path,
                            strerror(saved));
    return RK_OK;
}

/* Gives the synced copy its final name: rename() replaces; link() refuses an existing file, so a
 * file created there meanwhile is not clobbered either. Then syncs the folder. */
static int give_name(backup_job *j, int replace, rk_error *err)
{
    int rc = replace ? rename(j->tmp, j->to) : link(j->tmp, j->to);
    if (rc != 0 && errno == EEXIST)
        return rk_error_set(err, RKD_STORE_ECONFLICT, NULL, "%s exists; pass --force to replace it",
                            j->to);
    if (rc != 0)
        return rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL, "cannot name the copy %s: %s", j->to,
                            strerror(errno));
    if (!replace)
        unlink(j->tmp); /* the copy lives on under its final name */
    char *dir = strdup(j->to);
    if (!dir)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    rc = sync_path(dirname(dir), O_RDONLY, err);
    free(dir);
    return rc;
}

/* Removes whatever is left under the temporary name (nothing, after success). */
static void remove_temp(backup_job *j)
{
    if (!j->tmp)
        return;
    unlink(j->tmp);
    strcat(j->tmp, JOURNAL_SUFFIX); /* make_temp left room for it */
    unlink(j->tmp);
    free(j->tmp);
}

static int refuse_existing(const char *to, int replace, rk_error *err)
{
    if (replace || access(to, F_OK) != 0)
        return RK_OK;
    return rk_error_set(err, RKD_STORE_ECONFLICT, NULL, "%s exists; pass --force to replace it",
                        to);
}

static int run_backup(backup_job *j, int replace, rk_error *err)
{
    int rc = rks_open_db(&j->src, j->from, SQLITE_OPEN_READWRITE, err);
    rc = rc ? rc : rks_check_ours(&j->src, j->from, err);
    rc = rc ? rc : refuse_existing(j->to, replace, err);
    rc = rc ? rc : make_temp(j, err);
    rc = rc ? rc : rks_open_db(&j->dst, j->tmp, SQLITE_OPEN_READWRITE, err);
    rc = rc ? rc : copy_pages(j, err);
    rc = rc ? rc : rks_renew_store_id(&j->dst, err);
    rc = rc ? rc : check_copy(j, err);
    sqlite3_close(j->dst.db); /* before the sync: it may still write the file */
    j->dst.db = NULL;
    rc = rc ? rc : sync_path(j->tmp, O_RDWR, err);
    rc = rc ? rc : give_name(j, replace, err);
    return rc;
}

int rkd_sqlite_backup(const char *db_path, const char *to_path, int replace, rk_error *err)
{
    rk_error scratch;
    err = err ? err : &scratch;
    if (!db_path || !to_path)
        return rk_error_set(err, RK_EINVAL, NULL, "a database path and a destination are required");
    backup_job j = {db_path, to_path, NULL, {0}, {0}};
    int rc = run_backup(&j, replace, err);
    sqlite3_close(j.src.db);
    remove_temp(&j);
    return rc;
}
