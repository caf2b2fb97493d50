"""rkserver.py — a real ringkeeperd for the Python binding's tests, its benchmark and the docs'
examples: a free loopback port, a temporary database, HTTP calls to it, a topology maker."""
import http.client
import json
import os
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ringkeeperd of its own; call() speaks HTTP to it."""

    def __init__(self, binary, tmp):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:%d" % self.port, "--db",
                                      os.path.join(tmp, "rk.db")],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
        for _ in range(200):  # at most 10 s
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("ringkeeperd did not start")

    def call(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, json.loads(data) if data else None

    def publish(self, cluster, topology, activate=True):
        status, doc = self.call("POST", "/v1/clusters/%s/versions%s" % (cluster, "?activate=true" if activate else ""),
                                topology)
        assert status == 201, doc
        return doc["version"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()



def topology(n, weight=1, hash_name="xxh3_64", vnode_factor=40):
    return {"hash": hash_name, "vnode_factor": vnode_factor,
            "nodes": [{"id": "n%d" % i, "addr": "10.0.0.%d:11211" % (i + 1), "weight": weight} for i in range(n)]}
