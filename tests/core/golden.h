/* golden.h — reading the golden vectors (tests/vectors, RK_VECTORS_DIR) in the cmocka tests that
 * check the library against them: a vector file as JSON, and the ring of one of its topologies. */
#ifndef RK_TESTS_GOLDEN_H
#define RK_TESTS_GOLDEN_H

#include <stdio.h>

#include <jansson.h>

#include "ringkeeper.h"

/* The vector file `name` as JSON: a new reference; fails the test when unreadable. */
static json_t *load(const char *name)
{
    char path[1024];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/%s", RK_VECTORS_DIR, name);
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc)
        fail_msg("%s: %s", path, jerr.text);
    return doc;
}

/* The ring of a vector's topology document; free with rk_ring_free. */
static rk_ring *ring_of(const json_t *topology)
{
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(topology, &err);
    if (!t)
        fail_msg("topology refused: %s", err.message);
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    assert_non_null(r);
    return r;
}

#endif
