#!/usr/bin/env bash
# test_floods.sh — floods that used to take the server's memory or lock everyone out (issue 20):
#  1. bodies: request bodies buffered at once are bounded by --max-bodies (a quarter of it, or
#     --max-body, per address): past it a POST gets 503 busy with Retry-After (before its body is
#     read when it declares its length), while a body no route
#     reads (an unknown path) is dropped unread, and a publish works again once the flood is gone;
#  2. long polls: held polls take none of --max-connections, so /healthz and publishes still work
#     with --max-polls of them held from other addresses; past --max-polls a poll gets 503 busy.
# Clients come from 127.0.0.2..127.0.0.30 (all loopback); every socket is closed before the end.
# usage: test_floods.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
J='Content-Type: application/json'

# 1. bodies: two uploads in flight, each declaring 4 MiB (taken when their headers are in), fill 8
# of 10 MiB; the last eighth is kept for bodies of 640 KiB or less, so a third big one is refused
rk_start --threads 2 --max-body 4194304 --max-bodies 10485760
python3 - "$PORT" >"$TMP/bodies" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
MiB = 1 << 20

def start(source, path, length, send):
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (path, length))
    s.sendall(b"a" * send)
    return s

def status(s):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    lines = head.decode("latin-1").split("\r\n")
    retry = [l for l in lines if l.lower().startswith("retry-after:")]
    return lines[0] + (" " + retry[0] if retry else "")

held = [start("127.0.0.%d" % (2 + i), b"/v1/clusters/x/versions", 4 * MiB, 3 * MiB + MiB // 2)
        for i in range(2)]
time.sleep(0.5)  # the server has read what they sent
third = start("127.0.0.4", b"/v1/clusters/x/versions", 4 * MiB, 0)  # refused before its body
print("a third body:", status(third))
third.close()
chunked = socket.socket()  # no length declared: --max-body is taken, refused before its body
chunked.settimeout(10)
chunked.bind(("127.0.0.6", 0))
chunked.connect(("127.0.0.1", port))
chunked.sendall(b"POST /v1/clusters/x/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
print("a chunked body:", status(chunked))
chunked.close()
unknown = start("127.0.0.5", b"/v1/nothing/here", 4 * MiB, 4 * MiB)
print("an unknown path:", status(unknown))
unknown.close()
for s in held:
    s.close()
PY
cat "$TMP/bodies"
has "past --max-bodies: 503 with Retry-After" "$TMP/bodies" "a third body: HTTP/1.1 503 Service Unavailable Retry-After: 2"
has "past --max-bodies, chunked: 503" "$TMP/bodies" "a chunked body: HTTP/1.1 503 Service Unavailable Retry-After: 2"
has "a body no route reads is not buffered" "$TMP/bodies" "an unknown path: HTTP/1.1 404 Not Found"
topo 3 >"$TMP/t"
ok=
for _ in $(seq 1 50); do # the server sees the flood's connections closed within a moment
    code=$(req POST /v1/clusters/x/versions -H "$J" --data-binary @"$TMP/t")
    [ "$code" = 201 ] && ok=1 && break
    sleep 0.1
done
check "a publish after the flood" 1 "${ok:-0}"
rk_stop
check "stopped by SIGTERM after the body flood" 0 "$STOP_CODE"

# 2. long polls: 40 held from 127.0.0.10..29 (2 each), with room for 8 other connections
rk_start --threads 2 --max-connections 8 --max-polls 40 --max-connections-per-address 4
check "publish+activate v1" 201 "$(req POST '/v1/clusters/lp/versions?activate=true' -H "$J" --data-binary @"$TMP/t")"
check "the ring" 200 "$(req GET /v1/clusters/lp/ring)"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
python3 - "$PORT" "$tag" "$TMP/t" >"$TMP/polls" <<'PY'
import http.client, socket, sys, time
port, tag, topo = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "rb").read()
poll = b"GET /v1/clusters/lp/ring?wait=30 HTTP/1.1\r\nHost: x\r\nIf-None-Match: %s\r\n\r\n" % tag.encode()

def connect(source):
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s

def answer(s):
    try:
        got = s.recv(4096)
    except OSError:
        return "closed"
    return got.split(b"\r\n", 1)[0].decode("latin-1") or "closed"

def waiting():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    return [l for l in text.splitlines() if l.startswith("ringkeeper_long_polls_waiting")][0]

polls = []
for i in range(40):  # one at a time: a connection counts as a short one until its poll is held
    s = connect("127.0.0.%d" % (10 + i // 2))
    s.sendall(poll)
    polls.append(s)
    for _ in range(100):
        if waiting().endswith(" %d" % (i + 1)):
            break
        time.sleep(0.02)
print("held:", waiting())
extra = connect("127.0.0.30")
extra.sendall(poll)
extra.settimeout(3)
t0 = time.monotonic()
print("a poll past --max-polls: %s after %d ms" % (answer(extra), (time.monotonic() - t0) * 1000))
extra.close()
for n in range(5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    t0 = time.monotonic()
    c.request("GET", "/healthz")
    print("healthz with the polls held: %d in %s" % (c.getresponse().status,
          "time" if time.monotonic() - t0 < 1 else "%.1f s" % (time.monotonic() - t0)))
    c.close()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("POST", "/v1/clusters/lp/versions?activate=true", body=topo,
          headers={"Content-Type": "application/json"})
print("publish with the polls held:", c.getresponse().status)
c.close()
woken = [answer(s) for s in polls]
print("polls woken by the activation: %d of 40 with 200" % woken.count("HTTP/1.1 200 OK"))
for s in polls:
    s.close()
PY
cat "$TMP/polls"
has "40 polls held" "$TMP/polls" "held: ringkeeper_long_polls_waiting 40"
has "past --max-polls: 503 at once" "$TMP/polls" "a poll past --max-polls: HTTP/1.1 503 Service Unavailable after"
check "healthz answered in time, 5 of 5, with the poll share full" 5 \
    "$(grep -c 'healthz with the polls held: 200 in time' "$TMP/polls")"
has "publish with the poll share full" "$TMP/polls" "publish with the polls held: 201"
has "every held poll woken" "$TMP/polls" "polls woken by the activation: 40 of 40 with 200"
rk_stop
check "stopped by SIGTERM after the poll flood" 0 "$STOP_CODE"
finish
