/* scheme.h — the ring schemes: what makes one scheme's points differ from another's (library
 * internals, beside internal.h, which includes this). */
#ifndef RKI_SCHEME_H
#define RKI_SCHEME_H

#include <stddef.h>
#include <stdint.h>

#include "ringkeeper.h"

/* ---- ring schemes: which points a ring has ----
 *
 * A scheme decides how many points each node gets, where they are, the size of the hash space and
 * which of two points at one position comes first. Everything after that is the same for every
 * scheme: the sort and the lookup index (ring.c), lookups and replicas, arcs and shares, the
 * fingerprint (always ranks nodes in id byte order, docs/RING.md), and the plan (plan.c).
 *
 * The ringkeeper scheme of docs/RING.md is scheme/ringkeeper.c, the ketama scheme of
 * docs/KETAMA.md scheme/ketama.c. A further scheme is one more file defining an rki_scheme named
 * rki_scheme_<name>, and one line `rk_scheme(<name> <file>)` in client/CMakeLists.txt, which
 * compiles the file and registers it (scheme/registry.c). A lookup rule other than "the first
 * point at or after the key's hash" is one more operation run after the sort (docs/ARCHITECTURE.md,
 * "Ring schemes"). */
/* A topology's scheme parameters, as the public constructors take them. */
typedef struct rki_params {
    uint32_t vnode_factor;   /* the ringkeeper scheme's; 0 in a scheme without it */
    const char *hash_tag;    /* the ketama scheme's two characters, or NULL */
    const char *request_key; /* the balancer schemes' key from a request (rki_request_keys), or
                              * NULL */
} rki_params;

/* A field some scheme has, and what a document of a scheme without it is told. */
typedef struct rki_field_note {
    const char *key;
    const char *message;
} rki_field_note;

typedef struct rki_scheme {
    const char *name; /* the topology's "scheme" (docs/KETAMA.md) */
    rk_scheme id;     /* its value: RK_SCHEME_*, or a value of its own outside that enum */
    /* The hashes its topologies may name, in the order messages list them (RK_HASH_MAP,
     * RK_KETAMA_HASH_MAP): a name means a hash only within a scheme, and two schemes may share
     * one. */
    const rk_hash_alg *hashes;
    size_t n_hashes;
    /* Its own fields of a topology document (NULL-terminated), beside those every scheme has
     * (scheme, hash, nodes, comment, data). Any other field is refused, with the message of
     * `misplaced` for a field another scheme has (a NULL key ends it), else `unknown`. */
    const char *const *fields;
    const rki_field_note *misplaced;
    const char *unknown;
    /* Its parameters from `doc`, whose fields passed the rule above: RK_ETOPOLOGY naming the
     * field. read, write and check are NULL in a scheme without parameters. */
    int (*read)(const struct json_t *doc, rki_params *p, rk_error *err);
    /* Its parameters into `doc`, after "hash": 0, or -1 when out of memory. */
    int (*write)(const rk_topology *t, struct json_t *doc);
    /* Its parameters' rules (RK_ETOPOLOGY naming the field), checked before the nodes. */
    int (*check)(const rki_params *p, rk_error *err);
    /* Its rules for the nodes' weights (and ids, in a scheme that gives them a meaning), which
     * passed the rules every scheme shares, and the ring's point count into *points: RK_ETOPOLOGY
     * naming the node's field, RK_ETOOBIG past RK_MAX_POINTS. */
    int (*count)(const rki_params *p, const rk_node *nodes, size_t n, uint64_t *points,
                 rk_error *err);
    /* The hash space of rings of `t` is 2^bits: 32 or 64 (the sizes ring.c, plan.c and steps.c
     * know). */
    unsigned (*bits)(const rk_topology *t);
    /* Points of every node of `t` into count[0 .. node_count - 1]; 0 for a node of weight 0. */
    void (*point_counts)(const rk_topology *t, uint32_t *count);
    /* Every node index of `t` into order[0 .. node_count - 1], in the order that breaks ties: of
     * two points at one position, the one whose node comes first here comes first in the ring. */
    void (*tie_order)(const rk_topology *t, uint32_t *order);
    /* The positions of node `node`'s `count` points (count as point_counts gave) into out. */
    void (*positions)(const rk_topology *t, size_t node, uint32_t count, uint64_t *out);
    /* The lookup rule: NULL when the first point at or after a key's position owns the key. Else
     * the ring's positions, sorted (n of them, in a space of 2^bits), are turned in place into
     * the last position each point owns, in the same order save the last, which may wrap to the
     * lowest (ring.c moves it to the front). Lookups, arcs, shares and plans then follow from
     * those ends as from any ring's points. */
    void (*owned_ends)(uint64_t *pos, size_t n, unsigned bits);
    /* A key's position as a lookup computes it, from the topology's hash and hash tag (NULL when
     * it has none): rk_ring_key_hash, and what a data mover tells moving keys by. */
    uint64_t (*key_hash)(rk_hash_alg hash, const char *hash_tag, const void *key, size_t len);
    /* How its balancer takes a key from a request (its topologies' "request_key"), or NULL in a
     * scheme whose keys are given as they are. */
    const struct rki_request_keys *request_keys;
} rki_scheme;

/* ---- request_key.c: a balancer's key from a request ---- */

/* A key being built; grows as rki_key_add appends. */
typedef struct rki_key {
    char *data;
    size_t len, cap;
} rki_key;
/* Appends n bytes of s: RK_OK or RK_ENOMEM. */
int rki_key_add(rki_key *k, const void *s, size_t n);

typedef struct rki_request_keys {
    /* What a request_key of this balancer may say, for a message ("$request_uri, ..."). */
    const char *allowed;
    /* RK_OK when `spec` (printable ASCII, checked before) is one this build evaluates as the
     * balancer does; else RK_ETOPOLOGY (field "request_key") saying which part is not. */
    int (*check)(const char *spec, rk_error *err);
    /* The key of `req` by `spec` (checked) appended to `out`: RK_OK, RK_EINVAL (field "uri") for
     * a target the balancer answers 400, RK_ENOMEM. */
    int (*eval)(const char *spec, const rk_request *req, rki_key *out, rk_error *err);
} rki_request_keys;

extern const rki_request_keys rki_nginx_request_keys, rki_haproxy_request_keys;

/* The read and write operations of a scheme whose only parameter is its request_key. */
int rki_request_key_read(const struct json_t *doc, rki_params *p, rk_error *err);
int rki_request_key_write(const rk_topology *t, struct json_t *doc);
/* The check operation's: `spec` (NULL: none) is 1..RKI_REQUEST_KEY_MAX bytes of printable ASCII
 * without quotes, '#', ';' or '\\' (an export writes it into a configuration unquoted), and one
 * `k` evaluates. */
#define RKI_REQUEST_KEY_MAX 256
int rki_request_key_check(const rki_request_keys *k, const char *spec, rk_error *err);

/* The two schemes every build has (the public constructors make their topologies). */
extern const rki_scheme rki_scheme_ringkeeper;
extern const rki_scheme rki_scheme_ketama;

/* ---- scheme/registry.c: the schemes of this build, and operations schemes share ---- */

/* tie_order by node id bytes (the topology's order), the rule of most schemes. */
void rki_tie_order_by_id(const rk_topology *t, uint32_t *order);
/* key_hash of a scheme that hashes the whole key with the topology's hash. */
uint64_t rki_key_hash_whole(rk_hash_alg hash, const char *hash_tag, const void *key, size_t len);

/* The scheme `id` names, or NULL when this build has none; static storage. */
const rki_scheme *rki_scheme_of(rk_scheme id);
/* Non-zero when `s`'s topologies may name `hash`. */
int rki_scheme_has_hash(const rki_scheme *s, rk_hash_alg hash);
/* The names of this build's schemes for a message, as "\"ringkeeper\" (the default) or
 * \"ketama\"": into buf; returns buf. */
const char *rki_scheme_names(char *buf, size_t size);

/* ---- scheme/ketama.c ---- */

/* twemproxy writes a point's name "<id>-<j>" into 86 bytes (KETAMA_MAX_HOSTLEN): longer ones are
 * refused rather than hashed differently. */
#define RKI_KETAMA_NAME_MAX 85
/* Points of a node of `weight` among `live` nodes with weight > 0 weighing `total_weight`. */
uint32_t rki_ketama_point_count(uint32_t weight, uint32_t total_weight, uint32_t live);
/* A key's position as twemproxy computes it: the part inside the hash tag `tag` (two characters,
 * or NULL) when non-empty, the empty key at 0, else rk_hash(hash). */
uint64_t rki_ketama_key_hash(rk_hash_alg hash, const char *tag, const void *key, size_t len);

/* ---- scheme/haproxy.c: HAProxy's key hashes (RK_HAPROXY_HASH_MAP), as HAProxy 2.6 computes
 * them ---- */
#define RKI_HAPROXY_HASH_DECL_(suffix, name, value)                                                \
    uint32_t rki_hp_##name(const void *key, size_t len);
RK_HAPROXY_HASH_MAP(RKI_HAPROXY_HASH_DECL_)
#undef RKI_HAPROXY_HASH_DECL_

#endif
