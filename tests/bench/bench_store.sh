#!/usr/bin/env bash
# bench_store.sh — SQLite and etcd side by side, one request at a time through curl: 200 publishes
# of a 40-node topology (1,988 bytes), 100 activations, 100 approvals of one more version (the
# same approver's again is one approval, its event written each time), 100 publishes with
# ?activate=true, 200 GET of a version document (each read from the store the first time), 200
# GET /ring (cached); prints p50 and p99 in seconds, curl's time_total. With the etcd store, three
# members on loopback (tests/etcd/etcd_lib.sh), and each write followed by its peer: a raw
# /v3/kv/txn through the same member's gateway putting as many bytes (the document; a 200-byte
# value for an activation or approval). Then 12 publishes with ?activate=true of 1M points (1000
# nodes, vnode_factor 1000, xxh3_64; 999 and 1000 nodes by turns) under a budget, so that each
# one's gate computes the plan from the active ring (pubact_1m). A program, not a test.
# usage: bench_store.sh RINGKEEPERD sqlite|etcd
export RK_TEST_STORE=$2
. "$(dirname "$0")/../server/lib.sh" "$1"
rk_start
topo 40 >"$TMP/t"
b64() { base64 -w0 <<<"$1"; }
if [ "$2" = etcd ]; then # the peers' bodies, and the member ringkeeperd prefers (the first)
    ETCD=http://${ETCD_ENDPOINTS%%,*}
    printf '{"success":[{"request_put":{"key":"%s","value":"%s"}}]}' "$(b64 bench/doc)" \
        "$(base64 -w0 "$TMP/t")" >"$TMP/txn_doc"
    printf '{"success":[{"request_put":{"key":"%s","value":"%s"}}]}' "$(b64 bench/small)" \
        "$(head -c 150 /dev/zero | base64 -w0)" >"$TMP/txn_small"
fi
one() { # one FILE URL [curl args...]: appends one request's time to $TMP/FILE
    local f=$1 url=$2
    shift 2
    curl -s -o /dev/null -w '%{time_total}\n' "$@" "$url" >>"$TMP/$f"
}
peer() { # peer FILE BODY: the raw txn after a request, on etcd
    [ "$RK_TEST_STORE" = etcd ] || return 0
    one "$1" "$ETCD/v3/kv/txn" --data-binary @"$TMP/$2"
}
for i in $(seq 1 200); do
    one pub "$BASE/v1/clusters/b/versions" -H 'Content-Type: application/json' --data-binary @"$TMP/t"
    peer pub_txn txn_doc
done
for i in $(seq 1 100); do
    one act "$BASE/v1/clusters/b/versions/$((i * 2))/activate" -X POST
    peer act_txn txn_small
done
curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @"$TMP/t" \
    "$BASE/v1/clusters/b/versions"
curl -s "$BASE/v1/clusters/b/plan?from=200&to=201&arcs=false" >"$TMP/plan"
DIGEST=$(sed -n 's/.*"digest":"\([0-9a-f]*\)".*/\1/p' "$TMP/plan")
for i in $(seq 1 100); do
    one appr "$BASE/v1/clusters/b/versions/201/approve" -H 'Content-Type: application/json' \
        --data-binary "{\"digest\":\"$DIGEST\"}"
    peer appr_txn txn_small
done
for i in $(seq 1 100); do
    one pubact "$BASE/v1/clusters/b/versions?activate=true" -H 'Content-Type: application/json' \
        --data-binary @"$TMP/t"
    peer pubact_txn txn_doc
done
topo 1000 1000 xxh3_64 >"$TMP/m0"
topo 999 1000 xxh3_64 >"$TMP/m1"
curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @"$TMP/m0" \
    "$BASE/v1/clusters/m/versions?activate=true"
curl -s -o /dev/null -X PUT -H 'Content-Type: application/json' \
    --data-binary '{"max_moved_fraction":0.99}' "$BASE/v1/clusters/m/policy"
for i in $(seq 1 12); do
    one pubact_1m "$BASE/v1/clusters/m/versions?activate=true" \
        -H 'Content-Type: application/json' --data-binary @"$TMP/m$((i % 2))"
done
for i in $(seq 1 200); do one get "$BASE/v1/clusters/b/versions/$i"; done
for i in $(seq 1 200); do one ring "$BASE/v1/clusters/b/ring"; done
pct() { sort -n "$TMP/$1" | awk -v p="$2" '{v[NR] = $1} END {print v[int((NR - 1) * p / 100) + 1]}'; }
for f in pub pub_txn act act_txn appr appr_txn pubact pubact_txn pubact_1m get ring; do
    [ -s "$TMP/$f" ] && echo "$2 $f p50 $(pct "$f" 50) p99 $(pct "$f" 99)"
done
rk_stop
