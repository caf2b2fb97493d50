#!/usr/bin/env bash
# bench_server.sh — load figures of ringkeeperd with wrk (docs/PERFORMANCE.md, "Server").
#
# usage: bench_server.sh RINGKEEPERD [--threads N] [--duration SECONDS] [--only NAME,...]
#
# Builds nothing: give it a ringkeeperd (measure a Release build). It starts the server on a free
# loopback port with a temporary database, publishes and activates a topology of 100 nodes x 160
# vnodes (version 1) and stages a second one with node n99 replaced by n100 (version 2), then runs
# wrk, each run for a fixed time, against:
#   ring 200       GET /v1/clusters/bench/ring
#   ring 304       the same with If-None-Match: the ring's ETag
#   plan           GET /v1/clusters/bench/plan?from=1&to=2 (JSON with its arc list)
#   plan no arcs   the same with &arcs=false
#   publish        POST /v1/clusters/bench-pub/versions with the 100-node body (tests/bench/publish.lua)
#   nginx_200      the peer of ring 200: nginx (2 workers, sendfile, access log on) serving the same
#                  bytes as a static file, in the same run
#   ring_close, nginx_close  both again with "Connection: close" (a connection per request)
#   ring_5mb, nginx_5mb      both with a ring of 85,000 nodes (vnode_factor 16), 5.0 MB
# and prints a summary table (--only ring_200,publish runs just those) with each peer's ratio. A
# figure with a peer runs twice, the peers' second round in the reverse order, and its ratio is of
# the means. The server, nginx and every wrk run stop before the script exits.
#
# Environment: RK_WRK_THREADS (default 2) and RK_READ_CONNS (default 32) for the reads,
# RK_PUB_CONNS (default 4) for the publishes: SQLite takes one writer at a time.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RINGKEEPERD [--threads N] [--duration SECONDS] [--only NAME,...]" >&2
    exit 2
fi
RKD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
SERVER_THREADS=4
DURATION=10
ONLY=ring_200,nginx_200,ring_close,nginx_close,ring_5mb,nginx_5mb,ring_304,plan,plan_no_arcs,publish
while [ $# -gt 0 ]; do
    case $1 in
    --threads) SERVER_THREADS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "$0: unknown argument $1" >&2; exit 2 ;;
    esac
done
WRK_THREADS=${RK_WRK_THREADS:-2}
READ_CONNS=${RK_READ_CONNS:-32}
PUB_CONNS=${RK_PUB_CONNS:-4}
HERE=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { echo "$0: wrk is not installed (Debian: wrk)" >&2; exit 2; }
command -v curl >/dev/null || { echo "$0: curl is not installed" >&2; exit 2; }

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "$0: nginx is not installed (Debian: nginx)" >&2; exit 2; }

TMP=$(mktemp -d)
PID=
NGINX_PID=
cleanup() {
    if [ -n "$NGINX_PID" ]; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -TERM "$PID" 2>/dev/null
        for _ in $(seq 1 50); do
            kill -0 "$PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# topo N [REPLACE_LAST]: N nodes n0..n(N-1) of 160 vnodes; with REPLACE_LAST, n(N-1) is nN instead.
topo() {
    local n=$1 nodes= i id
    for i in $(seq 0 $((n - 1))); do
        id=$i
        [ $# -gt 1 ] && [ "$i" -eq $((n - 1)) ] && id=$n
        nodes="$nodes${nodes:+,}{\"id\":\"n$id\",\"addr\":\"10.0.$((id / 256)).$((id % 256)):11211\",\"weight\":1}"
    done
    printf '{"hash":"fnv1a_32","vnode_factor":160,"nodes":[%s]}' "$nodes"
}

# big_topo N: N nodes of vnode_factor 16 (a large ring document)
big_topo() {
    awk -v n="$1" 'BEGIN {
        printf "{\"hash\":\"xxh3_64\",\"vnode_factor\":16,\"nodes\":["
        for (i = 0; i < n; i++)
            printf "%s{\"id\":\"node-%06d\",\"addr\":\"10.%d.%d.%d:11211\",\"weight\":1}",
                i ? "," : "", i, int(i / 65536), int(i / 256) % 256, i % 256
        printf "]}" }'
}

# Start the server; stderr (one log line per request) goes to a file, as a deployment would keep it.
"$RKD" --listen 127.0.0.1:0 --db "$TMP/ringkeeper.db" --threads "$SERVER_THREADS" \
    2>"$TMP/server.log" &
PID=$!
PORT=
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/server.log" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$PORT" ]; then
    echo "ringkeeperd did not start:" >&2
    cat "$TMP/server.log" >&2
    exit 1
fi
BASE=http://127.0.0.1:$PORT

status() { # status METHOD URL [curl args...]: the HTTP status
    local method=$1 url=$2
    shift 2
    curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X "$method" "$@" "$url"
}
expect() { # expect WANT GOT WHAT
    if [ "$1" != "$2" ]; then
        echo "$0: $3: want HTTP $1, got $2" >&2
        exit 1
    fi
}

topo 100 >"$TMP/v1.json"
topo 100 replace >"$TMP/v2.json"
J=(-H 'Content-Type: application/json')
expect 201 "$(status POST "$BASE/v1/clusters/bench/versions?activate=true" "${J[@]}" \
    --data-binary @"$TMP/v1.json")" "publish and activate version 1"
expect 201 "$(status POST "$BASE/v1/clusters/bench/versions" "${J[@]}" \
    --data-binary @"$TMP/v2.json")" "publish version 2"
RING=$BASE/v1/clusters/bench/ring
PLAN="$BASE/v1/clusters/bench/plan?from=1&to=2"
expect 200 "$(status GET "$RING")" "GET ring"
TAG=$(curl -s -D - -o /dev/null --max-time 30 "$RING" | tr -d '\r' | sed -n 's/^etag: *//Ip')
expect 304 "$(status GET "$RING" -H "If-None-Match: $TAG")" "GET ring with If-None-Match"
expect 200 "$(status GET "$PLAN")" "GET plan"
expect 200 "$(status GET "$PLAN&arcs=false")" "GET plan without arcs"
# Keep-alive: the second of two requests on one curl handle must not open a connection.
connects=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' "$RING" "$RING")
if [ "$connects" != "1 0 " ]; then
    echo "$0: the server does not keep connections alive (connections per request: $connects)" >&2
    exit 1
fi
BIG=$BASE/v1/clusters/big/ring
big_topo 85000 >"$TMP/big.json"
expect 201 "$(status POST "$BASE/v1/clusters/big/versions?activate=true" "${J[@]}" \
    --data-binary @"$TMP/big.json")" "publish and activate the 5 MB ring"
mkdir -p "$TMP/www/v1/clusters/bench" "$TMP/www/v1/clusters/big" "$TMP/nginx"
curl -s -o "$TMP/www/v1/clusters/bench/ring" "$RING"
curl -s -o "$TMP/www/v1/clusters/big/ring" "$BIG"
NGINX_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
USER_LINE= # run as root (CI), nginx's workers would be nobody, who cannot read $TMP
[ "$(id -u)" = 0 ] && USER_LINE="user root;"
cat >"$TMP/nginx/nginx.conf" <<CONF
daemon off;
$USER_LINE
worker_processes 2;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log $TMP/nginx/access.log;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/json;
    client_body_temp_path $TMP/nginx;
    proxy_temp_path $TMP/nginx;
    fastcgi_temp_path $TMP/nginx;
    uwsgi_temp_path $TMP/nginx;
    scgi_temp_path $TMP/nginx;
    server { listen 127.0.0.1:$NGINX_PORT; root $TMP/www; }
}
CONF
"$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" 2>"$TMP/nginx/stderr" &
NGINX_PID=$!
for _ in $(seq 1 100); do
    [ "$(status GET "http://127.0.0.1:$NGINX_PORT/v1/clusters/bench/ring")" = 200 ] && break
    sleep 0.1
done
expect 200 "$(status GET "http://127.0.0.1:$NGINX_PORT/v1/clusters/bench/ring")" "nginx's copy"
STATIC=http://127.0.0.1:$NGINX_PORT/v1/clusters
ring_bytes=$(curl -s "$RING" | wc -c)
big_bytes=$(curl -s "$BIG" | wc -c)
plan_bytes=$(curl -s "$PLAN" | wc -c)
plan_small=$(curl -s "$PLAN&arcs=false" | wc -c)

# to_ms VALUE: wrk's "327.00us" / "1.20ms" / "1.02s" in milliseconds
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /m$/) n *= 60000;
        else if (v ~ /s$/) n *= 1000
        printf "%.3f", n }'
}

ROWS=()
# run NAME CONNS [wrk args...] URL: one wrk run of DURATION seconds, its output in $TMP/NAME.out
run() {
    local name=$1 conns=$2
    shift 2
    case ",$ONLY," in *",$name,"*) ;; *) return 0 ;; esac
    echo "== $name: wrk -t$WRK_THREADS -c$conns -d${DURATION}s --latency $*" >&2
    timeout $((DURATION + 30)) wrk -t"$WRK_THREADS" -c"$conns" -d"${DURATION}s" --timeout 10s \
        --latency "$@" >"$TMP/$name.out" 2>&1
    cat "$TMP/$name.out" >&2
    local rps p50 p99 n bad errs
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$TMP/$name.out")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$TMP/$name.out")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$TMP/$name.out")")
    n=$(awk '/requests in/ {print $1}' "$TMP/$name.out")
    bad=$(awk -F: '/Non-2xx or 3xx/ {gsub(/ /, "", $2); print $2}' "$TMP/$name.out")
    errs=$(awk '/Socket errors/ {gsub(/,/, ""); print $4 + $6 + $8 + $10}' "$TMP/$name.out")
    if [ "$name" = publish ]; then
        bad=$(awk '/^publish answers:/ {print $6}' "$TMP/$name.out")
    fi
    ROWS+=("$(printf '%-14s %5s %12s %10s %10s %10s %9s %7s' "$name" "$conns" "$rps" "$p50" "$p99" \
        "$n" "${bad:-0}" "${errs:-0}")")
    [ -n "$rps" ] || return 0 # wrk gave no rate: the row shows it, no ratio counts it
    RPS[$name]=$(awk -v a="${RPS[$name]:-0}" -v b="$rps" 'BEGIN { print a + b }')
    RUNS[$name]=$((${RUNS[$name]:-0} + 1))
}
declare -A RPS RUNS # requests/s summed over a figure's runs, and how many
# ratio OURS PEER: the mean requests/s of ours over the peer's, when both ran
ratio() {
    [ -n "${RPS[$1]:-}" ] && [ -n "${RPS[$2]:-}" ] || return 0
    RATIOS+=("$(awk -v a="${RPS[$1]}" -v na="${RUNS[$1]}" -v b="${RPS[$2]}" -v nb="${RUNS[$2]}" \
        -v x="$1" -v y="$2" 'BEGIN { printf "%-12s / %-12s %6.2fx", x, y, (a / na) / (b / nb) }')")
}
RATIOS=()

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
# peered NAME: one run of a figure that has a peer
peered() {
    case $1 in
    ring_200) run ring_200 "$READ_CONNS" "$RING" ;;
    nginx_200) run nginx_200 "$READ_CONNS" "$STATIC/bench/ring" ;;
    ring_close) run ring_close "$READ_CONNS" -H "Connection: close" "$RING" ;;
    nginx_close) run nginx_close "$READ_CONNS" -H "Connection: close" "$STATIC/bench/ring" ;;
    ring_5mb) run ring_5mb "$READ_CONNS" "$BIG" ;;
    nginx_5mb) run nginx_5mb "$READ_CONNS" "$STATIC/big/ring" ;;
    esac
}
# Ours and nginx's in the same minutes, each twice, the second time in the reverse order (ours,
# nginx's, nginx's, ours): the run after another inherits its TIME_WAIT sockets and the writeback
# of its access log, so neither side always comes second. A ratio is of the two runs' means.
PEERED=(ring_200 nginx_200 ring_close nginx_close ring_5mb nginx_5mb)
for name in "${PEERED[@]}"; do peered "$name"; done
for ((i = ${#PEERED[@]} - 1; i >= 0; i--)); do peered "${PEERED[$i]}"; done
ratio ring_200 nginx_200
ratio ring_close nginx_close
ratio ring_5mb nginx_5mb
run ring_304 "$READ_CONNS" -H "If-None-Match: $TAG" "$RING"
run plan "$READ_CONNS" "$PLAN"
run plan_no_arcs "$READ_CONNS" "$PLAN&arcs=false"
# The read runs logged a few hundred MB; flush them first, or their writeback competes with the
# publishes' fsyncs and lands in the publish latencies.
sync "$TMP/server.log"
export RK_BENCH_BODY=$TMP/v1.json
run publish "$PUB_CONNS" -s "$HERE/publish.lua" \
    "$BASE/v1/clusters/bench-pub/versions"
# Checked after the load, so a wrong answer under load cannot pass unseen.
expect 304 "$(status GET "$RING" -H "If-None-Match: $TAG")" "GET ring with If-None-Match, after"

echo
echo "ringkeeperd --threads $SERVER_THREADS; wrk -t$WRK_THREADS, ${DURATION}s per run, keep-alive;" \
    "ring body $ring_bytes B (5 MB ring: $big_bytes B), plan $plan_bytes B (arcs=false: $plan_small B);" \
    "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %5s %12s %10s %10s %10s %9s %7s\n' figure conns requests/s p50_ms p99_ms requests \
    "not-ok" errors
printf '%s\n' "${ROWS[@]}"
echo "not-ok: answers other than 2xx/3xx (publish: other than 201); errors: wrk's socket errors"
[ ${#RATIOS[@]} -gt 0 ] && printf 'requests/s, ours over the peer: %s\n' "${RATIOS[@]}"
