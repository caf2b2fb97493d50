/* nginx.h — what the nginx format's reader (nginx_read.c) gives its writer (nginx.c): an upstream's
 * topology, and where each of its servers is written, for rewriting them in place. Reads nginx's
 * configuration syntax (words, quoted strings, comments, blocks). */
#ifndef RK_CLI_FORMAT_NGINX_H
#define RK_CLI_FORMAT_NGINX_H

#include <stddef.h>

#include <jansson.h>

#include "format.h"

#define RK_NGX_WORD_MAX 1024 /* bytes of one word */

/* Where a server directive of the upstream is written in the text. */
typedef struct rk_ngx_placed {
    const char *from, *to;           /* the directive, its ';' included */
    const char *addr_end;            /* just past its address */
    const char *weight, *weight_end; /* its weight= word; NULL when it has none */
    size_t line;
} rk_ngx_placed;

typedef struct rk_ngx_placements {
    rk_ngx_placed *v; /* malloc'd: free() it */
    size_t n, cap;
} rk_ngx_placements;

/* The nginx-scheme topology (a new JSON object: scheme, hash, request_key, nodes) of the upstream
 * named `upstream` in the nginx configuration `text` (len bytes; an `include` is not followed).
 * Node ids are the servers' addresses as written, weights their `weight=` (1 when absent);
 * request_key is the `hash` key when the library takes that key from a request
 * (rk_request_key_check), else `note` says why it is left out (else note is ""). Refuses, with a
 * sentence in msg naming the line, what the ring cannot represent: no `hash ... consistent` (a
 * hash without `consistent`, `random`, round robin), `backup` and `down` servers, `resolve`, a
 * server `service=`; and a configuration it cannot read. Returns NULL on failure; the caller
 * json_decref()s the result. */
json_t *rk_ngx_import(const char *text, size_t len, const char *upstream,
                      char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX]);

/* The servers of upstream `upstream` of `text` as nodes ({id, addr, weight}, appended to `nodes`),
 * its hash key into `key`, and where each server is written into `at`, in nodes' order: 0, or -1
 * with msg set, for what rk_ngx_import refuses. */
int rk_ngx_read_servers(const char *text, size_t len, const char *upstream, json_t *nodes,
                        char key[RK_NGX_WORD_MAX], rk_ngx_placements *at,
                        char msg[RK_CLI_FORMAT_MSG_MAX]);

#endif
