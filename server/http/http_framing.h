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

/* What a decoded path or query part holds in place of %00 or a malformed %-escape: a control
 * byte, so that the request is refused (400) rather than routed on what came before a NUL. */
#define RKD_BAD_ESCAPE '\x7f'

/* Non-zero when the decoded `path` holds a control byte (0x01..0x1f, 0x7f): none belongs in a
 * route, and RKD_BAD_ESCAPE is one. */
int rkd_path_has_control(const char *path);

/* MHD_OPTION_URI_LOG_CALLBACK, on the request line's URI as sent: RKD_ENCODED_SLASH when its path
 * (before any '?') holds %2F or %2f, else NULL. libmicrohttpd decodes the path before routing,
 * and a proxy's rule on the raw path must see the route this server takes: an escaped '/' in a
 * segment is refused (400), never a separator. The value is the request's first *req_cls. */
void *rkd_uri_seen(void *cls, const char *uri, struct MHD_Connection *c);
extern char rkd_encoded_slash[1];
#define RKD_ENCODED_SLASH ((void *)rkd_encoded_slash)

/* MHD_OPTION_UNESCAPE_CALLBACK: decodes `s` in place as libmicrohttpd would ("%41" is "A"), except
 * that %00 and a malformed escape ("%zz", a "%" too near the end) become RKD_BAD_ESCAPE. The new
 * length. */
size_t rkd_unescape(void *cls, struct MHD_Connection *c, char *s);

#endif
