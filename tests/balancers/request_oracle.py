#!/usr/bin/env python3
"""request_oracle.py — the real nginx and HAProxy as the oracles of `ringkeeper lookup --requests`
(docs/LOADBALANCERS.md, "Requests").

For each way a balancer takes its key from a request (nginx: `hash EXPR consistent` with
$request_uri, $uri, $arg_, $http_ of repeated and joined headers, $cookie_, a literal mix; HAProxy:
`balance uri` and its options, `hdr(NAME)` with several values and names in either case), one balancer
upstream or backend is written, `ringkeeper import` reads its topology (with its request_key), random
requests go through the real program, and the backend that answered each is compared with
`ringkeeper lookup --requests` of the same requests. Targets carry what changes a key: dot segments,
merged slashes, escaped dots and slashes, queries with names in either case. A target nginx answers
400 must be refused by the lookup too (the first 12 of each case are tried). Requests whose key is empty (spread round robin) are counted,
not compared. Every process started here is stopped here; every wait is bounded.

usage: request_oracle.py RINGKEEPER_CLI [--requests N]
prints one line per case and 'N passed, N failed'; exits non-zero on any mismatch, 77 when nginx or
haproxy is missing.
"""
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from haproxy_oracle import HAPROXY, HEAD  # noqa: E402
from nginx_oracle import NGINX, free_ports, stop, wait_listening  # noqa: E402

NGINX_KEYS = ["$request_uri", "$uri", "$arg_id", "$http_x_key", "$http_x_forwarded_for", "$cookie_sid",
              "$http_cookie", "k-$arg_a-${uri}"]
HAPROXY_KEYS = [("uri", "sdbm"), ("uri whole", "djb2 avalanche"), ("uri depth 2", "wt6"),
                ("uri len 12", "crc32"), ("uri whole len 20 depth 3", "sdbm avalanche"),
                ("hdr(X-Key)", "djb2"), ("hdr(x-key)", "crc32 avalanche")]
SEGMENTS = ["a", "b", "c", "img", ".", "..", "", "%2E", "%2e%2E", "%2F", "%41", "caf%C3%A9", "x+y", "~u",
            "%3F", "a.b", "..."]


def target(rng, strict):
    """A request target: segments that dot-segment rules and escapes change, and a query. `strict`
    keeps to what HAProxy accepts without `accept-invalid-http-request`."""
    segs = [rng.choice(SEGMENTS) for _ in range(rng.randrange(1, 7))]
    if strict:
        segs = [s for s in segs if s not in ("..", "%2e%2E")] or ["a"]
    query = rng.choice(["", "?id=%d" % rng.randrange(1000), "?ID=%d&id=7" % rng.randrange(99),
                        "?a=%d&b=2&id=%d" % (rng.randrange(50), rng.randrange(50)), "?xid=1&id=%d" % rng.randrange(9),
                        "?a=%d" % rng.randrange(500)])
    return "/" + "/".join(segs) + query


def headers(rng):
    """Header fields [(name, value)]: X-Key once, twice, with several values; X-Forwarded-For and
    Cookie repeated."""
    out = []
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        vals = ["k%d" % rng.randrange(10 ** 6) for _ in range(rng.choice([1, 1, 2]))]
        out.append(("X-Key" if rng.random() < 0.8 else "x-key", ", ".join(vals)))
    for _ in range(rng.choice([0, 1, 2])):
        out.append(("X-Forwarded-For", "10.0.%d.%d" % (rng.randrange(256), rng.randrange(256))))
    for _ in range(rng.choice([0, 1, 2])):
        out.append(("Cookie", rng.choice(["sid=%d" % rng.randrange(10 ** 5), "a=1; sid=%d" % rng.randrange(999),
                                          "SID = %d ; b=2" % rng.randrange(99), "x=%d" % rng.randrange(9)])))
    return out


def send(port, requests):
    """The backend that answered each request (or its status when not 200), one connection each
    (a 400 closes it)."""
    got = []
    for t, hs in requests:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.putrequest("GET", t, skip_accept_encoding=True)
        for name, value in hs:
            conn.putheader(name, value)
        conn.endheaders()
        r = conn.getresponse()
        body = r.read().decode()
        got.append(body if r.status == 200 else str(r.status))
        conn.close()
    return got


def lookup(cli, topo, requests):
    """`ringkeeper lookup --requests` of each request: the owner, "-" for round robin."""
    lines = "".join(t + "".join("\t%s: %s" % h for h in hs) + "\n" for t, hs in requests)
    out = subprocess.run([cli, "lookup", "--requests", "--topology", topo], input=lines.encode(),
                         capture_output=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError("lookup --requests: %s" % out.stderr.decode()[:300])
    return [line.rsplit("\t", 1)[1] for line in out.stdout.decode().split("\n")[:-1]]


def refused(cli, topo, request):
    """Non-zero when `lookup --requests` refuses the request (nginx answered it 400)."""
    t, hs = request
    line = t + "".join("\t%s: %s" % h for h in hs) + "\n"
    out = subprocess.run([cli, "lookup", "--requests", "--topology", topo], input=line.encode(),
                         capture_output=True, timeout=60)
    return out.returncode == 2 and b"400" in out.stderr


def imported(cli, tmp, kind, conf, name, want_key):
    """The topology `ringkeeper import` reads from section `name`, checked to carry want_key."""
    out = subprocess.run([cli, "import", "--" + kind, conf, "--upstream" if kind == "nginx" else "--backend", name],
                         capture_output=True, timeout=60, check=True)
    if json.loads(out.stdout).get("request_key") != want_key:
        raise RuntimeError("import of %s: request_key is not %r: %s" % (name, want_key, out.stdout[:300]))
    path = os.path.join(tmp, name + ".json")
    with open(path, "wb") as f:
        f.write(out.stdout)
    return path


def compare(cli, name, topo, requests, got):
    """Mismatches of one case, printed; the requests answered 400 each checked to be refused."""
    ok = [(r, g) for r, g in zip(requests, got) if g != "400"]
    want = lookup(cli, topo, [r for r, _ in ok])
    miss = [(r, g, w) for (r, g), w in zip(ok, want) if w != "-" and g != w]
    answered400 = [r for r, g in zip(requests, got) if g == "400"]
    bad400 = [r for r in answered400[:12] if not refused(cli, topo, r)]  # a process each
    for r, g, w in miss[:3]:
        print("  %s: %r went to %s, ringkeeper says %s" % (name, r, g, w))
    for r in bad400[:3]:
        print("  %s: %r: the balancer answered 400, ringkeeper routed it" % (name, r))
    rr = sum(w == "-" for w in want)
    print("%s %s: %d requests, %d answered 400, %d round robin, %d mismatches" % (
        "ok" if not miss and not bad400 else "FAIL", name, len(requests), len(requests) - len(ok), rr,
        len(miss) + len(bad400)))
    return not miss and not bad400


def servers_of(ports):
    return [("127.0.0.1:%d" % p, w) for p, w in zip(ports, [1, 2, 1, 3, 1])]


def nginx_cases(cli, rng, n):
    tmp = tempfile.mkdtemp(prefix="rk-requests-nginx-")
    ports = free_ports(len(NGINX_KEYS) + 5)
    servers, lbs = servers_of(ports[len(NGINX_KEYS):]), ports[:len(NGINX_KEYS)]
    temp = "".join("    %s_temp_path %s/%s;\n" % (k, tmp, k) for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    ups = "".join("    upstream u%d {\n        hash %s consistent;\n%s    }\n"
                  "    server { listen 127.0.0.1:%d; location / { proxy_pass http://u%d; } }\n" % (
                      i, key, "".join("        server %s weight=%d;\n" % s for s in servers), lbs[i], i)
                  for i, key in enumerate(NGINX_KEYS))
    ends = "".join("    server { listen %s; location / { return 200 \"%s\"; } }\n" % (a, a) for a, _ in servers)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("daemon off;\nmaster_process off;\npid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\n"
                "http {\n    access_log off;\n%s%s%s}\n" % (tmp, tmp, temp, ups, ends))
    proc = subprocess.Popen([NGINX, "-p", tmp, "-c", conf], stderr=open(os.path.join(tmp, "stderr"), "w"))
    try:
        for p in lbs:
            wait_listening(p, proc, "nginx")
        passed = 0
        for i, key in enumerate(NGINX_KEYS):
            topo = imported(cli, tmp, "nginx", conf, "u%d" % i, key)
            requests = [(target(rng, False), headers(rng)) for _ in range(n)]
            passed += compare(cli, "nginx hash %s" % key, topo, requests, send(lbs[i], requests))
        return passed
    finally:
        stop(proc, tmp)


def haproxy_cases(cli, rng, n):
    tmp = tempfile.mkdtemp(prefix="rk-requests-haproxy-")
    ports = free_ports(len(HAPROXY_KEYS) + 5)
    servers, lbs = servers_of(ports[len(HAPROXY_KEYS):]), ports[:len(HAPROXY_KEYS)]
    ends = "".join("frontend be%d\n    bind %s\n    http-request return status 200 content-type "
                   "text/plain string \"%s\"\n" % (i, a, a) for i, (a, _) in enumerate(servers))
    backs = "".join("frontend lb%d\n    bind 127.0.0.1:%d\n    default_backend b%d\n"
                    "backend b%d\n    balance %s\n    hash-type consistent %s\n%s" % (
                        i, lbs[i], i, i, key, fn, "".join("    server s%d %s weight %d id %d\n" % (j, a, w, j + 1)
                                                          for j, (a, w) in enumerate(servers)))
                    for i, (key, fn) in enumerate(HAPROXY_KEYS))
    conf = os.path.join(tmp, "haproxy.cfg")
    with open(conf, "w") as f:
        f.write(HEAD + ends + backs)
    proc = subprocess.Popen([HAPROXY, "-f", conf, "-db"], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "stderr"), "w"))
    try:
        for p in lbs:
            wait_listening(p, proc, "haproxy")
        passed = 0
        for i, (key, _) in enumerate(HAPROXY_KEYS):
            topo = imported(cli, tmp, "haproxy", conf, "b%d" % i, key)
            addr = {n["id"]: n["addr"] for n in json.load(open(topo))["nodes"]}
            requests = [(target(rng, True), headers(rng)) for _ in range(n)]
            got = send(lbs[i], requests)
            inv = {a: i for i, a in addr.items()}  # the answers are addresses, lookups ids
            passed += compare(cli, "haproxy balance %s" % key, topo, requests, [inv.get(g, g) for g in got])
        return passed
    finally:
        stop(proc, tmp)


def main():
    if not NGINX or not HAPROXY:
        print("SKIPPED: nginx or haproxy is not installed (deploy/install-deps.sh installs them)")
        return 77
    cli = sys.argv[1]
    n = int(sys.argv[sys.argv.index("--requests") + 1]) if "--requests" in sys.argv else 400
    rng = random.Random(53)
    passed = nginx_cases(cli, rng, n) + haproxy_cases(cli, rng, n)
    total = len(NGINX_KEYS) + len(HAPROXY_KEYS)
    print("%d passed, %d failed" % (passed, total - passed))
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
