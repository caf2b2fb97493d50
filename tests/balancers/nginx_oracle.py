#!/usr/bin/env python3
"""nginx_oracle.py — the real nginx as the oracle of the nginx scheme (docs/LOADBALANCERS.md).

For each pool case: start one nginx on free loopback ports that is both the balancer (two upstreams
of the same servers: `hash $request_uri consistent` and `hash $http_x_key consistent`) and the
backends (each answers with its own address), write the same pool as a ringkeeper topology (ids as
the `server` lines write them), send every key through the balancer, and compare the backend that
answered with `ringkeeper lookup --topology`. Where a case names the pool before it, the URI
upstream is the operator's own (keepalive, comments, each server's max_fails= and fail_timeout=)
over that pool, rewritten by `ringkeeper export --into`: nginx runs on the rewritten file. Keys: paths with percent-encoded bytes >= 0x80 and
queries (the URI pool), raw bytes >= 0x80 and long keys (the header pool). The empty key is no
ring's: nginx balances it round-robin by weight (the program, not its source, is the oracle), and
the test checks it does. Every process started here is stopped here; every wait is bounded.

usage: nginx_oracle.py RINGKEEPER_CLI [--keys N]
prints one line per case and 'N passed, N failed'; exits non-zero on any mismatch, 77 without nginx.
"""
import bisect
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ketama"))
from nutcracker_oracle import free_ports, wait_listening  # noqa: E402

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


def upstream(name, key, servers):
    """An upstream block over `servers` [(addr, weight)], hashing `key` consistently."""
    return "    upstream %s {\n        hash %s consistent;\n%s    }\n" % (name, key, "".join(
        "        server %s%s;\n" % (a, " weight=%d" % w if w != 1 else "") for a, w in servers))


def operator_upstream(name, key, servers):
    """An upstream over `servers` [(addr, weight)] as an operator writes one: keepalive, comments,
    each server with options of its own."""
    return ("    upstream %s {\n        hash %s consistent;  # by URI\n        keepalive 8;\n"
            "        # the caches\n%s    }\n" % (name, key, "".join(
                "        server %s%s max_fails=3 fail_timeout=5s;\n" % (a, " weight=%d" % w if w != 1 else "")
                for a, w in servers)))


def rewrite_into(cli, conf, upstream, topo_path, before, servers):
    """`ringkeeper export --into conf` of the topology, checked: the operator's lines kept, each
    server the pool kept with its own options."""
    out = subprocess.run([cli, "export", "--format", "nginx", "--upstream", upstream, "--into", conf,
                          "--file", topo_path], capture_output=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("export --into: exit %d, %s" % (out.returncode, out.stderr.decode()))
    with open(conf) as f:
        text = f.read()
    lines = text.splitlines()
    kept = {a for a, _ in before} & {a for a, _ in servers}
    if ("        keepalive 8;" not in lines or "        # the caches" not in lines or
            not all(any(l.startswith("        server %s " % a) and l.endswith(" max_fails=3 fail_timeout=5s;")
                        for l in lines) for a in kept)):
        raise RuntimeError("export --into did not keep the operator's lines:\n%s" % text)


def config(tmp, lb, servers, by_uri=None):
    """An nginx.conf: the two balancers on lb[0] and lb[1] over `servers` [(addr, weight)] (the
    first with the upstream block `by_uri` when given), and a backend per server that answers with
    its address."""
    backends = "".join("    server { listen %s; location / { return 200 \"%s\"; } }\n" % (a, a) for a, _ in servers)
    temp = "".join("    %s_temp_path %s/%s;\n" % (k, tmp, k) for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return ("daemon off;\nmaster_process off;\npid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\n"
            "http {\n    access_log off;\n%s%s%s"
            "    server { listen 127.0.0.1:%d; location / { proxy_pass http://by_uri; } }\n"
            "    server { listen 127.0.0.1:%d; location / { proxy_pass http://by_header; } }\n%s}\n"
            % (tmp, tmp, temp, by_uri or upstream("by_uri", "$request_uri", servers),
               upstream("by_header", "$http_x_key", servers), lb[0], lb[1], backends))


def uri_keys(rng, n):
    """Request URIs: plain, percent-encoded bytes >= 0x80, queries, long ones."""
    out = ["/"]
    for i in range(n):
        raw = bytes(rng.randrange(0x21, 0x100) for _ in range(rng.choice([1, 5, 20, 200, 2000])))
        enc = "".join(chr(b) if b < 0x80 and (chr(b).isalnum() or chr(b) in "-._~") else "%%%02X" % b for b in raw)
        out.append("/k%d/%s%s" % (i, enc, "?q=%d&x=%s" % (i, enc[:30]) if i % 3 == 0 else ""))
    return out


def header_keys(rng, n):
    """X-Key values: raw bytes >= 0x80, long ones; none starting or ending with a space, which
    nginx trims."""
    out = []
    for i in range(n):
        size = rng.choice([1, 8, 64, 1000])
        out.append(bytes(rng.randrange(0x21, 0x100) for _ in range(size)) + b"-%d" % i)
    return out


def through(port, keys, header):
    """The backend nginx sent each key to, over one keep-alive connection."""
    conn, got = http.client.HTTPConnection("127.0.0.1", port, timeout=10), []
    for k in keys:
        if header:
            conn.putrequest("GET", "/h", skip_accept_encoding=True)
            if k:
                conn.putheader("X-Key", k)
            conn.endheaders()
        else:
            conn.request("GET", k)
        r = conn.getresponse()
        got.append(r.read().decode())
        if r.status != 200:
            raise RuntimeError("nginx answered %d for %r" % (r.status, k))
    conn.close()
    return got


def lookup(cli, topo_path, keys):
    """ringkeeper lookup of each key (bytes), one a line: the owners."""
    out = subprocess.run([cli, "lookup", "--topology", topo_path], input=b"".join(k + b"\n" for k in keys),
                         capture_output=True, timeout=120, check=True).stdout
    return [line.rsplit(b"\t", 1)[1].decode() for line in out.split(b"\n")[:-1]]


def empty_key_spread(port, name):
    """How many backends 16 requests with an empty X-Key reached: the balancers take it round-robin,
    so fewer than 2 is a failure, which is printed."""
    spread = set(through(port, [b""] * 16, True))
    if len(spread) < 2:
        print("  %s: the empty key always went to %s, not round-robin" % (name, spread))
    return len(spread)


def stop(proc, tmp):
    """Stops the balancer (killed if it does not stop in 10 s) and removes its directory."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def round_trip(cli, tmp, lb, servers, before=None):
    """`ringkeeper import --nginx` of the balancer's own configuration (it must be the pool), then
    `export --format nginx` of that topology: the upstream nginx is run with; or, with the pool
    `before` the change, `export --into` the operator's upstream of it. The topology's path and
    the configuration's."""
    conf = os.path.join(tmp, "given.conf")
    with open(conf, "w") as f:
        f.write(config(tmp, lb, servers))
    out = subprocess.run([cli, "import", "--nginx", conf, "--upstream", "by_uri"], capture_output=True, timeout=60, check=True)
    topo = json.loads(out.stdout)
    want = [{"id": a, "addr": a, "weight": w} for a, w in servers]
    if topo != {"scheme": "nginx", "hash": "crc32a", "nodes": want, "request_key": "$request_uri"}:
        raise RuntimeError("import --nginx gave %s" % out.stdout.decode()[:300])
    topo_path = os.path.join(tmp, "topology.json")
    with open(topo_path, "wb") as f:
        f.write(out.stdout)
    conf = os.path.join(tmp, "nginx.conf")
    if before:
        with open(conf, "w") as f:
            f.write(config(tmp, lb, servers, by_uri=operator_upstream("by_uri", "$request_uri", before)))
        rewrite_into(cli, conf, "by_uri", topo_path, before, servers)
        return topo_path, conf
    block = subprocess.run([cli, "export", "--format", "nginx", "--upstream", "by_uri", "--file", topo_path],
                           capture_output=True, timeout=60, check=True).stdout.decode()
    with open(conf, "w") as f:
        f.write(config(tmp, lb, servers, by_uri=block))
    return topo_path, conf


def run_case(cli, name, servers, before, rng, nkeys):
    tmp = tempfile.mkdtemp(prefix="rk-nginx-")
    lb = free_ports(2)
    topo_path, conf = round_trip(cli, tmp, lb, servers, before)
    proc = subprocess.Popen([NGINX, "-p", tmp, "-c", conf], stderr=open(os.path.join(tmp, "stderr"), "w"))
    try:
        for p in lb:
            wait_listening(p, proc, "nginx")
        bad = 0
        for keys, header in ((uri_keys(rng, nkeys), False), (header_keys(rng, nkeys), True)):
            want = lookup(cli, topo_path, [k.encode() if not header else k for k in keys])
            got = through(lb[1] if header else lb[0], keys, header)
            miss = [(k, g, w) for k, g, w in zip(keys, got, want) if g != w]
            bad += len(miss)
            for k, g, w in miss[:3]:
                print("  %s: key %r went to %s, ringkeeper says %s" % (name, k[:60], g, w))
        spread = empty_key_spread(lb[1], name)
        bad += spread < 2
        print("%s %s%s: %d servers, %d keys, %d mismatches; the empty key round-robin over %d" % (
            "ok" if not bad else "FAIL", name, " (export --into)" if before else "", len(servers),
            2 * nkeys + 1, bad, spread))
        return bad == 0
    finally:
        stop(proc, tmp)


def source_split(server):
    """nginx's split of a server's address (ngx_http_upstream_init_chash), as its source reads."""
    if server[:5].lower() == b"unix:":
        return server[5:], b""
    for j in range(len(server)):
        c = server[len(server) - j - 1:len(server) - j]
        if c == b":":
            return server[:len(server) - j - 1], server[len(server) - j:]
        if not c.isdigit():
            break
    return server, b""


def source_case(cli):
    """Addresses no loopback test can serve (a unix path, IPv6, no port, odd colons), routed by the
    nginx source's rules in Python and by ringkeeper: the split of host and port must agree."""
    ids = [b"unix:/run/cache.sock", b"[::1]:8080", b"cache-host", b"cache-host:", b"a:b:12", b":80", b"x:1a"]
    points = []
    for w, server in enumerate(ids, 1):
        host, port = source_split(server)
        prev = 0
        for _ in range(160 * w):
            prev = zlib.crc32(host + b"\0" + port + prev.to_bytes(4, "little"))
            points.append((prev, server.decode()))
    points.sort(key=lambda p: p[0])
    keys = [b"/k%d" % i for i in range(2000)]
    want = [points[bisect.bisect_left([p[0] for p in points], zlib.crc32(k)) % len(points)][1] for k in keys]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"scheme": "nginx", "hash": "crc32a",
                   "nodes": [{"id": i.decode(), "addr": "10.0.0.%d:1" % n, "weight": n} for n, i in enumerate(ids, 1)]}, f)
    try:
        got = lookup(cli, f.name, keys)
    finally:
        os.unlink(f.name)
    bad = sum(g != w for g, w in zip(got, want))
    print("%s addresses split as nginx's source does: %d ids, %d keys, %d mismatches" % ("ok" if not bad else "FAIL", len(ids), len(keys), bad))
    return bad == 0


def refusals(cli):
    """What the ring cannot represent is refused on import, each with its reason and line."""
    inner = "http {\n  upstream u {\n    hash $request_uri consistent;\n    %s\n    server 10.0.0.1:80;\n  }\n}\n"
    cases = [(inner % "server 10.0.0.4:80 backup;", "line 4: a backup server has no point"),
             (inner % "server 10.0.0.4:80 down;", "line 4: a down server keeps its points"),
             (inner % "server 10.0.0.4:80 resolve;", "line 4: a server re-resolved at run time"),
             (inner % "server cache service=http;", "line 4: a service's servers come from DNS SRV"),
             (inner % "server 10.0.0.4:80 weight=0;", "line 4: weight must be a whole number 1..1000, got 0"),
             (inner % "random;", "line 4: random is not a consistent-hash ring"),
             (inner % "least_conn;", "line 4: least_conn is not a consistent-hash ring"),
             ("upstream u { hash $request_uri; server 10.0.0.1:80; }\n", "hash without consistent maps keys by modulo"),
             ("upstream u { server 10.0.0.1:80; }\n", "has no hash ... consistent"),
             ("upstream v { server 10.0.0.1:80; }\n", "no upstream named u")]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="rk-nginx-") as tmp:
        conf = os.path.join(tmp, "bad.conf")
        for text, want in cases:
            with open(conf, "w") as f:
                f.write(text)
            out = subprocess.run([cli, "import", "--nginx", conf, "--upstream", "u"], capture_output=True, timeout=60)
            if out.returncode != 2 or want not in out.stderr.decode():
                bad += 1
                print("  refusal of %r: exit %d, %s" % (text[:60], out.returncode, out.stderr.decode().strip()))
    print("%s import refusals: %d cases" % ("ok" if not bad else "FAIL", len(cases)))
    return bad == 0


def main():
    if not NGINX:
        print("SKIPPED: nginx is not installed (deploy/install-deps.sh installs it)")
        return 77
    cli = sys.argv[1]
    nkeys = int(sys.argv[sys.argv.index("--keys") + 1]) if "--keys" in sys.argv else 2000
    rng = random.Random(24)
    ports = free_ports(12)
    base = [("127.0.0.1:%d" % p, w) for p, w in zip(ports[:8], [1, 2, 1, 3, 1, 1, 5, 1])]
    cases = [("eight servers, weights 1..5", base, None),
             ("a server added", base + [("127.0.0.1:%d" % ports[8], 2)], base),
             ("a server removed", base[:3] + base[4:], base),
             ("weights changed", [(a, w + 1 if i % 2 else w) for i, (a, w) in enumerate(base)], base),
             ("twelve servers", [("127.0.0.1:%d" % p, 1) for p in ports], None)]
    passed = sum(run_case(cli, name, servers, before, rng, nkeys) for name, servers, before in cases)
    passed += source_case(cli) + refusals(cli)
    print("%d passed, %d failed" % (passed, len(cases) + 2 - passed))
    return 0 if passed == len(cases) + 2 else 1


if __name__ == "__main__":
    sys.exit(main())
