/* error.c — status codes as text, and filling an rk_error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *rk_strerror(int code)
{
    switch (code) {
#define RK_TEXT_(name, value, text)                                                                \
    case RK_##name:                                                                                \
        return text;
        RK_ERRNO_MAP(RK_TEXT_)
#undef RK_TEXT_
    }
    return "unknown error";
}

const char *rk_errname(int code)
{
    switch (code) {
#define RK_NAME_(name, value, text)                                                                \
    case RK_##name:                                                                                \
        return "RK_" #name;
        RK_ERRNO_MAP(RK_NAME_)
#undef RK_NAME_
    }
    return "unknown error";
}

/* Removes the bytes of UTF-8 sequences that a "%.Ns" or the end of a buffer cut short, so that a
 * message stays valid UTF-8 (a server puts it into a JSON string). Bytes in messages come from
 * valid UTF-8, so only cuts need repair. */
static void drop_cut_utf8(char *s)
{
    unsigned char *in = (unsigned char *)s, *out = in;
    while (*in) {
        size_t len = *in < 0x80 ? 1 : *in >= 0xF0 ? 4 : *in >= 0xE0 ? 3 : *in >= 0xC0 ? 2 : 0;
        size_t k = 1;
        while (k < len && (in[k] & 0xC0) == 0x80)
            k++;
        if (len && k == len) { /* whole: kept; cut short or a stray continuation byte: dropped */
            memmove(out, in, len);
            out += len;
        }
        in += k;
    }
    *out = '\0';
}

int rk_error_set(rk_error *err, int code, const char *field, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    drop_cut_utf8(err->field);
    size_t off = 0;
    if (err->field[0])
        off = (size_t)snprintf(err->message, sizeof err->message, "%s: ", err->field);
    if (off >= sizeof err->message)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + off, sizeof err->message - off, fmt, ap);
    va_end(ap);
    drop_cut_utf8(err->message);
    return code;
}
