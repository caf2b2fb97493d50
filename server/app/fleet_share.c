/* fleet_share.c — the app's tables of clients shared through the store (fleet_share.h): the sink
 * the store tells of other replicas' records, and the thread that writes this replica's. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "changes.h"
#include "fleet_share.h"
#include "log.h"

struct rkd_fleet_share {
    rkd_app *app;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* signalled to stop */
    int stop;            /* guarded by mu */
    time_t complained;   /* when a failed write was last logged (the thread's) */
    rkd_clients_out out[RKD_CLIENTS_BATCH];
    rkd_fleet_record recs[RKD_CLIENTS_BATCH];
};

static rkd_clients *table_of(rkd_app *app, int stranger)
{
    return stranger ? app->strangers : app->clients;
}

static void on_record(void *arg, const rkd_fleet_record *r)
{
    rkd_app *app = arg;
    rkd_clients *t = table_of(app, r->stranger);
    if (t && rkd_clients_heard(t, r))
        rkd_app_changed(app, r->cluster); /* the console's fleet panel is live */
}

static void on_read_all(void *arg, uint64_t round)
{
    rkd_app *app = arg;
    rkd_clients_read_all(app->clients, round);
    if (app->strangers)
        rkd_clients_read_all(app->strangers, round);
}

/* Writes up to `max` of table t's queued records, batch after batch; RK_OK or the store's error
 * (what was not written is queued again). */
static int flush(struct rkd_fleet_share *sh, rkd_clients *t, size_t max)
{
    rkd_app *app = sh->app;
    size_t n;
    int rc = RK_OK;
    do {
        rk_error err = {0};
        int lost = 0;
        n = rkd_clients_take(t, sh->out, max < RKD_CLIENTS_BATCH ? max : RKD_CLIENTS_BATCH);
        max -= n;
        for (size_t i = 0; i < n; i++)
            sh->recs[i] = sh->out[i].rec;
        rc = rkd_store_fleet_write(app->store, sh->recs, n, &lost, &err);
        for (size_t i = 0; i < n; i++)
            sh->out[i].rec.rev = sh->recs[i].rev;
        rkd_clients_written(t, sh->out, n, rc == RK_OK);
        if (lost) {
            rkd_log("fleet: this replica's lease in the store had expired: its clients' records "
                    "are written again");
            rkd_clients_rewrite(app->clients);
            if (app->strangers)
                rkd_clients_rewrite(app->strangers);
        }
        if (rc != RK_OK && time(NULL) - sh->complained >= 60) {
            sh->complained = time(NULL);
            rkd_log("fleet: cannot write the clients' records (tried again every %d ms): %s",
                    RKD_FLEET_FLUSH_MS, err.message);
        }
    } while (rc == RK_OK && n == RKD_CLIENTS_BATCH && max > 0);
    return rc;
}

static void flush_all(struct rkd_fleet_share *sh)
{
    if (flush(sh, sh->app->clients, SIZE_MAX) == RK_OK && sh->app->strangers)
        flush(sh, sh->app->strangers, RKD_FLEET_STRANGER_WRITES);
}

static void *share_main(void *arg)
{
    struct rkd_fleet_share *sh = arg;
    pthread_mutex_lock(&sh->mu);
    while (!sh->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += RKD_FLEET_FLUSH_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&sh->cond, &sh->mu, &until);
        pthread_mutex_unlock(&sh->mu);
        flush_all(sh);
        pthread_mutex_lock(&sh->mu);
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

int rkd_app_share_fleet(rkd_app *app, const char *replica, rk_error *err)
{
    struct rkd_fleet_share *sh = calloc(1, sizeof *sh);
    if (!sh)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory sharing the fleet");
    sh->app = app;
    pthread_mutex_init(&sh->mu, NULL);
    pthread_cond_init(&sh->cond, NULL);
    int rc = rkd_clients_share(app->clients, replica, 0);
    rc = rc || !app->strangers ? rc : rkd_clients_share(app->strangers, replica, 1);
    if (rc != RK_OK)
        rk_error_set(err, rc, NULL, "out of memory sharing the fleet");
    rkd_fleet_sink sink = {on_record, on_read_all, app};
    unsigned ttl = app->clients_expiry_s;
    rc = rc ? rc : rkd_store_fleet_share(app->store, replica, ttl, &sink, err);
    if (rc == RK_OK && pthread_create(&sh->thread, NULL, share_main, sh) != 0)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "cannot start the fleet's writer thread");
    if (rc != RK_OK) {
        rkd_store_fleet_unshare(app->store);
        pthread_cond_destroy(&sh->cond);
        pthread_mutex_destroy(&sh->mu);
        free(sh);
        return rc;
    }
    app->share = sh;
    return RK_OK;
}

void rkd_fleet_share_stop(rkd_app *app)
{
    struct rkd_fleet_share *sh = app->share;
    if (!sh)
        return;
    pthread_mutex_lock(&sh->mu);
    sh->stop = 1;
    pthread_cond_signal(&sh->cond);
    pthread_mutex_unlock(&sh->mu);
    pthread_join(sh->thread, NULL);
    flush_all(sh); /* what changed last, so the other replicas count it right */
    rkd_store_fleet_unshare(app->store);
    pthread_cond_destroy(&sh->cond);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
    app->share = NULL;
}
