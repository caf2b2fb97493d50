#!/usr/bin/python3
"""test_grpc_oracle.py — the grpc_ring_hash scheme against grpc-js-xds's own balancer (issue 58).

usage: test_grpc_oracle.py RINGKEEPER [--configs N] [--hashes H] [--seed S]

N random configurations (default 50): 1 to 120 endpoints, IPv4 and IPv6 addresses, weights 1 to
1000, minimum and maximum ring sizes below, at and past the channel's ring size cap (itself 4096,
or drawn from 64 to 65536). Each is given to grpc_oracle.js (the published @grpc/grpc-js-xds
package's ring_hash balancer, pinned in package-lock.json) and, as a grpc_ring_hash topology whose
node ids are the addresses grpc-js-xds hashes, to `ringkeeper lookup --topology`: every one of H
request hashes a configuration (default 2000: the edges of the hash space, then random) must pick
the same endpoint. Then 10 changes (an endpoint added or removed, a weight doubled or halved):
`ringkeeper plan`'s moved fraction must be the share of 20,000 random request hashes whose
grpc-js-xds pick changed, within four standard errors of that sample. (A minimum above the maximum, which grpc-js-xds builds as the maximum and this
scheme refuses as Envoy does, is not drawn: docs/ENVOY.md.) Exit 0 when all agree, 1 on a difference, 77
without node or the npm packages (deploy/install-deps.sh installs them).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CAP = 4096  # grpc-js-xds's DEFAULT_RING_SIZE_CAP
PAIRS = 10  # changes whose plan is checked against the picks
MOVE_HASHES = 20000  # request hashes that measure a change


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def config(rng, hashes):
    n = rng.choice([1, 2, 3, 5, 10, 30, 60, 100, 120])
    addrs = set()
    while len(addrs) < n:
        if rng.random() < 0.2:
            addrs.add("[fd00::%x:%x]:%d" % (rng.randrange(65536), rng.randrange(65536), rng.randrange(1, 65536)))
        else:
            addrs.add("10.%d.%d.%d:%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(256),
                                          rng.randrange(1, 65536)))
    weighted = rng.random() < 0.7
    cap = CAP if rng.random() < 0.5 else rng.choice([64, 256, 1000, 8192, 65536])
    lo = rng.choice([1, 16, 1024, cap, cap + 1, 3 * cap])
    hi = max(lo, rng.choice([lo, 2 * lo, cap, 8388608]))  # a minimum past the maximum is refused
    edges = ["0", "1", str(2**64 - 1), str(2**64 - 2), str(2**63)]
    hs = edges + [str(rng.getrandbits(64)) for _ in range(hashes - len(edges))]
    return {"endpoints": [{"address": a, "weight": rng.randint(1, 1000) if weighted else 1}
                          for a in sorted(addrs, key=lambda _: rng.random())],
            "min_ring_size": lo, "max_ring_size": hi, "ring_size_cap": cap, "hashes": hs}


def changed(rng, c, hashes):
    """c after one change an operator makes: an endpoint added, one removed, or a weight moved;
    asked on `hashes` random request hashes, to measure what moves."""
    eps = [dict(e) for e in c["endpoints"]]
    what = rng.choice(["add", "remove", "weight"]) if len(eps) > 1 else "add"
    if what == "add":
        eps.insert(rng.randrange(len(eps) + 1),
                   {"address": "10.250.%d.%d:7000" % (rng.randrange(256), rng.randrange(256)),
                    "weight": rng.choice([e["weight"] for e in eps])})
    elif what == "remove":
        eps.pop(rng.randrange(len(eps)))
    else:
        e = rng.choice(eps)
        e["weight"] = max(1, min(1000, e["weight"] * 2 if e["weight"] < 500 else e["weight"] // 2))
    hs = [str(rng.getrandbits(64)) for _ in range(hashes)]
    return dict(c, endpoints=eps, hashes=hs), what


def topology(c):
    return {"scheme": "grpc_ring_hash", "hash": "xx_hash", "minimum_ring_size": c["min_ring_size"],
            "maximum_ring_size": c["max_ring_size"], "ring_size_cap": c["ring_size_cap"],
            "nodes": [{"id": e["address"], "addr": e["address"], "weight": e["weight"]}
                      for e in c["endpoints"]]}


def check_moves(rk, pairs, moves):
    """Each change's plan (ringkeeper plan's moved_fraction) against the share of request hashes
    whose grpc-js-xds pick changed: within four standard errors of the sample. The failures."""
    failed = 0
    tmp = tempfile.mkdtemp()
    try:
        for k, (before, after, what) in enumerate(pairs):
            picks = [json.loads(moves[2 * k])["picks"], json.loads(moves[2 * k + 1])["picks"]]
            moved = sum(1 for a, b in zip(*picks) if a != b) / len(picks[0])
            paths = [os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")]
            for path, c in zip(paths, (before, after)):
                with open(path, "w") as f:
                    json.dump(topology(c), f)
            plan = json.loads(subprocess.run([rk, "plan", "--from-file", paths[0], "--to-file",
                                              paths[1], "-o", "json"], capture_output=True,
                                             text=True, check=True, timeout=60).stdout)
            p = plan["moved_fraction"]
            tol = 4 * (max(p * (1 - p), 1e-6) / len(picks[0])) ** 0.5
            ok = abs(moved - p) <= tol
            print(f"{'ok' if ok else 'FAIL'}: change {k} ({what}, {len(before['endpoints'])} "
                  f"endpoints): the plan moves {p:.4%}, grpc-js-xds moved {moved:.4%} of "
                  f"{len(picks[0])} request hashes (tolerance {tol:.4%})")
            failed += not ok
    finally:
        shutil.rmtree(tmp)
    return failed


def main():
    rk = sys.argv[1]
    n, hashes, seed = arg("--configs", 50), arg("--hashes", 2000), arg("--seed", 58)
    node = shutil.which("node")
    if not node or not os.path.isdir(os.path.join(HERE, "node_modules", "@grpc", "grpc-js-xds")):
        print("SKIP: node or tests/envoy/node_modules is missing (deploy/install-deps.sh)")
        return 77
    rng = random.Random(seed)
    configs = [config(rng, hashes) for _ in range(n)]
    # the plan of a change against what grpc-js-xds moves, measured request by request
    pairs = []
    for c in configs[:PAIRS]:
        after, what = changed(rng, c, MOVE_HASHES)
        pairs.append((dict(c, hashes=after["hashes"]), after, what))
    asked = configs + [c for pair in pairs for c in pair[:2]]
    answers = subprocess.run([node, os.path.join(HERE, "grpc_oracle.js")], cwd=HERE, check=True,
                             input="".join(json.dumps(c) + "\n" for c in asked),
                             capture_output=True, text=True, timeout=600).stdout.splitlines()
    oracle, moves = answers[:n], answers[n:]
    failed = picks = 0
    tmp = tempfile.mkdtemp()
    try:
        for i, (c, line) in enumerate(zip(configs, oracle)):
            want = json.loads(line)
            path = os.path.join(tmp, "t.json")
            with open(path, "w") as f:
                json.dump(topology(c), f)
            out = subprocess.run([rk, "lookup", "--topology", path], input="\n".join(c["hashes"]) + "\n",
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                print(f"FAIL: configuration {i}: lookup: {out.stderr.strip()}")
                failed += 1
                continue
            got = [l.split("\t")[1] for l in out.stdout.splitlines()]
            diff = [(h, w, g) for h, w, g in zip(c["hashes"], want["picks"], got) if w != g]
            picks += len(got)
            if diff or len(got) != len(c["hashes"]):
                failed += 1
                print(f"FAIL: configuration {i} ({len(c['endpoints'])} endpoints, sizes "
                      f"{c['min_ring_size']}..{c['max_ring_size']}, cap {c['ring_size_cap']}, ring "
                      f"{want['ring_size']}): {len(diff)} picks differ, first {diff[:2]}")
    finally:
        shutil.rmtree(tmp)
    failed += check_moves(rk, pairs, moves)
    if len(oracle) != n:
        print(f"FAIL: the oracle answered {len(oracle)} of {n} configurations")
        failed += 1
    print(f"{n} configurations, {picks} picks compared with grpc-js-xds 1.14.1: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
