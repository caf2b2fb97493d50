#!/usr/bin/env bash
# servers.sh — sourced by the mover's test scripts (test_drivers.sh, test_copy.sh): memcached and
# redis-server on free loopback ports, stopped when the script exits. Exits 77 (skip) when
# memcached, redis-server or python3 is not installed (deploy/install-deps.sh).
#   rkm_ports N            N distinct free loopback ports into the array PORTS
#   rkm_memcached PORT...  a memcached on PORT; more arguments go to memcached (-o idle_timeout=1)
#   rkm_redis PORT         a redis-server on PORT that saves nothing
#   rkm_up PORT...         returns once something accepts on each PORT (10 s each, else fails)
for tool in memcached redis-server python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: $tool is not installed (deploy/install-deps.sh)"
        exit 77
    fi
done
RKM_TMP=$(mktemp -d)
RKM_PIDS=()
rkm_cleanup() {
    for pid in "${RKM_PIDS[@]}"; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    rm -rf "$RKM_TMP"
}
trap rkm_cleanup EXIT

# Free ports from the kernel, held together while picked so that they are distinct.
# shellcheck disable=SC2034 # PORTS is what the sourcing script reads
rkm_ports() {
    read -r -a PORTS <<<"$(python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)"
}

# -u: memcached refuses to run as root without it, and ignores it otherwise.
rkm_memcached() {
    local port=$1
    shift
    memcached -l 127.0.0.1 -p "$port" -U 0 -m 64 -u "$(id -un)" "$@" \
        >"$RKM_TMP/memcached-$port.log" 2>&1 &
    RKM_PIDS+=($!)
}

rkm_redis() {
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --dir "$RKM_TMP" \
        --dbfilename "dump-$1.rdb" >"$RKM_TMP/redis-$1.log" 2>&1 &
    RKM_PIDS+=($!)
}

rkm_up() {
    local port
    for port in "$@"; do
        for _ in $(seq 1 100); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue 2
            sleep 0.1
        done
        echo "FAIL: nothing listens on 127.0.0.1:$port" >&2
        return 1
    done
}
