#!/usr/bin/env bash
# test_lockout.sh — attackers cannot lock an operator out (issue 52, item 4): 1280 slowloris
# connections from 127.0.0.2..6 (one header byte every 10 s) had answered 0 of 112 probes of
# /healthz and refused every publish; 600 clients looping on chunked 8 MiB bodies had left 368
# requests closed unanswered. With ringkeeperd's defaults, every probe and every publish from
# 127.0.0.1 must be answered during each attack (lockout.py prints the latencies: the figures of
# docs/RELIABILITY.md come from it). Then --header-timeout alone: a connection trickling its
# headers is cut once its time is up.
# usage: test_lockout.sh RINGKEEPERD SANITIZED(0|1)
. "$(dirname "$0")/lib.sh" "$1"
LOCKOUT="$(dirname "$0")/lockout.py"
SECS=30
[ "${2:-0}" = 1 ] && SECS=20 # the sanitizers slow the server, not what is checked

rk_start
for attack in slowloris chunked; do
    python3 "$LOCKOUT" "$PORT" "$attack" "$SECS" >"$TMP/$attack" || bad "lockout.py $attack failed"
    echo "$attack: $(tr '\n' ' ' <"$TMP/$attack")"
    read -r _ probes _ answered _ <"$TMP/$attack"
    check "$attack: probes of /healthz sent" yes "$([ "$probes" -ge 10 ] && echo yes)"
    check "$attack: every probe answered" "$probes" "$answered"
    read -r _ publishes _ created _ < <(sed -n 2p "$TMP/$attack")
    check "$attack: every publish created" "$publishes" "$created"
done
# A refused chunked body is refused before a byte of it is read, as a declared length is; the few
# unanswered left are clients whose answer their own reset discarded (they were still sending).
unanswered=$(sed -n 's/.* unanswered=\([0-9]*\).*/\1/p' "$TMP/chunked")
check "chunked: at most a handful closed unanswered" yes "$([ "${unanswered:-0}" -le 20 ] && echo yes)"
grep -q " 503=" "$TMP/chunked" && ok || bad "chunked: no 503 busy: $(cat "$TMP/chunked")"

# --header-timeout 2: a request's headers trickled a byte every 0.3 s are cut after 2 s (the timer
# looks once a second), and a request that comes whole in time is served.
rk_stop
rk_start --header-timeout 2
python3 - "$PORT" >"$TMP/trickle" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
t0, line = time.monotonic(), b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
for i in range(len(line)):
    try:
        s.send(line[i:i + 1])
        s.settimeout(0.3)
        if s.recv(100) == b"":
            break
    except socket.timeout:
        continue
    except OSError:
        break
print("cut after %.1f s" % (time.monotonic() - t0))
PY
after=$(sed -n 's/cut after \([0-9.]*\) s/\1/p' "$TMP/trickle")
check "--header-timeout 2: cut between 2 and 4 s" yes \
    "$(awk -v a="${after:-99}" 'BEGIN { print (a >= 1.9 && a <= 4.5) ? "yes" : "no" }')"
check "a request after it" 200 "$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$BASE/healthz")"
finish
