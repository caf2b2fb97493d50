/* nutcracker.h — twemproxy (nutcracker) pool configurations to and from ketama topologies, for
 * `ringkeeper import` and `ringkeeper export` (docs/KETAMA.md). Reads YAML with libyaml; writes
 * the pool as text. Only what decides where keys go is carried over: the key hash, the hash tag and
 * the servers (weights and names); every other pool option is the operator's. */
#ifndef RK_CLI_NUTCRACKER_H
#define RK_CLI_NUTCRACKER_H

#include <stddef.h>

#include <jansson.h>

#define RK_NC_MSG_MAX 512

/* The ketama topology (a new JSON object: scheme, hash, hash_tag when set, data, nodes) of pool
 * `pool` (NULL: the configuration's only pool) in the nutcracker configuration `yaml` (len bytes):
 * data "redis" for a pool with `redis: true`, else "memcached" (twemproxy's default). Node
 * ids are the names twemproxy hashes: the configured name, else `host` for port 11211, else
 * `host:port`. Refuses, with a sentence in msg, a pool ringkeeper cannot represent (distribution
 * other than ketama, auto_eject_hosts true) or an unreadable one. Returns NULL on failure; the
 * caller json_decref()s the result. */
json_t *rk_nc_import(const char *yaml, size_t len, const char *pool, char msg[RK_NC_MSG_MAX]);

/* The nutcracker pool `pool` listening on `listen` for the ketama topology (or version
 * document) `doc`: `redis: true` when its data is "redis", servers in the topology's order,
 * drained nodes (weight 0) left out (they own
 * nothing and twemproxy refuses weight 0; the other servers' points do not change), a name where
 * the node id is not twemproxy's default name for its address. Returns a malloc'd NUL-terminated
 * text (free() it), or NULL with a sentence in msg. */
char *rk_nc_export(const json_t *doc, const char *pool, const char *listen,
                   char msg[RK_NC_MSG_MAX]);

/* `yaml`, a nutcracker configuration, with only the servers of pool `pool` (NULL: the file's only
 * pool, whose name goes to `chosen`) replaced by those of ketama topology `doc`, and every other
 * byte as it was (comments and the pool's other options included). Refused, with a sentence in
 * msg, when the pool's hash or hash_tag differ from the topology's (its servers alone would not
 * route like it) or its protocol from the topology's data (when it has one), and checked by
 * reading the pool back. A malloc'd text (free() it), or NULL. */
char *rk_nc_into(const char *yaml, size_t len, const char *pool, const json_t *doc,
                 char chosen[RK_NC_MSG_MAX], char msg[RK_NC_MSG_MAX]);

#endif
