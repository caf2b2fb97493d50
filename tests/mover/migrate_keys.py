#!/usr/bin/env python3
"""migrate_keys.py: test_migrate.sh's hands on the data servers, behind the worker's back.

  migrate_keys.py fill STORE NODE=ADDR...   < lines "key<TAB>node": key = "v-<key>" on node's server
  migrate_keys.py check STORE NODE=ADDR...  < lines "key<TAB>old<TAB>new": prints
      "moving=N on_old=A on_new=B" (keys whose owner changed, those of all on their old owner,
      those of the moving ones on their new owner)
  migrate_keys.py same STORE NODE=ADDR...   < lines "key<TAB>old<TAB>new": prints
      "moving=N same=S on_old=A" (keys whose owner changed, those of them whose new owner holds
      what their old owner holds, keys of all on their old owner, whatever their value)
  migrate_keys.py flush STORE NODE=ADDR...  empties every server
$PREFIX (default "v-") is the value's prefix for fill and check: a live writer's values differ.

STORE is memcached or redis; both spoken in their text protocols over one pipelined socket.
"""
import os
import socket
import sys

PREFIX = os.environ.get("PREFIX", "v-").encode()


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    return s, s.makefile("rb")


def memcached_cmds(op, keys):
    if op == "set":
        return b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(PREFIX + k), PREFIX + k) for k in keys)
    return b"".join(b"mg %s v\r\n" % k for k in keys)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def redis_cmds(op, keys):
    if op == "set":
        return b"".join(resp(b"SET", k, PREFIX + k) for k in keys)
    return b"".join(resp(b"GET", k) for k in keys)


def run(store, addr, op, keys):
    """Sends op (set, get) for every key; for get, each key there and its value."""
    if not keys:
        return {}
    s, f = connect(addr)
    s.sendall((memcached_cmds if store == "memcached" else redis_cmds)(op, keys))
    found = {}
    for k in keys:
        line = f.readline().rstrip(b"\r\n")
        if op == "set":
            if line not in (b"STORED", b"+OK"):
                sys.exit("set %r on %s: %r" % (k, addr, line))
            continue
        if line.startswith(b"VA ") or line.startswith(b"$") and line != b"$-1":
            n = int(line.split()[1] if line.startswith(b"VA ") else line[1:])
            found[k] = f.read(n + 2)[:n]
    s.close()
    return found


def flush(store, addr):
    s, f = connect(addr)
    s.sendall(b"flush_all\r\n" if store == "memcached" else resp(b"FLUSHALL"))
    line = f.readline().rstrip(b"\r\n")
    if line not in (b"OK", b"+OK"):
        sys.exit("flush %s: %r" % (addr, line))
    s.close()


def main():
    cmd, store = sys.argv[1], sys.argv[2]
    addrs = dict(a.split("=", 1) for a in sys.argv[3:])
    if cmd == "flush":
        for addr in addrs.values():
            flush(store, addr)
        return
    rows = [l.rstrip(b"\n").split(b"\t") for l in sys.stdin.buffer if l.strip()]
    if cmd == "fill":
        for node, addr in addrs.items():
            run(store, addr, "set", [r[0] for r in rows if r[1].decode() == node])
        return
    on = {}
    for node, addr in addrs.items():
        on[node.encode()] = run(store, addr, "get", [r[0] for r in rows])
    moving = [r for r in rows if r[1] != r[2]]
    if cmd == "same":
        same = sum(r[0] in on[r[1]] and on[r[2]].get(r[0]) == on[r[1]][r[0]] for r in moving)
        on_old = sum(r[0] in on[r[1]] for r in rows)
        print("moving=%d same=%d on_old=%d" % (len(moving), same, on_old))
        return
    on_old = sum(on[r[1]].get(r[0]) == PREFIX + r[0] for r in rows)
    on_new = sum(on[r[2]].get(r[0]) == PREFIX + r[0] for r in moving)
    print("moving=%d on_old=%d on_new=%d" % (len(moving), on_old, on_new))


main()
