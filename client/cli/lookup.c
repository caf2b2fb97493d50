/* lookup.c — `ringkeeper lookup`: the owner (and replicas) of each key read from stdin, with a
 * topology file or the server's active ring. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

#define MAX_REPLICAS       64
#define RK_CLI_SCHEMES_MAX 32 /* choices of --expect-scheme */

static int check_expected(const rk_ring *r, const rk_cli_lookup_server *want)
{
    const rk_topology *t = rk_ring_topology(r);
    const char *scheme = rk_scheme_name(rk_topology_scheme(t));
    const char *has = rk_hash_name(rk_topology_hash(t));
    const char *want_scheme = want->expect_scheme ? want->expect_scheme
                              : want->expect_hash ? rk_scheme_at(0) /* the default */
                                                  : NULL;
    if (want_scheme && strcmp(want_scheme, scheme) != 0)
        return rk_cli_fail("lookup", RK_EXIT_REFUSED,
                           "ring refused: it is of the %s scheme, this application expects the %s "
                           "scheme; routing with it would send keys to the wrong nodes",
                           scheme, want_scheme);
    if (want->expect_hash && strcmp(want->expect_hash, has) != 0)
        return rk_cli_fail("lookup", RK_EXIT_REFUSED,
                           "ring refused: it hashes with %s, this application expects %s; routing "
                           "with it would send keys to the wrong nodes",
                           has, want->expect_hash);
    unsigned long long vf = want->expect_vnode_factor;
    if (vf && vf != rk_topology_vnode_factor(t))
        return rk_cli_fail("lookup", RK_EXIT_REFUSED,
                           "ring refused: its vnode_factor is %u, this application expects %llu",
                           rk_topology_vnode_factor(t), vf);
    return RK_EXIT_OK;
}

/* -o table (default): "key<TAB>node..."; --quiet: the nodes only; -o json: one object a line.
 * While a migration window is open (`prev` not NULL) the owners under the previous ring follow:
 * after the others on a table line, as "previous" in a JSON one. */
static const rk_cli_view view = {"table", NULL, NULL};

typedef struct key_owners {
    uint32_t now[MAX_REPLICAS], before[MAX_REPLICAS];
    size_t n_now, n_before;
} key_owners;

static json_t *node_ids(const rk_ring *r, const uint32_t *o, size_t n)
{
    json_t *ids = json_array();
    for (size_t k = 0; ids && k < n; k++)
        json_array_append_new(ids, json_string(rk_topology_node(rk_ring_topology(r), o[k])->id));
    return ids;
}

/* {"key": ..., "nodes": [...]} on one line (JSON Lines); -1 for a key that is not UTF-8. */
static int print_json_line(const char *name, const char *key, size_t len, const rk_ring *r,
                           const rk_ring *prev, const key_owners *o)
{
    json_t *line = json_pack("{s:s%, s:o}", name, key, len, "nodes", node_ids(r, o->now, o->n_now));
    if (line && prev)
        json_object_set_new(line, "previous", node_ids(prev, o->before, o->n_before));
    char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
    json_decref(line);
    if (text)
        printf("%s\n", text);
    free(text);
    return text ? 0 : -1;
}

static void print_ids(const rk_ring *r, const uint32_t *o, size_t n, int first_bare)
{
    if (n == 0) /* a request the balancer spreads round robin */
        printf("%s-", first_bare ? "" : "\t");
    for (size_t k = 0; k < n; k++)
        printf("%s%s", k == 0 && first_bare ? "" : "\t",
               rk_topology_node(rk_ring_topology(r), o[k])->id);
}

static void print_line(const char *key, size_t len, const rk_ring *r, const rk_ring *prev,
                       const key_owners *o)
{
    if (!rk_cli_out.quiet)
        fwrite(key, 1, len, stdout);
    print_ids(r, o->now, o->n_now, rk_cli_out.quiet);
    if (prev)
        print_ids(prev, o->before, o->n_before, 0);
    putchar('\n');
}

/* ---- --requests: a request a line, "TARGET<TAB>Name: value<TAB>...", keyed as the balancer
 * keys it ---- */

#define MAX_HEADERS 64

typedef struct request_line {
    rk_request req;
    rk_header headers[MAX_HEADERS];
} request_line;

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* Line `no` (len bytes) split in place into a request: 0, or an exit code after a message. */
static int split_request(char *line, size_t len, size_t no, request_line *r)
{
    const char *why = NULL;
    if (memchr(line, 0, len))
        why = "a NUL byte";
    line[len] = '\0'; /* in place of the "\n" */
    r->req = (rk_request){line, r->headers, 0};
    for (char *tab = strchr(line, '\t'); !why && tab; tab = strchr(tab, '\t')) {
        *tab++ = '\0';
        char *colon = strchr(tab, ':');
        if (!colon || colon == tab || r->req.n_headers == MAX_HEADERS) {
            why = colon ? "more than 64 header fields" : "a header field is \"Name: value\"";
            break;
        }
        *colon = '\0';
        r->headers[r->req.n_headers++] = (rk_header){tab, trim(colon + 1)};
        tab = colon + 1;
    }
    for (const char *c = line; !why && *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            why = "the target has a space or a control character: send it percent-encoded";
    return why ? rk_cli_fail("lookup", RK_EXIT_USAGE, "--requests: line %zu: %s", no, why) : 0;
}

/* The owners of the key the balancer of ring `r` takes from the request (none when it balances it
 * round robin): 0, or an exit code after a message. */
static int request_owners(const rk_ring *r, const rk_request *req, size_t no, uint32_t *o,
                          size_t replicas, size_t *n)
{
    char *key;
    size_t len;
    rk_error err = {0};
    if (rk_request_key(rk_ring_topology(r), req, &key, &len, &err) != RK_OK)
        return rk_cli_fail("lookup", RK_EXIT_USAGE, "--requests: line %zu: %s", no, err.message);
    *n = len ? rk_ring_lookup_replicas(r, key, len, o, replicas) : 0;
    free(key);
    return 0;
}

/* The owners of line `no`: of the key it is, or of the key the balancer takes from it. */
static int owners(char *line, size_t len, size_t no, int requests, const rk_ring *r,
                  const rk_ring *prev, size_t replicas, key_owners *o)
{
    request_line rl;
    o->n_before = 0;
    if (!requests) {
        o->n_now = rk_ring_lookup_replicas(r, line, len, o->now, replicas);
        o->n_before = prev ? rk_ring_lookup_replicas(prev, line, len, o->before, replicas) : 0;
        return 0;
    }
    int rc = split_request(line, len, no, &rl);
    if (!rc)
        rc = request_owners(r, &rl.req, no, o->now, replicas, &o->n_now);
    if (!rc && prev)
        rc = request_owners(prev, &rl.req, no, o->before, replicas, &o->n_before);
    return rc;
}

static int route_keys(const rk_ring *r, const rk_ring *prev, size_t replicas, int requests)
{
    int json = !rk_cli_out.quiet && strcmp(rk_cli_format(), "json") == 0;
    char *line = NULL;
    size_t cap = 0, n = 0;
    long len;
    int rc = RK_EXIT_OK;
    while (rc == RK_EXIT_OK && (len = rk_cli_next_key(stdin, &line, &cap)) >= 0) {
        key_owners o;
        if ((rc = owners(line, (size_t)len, ++n, requests, r, prev, replicas, &o)) != 0)
            break;
        if (requests) /* the target is what the line shows */
            len = (long)strlen(line);
        if (!json)
            print_line(line, (size_t)len, r, prev, &o);
        else if (print_json_line(requests ? "request" : "key", line, (size_t)len, r, prev, &o))
            rc = rk_cli_fail("lookup", RK_EXIT_USAGE,
                             "-o json: the key on line %zu is not UTF-8; use -o table", n);
    }
    free(line);
    if (rc == RK_EXIT_OK && (ferror(stdin) || fflush(stdout)))
        return rk_cli_fail("lookup", RK_EXIT_FAIL, "reading keys or writing results failed");
    return rc;
}

typedef struct {
    const char *file;            /* --topology */
    unsigned long long replicas; /* --replicas */
    int requests;                /* --requests */
    rk_cli_lookup_server remote; /* --server, --cluster, --token, --cache and the expectations */
} lookup_args;

/* --expect-hash names a hash of --expect-scheme (ringkeeper by default). */
static int check_hash_name(const rk_cli_lookup_server *r)
{
    rk_scheme scheme = RK_SCHEME_RINGKEEPER;
    rk_hash_alg alg;
    if (r->expect_scheme)
        rk_scheme_from_name(r->expect_scheme, &scheme); /* a choice of the option table */
    if (!r->expect_hash || rk_hash_from_scheme_name(scheme, r->expect_hash, &alg) == RK_OK)
        return RK_EXIT_OK;
    char names[256];
    size_t at = 0;
    for (size_t i = 0; rk_hash_at(scheme, i) && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                               rk_hash_at(scheme, i));
    return rk_cli_fail("lookup", RK_EXIT_USAGE,
                       "--expect-hash: \"%s\" is no hash of the %s scheme (its hashes: %s%s)",
                       r->expect_hash, rk_scheme_name(scheme), names,
                       r->expect_scheme ? "" : "; for another scheme's, add --expect-scheme");
}

static int parse_args(const rk_cli_cmd *cmd, int argc, char **argv, lookup_args *a)
{
    const char *schemes[RK_CLI_SCHEMES_MAX + 1] = {0}; /* this build's, from the registry */
    for (size_t i = 0; i < RK_CLI_SCHEMES_MAX; i++)
        schemes[i] = rk_scheme_at(i);
    rk_cli_lookup_server *r = &a->remote;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("topology", RK_CLI_TEXT, &a->file),
        RK_CLI_OPT("replicas", RK_CLI_NUMBER, &a->replicas, .lo = 1, .hi = MAX_REPLICAS),
        RK_CLI_OPT("requests", RK_CLI_FLAG, &a->requests),
        RK_CLI_OPT("expect-hash", RK_CLI_TEXT, &r->expect_hash),
        RK_CLI_OPT("expect-scheme", RK_CLI_CHOICE, &r->expect_scheme, .choices = schemes),
        RK_CLI_OPT("expect-vnode-factor", RK_CLI_NUMBER, &r->expect_vnode_factor, .lo = 1,
                   .hi = RK_MAX_VNODE_FACTOR),
        RK_CLI_OPT("cache", RK_CLI_TEXT, &r->cache_file),
        RK_CLI_OPT("reset-cache", RK_CLI_FLAG, &r->reset_cache),
        RK_CLI_OPT("client-id", RK_CLI_TEXT, &r->client_id),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &r->server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    int online = r->server.url || r->server.cluster || r->server.token || r->server.ca_file ||
                 r->server.timeout || r->cache_file || r->client_id;
    if (a->file && online)
        return rk_cli_usage_error(cmd, "--topology (a file) and the server options (--server, "
                                       "--cluster, --token, --ca-file, --timeout, --cache, "
                                       "--client-id) do "
                                       "not mix");
    if (!a->file && !online && !rk_cli_env_cluster())
        return rk_cli_usage_error(cmd, "--topology FILE, or a cluster (--cluster C or "
                                       "RINGKEEPER_CLUSTER) with a server (--server URL or "
                                       "RINGKEEPER_SERVER), is required");
    if (r->reset_cache && !r->cache_file)
        return rk_cli_usage_error(cmd, "--reset-cache needs --cache FILE");
    if (r->client_id && !rk_client_id_valid(r->client_id))
        return rk_cli_fail("lookup", RK_EXIT_USAGE,
                           "--client-id: must be 1..%d bytes of printable ASCII without spaces, "
                           "got \"%s\"",
                           RK_CLIENT_ID_MAX, r->client_id);
    return check_hash_name(r);
}

static int lookup_file(const lookup_args *a)
{
    rk_ring *r = rk_cli_load_ring("lookup", a->file);
    if (!r)
        return RK_EXIT_USAGE;
    int rc = check_expected(r, &a->remote);
    if (rc == RK_EXIT_OK)
        rc = route_keys(r, NULL, (size_t)a->replicas, a->requests);
    rk_ring_free(r);
    return rc;
}

static int lookup_server(lookup_args *a)
{
    rk_snapshot *snap = NULL;
    int rc = rk_cli_server_check("lookup", &a->remote.server);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_lookup_snapshot(&a->remote, &snap);
    const rk_ring *prev = snap ? rk_snapshot_previous(snap) : NULL;
    if (rc == RK_EXIT_OK && prev)
        rk_cli_fail("lookup", RK_EXIT_OK,
                    "a migration window is open: after the owners under v%" PRId64
                    ", each line has the owners under the previous ring v%" PRId64
                    " (read from them until the data has moved)",
                    rk_snapshot_version(snap), rk_snapshot_previous_version(snap));
    if (rc == RK_EXIT_OK)
        rc = route_keys(rk_snapshot_ring(snap), prev, (size_t)a->replicas, a->requests);
    if (snap)
        rk_snapshot_release(snap);
    return rc;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    lookup_args a = {.replicas = 1};
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    return a.file ? lookup_file(&a) : lookup_server(&a);
}

const rk_cli_cmd rk_cli_lookup = {
    "lookup", run,
    "usage: ringkeeper lookup --topology FILE [--replicas R] [--expect-scheme S] [--expect-hash "
    "H]\n"
    "                         [--expect-vnode-factor N] [--requests] < keys\n"
    "       ringkeeper lookup --server URL --cluster C [--cache FILE [--reset-cache]] [--token T]\n"
    "                         [--timeout S] [--replicas R] [--expect-hash H] [--client-id ID]\n"
    "                         [--expect-vnode-factor N] [--requests] < keys\n"
    "\n"
    "Reads keys from stdin, one a line (the bytes before \\n; an empty line is the empty key), "
    "and\n"
    "prints \"key<TAB>node id\" for each; with --replicas R, the first R distinct nodes "
    "clockwise.\n"
    "While a migration window is open (--server), the owners under the previous ring follow\n"
    "(\"key<TAB>node id<TAB>previous node id\"), and a note on stderr says so.\n"
    "-o json prints {\"key\": ..., \"nodes\": [...]} a line (JSON Lines; keys must be UTF-8), "
    "with\n"
    "\"previous\": [...] in a migration window; --quiet prints the node ids only.\n"
    "With --requests (nginx and haproxy topologies), each line is a request instead:\n"
    "\"TARGET<TAB>Name: value<TAB>...\" (the target as sent, \"/path?query\", then header fields\n"
    "in their order), routed by the key the balancer takes from it (the topology's request_key:\n"
    "nginx's hash expression, HAProxy's balance); \"-\" for a request it spreads round robin.\n"
    "On envoy_ring_hash, grpc_ring_hash and maglev topologies a key is the request's 64-bit hash\n"
    "in decimal, as the balancer's hash policy computed it; any other line is hashed with\n"
    "xxHash64, as Envoy's header hash policy hashes one value (docs/ENVOY.md).\n"
    "\n"
    "  --topology FILE           a topology or a version document (JSON)\n"
    "  --server URL              fetch the active ring of cluster C instead, verified (cluster, "
    "hash,\n"
    "                            vnode_factor, fingerprint); default server: $RINGKEEPER_SERVER\n"
    "  -c, --cluster C           the cluster (default $RINGKEEPER_CLUSTER)\n"
    "  --cache FILE              last-known-good file: rewritten after each accepted fetch, used\n"
    "                            (with a note on stderr) when the server cannot be reached\n"
    "                            or offers an older ring than the file's\n"
    "  --reset-cache             distrust the --cache file (damaged, or saved from a hostile\n"
    "                            server): take the server's active ring, even an older one, after\n"
    "                            every other check, and rewrite the file\n"
    "  --client-id ID            be counted by the server as client ID (RK-Client; see\n"
    "                            `ringkeeper clients`); by default a lookup is not counted\n"
    "  --token T                 bearer token (default $RINGKEEPER_TOKEN); reads need none\n"
    "  --ca-file FILE            CA certificates for an https server (default "
    "$RINGKEEPER_CA_FILE)\n"
    "  --timeout S               " RK_CLI_TIMEOUT_HELP
    "  --replicas R              1..64 nodes per key (default 1)\n"
    "  --requests                the lines are requests, keyed as the balancer keys them\n"
    "  --expect-scheme S         refuse the ring (exit 3) unless it is of scheme S: ringkeeper\n"
    "                            (the default with --expect-hash), ketama (twemproxy's ring),\n"
    "                            nginx or haproxy (the balancers' rings)\n"
    "  --expect-hash H           refuse the ring (exit 3) unless it hashes with H, a hash of the\n"
    "                            expected scheme\n"
    "  --expect-vnode-factor N   refuse the ring (exit 3) unless its vnode_factor is N\n"
    "  -o, --output table|json   \"key<TAB>node\" lines (default) or JSON Lines\n"
    "  -q, --quiet               the node ids only\n"
    "\n"
    "Exit codes: 0 ok, 1 failure, 2 bad input (also a --cache FILE that cannot be written: "
    "nothing\n"
    "is routed then), 3 ring refused, 4 server unreachable (and no usable --cache file).\n",
    NULL, NULL};
