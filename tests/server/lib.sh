# lib.sh — shared by the server tests: start a real ringkeeperd on a free loopback port with a
# temporary database, speak HTTP with curl, count checks, and stop every process started.
# Source it, then call rk_start; the EXIT trap stops the server and removes the temp folder.
# RK_TEST_STORE=etcd: the same tests on the etcd store; the first rk_start starts three etcd members
# (tests/etcd/etcd_lib.sh) for the whole script, and every rk_start without --db uses one key prefix
# there, as every one uses $TMP/ringkeeper.db otherwise: a restarted server finds what it stored.
set -u
umask 077 # token files written by the tests must not be readable by others (the server refuses them)
RKD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # the ringkeeperd binary, first argument
TMP=$(mktemp -d)
PASSED=0
FAILED=0
PID=
PORT=
BASE=

RK_TEST_STORE=${RK_TEST_STORE:-sqlite}
. "$(dirname "${BASH_SOURCE[0]}")/../etcd/etcd_lib.sh"

rk_cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -9 "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
    fi
    etcd_stop_cluster
    jobs -p | xargs -r kill -9 2>/dev/null
    rm -rf "$TMP"
}
trap rk_cleanup EXIT

ok() { PASSED=$((PASSED + 1)); }
bad() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { # check NAME WANT GOT
    if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi
}
has() { # has NAME FILE TEXT
    if contains "$2" "$3"; then ok; else bad "$1: no [$3] in: $(head -c 600 "$2")"; fi
}
# contains FILE TEXT: FILE has TEXT on one line. A TEXT that ends in a digit must end a whole number
# there, so that '"version":1' does not match '"version":10' (nor ".../versions/1" ".../versions/12").
contains() {
    T=$2 awk 'BEGIN { t = ENVIRON["T"]; whole = t ~ /[0-9]$/ }
        {
            for (s = $0; (i = index(s, t)) > 0; s = substr(s, i + 1))
                if (!whole || substr(s, i + length(t), 1) !~ /[0-9.]/) { found = 1; exit }
        }
        END { exit !found }' "$1"
}
# polls_held NAME N: waits (10 s at most) until /metrics counts N long polls held, then checks it.
polls_held() {
    for _ in $(seq 1 100); do
        curl -s "$BASE/metrics" | grep -q "^ringkeeper_long_polls_waiting $2\$" && break
        sleep 0.1
    done
    curl -s "$BASE/metrics" | grep '^ringkeeper_long_polls_waiting' >"$TMP/waiting"
    has "$1" "$TMP/waiting" "ringkeeper_long_polls_waiting $2"
}
finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
}

# rk_toy_build SOURCE_DIR BUILD_DIR OPTION TARGET...: TARGETs in a build of their own with -DOPTION=ON
# (a test-only scheme or format: test_scheme_toy.sh, tests/cli/test_format_toy.sh); when it fails,
# says so with the log's tail and ends the test.
rk_toy_build() {
    local src=$1 build=$2 option=$3
    shift 3
    if cmake -S "$src" -B "$build" "-D$option=ON" -DRK_STORE_ETCD=OFF -DRK_TESTS=OFF \
        -DRK_BENCH=OFF >"$build/cmake.log" 2>&1 &&
        cmake --build "$build" -j2 --target "$@" >>"$build/cmake.log" 2>&1; then
        ok
        return
    fi
    bad "the build with $option failed:"
    tail -n 30 "$build/cmake.log"
    finish
    exit
}

# rk_store_flags: the store flags of rk_start into STORE_FLAGS: $TMP/ringkeeper.db, or with
# RK_TEST_STORE=etcd the script's etcd cluster (started on first use).
rk_store_flags() {
    if [ "$RK_TEST_STORE" != etcd ]; then
        STORE_FLAGS=(--db "$TMP/ringkeeper.db")
        return
    fi
    [ -n "$ETCD_ENDPOINTS" ] || etcd_start_cluster
    STORE_FLAGS=(--store "etcd://$ETCD_ENDPOINTS/rk-test")
}

# rk_start [FLAGS...]: starts ringkeeperd on 127.0.0.1:0 with rk_store_flags' store (unless --db or
# --store is given) and waits (at most 10 s) for its "listening on port N" line.
rk_start() {
    local db=()
    case " $* " in *" --db "* | *" --store "*) ;; *) rk_store_flags; db=("${STORE_FLAGS[@]}") ;; esac
    : >"$TMP/server.log"
    "$RKD" --listen 127.0.0.1:0 "${db[@]}" "$@" 2>>"$TMP/server.log" &
    PID=$!
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/server.log" | head -1)
        [ -n "$PORT" ] && break
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$PORT" ]; then
        echo "ringkeeperd did not start:"; cat "$TMP/server.log"; exit 1
    fi
    BASE=${RK_SCHEME:-http}://127.0.0.1:$PORT # RK_SCHEME=https for a server started with TLS
}

# rk_stop: SIGTERM, then wait (at most 15 s) for exit; sets STOP_CODE.
rk_stop() {
    kill -TERM "$PID"
    for _ in $(seq 1 150); do
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    wait "$PID"
    STOP_CODE=$?
    PID=
}

# req METHOD PATH [curl args...]: body to $TMP/body, status to stdout, headers to $TMP/headers.
# A body goes as JSON (the server refuses a write's body of another type, docs/API.md) unless the
# arguments name a Content-Type of their own.
req() {
    local method=$1 path=$2 arg type=(-H 'Content-Type: application/json')
    shift 2
    for arg in "$@"; do
        case ${arg,,} in content-type:*) type=() ;; esac
    done
    curl -s -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' --max-time 70 -X "$method" \
        "${type[@]}" "$@" "$BASE$path"
}

# topo N [VNODE] [HASH]: a topology of N nodes n0..n(N-1)
topo() {
    local n=$1 vf=${2:-160} hash=${3:-fnv1a_32} nodes= i
    for i in $(seq 0 $((n - 1))); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"10.0.0.$i:11211\",\"weight\":1}"
    done
    printf '{"hash":"%s","vnode_factor":%s,"nodes":[%s]}' "$hash" "$vf" "$nodes"
}
