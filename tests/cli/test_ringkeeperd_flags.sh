#!/usr/bin/env bash
# test_ringkeeperd_flags.sh — ringkeeperd's command line as an operator meets it: a --listen that
# is not HOST:PORT of 0..65535 is refused with exit 2 and the reason (not wrapped to another port,
# not exit 1), and a port in use is one line of ours, without libmicrohttpd's "Failed to bind to
# port 0". The messages are compared whole. Also the request log line's time and client address.
# Also --version: the project's version, and --store's backends by scheme.
# usage: test_ringkeeperd_flags.sh RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/../server/lib.sh" "$1"
version=$(sed -n 's/^project(ringkeeper VERSION \([0-9.]*\).*/\1/p' "$2/CMakeLists.txt")
check "--version" "ringkeeperd $version" "$("$RKD" --version)"

# refused NAME CODE STDERR FLAGS...: ringkeeperd FLAGS exits CODE with exactly STDERR, at once
refused() {
    local name=$1 want=$2 err=$3
    shift 3
    timeout 10 "$RKD" --db "$TMP/flags.db" "$@" >"$TMP/out" 2>"$TMP/err"
    check "$name: exit code" "$want" "$?"
    check "$name: stderr" "$err" "$(cat "$TMP/err")"
}

refused "port out of range" 2 'ringkeeperd: --listen: the port must be 0..65535, got "70000"' \
    --listen 127.0.0.1:70000
refused "port not a number" 2 'ringkeeperd: --listen: the port must be 0..65535, got "http"' \
    --listen 127.0.0.1:http
refused "no host" 2 \
    'ringkeeperd: --listen: ":7072" has no host: give 127.0.0.1:7072 (this machine only) or 0.0.0.0:7072 (every interface)' \
    --listen :7072
refused "no port" 2 \
    'ringkeeperd: --listen: must be HOST:PORT (e.g. 127.0.0.1:7070 or [::1]:7070), got "7072"' \
    --listen 7072
refused "header buffer below its range" 2 \
    'ringkeeperd: --header-buffer: must be 4096..65536 bytes, got "1024"' --header-buffer 1024
check "no database created by flags refused before start" 0 "$(ls "$TMP" | grep -c flags.db)"
refused "host that does not resolve" 2 \
    'ringkeeperd: --listen: "nosuch.invalid:7070" is not HOST:PORT (e.g. 127.0.0.1:7070 or [::1]:7070) of this machine' \
    --listen nosuch.invalid:7070

# --store names its backend by its scheme (store_open.c's registry): sqlite:PATH is the SQLite
# file --db PATH is; a scheme no backend has is refused
timeout 10 "$RKD" --store redis://127.0.0.1:6379 >"$TMP/out" 2>"$TMP/err"
check "--store of no backend: exit code" 2 "$?"
check "--store of no backend: stderr" \
    'ringkeeperd: --store: must be sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...][/prefix] (etcds:// for TLS), got "redis://127.0.0.1:6379"' \
    "$(cat "$TMP/err")"
rk_start --store "sqlite:$TMP/by-scheme.db"
check "--store sqlite:PATH serves" 200 "$(req GET /healthz)"
check "... from that file" 1 "$(ls "$TMP" | grep -cx by-scheme.db)"
rk_stop
check "... and stops cleanly" 0 "$STOP_CODE"

rk_start
check "healthz" 200 "$(req GET /healthz)"
for _ in $(seq 1 50); do grep -q ' GET /healthz ' "$TMP/server.log" && break; sleep 0.1; done
check "request log line: RFC 3339 UTC time with ms, then the client address" 1 \
    "$(grep -Ec '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z 127\.0\.0\.1 GET /healthz 200 ' "$TMP/server.log")"
refused "port in use" 1 "ringkeeperd: cannot listen on 127.0.0.1:$PORT: the address is in use or not of this machine" \
    --listen "127.0.0.1:$PORT"
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
finish
