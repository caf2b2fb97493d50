#!/usr/bin/env bash
# bench_grpc.sh — the grpc_ring_hash ring build against grpc-js-xds's own (issue 58): the same
# equal hosts and ring size, built by bench_ring --grpc (median of 11) and by the published
# @grpc/grpc-js-xds package's constructRing through tests/envoy/grpc_oracle.js --bench (median of
# 11, the first apart: V8 compiles as it goes), in the same run, with the ratio. Needs node and
# `npm ci` in tests/envoy (deploy/install-deps.sh). docs/PERFORMANCE.md keeps the last results.
# usage: tests/bench/bench_grpc.sh BUILD_DIR     (a Release build)
set -u
BUILD=${1:?usage: bench_grpc.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ORACLE=$HERE/../envoy/grpc_oracle.js
[ -x "$BUILD/tests/bench/bench_ring" ] || { echo "bench_grpc.sh: build bench_ring first" >&2; exit 1; }
[ -d "$HERE/../envoy/node_modules/@grpc/grpc-js-xds" ] ||
    { echo "bench_grpc.sh: run npm ci in tests/envoy (deploy/install-deps.sh)" >&2; exit 1; }
printf '%-28s %14s %16s %8s\n' "hosts x entries" "ringkeeper ms" "grpc-js-xds ms" "ratio"
for c in "10 1024" "100 4096" "1000 65536" "1000 262144"; do
    set -- $c
    ours=$("$BUILD/tests/bench/bench_ring" --grpc "$1" "$2" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    theirs=$(cd "$HERE/../envoy" && node "$ORACLE" --bench "$1" "$2" 11 | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    printf '%-28s %14s %16s %7.1fx\n' "$1 x $2" "$ours" "$theirs" \
        "$(echo "$theirs $ours" | awk '{ print $1 / $2 }')"
done
