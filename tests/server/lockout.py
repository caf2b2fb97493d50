#!/usr/bin/env python3
"""lockout.py — can an operator still reach ringkeeperd while it is attacked? (issue 52, item 4)

usage: lockout.py PORT slowloris|chunked|bodies SECONDS [CONNECTIONS]

  slowloris  CONNECTIONS (default 1280) connections from 127.0.0.2..6, each sending one byte of a
             request's headers every 10 s, a dead one replaced when its next byte is due (as the
             classic tool does);
  chunked    CONNECTIONS (default 600) clients from 127.0.0.2..9, each POSTing 8 MiB of junk with
             Transfer-Encoding: chunked to a publish route, again and again;
  bodies     the same with Content-Length.
With LOCKOUT_TOKEN set, the operator's publishes send it as their bearer token; with LOCKOUT_ONCE=1 each body client sends one request (all at once) instead of looping.

Meanwhile, from 127.0.0.1, it asks for /healthz four times a second and publishes a small
topology every 2 s, each on a new connection with a 5 s timeout. Prints one line per figure:
  probes N answered M p50_ms X p99_ms Y max_ms Z
  publishes N created M max_ms Z
  attack KEY=COUNT ...
The attack runs in a child process (its threads would hold the operator's GIL); every socket is
closed, every thread joined and the child waited for before it exits (at most SECONDS + 20 s)."""
import json
import os
import resource
import selectors
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
MODE = sys.argv[2]
SECONDS = float(sys.argv[3])
COUNT = int(sys.argv[4]) if len(sys.argv) > 4 else (1280 if MODE == "slowloris" else 600)
TOKEN = os.environ.get("LOCKOUT_TOKEN", "")  # the operator's, for a server with --token-file
AUTH = b"Authorization: Bearer %s\r\n" % TOKEN.encode() if TOKEN else b""
ONCE = os.environ.get("LOCKOUT_ONCE") == "1"  # each body client sends one request, not a loop
HEADERS = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 4000
TOPOLOGY = json.dumps({"vnode_factor": 16, "hash": "xxh3_64",
                       "nodes": [{"id": "n%d" % i, "addr": "10.0.0.%d:11211" % i, "weight": 1}
                                 for i in range(1, 4)]}).encode()


def timed(source, request, want):
    """Sends `request` on a new connection; milliseconds until a status line starting `want`
    came back, or None."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=5, source_address=(source, 0)) as s:
            s.sendall(request)
            got = b""
            while b"\r\n" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
    except OSError:
        return None
    return (time.monotonic() - t0) * 1000 if got.startswith(want) else None


def operator(stop, probes, publishes):
    n = 0
    while not stop.is_set():
        probes.append(timed("127.0.0.1", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            b"Connection: close\r\n\r\n", b"HTTP/1.1 200"))
        if n % 8 == 0:
            publishes.append(timed("127.0.0.1", b"POST /v1/clusters/ops/versions HTTP/1.1\r\n"
                                   b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n" + AUTH +
                                   b"Connection: close\r\nContent-Length: %d\r\n\r\n"
                                   % len(TOPOLOGY) + TOPOLOGY, b"HTTP/1.1 201"))
        n += 1
        stop.wait(0.25)


def slowloris(stop, counts):
    sel = selectors.DefaultSelector()
    slots = [None] * COUNT  # [socket, bytes sent]
    due = [time.monotonic() + 10.0 * i / COUNT for i in range(COUNT)]

    def open_slot(i):
        s = socket.socket()
        s.setblocking(False)
        s.bind(("127.0.0.%d" % (2 + i % 5), 0))
        try:
            s.connect(("127.0.0.1", PORT))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            counts["refused"] = counts.get("refused", 0) + 1
            return
        slots[i] = [s, 0]
        sel.register(s, selectors.EVENT_READ, i)
        counts["opened"] = counts.get("opened", 0) + 1

    def close_slot(i, why):
        sel.unregister(slots[i][0])
        slots[i][0].close()
        slots[i] = None
        counts[why] = counts.get(why, 0) + 1

    while not stop.is_set():
        now = time.monotonic()
        for i in range(COUNT):
            if due[i] > now:
                continue
            due[i] = now + 10.0
            if slots[i] is None:
                open_slot(i)
                continue
            s, sent = slots[i]
            try:
                s.send(HEADERS[sent % len(HEADERS):sent % len(HEADERS) + 1])
                slots[i][1] += 1
            except OSError:
                close_slot(i, "cut")
        for key, _ in sel.select(timeout=0.05):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            close_slot(key.data, "answered" if data else "cut")
    for i in range(COUNT):
        if slots[i] is not None:
            close_slot(i, "left")


def bodies(go, stop, counts, n):
    junk = b"x" * 65536
    chunk = b"%x\r\n" % len(junk) + junk + b"\r\n"
    lock = threading.Lock()
    framing = (b"Transfer-Encoding: chunked\r\n\r\n" if MODE == "chunked"
               else b"Content-Length: %d\r\n\r\n" % (128 * len(junk)))

    def note(what):
        with lock:
            counts[what] = counts.get(what, 0) + 1

    go.wait()
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", PORT), timeout=10,
                                          source_address=("127.0.0.%d" % (2 + n % 8), 0)) as s:
                s.sendall(b"POST /v1/clusters/flood/versions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\n" + framing)
                try:
                    for _ in range(128):  # 8 MiB
                        if stop.is_set():
                            break  # so that it ends within the socket's timeout of the stop
                        s.sendall(chunk if MODE == "chunked" else junk)
                    if MODE == "chunked" and not stop.is_set():
                        s.sendall(b"0\r\n\r\n")
                except OSError:
                    pass  # answered (503) before the body was read: the answer is read below
                answer = b""
                while b"\r\n" not in answer:
                    got = s.recv(4096)
                    if not got:
                        break
                    answer += got
            note(answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/1.1 ") else "unanswered")
        except OSError:
            note("unanswered")
        if ONCE:
            return


def percentile(values, p):
    return values[min(len(values) - 1, int(len(values) * p))] if values else -1


def attack(seconds, out):
    """In a process of its own: 600 attacking threads hold the GIL for seconds at a time, which
    the operator's timings would count as the server's."""
    go, stop, counts = threading.Event(), threading.Event(), {}
    if MODE == "slowloris":
        attackers = [threading.Thread(target=slowloris, args=(stop, counts))]
    else:  # all started before any loops: a start waits for the GIL behind every looping thread
        attackers = [threading.Thread(target=bodies, args=(go, stop, counts, n))
                     for n in range(COUNT)]
    for t in attackers:
        t.start()
    go.set()
    time.sleep(seconds)
    stop.set()
    for t in attackers:
        t.join()
    os.write(out, json.dumps(counts).encode())
    os.close(out)


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, COUNT + 256)), hard))
    warm = min(12.0, SECONDS / 3)  # the attack in place: every slowloris connection opened
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        attack(SECONDS, w)
        os._exit(0)
    os.close(w)
    time.sleep(warm)
    stop, probes, publishes = threading.Event(), [], []
    op = threading.Thread(target=operator, args=(stop, probes, publishes))
    op.start()
    time.sleep(max(1.0, SECONDS - warm))
    stop.set()
    op.join()
    with os.fdopen(r, "rb") as f:
        counts = json.loads(f.read() or b"{}")
    os.waitpid(child, 0)
    answered = sorted(ms for ms in probes if ms is not None)
    print("probes %d answered %d p50_ms %.1f p99_ms %.1f max_ms %.1f" % (
        len(probes), len(answered), percentile(answered, 0.5), percentile(answered, 0.99),
        answered[-1] if answered else -1))
    created = sorted(ms for ms in publishes if ms is not None)
    print("publishes %d created %d max_ms %.1f" % (len(publishes), len(created),
                                                   created[-1] if created else -1))
    print("attack " + " ".join("%s=%d" % kv for kv in sorted(counts.items())))


main()
