#!/usr/bin/env python3
"""attackers.py — the attacker phase of the load test (review findings 1-4 at their cheapest, all
at once, without a token), for SECONDS seconds, from loopback addresses 127.0.0.2..127.0.0.9 so
that the probes from 127.0.0.1 keep their own per-address connection budget:

  plans      PLANS threads asking GET /plan?from=F&to=T (allowed, but costly) again and again;
  bodies     BODIES threads sending GET /healthz with Content-Length: 8 MiB and its body;
  readers    READERS connections asking for the big ring and never reading (reconnected when the
             server cuts them);
  slowloris  SLOW connections sending one header byte every 2 s (reconnected when cut).

usage: attackers.py PORT RING_PATH PLAN_PATH SECONDS [PLANS BODIES READERS SLOW]
Prints one line of counts at the end. Every socket is closed and every thread joined before it
exits (at most SECONDS + 15 s)."""
import socket
import sys
import threading
import time

SOURCES = ["127.0.0.%d" % i for i in range(2, 10)]
BODY = 8 << 20


class Attack:
    def __init__(self, port, ring, plan, seconds):
        self.port, self.ring, self.plan = port, ring, plan
        self.deadline = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.counts = {}

    def count(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def running(self):
        return time.monotonic() < self.deadline

    def connect(self, n, rcvbuf=0):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(10)
        s.bind((SOURCES[n % len(SOURCES)], 0))
        s.connect(("127.0.0.1", self.port))
        return s

    def request(self, n, head, body=b""):
        """Sends `head` (and `body`), reads to the end: the status line, or the error."""
        try:
            with self.connect(n) as s:
                s.sendall(head + body)
                answer = b""
                while True:
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        break
                    answer += chunk[: max(0, 64 - len(answer))]
                return answer.split(b"\r\n", 1)[0].decode("latin-1") or "closed"
        except OSError as e:
            return type(e).__name__

    def plans(self, n):
        head = b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % self.plan.encode()
        while self.running():
            self.count("plan " + self.request(n, head))

    def bodies(self, n):
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % BODY
        body = b"a" * BODY
        while self.running():
            self.count("body " + self.request(n, head, body))

    def hold(self, n, first, then, every, rcvbuf=0):
        """One connection at a time: sends `first`, then `then` every `every` s, reconnecting
        when the server closes it, until time is up."""
        while self.running():
            try:
                with self.connect(n, rcvbuf) as s:
                    s.sendall(first)
                    self.count("connected")
                    while self.running():
                        time.sleep(every)
                        s.sendall(then)
            except OSError:
                self.count("cut")
                time.sleep(0.5)

    def readers(self, n):
        head = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % self.ring.encode()
        self.hold(n, head, b"", 1.0, rcvbuf=4096)  # sending nothing: only the timeout cuts it

    def slowloris(self, n):
        self.hold(n, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X", 2.0)


def main():
    port, ring, plan, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    plans, bodies, readers, slow = (int(a) for a in (sys.argv[5:9] or [2, 8, 300, 200]))
    a = Attack(port, ring, plan, seconds)
    threads = [threading.Thread(target=f, args=(i,))
               for f, k in ((a.plans, plans), (a.bodies, bodies), (a.readers, readers),
                            (a.slowloris, slow))
               for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 15)
    alive = sum(t.is_alive() for t in threads)
    print("attackers: %s%s" % (", ".join("%s %d" % kv for kv in sorted(a.counts.items())),
                                "; %d threads still running" % alive if alive else ""))
    sys.exit(1 if alive else 0)


if __name__ == "__main__":
    main()
