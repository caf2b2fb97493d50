/* guard.c — a rollout step's guard over libcurl (guard.h): one GET, bounded in time and size, its
 * status and, for a threshold, one sample of its Prometheus text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "guard.h"

typedef struct body {
    char *data;
    size_t len;
} body;

/* Keeps the answer up to RKD_GUARD_BODY_MAX; past it the transfer stops (and the check fails). */
static size_t take(char *p, size_t size, size_t n, void *arg)
{
    body *b = arg;
    size_t add = size * n;
    if (b->len + add > RKD_GUARD_BODY_MAX)
        return 0;
    char *grown = realloc(b->data, b->len + add + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, p, add);
    b->data = grown;
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

int rkd_guard_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void rkd_guard_cleanup(void)
{
    curl_global_cleanup();
}

/* The sample of `metric` (its name, with its labels as the answer writes them) in Prometheus text:
 * 1 and *value, or 0 when no line has it. */
static int sample(const char *text, const char *metric, double *value)
{
    size_t n = strlen(metric);
    const char *line = text;
    while (line) {
        if (strncmp(line, metric, n) == 0 && line[n] == ' ') {
            char *end;
            *value = strtod(line + n + 1, &end);
            return end != line + n + 1;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return 0;
}

/* The GET: 0 and the status in *status, or -1 with why. */
static int get(const char *url, body *b, long *status, char *why, size_t size)
{
    CURL *h = curl_easy_init();
    char error[CURL_ERROR_SIZE] = "";
    if (!h)
        return snprintf(why, size, "out of memory"), -1;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)RKD_GUARD_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, take);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(h);
    if (rc == CURLE_OK)
        return 0;
    snprintf(why, size, "GET %s: %s", url, error[0] ? error : curl_easy_strerror(rc));
    return -1;
}

int rkd_guard_check(const char *url, const char *metric, double max, char *why, size_t size)
{
    body b = {NULL, 0};
    long status = 0;
    double value = 0;
    int ok = get(url, &b, &status, why, size) == 0;
    if (ok && (status < 200 || status > 299)) {
        snprintf(why, size, "GET %s answered %ld, not 2xx", url, status);
        ok = 0;
    } else if (ok && metric && !sample(b.data ? b.data : "", metric, &value)) {
        snprintf(why, size, "GET %s has no sample of %s", url, metric);
        ok = 0;
    } else if (ok && metric && !(value <= max)) {
        snprintf(why, size, "%s is %g at %s, over its max %g", metric, value, url, max);
        ok = 0;
    }
    free(b.data);
    return ok;
}
