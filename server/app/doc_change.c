/* doc_change.c — the compare-and-set loop over a cluster's documents (doc_change.h). */
#include <stdio.h>
#include <stdlib.h>

#include "doc_change.h"

#define CHANGE_TRIES 16 /* compare-and-set rounds before giving up (503) */

void rkd_doc_time(time_t t, char out[RKD_STORE_TIME_LEN])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, RKD_STORE_TIME_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Days from the civil date, as in Howard Hinnant's algorithm, since timegm is not POSIX. */
time_t rkd_doc_parse_time(const char *s)
{
    int y, m, d, hh, mm, ss, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &m, &d, &hh, &mm, &ss, &n) != 6 ||
        s[n] != '\0')
        return 0;
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400, doy = (153L * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return (time_t)(days * 86400 + hh * 3600 + mm * 60 + ss);
}

int rkd_doc_read(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, json_t **doc,
                 int64_t *rev, rk_error *err)
{
    char *text = NULL;
    *doc = NULL;
    int rc = rkd_store_get_doc(s, kind, cluster, &text, rev, err);
    if (rc == RK_OK && text) {
        *doc = json_loads(text, 0, NULL);
        if (!json_is_object(*doc))
            rc = rk_error_set(err, RK_EIO, NULL, "cluster %s: the stored %s is damaged", cluster,
                              rkd_store_doc_name(kind));
    }
    free(text);
    return rc;
}

/* Writes c->doc over revision `rev`, with its event. */
static int write_doc(rkd_store *s, rkd_store_doc_kind kind, const char *cluster,
                     const rkd_doc_change *c, int64_t rev, rk_error *err)
{
    char now[RKD_STORE_TIME_LEN];
    rkd_doc_time(c->now, now);
    json_object_set_new(c->doc, "updated_at", json_string(now));
    char *text = json_dumps(c->doc, JSON_COMPACT);
    int rc =
        text ? rkd_store_put_doc(s, kind, cluster, text, rev, c->event.kind ? &c->event : NULL, err)
             : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    free(text);
    return rc;
}

int rkd_doc_run(rkd_store *s, rkd_store_doc_kind kind, const char *cluster, rkd_doc_change *c,
                json_t **out, rk_error *err)
{
    int rc = RKD_STORE_ECONFLICT;
    *out = NULL;
    for (int i = 0; i < CHANGE_TRIES && rc == RKD_STORE_ECONFLICT; i++) {
        int64_t rev = 0;
        json_decref(c->doc);
        c->event.kind = NULL;
        c->after = 0;
        rc = rkd_doc_read(s, kind, cluster, &c->doc, &rev, err);
        rc = rc ? rc : c->rule(c, err);
        rc = rc ? rc : write_doc(s, kind, cluster, c, rev, err);
    }
    if (rc == RKD_STORE_ECONFLICT)
        rc = rk_error_set(err, RKD_STORE_EUNAVAILABLE, NULL,
                          "cluster %s: the %s changed under %d tries in a row; retry", cluster,
                          rkd_store_doc_name(kind), CHANGE_TRIES);
    if (rc == RKD_DOC_SAME)
        rc = RK_OK;
    if (rc == RK_OK && c->after) {
        rc = c->after;
        *err = c->after_err;
    }
    if (rc == RK_OK || c->after)
        *out = json_incref(c->doc);
    json_decref(c->doc);
    c->doc = NULL;
    return rc;
}
