#!/usr/bin/env python3
"""attackers.py — the attacker phase of the load test (issue 20's findings 1-3, and the costly plans
of an earlier review, all at once, without a token), for SECONDS seconds, from loopback addresses
127.0.0.2..127.0.0.9 (polls: 127.0.0.10 on, 200 a source) so that the probes from 127.0.0.1 keep
their own per-address connection budget:

  plans      PLANS threads asking GET /plan?from=F&to=T (allowed, but costly) again and again;
  bodies     BODIES threads POSTing 8 MiB of junk to a publish route (finding 1: buffered bodies):
             without a token, and, with RK_ATTACK_TOKEN set, every other one with that token
             from 127.0.0.2 alone (a writer's host gone rogue);
  readers    READERS connections asking for the big ring and never reading (reconnected when the
             server cuts them; finding 3: kernel socket memory);
  slowloris  SLOW connections sending one header byte every 2 s (reconnected when cut);
  polls      POLLS long polls of POLL_PATH held at once, one thread over them all (finding 2:
             held polls locking out everyone else), each reopened when answered or cut;
  forgers    FORGERS threads (from 127.0.0.60 on, one each) asking for POLL_PATH with RK-Client
             ids of their own invention, one new id a request, and none of them with a token (finding 4: a forged and flooded
             fleet report).

Meanwhile it samples ringkeeperd (PID): the peak of its RSS, and of the kernel memory of its
sockets (ss: what they have queued to send, r+w of skmem, on the server's side of PORT).

usage: attackers.py PORT PID RING_PATH PLAN_PATH POLL_PATH SECONDS
                    [PLANS BODIES READERS SLOW POLLS FORGERS]
Prints one line of counts and one of peaks at the end. Every socket is closed and every thread
joined before it exits (at most SECONDS + 15 s)."""
import os
import re
import selectors
import socket
import subprocess
import sys
import threading
import time

SOURCES = ["127.0.0.%d" % i for i in range(2, 10)]
POLLS_PER_SOURCE = 200  # under ringkeeperd's default --max-connections-per-address
BODY = 8 << 20


class Attack:
    def __init__(self, port, ring, plan, poll, seconds):
        self.port, self.ring, self.plan, self.poll = port, ring, plan, poll
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
                s.sendall(head)
                try:
                    s.sendall(body)
                except OSError:
                    pass  # refused (503) before its body was read: the answer is read below
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

    def bodies(self, n, body=b"a" * BODY):
        token = os.environ.get("RK_ATTACK_TOKEN") if n % 2 else None
        auth = b"Authorization: Bearer %s\r\n" % token.encode() if token else b""
        head = (b"POST /v1/clusters/flood/versions HTTP/1.1\r\nHost: x\r\n%s"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (auth, BODY))
        what = "body with token " if token else "body "
        while self.running():
            self.count(what + self.request(0 if token else n, head, body))

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

    def polls(self, count):
        """`count` long polls held at once by one thread: each is reopened when answered or cut."""
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", self.poll)
        tag = c.getresponse().getheader("ETag", "")
        c.close()
        head = (b"GET %s?wait=5 HTTP/1.1\r\nHost: x\r\nIf-None-Match: %s\r\n\r\n"
                % (self.poll.encode(), tag.encode()))
        sel = selectors.DefaultSelector()
        def open_one(i):
            try:
                s = socket.socket()
                s.bind(("127.0.0.%d" % (10 + i // POLLS_PER_SOURCE), 0))
                s.connect(("127.0.0.1", self.port))
                s.sendall(head)
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ, i)
            except OSError:
                s.close()
                self.count("poll refused")
                return False
            return True
        down = list(range(count))
        while self.running():
            while down and self.running():  # reopen, a batch at a time so cut ones come back
                i = down.pop()
                if not open_one(i):
                    down.insert(0, i)
                    break
            for key, _ in sel.select(timeout=0.2):
                try:
                    got = key.fileobj.recv(1 << 16)
                except OSError:
                    got = b""
                self.count("poll " + (got.split(b" ", 2)[1].decode("latin-1") if got[:5] == b"HTTP/"
                                      else "cut"))
                sel.unregister(key.fileobj)
                key.fileobj.close()
                down.append(key.data)
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()


    def forgers(self, n):
        import http.client
        c, i = None, 0
        while self.running():
            try:
                c = c or http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=10, source_address=("127.0.0.%d" % (60 + n), 0))
                c.request("GET", self.poll, headers={"RK-Client": "forged-%d-%d" % (n, i)})
                c.getresponse().read()
                self.count("forged")
            except (OSError, http.client.HTTPException):
                c = None
                self.count("forge cut")
            i += 1
        if c:
            c.close()


class Sampler:
    """Peaks of ringkeeperd's RSS and of its sockets' kernel memory, sampled every second."""

    def __init__(self, port, pid):
        self.port, self.pid = port, pid
        self.rss = self.sockets = 0

    def sockets_now(self):
        out = subprocess.run(["ss", "-tnmH", "state", "established", "( sport = :%d )" % self.port],
                             capture_output=True, text=True).stdout
        return sum(int(r) + int(w) for r, w in
                   re.findall(r"skmem:\(r(\d+),rb\d+,t\d+,tb\d+,f\d+,w(\d+)", out))

    def rss_now(self):
        with open("/proc/%d/status" % self.pid) as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) << 10

    def run(self, attack):
        while attack.running():
            try:
                self.rss = max(self.rss, self.rss_now())
                self.sockets = max(self.sockets, self.sockets_now())
            except (OSError, AttributeError) as e:  # the server gone: the test says so
                print("sampler: %s" % e)
            time.sleep(1)


def main():
    port, pid, ring, plan, poll = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]
    seconds = float(sys.argv[6])
    plans, bodies, readers, slow, polls, forgers = (
        int(a) for a in (sys.argv[7:13] or [2, 600, 1000, 200, 10000, 2]))
    a = Attack(port, ring, plan, poll, seconds)
    sampler = Sampler(port, pid)
    # the 600 posters last: once they run, starting a thread takes long enough that a short attack
    # could end before the others began
    threads = [threading.Thread(target=f, args=(i,))
               for f, k in ((a.forgers, forgers), (a.plans, plans), (a.readers, readers),
                            (a.slowloris, slow), (a.bodies, bodies))
               for i in range(k)]
    threads = [threading.Thread(target=sampler.run, args=(a,)),
               threading.Thread(target=a.polls, args=(polls,))] + threads
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 15)
    alive = sum(t.is_alive() for t in threads)
    print("attackers: %s%s" % (", ".join("%s %d" % kv for kv in sorted(a.counts.items())),
                                "; %d threads still running" % alive if alive else ""))
    print("peaks: rss_mib %d sockets_mib %d" % (sampler.rss >> 20, sampler.sockets >> 20))
    sys.exit(1 if alive else 0)


if __name__ == "__main__":
    main()
