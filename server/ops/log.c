/* log.c — ringkeeperd's log lines (log.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static _Atomic(const char *) log_name = "ringkeeperd";

void rkd_log_set_name(const char *name)
{
    atomic_store(&log_name, name);
}

/* Formats `prefix` and the message into one buffer, cut to RKD_LOG_LINE_MAX, and writes it at
 * once: stderr is unbuffered, and a line written in pieces could be split by another thread's. */
static void write_line(const char *prefix, const char *fmt, va_list ap)
{
    char line[RKD_LOG_LINE_MAX];
    int n = prefix ? snprintf(line, sizeof line, "%s: ", prefix) : 0;
    size_t len = n > 0 ? (size_t)n : 0;
    n = vsnprintf(line + len, sizeof line - len - 1, fmt, ap);
    len += n < 0 ? 0 : (size_t)n < sizeof line - len - 1 ? (size_t)n : sizeof line - len - 2;
    line[len++] = '\n';
    for (size_t off = 0; off < len;) { /* a pipe or file may take it in parts */
        ssize_t w = write(STDERR_FILENO, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* a log that cannot be written must not stop the server */
        off += (size_t)w;
    }
}

void rkd_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(atomic_load(&log_name), fmt, ap);
    va_end(ap);
}

int rkd_log_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(atomic_load(&log_name), fmt, ap);
    va_end(ap);
    return code;
}

void rkd_log_raw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    write_line(NULL, fmt, ap);
    va_end(ap);
}
