#!/usr/bin/env python3
"""test_agent.py — `ringkeeper agent` against the real proxies (docs/AGENT.md): two nginx, two
HAProxy and two nutcracker (over real memcached), each with an agent, one ringkeeperd with a client
token, all on loopback.

1. The agents start and cut their proxies over to v1; a publish/activate of v2 reaches every proxy:
   `GET .../clients` counts every agent holding it, and requests through each proxy route where
   `ringkeeper lookup` says for v2 (nutcracker: each key set through it is on the memcached lookup
   names); an agent's /metrics says so.
2. A failed validation: an unrelated syntax error planted in the first proxy file of each kind; v3
   is refused by its agent with the proxy's reason in `GET .../clients`, the file is the one before
   (with its error), and the proxy still routes by v2; the other agents hold v3.
3. A failed reload: the second proxy's reload command fails; v4 is refused with the reason, the
   proxy still routes by v3, the file is restored; the first ones (error removed) hold v4.
4. A reload the proxy does not take: a listener on a port in use planted in the first nginx and
   HAProxy files (their checks pass); v5 is refused by the built-in confirm (no new nginx worker,
   HAProxy's old worker still current), the file restored, the proxy still routing by v4.
5. SIGKILL: every agent is killed at a random moment of the cutover to v6; each file is then one
   its proxy accepts, and the agents, started again, bring every proxy to v6.
6. Refusals to start: a missing upstream, and a pool whose hash is not the cluster's, exit 2 with
   one line; SIGTERM stops every agent with exit 0.

usage: test_agent.py RINGKEEPERD RINGKEEPER_CLI; exits non-zero on a failure, 77 when nginx,
haproxy, nutcracker or memcached is missing.
"""
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxies as px  # noqa: E402
from nginx_oracle import free_ports, through  # noqa: E402
from nutcracker_oracle import Conn  # noqa: E402

TOKEN, CLIENT_TOKEN = "ops-token-0123456789abcdef", "proxy-token-0123456789abcdef"
KINDS = ("nginx", "haproxy", "nutcracker")
FAILED = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("ok" if ok else "FAIL", name, "" if ok else ": " + str(detail)[:2000]))
    if not ok:
        FAILED.append(name)


def wait_for(what, pred, timeout=30):
    """Polls pred until it is true (its value) or timeout seconds pass (None)."""
    end = time.time() + timeout
    while time.time() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    print("  (waited %d s for %s)" % (timeout, what))
    return None


class Server:
    def __init__(self, rkd, tmp, fleet):
        self.port = free_ports(1)[0]
        self.url = "http://127.0.0.1:%d" % self.port
        tokens = os.path.join(tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("ops:%s publish\nproxies:%s client\n" % (TOKEN, CLIENT_TOKEN))
        os.chmod(tokens, 0o600)
        fleet.popen([rkd, "--listen", "127.0.0.1:%d" % self.port, "--db", os.path.join(tmp, "rk.db"),
                     "--token-file", tokens], "ringkeeperd.log")
        if not wait_for("ringkeeperd", lambda: self.try_call("GET", "/healthz")):
            raise RuntimeError("ringkeeperd did not start")

    def try_call(self, method, path):
        try:
            return self.call(method, path)[0] == 200
        except OSError:
            return False

    def call(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + TOKEN})
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, json.loads(data) if data else None

    def publish(self, cluster, topo):
        status, doc = self.call("POST", "/v1/clusters/%s/versions?activate=true" % cluster, topo)
        if status != 201:
            raise RuntimeError("publish to %s: %d %s" % (cluster, status, doc))
        return doc["version"]

    def clients(self, cluster):
        return {c["id"]: c for c in self.call("GET", "/v1/clusters/%s/clients" % cluster)[1]["clients"]}


def cluster_of(kind):
    return "web-" + kind


def window(k):
    """The places of version k's servers among the backends: a window that slides by one (the
    first backend is v1's only)."""
    return list(range(k - 1, k + 3))


class Proxy:
    """One proxy, its file and its agent."""

    def __init__(self, kind, n, fleet, ports):
        self.kind, self.n, self.name, self.fleet = kind, n, "%s-%d" % (kind, n), fleet
        self.file = os.path.join(fleet.tmp, self.name + (".yml" if kind == "nutcracker" else ".conf"))
        self.marker = os.path.join(fleet.tmp, self.name + ".fail-reload")
        self.lb, self.stats, self.metrics = free_ports(3)
        self.agent = None
        self.options = []
        first = [ports[i] for i in window(1)]
        if kind == "nginx":
            self.write(px.nginx_conf(fleet.tmp, self.name, self.lb, ["127.0.0.1:%d" % p for p in first]))
            fleet.nginx(self.name, self.file, self.lb)
            pid = os.path.join(fleet.tmp, self.name + ".pid")
            self.options = ["--upstream", "rk", "--pid-file", pid]
            if n == 2:  # a reload that fails while the marker exists
                self.options += ["--reload", "if [ -e %s ]; then echo 'reload refused: the marker of the test' >&2; "
                                 "exit 1; fi; kill -HUP $(cat %s)" % (self.marker, pid)]
        elif kind == "haproxy":
            self.write(px.haproxy_conf(self.lb, [(i + 1, "127.0.0.1:%d" % ports[i]) for i in window(1)]))
            sock = fleet.haproxy(self.name, self.file, self.lb)
            self.options = ["--backend", "rk", "--socket", sock]
            if n == 2:
                script = os.path.join(fleet.tmp, "ha_reload.py")
                with open(script, "w") as f:
                    f.write(px.HA_RELOAD)
                self.options += ["--reload", "/usr/bin/python3 %s %s %s" % (script, sock, self.marker)]
        else:
            self.write(px.nutcracker_conf(self.lb, ["127.0.0.1:%d" % p for p in first]))
            restart = fleet.nutcracker(self.name, self.file, self.lb, self.stats)
            self.options = ["--pool", "rk", "--stats", "127.0.0.1:%d" % self.stats, "--reload", restart]

    def write(self, text):
        with open(self.file, "w") as f:
            f.write(text)

    def read(self):
        with open(self.file) as f:
            return f.read()

    def start_agent(self, cli, url):
        argv = [cli, "agent", "--proxy", self.kind, "--file", self.file, "--server", url,
                "-c", cluster_of(self.kind), "--token", CLIENT_TOKEN, "--client-id", self.name,
                "--wait", "5", "--confirm-timeout", "10", "--metrics", "127.0.0.1:%d" % self.metrics]
        self.agent = self.fleet.popen(argv + self.options, "agent-%s.log" % self.name)

    def validate(self):
        """The file checked by the proxy itself: (exit code, output)."""
        argv = {"nginx": [px.NGINX, "-t", "-q", "-c", self.file],
                "haproxy": [px.HAPROXY, "-c", "-q", "-f", self.file],
                "nutcracker": ["nutcracker", "-t", "-c", self.file]}[self.kind]
        out = subprocess.run(argv, capture_output=True, timeout=30)
        return out.returncode, (out.stdout + out.stderr).decode(errors="replace")

    def metric(self, name):
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        for line in text.splitlines():
            if line.startswith(name + "{"):
                return int(line.rsplit(" ", 1)[1])
        return None


def lookup(cli, topo_path, keys):
    out = subprocess.run([cli, "lookup", "--topology", topo_path], input=b"".join(k + b"\n" for k in keys),
                         capture_output=True, timeout=60, check=True).stdout
    return [line.rsplit(b"\t", 1)[1].decode() for line in out.split(b"\n")[:-1]]


def routed(proxy, keys, mc_ports):
    """Where the proxy sent each key: the backend that answered, or the memcached that holds it."""
    if proxy.kind != "nutcracker":
        return through(proxy.lb, [k.decode() for k in keys], False)
    for p in mc_ports:
        c = Conn(p)
        c.s.sendall(b"flush_all\r\n")
        c.line()
        c.close()
    c = Conn(proxy.lb)
    c.set_many(keys)
    c.close()
    where = {}
    for p in mc_ports:
        c = Conn(p)
        for k in c.held(keys):
            where[k] = "127.0.0.1:%d" % p
        c.close()
    return [where.get(k, "(nowhere)") for k in keys]


def check_routes(t, proxy, version, keys):
    """Requests through the proxy go where `ringkeeper lookup` says for `version`."""
    want = lookup(t.cli, t.topo_path(proxy.kind, version), keys)
    if proxy.kind != "nutcracker":  # nginx and HAProxy name the backend by its address, lookup by id
        addr = {n["id"]: n["addr"] for n in t.topo[proxy.kind][version]["nodes"]}
        want = [addr[w] for w in want]
    got = routed(proxy, keys, t.mc)
    bad = [(k, g, w) for k, g, w in zip(keys, got, want) if g != w]
    check("%s routes %d keys by v%d" % (proxy.name, len(keys), version), not bad, bad[:3])


class Test:
    def __init__(self, rkd, cli, tmp):
        self.cli, self.tmp = cli, tmp
        self.fleet = px.Fleet(tmp)
        self.server = Server(rkd, tmp, self.fleet)
        self.be, self.mc = free_ports(9), free_ports(9)  # v6 uses the last
        self.fleet.backends(self.be)
        self.fleet.memcached(self.mc)
        self.proxies = [Proxy(kind, n, self.fleet, self.mc if kind == "nutcracker" else self.be)
                        for kind in KINDS for n in (1, 2)]
        self.topo = {kind: {} for kind in KINDS}
        self.base = {p.kind: self.imported(p) for p in self.proxies if p.n == 1}

    def imported(self, proxy):
        """The topology of the proxy's file (`ringkeeper import`): what version 1 is."""
        flag = {"nginx": ["--nginx", proxy.file, "--upstream", "rk"],
                "haproxy": ["--haproxy", proxy.file, "--backend", "rk"],
                "nutcracker": ["--nutcracker", proxy.file, "--pool", "rk"]}[proxy.kind]
        return json.loads(subprocess.run([self.cli, "import"] + flag, capture_output=True, timeout=60,
                                         check=True).stdout)

    def nodes(self, kind, k):
        ports = self.mc if kind == "nutcracker" else self.be
        return [{"id": str(i + 1) if kind == "haproxy" else "127.0.0.1:%d" % ports[i],
                 "addr": "127.0.0.1:%d" % ports[i], "weight": 1} for i in window(k)]

    def topo_path(self, kind, version):
        return os.path.join(self.tmp, "%s-v%d.json" % (kind, version))

    def publish(self, k):
        """Version k of every cluster (its window of servers), published and activated."""
        for kind in KINDS:
            topo = dict(self.base[kind], nodes=self.nodes(kind, k))
            v = self.server.publish(cluster_of(kind), topo)
            if v != k:
                raise RuntimeError("%s: published v%d, expected v%d" % (kind, v, k))
            self.topo[kind][k] = topo
            with open(self.topo_path(kind, k), "w") as f:
                json.dump(topo, f)

    def clients_say(self, want):
        """want: {proxy name: (held, refused)}; the clients reports once they say it, else None."""
        def seen():
            got = {}
            for kind in KINDS:
                got.update(self.server.clients(cluster_of(kind)))
            ok = all(name in got and (got[name]["held"], got[name]["refused"]) == w for name, w in want.items())
            return got if ok else None
        return wait_for("the clients report %s" % want, seen, 60)

    def report(self, what, want):
        got = self.clients_say(want)
        if not got:
            got = {}
            for kind in KINDS:
                got.update(self.server.clients(cluster_of(kind)))
        check(what, all(n in got and (got[n]["held"], got[n]["refused"]) == w for n, w in want.items()),
              {n: (c["held"], c["refused"], c["reason"]) for n, c in got.items()})
        return got


def keys_for(rng, n):
    return [b"/k%d/%d" % (i, rng.randrange(10 ** 9)) for i in range(n)]


def step_converge(t, rng):
    """v1, then v2 reaches every proxy: held by every agent, routed by every proxy."""
    for imported in t.base.values():
        if imported["nodes"] != t.nodes(imported.get("scheme") if imported.get("scheme") != "ketama"
                                          else "nutcracker", 1):
            raise RuntimeError("the test's nodes are not import's: %s" % imported["nodes"])
    t.publish(1)
    for p in t.proxies:
        p.start_agent(t.cli, t.server.url)
    t.report("every agent holds v1", {p.name: (1, None) for p in t.proxies})
    t.publish(2)
    got = t.report("every agent holds v2", {p.name: (2, None) for p in t.proxies})
    for p in t.proxies:  # the report tells a proxy's agent, and its kind, by its User-Agent
        ua = got.get(p.name, {}).get("user_agent") or ""
        check("%s: shown as an agent of %s" % (p.name, p.kind),
              ua.startswith("ringkeeper-agent/") and "(%s) libringkeeper/" % p.kind in ua, ua)
        check("%s: listed with its proxy" % p.name, got.get(p.name, {}).get("proxy") == p.kind,
              got.get(p.name))
    for kind in KINDS:
        _, doc = t.server.call("GET", "/v1/clusters/%s/clients" % cluster_of(kind))
        check("%s: the report counts both agents at v2, converged" % kind,
              doc["summary"]["by_version"] == {"2": 2} and doc["summary"]["converged"], doc["summary"])
        out = subprocess.run([t.cli, "clients", "-c", cluster_of(kind), "--server", t.server.url,
                              "--token", TOKEN], capture_output=True, text=True, timeout=30).stdout
        check("%s: ringkeeper clients lists each agent with its proxy" % kind,
              all("proxy %s-%d (%s): holds v2" % (kind, n, kind) in out for n in (1, 2)), out)
    keys = keys_for(rng, 200)
    for p in t.proxies:
        check_routes(t, p, 2, keys)
        check("%s: the file has v2's servers" % p.name,
              all(n["addr"] in p.read() for n in t.topo[p.kind][2]["nodes"]) and
              "127.0.0.1:%d" % (t.mc if p.kind == "nutcracker" else t.be)[0] not in p.read(), p.read())
    p = t.proxies[0]
    check("nginx-1's /metrics: 2 applied, v2 held, 0 refused",
          (p.metric("ringkeeper_agent_applied_total"), p.metric("ringkeeper_agent_held_version"),
           p.metric("ringkeeper_agent_refused_total")) == (2, 2, 0))


PLANTS = {"nginx": ("    access_log off;\n", "    access_log off;\n    no_such_directive_of_the_test on;\n"),
          "haproxy": ("global\n", "global\n    no-such-keyword-of-the-test\n"),
          "nutcracker": ("  timeout: 2000\n", "  timeout: 2000\n  preconnect: not_a_boolean\n")}


def step_failed_validation(t, rng):
    """An unrelated syntax error in the first file of each kind: v3 refused there with the
    proxy's reason, the file as it was, the proxy still on v2; the second ones hold v3."""
    planted = {}
    for p in t.proxies[0::2]:
        old, new = PLANTS[p.kind]
        planted[p.name] = p.read().replace(old, new, 1)
        p.write(planted[p.name])
    t.publish(3)
    want = {p.name: ((2, 3) if p.n == 1 else (3, None)) for p in t.proxies}
    got = t.report("v3: the planted files refused, the others held", want)
    keys = keys_for(rng, 150)
    for p in t.proxies:
        if p.n == 2:
            check_routes(t, p, 3, keys)
            continue
        reason = (got.get(p.name) or {}).get("reason") or ""
        check("%s: the reason is the validation's" % p.name, reason.startswith("validate: "), reason)
        check("%s: the file is the one before" % p.name, p.read() == planted[p.name], p.read())
        check_routes(t, p, 2, keys)
        p.write(planted[p.name].replace(PLANTS[p.kind][1], PLANTS[p.kind][0], 1))
    check("nginx-1's /metrics: 1 refused, v3 refusing",
          (t.proxies[0].metric("ringkeeper_agent_refused_total"),
           t.proxies[0].metric("ringkeeper_agent_refusing_version")) == (1, 3))


def step_failed_reload(t, rng):
    """The second proxy of each kind cannot reload: v4 refused with the reason, its file restored
    and the proxy on v3; the first ones (their errors gone) hold v4."""
    before = {}
    for p in t.proxies[1::2]:
        before[p.name] = p.read()
        open(p.marker, "w").close()
    t.publish(4)
    want = {p.name: ((4, None) if p.n == 1 else (3, 4)) for p in t.proxies}
    got = t.report("v4: the failed reloads refused, the others held", want)
    keys = keys_for(rng, 150)
    for p in t.proxies:
        if p.n == 1:
            check_routes(t, p, 4, keys)
            continue
        reason = (got.get(p.name) or {}).get("reason") or ""
        word = "restart" if p.kind == "nutcracker" else "reload"
        check("%s: the reason is the %s's" % (p.name, word),
              reason.startswith(word + ": ") and "marker" in reason, reason)
        check("%s: the file is restored" % p.name, p.read() == before[p.name], p.read())
        check_routes(t, p, 3, keys)
        os.unlink(p.marker)


def step_reload_not_taken(t, rng):
    """The first nginx and HAProxy given a file their check passes but their reload cannot take (a
    listener on a port in use): v5 refused by the built-in confirm (no new nginx worker; HAProxy's
    old worker still current), the file restored, the proxy still routing by v4; the others hold
    v5."""
    clash = t.be[0]
    plants = {"nginx": ("    access_log off;\n", "    access_log off;\n    server { listen 127.0.0.1:%d; }\n" % clash),
              "haproxy": ("\nbackend rk\n", "\nfrontend clash\n    bind 127.0.0.1:%d\n    default_backend rk\nbackend rk\n" % clash)}
    planted = {}
    for p in t.proxies:
        if p.n == 1 and p.kind in plants:
            planted[p.name] = p.read().replace(*plants[p.kind], 1)
            p.write(planted[p.name])
            rc, out = p.validate()
            check("%s: the planted listener passes the proxy's check" % p.name, rc == 0, out)
    t.publish(5)
    want = {p.name: ((4, 5) if p.name in planted else (5, None)) for p in t.proxies}
    got = t.report("v5: the reloads not taken refused, the others held", want)
    keys = keys_for(rng, 150)
    for p in t.proxies:
        if p.name not in planted:
            check_routes(t, p, 5, keys)
            continue
        reason = (got.get(p.name) or {}).get("reason") or ""
        check("%s: the reason is the confirm's" % p.name, reason.startswith("confirm: "), reason)
        check("%s: the file is the one before" % p.name, p.read() == planted[p.name], p.read())
        check_routes(t, p, 4, keys)
        p.write(planted[p.name].replace(plants[p.kind][1], plants[p.kind][0], 1))


def step_sigkill(t, rng):
    """Every agent killed at a random moment of the cutover to v6: each file is one its proxy
    accepts; started again, the agents bring every proxy to v6."""
    t.publish(6)
    time.sleep(rng.uniform(0.05, 1.0))
    for p in t.proxies:
        p.agent.send_signal(signal.SIGKILL)
        p.agent.wait(timeout=10)
    for p in t.proxies:
        rc, out = p.validate()
        check("%s: after SIGKILL the proxy accepts its file" % p.name, rc == 0, out)
    for p in t.proxies:
        p.start_agent(t.cli, t.server.url)
    t.report("started again, every agent holds v6", {p.name: (6, None) for p in t.proxies})
    keys = keys_for(rng, 150)
    for p in t.proxies:
        check_routes(t, p, 6, keys)


def step_refuse_start(t):
    """Exit 2 and one line: a missing upstream; a pool whose hash is not the cluster's."""
    p = t.proxies[0]
    out = subprocess.run([t.cli, "agent", "--proxy", "nginx", "--file", p.file, "--upstream", "nope",
                          "--server", t.server.url, "-c", "web-nginx"], capture_output=True, timeout=30)
    err = out.stderr.decode()
    check("a missing upstream: exit 2, one line naming it",
          out.returncode == 2 and err.count("\n") == 1 and "nope" in err, (out.returncode, err))
    md5 = os.path.join(t.tmp, "md5.yml")
    with open(md5, "w") as f:
        f.write(t.proxies[4].read().replace("hash: fnv1a_64", "hash: md5"))
    out = subprocess.run([t.cli, "agent", "--proxy", "nutcracker", "--file", md5, "--pool", "rk",
                          "--server", t.server.url, "-c", "web-nutcracker", "--client-id", "md5-probe",
                          "--reload", "true"], capture_output=True, timeout=60)
    err = out.stderr.decode()
    last = err.strip().splitlines()[-1] if err.strip() else ""
    check("a pool of another hash: exit 2, the line naming the hash",
          out.returncode == 2 and "hash" in last and "md5" in last, (out.returncode, err))


def step_sigterm(t):
    """SIGTERM stops every agent with exit 0 (under the sanitizers: with no error or leak found)."""
    for p in t.proxies:
        p.agent.send_signal(signal.SIGTERM)
    for p in t.proxies:
        try:
            rc = p.agent.wait(timeout=15)
        except subprocess.TimeoutExpired:
            rc = None
        check("SIGTERM stops %s's agent with exit 0" % p.name, rc == 0, rc)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: test_agent.py RINGKEEPERD RINGKEEPER_CLI")
    missing = [n for n, path in (("nginx", px.NGINX), ("haproxy", px.HAPROXY),
                                 ("nutcracker", shutil.which("nutcracker")),
                                 ("memcached", shutil.which("memcached"))) if not path]
    if missing:
        print("skipped: %s not installed" % ", ".join(missing))
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="rk-agent-")
    rng = random.Random(57)
    t = None
    try:
        t = Test(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), tmp)
        step_converge(t, rng)
        step_failed_validation(t, rng)
        step_failed_reload(t, rng)
        step_reload_not_taken(t, rng)
        step_sigkill(t, rng)
        step_refuse_start(t)
        step_sigterm(t)
    except Exception as e:  # a step that could not run is a failure, with the agents' logs
        check("the test ran", False, "".join(traceback.format_exception(e)))
    finally:
        if FAILED:
            for name in sorted(os.listdir(tmp)):
                if name.startswith("agent-"):
                    with open(os.path.join(tmp, name), errors="replace") as f:
                        print("---- %s (tail)\n%s" % (name, "".join(f.readlines()[-15:])))
        if t:
            t.fleet.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(FAILED))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
