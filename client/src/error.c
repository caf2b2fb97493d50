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

int rki_error_set(rk_error *err, int code, const char *field, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    size_t off = 0;
    if (err->field[0])
        off = (size_t)snprintf(err->message, sizeof err->message, "%s: ", err->field);
    if (off >= sizeof err->message)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + off, sizeof err->message - off, fmt, ap);
    va_end(ap);
    return code;
}
