#!/usr/bin/env python3
"""hostile_memcached.py PORT MODE: a hostile memcached for test_migrate_lifecycle.sh, on 127.0.0.1:PORT.

No real memcached can be made to misbehave so, hence this fake. It says it holds 10 items (`stats`)
and answers `version`, so that a client connects. MODE:
  endless  `lru_crawler metadump hash` gives keys that never end
  garbage  the metadump gives 12 keys, and every `mg` is answered with a line of garbage
Anything else gets ERROR. Each connection is served until its client closes it; the process ends
when killed.
"""
import socket
import sys
import threading
import time

MODE = sys.argv[2]


def dump_line(i):
    return b"key=hostile-%d exp=-1 la=1 cas=%d fetch=no cls=1 size=70\r\n" % (i, i)


def metadump(conn):
    if MODE == "garbage":
        conn.sendall(b"".join(dump_line(i) for i in range(12)) + b"END\r\n")
        return
    i = 0
    while True:  # ends when the client closes: sendall raises
        conn.sendall(b"".join(dump_line(i + j) for j in range(1000)))
        i += 1000


def serve(conn):
    f = conn.makefile("rb")
    try:
        for line in f:
            cmd = line.strip()
            if cmd == b"version":
                conn.sendall(b"VERSION 1.6.18\r\n")
            elif cmd == b"stats":
                conn.sendall(b"STAT pid 1\r\nSTAT time %d\r\nSTAT curr_items 10\r\nEND\r\n" % int(time.time()))
            elif cmd.startswith(b"lru_crawler metadump"):
                metadump(conn)
            elif cmd.startswith(b"mg ") and MODE == "garbage":
                conn.sendall(b"ZZ \x01garbage\r\n")
            else:
                conn.sendall(b"ERROR\r\n")
    except OSError:
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen(16)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
