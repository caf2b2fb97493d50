/* haproxy.h — what the haproxy format's reader (haproxy_read.c) gives its writer (haproxy.c): a
 * backend's rules and servers, where each server is written, and its topology. */
#ifndef RK_CLI_FORMAT_HAPROXY_H
#define RK_CLI_FORMAT_HAPROXY_H

#include <stddef.h>

#include <jansson.h>

#include "format.h"
#include "ringkeeper.h" /* RK_MAX_ADDR_BYTES */

#define SHORT_MAX 64 /* a setting's word (balance, hash-type) or a server's name, kept */

/* Bytes [at, past) of the configuration. */
typedef struct span {
    const char *at, *past;
} rk_hap_span;

/* A server's options that decide its points or keep it off the ring; or default-server's. */
typedef struct options {
    int weight, backup, disabled;
    long id;         /* 0: not pinned */
    int weight_word; /* the word holding weight's value; 0: none */
} rk_hap_options;

/* What a `defaults` section or the backend sets that decides where keys go. */
typedef struct rules {
    char balance[SHORT_MAX], method[SHORT_MAX], function[SHORT_MAX], modifier[SHORT_MAX];
    char balance_words[RK_CLI_FORMAT_MSG_MAX];   /* the balance line's words, one space apart */
    size_t balance_line, hash_line, factor_line; /* 0: not set */
    rk_hap_options dflt;                         /* default-server's */
} rk_hap_rules;

typedef struct server {
    char name[SHORT_MAX], addr[RK_MAX_ADDR_BYTES + 1];
    long id; /* 0: not pinned; negative: numbered by its place */
    int weight;
    rk_hap_span line, addr_word, weight_word, words; /* weight_word.at NULL: none written */
} rk_hap_server;

typedef struct backend {
    rk_hap_rules r;
    rk_hap_server *servers;
    size_t n, cap;
} rk_hap_backend;

/* Puts the sentence of fmt into msg, after "line N: " when line is not 0: returns -1. */
int rk_hap_refuse(char *msg, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The backend (or listen section) `name` of the configuration `text` (len bytes) into b, with what
 * the last `defaults` section before it sets, its servers numbered, its rules checked, the
 * topology's hash name into hash: 0, or -1 with msg set. b->servers is malloc'd: free() it. */
int rk_hap_load_backend(const char *text, size_t len, const char *name, rk_hap_backend *b,
                        char hash[2 * SHORT_MAX], char msg[RK_CLI_FORMAT_MSG_MAX]);

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
json_t *rk_hap_import(const char *text, size_t len, const char *backend,
                      char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX]);

#endif
