/* version.c — the library's version, for programs that link a shared library they did not build
 * with (its header's RK_VERSION_* may be older or newer). */
#include "ringkeeper.h"

#define RK_STR_(x) #x
#define RK_STR(x)  RK_STR_(x)

const char *rk_version(void)
{
    return RK_STR(RK_VERSION_MAJOR) "." RK_STR(RK_VERSION_MINOR) "." RK_STR(RK_VERSION_PATCH);
}
