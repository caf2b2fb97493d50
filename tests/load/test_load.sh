#!/usr/bin/env bash
# test_load.sh — the bounded load test (docs/RELIABILITY.md, "Load test"), loopback only:
#  1. readers of GET /ring, long-pollers and publishers/activators together for 60 s (rk_load
#     mixed): no 5xx, no unanswered request, every acknowledged version present, gapless numbers,
#     the active version never seen going backwards, ringkeeperd's RSS flat from 20 s to 60 s, and
#     a clean SIGTERM stop afterwards;
#  2. 20 rounds of a publish storm (rk_load storm) with kill -9 of the server 0.3..1.2 s into it,
#     restarted on the same database; then every acknowledged version of both clusters is there,
#     unchanged, gapless, and the database passes PRAGMA integrity_check.
# usage: test_load.sh RINGKEEPERD RK_LOAD
# RK_LOAD_SECONDS (default 60) and RK_LOAD_ROUNDS (default 20) shorten it; RK_LOAD_RSS=0 drops the
# RSS bound, for a server built with a sanitizer (whose own memory grows by design).
. "$(dirname "$0")/../server/lib.sh" "$1"
LOAD=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SECS=${RK_LOAD_SECONDS:-60}
ROUNDS=${RK_LOAD_ROUNDS:-20}
DB=$TMP/ringkeeper.db
rss=(--pid) # rk_load samples this pid's RSS and bounds its growth
[ "${RK_LOAD_RSS:-1}" = 0 ] && rss=()

# 1. mixed load
rk_start --db "$DB"
"$LOAD" mixed --url "$BASE" --cluster mixed --seconds "$SECS" --readers 4 --pollers 8 \
    --publishers 2 ${rss[@]+"${rss[@]}" "$PID"} --acked "$TMP/acked.mixed" >"$TMP/mixed.out" 2>&1
code=$?
cat "$TMP/mixed.out"
check "rk_load mixed exit code" 0 "$code"
rk_stop
check "ringkeeperd stopped cleanly after the mixed load" 0 "$STOP_CODE"

# 2. SIGKILL during publish storms
for round in $(seq 1 "$ROUNDS"); do
    rk_start --db "$DB"
    "$LOAD" storm --url "$BASE" --cluster storm --publishers 4 --seconds 10 \
        --acked "$TMP/acked.storm" >"$TMP/storm.out" 2>&1 &
    storm=$!
    ds=$((3 + (round * 7) % 10)) # tenths of a second: 3..12, all ten in turn, twice over 20 rounds
    delay=$((ds / 10)).$((ds % 10))
    sleep "$delay"
    kill -9 "$PID"
    wait "$PID" 2>/dev/null
    PID=
    wait "$storm"
    code=$?
    echo "round $round: killed after $delay s; $(cat "$TMP/storm.out")"
    check "rk_load storm exit code, round $round" 0 "$code"
done

rk_start --db "$DB"
n=$(cut -d' ' -f1 "$TMP/acked.storm" | sort -u | wc -l)
echo "kill rounds: $ROUNDS; acknowledged storm versions: $n"
if [ "$n" -gt 100 ]; then ok; else bad "too few acknowledged publishes ($n) to mean anything"; fi
for c in storm mixed; do
    "$LOAD" verify --url "$BASE" --cluster "$c" --acked "$TMP/acked.$c" >"$TMP/verify.out" 2>&1
    code=$?
    sed "s/^/$c: /" "$TMP/verify.out"
    check "rk_load verify $c after $ROUNDS kills" 0 "$code"
done
rk_stop
check "ringkeeperd stopped cleanly after the kill rounds" 0 "$STOP_CODE"
if command -v sqlite3 >/dev/null; then
    check "PRAGMA integrity_check" ok "$(sqlite3 "$DB" 'PRAGMA integrity_check')"
else
    echo "sqlite3 not installed: integrity_check skipped"
fi
finish
