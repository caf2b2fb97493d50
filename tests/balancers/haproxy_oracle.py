#!/usr/bin/env python3
"""haproxy_oracle.py — the real HAProxy as the oracle of the haproxy scheme (docs/LOADBALANCERS.md).

For each backend case: start one HAProxy on free loopback ports that is both the balancer and the
backends (each a frontend that answers with its own address). The balancer has two backends of
the same servers: `balance uri` from the case's own configuration (ids pinned or given by place,
as written) and `balance hdr(X-Key)` from `ringkeeper export --format haproxy` of what
`ringkeeper import --haproxy` read from that configuration; or, where a case names the backend
before it, the operator's own backend over that one (servers named by the operator, ids by their
place, check and inter, a comment, retries) rewritten by `ringkeeper export --into`, HAProxy
running on the rewritten file. Every key goes through the balancer
and the backend that answered is compared with `ringkeeper lookup --topology` of the imported
topology. Keys: paths with percent-encoded bytes >= 0x80 and queries (HAProxy hashes the path
before '?'), raw header bytes >= 0x80 and long keys. The empty header and a header of several
values are not keys as they stand: HAProxy balances the empty one round-robin and hashes the
first of several (the program, not its source, is the oracle); the test checks both. Every
process started here is stopped here; every wait is bounded.

usage: haproxy_oracle.py RINGKEEPER_CLI [--keys N]
prints one line per case and 'N passed, N failed'; exits non-zero on any mismatch, 77 without
haproxy.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx_oracle import (empty_key_spread, free_ports, header_keys, lookup, stop, through,  # noqa: E402
                          uri_keys, wait_listening)

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
HEAD = ("global\n    maxconn 500\ndefaults\n    mode http\n    timeout connect 5s\n"
        "    timeout client 30s\n    timeout server 30s\n")


def backend(name, balance, function, servers):
    """A backend over `servers` [(name, addr, weight, id or None)]."""
    hash_type = "" if function == "defaults" else "    hash-type consistent %s\n" % function
    return "backend %s\n    balance %s\n%s%s" % (name, balance, hash_type, "".join(
        "    server %s %s weight %d%s\n" % (n, a, w, " id %d" % i if i else "") for n, a, w, i in servers))


def operator_backend(name, balance, function, servers):
    """A backend over `servers` [(name, addr, weight, id or None)] as an operator writes one: the
    servers named cache-N, numbered by their place (no id), with checks, a comment and retries."""
    hash_type = "" if function == "defaults" else "    hash-type consistent %s\n" % function
    return "backend %s\n    balance %s\n%s    # the caches\n%s    retries 2\n" % (
        name, balance, hash_type, "".join("    server cache-%d %s weight %d check inter 2s\n" % (i, a, w)
                                           for i, (_, a, w, _) in enumerate(servers, 1)))


def rewrite_into(cli, conf, topo_path, before, topo):
    """`ringkeeper export --into conf` of the topology as the by_header backend, checked: the
    operator's lines kept, each server kept by id with its name and options, the topology's
    address, and its id pinned."""
    out = subprocess.run([cli, "export", "--format", "haproxy", "--backend", "by_header", "--into", conf,
                          "--file", topo_path], capture_output=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("export --into: exit %d, %s" % (out.returncode, out.stderr.decode()))
    with open(conf) as f:
        text = f.read()
    lines = text.splitlines()
    addr = {n["id"]: n["addr"] for n in topo["nodes"]}
    kept = [(i, addr[str(i)]) for i in range(1, len(before) + 1) if str(i) in addr]
    if ("    # the caches" not in lines or "    retries 2" not in lines or
            not all(any(l.startswith("    server cache-%d %s weight " % (i, a)) and " check inter 2s" in l and
                        l.endswith(" id %d" % i) for l in lines) for i, a in kept)):
        raise RuntimeError("export --into did not keep the operator's lines:\n%s" % text)


def config(lb, servers, function, by_header=None):
    """The two balancers on lb[0] (by_uri, as the case writes it) and lb[1] (by_header: the block
    given, else the same servers), and a frontend per server that answers with its address. The
    function "defaults" writes a bare `hash-type consistent` in the defaults section, and none in
    the backend."""
    ends = "".join("frontend be_%s\n    bind %s\n    http-request return status 200 content-type "
                   "text/plain string \"%s\"\n" % (n.replace(" ", "_"), a, a) for n, a, _, _ in servers)
    head = HEAD + ("    hash-type consistent\n" if function == "defaults" else "")
    return (head + ends +
            "frontend lb_uri\n    bind 127.0.0.1:%d\n    default_backend by_uri\n" % lb[0] +
            "frontend lb_header\n    bind 127.0.0.1:%d\n    default_backend by_header\n" % lb[1] +
            backend("by_uri", "uri", function, servers) +
            (by_header or backend("by_header", "hdr(X-Key)", function, servers)))


def round_trip(cli, tmp, lb, servers, function, before=None):
    """`ringkeeper import --haproxy` of the case's configuration, then `export --format haproxy`
    of that topology as the by_header backend, or with the servers `before` the change, `export
    --into` the operator's backend of them. The topology's path, its node addresses by id, and the
    configuration HAProxy runs."""
    conf = os.path.join(tmp, "given.cfg")
    with open(conf, "w") as f:
        f.write(config(lb, servers, function))
    out = subprocess.run([cli, "import", "--haproxy", conf, "--backend", "by_uri"], capture_output=True, timeout=60, check=True)
    topo = json.loads(out.stdout)
    bare = function in ("", "defaults")  # HAProxy's default: sdbm with avalanche
    if topo["scheme"] != "haproxy" or topo["hash"] != ("sdbm_avalanche" if bare else function.replace(" avalanche", "_avalanche")):
        raise RuntimeError("import --haproxy gave %s" % out.stdout.decode()[:300])
    if any(i is None for _, _, _, i in servers) != (b"servers without an id" in out.stderr):
        raise RuntimeError("import --haproxy's note: %r" % out.stderr)
    if topo.get("request_key") != "uri":
        raise RuntimeError("import --haproxy: request_key %r, not uri" % topo.get("request_key"))
    topo_path = os.path.join(tmp, "topology.json")
    with open(topo_path, "wb") as f:
        f.write(out.stdout)
    by_header = os.path.join(tmp, "by_header.json")  # the same ring, its keys taken from X-Key
    with open(by_header, "w") as f:
        json.dump(dict(topo, request_key="hdr(X-Key)"), f)
    conf = os.path.join(tmp, "haproxy.cfg")
    if before:
        with open(conf, "w") as f:
            f.write(config(lb, servers, function, by_header=operator_backend("by_header", "hdr(X-Key)", function, before)))
        rewrite_into(cli, conf, by_header, before, topo)
    else:
        block = subprocess.run([cli, "export", "--format", "haproxy", "--backend", "by_header", "--file", by_header],
                               capture_output=True, timeout=60, check=True).stdout.decode()
        with open(conf, "w") as f:
            f.write(config(lb, servers, function, by_header=block))
    return topo_path, {n["id"]: n["addr"] for n in topo["nodes"]}, conf


def compare(name, keys, hashed, got, want_ids, addr):
    """Mismatches between where HAProxy sent each key and where ringkeeper puts what it hashes."""
    miss = [(k, g, addr[w]) for k, g, w in zip(keys, got, want_ids) if g != addr[w]]
    for k, g, w in miss[:3]:
        print("  %s: key %r went to %s, ringkeeper says %s" % (name, k[:60], g, w))
    return len(miss)


def run_case(cli, name, servers, function, before, rng, nkeys):
    tmp = tempfile.mkdtemp(prefix="rk-haproxy-")
    lb = free_ports(2)
    topo_path, addr, conf = round_trip(cli, tmp, lb, servers, function, before)
    proc = subprocess.Popen([HAPROXY, "-f", conf, "-db"], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "stderr"), "w"))
    try:
        for p in lb:
            wait_listening(p, proc, "haproxy")
        uris, heads = uri_keys(rng, nkeys), header_keys(rng, nkeys)
        heads = [k.replace(b",", b";") for k in heads]  # one value each: a comma separates values
        paths = [u.split("?")[0].encode() for u in uris]
        bad = compare(name, uris, paths, through(lb[0], uris, False), lookup(cli, topo_path, paths), addr)
        bad += compare(name, heads, heads, through(lb[1], heads, True), lookup(cli, topo_path, heads), addr)
        several = [b"first-%d, second-%d" % (i, i) for i in range(50)]
        firsts = [k.split(b",")[0] for k in several]
        bad += compare(name, several, firsts, through(lb[1], several, True), lookup(cli, topo_path, firsts), addr)
        spread = empty_key_spread(lb[1], name)
        bad += spread < 2
        print("%s %s%s: %d servers, %s, %d keys, %d mismatches; the empty key round-robin over %d" % (
            "ok" if not bad else "FAIL", name, " (export --into)" if before else "", len(servers), function,
            2 * nkeys + 51, bad, spread))
        return bad == 0
    finally:
        stop(proc, tmp)


def refusals(cli):
    """What the ring cannot represent is refused on import, each with its reason and line."""
    def conf(lines, settings="balance uri\n    hash-type consistent"):
        return HEAD + "backend b\n    %s\n    server a 10.0.0.1:80 id 1\n    %s\n" % (settings, lines)
    cases = [(conf("server x 10.0.0.4:80 backup"), "line 12: server x is a backup"),
             (conf("server x 10.0.0.4:80 disabled"), "line 12: server x is disabled"),
             (conf("server-template web 3 cache.example:80"), "line 12: server-template makes servers"),
             (conf("server x 10.0.0.4:80 id 1048576"), "line 12: id must be 1..1048575"),
             (conf("server x 10.0.0.4:80 weight 257"), "line 12: weight must be 0..256"),
             (conf("server x 10.0.0.4:80 hash-key addr"), "hash-key addr places the points by address"),
             (conf("server x 10.0.0.4:80 id 1"), "two servers have the id 1"),
             (conf("", "balance random\n    hash-type consistent"), "line 9: balance random is not"),
             (conf("", "balance roundrobin"), "balance roundrobin is not a consistent-hash ring"),
             (conf("", "balance uri\n    hash-type map-based"), "hash-type map-based (the default)"),
             (conf("", "balance uri"), "hash-type map-based (the default)"),
             (conf("", "balance uri\n    hash-type consistent none"), "hash function none"),
             (conf("hash-balance-factor 150"), "hash-balance-factor moves keys"),
             (conf("", "hash-type consistent"), "backend b has no balance"),
             (HEAD + "backend c\n    balance uri\n    hash-type consistent\n", "no backend or listen section named b")]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="rk-haproxy-") as tmp:
        path = os.path.join(tmp, "bad.cfg")
        for text, want in cases:
            with open(path, "w") as f:
                f.write(text)
            out = subprocess.run([cli, "import", "--haproxy", path, "--backend", "b"], capture_output=True, timeout=60)
            if out.returncode != 2 or want not in out.stderr.decode():
                bad += 1
                print("  refusal of %r: exit %d, %s" % (want, out.returncode, out.stderr.decode().strip()))
    print("%s import refusals: %d cases" % ("ok" if not bad else "FAIL", len(cases)))
    return bad == 0


def main():
    if not HAPROXY:
        print("SKIPPED: haproxy is not installed (deploy/install-deps.sh installs it)")
        return 77
    cli = sys.argv[1]
    nkeys = int(sys.argv[sys.argv.index("--keys") + 1]) if "--keys" in sys.argv else 2000
    rng = random.Random(25)
    ports = free_ports(12)
    base = [("s%d" % i, "127.0.0.1:%d" % p, w, i) for i, (p, w) in enumerate(zip(ports[:8], [1, 2, 1, 3, 1, 1, 5, 1]), 1)]
    moved = [(n, a, w, 42 if i == 3 else i) for n, a, w, i in base]
    by_place = [(n, a, w, i if i in (2, 5) else None) for n, a, w, i in base]
    cases = [("eight servers, weights 1..5, ids pinned", base, "sdbm", None),
             ("a server added", base + [("s9", "127.0.0.1:%d" % ports[8], 2, 9)], "djb2", base),
             ("a server removed", base[:3] + base[4:], "wt6", base),
             ("a pinned id changed (3 -> 42)", moved, "crc32", base),
             ("ids given by place around pinned ones", by_place, "sdbm avalanche", None),
             ("twelve servers, one of weight 256", [("s%d" % i, "127.0.0.1:%d" % p, 256 if i == 1 else 1, i * 1000)
                                                     for i, p in enumerate(ports, 1)], "crc32 avalanche", None),
             ("a bare hash-type consistent (sdbm, avalanche)", base, "", None),
             # before it, the third server was not there: ids 3..7 by place get other addresses
             ("a bare hash-type consistent in defaults", by_place, "defaults", base[:2] + base[3:])]
    passed = sum(run_case(cli, name, servers, fn, before, rng, nkeys) for name, servers, fn, before in cases)
    passed += refusals(cli)
    print("%d passed, %d failed" % (passed, len(cases) + 1 - passed))
    return 0 if passed == len(cases) + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
