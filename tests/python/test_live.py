"""test_live.py — the Python binding against a real ringkeeperd (conftest.py): fetch and lookups
as the offline ring routes them, each refusal of the C client as its exception, the last-known-good
file, a long-poll update, the migration window's previous owners, the fleet report, and lookups on
threads while the ring changes under them. Every wait is bounded."""
import http.server
import json
import os
import tempfile
import threading
import time

import pytest

import ringkeeper as rk
from rkserver import free_port, topology

KEYS = ["user:%d" % i for i in range(500)] + ["", "\u4f1a\u8bdd-7", "caf\u00e9"]


def offline(doc):
    return rk.Topology.from_dict(doc).ring()


def wait_for(cond, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_fetch_and_lookup(server):
    doc = topology(5)
    server.publish("c", doc)
    ring = offline(doc)
    with rk.Client(server.url, "c", expect_hash="xxh3_64", expect_vnode_factor=40, client_id="py-1",
                   refresh=False) as c:
        assert c.version == 1 and c.previous_version == 0
        assert c.fingerprint == ring.fingerprint
        assert [c.lookup(k) for k in KEYS] == [ring.lookup(k) for k in KEYS]
        assert c.lookup_many(k.encode() for k in KEYS) == [ring.lookup(k) for k in KEYS]
        assert c.lookup_many(KEYS) == [ring.lookup(k) for k in KEYS] and c.lookup_many([]) == []
        assert c.lookup_replicas("user:1", 3) == ring.lookup_replicas("user:1", 3)
        assert c.owners("user:1") == (ring.lookup("user:1"), None)
        assert c.status().accepted == 1 and not c.status().from_cache
    with pytest.raises(rk.NoRing):
        c.lookup("k")  # closed


@pytest.mark.parametrize("options, error, name, field", [
    ({"expect_hash": "fnv1a_32"}, rk.RingRefused, "RK_EEXPECT", "hash"),
    ({"expect_vnode_factor": 160}, rk.RingRefused, "RK_EEXPECT", "vnode_factor"),
    ({"expect_scheme": "ketama"}, rk.RingRefused, "RK_EEXPECT", "scheme"),
    ({"expect_hash": "no_such_hash"}, rk.InvalidArgument, "RK_EINVAL", "expect_hash"),
    ({"client_id": "has space"}, rk.InvalidArgument, "RK_EINVAL", "client_id"),
])
def test_refused(server, options, error, name, field):
    server.publish("c", topology(3))
    with pytest.raises(error) as e:
        rk.Client(server.url, "c", refresh=False, **options)
    assert (e.value.name, e.value.field) == (name, field), str(e.value)


def test_unreachable_and_invalid(server):
    with pytest.raises(rk.InvalidArgument) as e:
        rk.Client("127.0.0.1:7070", "c")
    assert e.value.field == "server"
    with pytest.raises(rk.Unreachable):
        rk.Client("http://127.0.0.1:%d" % free_port(), "c", timeout=2)
    with pytest.raises(rk.Unreachable) as e:  # no such cluster: a 404
        rk.Client(server.url, "nothing-here", refresh=False)
    assert e.value.name == "RK_EHTTP"


class Liar(http.server.BaseHTTPRequestHandler):
    """Serves one doctored ring document: what a hostile or broken server could send."""
    body = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("doctor, name", [
    (lambda d: dict(d, cluster="other"), "RK_ECLUSTER"),
    (lambda d: dict(d, fingerprint="0123456789abcdef"), "RK_EFINGERPRINT"),
    (lambda d: dict(d, hash="sha1"), "RK_EUNKNOWNHASH"),
    (lambda d: {"not": "a version"}, "RK_EDOCUMENT"),
])
def test_hostile_ring_refused(server, doctor, name):
    server.publish("c", topology(3))
    _, doc = server.call("GET", "/v1/clusters/c/ring")
    Liar.body = json.dumps(doctor(doc)).encode()
    liar = http.server.HTTPServer(("127.0.0.1", 0), Liar)
    t = threading.Thread(target=liar.serve_forever, daemon=True)
    t.start()
    try:
        with pytest.raises(rk.RingRefused) as e:
            rk.Client("http://127.0.0.1:%d" % liar.server_address[1], "c", refresh=False)
        assert e.value.name == name, str(e.value)
    finally:
        liar.shutdown()
        liar.server_close()
        t.join(5)


def test_last_known_good(server):
    doc = topology(4)
    server.publish("c", doc)
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "c.lkg")
        rk.Client(server.url, "c", cache=cache, refresh=False).close()
        server.stop()
        with rk.Client(server.url, "c", cache=cache, refresh=False, timeout=2) as c:
            st = c.status()
            assert st.from_cache and st.version == 1
            assert c.lookup("user:7") == offline(doc).lookup("user:7")


def test_long_poll_update(server):
    server.publish("c", topology(3))
    with rk.Client(server.url, "c", wait=5) as c:
        assert c.version == 1
        doc = topology(6)
        server.publish("c", doc)
        assert wait_for(lambda: c.version == 2)
        ring = offline(doc)
        assert c.lookup_many(KEYS) == [ring.lookup(k) for k in KEYS]  # its first call on v2
        assert [c.lookup(k) for k in KEYS] == [ring.lookup(k) for k in KEYS]


def test_migration_window(server):
    before, after = topology(3), topology(5)
    server.publish("c", before)
    status, _ = server.call("PUT", "/v1/clusters/c/policy", {"migration_window": True})
    assert status == 200
    with rk.Client(server.url, "c", refresh=False) as c:
        server.publish("c", after)
        assert c.refresh() is True
        assert (c.version, c.previous_version) == (2, 1)
        old, new = offline(before), offline(after)
        moved = 0
        for k in KEYS:
            assert c.owners(k) == (new.lookup(k), old.lookup(k))
            moved += new.lookup(k) != old.lookup(k)
        assert 0 < moved < len(KEYS)


def clients(server, cluster):
    return {e["id"]: e for e in server.call("GET", "/v1/clusters/%s/clients" % cluster)[1]["clients"]}


def test_fleet_report(server):
    server.publish("c", topology(3, vnode_factor=40))
    with rk.Client(server.url, "c", client_id="py-fleet", expect_vnode_factor=40, refresh=False) as c:
        c.refresh()  # its If-None-Match says it holds v1
        assert clients(server, "c")["py-fleet"]["held"] == 1
        server.publish("c", topology(3, vnode_factor=160))
        for _ in range(2):  # refused, then said to be refused in the next request
            with pytest.raises(rk.RingRefused):
                c.refresh()
        entry = clients(server, "c")["py-fleet"]
        assert (entry["held"], entry["refused"]) == (1, 2), entry
        assert c.version == 1  # the last good ring stays in service


def test_threads(server):
    docs = [topology(n) for n in (3, 5, 4, 6, 2)]
    ids = {n["id"] for d in docs for n in d["nodes"]}
    server.publish("c", docs[0])
    failures, stop = [], threading.Event()

    def reader(c):
        try:
            while not stop.is_set():
                for k in KEYS[:100]:
                    assert c.lookup(k) in ids
        except Exception as e:  # reported below
            failures.append(e)

    with rk.Client(server.url, "c", wait=1) as c:
        threads = [threading.Thread(target=reader, args=(c,)) for _ in range(4)]
        for t in threads:
            t.start()
        for v, doc in enumerate(docs[1:], 2):
            server.publish("c", doc)
            assert wait_for(lambda: c.version == v)
        stop.set()
        for t in threads:
            t.join(10)
        assert not failures, failures
        ring = offline(docs[-1])
        assert [c.lookup(k) for k in KEYS] == [ring.lookup(k) for k in KEYS]


def test_close_during_lookups(server):
    """close() while 8 threads look up: each lookup answers, or raises NoRing once closed; never a
    crash (the library's client is freed with the last call using it). 100 rounds."""
    server.publish("c", topology(5))
    for r in range(100):
        c = rk.Client(server.url, "c", wait=1)
        started, answers, errors = threading.Barrier(9), [], []

        def reader():
            started.wait()
            n = 0
            try:
                while n < 1_000_000:  # bounded: NoRing comes long before
                    c.lookup(KEYS[n % len(KEYS)])
                    c.lookup_many(KEYS[:8])
                    n += 1
            except rk.NoRing:
                answers.append(n)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=reader) for _ in range(8)]
        for t in threads:
            t.start()
        started.wait()
        time.sleep(r % 5 / 1000)
        c.close()
        for t in threads:
            t.join(30)
        assert not errors, errors
        assert len(answers) == 8  # every thread ended on NoRing after the close
        with pytest.raises(rk.NoRing):
            c.lookup("x")
