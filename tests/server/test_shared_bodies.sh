#!/usr/bin/env bash
# test_shared_bodies.sh — what a big ring costs its readers (review finding 3):
# - 300 connections that ask for a 100000-node ring and never read share the cached document: the
#   server's RSS grows by less than 100 MiB while they wait (before: +1.6 GiB, one copy each) and is
#   back within 64 MiB of its start once they close (before: the copies stayed);
# - a client that never reads is cut after --idle-timeout;
# - a second GET of a big version is answered from the cache (ringkeeper_document_cache_hits_total);
# - a NUL in Authorization is refused with 400 (libmicrohttpd cuts the value there).
# usage: test_shared_bodies.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
RAW="$(dirname "$0")/raw_http.py"
CONNS=300
IDLE=3
TOKEN=$(printf 's%.0s' $(seq 1 32))
echo "alice:$TOKEN" >"$TMP/tokens"
rk_start --idle-timeout $IDLE --max-connections 2000 --max-connections-per-address 2000 \
    --token-file "$TMP/tokens"
kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$PID/status"; }
hits() {
    curl -s "$BASE/metrics" | awk '$1 == "ringkeeper_document_cache_hits_total" {print $2}'
}

python3 - >"$TMP/big.json" <<'PY'
import json
nodes = [{"id": "node-%06d" % i, "addr": "10.%d.%d.%d:11211" % (i >> 16, (i >> 8) & 255, i & 255),
          "weight": 1} for i in range(100000)]
print(json.dumps({"hash": "fnv1a_32", "vnode_factor": 40, "nodes": nodes}))
PY
check "publish 100000 nodes" 201 "$(req POST '/v1/clusters/big/versions?activate=true' \
    -H "Authorization: Bearer $TOKEN" --data-binary @"$TMP/big.json")"
check "the ring" 200 "$(req GET /v1/clusters/big/ring)"
ring_mib=$(($(stat -c %s "$TMP/body") >> 20))

# ---- slow readers: each asks for the ring with a 4 KiB receive buffer and never reads ----
start=$(kib VmRSS)
python3 - "$PORT" "$PID" "$CONNS" >"$TMP/rss" <<'PY'
import socket, sys, time
port, pid, conns = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def rss():
    with open("/proc/%s/status" % pid) as f:
        return int(next(l.split()[1] for l in f if l.startswith("VmRSS:")))
socks, peak = [], 0
for _ in range(conns):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /v1/clusters/big/ring HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
for _ in range(10):  # the server answers them all within a second or so: watch its peak
    time.sleep(0.2)
    peak = max(peak, rss())
for s in socks:
    s.close()
print(peak)
PY
peak=$(cat "$TMP/rss")
sleep 2
after=$(kib VmRSS)
echo "ring ${ring_mib} MiB; RSS at start $((start >> 10)) MiB, with $CONNS slow readers" \
    "$((peak >> 10)) MiB, after they closed $((after >> 10)) MiB"
if [ $(((peak - start) >> 10)) -lt 100 ]; then ok; else bad "slow readers: +$(((peak - start) >> 10)) MiB (limit 100)"; fi
if [ $(((after - start) >> 10)) -lt 64 ]; then ok; else bad "after: +$(((after - start) >> 10)) MiB (limit 64)"; fi
check "healthz after the slow readers" 200 "$(req GET /healthz)"

# ---- a never-reading client is cut after the idle timeout ----
python3 - "$PORT" "$IDLE" >"$TMP/cut" <<'PY'
import socket, sys, time
port, idle = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.sendall(b"GET /v1/clusters/big/ring HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(idle + 3)  # never read in the meantime: the server's sends stall, then it gives up
s.settimeout(10)
got, t0 = 0, time.time()
try:
    while time.time() - t0 < 10:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    print("cut after %d bytes" % got if time.time() - t0 < 10 else "still open")
except (ConnectionResetError, socket.timeout) as e:
    print("cut: %s" % type(e).__name__)
PY
has "a client that never reads is cut after --idle-timeout" "$TMP/cut" "cut"

# ---- GET of a big version: the second one is a cache hit ----
h0=$(hits)
check "GET version 1" 200 "$(req GET /v1/clusters/big/versions/1)"
h1=$(hits)
check "GET version 1 again" 200 "$(req GET /v1/clusters/big/versions/1)"
cp "$TMP/body" "$TMP/second"
h2=$(hits)
check "the first GET of a version is a miss" "$h0" "$h1"
check "the second GET of a version is a cache hit" "$((h1 + 1))" "$h2"
check "the cached document is the same" "" "$(req GET /v1/clusters/big/versions/1 >/dev/null; cmp "$TMP/body" "$TMP/second")"
# an activation changes versions' "state": the cached documents of the cluster are forgotten
check "publish v2" 201 "$(req POST '/v1/clusters/big/versions?activate=true' \
    -H "Authorization: Bearer $TOKEN" --data-binary "$(topo 3)")"
check "GET version 1 after v2 was activated" 200 "$(req GET /v1/clusters/big/versions/1)"
has "version 1 is retired now" "$TMP/body" '"state":"retired"'

# ---- a NUL in Authorization ----
printf 'POST /v1/clusters/n/versions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\0junk\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}' \
    "$TOKEN" | "$RAW" "$PORT" --wait 3 >"$TMP/answer"
check "NUL in Authorization: 400" "HTTP/1.1 400 Bad Request" "$(head -1 "$TMP/answer" | tr -d '\r')"
has "NUL in Authorization: named" "$TMP/answer" '"field":"Authorization"'
check "NUL in Authorization: closed" "--closed" "$(tail -1 "$TMP/answer")"
printf 'POST /v1/clusters/n/versions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}' \
    "$TOKEN" | "$RAW" "$PORT" --wait 3 >"$TMP/answer"
check "without the NUL the token passes (400 for the body)" "HTTP/1.1 400 Bad Request" \
    "$(head -1 "$TMP/answer" | tr -d '\r')"
has "without the NUL: the body is blamed" "$TMP/answer" '"code":"invalid_topology"'

rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
finish
