#!/usr/bin/env python3
"""weight_change.py — what one server's weight change moves under the nginx, haproxy and ketama
schemes, over random pools (docs/LOADBALANCERS.md): the moved fraction against the minimum,
and what moves between servers whose weight did not change. Run by hand:

    python3 tests/balancers/weight_change.py build/client/ringkeeper [POOLS]
"""
import json
import os
import random
import subprocess
import sys
import tempfile


def plan(cli, a, b, tmp):
    paths = [os.path.join(tmp, n) for n in ("a.json", "b.json")]
    for path, doc in zip(paths, (a, b)):
        with open(path, "w") as f:
            json.dump(doc, f)
    out = subprocess.run([cli, "plan", "--from-file", paths[0], "--to-file", paths[1], "--format", "json"],
                         capture_output=True, check=True, timeout=60).stdout
    return json.loads(out)


def main():
    cli, pools = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rng = random.Random(7)
    sums = {"nginx": [0.0, 0.0, 0.0], "haproxy": [0.0, 0.0, 0.0], "ketama": [0.0, 0.0, 0.0]}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(pools):
            ids = ["10.%d.%d.%d:%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(256),
                                       rng.randrange(1024, 65535)) for _ in range(10)]
            numbers = [str(n) for n in rng.sample(range(1, 1048576), 10)]  # HAProxy's ids
            for scheme, hash_name in (("nginx", "crc32a"), ("haproxy", "sdbm"), ("ketama", "md5")):
                names = numbers if scheme == "haproxy" else ids
                docs = [{"scheme": scheme, "hash": hash_name,
                         "nodes": [{"id": n, "addr": i, "weight": w if k == 0 else 1}
                                   for k, (n, i) in enumerate(zip(names, ids))]}
                        for w in (1, 2)]
                p = plan(cli, docs[0], docs[1], tmp)
                others = sum(t["fraction"] for t in p["transfers"] if names[0] not in (t["from"], t["to"]))
                s = sums[scheme]
                s[0] += p["moved_fraction"] / p["minimal_fraction"]
                s[1] += p["moved_fraction"]
                s[2] += others
    print("%d pools of 10 servers, one server's weight 1 -> 2:" % pools)
    for scheme, s in sums.items():
        print("  %-7s moved %.2f%% on average, %.2fx the minimum; %.2f%% between the other servers"
              % (scheme, 100 * s[1] / pools, s[0] / pools, 100 * s[2] / pools))


if __name__ == "__main__":
    main()
