/* http_framing.h — what every header line of a request says, duplicates included, checked before
 * any body is read: the requests a proxy in front and this server could read differently (request
 * smuggling), a NUL in Authorization, and a body on a method that takes none. Used by http.c. */
#ifndef RKD_HTTP_FRAMING_H
#define RKD_HTTP_FRAMING_H

#include <stdint.h>

#include <microhttpd.h>

typedef struct rkd_framing {
    int content_length, transfer_encoding, authorization, host; /* lines of each */
    uintptr_t authz, authz_end, next_key; /* Authorization's value, its end, the next line's key */
    const char *field; /* the header to blame (answer 400 and close), or NULL when all is well */
    const char *why;   /* and why, to follow "the <field> header " */
} rkd_framing;

/* Checks the headers of the request on `c` (its `method` and HTTP `version`); field is set on the
 * first problem found. */
rkd_framing rkd_check_framing(struct MHD_Connection *c, const char *method, const char *version);

#endif
