#!/usr/bin/env bash
# bench_store.sh — SQLite and etcd side by side, one request at a time through curl: 200 publishes
# of a 40-node topology (1,988 bytes), 200 GET of a version document (each read from the store the
# first time), 200 GET /ring (cached); prints p50 and p99 in seconds, curl's time_total. With the
# etcd store, three members on loopback (tests/etcd/etcd_lib.sh). A program, not a test.
# usage: bench_store.sh RINGKEEPERD sqlite|etcd
export RK_TEST_STORE=$2
. "$(dirname "$0")/../server/lib.sh" "$1"
rk_start
topo 40 >"$TMP/t"
timed() { # timed URL [curl args...]: 200 requests' times, sorted
    local url=$1 i
    shift
    for i in $(seq 1 200); do
        curl -s -o /dev/null -w '%{time_total}\n' "$@" "${url//\{i\}/$i}"
    done | sort -n
}
timed "$BASE/v1/clusters/b/versions" -H 'Content-Type: application/json' --data-binary @"$TMP/t" >"$TMP/pub"
curl -s -o /dev/null -X POST "$BASE/v1/clusters/b/versions/200/activate"
timed "$BASE/v1/clusters/b/versions/{i}" >"$TMP/get"
timed "$BASE/v1/clusters/b/ring" >"$TMP/ring"
for f in pub get ring; do
    echo "$2 $f p50 $(sed -n 100p "$TMP/$f") p99 $(sed -n 198p "$TMP/$f")"
done
rk_stop
