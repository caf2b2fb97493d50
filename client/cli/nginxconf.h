/* nginxconf.h — nginx upstreams to and from nginx-scheme topologies, for `ringkeeper import
 * --nginx` and `ringkeeper export --format nginx [--into]` (docs/LOADBALANCERS.md). Reads nginx's
 * configuration syntax (words, quoted strings, comments, blocks); writes an upstream block, or
 * rewrites the servers of one in place. Only
 * what decides where keys go is carried over: `hash ... consistent` and the servers (addresses and
 * weights); every other option is the operator's. */
#ifndef RK_CLI_NGINXCONF_H
#define RK_CLI_NGINXCONF_H

#include <stddef.h>

#include <jansson.h>

#define RK_NGX_MSG_MAX 512

/* The nginx-scheme topology (a new JSON object: scheme, hash, request_key, nodes) of the upstream
 * named `upstream` in the nginx configuration `text` (len bytes; an `include` is not followed).
 * Node ids are the servers' addresses as written, weights their `weight=` (1 when absent);
 * request_key is the `hash` key when the library takes that key from a request
 * (rk_request_key_check), else `note` says why it is left out (else note is ""). Refuses, with a
 * sentence in msg naming the line, what the ring cannot represent: no `hash ... consistent` (a
 * hash without `consistent`, `random`, round robin), `backup` and `down` servers, `resolve`, a
 * server `service=`; and a configuration it cannot read. Returns NULL on failure; the caller
 * json_decref()s the result. */
json_t *rk_ngx_import(const char *text, size_t len, const char *upstream, char msg[RK_NGX_MSG_MAX],
                      char note[RK_NGX_MSG_MAX]);

/* The upstream block `upstream` hashing `key` (such as "$request_uri") for the nginx-scheme
 * topology (or version document) `doc`: servers in the topology's order, nodes of weight 0 left
 * out (they have no point; every other server keeps its own). A malloc'd NUL-terminated text
 * (free() it), or NULL with a sentence in msg. */
char *rk_ngx_export(const json_t *doc, const char *upstream, const char *key,
                    char msg[RK_NGX_MSG_MAX]);

/* `text` (len bytes), an nginx configuration, with only the servers of upstream `upstream`
 * replaced by those of the nginx-scheme topology `doc`, every other byte as it was. A server whose
 * address is a node's id keeps its directive as written (its options, such as max_fails=, and the
 * comments around it) but for its weight= (written when not 1, or when it was written); one the
 * topology lacks or weighs 0 is dropped, with its line when it has one to itself (a comment on it
 * goes too); new servers follow the last kept one, `server ID[ weight=W];` indented as it is.
 * Refused, with a sentence in msg: what rk_ngx_import refuses (no `hash ... consistent` among it),
 * a topology of another scheme or without a server of weight > 0, a kept address written twice,
 * and a result that does not read back as the topology. A malloc'd NUL-terminated text (free()
 * it), or NULL. */
char *rk_ngx_into(const char *text, size_t len, const char *upstream, const json_t *doc,
                  char msg[RK_NGX_MSG_MAX]);

#endif
