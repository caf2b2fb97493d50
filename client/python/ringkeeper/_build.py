"""_build.py — the cffi builder of ringkeeper._native (run by setup.py at install time).

cffi's API mode, not ctypes: the declarations below are compiled against ringkeeper.h, so a field
or a signature that drifts from the header fails the install instead of corrupting memory at run
time, and each call is a direct C call (tens of nanoseconds) where ctypes goes through libffi
(about a microsecond), which would be most of a lookup.

The header and the library are found, in order: RINGKEEPER_INCLUDE_DIR and RINGKEEPER_LIBRARY_DIR
(a build tree: client/include and build/client), then `pkg-config ringkeeper` (an installed
library), then the compiler's defaults. The library's directory is also the extension's run-time
search path, so no LD_LIBRARY_PATH is needed.
"""
import os
import shlex
import subprocess

from cffi import FFI

CDEF = """
#define RK_OK ...
#define RK_EINVAL ...
#define RK_ENOMEM ...
#define RK_EJSON ...
#define RK_ETOPOLOGY ...
#define RK_ETOOBIG ...
#define RK_EHASHMISMATCH ...
#define RK_EIO ...
#define RK_EUNREACHABLE ...
#define RK_EHTTP ...
#define RK_ETOOLARGE ...
#define RK_EDOCUMENT ...
#define RK_ECLUSTER ...
#define RK_EEXPECT ...
#define RK_EUNKNOWNHASH ...
#define RK_EFINGERPRINT ...
#define RK_EOLDVERSION ...
#define RK_ENORING ...
#define RK_ECACHE ...

typedef int... rk_scheme;
typedef int... rk_hash_alg;
typedef struct { int code; char field[...]; char message[...]; ...; } rk_error;
typedef struct { const char *id; const char *addr; double weight; } rk_node;
typedef struct rk_topology rk_topology;
typedef struct rk_ring rk_ring;
typedef struct rk_plan rk_plan;
typedef struct rk_plan_options rk_plan_options;
typedef struct { uint32_t from; uint32_t to; double fraction; size_t arcs; } rk_transfer;
typedef struct {
    const char *id;
    double weight_before, weight_after;
    double share_before, share_after, ideal_before, ideal_after, gained, lost;
} rk_plan_node;
typedef struct rk_client rk_client;
typedef struct rk_snapshot rk_snapshot;
typedef struct {
    const char *server;
    const char *cluster;
    const char *expect_hash;
    uint32_t expect_vnode_factor;
    const char *token;
    long connect_timeout_ms;
    long timeout_ms;
    const char *cache_file;
    const char *ca_file;
    size_t max_body;
    int reset_cache;
    const char *expect_scheme;
    const char *client_id;
    const char *product;
} rk_client_config;
typedef struct {
    int64_t version;
    int from_cache;
    uint64_t accepted;
    uint64_t refused;
    uint64_t errors;
    uint64_t discarded;
    int last_error;
    char last_message[...];
} rk_client_status;

const char *rk_version(void);
const char *rk_errname(int code);
const char *rk_scheme_name(rk_scheme scheme);
const char *rk_hash_name(rk_hash_alg alg);

rk_topology *rk_topology_parse(const char *text, size_t len, rk_error *err);
void rk_topology_free(rk_topology *t);
size_t rk_topology_node_count(const rk_topology *t);
const rk_node *rk_topology_node(const rk_topology *t, size_t i);
rk_scheme rk_topology_scheme(const rk_topology *t);
rk_hash_alg rk_topology_hash(const rk_topology *t);
uint32_t rk_topology_vnode_factor(const rk_topology *t);
uint64_t rk_topology_points(const rk_topology *t);

rk_ring *rk_ring_build(rk_topology *t, rk_error *err);
void rk_ring_free(rk_ring *r);
const rk_topology *rk_ring_topology(const rk_ring *r);
size_t rk_ring_point_count(const rk_ring *r);
const char *rk_ring_fingerprint_hex(const rk_ring *r);
uint32_t rk_ring_lookup(const rk_ring *r, const void *key, size_t len);
size_t rk_ring_lookup_replicas(const rk_ring *r, const void *key, size_t len, uint32_t *out,
                               size_t want);
double rk_ring_share(const rk_ring *r, size_t node);

rk_plan *rk_plan_new(const rk_ring *a, const rk_ring *b, const rk_plan_options *opt,
                     rk_error *err);
void rk_plan_free(rk_plan *p);
double rk_plan_moved_fraction(const rk_plan *p);
double rk_plan_minimal_fraction(const rk_plan *p);
const rk_plan_node *rk_plan_nodes(const rk_plan *p, size_t *n);
const rk_transfer *rk_plan_transfers(const rk_plan *p, size_t *n);

rk_client *rk_client_new(const rk_client_config *cfg, rk_error *err);
void rk_client_free(rk_client *c);
int rk_client_fetch(rk_client *c, rk_error *err);
int rk_client_refresh(rk_client *c, unsigned wait_s, int *changed, rk_error *err);
int rk_client_start_refresher(rk_client *c, unsigned wait_s, unsigned retry_ms, rk_error *err);
void rk_client_stop_refresher(rk_client *c);
rk_snapshot *rk_client_acquire(rk_client *c);
void rk_snapshot_release(rk_snapshot *s);
int64_t rk_snapshot_version(const rk_snapshot *s);
uint64_t rk_snapshot_serial(const rk_snapshot *s);
const rk_ring *rk_snapshot_ring(const rk_snapshot *s);
const rk_ring *rk_snapshot_previous(const rk_snapshot *s);
int64_t rk_snapshot_previous_version(const rk_snapshot *s);
int rk_snapshot_in_window(const rk_snapshot *s);
int64_t rk_client_lookup_index(rk_client *c, uint64_t serial, const void *key, size_t len);
int rk_client_lookup_many(rk_client *c, uint64_t serial, const char *keys, const size_t *lens,
                          size_t n, uint32_t *out);
void rk_client_status_get(rk_client *c, rk_client_status *out);
"""


def _pkg_config(flag):
    try:
        out = subprocess.run(["pkg-config", flag, "ringkeeper"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return []
    return [w[2:] for w in shlex.split(out.stdout)]


def _dirs(env, flag):
    return [os.environ[env]] if os.environ.get(env) else _pkg_config(flag)


include_dirs = _dirs("RINGKEEPER_INCLUDE_DIR", "--cflags-only-I")
library_dirs = _dirs("RINGKEEPER_LIBRARY_DIR", "--libs-only-L")

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source("ringkeeper._native", '#include "ringkeeper.h"', libraries=["ringkeeper"],
                      include_dirs=include_dirs, library_dirs=library_dirs,
                      runtime_library_dirs=library_dirs)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
