#!/usr/bin/env bash
# test_concurrency.sh — 8 publishers x 50 publishes at once: versions 1..400, no gap, no duplicate.
# usage: test_concurrency.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
rk_start --threads 4
topo 3 16 >"$TMP/t"
pids=()
for w in $(seq 1 8); do
    (for _ in $(seq 1 50); do
        curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 -H 'Content-Type: application/json' \
            --data-binary @"$TMP/t" "$BASE/v1/clusters/load/versions"
    done >"$TMP/codes.$w") &
    pids+=($!)
done
wait "${pids[@]}" # not a bare wait: the server is a job of this shell too
check "all 400 publishes got 201" 400 "$(cat "$TMP"/codes.* | grep -c '^201$')"
curl -s "$BASE/v1/clusters/load/versions?limit=1000" >"$TMP/list"
grep -o '"version":[0-9]*' "$TMP/list" | cut -d: -f2 | sort -n >"$TMP/versions"
seq 1 400 >"$TMP/want"
if cmp -s "$TMP/versions" "$TMP/want"; then ok; else bad "versions are not exactly 1..400: $(diff "$TMP/want" "$TMP/versions" | head -5)"; fi
rk_stop
finish
