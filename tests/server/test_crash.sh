#!/usr/bin/env bash
# test_crash.sh — publish in a loop, kill -9 the server, restart: every version acknowledged with
# 201 is there, unchanged (same fingerprint), and numbering has no gap.
# usage: test_crash.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
rk_start
for round in 1 2 3; do
    (for i in $(seq 1 400); do
        topo $((i % 7 + 1)) 16 >"$TMP/t.$round"
        out=$(curl -s -w '\n%{http_code}' --max-time 5 -H 'Content-Type: application/json' \
            --data-binary @"$TMP/t.$round" "$BASE/v1/clusters/crash/versions") || break
        [ "${out##*$'\n'}" = 201 ] || break
        printf '%s\n' "${out%$'\n'*}" | grep -o '"version":[0-9]*,\|"fingerprint":"[0-9a-f]*"' | tr -d '\n' >>"$TMP/acked"
        echo >>"$TMP/acked"
    done) &
    loop=$!
    sleep 0.$((3 + round))
    kill -9 "$PID"
    wait "$PID" 2>/dev/null
    wait "$loop" 2>/dev/null
    PID=
    rk_start
done
n=$(grep -c fingerprint "$TMP/acked")
echo "acknowledged publishes: $n"
if [ "$n" -gt 10 ]; then ok; else bad "too few acknowledged publishes ($n) to mean anything"; fi
missing=0
while read -r line; do
    v=$(echo "$line" | sed -n 's/.*"version":\([0-9]*\),.*/\1/p')
    fp=$(echo "$line" | sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p')
    curl -s "$BASE/v1/clusters/crash/versions/$v" | grep -q "\"fingerprint\":\"$fp\"" || missing=$((missing + 1))
done <"$TMP/acked"
check "acknowledged versions lost or changed" 0 "$missing"
curl -s "$BASE/v1/clusters/crash/versions?limit=1000" | grep -o '"version":[0-9]*' | cut -d: -f2 | sort -n >"$TMP/have"
seq 1 "$(wc -l <"$TMP/have")" >"$TMP/want"
if cmp -s "$TMP/have" "$TMP/want"; then ok; else bad "numbering has gaps after crashes"; fi
rk_stop
finish
