"""bench_python.py — the cost of a lookup through the Python binding (docs/PERFORMANCE.md, "The
Python binding"), against the same C call timed in C in the same run, and against what a user
would otherwise write: a pure-Python ring (bisect over the same points).

A ringkeeperd of its own (RINGKEEPERD) serves a ring of 100 nodes x 160 points; a Client fetches
it. Timed, median of 7 runs over 100,000 16-byte keys: Client.lookup with str and bytes keys,
Client.lookup_many, Ring.lookup (offline), rk_client_lookup_index in a C loop (compiled here with
cffi against the same library), and the pure baselines: md5_32 with hashlib (C) + bisect, fnv1a_32
in Python + bisect, each on its own ring of the same shape, whose owners are checked against the
library's. Not a test: run it by hand (the binding installed, as test_python.sh does):

    RINGKEEPERD=build/server/ringkeeperd RINGKEEPER_INCLUDE_DIR=client/include \\
        RINGKEEPER_LIBRARY_DIR=build/client VENV/bin/python tests/python/bench_python.py
"""
import bisect
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time

from cffi import FFI

import ringkeeper as rk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rkserver import Server, topology  # noqa: E402

N, RUNS = 100000, 7


def timed(fn, keys):
    """Median ns per key of fn(keys) over RUNS runs, after one untimed."""
    fn(keys)
    runs = []
    for _ in range(RUNS):
        t0 = time.perf_counter_ns()
        fn(keys)
        runs.append((time.perf_counter_ns() - t0) / len(keys))
    return statistics.median(runs)


def c_loop(tmp):
    """rk_client_lookup_index over n keys of len bytes in C: ns per key."""
    ffi = FFI()
    ffi.cdef("double rkb_loop(void *c, uint64_t serial, const char *keys, size_t n, size_t len);")
    ffi.set_source("rkb_loop", """
        #include <time.h>
        #include "ringkeeper.h"
        static volatile int64_t sink;
        double rkb_loop(void *c, uint64_t serial, const char *keys, size_t n, size_t len) {
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            for (size_t i = 0; i < n; i++)
                sink += rk_client_lookup_index(c, serial, keys + i * len, len);
            clock_gettime(CLOCK_MONOTONIC, &b);
            return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
        }""", libraries=["ringkeeper"], include_dirs=[os.environ["RINGKEEPER_INCLUDE_DIR"]],
        library_dirs=[os.environ["RINGKEEPER_LIBRARY_DIR"]],
        runtime_library_dirs=[os.environ["RINGKEEPER_LIBRARY_DIR"]])
    sys.path.insert(0, tmp)
    ffi.compile(tmpdir=tmp)
    import rkb_loop
    return rkb_loop


def pure_ring(points):
    """A pure-Python ring: sorted positions, owners, and a bisect lookup of a hash."""
    points.sort()
    pos, owner = [p for p, _ in points], [o for _, o in points]

    def owner_of(h):
        i = bisect.bisect_left(pos, h)
        return owner[i if i < len(pos) else 0]
    return owner_of


def md5_32(b):
    return int.from_bytes(hashlib.md5(b).digest()[:4], "big")


def fnv1a_32(b):
    h = 2166136261
    for c in b:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def baseline(hash_fn):
    """The pure ring of topology(100, vnode_factor=160): points "<id>#<i>", as docs/RING.md says."""
    return pure_ring([(hash_fn(b"n%d#%d" % (n, i)), "n%d" % n) for n in range(100) for i in range(160)])


def main():
    rng = random.Random(26)
    keys = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(16)) for _ in range(N)]
    bkeys = [k.encode() for k in keys]
    with tempfile.TemporaryDirectory(prefix="rk-bench-") as tmp:
        server = Server(os.environ["RINGKEEPERD"], tmp)
        try:
            rows = []
            for hash_name, hash_fn in (("xxh3_64", None), ("md5_32", md5_32), ("fnv1a_32", fnv1a_32)):
                doc = topology(100, hash_name=hash_name, vnode_factor=160)
                server.publish(hash_name.replace("_", "-"), doc)
                ring = rk.Topology.from_dict(doc).ring()
                with rk.Client(server.url, hash_name.replace("_", "-"), refresh=False) as c:
                    c.lookup("warm")
                    loop = c_loop(tmp) if hash_name == "xxh3_64" else None
                    serial = c._view[0]
                    row = {"hash": hash_name,
                           "lookup(str)": timed(lambda ks: [c.lookup(k) for k in ks], keys),
                           "lookup(bytes)": timed(lambda ks: [c.lookup(k) for k in ks], bkeys),
                           "lookup_many": timed(c.lookup_many, keys),
                           "Ring.lookup": timed(lambda ks: [ring.lookup(k) for k in ks], keys)}
                    if loop:
                        addr = int(rk._ffi.cast("uintptr_t", c._c))
                        flat = b"".join(bkeys)
                        row["C call"] = statistics.median(
                            loop.lib.rkb_loop(loop.ffi.cast("void *", addr), serial, flat, N, 16) for _ in range(RUNS))
                    if hash_fn:
                        owner_of = baseline(hash_fn)
                        assert all(owner_of(hash_fn(k)) == ring.lookup(k) for k in bkeys[:2000]), hash_name
                        row["pure Python"] = timed(lambda ks: [owner_of(hash_fn(k.encode())) for k in ks], keys)
                    rows.append(row)
        finally:
            server.stop()
    load = os.getloadavg()[0]
    print("bench_python: %d keys of 16 bytes, 100 x 160 rings, median of %d runs, load %.2f" % (N, RUNS, load))
    for row in rows:
        print("  %-9s " % row.pop("hash") + ", ".join("%s %.0f ns" % kv for kv in row.items()))


if __name__ == "__main__":
    main()
