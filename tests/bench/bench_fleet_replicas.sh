#!/usr/bin/env bash
# bench_fleet_replicas.sh — what sharing the fleet costs on etcd (issue 56; docs/PERFORMANCE.md, "One
# fleet across replicas"): three etcd members and three ringkeeperd replicas on loopback, N clients
# (RK_FLEET_CLIENTS, default 10000) split across the replicas, each on one. Every client takes v1
# and says it holds it; then v2 is activated and every client does what the library does after a
# wake: fetches v2 (offered) and says it holds it (the confirming request). Prints, per run
# (RK_FLEET_RUNS, default 3):
#   - the etcd puts, txns and deletes of the cutover (etcd's own counters, member 0) and the puts per
#     second from the activation until every replica said converged;
#   - the time from the last confirming request's answer to `converged` on every replica (goal 1 s);
#   - the bytes stored per client: keys and values of the fleet's records, and etcd's db size.
# The clients are curl --parallel (200 connections per replica, kept alive). A benchmark, not a
# test: it checks that every replica counts every client, never a time.
# usage: tests/bench/bench_fleet_replicas.sh BUILD_DIR
set -u
BUILD=$(cd "$1" && pwd)
RKD=$BUILD/server/ringkeeperd
N=${RK_FLEET_CLIENTS:-10000}
RUNS=${RK_FLEET_RUNS:-3}
export RK_TEST_STORE=etcd
. "$(dirname "$0")/../server/lib.sh" "$RKD"
PY=/usr/bin/python3
ulimit -n 4096

R=() P=()
for name in A B C; do
    rk_start --clients-expiry 600 --max-connections 2048 --max-connections-per-address 2048 \
        --max-clients "$((4 * N))" --max-clients-per-cluster "$((2 * N))" --replica-name "$name"
    R+=("$BASE") P+=("$PID")
    PID=
done
trap 'kill -9 "${P[@]}" 2>/dev/null; rk_cleanup' EXIT
BASE=${R[0]}
E=http://127.0.0.1:${ETCD_CLIENT_PORTS[0]}

# wave CLUSTER INM [REFUSE]: every client's ring request on its replica, If-None-Match INM, in
# parallel; one curl per replica
wave() {
    local n pids=()
    for n in 0 1 2; do
        $PY - "$N" "$n" "${R[$n]}/v1/clusters/$1/ring" "$2" >"$TMP/wave.$n" <<'PY'
import sys
n, r, url, inm = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
print("\nnext\n".join('url = "%s"\nheader = "RK-Client: client-%06d"\n'
                      'header = "If-None-Match: %s"\noutput = "/dev/null"'
                      % (url, i, inm.replace('"', '\\"')) for i in range(r, n, 3)))
PY
        curl -s --no-progress-meter --parallel --parallel-max 200 -K "$TMP/wave.$n" &
        pids+=($!)
    done
    wait "${pids[@]}"
}
converged_everywhere() { # converged_everywhere CLUSTER: until every replica says N N true (120 s);
    # one process asks all three in turn (every 10 ms), so the wait is measured, not its own cost
    $PY - "$N" "$1" "${R[@]}" <<'PY'
import json, sys, time, urllib.request
n, cluster, replicas = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
def done(base):
    with urllib.request.urlopen("%s/v1/clusters/%s/clients?limit=1" % (base, cluster)) as r:
        s = json.load(r)["summary"]
    return s["total"] == n and s["by_version"].get(str(s["active"]), 0) == n and s["converged"]
end = time.time() + 120
while time.time() < end:
    if all(done(b) for b in replicas):
        sys.exit(0)
    time.sleep(0.01)
sys.exit(1)
PY
}
etcd_counter() { curl -s "$E/metrics" | awk -v m="$1" '$1 == m { print $2 }' | head -1; }
now_ms() { date +%s%3N; }
tag() { curl -s -D - -o /dev/null "$BASE/v1/clusters/$1/ring" | sed -n 's/^ETag: *//Ip' | tr -d '\r'; }

echo "# $N clients over 3 replicas, 3 etcd members; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$RUNS"); do
    c=bench$run
    req POST "/v1/clusters/$c/versions?activate=true" --data-binary "$(topo 10 100 xxh3_64)" >/dev/null
    t1=$(tag "$c")
    wave "$c" '"v0"'  # each takes v1 ...
    wave "$c" "$t1"   # ... and says it holds it
    converged_everywhere "$c" || { echo "FAIL: run $run: v1 not counted everywhere"; exit 1; }
    puts0=$(etcd_counter etcd_mvcc_put_total) txns0=$(etcd_counter etcd_mvcc_txn_total)
    dels0=$(etcd_counter etcd_mvcc_delete_total)
    start=$(now_ms)
    req POST "/v1/clusters/$c/versions?activate=true" --data-binary "$(topo 11 100 xxh3_64)" >/dev/null
    t2=$(tag "$c")
    wave "$c" "$t1"   # woken: each fetches v2 ...
    wave "$c" "$t2"   # ... and says it holds it
    last=$(now_ms)
    converged_everywhere "$c" || { echo "FAIL: run $run: v2 not counted everywhere"; exit 1; }
    done_ms=$(now_ms)
    puts=$(($(etcd_counter etcd_mvcc_put_total) - puts0))
    txns=$(($(etcd_counter etcd_mvcc_txn_total) - txns0))
    dels=$(($(etcd_counter etcd_mvcc_delete_total) - dels0))
    echo "run $run: cutover $((done_ms - start)) ms; converged everywhere $((done_ms - last)) ms" \
        "after the last confirming request; etcd: $puts puts in $txns txns, $dels deletes," \
        "$((puts * 1000 / (done_ms - start))) puts/s"
done
key=$($PY -c 'import base64; print(base64.b64encode(b"/rk-test/fleet/").decode())')
end=$($PY -c 'import base64; print(base64.b64encode(b"/rk-test/fleet0").decode())')
curl -s -X POST -d "{\"key\":\"$key\",\"range_end\":\"$end\"}" "$E/v3/kv/range" | $PY -c '
import base64, json, sys
kvs = json.load(sys.stdin).get("kvs", [])
kb = sum(len(base64.b64decode(k["key"])) for k in kvs)
vb = sum(len(base64.b64decode(k.get("value", ""))) for k in kvs)
print("records: %d, %.0f bytes of key and %.0f of value each" % (len(kvs), kb / len(kvs), vb / len(kvs)))'
echo "etcd db: $(etcd_counter etcd_mvcc_db_total_size_in_use_in_bytes) bytes in use" \
    "(history uncompacted: every cutover adds its records' revisions)"
for n in 0 1 2; do echo "replica $n RSS: $(awk '/VmRSS/ { print $2 }' /proc/"${P[$n]}"/status) kB"; done
