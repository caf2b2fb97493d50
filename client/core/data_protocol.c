/* data_protocol.c — the data protocols a topology's "data" may name: the one list of them.
 *
 * It comes from client/CMakeLists.txt: each `rk_data_protocol(<name> ...)` there writes
 * RK_DATA_PROTOCOL(<name>) into data_protocols.def, which this file reads for the names and the
 * data mover's driver.c for its drivers, so the names a topology may say, the server's checks and
 * messages, and the mover's table are one registration. */
#include <string.h>

#include "internal.h"

static const char *const protocols[] = {
#define RK_DATA_PROTOCOL(name) #name,
#include "data_protocols.def"
#undef RK_DATA_PROTOCOL
};
#define N_PROTOCOLS (sizeof protocols / sizeof protocols[0])

const char *rk_data_protocol(size_t i)
{
    return i < N_PROTOCOLS ? protocols[i] : NULL;
}

const char *rk_data_protocol_find(const char *name)
{
    for (size_t i = 0; name && i < N_PROTOCOLS; i++)
        if (strcmp(name, protocols[i]) == 0)
            return protocols[i];
    return NULL;
}

static const char *protocol_at(const void *unused, size_t i)
{
    (void)unused;
    return protocols[i];
}

const char *rk_data_protocol_names(char *buf, size_t size, const char *quote)
{
    return rki_list_names(N_PROTOCOLS, protocol_at, NULL, "", buf, size, quote, " or ");
}
