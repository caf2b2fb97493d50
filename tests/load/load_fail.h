/* load_fail.h — the "FAIL: ..." lines of the load programs (rk_load, rk_fleet), counted. */
#ifndef RK_LOAD_FAIL_H
#define RK_LOAD_FAIL_H

#include <stdarg.h>
#include <stdio.h>

/* Prints "FAIL: " and the message on stdout, and counts it in *failures. */
static inline void fail(int *failures, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    (*failures)++;
}

#endif
