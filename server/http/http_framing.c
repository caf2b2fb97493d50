/* http_framing.c — the header checks ringkeeperd makes before it reads a body (http_framing.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_framing.h"

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int rkd_path_has_control(const char *path)
{
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

char rkd_encoded_slash[1];

void *rkd_uri_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls, (void)c;
    for (const char *p = uri; *p && *p != '?'; p++)
        if (p[0] == '%' && p[1] == '2' && (p[2] == 'F' || p[2] == 'f'))
            return RKD_ENCODED_SLASH;
    return NULL;
}

size_t rkd_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    char *out = s;
    (void)cls, (void)c;
    for (const char *p = s; *p; p++) {
        if (*p != '%') {
            *out++ = *p;
            continue;
        }
        int hi = hex_value(p[1]), lo = hi >= 0 ? hex_value(p[2]) : -1;
        *out++ = hi < 0 || lo < 0 || (hi | lo) == 0 ? RKD_BAD_ESCAPE : (char)(hi * 16 + lo);
        p += hi >= 0 && lo >= 0 ? 2 : 0; /* a malformed escape's bytes are looked at again */
    }
    *out = '\0';
    return (size_t)(out - s);
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    while (*s >= '0' && *s <= '9')
        s++;
    return *s == '\0';
}

static void blame(rkd_framing *f, const char *field, const char *why)
{
    if (!f->field)
        f->field = field, f->why = why;
}

static enum MHD_Result see_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    rkd_framing *f = cls;
    (void)kind, (void)key_size;
    /* "Transfer-Encoding : chunked": a proxy may take it for the framing header, and this server
     * would not (RFC 9112: no whitespace between a field name and its colon) */
    if (strpbrk(key, " \t"))
        blame(f, key, "must not have a space or tab before its colon");
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (f->content_length++ || !all_digits(value))
            blame(f, MHD_HTTP_HEADER_CONTENT_LENGTH, "must be given once, as a number of bytes");
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        if (f->transfer_encoding++ || strcasecmp(value, "chunked") != 0)
            blame(f, MHD_HTTP_HEADER_TRANSFER_ENCODING, "must be given once, as \"chunked\"");
    } else if (strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0) {
        if (f->authorization++)
            blame(f, MHD_HTTP_HEADER_AUTHORIZATION, "must be given once");
        f->authz = (uintptr_t)value, f->authz_end = (uintptr_t)value + value_size;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0 && f->host++) {
        blame(f, MHD_HTTP_HEADER_HOST, "must be given once");
    }
    if (f->authz && (uintptr_t)key > f->authz && (!f->next_key || (uintptr_t)key < f->next_key))
        f->next_key = (uintptr_t)key;
    return MHD_YES;
}

/* "Bearer <token>\0junk": libmicrohttpd 0.9.75 gives the value, and its size, up to the NUL, so a
 * proxy that checked the whole value and this server would read different tokens. Its parser works
 * in place: the header block (from the method on) holds each line with its CR LF replaced by NULs,
 * so the bytes from the value's end to the next line's key (or the block's end) are NULs, CR, LF
 * or blanks unless the value went on past a NUL. Only bytes inside the block are read. */
static int nul_in_authorization(struct MHD_Connection *c, const char *method, const rkd_framing *f)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    uintptr_t start = (uintptr_t)method, end = info ? start + info->header_size : start;
    if (!f->authz || f->authz < start || f->authz_end >= end)
        return 0;
    if (f->next_key && f->next_key < end)
        end = f->next_key;
    for (const char *p = (const char *)f->authz_end; (uintptr_t)p < end; p++) {
        if (!strchr("\r\n \t", *p)) /* strchr finds the NUL too */
            return 1;
    }
    return 0;
}

/* Finds what a proxy and this server could read as different requests (request smuggling): two
 * lengths, a length and chunks, a coding libmicrohttpd would not decode, a second Authorization
 * that something in front may have checked instead of the first. */
static rkd_framing check_lines(struct MHD_Connection *c, const char *method, const char *version)
{
    rkd_framing f = {0};
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, see_header, &f);
    if (nul_in_authorization(c, method, &f))
        blame(&f, MHD_HTTP_HEADER_AUTHORIZATION, "must not hold a NUL byte");
    if (f.content_length && f.transfer_encoding)
        blame(&f, MHD_HTTP_HEADER_TRANSFER_ENCODING, "must not come with Content-Length");
    if (!f.host && strcmp(version, MHD_HTTP_VERSION_1_1) == 0)
        blame(&f, MHD_HTTP_HEADER_HOST, "is required in HTTP/1.1");
    return f;
}

/* Only a POST or a PUT is read: a body on any other method would be buffered (up to --max-body) for
 * a route that ignores it, so 8 MiB on a GET /healthz on each of many connections would cost as
 * many times 8 MiB before any token is asked for. Refused by its headers, before a byte of it is
 * read. */
static void refuse_body(rkd_framing *f, struct MHD_Connection *c, const char *method)
{
    if (strcmp(method, MHD_HTTP_METHOD_POST) == 0 || strcmp(method, MHD_HTTP_METHOD_PUT) == 0)
        return;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (f->transfer_encoding)
        blame(f, MHD_HTTP_HEADER_TRANSFER_ENCODING, "announces a body: only POST and PUT take one");
    else if (cl && strtoull(cl, NULL, 10) > 0)
        blame(f, MHD_HTTP_HEADER_CONTENT_LENGTH, "announces a body: only POST and PUT take one");
}

rkd_framing rkd_check_framing(struct MHD_Connection *c, const char *method, const char *version)
{
    rkd_framing f = check_lines(c, method, version);
    refuse_body(&f, c, method);
    return f;
}
