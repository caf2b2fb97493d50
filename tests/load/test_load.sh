#!/usr/bin/env bash
# test_load.sh — the bounded load test (docs/RELIABILITY.md, "Load test"), loopback only:
#  1. readers of GET /ring, long-pollers and publishers/activators together for 60 s (rk_load
#     mixed): no 5xx, no unanswered request, every acknowledged version present, gapless numbers,
#     the active version never seen going backwards, ringkeeperd's RSS flat from 20 s to 60 s, and
#     a clean SIGTERM stop afterwards;
#  2. 20 rounds of a publish storm (rk_load storm) with kill -9 of the server 0.3..1.2 s into it,
#     restarted on the same database; then every acknowledged version of both clusters is there,
#     unchanged, gapless, and the database passes PRAGMA integrity_check;
#  3. attackers (attackers.py: costly plans, 600 POSTs of 8 MiB junk, 1000 slow readers of a 5.9 MB
#     ring and 200 slowloris connections from 127.0.0.2..9, 10,000 held long polls from
#     127.0.0.10..59, and 2 forgers inventing RK-Client ids from 127.0.0.60..61) for 20 s while
#     rk_load probe checks /healthz's p99 and every publish against the profile's bounds (below);
#     meanwhile ringkeeperd's RSS and its sockets' kernel memory stay under 256 MiB each; then its
#     RSS must come back within 20% (+ 8 MiB) of what it was before, and the fleet report still
#     counts its one real (token) client alone.
# usage: test_load.sh RINGKEEPERD RK_LOAD
# RK_LOAD_SANITIZER=asan|tsan picks the profile of a server built with that sanitizer (below);
# RK_LOAD_SECONDS, RK_LOAD_ROUNDS, RK_LOAD_ATTACK_SECONDS, RK_LOAD_RSS=0 (no RSS bounds),
# RK_LOAD_LATENCY_FACTOR=K (the probe's latency bounds times K) and RK_LOAD_ATTACKERS="PLANS BODIES
# READERS SLOW POLLS FORGERS" (attackers.py's counts) override any profile's figure.
. "$(dirname "$0")/../server/lib.sh" "$1"
LOAD=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
# Profiles: Release runs in full with the real bounds. A sanitizer's server is shortened and keeps
# no RSS bound (ASan's quarantine and TSan's shadow memory grow by design); its latency bounds are
# widened by what that sanitizer costs under this load: ASan stalls of a second were seen in CI,
# and TSan, which serialises every lock and atomic through its runtime, took a publish to 1986 ms.
# There the probe checks no crash, leak, race, lost version or lock-out, not the speed.
# Release's x5 (/healthz p99 250 ms, publishes 5 s): every attack at once, with the attackers'
# 1800 Python threads on the same 2 cores as the server, took the p99 to 106.5 ms in one of three
# fresh-clone CI runs (15-18 ms in the others) and to 180.2 ms in one of 2026-12-08 (failing the
# x3 it had then); a lock-out shows as seconds, which x5 still catches; each finding's own goal
# (50 ms, 100 ms) was met alone (docs/RELIABILITY.md), and a flaky CI lands nothing.
case ${RK_LOAD_SANITIZER:-none} in
none) p_secs=60 p_rounds=20 p_rss=1 p_factor=5 p_attackers="2 600 1000 200 10000 2" ;;
asan) p_secs=20 p_rounds=5 p_rss=0 p_factor=5 p_attackers="2 100 300 100 2000 1" ;;
tsan) p_secs=20 p_rounds=5 p_rss=0 p_factor=10 p_attackers="2 100 300 100 2000 1" ;;
*)
    echo "RK_LOAD_SANITIZER must be asan, tsan or unset, not '$RK_LOAD_SANITIZER'" >&2
    exit 2
    ;;
esac
SECS=${RK_LOAD_SECONDS:-$p_secs}
ROUNDS=${RK_LOAD_ROUNDS:-$p_rounds}
ATTACK=${RK_LOAD_ATTACK_SECONDS:-20}
FACTOR=${RK_LOAD_LATENCY_FACTOR:-$p_factor}
ATTACKERS=${RK_LOAD_ATTACKERS:-$p_attackers} # plans, bodies, slow readers, slowloris, polls, forgers
RSS_BOUND=${RK_LOAD_RSS:-$p_rss}
echo "load profile ${RK_LOAD_SANITIZER:-release}: $SECS s mixed, $ROUNDS kill rounds," \
    "latency bounds x$FACTOR, RSS bounds $([ "$RSS_BOUND" = 0 ] && echo off || echo on)"
DB=$TMP/ringkeeper.db
rss=(--pid) # rk_load samples this pid's RSS and bounds its growth
[ "$RSS_BOUND" = 0 ] && rss=()

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

# 3. attackers. A 5 s idle timeout cuts the slow readers within the attack (they reconnect).
kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$PID/status"; }
publish() { # publish CLUSTER FILE: activated
    check "publish $2 to $1" 201 "$(req POST "/v1/clusters/$1/versions?activate=true" \
        -H "Authorization: Bearer probe-token-0123456789" --data-binary @"$2")"
}
python3 - "$TMP" <<'PY'
import json, sys
def topo(n, vf, path):
    nodes = [{"id": "node-%06d" % i, "addr": "10.%d.%d.%d:11211" % (i >> 16, (i >> 8) & 255, i & 255),
              "weight": 1} for i in range(n)]
    with open(path, "w") as f:
        json.dump({"hash": "xxh3_64", "vnode_factor": vf, "nodes": nodes}, f)
topo(100000, 40, sys.argv[1] + "/ring.json")  # a 5 MiB ring document
topo(10000, 30, sys.argv[1] + "/plan1.json")  # a plan moving 1000 of 10000 nodes' arcs: 10000
topo(9000, 30, sys.argv[1] + "/plan2.json")  # node rows and at most 30000 transfers, under 50000
PY
# --max-connections 2048: the attackers' 1200 slow readers and slowloris connections are short
# ones, which the per-address limit alone keeps from 127.0.0.1's probes. Writes need a token: the
# bodies without one are refused before they are read, and those of the "flood" token (one
# address) are bounded by the body budget, a quarter of it per address.
printf 'probe:probe-token-0123456789\nflood:flood-token-0123456789\n' >"$TMP/tokens"
rk_start --db "$TMP/attack.db" --idle-timeout 5 --max-connections 2048 --token-file "$TMP/tokens"
publish big "$TMP/ring.json"
publish polls "$TMP/plan2.json"
publish plan "$TMP/plan1.json"
publish plan "$TMP/plan2.json"
PLAN='/v1/clusters/plan/plan?from=1&to=2&arcs=false'
# what a client's first requests cache (the ring's document, the plan's two rings) is the baseline
check "ring before the attack" 200 "$(req GET /v1/clusters/big/ring)"
check "plan before the attack" 200 "$(req GET "$PLAN")"
check "the fleet's one real client, with its token" 200 "$(req GET /v1/clusters/polls/ring \
    -H 'RK-Client: real-client' -H "Authorization: Bearer probe-token-0123456789")"
before=$(kib)
RK_ATTACK_TOKEN=flood-token-0123456789 python3 "$(dirname "$0")/attackers.py" "$PORT" "$PID" /v1/clusters/big/ring "$PLAN" \
    /v1/clusters/polls/ring "$ATTACK" $ATTACKERS >"$TMP/attack.out" 2>&1 &
attackers=$!
sleep 1 # the attack under way
"$LOAD" probe --url "$BASE" --cluster probe --seconds "$ATTACK" --acked "$TMP/acked.probe" \
    --latency-factor "$FACTOR" --token probe-token-0123456789 >"$TMP/probe.out" 2>&1
code=$?
peak=$(kib)
wait "$attackers"
acode=$?
cat "$TMP/probe.out" "$TMP/attack.out"
check "rk_load probe under attack exit code" 0 "$code"
check "attackers.py exit code" 0 "$acode"
read -r rss_mib sockets_mib <<<"$(sed -n 's/^peaks: rss_mib \([0-9]*\) sockets_mib \([0-9]*\)$/\1 \2/p' "$TMP/attack.out")"
if [ "${sockets_mib:-999}" -le 256 ]; then ok; else bad "kernel socket memory ${sockets_mib:-?} MiB under attack (bound 256)"; fi
if [ "$RSS_BOUND" = 0 ] || [ "${rss_mib:-999}" -le 256 ]; then
    ok
else
    bad "RSS ${rss_mib:-?} MiB under attack (bound 256)"
fi
sleep 8 # the server notices the closed connections, and the polls' 5 s deadlines pass
after=$(kib)
echo "attack: RSS before $((before >> 10)) MiB, at its end $((peak >> 10)) MiB, 8 s after" \
    "$((after >> 10)) MiB"
if [ "$RSS_BOUND" = 0 ] || [ "$after" -le $((before * 120 / 100 + 8192)) ]; then
    ok
else
    bad "RSS $((after >> 10)) MiB after the attack, over 120% of $((before >> 10)) MiB + 8 MiB"
fi
check "healthz after the attack" 200 "$(req GET /healthz)"
check "the fleet report after the attack" 200 "$(req GET '/v1/clusters/polls/clients?limit=10')"
python3 - "$TMP/body" >"$TMP/fleet" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("counted:", [c["id"] for c in d["clients"]], d["summary"]["total"],
      "strangers apart:", d["unauthenticated"]["summary"]["total"] > 0)
PY
cat "$TMP/fleet"
check "forgers neither counted nor evicting the real client" \
    "counted: ['real-client'] 1 strangers apart: True" "$(cat "$TMP/fleet")"
rk_stop
check "ringkeeperd stopped cleanly after the attack" 0 "$STOP_CODE"
finish
