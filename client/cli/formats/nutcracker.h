/* nutcracker.h — what the nutcracker format's reader (nutcracker_read.c) gives its writer
 * (nutcracker.c): a twemproxy configuration parsed with libyaml, its pools found by name, a pool's
 * ketama topology, and the import the format's table names. */
#ifndef RK_CLI_FORMAT_NUTCRACKER_H
#define RK_CLI_FORMAT_NUTCRACKER_H

#include <stddef.h>

#include <jansson.h>
#include <yaml.h>

#include "format.h"

/* The port twemproxy leaves out of a server's name: host alone names host:11211. */
#define RK_NC_DEFAULT_PORT "11211"

/* Writes the sentence into msg; returns NULL, for `return rk_nc_fail(...)`. */
void *rk_nc_fail(char msg[RK_CLI_FORMAT_MSG_MAX], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Parses `yaml` into *doc (yaml_document_delete it): 0, or -1 with a sentence in msg. */
int rk_nc_load(const char *yaml, size_t len, yaml_document_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX]);
/* The value of `key` in mapping `map`, or NULL; a node of doc. */
yaml_node_t *rk_nc_lookup(yaml_document_t *doc, yaml_node_t *map, const char *key);
/* `pool`, or when it is NULL the configuration's only pool (a string of doc); NULL with a sentence
 * in msg. */
const char *rk_nc_pool_name(yaml_document_t *doc, const char *pool,
                            char msg[RK_CLI_FORMAT_MSG_MAX]);
/* The ketama topology of pool `pool` of doc (a new object: json_decref it), as rk_nc_import
 * says; NULL with a sentence in msg. */
json_t *rk_nc_pool_topology(yaml_document_t *doc, const char *pool,
                            char msg[RK_CLI_FORMAT_MSG_MAX]);
/* The format's import (format.h): the ketama topology (scheme, hash, hash_tag when set, data,
 * nodes) of pool `pool` (NULL: the configuration's only pool) in the nutcracker configuration
 * `yaml` (len bytes): data "redis" for a pool with `redis: true`, else "memcached" (twemproxy's
 * default). Node ids are the names twemproxy hashes: the configured name, else `host` for port
 * 11211, else `host:port`. Refuses, with a sentence in msg, a pool ringkeeper cannot represent
 * (distribution other than ketama, auto_eject_hosts true) or an unreadable one. No note. */
json_t *rk_nc_import(const char *yaml, size_t len, const char *pool,
                     char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX]);

#endif
