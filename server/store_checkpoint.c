/* store_checkpoint.c — copies the SQLite WAL back into the database from a background thread, so
 * a commit only appends to the WAL and fsyncs it.
 *
 * By default SQLite checkpoints inside the commit that takes the WAL past 1000 pages: that request
 * then also copies the WAL into the database and fsyncs the database, with the store's lock held,
 * which made the publish tail (p99) several times its median (docs/PERFORMANCE.md). Here the
 * connection's WAL hook only signals a thread, which opens a connection of its own, runs a PASSIVE
 * checkpoint (it never blocks readers or writers, which go on meanwhile) and closes it. A fresh
 * connection each time means a database that was read-only and became writable again is simply
 * checkpointed, and no state is kept between checkpoints. Should the thread fall far behind (or
 * checkpoints fail), the committing connection checkpoints itself once the WAL is ten times the
 * threshold, so the WAL stays bounded as with SQLite's own default. */
#include <pthread.h>
#include <sqlite3.h>

#include "store_sqlite_internal.h"

#define CHECKPOINT_PAGES 1000 /* SQLite's default autocheckpoint threshold */
#define INLINE_PAGES     (10 * CHECKPOINT_PAGES)
#define BUSY_MS          1000 /* a checkpoint waits this long for a lock, then tries next time */

static void checkpoint_once(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) ==
        SQLITE_OK) {
        sqlite3_busy_timeout(db, BUSY_MS);
        /* Failures (busy, full disk, read-only) leave the frames in the WAL for the next try. */
        sqlite3_exec(db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
        sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    sqlite3_close(db);
}

static void *checkpointer_main(void *arg)
{
    rk_store *s = arg;
    pthread_mutex_lock(&s->ckpt_mu);
    while (!s->ckpt_stop) {
        if (!s->ckpt_pending) {
            pthread_cond_wait(&s->ckpt_cv, &s->ckpt_mu);
            continue;
        }
        s->ckpt_pending = 0;
        pthread_mutex_unlock(&s->ckpt_mu);
        checkpoint_once(s->path);
        pthread_mutex_lock(&s->ckpt_mu);
    }
    pthread_mutex_unlock(&s->ckpt_mu);
    return NULL;
}

/* SQLite calls this after every commit on the store's connection, with the WAL's size in pages. */
static int on_commit(void *arg, sqlite3 *db, const char *name, int pages)
{
    rk_store *s = arg;
    if (pages >= INLINE_PAGES || !s->ckpt_started) {
        if (pages >= CHECKPOINT_PAGES)
            sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        return SQLITE_OK;
    }
    if (pages >= CHECKPOINT_PAGES) {
        pthread_mutex_lock(&s->ckpt_mu);
        s->ckpt_pending = 1;
        pthread_cond_signal(&s->ckpt_cv);
        pthread_mutex_unlock(&s->ckpt_mu);
    }
    return SQLITE_OK;
}

void rks_checkpoint_hook(rk_store *s)
{
    sqlite3_wal_hook(s->db, on_commit, s);
}

int rks_checkpointer_start(rk_store *s)
{
    if (pthread_mutex_init(&s->ckpt_mu, NULL) != 0)
        return RK_ENOMEM;
    if (pthread_cond_init(&s->ckpt_cv, NULL) != 0) {
        pthread_mutex_destroy(&s->ckpt_mu);
        return RK_ENOMEM;
    }
    s->ckpt_ready = 1;
    s->ckpt_started = pthread_create(&s->ckpt_thread, NULL, checkpointer_main, s) == 0;
    return RK_OK; /* without the thread, commits checkpoint themselves (on_commit) */
}

void rks_checkpointer_stop(rk_store *s)
{
    if (!s->ckpt_ready)
        return;
    if (s->ckpt_started) {
        pthread_mutex_lock(&s->ckpt_mu);
        s->ckpt_stop = 1;
        pthread_cond_signal(&s->ckpt_cv);
        pthread_mutex_unlock(&s->ckpt_mu);
        pthread_join(s->ckpt_thread, NULL);
    }
    pthread_cond_destroy(&s->ckpt_cv);
    pthread_mutex_destroy(&s->ckpt_mu);
    s->ckpt_ready = 0;
}
