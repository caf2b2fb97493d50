/* fake_request.h — query and header lookups for requests built in-process, without HTTP (the API
 * unit test and the API fuzzer hand such requests to rkd_api_handle). */
#ifndef RK_TEST_FAKE_REQUEST_H
#define RK_TEST_FAKE_REQUEST_H

#include <string.h>
#include <strings.h>

#include "api.h"

#define RK_FAKE_PAIRS 8

/* Name/value pairs of a request; an rkd_request's ctx points to one. Unused slots are NULL. */
typedef struct rk_fake_pairs {
    const char *q[RK_FAKE_PAIRS][2]; /* query arguments */
    const char *h[RK_FAKE_PAIRS][2]; /* headers (names matched without case) */
} rk_fake_pairs;

static const char *fake_lookup(const char *const (*pairs)[2], const char *name, int nocase)
{
    for (size_t i = 0; i < RK_FAKE_PAIRS && pairs[i][0]; i++) {
        if ((nocase ? strcasecmp(pairs[i][0], name) : strcmp(pairs[i][0], name)) == 0)
            return pairs[i][1];
    }
    return NULL;
}

static const char *fake_query(const rkd_request *req, const char *name)
{
    return fake_lookup(((const rk_fake_pairs *)req->ctx)->q, name, 0);
}

static const char *fake_header(const rkd_request *req, const char *name)
{
    return fake_lookup(((const rk_fake_pairs *)req->ctx)->h, name, 1);
}

/* Splits `s` in place at `sep` into name/value pairs at `sep2` (a pair without it has the value
 * ""); at most RK_FAKE_PAIRS are kept. Returns how many pieces `s` had. */
static size_t fake_split(char *s, const char *sep, const char *sep2, const char *(*pairs)[2])
{
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(s, sep, &save); tok; tok = strtok_r(NULL, sep, &save)) {
        char *v = strstr(tok, sep2);
        if (v)
            *v = '\0';
        if (n < RK_FAKE_PAIRS) {
            pairs[n][0] = tok;
            pairs[n][1] = v ? v + strlen(sep2) : "";
        }
        n++;
    }
    return n;
}

#endif
