#!/usr/bin/env python3
"""measure_data.py: test_measure.sh's hands on the data servers, independent of ringkeeper's code.

  measure_data.py fill STORE NODE=ADDR...    < lines "key<TAB>node": each key on its node's server,
      a value of a Zipf-like size (the k-th key of the file about 200 KB / k^0.7, at least
      $RK_MEASURE_MIN bytes, default 4000), the first three keys hot ones of 900 KB: a skewed fleet
      on purpose; with $RK_MEASURE_SIZE set, every value of that size instead, but for three hot
      keys of $RK_MEASURE_HOT bytes when that is set too
  measure_data.py used STORE NODE=ADDR...    "NODE BYTES" per server: memcached's stats bytes,
      Redis's INFO used_memory less mem_clients_normal (the clients' buffers, this one's among
      them), once no other client is connected and it holds still (a grown table is rehashed
      over the next cron runs)
  measure_data.py sizes STORE NODE=ADDR...   < lines "key<TAB>old<TAB>new": the sizes as each
      server counts them (memcached: the metadump's item sizes; Redis: MEMORY USAGE), read from the
      old owner; prints "keys=N bytes=B moving_keys=M moving_bytes=MB"
  measure_data.py read STORE NODE=ADDR...    < lines "key<TAB>node": each key read 200 times
      from its node's server (GET), for its read counters

STORE is memcached or redis, spoken in their text protocols over one pipelined socket per server.
"""
import os
import socket
import sys
import time
import urllib.parse


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    return s, s.makefile("rb")


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


MIN_SIZE = int(os.environ.get("RK_MEASURE_MIN", "4000"))
FLAT_SIZE = int(os.environ.get("RK_MEASURE_SIZE", "0"))
HOT_SIZE = int(os.environ.get("RK_MEASURE_HOT", "0" if FLAT_SIZE else "900000"))


def size_of(k):
    """The value size of the k-th key (0-based) of the file."""
    if k < 3 and HOT_SIZE:
        return HOT_SIZE
    if FLAT_SIZE:
        return FLAT_SIZE
    return max(MIN_SIZE, int(200_000 / (k - 2) ** 0.7))


def fill(store, addr, rows):
    s, f = connect(addr)
    out = []
    for key, k in rows:
        value = b"x" * size_of(k)
        if store == "memcached":
            out.append(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        else:
            out.append(resp(b"SET", key, value))
    s.sendall(b"".join(out))
    for key, _ in rows:
        line = f.readline().rstrip(b"\r\n")
        if line not in (b"STORED", b"+OK"):
            sys.exit("set %r on %s: %r" % (key, addr, line))
    s.close()


def info(f, s, section):
    s.sendall(resp(b"INFO", section))
    n = int(f.readline()[1:])
    return dict(l.split(b":", 1) for l in f.read(n + 2).split(b"\r\n") if b":" in l)


def used(store, addr):
    s, f = connect(addr)
    if store == "memcached":
        s.sendall(b"stats\r\n")
        for line in iter(f.readline, b"END\r\n"):
            parts = line.split()
            if parts[:2] == [b"STAT", b"bytes"]:
                return int(parts[2])
        sys.exit("no memory figure from %s" % addr)
    for _ in range(100):  # a client just gone may not be freed yet: its buffers count
        if info(f, s, b"clients")[b"connected_clients"] == b"1":
            break
        time.sleep(0.05)
    now = None  # a table that grew is rehashed over the next cron runs, both tables held meanwhile
    for _ in range(50):
        m = info(f, s, b"memory")  # less the clients' own buffers, this one's among them
        then, now = now, int(m[b"used_memory"]) - int(m[b"mem_clients_normal"])
        if now == then:
            break
        time.sleep(0.2)
    return now


def memcached_sizes(addr):
    s, f = connect(addr)
    s.sendall(b"lru_crawler metadump all\r\n")
    sizes = {}
    for line in iter(f.readline, b"END\r\n"):
        fields = dict(t.split(b"=", 1) for t in line.split())
        sizes[urllib.parse.unquote_to_bytes(fields[b"key"])] = int(fields[b"size"])
    s.close()
    return sizes


def redis_sizes(addr, keys):
    s, f = connect(addr)
    s.sendall(b"".join(resp(b"MEMORY", b"USAGE", k) for k in keys))
    sizes = {}
    for k in keys:
        line = f.readline().rstrip(b"\r\n")
        if line.startswith(b":"):
            sizes[k] = int(line[1:])
    s.close()
    return sizes


def read(store, addr, keys, times=200):
    s, f = connect(addr)
    get = (lambda k: b"get %s\r\n" % k) if store == "memcached" else (lambda k: resp(b"GET", k))
    for k in keys:
        s.sendall(get(k) * times)
        for _ in range(times):
            line = f.readline()
            if line.startswith((b"VALUE", b"$")):
                f.read(int(line.split()[-1].lstrip(b"$")) + 2)
                if store == "memcached":
                    f.readline()  # END
            elif not line.startswith(b"END"):
                sys.exit("get %r on %s: %r" % (k, addr, line))
    s.close()


def main():
    cmd, store = sys.argv[1], sys.argv[2]
    addrs = dict(a.split("=", 1) for a in sys.argv[3:])
    if cmd == "used":
        for node, addr in addrs.items():
            print(node, used(store, addr))
        return
    rows = [l.rstrip(b"\n").split(b"\t") for l in sys.stdin.buffer if l.strip()]
    if cmd == "fill":
        for node, addr in addrs.items():
            fill(store, addr, [(r[0], k) for k, r in enumerate(rows) if r[1].decode() == node])
        return
    if cmd == "read":
        for node, addr in addrs.items():
            read(store, addr, [r[0] for r in rows if r[1].decode() == node])
        return
    sizes = {}
    for node, addr in addrs.items():
        mine = [r[0] for r in rows if r[1].decode() == node]
        got = memcached_sizes(addr) if store == "memcached" else redis_sizes(addr, mine)
        sizes.update((k, got[k]) for k in mine if k in got)
    moving = [r[0] for r in rows if r[1] != r[2] and r[0] in sizes]
    print("keys=%d bytes=%d moving_keys=%d moving_bytes=%d" % (
        len(sizes), sum(sizes.values()), len(moving), sum(sizes[k] for k in moving)))


main()
