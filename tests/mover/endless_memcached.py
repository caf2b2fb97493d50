#!/usr/bin/env python3
"""endless_memcached.py PORT: a hostile memcached for test_migrate_lifecycle.sh, on 127.0.0.1:PORT.

It says it holds 10 items (`stats`), then answers `lru_crawler metadump hash` with keys that never
end, as a broken or hostile server might: no real memcached can be made to, hence this fake. It
answers `version` so that a client connects, and ERROR to anything else. Each connection is served
until its client closes it; the process ends when killed.
"""
import socket
import sys
import threading
import time


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
                i = 0
                while True:  # ends when the client closes: sendall raises
                    chunk = b"".join(b"key=endless-%d exp=-1 la=1 cas=%d fetch=no cls=1 size=70\r\n" % (i + j, i + j)
                                     for j in range(1000))
                    conn.sendall(chunk)
                    i += 1000
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
