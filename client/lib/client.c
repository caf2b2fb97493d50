/* client.c — the ring client of docs/CLIENT.md: its configuration, status and refresher thread,
 * over the fetch rounds of client_round.c and the snapshots of client_snapshot.c. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "client_internal.h"

/* ---- status ---- */

void rk_client_status_get(rk_client *c, rk_client_status *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    pthread_mutex_unlock(&c->mu);
}

/* ---- the refresher thread ---- */

/* Sleeps `ms` or until stopped. */
static void pause_ms(rk_client *c, unsigned ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    while (!atomic_load(&c->stop) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&c->cv, &c->mu, &until);
    pthread_mutex_unlock(&c->mu);
}

static void *refresher_main(void *arg)
{
    rk_client *c = arg;
    while (!atomic_load(&c->stop)) {
        int rc = rk_client_refresh(c, c->wait_s, NULL, NULL);
        if (rc != RK_OK || c->wait_s == 0) /* wait_s 0 polls: pause between rounds too */
            pause_ms(c, c->retry_ms);
    }
    return NULL;
}

int rk_client_start_refresher(rk_client *c, unsigned wait_s, unsigned retry_ms, rk_error *err)
{
    if (c->running)
        return rk_error_set(err, RK_EINVAL, NULL, "the refresher is already running");
    if (wait_s > RKI_MAX_WAIT_S)
        return rk_error_set(err, RK_EINVAL, NULL, "wait_s is %u, over the server's limit of %u",
                            wait_s, RKI_MAX_WAIT_S);
    c->wait_s = wait_s;
    c->retry_ms = retry_ms ? retry_ms : 1000;
    atomic_store(&c->stop, 0);
    int rc = pthread_create(&c->thread, NULL, refresher_main, c);
    if (rc != 0)
        return rk_error_set(err, RK_ENOMEM, NULL, "cannot start the refresher thread: %s",
                            strerror(rc));
    c->running = 1;
    return RK_OK;
}

void rk_client_stop_refresher(rk_client *c)
{
    if (!c->running)
        return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, 1);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    rki_fetch_wakeup(c->fetch);
    pthread_join(c->thread, NULL);
    atomic_store(&c->stop, 0);
    c->running = 0;
}

/* ---- creating and freeing ---- */

static int check_config(const rk_client_config *cfg, rk_error *err)
{
    rk_hash_alg alg;
    if (!cfg || !cfg->server || !cfg->cluster)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "a configuration with server and cluster is "
                            "needed");
    if (strncmp(cfg->server, "http://", 7) != 0 && strncmp(cfg->server, "https://", 8) != 0)
        return rk_error_set(err, RK_EINVAL, "server",
                            "must start with http:// or https://, got \"%.80s\"", cfg->server);
    if (!rk_cluster_name_valid(cfg->cluster))
        return rk_error_set(err, RK_EINVAL, "cluster",
                            "\"%.64s\" is not a cluster name: 1..63 of a-z 0-9 . _ -, starting "
                            "with a letter or digit",
                            cfg->cluster);
    char names[RKI_HASH_NAMES_MAX];
    rk_scheme scheme = RK_SCHEME_RINGKEEPER;
    if (cfg->expect_scheme && rk_scheme_from_name(cfg->expect_scheme, &scheme) != RK_OK)
        return rk_error_set(err, RK_EINVAL, "expect_scheme",
                            "must be ringkeeper, ketama, nginx or haproxy, got \"%.32s\"",
                            cfg->expect_scheme);
    if (cfg->expect_hash && rk_hash_from_scheme_name(scheme, cfg->expect_hash, &alg) != RK_OK)
        return rk_error_set(err, RK_EINVAL, "expect_hash", "must be %s, got \"%.32s\"",
                            rki_hash_names(scheme, names, sizeof names, "", " or "),
                            cfg->expect_hash);
    if (cfg->connect_timeout_ms < 0 || cfg->timeout_ms < 0)
        return rk_error_set(err, RK_EINVAL, "timeout_ms", "timeouts must not be negative");
    if (cfg->client_id && cfg->client_id[0] && !rk_client_id_valid(cfg->client_id))
        return rk_error_set(err, RK_EINVAL, "client_id",
                            "must be 1..%d bytes of printable ASCII without spaces (0x21..0x7e), "
                            "\"\" for none, or NULL for <hostname>:<pid>",
                            RK_CLIENT_ID_MAX);
    size_t n = cfg->product ? strnlen(cfg->product, RK_PRODUCT_MAX + 1) : 0;
    for (size_t i = 0; i < n && n <= RK_PRODUCT_MAX; i++)
        n = cfg->product[i] >= 0x20 && cfg->product[i] <= 0x7e ? n : RK_PRODUCT_MAX + 1;
    if (n > RK_PRODUCT_MAX)
        return rk_error_set(err, RK_EINVAL, "product",
                            "must be 1..%d bytes of printable ASCII (0x20..0x7e), or NULL",
                            RK_PRODUCT_MAX);
    return RK_OK;
}

/* "<hostname>:<pid>" into out, cut to RK_CLIENT_ID_MAX bytes, every byte outside the id's rule a
 * '-': an id that identifies this process for the server's table of clients. */
static void default_client_id(char out[RK_CLIENT_ID_MAX + 1])
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "unknown");
    char pid[24];
    int n = snprintf(pid, sizeof pid, ":%ld", (long)getpid());
    snprintf(out, RK_CLIENT_ID_MAX + 1, "%.*s%s", RK_CLIENT_ID_MAX - n, host, pid);
    for (char *p = out; *p; p++) {
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p > 0x7e)
            *p = '-';
    }
}

/* A copy of s (NULL stays NULL) kept in slot i; -1 when out of memory. */
static int keep(rk_client *c, int i, const char **s)
{
    if (!*s)
        return 0;
    c->copies[i] = strdup(*s);
    *s = c->copies[i];
    return c->copies[i] ? 0 : -1;
}

static int copy_config(rk_client *c, const rk_client_config *cfg)
{
    c->cfg = *cfg;
    if (keep(c, 0, &c->cfg.server) || keep(c, 1, &c->cfg.cluster) ||
        keep(c, 2, &c->cfg.expect_hash) || keep(c, 3, &c->cfg.token) ||
        keep(c, 4, &c->cfg.cache_file) || keep(c, 5, &c->cfg.ca_file) ||
        keep(c, 6, &c->cfg.expect_scheme) || keep(c, 8, &c->cfg.product))
        return -1;
    char id[RK_CLIENT_ID_MAX + 1];
    if (!cfg->client_id)
        default_client_id(id);
    c->cfg.client_id = cfg->client_id ? cfg->client_id : id;
    if (keep(c, 7, &c->cfg.client_id))
        return -1;
    size_t n = strlen(cfg->server);
    while (n > 0 && cfg->server[n - 1] == '/')
        n--;
    size_t size = n + strlen(cfg->cluster) + sizeof "/v1/clusters//versions/9223372036854775807";
    c->url_size = size;
    c->url = malloc(size);
    c->url_buf = malloc(size);
    if (!c->url || !c->url_buf)
        return -1;
    snprintf(c->url, size, "%.*s/v1/clusters/%s/ring", (int)n, cfg->server, cfg->cluster);
    return 0;
}

/* Learns the version of the last-known-good file, if any; a bad file is reported in st. With
 * reset_cache the operator distrusts the file: it is neither read nor served, only rewritten. */
static void read_floor(rk_client *c)
{
    char *buf = NULL;
    size_t len = 0;
    int missing = 0;
    rk_ring *ring = NULL;
    rk_error e = {0};
    if (!c->cfg.cache_file || c->cfg.reset_cache)
        return;
    int rc = rki_cache_read(c->cfg.cache_file, rki_max_body(&c->cfg), &buf, &len, &missing, &e);
    if (rc == RK_OK)
        rc = rki_verify_doc(&c->cfg, buf, len, NULL, 0, &c->floor, &c->file_window, &ring, &e);
    if (rc == RK_OK) { /* kept for the first fetch: see take_file_ring */
        c->saved = c->floor;
        c->saved_prev = c->file_window.previous;
        c->file_body = buf;
        c->file_len = len;
        c->file_ring = ring;
        return;
    }
    free(buf);
    rk_ring_free(ring);
    if (rc == RK_OK || missing)
        return;
    memset(&c->floor, 0, sizeof c->floor);
    c->st.last_error = RK_ECACHE;
    snprintf(c->st.last_message, sizeof c->st.last_message,
             "the last-known-good file is ignored (it will be replaced after the next accepted "
             "ring): %.160s",
             e.message);
}

rk_client *rk_client_new(const rk_client_config *cfg, rk_error *err)
{
    if (check_config(cfg, err) != RK_OK)
        return NULL;
    rk_client *c = calloc(1, sizeof *c);
    if (!c) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory creating a client");
        return NULL;
    }
    atomic_init(&c->stop, 0);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (copy_config(c, cfg) != 0) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory copying the configuration");
        goto fail;
    }
    c->fetch = rki_fetch_new(&c->cfg, &c->stop, err);
    if (!c->fetch)
        goto fail;
    read_floor(c);
    return c;
fail:
    rk_client_free(c);
    return NULL;
}

void rk_client_set_admit(rk_client *c, rk_client_admit_fn fn, void *arg)
{
    c->admit = fn;
    c->admit_arg = arg;
}

void rk_client_free(rk_client *c)
{
    if (!c)
        return;
    rk_client_stop_refresher(c);
    rki_client_drop_file(c);
    rk_snapshot_release(c->current);
    rki_fetch_free(c->fetch);
    for (size_t i = 0; i < sizeof c->copies / sizeof c->copies[0]; i++)
        free(c->copies[i]);
    free(c->url);
    free(c->url_buf);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
