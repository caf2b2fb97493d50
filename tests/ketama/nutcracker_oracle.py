#!/usr/bin/env python3
"""nutcracker_oracle.py — the real twemproxy as the oracle of the ketama scheme (docs/KETAMA.md).

For each pool case: start memcached servers and a nutcracker in front of them on free loopback
ports, write the same pool as a ringkeeper topology (ids named as twemproxy names servers), set
every key through nutcracker, ask each memcached which keys it holds, and compare with
`ringkeeper lookup --topology`. Round-trip cases take the topology from `ringkeeper import` of the
pool and run nutcracker on the pool `ringkeeper export` writes back. Every process started here is stopped here; every wait is bounded.

usage: nutcracker_oracle.py RINGKEEPER_CLI [--keys N]
prints one line per case and 'N passed, N failed'; exits non-zero on any mismatch.
"""
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HASHES = ["one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1a_64",
          "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins"]


def free_ports(n):
    """n distinct free ports: all bound at once, so the kernel cannot hand one out twice."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_listening(port, proc, what):
    for _ in range(100):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within 5 s")


class Conn:
    """A memcached text-protocol connection with a bounded read."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def close(self):
        self.s.close()

    def _fill(self):
        data = self.s.recv(65536)
        if not data:
            raise RuntimeError("connection closed")
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def set_many(self, keys):
        for chunk in range(0, len(keys), 200):
            part = keys[chunk:chunk + 200]
            self.s.sendall(b"".join(b"set %s 0 0 1\r\nx\r\n" % k for k in part))
            for k in part:
                reply = self.line()
                if reply != b"STORED":
                    raise RuntimeError(f"set {k!r}: {reply!r}")

    def held(self, keys):
        found = set()
        for chunk in range(0, len(keys), 100):
            self.s.sendall(b"get " + b" ".join(keys[chunk:chunk + 100]) + b"\r\n")
            while True:
                reply = self.line()
                if reply == b"END":
                    break
                parts = reply.split(b" ")
                if parts[0] != b"VALUE":
                    raise RuntimeError(f"get: {reply!r}")
                self.exact(int(parts[3]) + 2)
                found.add(parts[1])
        return found


def make_keys(n, tagged, rng):
    """Plain keys, keys with bytes >= 0x80, and (for tagged pools) keys with hash tags."""
    keys = set()
    for i in range(n):
        kind = i % 4
        if kind == 0:
            k = b"key:%d" % i
        elif kind == 1:
            k = bytes(rng.choice(range(0x80, 0x100)) for _ in range(rng.randint(1, 12))) + b"%d" % i
        elif kind == 2:
            k = bytes(rng.choice(range(0x21, 0x7f)) for _ in range(rng.randint(1, 40))) + b"%d" % i
        else:
            k = b"user:{%d}:%d" % (i % 37, i) if tagged else b"s%d\xe9" % i
        keys.add(k.replace(b" ", b"_"))
    return sorted(keys)


def roundtrip(cli, conf_path, topo_path, listen, want, tmp):
    """`ringkeeper import` of the pool into topo_path (it must name the servers as built here),
    then `ringkeeper export` of that topology: the pool nutcracker is started with instead."""
    out = subprocess.run([cli, "import", "--nutcracker", conf_path, "--pool", "pool"],
                         capture_output=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"ringkeeper import exited {out.returncode}: {out.stderr!r}")
    got = json.loads(out.stdout)
    if got != want:
        raise RuntimeError(f"ringkeeper import gave {got}, want {want}")
    with open(topo_path, "wb") as f:
        f.write(out.stdout)
    out = subprocess.run([cli, "export", "--format", "nutcracker", "--pool", "pool", "--listen",
                          f"127.0.0.1:{listen}", "--file", topo_path], capture_output=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"ringkeeper export exited {out.returncode}: {out.stderr!r}")
    exported = os.path.join(tmp, "exported.yml")
    with open(exported, "wb") as f:
        f.write(out.stdout)
    return exported


def run_case(cli, case, nkeys, rng, tmp):
    """Returns (keys whose owners differ, keys tried): (0, N) when the two agree."""
    procs = []
    try:
        ports = free_ports(len(case["weights"]) + 2)
        ports, (listen, stats) = ports[:-2], ports[-2:]
        for p in ports:
            proc = subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(p), "-U", "0",
                                     "-m", "64", "-u", "root"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            procs.append(proc)
            wait_listening(p, proc, "memcached")
        names = case.get("names") or [None] * len(ports)  # None: twemproxy's default name
        servers, nodes = [], []
        for p, w, name in zip(ports, case["weights"], names):
            servers.append(f"   - 127.0.0.1:{p}:{w}" + (f" {name}" if name else ""))
            nodes.append({"id": name or f"127.0.0.1:{p}", "addr": f"127.0.0.1:{p}", "weight": w})
        conf = [f"pool:", f"  listen: 127.0.0.1:{listen}", f"  hash: {case['hash']}",
                "  distribution: ketama", "  auto_eject_hosts: false", "  timeout: 10000",
                "  servers:"] + servers
        if case.get("hash_tag"):
            conf.insert(3, f"  hash_tag: \"{case['hash_tag']}\"")
        conf_path = os.path.join(tmp, "nutcracker.yml")
        with open(conf_path, "w") as f:
            f.write("\n".join(conf) + "\n")
        # memcached pools (no `redis: true`): `ringkeeper import` says so in "data"
        topo = {"scheme": "ketama", "hash": case["hash"], "data": "memcached", "nodes": nodes}
        if case.get("hash_tag"):
            topo["hash_tag"] = case["hash_tag"]
        topo_path = os.path.join(tmp, "topology.json")
        if case.get("roundtrip"):
            conf_path = roundtrip(cli, conf_path, topo_path, listen, topo, tmp)
        else:
            with open(topo_path, "w") as f:
                json.dump(topo, f)
        proc = subprocess.Popen(["nutcracker", "-c", conf_path, "-s", str(stats), "-a",
                                 "127.0.0.1", "-o", os.path.join(tmp, "nutcracker.log")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        wait_listening(listen, proc, "nutcracker")

        keys = make_keys(nkeys, bool(case.get("hash_tag")), rng)
        proxy = Conn(listen)
        proxy.set_many(keys)
        proxy.close()
        truth = {}
        for node, p in zip(nodes, ports):
            c = Conn(p)
            for k in c.held(keys):
                truth[k] = node["id"].encode()
            c.close()
        out = subprocess.run([cli, "lookup", "--topology", topo_path], input=b"\n".join(keys) + b"\n",
                             capture_output=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"ringkeeper lookup exited {out.returncode}: {out.stderr!r}")
        ours = dict(line.rsplit(b"\t", 1) for line in out.stdout.split(b"\n") if line)
        wrong = [k for k in keys if truth.get(k) != ours.get(k)]
        for k in wrong[:5]:
            print(f"  {case['name']}: key {k.hex()}: nutcracker {truth.get(k)}, ringkeeper {ours.get(k)}")
        if len(truth) != len(keys):
            print(f"  {case['name']}: {len(keys) - len(truth)} keys found on no server")
        return len(wrong), len(keys)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)


def cases():
    named = ["alpha", "beta", "gamma-1", "d", "epsilon.cache"]
    for i, h in enumerate(HASHES):
        yield {"name": f"{h}-unnamed", "hash": h, "weights": [1, 1, 2, 1, 3, 1][: 3 + i % 4]}
        yield {"name": f"{h}-named-tagged", "hash": h, "weights": [10, 10, 20, 5, 1],
               "names": named, "hash_tag": "{}"}
    yield {"name": "fnv1a_64-many", "hash": "fnv1a_64", "weights": [1] * 23}
    for h in ("fnv1a_64", "murmur"):  # import -> export -> the exported pool in nutcracker
        yield {"name": f"{h}-import-export", "hash": h, "weights": [3, 1, 2, 5, 1],
               "names": [None, "beta", None, "delta", None], "hash_tag": "{}", "roundtrip": True}


def main():
    cli = sys.argv[1]
    nkeys = int(sys.argv[sys.argv.index("--keys") + 1]) if "--keys" in sys.argv else 3000
    for tool in ("memcached", "nutcracker"):
        if not shutil.which(tool):
            print(f"SKIPPED: {tool} is not installed (deploy/install-deps.sh installs it)")
            return 77
    rng = random.Random(20261201)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases():
            wrong, total = run_case(cli, case, nkeys, rng, tmp)
            print(f"{case['name']}: {total - wrong} of {total} keys agree")
            if wrong:
                failed += 1
            else:
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
