#!/usr/bin/env bash
# test_crash.sh — publish in a loop (every other one activated too), kill -9 the server, restart:
# every version acknowledged with 201 is there, unchanged (same fingerprint), and numbering has no
# gap; every version has its publish event and every activation its activate event, and no event
# names a change that is not there (docs/API.md, the cutover: events share the change's transaction); and a
# migration window is open exactly when its events say so.
# usage: test_crash.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
rk_start
for round in 1 2 3; do
    (for i in $(seq 1 400); do
        topo $((i % 7 + 1)) 16 >"$TMP/t.$round"
        out=$(curl -s -w '\n%{http_code}' --max-time 5 -H 'Content-Type: application/json' \
            --data-binary @"$TMP/t.$round" "$BASE/v1/clusters/crash/versions?activate=$([ $((i % 2)) = 0 ] && echo true || echo false)") || break
        [ "${out##*$'\n'}" = 201 ] || break
        printf '%s\n' "${out%$'\n'*}" | grep -o '"version":[0-9]*,\|"fingerprint":"[0-9a-f]*"' | tr -d '\n' >>"$TMP/acked"
        echo >>"$TMP/acked"
    done) &
    loop=$!
    # kill once this round has a few acknowledged publishes (at most 10 s): a loaded machine or a
    # slow store (etcd) acknowledges fewer in a fixed pause, and the check below needs enough
    want=$(($(cat "$TMP/acked" 2>/dev/null | wc -l) + 4))
    for _ in $(seq 1 100); do
        [ "$(cat "$TMP/acked" 2>/dev/null | wc -l)" -ge "$want" ] && break
        sleep 0.1
    done
    sleep 0.$((1 + round))
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
curl -s "$BASE/v1/clusters/crash/events?limit=1000" >"$TMP/events"
curl -s "$BASE/v1/clusters/crash/events?limit=1000&before=$(sed -n 's/.*"next_before":\([0-9]*\).*/\1/p' "$TMP/events")" >>"$TMP/events"
events() { grep -o "\"kind\":\"$1\"[^}]*" "$TMP/events" | sed -n 's/.*"version":\([0-9]*\).*/\1/p' | sort -n; }
events publish >"$TMP/published"
check "a publish event for every version, no other" "$(cat "$TMP/want")" "$(cat "$TMP/published")"
curl -s "$BASE/v1/clusters/crash/versions?limit=1000" | grep -o '"version":[0-9]*,"state":"[a-z]*","created_at":"[^"]*","activated_at":"' |
    cut -d, -f1 | cut -d: -f2 | sort -n >"$TMP/activated"
events activate >"$TMP/activations"
check "an activate event for every activation, no other" "$(cat "$TMP/activated")" "$(cat "$TMP/activations")"

# The migration window: activations that open one and finishes that close it, killed midway. The
# ring names a previous version exactly when the newest of the activate and finish events is an
# activation (the window and its event share a transaction).
J='Content-Type: application/json'
topo 3 >"$TMP/w"
curl -s -o /dev/null -H "$J" --data-binary @"$TMP/w" "$BASE/v1/clusters/win/versions?activate=true"
curl -s -o /dev/null -X PUT -H "$J" --data-binary '{"migration_window":true}' "$BASE/v1/clusters/win/policy"
(for i in $(seq 1 300); do
    topo $((i % 5 + 2)) 16 >"$TMP/w.$i"
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "$J" --data-binary @"$TMP/w.$i" \
        "$BASE/v1/clusters/win/versions?activate=true")" = 201 ] || break
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
        "$BASE/v1/clusters/win/migration/finish")" = 200 ] || break
done) &
loop=$!
sleep 0.5
kill -9 "$PID"
wait "$PID" 2>/dev/null
wait "$loop" 2>/dev/null
PID=
rk_start
last=$(curl -s "$BASE/v1/clusters/win/events?limit=1000" | grep -o '"kind":"\(activate\|finish\)"' | head -1)
curl -s "$BASE/v1/clusters/win/ring" >"$TMP/wring"
if contains "$TMP/wring" '"previous":null'; then open=finish; else open=activate; fi
check "the window is open exactly when the newest activate/finish event is an activation" \
    "\"kind\":\"$open\"" "$last"
curl -s "$BASE/v1/clusters/win/events?limit=1000" | grep -o '"kind":"finish"' | wc -l >"$TMP/finishes"
if [ "$(cat "$TMP/finishes")" -gt 0 ]; then ok; else bad "no finish before the crash: the check means nothing"; fi
rk_stop
finish
