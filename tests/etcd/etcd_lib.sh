# etcd_lib.sh — three etcd members on loopback for the etcd store's tests: ports picked at test time,
# data in a temporary folder, a leader waited for (bounded), every member stopped by its PID.
# Source it after setting ETCD_TMP (a folder the caller removes) or let it use $TMP; then:
#   etcd_start_cluster        starts members 0 1 2 and waits for a leader; sets ETCD_ENDPOINTS
#                             ("127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2", the --store etcd:// form)
#   etcd_leader               prints the number (0..2) of the member that is leader now
#   etcd_kill N               kill -9 member N (a fault: the others keep their data)
#   etcd_restart N            starts member N again on its ports and data, waits for a leader
#   etcd_stop_cluster         stops every member by PID (also from an EXIT trap; safe twice)
# Ports come from the kernel (bind to port 0), six per cluster, so parallel tests do not collide.
# TLS to clients: set ETCD_SCHEME=https, ETCD_CLIENT_ARGS (etcd's --cert-file ... flags) and
# ETCD_CURL_ARGS (curl's --cacert ... for the health checks) before etcd_start_cluster.

ETCD_TMP=${ETCD_TMP:-$TMP/etcd}
ETCD_PIDS=(0 0 0)
ETCD_CLIENT_PORTS=()
ETCD_PEER_PORTS=()
ETCD_ENDPOINTS=
ETCD_CLUSTER_TOKEN=
ETCD_SCHEME=${ETCD_SCHEME:-http}
ETCD_CLIENT_ARGS=()
ETCD_CURL_ARGS=()

# Free loopback TCP ports from the kernel, printed space-separated; held together while picked so
# they are distinct. A small race remains (another process may take one before etcd binds it):
# etcd_start_cluster retries with new ports when a member fails to start.
etcd_free_ports() {
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

etcd_initial_cluster() {
    local i out=
    for i in 0 1 2; do
        out="$out${out:+,}m$i=http://127.0.0.1:${ETCD_PEER_PORTS[$i]}"
    done
    printf '%s' "$out"
}

# etcd_launch N STATE: member N in the background, its log in $ETCD_TMP/mN.log.
etcd_launch() {
    local n=$1 state=$2 cp=${ETCD_CLIENT_PORTS[$1]} pp=${ETCD_PEER_PORTS[$1]}
    etcd --name "m$n" --data-dir "$ETCD_TMP/m$n.data" \
        --listen-client-urls "$ETCD_SCHEME://127.0.0.1:$cp" \
        --advertise-client-urls "$ETCD_SCHEME://127.0.0.1:$cp" "${ETCD_CLIENT_ARGS[@]}" \
        --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
        --initial-cluster "$(etcd_initial_cluster)" --initial-cluster-state "$state" \
        --initial-cluster-token "$ETCD_CLUSTER_TOKEN" \
        --heartbeat-interval 50 --election-timeout 500 --logger zap --log-outputs stderr \
        >>"$ETCD_TMP/m$n.log" 2>&1 &
    ETCD_PIDS[n]=$!
}

# etcd_has_leader: some member answers /v3/maintenance/status with a leader.
etcd_has_leader() {
    local i body
    for i in 0 1 2; do
        body=$(curl -s --max-time 1 -X POST -d '{}' "${ETCD_CURL_ARGS[@]}" \
            "$ETCD_SCHEME://127.0.0.1:${ETCD_CLIENT_PORTS[$i]}/v3/maintenance/status" 2>/dev/null) || continue
        case $body in *'"leader":"'[1-9]*) return 0 ;; esac
    done
    return 1
}

# etcd_wait_leader: at most 20 s; 1 when there is none by then.
etcd_wait_leader() {
    local _
    for _ in $(seq 1 200); do
        etcd_has_leader && return 0
        sleep 0.1
    done
    return 1
}

etcd_leader() {
    local i body
    for i in 0 1 2; do
        etcd_alive "$i" || continue
        body=$(curl -s --max-time 1 -X POST -d '{}' "${ETCD_CURL_ARGS[@]}" \
            "$ETCD_SCHEME://127.0.0.1:${ETCD_CLIENT_PORTS[$i]}/v3/maintenance/status" 2>/dev/null) || continue
        python3 -c 'import json, sys; s = json.loads(sys.argv[1])
sys.exit(s.get("leader") != s["header"]["member_id"])' "$body" 2>/dev/null && echo "$i" && return 0
    done
    return 1
}

etcd_alive() { # etcd_alive N
    [ "${ETCD_PIDS[$1]}" != 0 ] && kill -0 "${ETCD_PIDS[$1]}" 2>/dev/null
}

etcd_kill() { # etcd_kill N
    if etcd_alive "$1"; then
        kill -9 "${ETCD_PIDS[$1]}" 2>/dev/null
        wait "${ETCD_PIDS[$1]}" 2>/dev/null
    fi
    ETCD_PIDS[$1]=0
}

etcd_restart() { # etcd_restart N
    etcd_kill "$1"
    etcd_launch "$1" existing
    etcd_wait_leader
}

etcd_stop_cluster() {
    local i
    for i in 0 1 2; do
        etcd_kill "$i"
    done
}

# One attempt with fresh ports and a fresh data folder; 1 when a member died or no leader came.
etcd_try_start() {
    local ports i
    read -r -a ports <<<"$(etcd_free_ports 6)"
    ETCD_CLIENT_PORTS=("${ports[@]:0:3}")
    ETCD_PEER_PORTS=("${ports[@]:3:3}")
    ETCD_CLUSTER_TOKEN=rk-test-$$-$RANDOM
    rm -rf "$ETCD_TMP"
    mkdir -p "$ETCD_TMP"
    for i in 0 1 2; do
        etcd_launch "$i" new
    done
    etcd_wait_leader || return 1
    for i in 0 1 2; do
        etcd_alive "$i" || return 1
    done
    ETCD_ENDPOINTS=127.0.0.1:${ETCD_CLIENT_PORTS[0]},127.0.0.1:${ETCD_CLIENT_PORTS[1]},127.0.0.1:${ETCD_CLIENT_PORTS[2]}
}

# etcd_start_cluster: three attempts (a port taken between picking and binding); exits 1 with the
# members' logs when all fail.
etcd_start_cluster() {
    local _
    command -v etcd >/dev/null || { echo "etcd not installed (deploy/install-deps.sh)"; exit 1; }
    for _ in 1 2 3; do
        etcd_try_start && return 0
        etcd_stop_cluster
    done
    echo "etcd did not start:"
    tail -n 20 "$ETCD_TMP"/m*.log
    exit 1
}
