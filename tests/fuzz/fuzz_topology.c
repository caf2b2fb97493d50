/* fuzz_topology.c — libFuzzer harness: the topology parser and validator (docs/RING.md) on any
 * bytes; a valid topology must survive a round trip through JSON and build a ring, and a balancer
 * topology's request_key must take a key from any request or refuse its target. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ringkeeper.h"

#define RING_POINTS_MAX 65536 /* build rings only this small, so runs stay fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The topology's JSON text must parse again into the same number of nodes and points. */
static void round_trip(const rk_topology *t)
{
    json_t *doc = rk_topology_to_json(t);
    if (!doc)
        return;
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return;
    rk_error err = {0};
    rk_topology *again = rk_topology_parse(text, strlen(text), &err);
    if (!again || rk_topology_node_count(again) != rk_topology_node_count(t) ||
        rk_topology_points(again) != rk_topology_points(t))
        abort();
    rk_topology_free(again);
    free(text);
}

/* A balancer topology's key of a request made of the input: its bytes as the target's path and as
 * the value of each header field the keys read. Evaluated, or refused for its target only. */
static void request_key(const rk_topology *t, const uint8_t *data, size_t size)
{
    char *text = malloc(size + 2);
    if (!text)
        return;
    text[0] = '/';
    memcpy(text + 1, data, size);
    text[size + 1] = 0;
    const char *value = text + 1;
    rk_header h[] = {{"X-Key", value},
                     {"Cookie", value},
                     {"x-forwarded-for", value},
                     {"Cookie", "sid=1; a"},
                     {"X-Key", "b"}};
    rk_request req = {text, h, sizeof h / sizeof h[0]};
    rk_error err = {0};
    char *key = NULL;
    size_t len = 0;
    int rc = rk_request_key(t, &req, &key, &len, &err);
    if (rc == RK_OK && strlen(text) * 64 + 4096 < len)
        abort(); /* a key is made of the request's parts, each at most once a variable */
    if (rc != RK_OK && (rc != RK_EINVAL || strcmp(err.field, "uri") != 0) && rc != RK_ENOMEM)
        abort();
    free(key);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rk_error err = {0};
    rk_topology *t = rk_topology_parse((const char *)data, size, &err);
    if (!t) {
        if (err.code >= 0 || strlen(err.message) == 0)
            abort(); /* every refusal says why */
        return 0;
    }
    round_trip(t);
    if (rk_topology_request_key(t))
        request_key(t, data, size);
    if (rk_topology_points(t) <= RING_POINTS_MAX) {
        rk_ring *r = rk_ring_build(t, &err);
        if (r) {
            uint32_t owner = rk_ring_lookup(r, data, size);
            if (owner >= rk_topology_node_count(t) || rk_topology_node(t, owner)->weight == 0)
                abort();
            rk_ring_free(r);
        }
    }
    rk_topology_free(t);
    return 0;
}
