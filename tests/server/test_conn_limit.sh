#!/usr/bin/env bash
# test_conn_limit.sh — one client address cannot take every connection: past
# --max-connections-per-address its next connection is closed at once while other addresses are
# served; past --max-connections a new connection takes the place of one that owes its request's
# headers, or is closed at once when none does (it used to wait unanswered in the listen backlog
# until its client gave up). Clients come from 127.0.0.2..6 (all loopback).
# usage: test_conn_limit.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
rk_start --max-connections 16 --max-connections-per-address 4 --threads 2
python3 - "$PORT" >"$TMP/report" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = []

def hold(source):  # a slowloris connection: half a request line, then silence
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\n")
    held.append(s)

def fate(source):  # "closed" when the server drops a new connection within a second, else "waits"
    s = socket.socket()
    s.settimeout(3)
    s.bind((source, 0))
    t0 = time.monotonic()
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = s.recv(100)
    except socket.timeout:
        got = None
    except OSError:
        got = b""
    s.close()
    ms = (time.monotonic() - t0) * 1000
    if got is None:
        return "waits"
    if got.startswith(b"HTTP/1.1 200"):
        return "answered"
    return "closed" if ms < 1000 else "closed after %d ms" % ms

for _ in range(4):
    hold("127.0.0.2")
time.sleep(0.3)
print("same address past its limit:", fate("127.0.0.2"))
print("another address:", fate("127.0.0.1"))
# fill the server from other addresses, 4 each, with uploads in progress (they owe no headers), until
# it closes one: each of the first past the limit takes the place of a slowloris connection of
# 127.0.0.2, then none is left to make room; a connection it neither serves nor closes (left in the
# listen backlog) counts as held, so the old behaviour runs to 40
slow = list(held)
filled = None
for n in range(40):
    source = "127.0.0.%d" % (3 + n // 4)
    s = socket.socket()
    s.settimeout(0.3)
    s.bind((source, 0))
    t0 = time.monotonic()
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST /v1/clusters/c/versions HTTP/1.1\r\nHost: x\r\n"
              b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"nodes\"")
    try:
        closed = s.recv(100) == b""
    except socket.timeout:
        closed = False
    except OSError:
        closed = True
    if closed:
        filled = (n, (time.monotonic() - t0) * 1000)
        break
    held.append(s)
if filled and filled[1] < 1000:
    print("past the server's limit: closed, after %d more held" % filled[0])
else:
    print("past the server's limit: never closed at once (%s)" % (filled,))
cut = 0
for s in slow:
    s.settimeout(1)
    try:
        cut += s.recv(100) == b""
    except socket.timeout:
        pass
    except OSError:
        cut += 1
print("slowloris connections closed for newcomers:", cut)
for s in held:
    s.close()
time.sleep(0.5)
print("after they left:", fate("127.0.0.2"))
PY
cat "$TMP/report"
has "per address: closed at once" "$TMP/report" "same address past its limit: closed"
has "per address: others served" "$TMP/report" "another address: answered"
has "past --max-connections: closed at once" "$TMP/report" "past the server's limit: closed"
more=$(sed -n "s/.*closed, after \([0-9]*\) more held/\1/p" "$TMP/report")
# 16 uploads in all, in the place of the 4 slowloris connections of 127.0.0.2 (one fewer while the
# server has yet to see a probe close)
case $more in 15 | 16) ok ;; *) bad "--max-connections 16 let [$more] uploads be held" ;; esac
has "past --max-connections: slowloris made room" "$TMP/report" \
    "slowloris connections closed for newcomers: 4"
has "after they left: answered" "$TMP/report" "after they left: answered"
# Every connection has the kernel buffers of docs/RELIABILITY.md from its accept (SO_SNDBUF 16 KiB
# and SO_RCVBUF 64 KiB, booked double by Linux): they are set on the listening socket.
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
for _ in $(seq 1 50); do
    ss -tmnH state established "( sport = :$PORT )" >"$TMP/ss"
    grep -q skmem "$TMP/ss" && break
    sleep 0.1
done
exec 3>&-
has "a connection's send buffer" "$TMP/ss" "tb32768,"
has "a connection's receive buffer" "$TMP/ss" "rb131072,"
# A poll held makes its connection's receive buffer small (4 KiB, booked 8 KiB: it is not read
# meanwhile), and it stays small once answered, until a request brings a body to read: it is back
# at 64 KiB once that request's headers are in, and small again while the request waits for the
# pool (not read either).
topo 3 >"$TMP/t3"
check "publish for the held poll" 201 "$(req POST '/v1/clusters/rb/versions?activate=true' \
    -H 'Content-Type: application/json' --data-binary @"$TMP/t3")"
tag=$(curl -s -D - -o /dev/null "$BASE/v1/clusters/rb/ring" | tr -d '\r' | sed -n 's/^ETag: *//Ip')
rcvbuf() { ss -tmnH state established "( sport = :$PORT )" | grep -o 'rb[0-9]*' | head -1; }
status_of() { # status_of: the status code of the answer on fd 3, its headers read
    local line code=
    while IFS= read -r -t 5 line <&3; do
        [ -z "$code" ] && code=$(echo "$line" | cut -d' ' -f2)
        [ "$line" = $'\r' ] && break
    done
    echo "$code"
}
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /v1/clusters/rb/ring?wait=1 HTTP/1.1\r\nHost: x\r\nIf-None-Match: %s\r\n\r\n' "$tag" >&3
sleep 0.5
check "a poll held: small receive buffer" rb8192 "$(rcvbuf)"
check "the poll answered at its deadline" 304 "$(status_of)"
check "answered: still small" rb8192 "$(rcvbuf)"
printf 'POST /v1/clusters/rb/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n' \
    "$(wc -c <"$TMP/t3")" >&3
for _ in $(seq 1 50); do [ "$(rcvbuf)" = rb131072 ] && break; sleep 0.1; done
check "a body to read: the receive buffer back to 64 KiB" rb131072 "$(rcvbuf)"
cat "$TMP/t3" >&3
check "a publish on the same connection" 201 "$(status_of)"
check "queued for the pool: small again" rb8192 "$(rcvbuf)"
exec 3>&-
# libmicrohttpd's threads: as many as the cores, at most --threads
cores=$(getconf _NPROCESSORS_ONLN)
has "network threads" "$TMP/server.log" "2 threads, $((cores < 2 ? cores : 2)) on the network"
rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
finish
