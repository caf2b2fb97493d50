#!/usr/bin/env bash
# test_get_body.sh — a body on a GET, HEAD or DELETE is refused by its headers (400, closed) and
# never buffered: 50 connections each sending 8 MiB to GET /healthz grow the server's RSS by
# less than 64 MiB (before: by about 400 MiB, one --max-body buffer per connection).
# usage: test_get_body.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
RAW="$(dirname "$0")/raw_http.py"
rk_start
kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$PID/status"; }

for m in GET HEAD DELETE; do
    printf '%s /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789' "$m" |
        "$RAW" "$PORT" --wait 3 >"$TMP/answer"
    check "$m with a body: 400" "HTTP/1.1 400 Bad Request" "$(head -1 "$TMP/answer" | tr -d '\r')"
    check "$m with a body: closed" "--closed" "$(tail -1 "$TMP/answer")"
done
printf 'GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' |
    "$RAW" "$PORT" --wait 3 >"$TMP/answer"
check "GET with chunks: 400" "HTTP/1.1 400 Bad Request" "$(head -1 "$TMP/answer" | tr -d '\r')"
check "GET with Content-Length: 0" 200 "$(req GET /healthz -H 'Content-Length: 0')"

# every connection sends all but the last byte of its body, then waits for the others: what the
# server holds for them all is measured at that moment
before=$(kib VmRSS)
held=$(python3 - "$PORT" "$PID" <<'PY'
import socket, sys, threading
port, pid, conns, size = int(sys.argv[1]), sys.argv[2], 50, 8 << 20
head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size
body = b"a" * (size - 1)
all_sent = threading.Barrier(conns + 1, timeout=60)
def one():
    s = None
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(head + body)
    except OSError:
        pass  # refused mid-body: the server closed the connection, as it should
    all_sent.wait()
    all_sent.wait()  # the RSS was read
    if s:
        s.close()
threads = [threading.Thread(target=one) for _ in range(conns)]
for t in threads: t.start()
all_sent.wait()
with open("/proc/%s/status" % pid) as f:
    print(next(l.split()[1] for l in f if l.startswith("VmRSS:")))
all_sent.wait()
for t in threads: t.join(30)
PY
)
growth=$(((held - before) / 1024))
echo "RSS before $((before / 1024)) MiB, with 50 connections each 8 MiB into a GET body $((held / 1024)) MiB (+$growth MiB)"
if [ "$growth" -lt 64 ]; then ok; else bad "RSS grew by $growth MiB (limit 64)"; fi
check "healthz after the flood" 200 "$(req GET /healthz)"
rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
finish
