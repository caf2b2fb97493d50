#!/usr/bin/env bash
# bench_fanout.sh — the fleet fan-out measured against nginx (issue 56; docs/PERFORMANCE.md, "The
# fan-out against nginx"), loopback only, in one run.
#
# usage: bench_fanout.sh BUILD_DIR     (a Release build with the targets ringkeeperd and rk_fleet)
#
# Each round runs, for --header-buffer 4096 and for the server's default, a pair, in alternate
# order from round to round:
#   ring   ringkeeperd (--threads 2) with RK_FLEET_CLIENTS (default 10000) clients long-polling one
#          cluster, each with its own RK-Client id, then one activation (tests/load/rk_fleet, no
#          refusers): the time until GET .../clients counts every client holding the new version,
#          the server's CPU over it per client, and its RSS per watching client after the wave;
#   nginx  nginx (RK_NGINX_WORKERS workers, default 2, the cores; sendfile, access log on) serving
#          the ring document that server sent (its bytes, so its size) as a static file; the same
#          fleet fetches it, each client on a connection of its own, then the file is replaced and
#          every client revalidates it with If-None-Match on its kept connection (rk_fleet
#          --peer-file): the time to the last full 200, and nginx's CPU over it per client.
# and prints each pair's figures, then min / median / max over the rounds (RK_FANOUT_ROUNDS,
# default 5) of each figure and of the ratio ring / nginx of each pair. Exit 1 when a run of
# rk_fleet failed one of its checks (every client answered and counted); times are never checked.
# 77 (skipped) without nginx or with a hard descriptor limit under RK_FLEET_CLIENTS + 512. The ctest
# load_fanout runs it with 500 clients and one round for those checks alone.
set -u
if [ $# -ne 1 ] || [ ! -x "$1/server/ringkeeperd" ] || [ ! -x "$1/tests/load/rk_fleet" ]; then
    echo "usage: $0 BUILD_DIR (with server/ringkeeperd and tests/load/rk_fleet built)" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
. "$(dirname "$0")/../server/lib.sh" "$BUILD/server/ringkeeperd"
FLEET=$BUILD/tests/load/rk_fleet
N=${RK_FLEET_CLIENTS:-10000}
ROUNDS=${RK_FANOUT_ROUNDS:-5}
WORKERS=${RK_NGINX_WORKERS:-2}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "SKIP: nginx is not installed (deploy/install-deps.sh)"; exit 77; }
# One descriptor per client here, in the server and in an nginx worker (test_fleet.sh).
need=$((N + 512))
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$need" ]; then
    echo "SKIP: ulimit -Hn is $(ulimit -Hn), under the $need descriptors $N clients need"
    exit 77
fi
ulimit -n "$need"
NGINX_PID=
nginx_stop() {
    [ -n "$NGINX_PID" ] || return 0
    kill -QUIT "$NGINX_PID" 2>/dev/null # graceful: the workers leave with the master
    for _ in $(seq 1 100); do
        kill -0 "$NGINX_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$NGINX_PID" 2>/dev/null
    wait "$NGINX_PID" 2>/dev/null
    NGINX_PID=
}
trap 'nginx_stop; rk_cleanup' EXIT

# nginx_start: nginx on a free loopback port ($NGINX_PORT) serving $TMP/www, its prefix in
# $TMP/nginx; waits (10 s at most) for it to answer.
nginx_start() {
    local user=
    [ "$(id -u)" = 0 ] && user="user root;" # its workers would be nobody, who cannot read $TMP
    NGINX_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$TMP/nginx"
    cat >"$TMP/nginx/nginx.conf" <<CONF
daemon off;
$user
worker_processes $WORKERS;
worker_rlimit_nofile $need;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log;
events { worker_connections $need; }
http {
    access_log $TMP/nginx/access.log;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    default_type application/json;
    client_body_temp_path $TMP/nginx;
    proxy_temp_path $TMP/nginx;
    fastcgi_temp_path $TMP/nginx;
    uwsgi_temp_path $TMP/nginx;
    scgi_temp_path $TMP/nginx;
    server { listen 127.0.0.1:$NGINX_PORT backlog=$need; root $TMP/www; }
}
CONF
    "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" 2>"$TMP/nginx/stderr" &
    NGINX_PID=$!
    for _ in $(seq 1 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT/ring")" = 200 ] &&
            return 0
        sleep 0.1
    done
    echo "nginx did not start:"; cat "$TMP/nginx/stderr" "$TMP/nginx/error.log"; exit 1
}

# ring_run ROUND BUFFER: the ringkeeperd side; BUFFER "" is the server's default. Keeps the ring
# document the fleet was sent in $TMP/www/ring and its figures in $TMP/figures.
ring_run() {
    local out=$TMP/ring-$1-${2:-default}.out code
    rk_start --threads 2 --max-connections "$((N + 64))" --max-polls "$N" \
        --max-connections-per-address "$need" ${2:+--header-buffer "$2"}
    topo 3 >"$TMP/t"
    check "publish v1" 201 "$(req POST '/v1/clusters/fleet/versions?activate=true' \
        --data-binary @"$TMP/t")"
    echo "load before: $(cat /proc/loadavg)" >"$out"
    "$FLEET" --url "$BASE" --cluster fleet --clients "$N" --pid "$PID" \
        --rss-per-client 1073741824 >>"$out" 2>&1
    code=$?
    mkdir -p "$TMP/www"
    curl -s -o "$TMP/www/ring" "$BASE/v1/clusters/fleet/ring"
    rk_stop
    check "rk_fleet, round $1, --header-buffer ${2:-default}" 0 "$code"
    check "ringkeeperd stopped cleanly" 0 "$STOP_CODE"
    sed 's/^/  ring  | /' "$out"
    local ms us rss
    ms=$(sed -n 's/.*counts every client holding it.* after \([0-9.]*\) ms;.*/\1/p' "$out")
    us=$(sed -n 's/.*the server.s CPU meanwhile [0-9]* ms, \([0-9.]*\) us per client.*/\1/p' "$out")
    rss=$(sed -n 's/.*after the wave: \([0-9]*\) bytes per client.*/\1/p' "$out")
    echo "${2:-default} $1 ring_ms ${ms:-nan}" >>"$TMP/figures"
    echo "${2:-default} $1 ring_cpu_us ${us:-nan}" >>"$TMP/figures"
    echo "${2:-default} $1 rss_bytes ${rss:-nan}" >>"$TMP/figures"
}

# nginx_run ROUND BUFFER: the peer, with the document ring_run kept.
nginx_run() {
    local out=$TMP/nginx-$1-${2:-default}.out code ms us
    nginx_start
    echo "load before: $(cat /proc/loadavg)" >"$out"
    "$FLEET" --url "http://127.0.0.1:$NGINX_PORT" --peer-file "$TMP/www/ring" --clients "$N" \
        --pid "$NGINX_PID" >>"$out" 2>&1
    code=$?
    nginx_stop
    check "rk_fleet --peer-file, round $1" 0 "$code"
    sed 's/^/  nginx | /' "$out"
    ms=$(sed -n 's/.*the last full 200 .* after \([0-9.]*\) ms;.*/\1/p' "$out")
    us=$(sed -n 's/.*nginx.s CPU meanwhile [0-9]* ms, \([0-9.]*\) us per client.*/\1/p' "$out")
    echo "${2:-default} $1 nginx_ms ${ms:-nan}" >>"$TMP/figures"
    echo "${2:-default} $1 nginx_cpu_us ${us:-nan}" >>"$TMP/figures"
}

echo "bench_fanout: $N clients, $ROUNDS rounds, nginx $("$NGINX" -v 2>&1 | sed 's/.*\///') with" \
    "$WORKERS workers, $(nproc) cores; load $(cat /proc/loadavg)"
: >"$TMP/figures"
for round in $(seq 1 "$ROUNDS"); do
    for buffer in 4096 ""; do
        echo "== round $round, --header-buffer ${buffer:-default (16384)}"
        # ringkeeperd first in odd rounds (the first has no document for nginx yet)
        if [ $((round % 2)) = 1 ]; then
            ring_run "$round" "$buffer"
            nginx_run "$round" "$buffer"
        else
            nginx_run "$round" "$buffer"
            ring_run "$round" "$buffer"
        fi
        awk -v b="${buffer:-default}" -v r="$round" '$1 == b && $2 == r { v[$3] = $4 }
            END { if (v["nginx_ms"] > 0) print b, r, "ratio", v["ring_ms"] / v["nginx_ms"] }' \
            "$TMP/figures" >>"$TMP/figures"
        echo "ratio ring / nginx: $(tail -1 "$TMP/figures" | awk '$3 == "ratio" { printf "%.2fx", $4 }')"
    done
done

# min / median / max of each figure over the rounds, the ratios of the pairs among them
echo "== summary, $N clients, $ROUNDS rounds (load now $(cat /proc/loadavg))"
for buffer in 4096 default; do
    for name in ring_ms nginx_ms ratio ring_cpu_us nginx_cpu_us rss_bytes; do
        awk -v b="$buffer" -v n="$name" '$1 == b && $3 == n { print $4 }' "$TMP/figures" | sort -g | awk -v b="$buffer" -v n="$name" '{ v[NR] = $1 }
            END { if (NR) printf "--header-buffer %-7s %-13s min %10.2f  median %10.2f  max %10.2f  (%d)\n",
                  b, n, v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR], NR }'
    done
done
finish
