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
/* ---- hashes: each belongs to the schemes that list it ---- */

typedef struct rki_hash {
    /* Its rk_hash_alg: a value ringkeeper.h names (kept for compatibility), or, for a hash added
     * since, one its file gives it; one hash a value in a build (test_hash checks). Topologies
     * name hashes by string, within their scheme. */
    rk_hash_alg value;
    const char *name;                              /* as topologies name it */
    unsigned bits;                                 /* the hash space is 2^bits: 32 or 64 */
    uint64_t (*key)(const void *data, size_t len); /* H(data), < 2^bits */
    /* The positions H("<id>#<i>") of a node's points 0..count-1, as the ringkeeper scheme places
     * them; NULL in a hash of keys only. */
    void (*points)(const char *id, size_t id_len, uint32_t count, uint64_t *out);
} rki_hash;

/* The ringkeeper scheme's (scheme/ringkeeper_hash.c); the first is its default. */
extern const rki_hash rki_hash_fnv1a_32, rki_hash_md5_32, rki_hash_xxh3_64;
/* The ketama scheme's twelve, twemproxy's, in the order messages list them
 * (scheme/ketama_hash.c); its crc32a is also nginx's CRC-32. */
#define RKI_KETAMA_N_HASHES 12
extern const rki_hash *const rki_ketama_hashes[RKI_KETAMA_N_HASHES];
extern const rki_hash rki_ketama_crc32a;

/* Marks the end of a scheme's params_strings. */
#define RKI_PARAMS_END ((size_t)-1)

/* A field some scheme has, and what a document of a scheme without it is told. */
typedef struct rki_field_note {
    const char *key;
    const char *message;
} rki_field_note;

typedef struct rki_scheme {
    const char *name; /* the topology's "scheme" (docs/KETAMA.md) */
    rk_scheme id;     /* its value: RK_SCHEME_*, or a value of its own outside that enum */
    /* The hashes its topologies may name, in the order messages list them: a name means a hash
     * only within a scheme, and two schemes may share one. */
    const rki_hash *const *hashes;
    size_t n_hashes;
    /* Its own fields of a topology document (NULL-terminated), beside those every scheme has
     * (scheme, hash, nodes, comment, data). Any other field is refused, with the message of
     * `misplaced` for a field another scheme has (a NULL key ends it), else `unknown`. */
    const char *const *fields;
    const rki_field_note *misplaced;
    const char *unknown;
    /* Its parameters: a block of params_size bytes that only the scheme reads (its own struct;
     * 0 and the operations below NULL in a scheme without parameters), so that a parameter of a
     * new scheme is a member of its own struct and core never changes. The block is plain data
     * but for its `const char *` members at the byte offsets params_strings lists (ending at
     * RKI_PARAMS_END): a topology copies those strings and owns the copies, so read may borrow
     * them from the document. */
    size_t params_size;
    const size_t *params_strings;
    /* Its parameters from `doc`, whose fields passed the rule above, into a zeroed block:
     * RK_ETOPOLOGY naming the field. */
    int (*read)(const struct json_t *doc, void *params, rk_error *err);
    /* Its parameters into `doc`, after "hash": 0, or -1 when out of memory. */
    int (*write)(const void *params, struct json_t *doc);
    /* Its parameters' rules (RK_ETOPOLOGY naming the field), checked before the nodes. */
    int (*check)(const void *params, rk_error *err);
    /* RK_EHASHMISMATCH naming the parameter when the rings of two of its topologies, `a` and
     * `b` their blocks, hash keys differently (rk_topology_comparable); RK_OK, or NULL, when
     * the parameters never do. */
    int (*differ)(const void *a, const void *b, rk_error *err);
    /* A node's weight as the topology keeps it, from the weight given (which passed count):
     * NULL keeps it as given. */
    double (*weight)(const void *params, double weight);
    /* Its rules for the nodes' weights (and ids, in a scheme that gives them a meaning), which
     * passed the rules every scheme shares, and the ring's point count into *points: RK_ETOPOLOGY
     * naming the node's field, RK_ETOOBIG past RK_MAX_POINTS. */
    int (*count)(const void *params, const rk_node *nodes, size_t n, uint64_t *points,
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
    /* A table scheme's (Maglev's): the owner of each of its topology's slots (as many as count
     * gave points), a node index of `t`, filled for every node at once: RK_OK or RK_ENOMEM.
     * NULL in a ring scheme, which gives its points node by node (point_counts, tie_order and
     * positions, which a table scheme leaves NULL). Slot k is one point, at
     * rki_slot_position(k, slots, bits), so its key_hash gives a key's slot's position and the
     * rest follows as for a ring (table.c). */
    int (*fill)(const rk_topology *t, uint32_t *owner);
    /* The lookup rule: NULL when the first point at or after a key's position owns the key. Else
     * the ring's positions, sorted (n of them, in a space of 2^bits), are turned in place into
     * the last position each point owns, in the same order save the last, which may wrap to the
     * lowest (ring.c moves it to the front). Lookups, arcs, shares and plans then follow from
     * those ends as from any ring's points. */
    void (*owned_ends)(uint64_t *pos, size_t n, unsigned bits);
    /* A key's position as a lookup computes it, from the topology's hash and parameters:
     * rk_ring_key_hash, and what a data mover tells moving keys by. */
    uint64_t (*key_hash)(const rki_hash *hash, const void *params, const void *key, size_t len);
    /* Why keys move between nodes that did not change, for a plan's warning; NULL when the
     * scheme gives no reason (its rings move only the changed nodes' keys). */
    const char *trades_why;
    /* The parameter that sizes its rings or tables, for a plan's advice when a node has too few
     * entries (plan.c, docs/ENVOY.md "Ring size"), and what else to raise with it (or NULL);
     * NULL in a scheme whose entry counts its parameters do not set. */
    const char *size_param, *size_note;
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

/* The parameters of a scheme whose only parameter is its request_key (a scheme with
 * request_keys begins its block with this struct), and the operations on them. */
typedef struct rki_request_key_params {
    const char *request_key; /* or NULL */
} rki_request_key_params;
extern const size_t rki_request_key_strings[];
int rki_request_key_read(const struct json_t *doc, void *params, rk_error *err);
int rki_request_key_write(const void *params, struct json_t *doc);
int rki_request_key_differ(const void *a, const void *b, rk_error *err);
/* The check operation's: `spec` (NULL: none) is 1..RKI_REQUEST_KEY_MAX bytes of printable ASCII
 * without quotes, '#', ';' or '\\' (an export writes it into a configuration unquoted), and one
 * `k` evaluates. */
#define RKI_REQUEST_KEY_MAX 256
int rki_request_key_check(const rki_request_keys *k, const char *spec, rk_error *err);

/* The two schemes every build has (the public constructors make their topologies). */
extern const rki_scheme rki_scheme_ringkeeper;
extern const rki_scheme rki_scheme_ketama;

/* ---- table.c: table schemes as rings ---- */

/* The position of slot `slot` of `slots`, in a hash space of 2^bits (slots <= 2^bits):
 * floor(slot * 2^bits / slots), so slot 0 is at 0 and the slots' arcs differ by 1 at most. */
uint64_t rki_slot_position(uint64_t slot, uint64_t slots, unsigned bits);
/* The points of table scheme topology `t`, ascending: pos[k] and node[k] for each of its slots
 * (rk_topology_points of them). RK_OK or RK_ENOMEM. */
int rki_table_points(const rk_topology *t, uint64_t *pos, uint32_t *node);

/* ---- scheme/registry.c: the schemes of this build, and operations schemes share ---- */

/* tie_order by node id bytes (the topology's order), the rule of most schemes (topology.c). */
void rki_tie_order_by_id(const rk_topology *t, uint32_t *order);
/* key_hash of a scheme that hashes the whole key with the topology's hash. */
uint64_t rki_key_hash_whole(const rki_hash *hash, const void *params, const void *key, size_t len);

/* The scheme `id` names, or NULL when this build has none; static storage. */
const rki_scheme *rki_scheme_of(rk_scheme id);
/* Non-zero when `s`'s topologies may name `hash`. */
int rki_scheme_has_hash(const rki_scheme *s, rk_hash_alg hash);
/* The hash of value `alg` in this build, or NULL; static storage. */
const rki_hash *rki_hash_of(rk_hash_alg alg);
/* The names of this build's schemes for a message, as "\"ringkeeper\" (the default) or
 * \"ketama\"": into buf; returns buf. */
const char *rki_scheme_names(char *buf, size_t size);

/* ---- Envoy's and gRPC's balancers (docs/ENVOY.md) ---- */

/* scheme/envoy_hash.c: xxHash64 seed 0, and Envoy's MURMUR_HASH_2 with its default seed. */
extern const rki_hash rki_hash_xx_hash, rki_hash_murmur_hash_2;

/* scheme/envoy_shared.c */
/* A key of these schemes as the request hash it names: its decimal digits, else xxHash64. */
uint64_t rki_envoy_request_hash(const void *key, size_t len);
/* RK_ETOPOLOGY naming the first node whose weight is no integer, in `scheme`'s words. */
int rki_envoy_integer_weights(const rk_node *nodes, size_t n, const char *scheme, rk_error *err);
/* The sum of the (integer) weights of nodes[0 .. n - 1]. */
double rki_envoy_weight_sum(const rk_node *nodes, size_t n);
/* The entries of each of nodes[0 .. n - 1] (into count unless NULL) on a ring of min_size and
 * max_size as Envoy and grpc-js-xds count them; returns the ring's size. */
uint64_t rki_ring_hash_counts(const rk_node *nodes, size_t n, uint64_t min_size, uint64_t max_size,
                              uint32_t *count);
/* tie_order by the topology's document order. */
void rki_tie_order_as_listed(const rk_topology *t, uint32_t *order);
/* A boolean field `key` of `doc` (absent: false) into *out, or RK_ETOPOLOGY naming it. */
int rki_envoy_flag_read(const struct json_t *doc, const char *key, int *out, rk_error *err);
/* An integer field `key` lo..hi of `doc` (absent: fallback) into *out, or RK_ETOPOLOGY. */
int rki_envoy_size_read(const struct json_t *doc, const char *key, uint32_t lo, uint32_t hi,
                        uint32_t fallback, uint32_t *out, rk_error *err);

/* scheme/envoy_ring_hash.c, shared with scheme/grpc_ring_hash.c */
/* RK_ETOPOLOGY naming minimum_ring_size or maximum_ring_size unless 1 <= min <= max <= 8388608. */
int rki_ring_sizes_check(uint32_t min_size, uint32_t max_size, rk_error *err);
/* The count operation of a ring of min_size..max_size (sizes as the ring is built with them). */
int rki_ring_hash_count(const rk_node *nodes, size_t n, uint32_t min_size, uint32_t max_size,
                        const char *scheme, uint64_t *points, rk_error *err);
/* The positions operation: entry i of a node at H("<id>_<i>"), H the topology's hash. */
void rki_ring_hash_positions(const rk_topology *t, size_t node, uint32_t count, uint64_t *out);
/* The key_hash operation: the request hash the key names (rki_envoy_request_hash). */
uint64_t rki_ring_hash_key(const rki_hash *hash, const void *params, const void *key, size_t len);
/* The bits operation of a scheme whose hash space is always 2^64. */
unsigned rki_bits_64(const rk_topology *t);

/* ---- scheme/ketama.c ---- */

/* twemproxy writes a point's name "<id>-<j>" into 86 bytes (KETAMA_MAX_HOSTLEN): longer ones are
 * refused rather than hashed differently. */
#define RKI_KETAMA_NAME_MAX 85
/* Points of a node of `weight` among `live` nodes with weight > 0 weighing `total_weight`. */
uint32_t rki_ketama_point_count(uint32_t weight, uint32_t total_weight, uint32_t live);

#endif
