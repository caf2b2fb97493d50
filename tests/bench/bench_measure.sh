#!/usr/bin/env bash
# bench_measure.sh — figures of `ringkeeper measure` (docs/PERFORMANCE.md, "Measuring a fleet's
# load", and docs/LOAD.md) on a fleet of a million keys, against the mover's own scan in the same
# run.
#
# usage: bench_measure.sh BUILD_DIR [--keys N] [--stores memcached,redis] [--runs R]
#
# BUILD_DIR is a Release build: its client/ringkeeper. For each store it starts eight data servers
# on free loopback ports (tests/mover/servers.sh; Redis under an LFU policy, so that measure reads
# its counters too), fills them with N keys (default 1,000,000) of skewed sizes placed by an
# 8-node ring (tests/mover/measure_data.py: three hot keys of 900 KB, then 200 KB / k^0.7 down to
# $RK_MEASURE_MIN bytes, 64 here), and runs R times (default 2) each of:
#   scan        the mover's scan alone: measure at a sample rate of 1e-9, which scans every key
#               with the mover's driver and weighs none (Redis; memcached's scan gives the sizes,
#               so its measure is its scan)
#   rate 0.1    (Redis) a tenth of the keys weighed: MEMORY USAGE and OBJECT FREQ
#   rate 1      every key weighed
# printing for each: the wall time, keys/s, the eight servers' own CPU (user + system, from
# /proc/PID/stat) in seconds and per million keys, and the largest error of a server's bytes in
# the profile against its own count (memcached `stats bytes`; Redis used_memory less its
# baseline before the fill). Every server stops before the script exits.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR [--keys N] [--stores memcached,redis] [--runs R]" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
shift
KEYS=1000000
STORES=memcached,redis
RUNS=2
while [ $# -gt 0 ]; do
    case $1 in
    --keys) KEYS=$2; shift 2 ;;
    --stores) STORES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    *) echo "$0: unknown argument $1" >&2; exit 2 ;;
    esac
done
RK=$BUILD/client/ringkeeper
HERE=$(cd "$(dirname "$0")/../mover" && pwd)
export RK_MEASURE_MIN=${RK_MEASURE_MIN:-64}
# shellcheck source=../mover/servers.sh
. "$HERE/servers.sh"
TMP=$RKM_TMP
TICK=$(getconf CLK_TCK)

node_map() { local i; for i in "${!ADDR[@]}"; do printf 'n%s=%s ' "$i" "${ADDR[$i]}"; done; }
# shellcheck disable=SC2046 # node_map's words are the arguments
data() { /usr/bin/python3 "$HERE/measure_data.py" "$1" "$STORE" $(node_map); }

# cpu_ticks: the user and system ticks of the store's servers so far
cpu_ticks() {
    local pid sum=0 f
    for pid in "${SERVER_PIDS[@]}"; do
        read -r -a f <"/proc/$pid/stat"
        sum=$((sum + f[13] + f[14]))
    done
    echo "$sum"
}

# worst_error PROFILE: the largest |profile - server| / server over the servers, in per cent
worst_error() {
    /usr/bin/python3 - "$1" "$TMP/base" "$TMP/used" <<'PY'
import json, sys
prof = json.load(open(sys.argv[1]))
base = dict(l.split() for l in open(sys.argv[2]))
used = dict(l.split() for l in open(sys.argv[3]))
worst = 0.0
for s in prof["servers"]:
    own = int(used[s["id"]]) - int(base[s["id"]])
    worst = max(worst, abs(s["bytes_estimate"] - own) / own * 100)
print("%.2f" % worst)
PY
}

# one_run LABEL RATE: measure at RATE, one line of figures
one_run() {
    local t0 t1 c0 c1 secs cpu
    c0=$(cpu_ticks)
    t0=$(date +%s.%N)
    "$RK" measure --topology "$TMP/a.json" --sample-rate "$2" --out "$TMP/p.json" 2>/dev/null
    t1=$(date +%s.%N)
    c1=$(cpu_ticks)
    secs=$(/usr/bin/python3 -c "print('%.2f' % ($t1 - $t0))")
    cpu=$(/usr/bin/python3 -c "print('%.2f' % (($c1 - $c0) / $TICK))")
    /usr/bin/python3 -c "
k, s, c = $KEYS, $secs, $cpu
print('| $STORE | $1 | %.2f s | %.0f | %.2f s | %.2f s | %s%% |' % (s, k / s, c, c / k * 1e6, '$(worst_error "$TMP/p.json")'))"
}

one_store() {
    STORE=$1
    rkm_ports 8
    ADDR=()
    SERVER_PIDS=()
    for p in "${PORTS[@]}"; do
        if [ "$STORE" = memcached ]; then rkm_memcached "$p" -m 256; else rkm_redis "$p"; fi
        SERVER_PIDS+=("${RKM_PIDS[-1]}")
        ADDR+=("127.0.0.1:$p")
    done
    rkm_up "${PORTS[@]}"
    if [ "$STORE" = redis ]; then
        for p in "${PORTS[@]}"; do
            redis-cli -p "$p" CONFIG SET maxmemory-policy allkeys-lfu >/dev/null
        done
    fi
    local nodes="" i
    for i in $(seq 0 7); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"${ADDR[$i]}\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":100,"data":"%s","nodes":[%s]}' "$STORE" "$nodes" >"$TMP/a.json"
    seq -f 'm-%g' 0 $((KEYS - 1)) | "$RK" lookup --topology "$TMP/a.json" >"$TMP/own"
    data used >"$TMP/base"
    local t0 t1
    t0=$(date +%s)
    data fill <"$TMP/own"
    t1=$(date +%s)
    data used >"$TMP/used"
    echo "# $STORE: $KEYS keys filled in $((t1 - t0)) s, $(awk '{ s += $2 } END { printf "%.1f MB", s / 1e6 }' "$TMP/used") as the servers count them" >&2
    for _ in $(seq 1 "$RUNS"); do
        if [ "$STORE" = redis ]; then
            one_run "scan alone" 0.000000001
            one_run "rate 0.1" 0.1
        fi
        one_run "rate 1" 1
    done
    for pid in "${SERVER_PIDS[@]}"; do kill "$pid"; wait "$pid" 2>/dev/null || true; done
    RKM_PIDS=() # stopped: the exit's clean-up (servers.sh) has none left to stop
}

echo "| store | run | wall | keys/s | servers' CPU | per 1M keys | worst server's bytes error |"
echo "|---|---|---|---|---|---|---|"
for store in ${STORES//,/ }; do
    one_store "$store"
done
