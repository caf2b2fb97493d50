/* haproxyconf.h — HAProxy backends to and from haproxy-scheme topologies, for `ringkeeper import
 * --haproxy` and `ringkeeper export --format haproxy [--into]` (docs/LOADBALANCERS.md). Reads
 * HAProxy's configuration syntax (sections, words, quotes, escapes, comments); writes a backend
 * section, or rewrites the servers of one in place. Only
 * what decides where keys go is carried over: the servers' ids and weights, `hash-type consistent`
 * and its function; every other setting is the operator's. */
#ifndef RK_CLI_HAPROXYCONF_H
#define RK_CLI_HAPROXYCONF_H

#include <stddef.h>

#include <jansson.h>

#define RK_HAP_MSG_MAX 512

/* The haproxy-scheme topology (a new JSON object: scheme, hash, request_key, nodes) of the backend
 * (or listen section) named `backend` in the HAProxy configuration `text` (len bytes), with what
 * the last `defaults` section before it sets. Node ids are the servers' ids: their `id`, else the
 * number HAProxy gives them by their place; addrs their addresses as written; weights their
 * `weight` (1 when absent, 0 kept: such a server owns nothing). request_key is the balance's words
 * when the library takes that key from a request (rk_request_key_check). Refuses, with a sentence
 * in msg naming the line, what the ring cannot represent: a balance that is no hash (`roundrobin`,
 * `random`, ...), `hash-type map-based` (the default), the hash function `none`,
 * `hash-balance-factor`, `backup` and `disabled` servers, `server-template`, `hash-key` other
 * than `id`; and a configuration it cannot read. `note` gets lines ('\n' apart; "" when none) on
 * what was read but is worth knowing: a balance left out of request_key, and the servers without
 * `id`, whose ids change when a server is added or removed before them. Returns NULL on failure;
 * the caller json_decref()s the result. */
json_t *rk_hap_import(const char *text, size_t len, const char *backend, char msg[RK_HAP_MSG_MAX],
                      char note[RK_HAP_MSG_MAX]);

/* The backend section `backend` balancing by `balance` (such as "uri" or "hdr(X-Key)") for the
 * haproxy-scheme topology (or version document) `doc`: servers in the topology's order, each named
 * s<id> with its `id` pinned, weight 0 kept. A malloc'd NUL-terminated text (free() it), or NULL
 * with a sentence in msg. */
char *rk_hap_export(const json_t *doc, const char *backend, const char *balance,
                    char msg[RK_HAP_MSG_MAX]);

/* `text` (len bytes), a HAProxy configuration, with only the servers of backend (or listen
 * section) `backend` replaced by those of the haproxy-scheme topology `doc`, every other byte as
 * it was. A server whose id (its `id`, else its number by place) is a node's keeps its line as
 * written (name, options such as check and inter, comment) but for the node's address (its word
 * replaced when it differs) and weight (its value set, or ` weight W` written at the end), and
 * ` id N` is written on a server numbered by its place, so that no server added or removed before
 * it moves it. A server the topology lacks goes, its line whole; new ones follow the last server
 * line, indented as it is, as `server s<id> ADDR id <id> weight <w>` (weight 0 kept). Refused,
 * with a sentence in msg: what rk_hap_import refuses, a backend whose effective hash-type (its
 * defaults' included) is not the topology's hash, a topology of another scheme, a new server's
 * name taken, an address HAProxy would not read as one word, and a result that does not read back
 * as the topology. A malloc'd NUL-terminated text (free() it), or NULL. */
char *rk_hap_into(const char *text, size_t len, const char *backend, const json_t *doc,
                  char msg[RK_HAP_MSG_MAX]);

#endif
