#!/usr/bin/env bash
# test_drivers.sh — the mover's data-store drivers against real servers: starts two memcached and
# two redis-server (a source and a destination of each) on free loopback ports, runs test_drivers
# against them, and stops them on exit. A third memcached closes connections idle for a second
# (the drivers must reconnect); a sixth port, left closed, is the dead server.
# Skips (77) only when memcached or redis-server is not installed (deploy/install-deps.sh).
# usage: test_drivers.sh TEST_DRIVERS [WRAPPER...]   (WRAPPER: e.g. valgrind --leak-check=full)
set -u
BIN=$1
shift
for tool in memcached redis-server python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: $tool is not installed (deploy/install-deps.sh)"
        exit 77
    fi
done
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

# Free loopback ports from the kernel, held together while picked so that they are distinct.
read -r -a PORTS <<<"$(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)"

# up PORT: something accepts on 127.0.0.1:PORT within 10 s
up() {
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "FAIL: nothing listens on 127.0.0.1:$1" >&2
    return 1
}

# -u: memcached refuses to run as root without it, and ignores it otherwise.
for p in "${PORTS[0]}" "${PORTS[1]}"; do
    memcached -l 127.0.0.1 -p "$p" -U 0 -m 64 -u "$(id -un)" >"$TMP/memcached-$p.log" 2>&1 &
    PIDS+=($!)
done
memcached -l 127.0.0.1 -p "${PORTS[4]}" -U 0 -m 64 -u "$(id -un)" -o idle_timeout=1 \
    >"$TMP/memcached-idle.log" 2>&1 &
PIDS+=($!)
for p in "${PORTS[2]}" "${PORTS[3]}"; do
    redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
        --dbfilename "dump-$p.rdb" >"$TMP/redis-$p.log" 2>&1 &
    PIDS+=($!)
done
for p in "${PORTS[@]:0:5}"; do
    up "$p" || exit 1
done

RKM_MEMCACHED_SRC=127.0.0.1:${PORTS[0]} RKM_MEMCACHED_DST=127.0.0.1:${PORTS[1]} \
    RKM_REDIS_SRC=127.0.0.1:${PORTS[2]} RKM_REDIS_DST=127.0.0.1:${PORTS[3]} \
    RKM_MEMCACHED_IDLE=127.0.0.1:${PORTS[4]} RKM_DEAD=127.0.0.1:${PORTS[5]} "$@" "$BIN"
