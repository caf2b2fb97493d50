/* ringkeeper.h — the one public header of libringkeeper: topologies, rings, lookups and migration
 * plans, and the client that fetches verified rings from ringkeeperd.
 *
 * It has two parts, which the build keeps apart (docs/RING.md, "Layout"):
 *   Part 1, ring math (docs/RING.md): errors, hashes, topologies, rings, plans. Pure functions
 *     over plain values: no network, no threads. ringkeeperd links only this part.
 *   Part 2, client (docs/CLIENT.md): the ring client over HTTP (libcurl, a refresher thread), built
 *     on part 1.
 * Applications get both from one library (libringkeeper.so or libringkeeper.a) and this one header.
 *
 * The library has no global mutable state.
 * Thread safety: an rk_topology, rk_ring or rk_plan is immutable once returned; any number of
 * threads may read it at once (lookups included). Creating and freeing are not synchronised with
 * readers: free an object only when no thread uses it. Topologies are reference counted
 * (atomically), so a ring keeps the topology it was built from alive; rk_topology_free() drops one
 * reference. Snapshots of the client are reference counted too: rk_client_acquire() takes one,
 * rk_snapshot_release() drops it.
 *
 * Errors: every fallible call returns a status (RK_OK == 0, negative on failure) or NULL, and fills
 * the optional rk_error with a message a person can act on.
 */
#ifndef RINGKEEPER_H
#define RINGKEEPER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header: the project's version (CMake's project(VERSION); the build checks
 * that they agree). rk_version() is the library's, which may differ from the header an
 * application was compiled with when the shared library is replaced. */
#define RK_VERSION_MAJOR 0
#define RK_VERSION_MINOR 2
#define RK_VERSION_PATCH 0

#if defined(__GNUC__)
#define RK_API        __attribute__((visibility("default")))
#define RK_MUST_CHECK __attribute__((warn_unused_result))
#else
#define RK_API
#define RK_MUST_CHECK
#endif

/* The library's version, "MAJOR.MINOR.PATCH" (static storage). */
RK_API const char *rk_version(void);

/* ==============================================================================================
 * Part 1 — ring math (docs/RING.md): no network, no threads
 * ============================================================================================== */

/* Error codes: name, value, short description. */
#define RK_ERRNO_MAP(X)                                                                            \
    X(OK, 0, "success")                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EJSON, -3, "malformed JSON")                                                                 \
    X(ETOPOLOGY, -4, "invalid topology")                                                           \
    X(ETOOBIG, -5, "topology over the total point cap")                                            \
    X(EHASHMISMATCH, -6, "the two versions use different hash algorithms")                         \
    X(EIO, -7, "input/output error")                                                               \
    X(EUNREACHABLE, -8, "the server could not be reached")                                         \
    X(EHTTP, -9, "the server answered with an unexpected HTTP status")                             \
    X(ETOOLARGE, -10, "the response is over the size cap")                                         \
    X(EDOCUMENT, -11, "the response is not a valid version document")                              \
    X(ECLUSTER, -12, "the ring belongs to another cluster")                                        \
    X(EEXPECT, -13, "the ring's hash or vnode_factor differs from what the application expects")   \
    X(EUNKNOWNHASH, -14, "the ring uses a hash algorithm this library does not know")              \
    X(EFINGERPRINT, -15, "the recomputed fingerprint differs from the server's")                   \
    X(EOLDVERSION, -16, "the ring is older than one already accepted")                             \
    X(ENORING, -17, "no ring has been accepted yet")                                               \
    X(ECACHE, -18, "the last-known-good file is unreadable or corrupt")

typedef enum rk_status {
#define RK_ENUM_(name, value, text) RK_##name = value,
    RK_ERRNO_MAP(RK_ENUM_)
#undef RK_ENUM_
} rk_status;

#define RK_ERROR_FIELD_MAX   64  /* bytes of rk_error.field, its NUL included */
#define RK_ERROR_MESSAGE_MAX 256 /* bytes of rk_error.message, its NUL included */

/* A failure's details. `field` is the JSON path to blame ("nodes[3].weight"), or "" when none is;
 * `message` is one sentence that starts with that path when there is one. Both are always valid
 * UTF-8 (a server puts them into JSON), also when they were cut to fit. */
typedef struct rk_error {
    int code;                           /* an rk_status */
    char field[RK_ERROR_FIELD_MAX];     /* JSON path of the offending field, or "" */
    char message[RK_ERROR_MESSAGE_MAX]; /* what is wrong and what is allowed */
} rk_error;

/* The one way to fill an rk_error, for the library and for code built on it (ringkeeperd): sets
 * `code`, the blamed `field` (NULL or "" for none) and a message from `fmt` that starts with
 * "field: " when there is a field; cuts both to fit without splitting a UTF-8 sequence. `err` may
 * be NULL. Returns `code`. */
RK_API int rk_error_set(rk_error *err, int code, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Static strings: "invalid topology", and "RK_ETOPOLOGY"; "unknown error" for unknown codes. */
RK_API const char *rk_strerror(int code);
RK_API const char *rk_errname(int code);

/* ---- Ring schemes (docs/RING.md, KETAMA.md) ---- */

/* How a ring's points are made: RK_SCHEME_RINGKEEPER (docs/RING.md: vnode_factor * weight
 * points at H("<id>#<i>")) or RK_SCHEME_KETAMA (docs/KETAMA.md: twemproxy's and libmemcached's
 * ring, point for point, so a fleet routed by them adopts ringkeeper without moving a key). */
typedef enum rk_scheme {
    RK_SCHEME_RINGKEEPER = 0,
    RK_SCHEME_KETAMA = 1,
    RK_SCHEME_NGINX = 2,   /* docs/LOADBALANCERS.md: nginx's `hash ... consistent` ring */
    RK_SCHEME_HAPROXY = 3, /* docs/LOADBALANCERS.md: HAProxy's `hash-type consistent` ring */
    RK_SCHEME_ENVOY_RING_HASH = 4, /* docs/ENVOY.md: Envoy's `ring_hash` ring */
    RK_SCHEME_GRPC_RING_HASH = 5,  /* docs/ENVOY.md: gRPC's xDS `ring_hash` ring */
    RK_SCHEME_MAGLEV = 6,          /* docs/ENVOY.md: Envoy's `maglev` table */
} rk_scheme;

/* "ringkeeper", "ketama"; NULL for a value no scheme of this build has (a test build may register
 * schemes of its own, outside this enum: docs/ARCHITECTURE.md, "The scheme registry"). */
RK_API const char *rk_scheme_name(rk_scheme scheme);
/* RK_OK and *out set when `name` names a scheme; RK_EINVAL otherwise. */
RK_API int rk_scheme_from_name(const char *name, rk_scheme *out);
/* The name of the i-th scheme of this build (0: the default, "ringkeeper"), NULL past the last: how
 * a program lists the schemes it may name, with no list of its own. Static storage. */
RK_API const char *rk_scheme_at(size_t i);

/* ---- Hashes (docs/RING.md, KETAMA.md) ---- */

/* A hash by its value. The hashes belong to the schemes (client/core/scheme/: each scheme lists
 * the hashes its topologies may name, and a name means a hash only within a scheme): these values
 * stay as they are for applications built against them. A hash added since has a value its
 * scheme's file gives it and no name here: find it by name with rk_scheme_from_name and
 * rk_hash_from_scheme_name (docs/ARCHITECTURE.md, "Where a newcomer adds"). */
typedef enum rk_hash_alg {
    /* the ringkeeper scheme's (docs/RING.md) */
    RK_HASH_FNV1A_32 = 0, /* FNV-1a 32-bit */
    RK_HASH_MD5_32 = 1,   /* first 4 bytes of MD5, big-endian */
    RK_HASH_XXH3_64 = 2,  /* XXH3 64-bit, seed 0 */
    /* the ketama scheme's: twemproxy 0.5's twelve, under its names and exactly as it computes
     * them (signed-char quirks included; docs/KETAMA.md). Their hash space is 2^32 and their ring
     * points are always MD5's; two share a name with a ringkeeper hash but not its value (fnv1a_32
     * widens bytes >= 0x80 as signed there), so a name means a hash only together with a scheme */
    RK_HASH_KETAMA_ONE_AT_A_TIME = 16,
    RK_HASH_KETAMA_MD5 = 17,
    RK_HASH_KETAMA_CRC16 = 18,
    RK_HASH_KETAMA_CRC32 = 19,
    RK_HASH_KETAMA_CRC32A = 20, /* also the nginx scheme's */
    RK_HASH_KETAMA_FNV1_64 = 21,
    RK_HASH_KETAMA_FNV1A_64 = 22,
    RK_HASH_KETAMA_FNV1_32 = 23,
    RK_HASH_KETAMA_FNV1A_32 = 24,
    RK_HASH_KETAMA_HSIEH = 25,
    RK_HASH_KETAMA_MURMUR = 26,
    RK_HASH_KETAMA_JENKINS = 27,
    /* the haproxy scheme's (docs/LOADBALANCERS.md): HAProxy's four, each also followed by its
     * `avalanche` modifier, whose name ends in "_avalanche" */
    RK_HASH_HAPROXY_SDBM = 32,
    RK_HASH_HAPROXY_DJB2 = 33,
    RK_HASH_HAPROXY_WT6 = 34,
    RK_HASH_HAPROXY_CRC32 = 35,
    RK_HASH_HAPROXY_SDBM_AVALANCHE = 36,
    RK_HASH_HAPROXY_DJB2_AVALANCHE = 37,
    RK_HASH_HAPROXY_WT6_AVALANCHE = 38,
    RK_HASH_HAPROXY_CRC32_AVALANCHE = 39,
} rk_hash_alg;

/* Hash `len` bytes of `data` with `alg`; values of 32-bit algorithms are < 2^32. (A ketama ring's
 * lookup also applies the hash tag and hashes the empty key to 0, as twemproxy does; rk_hash is
 * the bare function.) */
RK_API uint64_t rk_hash(rk_hash_alg alg, const void *data, size_t len);
/* The hash's name within its schemes ("fnv1a_32", "md5_32", "xxh3_64", a ketama hash's twemproxy
 * name, ...); NULL for a value no hash of this build has. */
RK_API const char *rk_hash_name(rk_hash_alg alg);
/* RK_OK and *out set when `name` is a hash of the ringkeeper scheme; RK_EINVAL otherwise. */
RK_API int rk_hash_from_name(const char *name, rk_hash_alg *out);
/* The same for the hashes of `scheme`. */
RK_API int rk_hash_from_scheme_name(rk_scheme scheme, const char *name, rk_hash_alg *out);
/* The first scheme of this build (ringkeeper, then ketama, ...) whose topologies may name `alg`:
 * schemes may share a hash, so a hash alone does not tell a topology's scheme. */
RK_API rk_scheme rk_hash_scheme(rk_hash_alg alg);
/* The name of the i-th hash `scheme`'s topologies may name, in its order, NULL past the last (or
 * for no scheme of this build). Static storage. */
RK_API const char *rk_hash_at(rk_scheme scheme, size_t i);
/* 32 or 64: the hash space is 2^bits. */
RK_API unsigned rk_hash_bits(rk_hash_alg alg);

/* ---- Topology (docs/RING.md) ---- */

#define RK_MAX_VNODE_FACTOR 4096
#define RK_MAX_NODES        100000
#define RK_MAX_WEIGHT       1000
#define RK_MAX_ID_BYTES     128
#define RK_MAX_ADDR_BYTES   255
#define RK_MAX_COMMENT      1024
#define RK_MAX_POINTS       4194304u

typedef struct rk_node {
    const char *id;   /* stable identity, NUL-terminated UTF-8 */
    const char *addr; /* where clients connect */
    double weight;    /* 0..RK_MAX_WEIGHT, 0 = draining: listed, owns nothing. A multiple of
                       * 1/vnode_factor in the ringkeeper scheme (docs/RING.md, "Weights in
                       * steps"); an integer in the ketama scheme */
} rk_node;

typedef struct rk_topology rk_topology;
struct json_t; /* jansson's value type; include <jansson.h> to use these calls */

/* Validates `doc` against every rule of docs/RING.md and returns a new topology (free with
 * rk_topology_free), or NULL with `err` set: RK_ETOPOLOGY for a broken rule (err->field names it),
 * RK_ETOOBIG for a topology over RK_MAX_POINTS, RK_ENOMEM. `doc` is borrowed. */
RK_API rk_topology *rk_topology_from_json(const struct json_t *doc, rk_error *err) RK_MUST_CHECK;
/* The same from JSON text of `len` bytes; malformed JSON gives RK_EJSON. */
RK_API rk_topology *rk_topology_parse(const char *text, size_t len, rk_error *err) RK_MUST_CHECK;
/* Builds and validates a topology of the ringkeeper scheme from plain values (copied; the caller
 * keeps its own). `comment` may be NULL. */
RK_API rk_topology *rk_topology_new(rk_hash_alg hash, uint32_t vnode_factor, const rk_node *nodes,
                                    size_t n_nodes, const char *comment,
                                    rk_error *err) RK_MUST_CHECK;
/* The same for the ketama scheme (docs/KETAMA.md): `hash` one of RK_KETAMA_HASH_MAP, `hash_tag`
 * two characters or NULL, node ids named as twemproxy names its servers. */
RK_API rk_topology *rk_topology_new_ketama(rk_hash_alg hash, const char *hash_tag,
                                           const rk_node *nodes, size_t n_nodes,
                                           const char *comment, rk_error *err) RK_MUST_CHECK;
/* A copy of `t` (any scheme, its data protocol kept) with another comment (NULL: none), as a
 * revert publishes it. */
RK_API rk_topology *rk_topology_with_comment(const rk_topology *t, const char *comment,
                                             rk_error *err) RK_MUST_CHECK;
/* Drops one reference; frees at the last. NULL is fine. */
RK_API void rk_topology_free(rk_topology *t);
/* Adds a reference and returns `t`. */
RK_API rk_topology *rk_topology_ref(rk_topology *t);

RK_API rk_scheme rk_topology_scheme(const rk_topology *t);
RK_API rk_hash_alg rk_topology_hash(const rk_topology *t);
/* The ringkeeper scheme's vnode_factor; 0 for the ketama scheme, which fixes its point counts. */
RK_API uint32_t rk_topology_vnode_factor(const rk_topology *t);
/* The ketama scheme's hash tag (two characters), or NULL; borrowed. */
RK_API const char *rk_topology_hash_tag(const rk_topology *t);
/* How the balancer of an nginx or haproxy topology takes its key from a request (the topology's
 * "request_key", docs/LOADBALANCERS.md): nginx's `hash` expression ("$request_uri") or HAProxy's
 * `balance` ("uri whole", "hdr(X-Key)"); NULL when the topology does not say. Borrowed. */
RK_API const char *rk_topology_request_key(const rk_topology *t);
/* RK_OK when rings of `a` and `b` put every key at the same position, so a plan between them
 * exists: the same scheme, hash, hash tag, and request key where both name one. Else
 * RK_EHASHMISMATCH, its field "scheme", "hash", "hash_tag" or "request_key" and its message saying
 * what differs: every key (or every tagged key) moves. */
RK_API int rk_topology_comparable(const rk_topology *a, const rk_topology *b,
                                  rk_error *err) RK_MUST_CHECK;
RK_API size_t rk_topology_node_count(const rk_topology *t);
/* Node i (0 <= i < node_count) in the order of the document; borrowed, valid while `t` lives. */
RK_API const rk_node *rk_topology_node(const rk_topology *t, size_t i);
/* The comment, or NULL; borrowed. */
RK_API const char *rk_topology_comment(const rk_topology *t);
/* The protocol of the nodes' data servers, the topology's "data": one of rk_data_protocol's names
 * ("memcached", "redis"), or NULL when unknown; static storage. Not part of the ring or its
 * fingerprint. Only rk_topology_from_json and rk_topology_parse set it; rk_topology_new and
 * rk_topology_new_ketama give NULL. */
RK_API const char *rk_topology_data(const rk_topology *t);
/* The data protocols a topology's "data" may name, those of this build: each is registered by one
 * line in client/CMakeLists.txt, `rk_data_protocol(<name> ...)`, which also gives the data mover
 * its driver (docs/MIGRATE.md, "Adding a store is one file"). The i-th name (static storage), or
 * NULL past the last. */
RK_API const char *rk_data_protocol(size_t i);
/* The registered name equal to `name` (static storage), or NULL when no protocol has that name
 * (or `name` is NULL). */
RK_API const char *rk_data_protocol_find(const char *name);
/* The registered names for a message, each between two `quote`s, separated by ", " and the last
 * two by " or " ("\"memcached\" or \"redis\""), into buf (cut to `size`); returns buf. */
RK_API const char *rk_data_protocol_names(char *buf, size_t size, const char *quote);
/* The ring's point count: the sum of vnode_factor * weight, or of the ketama point counts. */
RK_API uint64_t rk_topology_points(const rk_topology *t);
/* New JSON object {"hash", "vnode_factor", "data"?, "nodes", "comment"?}, or for the ketama
 * scheme {"scheme", "hash", "hash_tag"?, "data"?, "nodes", "comment"?}; the caller owns the
 * reference (json_decref). NULL when out of memory. */
RK_API struct json_t *rk_topology_to_json(const rk_topology *t) RK_MUST_CHECK;
/* The same document as compact JSON text, which rk_topology_parse reads back as an equal topology:
 * for a program (or a binding) that has no jansson of its own. A new string (free it), NULL when
 * out of memory. */
RK_API char *rk_topology_to_text(const rk_topology *t) RK_MUST_CHECK;
/* What says how `t`'s ring is made, as its document writes it: "scheme" (left out for the
 * ringkeeper scheme), "hash" and the scheme's own parameters ("vnode_factor", "hash_tag", ...), so
 * that a document about a version needs to know no scheme. A new object (json_decref it), NULL
 * when out of memory. */
RK_API struct json_t *rk_topology_scheme_json(const rk_topology *t) RK_MUST_CHECK;
/* `v` as JSON text, as json_dumps(v, flags) (jansson's flags; JSON_REAL_PRECISION is the library's
 * own) but with every real in the shortest form that reads back as the same double: 0.08, not
 * 0.080000000000000002; 1.0 stays 1.0. A new string (free it), NULL when out of memory. */
RK_API char *rk_json_dumps(const struct json_t *v, size_t flags) RK_MUST_CHECK;

/* The character at s (of `left` bytes): its length, with its code point in *cp; 0 when it is not
 * valid UTF-8 (a bad or cut sequence, an overlong form, a surrogate, past U+10FFFF). */
RK_API size_t rk_utf8_next(const char *s, size_t left, uint32_t *cp);
/* Non-zero for a code point that an id or addr may not hold (docs/RING.md): a control (C0, DEL,
 * C1), or a mark that a terminal hides or applies instead of showing, so that an id holding one
 * prints as another id or reorders its line ("cache-\u202Ea" shows as "cache-a" reversed):
 * Unicode's Default_Ignorable_Code_Point (zero widths, the soft hyphen, fillers, variation
 * selectors, tags) and Bidi_Control, line and paragraph separators, and U+2800 (a braille blank).
 * What the CLI escapes when it prints text from elsewhere. */
RK_API int rk_text_hidden(uint32_t cp);

/* A request as a balancer sees it (docs/LOADBALANCERS.md, "Requests"). */
typedef struct rk_header {
    const char *name;  /* a field name as sent ("X-Key"), NUL-terminated */
    const char *value; /* its value, NUL-terminated; spaces around it are not part of it */
} rk_header;
typedef struct rk_request {
    const char *uri;          /* the request line's target in origin form: "/path?query" */
    const rk_header *headers; /* header fields in the order sent, a name repeated as sent */
    size_t n_headers;
} rk_request;

/* RK_OK when a topology of `scheme` may say "request_key": `spec`, a key this library takes from
 * a request as that balancer does; else RK_ETOPOLOGY (field "request_key") saying why. What an
 * import asks before it writes the field. */
RK_API int rk_request_key_check(rk_scheme scheme, const char *spec, rk_error *err) RK_MUST_CHECK;
/* The key the balancer of `t` takes from `req`, by the topology's request_key: into *key (a new
 * buffer of *len bytes and a NUL, free() it), which rk_ring_lookup then routes as the balancer
 * does. *len 0 means the balancer takes no key from this request and spreads it round robin
 * (nginx: an empty key; HAProxy: no such header, or an empty value). RK_EINVAL (field
 * "request_key") when `t` has none; RK_EINVAL (field "uri") for a target that is not in origin
 * form or that the balancer answers 400; RK_ENOMEM. */
RK_API int rk_request_key(const rk_topology *t, const rk_request *req, char **key, size_t *len,
                          rk_error *err) RK_MUST_CHECK;

/* Non-zero when `name` is a valid cluster name: ^[a-z0-9][a-z0-9._-]{0,62}$ (docs/RING.md). */
RK_API int rk_cluster_name_valid(const char *name);

#define RK_CLIENT_ID_MAX 128 /* bytes of an RK-Client id, at most */

/* Non-zero when `id` is a valid RK-Client id (docs/CLIENT.md): 1..RK_CLIENT_ID_MAX bytes of
 * printable ASCII without spaces (0x21..0x7e). The server tracks no other. */
RK_API int rk_client_id_valid(const char *id);

/* ---- Ring (docs/RING.md) ---- */

typedef struct rk_ring rk_ring;

/* Builds the ring of `t`; the ring holds a reference to `t`. Free with rk_ring_free. */
RK_API rk_ring *rk_ring_build(rk_topology *t, rk_error *err) RK_MUST_CHECK;
RK_API void rk_ring_free(rk_ring *r);

/* Threads of a ring build, for the whole process: 1, the calling thread alone; 0 (the default),
 * a second thread for the duration of a build of 2^18 points or more (and the calling thread
 * alone should the thread not start). Other values are as 0. The ring is the same either way. */
RK_API void rk_ring_set_build_threads(unsigned threads);

/* The topology the ring was built from; borrowed. */
RK_API const rk_topology *rk_ring_topology(const rk_ring *r);
RK_API size_t rk_ring_point_count(const rk_ring *r);
/* The ring's hash space is 2^bits values: 32 or 64 (the hash's, 32 for every ketama ring). */
RK_API unsigned rk_ring_bits(const rk_ring *r);
/* Point i in ring order: its position and the index of its node in the topology. */
RK_API void rk_ring_point(const rk_ring *r, size_t i, uint64_t *position, uint32_t *node);
/* The fingerprint of docs/RING.md, as a number and as 16 lowercase hex digits (borrowed). */
RK_API uint64_t rk_ring_fingerprint(const rk_ring *r);
RK_API const char *rk_ring_fingerprint_hex(const rk_ring *r);

/* Index (into the topology) of the node that owns `key`. */
RK_API uint32_t rk_ring_lookup(const rk_ring *r, const void *key, size_t len);
/* H(key) exactly as rk_ring_lookup hashes it: the ring's hash, and under the ketama scheme its
 * hash tag and twemproxy's rules (docs/KETAMA.md). So rk_ring_lookup(r, k, n) ==
 * rk_ring_lookup_hash(r, rk_ring_key_hash(r, k, n)), and a data mover can tell whether a key lies
 * in a moving arc (rk_ring_arc_at) without a lookup. */
RK_API uint64_t rk_ring_key_hash(const rk_ring *r, const void *key, size_t len);
/* The owner for a precomputed hash value. */
RK_API uint32_t rk_ring_lookup_hash(const rk_ring *r, uint64_t hash);
/* Up to `want` distinct nodes clockwise from the key, owner first, into `out`; returns how many
 * (fewer when fewer nodes own points). */
RK_API size_t rk_ring_lookup_replicas(const rk_ring *r, const void *key, size_t len, uint32_t *out,
                                      size_t want);
/* The arc of the ring that holds hash value `hash`: the hash values from start + 1 to end, wrapping
 * past the top of the hash space when start >= end (start == end: the whole space, every point at
 * one position). Its owner owns start + 1 and end as rk_ring_lookup_hash says; end + 1 is the
 * first value of the next arc, and start the last of the previous one. */
typedef struct rk_ring_arc {
    uint64_t start;  /* the last hash value before the arc: exclusive */
    uint64_t end;    /* the arc's last hash value, the position of its point: inclusive */
    uint32_t node;   /* its owner: index into the ring's topology */
    double fraction; /* its size as a fraction of the hash space */
} rk_ring_arc;

/* Fills *out with the arc holding `hash` (a value of the ring's hash space; above a 32-bit space
 * it wraps to the first arc, as a lookup does). Allocates nothing. */
RK_API void rk_ring_arc_at(const rk_ring *r, uint64_t hash, rk_ring_arc *out);

#define RK_NO_NODE          UINT32_MAX /* a picture's bin that nothing is in */
#define RK_PICTURE_MAX_BINS 65536      /* bins of a picture at most */

/* The ring as a picture of `bins` equal bins of the hash space (1..RK_PICTURE_MAX_BINS), bin b
 * holding hash values [b, b + 1) * 2^bits / bins: out[b] (the caller's array of `bins`) is the
 * owner (topology index) of the longest stretch in it, so arcs below a bin merge into their
 * neighbours. One pass over the points; allocates only while it runs. RK_OK, RK_EINVAL (field
 * "bins") or RK_ENOMEM. */
RK_API int rk_ring_picture(const rk_ring *r, size_t bins, uint32_t *out, rk_error *err);

/* Share of the hash space node i owns (0 for a draining node), and its ideal weight / total weight.
 */
RK_API double rk_ring_share(const rk_ring *r, size_t node);
RK_API double rk_ring_ideal_share(const rk_ring *r, size_t node);
/* Largest and smallest share / ideal over nodes with weight > 0. */
RK_API void rk_ring_balance(const rk_ring *r, double *max, double *min);
/* Bytes the ring holds besides its topology (for the benchmark). */
RK_API size_t rk_ring_memory(const rk_ring *r);

/* ---- Migration plan (docs/RING.md) ---- */

typedef struct rk_plan rk_plan;

typedef struct rk_plan_options {
    double
        max_step; /* > 0 and <= 1: pack the arcs into steps moving at most this much; 0: no steps */
    uint64_t keys;   /* > 0: add keys_estimate to transfers and steps */
    size_t max_arcs; /* > 0: refuse a plan of more arcs (RK_ETOOBIG, field "arcs"), counted before
                        they are stored; 0: no limit */
} rk_plan_options;

typedef struct rk_arc {
    uint64_t first;  /* first hash value, inclusive */
    uint64_t last;   /* last hash value, inclusive; never below first (arcs do not wrap) */
    uint32_t from;   /* node index into rk_plan_node_at() */
    uint32_t to;     /* node index into rk_plan_node_at() */
    double fraction; /* (last - first + 1) / hash space */
} rk_arc;

typedef struct rk_plan_node {
    const char *id; /* borrowed from the rings' topologies */
    double weight_before, weight_after;
    double share_before, share_after, ideal_before, ideal_after, gained, lost;
} rk_plan_node;

typedef struct rk_transfer {
    uint32_t from, to; /* node indexes */
    double fraction;
    size_t arcs;
} rk_transfer;

typedef struct rk_step {
    double fraction;  /* of the hash space moved in this step */
    size_t first_arc; /* its arcs are rk_plan_step_arcs()[first_arc .. first_arc + arcs) */
    size_t arcs;      /* number of arcs (pieces of the plan's arcs) */
    size_t sources;   /* distinct source nodes it moves from */
} rk_step;

/* The plan from ring `a` to ring `b`. Both rings must use the same hash (RK_EHASHMISMATCH
 * otherwise); `opt` may be NULL. The plan holds references to both rings' topologies; free with
 * rk_plan_free. */
RK_API rk_plan *rk_plan_new(const rk_ring *a, const rk_ring *b, const rk_plan_options *opt,
                            rk_error *err) RK_MUST_CHECK;
/* The nodes a plan between the rings of `a` and `b` lists (the union of their ids, as rk_plan_nodes
 * gives them), counted from the topologies alone in one pass over their ids. Both borrowed. */
RK_API size_t rk_plan_node_count(const rk_topology *a, const rk_topology *b);
/* What rk_plan_new would surely refuse for the rings of topologies `a` and `b`, told before either
 * ring is built (a build costs about 0.4 s at RK_MAX_POINTS): RK_EHASHMISMATCH as rk_plan_new, or
 * RK_ETOOBIG (field "arcs") when the arcs in a prefix of the hash space alone pass opt->max_arcs,
 * a count that is never above the plan's. RK_OK means only that the plan may fit. Both borrowed. */
RK_API int rk_plan_check(const rk_topology *a, const rk_topology *b, const rk_plan_options *opt,
                         rk_error *err);
RK_API void rk_plan_free(rk_plan *p);

RK_API double rk_plan_moved_fraction(const rk_plan *p);
RK_API double rk_plan_minimal_fraction(const rk_plan *p);
/* Arrays owned by the plan, valid while it lives; the count goes to *n. */
RK_API const rk_arc *rk_plan_arcs(const rk_plan *p, size_t *n);
RK_API const rk_plan_node *rk_plan_nodes(const rk_plan *p, size_t *n);    /* sorted by id */
RK_API const rk_transfer *rk_plan_transfers(const rk_plan *p, size_t *n); /* by (from, to) ids */
RK_API const rk_step *rk_plan_steps(const rk_plan *p, size_t *n);
RK_API const rk_arc *rk_plan_step_arcs(const rk_plan *p, size_t *n);
/* Balance (share / ideal) before and after, over nodes with weight > 0. */
RK_API void rk_plan_balance(const rk_plan *p, double *before_max, double *before_min,
                            double *after_max, double *after_min);
/* Warnings for people ("after: the most loaded node holds 1.48x its ideal share"); borrowed. */
RK_API const char *const *rk_plan_warnings(const rk_plan *p, size_t *n);

/* Context a caller may add to the rendered plan; any field may be NULL / 0 (left out). */
typedef struct rk_plan_meta {
    const char *cluster;    /* cluster name */
    int64_t from_version;   /* 0: unknown */
    int64_t to_version;     /* 0: unknown */
    const char *from_label; /* text only: shown when the version is unknown (a file name) */
    const char *to_label;
} rk_plan_meta;

/* rk_plan_to_json flags: leave out the arc list; leave out the node list (a summary of a plan of
 * many nodes, whose balance and warnings still cover them all) */
enum { RK_PLAN_NO_ARCS = 1, RK_PLAN_NO_NODES = 2 };

#define RK_PLAN_DIGEST_LEN 17 /* 16 lowercase hex digits and a NUL */

/* The plan digest (docs/RING.md) into `out`: XXH3-64 over "<from version>:<from fingerprint>><to
 * version>:<to fingerprint>", version 0 for a ring with no version (a file). A plan is a function
 * of its two rings, so the digest names what a reviewer saw; a server computes it from stored
 * fingerprints without building either ring. */
RK_API void rk_plan_digest(int64_t from_version, const char *from_fingerprint, int64_t to_version,
                           const char *to_fingerprint, char out[RK_PLAN_DIGEST_LEN]);

/* The plan document of docs/RING.md; new reference, or NULL when out of memory. */
RK_API struct json_t *rk_plan_to_json(const rk_plan *p, const rk_plan_meta *meta,
                                      int flags) RK_MUST_CHECK;
/* A table for people; new NUL-terminated string, free() it; NULL when out of memory. */
RK_API char *rk_plan_to_text(const rk_plan *p, const rk_plan_meta *meta) RK_MUST_CHECK;
/* The plan as one self-contained SVG picture (the rings before and after, the moving arcs in the
 * colour of their destination, per-node share bars); bounded in size whatever the ring (at most
 * 1440 arcs per ring, finer stretches merged; bars for at most 32 nodes). Rebuilds both rings from
 * the plan's topologies, which costs as much as building them. New NUL-terminated string, free()
 * it; NULL when out of memory. */
RK_API char *rk_plan_to_svg(const rk_plan *p, const rk_plan_meta *meta) RK_MUST_CHECK;
/* The same, its outer and inner circles drawn from the rings the plan was made from (`before`,
 * `after`; either NULL: rebuilt from the plan's topology): for a caller that still holds them, as
 * ringkeeperd's cache does, it then costs no ring build. */
RK_API char *rk_plan_to_svg_rings(const rk_plan *p, const rk_plan_meta *meta, const rk_ring *before,
                                  const rk_ring *after) RK_MUST_CHECK;

/* The circles of a plan's picture (rk_plan_picture, rk_plan_to_svg). */
typedef enum rk_plan_circle {
    RK_PLAN_BEFORE = 0, /* the ring before, by owner */
    RK_PLAN_MOVING = 1, /* the moving arcs, by destination; RK_NO_NODE where nothing moves */
    RK_PLAN_AFTER = 2,  /* the ring after, by owner */
} rk_plan_circle;

/* One circle of the plan's picture in `bins` bins, as rk_ring_picture, with plan node indexes
 * (rk_plan_nodes) in the caller's `out`: the circles rk_plan_to_svg draws. For BEFORE and AFTER,
 * `ring` is that side's ring the plan was made from, or NULL to rebuild it from the plan's
 * topology (as costly as building it); MOVING ignores it. RK_OK, RK_EINVAL (field "bins") or
 * RK_ENOMEM. */
RK_API int rk_plan_picture(const rk_plan *p, rk_plan_circle circle, const rk_ring *ring,
                           size_t bins, uint32_t *out, rk_error *err);

/* ---- Load over the ring (docs/RING.md, "Load over the ring") ---- */

/* A measured load over a hash space of 2^bits (32 or 64, a ring's rk_ring_bits): keys, bytes and
 * requests in `bins` equal bins, bin b holding hash values [b, b + 1) * 2^bits / bins. Bins, not a
 * ring's arcs: a profile measured once weighs the ring before and the ring after a change alike
 * (arcs change with every version), it merges sample by sample without a ring at hand, and its size
 * is bounded by the bins whatever the ring. A plan weighs a bin that an arc covers in part pro rata
 * by the hash values they share, as if the load were spread evenly inside a bin: the finer the
 * bins, the less that assumes. The load holds what was sampled; every figure drawn from it is an
 * estimate, the sample divided by the sample rate. Not thread-safe while it is added to; immutable
 * afterwards as a ring is. */
typedef struct rk_load rk_load;

#define RK_LOAD_MAX_BINS 65536 /* bins of a load at most */

/* Load in a stretch of the hash space; any unit of requests (a count, a rate), one per profile. */
typedef struct rk_load_amount {
    double keys;     /* keys */
    double bytes;    /* bytes the keys and their values take */
    double requests; /* requests for the keys */
} rk_load_amount;

/* A new empty load of `bins` bins (a power of two, 1..RK_LOAD_MAX_BINS) over 2^bits (32 or 64), of
 * which a fraction `sample_rate` (0 < rate <= 1) of the keys was sampled; free with rk_load_free.
 * NULL with err set: RK_EINVAL naming "bits", "bins" or "sample_rate", or RK_ENOMEM. */
RK_API rk_load *rk_load_new(unsigned bits, size_t bins, double sample_rate,
                            rk_error *err) RK_MUST_CHECK;
/* NULL is fine. */
RK_API void rk_load_free(rk_load *l);
/* Adds a sample at hash value `hash` (as rk_ring_key_hash gives it) to its bin. RK_EINVAL, and
 * nothing added, for a hash outside the space (field "hash") or an amount that is negative, NaN or
 * infinite (field "keys", "bytes" or "requests"). */
RK_API int rk_load_add(rk_load *l, uint64_t hash, double keys, double bytes, double requests,
                       rk_error *err);
RK_API unsigned rk_load_bits(const rk_load *l);
RK_API size_t rk_load_bins(const rk_load *l);
RK_API double rk_load_sample_rate(const rk_load *l);
/* What was sampled in bin b (b < rk_load_bins), not scaled by the sample rate. */
RK_API rk_load_amount rk_load_bin(const rk_load *l, size_t b);
/* The estimate over the whole space: every bin's sample summed, divided by the sample rate. */
RK_API rk_load_amount rk_load_total(const rk_load *l);

/* Reads a load profile {"bits", "bins", "sample_rate", "keys", "bytes", "requests"}, the last three
 * arrays of `bins` numbers >= 0 (docs/RING.md). `doc` is borrowed. A new load (rk_load_free), or
 * NULL with err set: RK_EINVAL naming the field ("bins", "bytes[12]", an unknown field), RK_ENOMEM.
 */
RK_API rk_load *rk_load_from_json(const struct json_t *doc, rk_error *err) RK_MUST_CHECK;
/* The document rk_load_from_json reads; a new reference (json_decref), NULL when out of memory. */
RK_API struct json_t *rk_load_to_json(const rk_load *l) RK_MUST_CHECK;

/* What a plan moves and how it balances, weighed by a load (estimates, as the load's figures). */
typedef struct rk_plan_load_figures {
    rk_load_amount total;           /* over the whole hash space */
    rk_load_amount moving;          /* in the plan's arcs: what changes owner */
    double bytes_balance_before;    /* the largest bytes share / ideal share (weight / total
                                     * weight) over nodes with weight > 0; 0 with no bytes */
    double bytes_balance_after;     /* the same after the plan */
    double requests_balance_before; /* and by requests */
    double requests_balance_after;
    double bytes_over_mean_before;    /* the largest bytes a node holds over the mean of the nodes
                                       * with weight > 0, whatever their weights; 0 with no bytes */
    double bytes_over_mean_after;     /* the same after the plan */
    double requests_over_mean_before; /* and by requests */
    double requests_over_mean_after;
} rk_plan_load_figures;

/* The load a plan node holds before and after, and what it gives and takes. */
typedef struct rk_plan_node_load {
    rk_load_amount before, after, gained, lost;
} rk_plan_node_load;

/* Weighs plan `p` by load `l` (both borrowed; the plan unchanged): the figures into *out and, when
 * `nodes` is not NULL, per plan node into the caller's array of rk_plan_nodes() entries, in that
 * order. `after` is the ring the plan moves to, or NULL to rebuild it from the plan's topology (as
 * costly as building it); the before figures follow from it and the moving arcs. RK_OK; RK_EINVAL
 * for a load over another hash space (field "bits") or a ring not the plan's (field "ring");
 * RK_ENOMEM. A plan, and every figure it gives, is the same with or without a load. */
RK_API int rk_plan_load(const rk_plan *p, const rk_ring *after, const rk_load *l,
                        rk_plan_load_figures *out, rk_plan_node_load *nodes, rk_error *err);
/* rk_plan_load's figures as a document (docs/LOAD.md): {"keys", "bytes", "moving_keys",
 * "moving_bytes", "bytes_balance_before", "bytes_balance_after", "bytes_over_mean_before",
 * "bytes_over_mean_after", and with `nodes` (rk_plan_nodes'
 * order) "nodes": [{"id", "keys_before", "keys_after", "bytes_before", "bytes_after",
 * "bytes_gained", "bytes_lost"}]}; the requests' figures too when the load has requests. All
 * borrowed; a new reference (json_decref), NULL when out of memory. */
RK_API struct json_t *rk_plan_load_to_json(const rk_plan *p, const rk_plan_load_figures *f,
                                           const rk_plan_node_load *nodes) RK_MUST_CHECK;
/* The plan weighed by a profile of `ringkeeper measure` (docs/LOAD.md; a bare load document is
 * read too): rk_plan_load_to_json's document with "profile", what the profile says of itself
 * (cluster, version, fingerprint, hash, measured_at, measured_epoch_s, sample_rate) and "age_s"
 * from measured_epoch_s to `now`, into *out (a new reference). RK_EHASHMISMATCH (field "hash")
 * when its keys were placed by another hash than `after`'s; rk_load_from_json's errors (field
 * inside the load); RK_ENOMEM. `profile` is borrowed. */
RK_API int rk_plan_profile_json(const rk_plan *p, const rk_ring *after,
                                const struct json_t *profile, int64_t now, struct json_t **out,
                                rk_error *err) RK_MUST_CHECK;
/* The load of a profile of `ringkeeper measure` (its "load"; a bare load document is read too),
 * refused with RK_EHASHMISMATCH (field "hash") when its keys were placed by another hash than
 * `ring`'s; rk_load_from_json's errors. Both borrowed; a new load (rk_load_free), or NULL. */
RK_API rk_load *rk_load_from_profile(const struct json_t *profile, const rk_ring *ring,
                                     rk_error *err) RK_MUST_CHECK;
/* A byte count for people ("512 B", "3.4 MiB": B, KiB, MiB, GiB, TiB) into buf; returns buf. */
RK_API const char *rk_bytes_text(double bytes, char buf[32]);
/* rk_plan_profile_json's document as lines for people, to print after the plan's table (node ids
 * as given: escape them where the output may reach a terminal). Malloc'd text, the caller frees
 * it; NULL when out of memory. `load` is borrowed. */
RK_API char *rk_plan_load_to_text(const struct json_t *load) RK_MUST_CHECK;

/* ---- Suggest: weights that balance a load (docs/LOAD.md, "Suggest") ---- */

typedef struct rk_suggest_options {
    double max_moved;   /* the share of the load (bytes, or requests with by_requests) that may move
                         * from the start: > 0 and <= 1 */
    int by_requests;    /* balance the load's requests instead of its bytes */
    int equal_capacity; /* every node of weight > 0 is as big as another; else each node's fair
                         * share is its weight in the start */
    double target;      /* stop once the most loaded node holds at most this times its fair share
                         * (>= 1); 0: as near 1 as the search gets */
    uint64_t max_points_built; /* ring points built over the search at most (a try builds one
                                * ring of the start's size); 0: no limit */
} rk_suggest_options;

/* Why a search ended. */
enum {
    RK_SUGGEST_TARGET = 0, /* the most loaded node is within the target */
    RK_SUGGEST_BUDGET,     /* a step would improve the balance, but move more than max_moved */
    RK_SUGGEST_STUCK,      /* no step of one unit improves it: weights cannot do better here */
    RK_SUGGEST_LIMIT       /* max_points_built was reached */
};

typedef struct rk_suggestion {
    rk_topology *topology; /* the start's topology with the suggested weights (comment and data
                            * kept); the caller's: rk_topology_free */
    double worst_before, worst_after; /* the most loaded node's load over its fair share */
    double moved;                     /* the share of the load that moves from the start */
    size_t rounds;                    /* weight units changed */
    uint64_t points_built;            /* the search's cost: ring points built */
    int stopped;                      /* an RK_SUGGEST_ value */
} rk_suggestion;

/* Searches for weights of `start`'s nodes (borrowed) that bring the most loaded node's load (by
 * `l`, placed by the same hash) nearest its fair share, one weight unit at a time (1/vnode_factor;
 * a whole weight without one), the most loaded node giving a unit or the least loaded taking one,
 * while what moves stays within opt->max_moved. Nodes at weight 0 stay there and are left out.
 * RK_OK with *out filled (its topology the caller's); RK_EINVAL naming "max_moved", "target" or
 * "load" (nothing to balance), or "bits" for a load over another hash space; RK_ENOMEM. Cost: two
 * ring builds and plans per unit changed, bounded by opt->max_points_built. */
RK_API int rk_suggest(const rk_ring *start, const rk_load *l, const rk_suggest_options *opt,
                      rk_suggestion *out, rk_error *err) RK_MUST_CHECK;

/* ---- Rollouts: a change in steps (docs/MIGRATE.md, "Rollouts") ---- */

#define RK_ROLLOUT_MAX_STEPS 100

typedef struct rk_rollout_options {
    uint32_t steps;        /* exactly this many steps, 1..RK_ROLLOUT_MAX_STEPS; 0: max_step_moved */
    double max_step_moved; /* the fewest steps none of which moves more, 0 < f <= 1; 0: steps */
    int64_t from_version;  /* the start's version, which the digest names; 0 for a file */
    /* The points of the intermediate rings it may build, over every split tried, at most; 0: no
     * limit. Past it the review stops, RK_ETOOBIG naming "steps" or "max_step_moved", before the
     * ring that would cross it is built: what bounds a server's review (docs/API.md). */
    uint64_t max_points_built;
} rk_rollout_options;

typedef struct rk_rollout rk_rollout;

/* Breaks the change from ring `from` to ring `to` (both borrowed, and built once by the caller)
 * into steps of weights: the nodes that gain weight ramp first, all together, then those that lose
 * it, each by an equal share of its change per step in units of 1/vnode_factor (whole weights under
 * ketama); a node the target drops ramps to 0 and is gone at the last step, whose topology is
 * `to`'s own. Ramping one node, or replacing one by another, the steps move in total what the
 * one-shot plan moves. Errors: RK_EHASHMISMATCH (field "target") for another scheme, hash or
 * vnode_factor; RK_EINVAL for bad options, or more steps than the change has units; RK_ETOOBIG
 * (field "max_step_moved") when no split into at most RK_ROLLOUT_MAX_STEPS keeps every step within
 * max_step_moved; RK_ETOPOLOGY when an intermediate topology breaks a rule (two nodes with one
 * addr); RK_ENOMEM. Free with rk_rollout_free. Cost: per split tried (at most 8), one ring build
 * per intermediate step and one plan per step. */
RK_API rk_rollout *rk_rollout_new(const rk_ring *from, const rk_ring *to,
                                  const rk_rollout_options *opt, rk_error *err) RK_MUST_CHECK;
RK_API void rk_rollout_free(rk_rollout *r);
RK_API size_t rk_rollout_step_count(const rk_rollout *r);
/* Step i's (0-based) target and its plan from the step before (or the start); borrowed, valid
 * while `r` lives; NULL past the last step. */
RK_API const rk_topology *rk_rollout_step_topology(const rk_rollout *r, size_t i);
RK_API const rk_plan *rk_rollout_step_plan(const rk_rollout *r, size_t i);
/* The fractions of the hash space the steps move together, and the one-shot plan moves. */
RK_API double rk_rollout_total_moved(const rk_rollout *r);
RK_API double rk_rollout_one_shot_moved(const rk_rollout *r);
/* 16 hex digits of XXH3-64 over the steps' plan digests in order (the first from
 * opt->from_version, the others from version 0: unpublished); borrowed. */
RK_API const char *rk_rollout_digest(const rk_rollout *r);
/* {"state": "review", "digest", "steps": [{"n", "topology", "moved_fraction", "balance_after",
 * "version": null, "state": "pending", "changes": [{"id", "weight_before", "weight_after"}]}],
 * "total_moved", "one_shot_moved"}; new reference, NULL when out of memory. */
RK_API struct json_t *rk_rollout_to_json(const rk_rollout *r) RK_MUST_CHECK;

/* Weighs every step of `r` (its review document `doc`, as rk_rollout_to_json made it, gains
 * them) by a load profile of `ringkeeper measure`: each step's "load" is rk_plan_load_to_json's
 * document of its plan (no nodes), and `doc` gains "load": {"bytes", "keys", "moving_bytes" (the
 * steps' sum), "requests" and "moving_requests" with reads, "profile"}. `from` is the ring the
 * rollout starts at (for the profile's hash). RK_OK; rk_load_from_profile's errors; RK_ENOMEM.
 * Cost: one ring build per step. */
RK_API int rk_rollout_load_json(const rk_rollout *r, const rk_ring *from,
                                const struct json_t *profile, int64_t now, struct json_t *doc,
                                rk_error *err) RK_MUST_CHECK;

/* ==============================================================================================
 * Part 2 — client (docs/CLIENT.md): libcurl and a refresher thread, on top of part 1
 * ==============================================================================================
 *
 * Fetches the active ring of one cluster from ringkeeperd, verifies it, and serves lookups from an
 * immutable, reference-counted snapshot. A ring is accepted only when every check passes: HTTP
 * status, size cap, a valid version document (version 1..2^53-1, state "active"), the cluster name,
 * the expected hash and vnode_factor, a known hash, the fingerprint recomputed from the nodes, and
 * a version not older than one already accepted (the last-known-good file's version counts; see
 * reset_cache for the way out of a bad file). A refused ring is never used: the last good snapshot
 * stays in service, and the refusal is counted in rk_client_status.
 *
 * Healing: when the ring is refused as older than an accepted version (the file's or one in
 * service) and that version's own store, asked with GET .../versions?limit=1, says it never issued
 * it (the newest version it has issued is lower, same store id), no server of that store sent it:
 * the accepted version is discarded, the server's ring is taken and saved over the file, the note
 * in err and last_message says what was discarded and why, and rk_client_status.discarded counts
 * it. A version the store says it has issued is never discarded. A ring of the same number and
 * store id as the server's but another fingerprint (a hostile server sent it before the store
 * issued that number) is replaced likewise: the server never answers 304 to it (docs/API.md, the
 * ring's ETag), the note says what was replaced, and `discarded` counts it.
 *
 * Thread safety: rk_client_acquire, rk_client_status_get and the rk_snapshot calls may run on any
 * number of threads at once, also while another thread fetches or refreshes: readers never wait for
 * a fetch (the swap itself is a pointer change under a short lock). rk_client_fetch and
 * rk_client_refresh must not run on two threads at once (the background refresher counts as one).
 */

typedef struct rk_client_config {
    const char *server;           /* base URL, e.g. "http://127.0.0.1:7070" */
    const char *cluster;          /* cluster name */
    const char *expect_hash;      /* "xxh3_64" ... of expect_scheme; NULL: accept any known hash */
    uint32_t expect_vnode_factor; /* 0: accept any; a ketama ring has none, so refuses any other */
    const char *token;            /* bearer token, or NULL (reads need none; one with the
                                     client role counts it as authenticated, docs/CLIENT.md) */
    long connect_timeout_ms;      /* 0: 2000 */
    long timeout_ms;              /* whole request, 0: 10000; a long poll adds its wait */
    const char *cache_file;       /* last-known-good file, or NULL for none */
    const char *ca_file;          /* CA bundle for https, or NULL for the system's */
    size_t max_body;              /* largest response accepted; 0: 64 MiB */
    int reset_cache;              /* operator's way out of a bad cache_file, for one start: the
                                     file is neither read nor served; the server's active ring is
                                     taken after every other check, even when older, and saved */
    const char *expect_scheme;    /* "ringkeeper", "ketama" (docs/KETAMA.md), "nginx", "haproxy"
                                     (docs/LOADBALANCERS.md), "envoy_ring_hash", "grpc_ring_hash"
                                     or "maglev" (docs/ENVOY.md): the ring's scheme,
                                     which also says which scheme expect_hash names; NULL:
                                     "ringkeeper" when expect_hash is set, else any scheme */
    const char *client_id;        /* sent as RK-Client on every fetch and long poll, so the server
                                     can tell which clients hold which version (docs/API.md):
                                     1..RK_CLIENT_ID_MAX bytes of printable ASCII without spaces
                                     (0x21..0x7e); NULL: "<hostname>:<pid>"; "": not sent, the
                                     client is not counted (one-shot tools) */
    const char *product;          /* the application's own product, sent in User-Agent before
                                     libringkeeper's ("ringkeeper-agent/0.2.0 (nginx)"), which
                                     the fleet report shows: 1..RK_PRODUCT_MAX bytes of printable
                                     ASCII (0x20..0x7e); NULL or "": libringkeeper's alone */
} rk_client_config;

#define RK_PRODUCT_MAX 64 /* bytes of rk_client_config.product, at most */

typedef struct rk_client rk_client;
typedef struct rk_snapshot rk_snapshot;

/* Checks and copies the configuration (strings are copied, the caller keeps its own): RK_EINVAL
 * for a server URL not http(s)://, an invalid cluster name, an unknown expect_hash or a client_id
 * that breaks its rule (field "client_id"). Reads the last-known-good file
 * when one is configured, verifies it like a fetched ring, and keeps only its version as already
 * accepted; a damaged or unverifiable file is ignored for that and reported as RK_ECACHE in
 * rk_client_status (not a failure here). No network yet. Free with rk_client_free.
 *
 * The last-known-good file is one header line "RK-LKG/1 bytes=<N> xxh3_64=<16 hex>" and then the
 * N bytes of the version document exactly as the server sent them; a file whose length or
 * checksum does not match is never used. */
RK_API rk_client *rk_client_new(const rk_client_config *cfg, rk_error *err) RK_MUST_CHECK;
/* Stops the refresher, drops the client's snapshot reference; snapshots still acquired stay valid.
 */
RK_API void rk_client_free(rk_client *c);

/* At startup: fetches the active ring and accepts it after every check (and saves it to the
 * last-known-good file atomically). When the server cannot be reached or its ring is refused, and
 * no ring is in service yet, loads the last-known-good file after the same checks:
 * RK_OK and rk_client_status().from_cache set, or the server's error when the file cannot be used
 * (rk_client_status then shows RK_ECACHE and why). With RK_OK, `err` may still carry a note for
 * people: code RK_OK and "running from the last-known-good file ... (version N) because ...", or
 * "discarded vN ..." (healing, above), or code RK_ECACHE when the ring was accepted but could not
 * be saved. */
RK_API int rk_client_fetch(rk_client *c, rk_error *err);
/* Asks for a newer ring with If-None-Match (a 304 costs no parsing); with wait_s > 0, long-polls up
 * to wait_s (<= 60) seconds. *changed (may be NULL) tells whether a new ring was accepted. */
RK_API int rk_client_refresh(rk_client *c, unsigned wait_s, int *changed, rk_error *err);
/* A thread that refreshes with long polls of wait_s seconds, pausing retry_ms (0: 1000) after an
 * error, and between rounds when wait_s is 0. Errors are counted in rk_client_status. RK_EINVAL
 * when it already runs. rk_client_stop_refresher aborts a long poll in flight and returns
 * promptly (milliseconds); it and start must not race each other. */
RK_API int rk_client_start_refresher(rk_client *c, unsigned wait_s, unsigned retry_ms,
                                     rk_error *err);
RK_API void rk_client_stop_refresher(rk_client *c);

/* An application's own check of a ring, after every check of the library and before the ring is
 * put in service (docs/CLIENT.md, "Admitting a ring"): RK_OK admits it; a failure code (negative,
 * with a sentence in `why`) refuses it like a failed check: the ring in service stays, the
 * refusal is counted, returned by the fetch or refresh, and told to the server (RK-Refused) with
 * that sentence, so the fleet report shows it and the ring is not sent again while it is active.
 * `ring` and its topology are borrowed for the call. It runs on the thread that fetches (the
 * refresher's, when one runs) and may take long (a proxy's reload): the fetch waits for it. */
typedef int (*rk_client_admit_fn)(void *arg, const rk_ring *ring, int64_t version, rk_error *why);
/* Sets (fn NULL: clears) the admit check of `c`. Call it before the first fetch and never while a
 * fetch or the refresher runs. Not called for the ring of the last-known-good file, which is only
 * a ring the application admitted before: a program that must admit every ring sets no
 * cache_file. */
RK_API void rk_client_set_admit(rk_client *c, rk_client_admit_fn fn, void *arg);

/* The snapshot in service (new reference: release it), or NULL before any ring was accepted. */
RK_API rk_snapshot *rk_client_acquire(rk_client *c);
RK_API void rk_snapshot_release(rk_snapshot *s);
RK_API int64_t rk_snapshot_version(const rk_snapshot *s);
/* The ring in service, and the one before it during a migration (NULL when none); borrowed. While
 * the server has a migration window open (docs/API.md), the previous ring is the version its
 * ring document names, fetched by number when the client lacks it; without a window, the ring the
 * one in service replaced. */
RK_API const rk_ring *rk_snapshot_ring(const rk_snapshot *s);
RK_API const rk_ring *rk_snapshot_previous(const rk_snapshot *s);
/* The version of the previous ring, 0 when there is none. */
RK_API int64_t rk_snapshot_previous_version(const rk_snapshot *s);
/* 1 when the ring in service came with the server's migration window open (its previous ring,
 * once fetched, is the window's: data is moving, dual-read); 0 otherwise, when a previous ring is
 * only the one the ring in service replaced (no copy is running: reads of it find what was not
 * moved). */
RK_API int rk_snapshot_in_window(const rk_snapshot *s);
/* Owner of a key now, and (dual reads while data moves) under the previous ring, NULL when there is
 * no previous ring. Borrowed from the snapshot. */
RK_API const rk_node *rk_snapshot_owner(const rk_snapshot *s, const void *key, size_t len,
                                        const rk_node **previous_owner);
/* The snapshot's serial number: each snapshot a client publishes (a new ring, or a previous ring
 * fetched or dropped) has a higher one than the one before it. */
RK_API uint64_t rk_snapshot_serial(const rk_snapshot *s);
/* One lookup in one call, for language bindings that keep the node ids of the snapshot they last
 * saw: the index of the key's owner among the nodes of the ring in service (rk_topology_node of
 * rk_ring_topology(rk_snapshot_ring(s))), when the snapshot in service is still the one of
 * `serial`. -1 otherwise, or before any ring, with nothing looked up: acquire the snapshot in
 * service, keep its serial and ids, and ask again. Safe on any thread, as rk_client_acquire. */
RK_API int64_t rk_client_lookup_index(rk_client *c, uint64_t serial, const void *key, size_t len);
/* The same for n keys in one call: key i is lens[i] bytes, the keys packed one after another in
 * `keys`; the owners' indexes go to out[0 .. n - 1]. 0, or -1 with nothing looked up unless the
 * snapshot in service is the one of `serial`. */
RK_API int rk_client_lookup_many(rk_client *c, uint64_t serial, const char *keys,
                                 const size_t *lens, size_t n, uint32_t *out);
/* Forgets the previous ring once the migration is over: later snapshots carry none, and a migration
 * window's previous ring is no longer fetched. A server's window does this by itself when it
 * closes (its ring document's "previous" becomes null). */
RK_API void rk_client_drop_previous(rk_client *c);

typedef struct rk_client_status {
    int64_t version;        /* version in service, 0 when none */
    int from_cache;         /* the ring in service came from the last-known-good file */
    uint64_t accepted;      /* rings accepted */
    uint64_t refused;       /* rings refused (any check failed) */
    uint64_t errors;        /* fetches that failed before a ring arrived (network, status) */
    uint64_t discarded;     /* accepted rings discarded by healing (above): versions their own
                               store never issued, or did with another ring, e.g. a poisoned
                               last-known-good file */
    int last_error;         /* outcome of the last fetch or refresh: RK_OK, or its failure; also
                               RK_ECACHE for a last-known-good file that is damaged or unsaved */
    char last_message[256]; /* what happened, for people (also on success) */
} rk_client_status;

RK_API void rk_client_status_get(rk_client *c, rk_client_status *out);

/* Verifies a version document (JSON text) as the client would and returns a new topology with its
 * version, for the CLI and tests: same checks, same codes, cheap checks first (size, JSON object,
 * cluster, version, state, hash, vnode_factor, age, fingerprint's form, topology, recomputed
 * fingerprint). Only cfg->cluster, expect_hash, expect_vnode_factor and max_body are used.
 * `expect_version_min`: the oldest version acceptable (0: any). `version` may be NULL. */
RK_API rk_topology *rk_client_verify(const rk_client_config *cfg, const char *text, size_t len,
                                     int64_t expect_version_min, int64_t *version,
                                     rk_error *err) RK_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* RINGKEEPER_H */
