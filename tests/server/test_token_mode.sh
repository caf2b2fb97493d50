#!/usr/bin/env bash
# test_token_mode.sh — a token file others can read, or its group can change, is refused as ssh
# refuses such a key: at start with exit 2 and the reason; on SIGHUP the old tokens stay and the
# log says why. 0600 and 0640 (a group that only reads, as docs/OPERATIONS.md sets up) are served.
# usage: test_token_mode.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
TOK=0123456789abcdef0123
printf 'ops:%s\n' "$TOK" >"$TMP/tokens"
topo 3 >"$TMP/t3"
publish() { req POST /v1/clusters/m/versions -H "Authorization: Bearer $TOK" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/t3"; }

for mode in 666 644 604 620; do
    chmod "$mode" "$TMP/tokens"
    "$RKD" --listen 127.0.0.1:0 --db "$TMP/db$mode" --token-file "$TMP/tokens" 2>"$TMP/err" &
    pid=$!
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    wait "$pid"
    check "mode $mode: exit 2" 2 "$?"
    has "mode $mode: says why" "$TMP/err" "has mode 0$mode"
done

chmod 640 "$TMP/tokens"
rk_start --token-file "$TMP/tokens"
check "mode 640: publish" 201 "$(publish)"
chmod 666 "$TMP/tokens"
kill -HUP "$PID"
for _ in $(seq 1 50); do grep -q "tokens not reloaded" "$TMP/server.log" && break; sleep 0.1; done
has "SIGHUP with mode 666: refused" "$TMP/server.log" "tokens not reloaded, the old ones stay"
has "SIGHUP with mode 666: says why" "$TMP/server.log" "has mode 0666"
check "the old tokens stay" 201 "$(publish)"
chmod 600 "$TMP/tokens"
kill -HUP "$PID"
for _ in $(seq 1 50); do grep -q "tokens reloaded" "$TMP/server.log" && break; sleep 0.1; done
has "SIGHUP with mode 600: reloaded" "$TMP/server.log" "SIGHUP: tokens reloaded"
rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
finish
