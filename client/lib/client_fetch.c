/* client_fetch.c — the client's HTTP GETs with libcurl: one connection kept alive, capped bodies,
 * transfers another thread can abort at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <curl/curl.h>

#include "client_internal.h"
#include "http_easy.h"

struct rki_fetch {
    const rk_client_config *cfg; /* borrowed from the client */
    const atomic_int *stop;      /* borrowed: non-zero aborts the transfer */
    CURLM *multi;                /* owns the connection cache (keep-alive) */
    CURL *easy;                  /* reused for every request */
    rki_http_body body;          /* the response, under the body cap */
    char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_global_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
    curl_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int set_options(rki_fetch *f)
{
    char agent[RK_PRODUCT_MAX + 64];
    const char *product = f->cfg->product;
    snprintf(agent, sizeof agent, "%s%slibringkeeper/%s", product ? product : "",
             product && product[0] ? " " : "", rk_version());
    long connect_ms =
        f->cfg->connect_timeout_ms ? f->cfg->connect_timeout_ms : RKI_DEFAULT_CONNECT_TIMEOUT_MS;
    int bad = rki_http_easy_setup(f->easy, &f->body, connect_ms, f->cfg->ca_file, agent) != 0;
    bad |= curl_easy_setopt(f->easy, CURLOPT_ERRORBUFFER, f->errbuf) != CURLE_OK;
    bad |= curl_easy_setopt(f->easy, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK;
    return bad ? -1 : 0;
}

rki_fetch *rki_fetch_new(const rk_client_config *cfg, const atomic_int *stop, rk_error *err)
{
    pthread_once(&curl_once, curl_init_once);
    if (curl_global_rc != CURLE_OK) {
        rk_error_set(err, RK_ENOMEM, NULL, "libcurl could not start: %s",
                     curl_easy_strerror(curl_global_rc));
        return NULL;
    }
    rki_fetch *f = calloc(1, sizeof *f);
    if (!f)
        goto fail;
    f->cfg = cfg;
    f->stop = stop;
    f->body.max = rki_max_body(cfg);
    f->multi = curl_multi_init();
    f->easy = curl_easy_init();
    if (f->multi && f->easy && set_options(f) == 0)
        return f;
fail:
    rki_fetch_free(f);
    rk_error_set(err, RK_ENOMEM, NULL, "out of memory setting up libcurl");
    return NULL;
}

void rki_fetch_free(rki_fetch *f)
{
    if (!f)
        return;
    curl_easy_cleanup(f->easy);
    curl_multi_cleanup(f->multi);
    rki_http_body_free(&f->body);
    free(f);
}

void rki_fetch_wakeup(rki_fetch *f)
{
    curl_multi_wakeup(f->multi);
}

/* Runs the added transfer until it is done or `stop` is set; its result. */
static CURLcode run(rki_fetch *f)
{
    int running = 1;
    CURLcode rc = CURLE_ABORTED_BY_CALLBACK;
    while (running && !atomic_load(f->stop)) {
        if (curl_multi_perform(f->multi, &running) != CURLM_OK)
            return CURLE_OUT_OF_MEMORY;
        if (running)
            curl_multi_poll(f->multi, NULL, 0, 1000, NULL);
    }
    int left;
    CURLMsg *m = curl_multi_info_read(f->multi, &left);
    if (m && m->msg == CURLMSG_DONE)
        rc = m->data.result;
    return rc;
}

static struct curl_slist *headers_for(const rk_client_config *cfg, const rki_claim *claim)
{
    char line[384];
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    struct curl_slist *next = h;
    if (next && claim && claim->etag) {
        snprintf(line, sizeof line, "If-None-Match: %s", claim->etag);
        next = curl_slist_append(h, line);
    }
    if (next && claim && claim->refused) {
        snprintf(line, sizeof line, "RK-Refused: %s", claim->refused);
        next = curl_slist_append(h, line);
    }
    if (next && cfg->client_id[0]) { /* "": the caller asked not to be counted */
        char id[sizeof "RK-Client: " + RK_CLIENT_ID_MAX];
        snprintf(id, sizeof id, "RK-Client: %s", cfg->client_id);
        next = curl_slist_append(h, id);
    }
    if (!next) {
        curl_slist_free_all(h);
        return NULL;
    }
    return cfg->token ? rki_http_bearer(h, cfg->token) : h;
}

static int transfer_error(rki_fetch *f, CURLcode rc, const char *url, rk_error *err)
{
    if (rki_http_body_over(&f->body, rc))
        return rk_error_set(err, RK_ETOOLARGE, NULL,
                            "the response from %.80s is over the cap of %zu bytes: raise "
                            "max_body or check the server URL",
                            url, f->body.max);
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return rk_error_set(err, RK_EUNREACHABLE, NULL, "the request to %.80s was stopped", url);
    return rk_error_set(err, RK_EUNREACHABLE, NULL,
                        "cannot get %.100s: %s: check the server URL, that ringkeeperd runs, "
                        "and the network",
                        url, f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc));
}

int rki_fetch_get(rki_fetch *f, const char *url, const rki_claim *claim, unsigned wait_s,
                  rki_response *out, rk_error *err)
{
    long total = f->cfg->timeout_ms ? f->cfg->timeout_ms : RKI_DEFAULT_TIMEOUT_MS;
    struct curl_slist *h = headers_for(f->cfg, claim);
    int rc = RK_ENOMEM;
    if (!h)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory building a request");
    rki_http_body_reset(&f->body);
    f->errbuf[0] = '\0';
    curl_easy_setopt(f->easy, CURLOPT_URL, url);
    curl_easy_setopt(f->easy, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(f->easy, CURLOPT_TIMEOUT_MS, total + 1000L * (long)wait_s);
    if (curl_multi_add_handle(f->multi, f->easy) != CURLM_OK) {
        rk_error_set(err, RK_ENOMEM, NULL, "libcurl could not start a request");
        goto out;
    }
    CURLcode res = run(f);
    curl_multi_remove_handle(f->multi, f->easy);
    if (res != CURLE_OK) {
        rc = transfer_error(f, res, url, err);
        goto out;
    }
    curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = f->body.len ? f->body.data : "";
    out->len = f->body.len;
    rc = RK_OK;
out:
    curl_easy_setopt(f->easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    return rc;
}
