/* fuzz_verify.c — libFuzzer harness: the client's version-document parser and verifier
 * (rk_client_verify) on any bytes, with a fixed configuration. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringkeeper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const rk_client_config cfg = {
        .server = "http://127.0.0.1:1", .cluster = "cache", .max_body = 1 << 20};
    rk_error err = {0};
    int64_t version = 0;
    rk_topology *t = rk_client_verify(&cfg, (const char *)data, size, 0, &version, &err);
    if (!t) {
        if (err.code >= 0 || strlen(err.message) == 0)
            abort(); /* every refusal says why */
        return 0;
    }
    if (version <= 0 || rk_topology_node_count(t) == 0)
        abort();
    rk_topology_free(t);
    return 0;
}
