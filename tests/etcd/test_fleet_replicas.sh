#!/usr/bin/env bash
# test_fleet_replicas.sh — one fleet report across replicas (issue 56, SPEC section 9, docs/ETCD.md
# "The fleet across replicas"): three ringkeeperd replicas over one three-member etcd cluster,
# nine clients split across them, each polling one. Every replica's GET .../clients counts all nine,
# by version and refusals; after an activation `converged` flips on every replica once the last
# client (on replica C) confirms, within RK_FLEET_CONVERGE_MS (3000: the goal is 1 s, measured by
# tests/bench/bench_fleet_replicas.sh; this bound only catches a report that never catches up); a
# window job claimed on A says fleet_held false while a client of C holds the old version, true
# once it holds the new one; a rollout driven by A (another cluster, a client on each replica) waits
# in `hold` for the client polling C, pauses at once naming it when it refuses the step, and goes
# on once it holds the step; replica C killed with SIGKILL: its clients that poll B afterwards are
# counted once, the one that polls nowhere disappears after the expiry (its replica's lease). With
# --token-file, ids invented without a client token reach the other replicas at 100 a second at
# most (what they cost etcd).
# usage: test_fleet_replicas.sh RINGKEEPERD
export RK_TEST_STORE=etcd
. "$(dirname "$0")/../server/lib.sh" "$1"
PY=/usr/bin/python3
EXPIRY=10 # --clients-expiry: also the lease of each replica's records; waits here stay under it
# poll_all TAG: every client c0..c8 polls its replica again, holding TAG (so none expires)
poll_all() {
    local i
    for i in 0 1 2 3 4 5 6 7 8; do holds $((i / 3)) "c$i" "$1"; done
}
BOUND_MS=${RK_FLEET_CONVERGE_MS:-3000}
C=/v1/clusters/shop

# Three replicas; R[0..2] their base URLs, P[0..2] their PIDs (stopped by the trap below).
R=() P=()
for name in A B C; do
    rk_start --clients-expiry "$EXPIRY" --replica-name "$name"
    R+=("$BASE") P+=("$PID")
    PID=
done
trap 'kill -9 "${P[@]}" 2>/dev/null; rk_cleanup' EXIT
BASE=${R[0]}

# ring N ID [curl args...]: a ring request of client ID on replica N; its ETag into $TMP/etag.ID
ring() {
    local n=$1 id=$2
    shift 2
    curl -s -o /dev/null -D "$TMP/h.$id" -w '%{http_code}' --max-time 10 -H "RK-Client: $id" "$@" \
        "${R[$n]}$C/ring"
    sed -n 's/^ETag: *//Ip' "$TMP/h.$id" | tr -d '\r' >"$TMP/etag.$id"
}
# holds N ID TAG: client ID tells replica N it holds the ring of ETag TAG
holds() { ring "$1" "$2" -H "If-None-Match: $3" >/dev/null; }
# report N: "total by_version-of-active converged refusing" of replica N's report
report() {
    curl -s --max-time 5 "${R[$1]}$C/clients?limit=1000" >"$TMP/report.$1"
    $PY -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
a = str(s["active"])
print(s["total"], s["by_version"].get(a, 0), str(s["converged"]).lower(), s["refusing"])' "$TMP/report.$1"
}
# every WANT SECONDS: until every replica's report is WANT (bounded); prints the milliseconds taken
every() {
    local start i n ok
    start=$(date +%s%3N)
    for i in $(seq 1 $(($2 * 20))); do
        ok=1
        for n in 0 1 2; do [ "$(report $n)" = "$1" ] || ok=0; done
        [ $ok = 1 ] && break
        sleep 0.05
    done
    echo $(($(date +%s%3N) - start))
}
# check_every NAME WANT: every replica reports WANT
check_every() {
    local n
    for n in 0 1 2; do check "$1 (replica $n)" "$2" "$(report $n)"; done
}

# data N: N nodes with data addresses (a window job needs them; nothing is copied here)
data() {
    local nodes= i
    for i in $(seq 0 $(($1 - 1))); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"127.0.0.1:$((21000 + i))\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":40,"data":"memcached","nodes":[%s]}' "$nodes"
}
field() { $PY -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$TMP/body" "$1"; }

check "publish v1" 201 "$(req POST "$C/versions?activate=true" --data-binary "$(data 2)")"
# nine clients, c0..c2 on A, c3..c5 on B, c6..c8 on C; each fetches, then says it holds v1
for i in 0 1 2 3 4 5 6 7 8; do
    ring $((i / 3)) "c$i" >/dev/null
    holds $((i / 3)) "c$i" "$(cat "$TMP/etag.c$i")"
done
V1=$(cat "$TMP/etag.c0")
every "9 9 true 0" 3 >/dev/null
check_every "nine clients, all on v1, counted by every replica" "9 9 true 0"
has "a client of C listed by A, naming its replica" "$TMP/report.0" '"id":"c7",'
$PY -c 'import json, sys
c = {x["id"]: x["replica"] for x in json.load(open(sys.argv[1]))["clients"]}
sys.exit(not (c["c1"] == "A" and c["c4"] == "B" and c["c7"] == "C"))' "$TMP/report.0"
check "each client named with the replica it polls" 0 "$?"
curl -s "${R[1]}/metrics" >"$TMP/metrics"
has "B's gauge counts all nine" "$TMP/metrics" 'ringkeeper_clients{cluster="shop",version="1"} 9'

# v2: eight clients confirm it, c8 (on C) refuses it; then c8 confirms it too
check "publish v2" 201 "$(req POST "$C/versions?activate=true" --data-binary "$(data 3)")"
for i in 0 1 2 3 4 5 6 7; do
    ring $((i / 3)) "c$i" -H "If-None-Match: $V1" >/dev/null
    holds $((i / 3)) "c$i" "$(cat "$TMP/etag.c$i")"
done
V2=$(cat "$TMP/etag.c0")
ring 2 c8 -H "If-None-Match: $V1" >/dev/null # offered v2: it refuses it in its next request
ring 2 c8 -H "If-None-Match: $V1" -H "RK-Refused: $V2 vnode_factor: expected 160" >/dev/null
every "9 8 false 1" 3 >/dev/null
check_every "eight on v2, c8 on C refusing it, every replica" "9 8 false 1"
has "A shows C's refusal with its reason" "$TMP/report.0" '"reason":"vnode_factor: expected 160"'
holds 2 c8 "$V2"
ms=$(every "9 9 true 0" 5)
check_every "c8 holds v2: converged on every replica" "9 9 true 0"
check "... within ${BOUND_MS} ms of its request (took ${ms} ms)" 1 "$([ "$ms" -le "$BOUND_MS" ] && echo 1)"
echo "converged on all three replicas ${ms} ms after the last client's request"

# A window job claimed on A: fleet_held false while c8 (on C) holds the old version.
check "policy: a migration window" 200 "$(req PUT "$C/policy" --data-binary '{"migration_window":true}')"
check "publish v3 in a window" 201 "$(req POST "$C/versions?activate=true" --data-binary "$(data 4)")"
for i in 0 1 2 3 4 5 6 7; do
    ring $((i / 3)) "c$i" -H "If-None-Match: $V2" >/dev/null
    holds $((i / 3)) "c$i" "$(cat "$TMP/etag.c$i")"
done
V3=$(cat "$TMP/etag.c0")
ring 2 c8 -H "If-None-Match: $V2" >/dev/null # offered v3, still holding v2
every "9 8 false 0" 3 >/dev/null
check "a window job" 201 "$(req POST "$C/migration")"
check "claimed on A" 200 "$(req POST "$C/migration/claim" --data-binary '{"worker":"w1"}')"
check "fleet_held false: c8 on C holds v2" False "$(field fleet_held)"
holds 2 c8 "$V3"
every "9 9 true 0" 3 >/dev/null
check "cancel it" 200 "$(req POST "$C/migration/cancel")"
check "a second job" 201 "$(req POST "$C/migration")"
check "claimed on A" 200 "$(req POST "$C/migration/claim" --data-binary '{"worker":"w1"}')"
check "fleet_held true: every client anywhere holds v3" True "$(field fleet_held)"

# A rollout driven by A waits in hold while r2 (on C) holds the previous step: another cluster,
# three clients, one on each replica.
RC=/v1/clusters/roll
check "publish roll v1" 201 "$(req POST "$RC/versions?activate=true" --data-binary "$(topo 6 40 xxh3_64)")"
roll_holds() { # roll_holds N ID: client ID of cluster roll takes the active ring on replica N
    curl -s -o /dev/null -D "$TMP/rh" --max-time 10 -H "RK-Client: $2" "${R[$1]}$RC/ring"
    curl -s -o /dev/null --max-time 10 -H "RK-Client: $2" \
        -H "If-None-Match: $(sed -n 's/^ETag: *//Ip' "$TMP/rh" | tr -d '\r')" "${R[$1]}$RC/ring"
}
for n in 0 1 2; do roll_holds $n "r$n"; done
ROLL1=$(sed -n 's/^ETag: *//Ip' "$TMP/rh" | tr -d '\r')
rollout_body() {
    $PY - <<'PY'
import json
nodes = [{"id": "n%d" % i, "addr": "10.0.0.%d:11211" % i, "weight": 1} for i in range(6)]
print(json.dumps({"target": {"hash": "xxh3_64", "vnode_factor": 40, "nodes": nodes[:5]},
                  "steps": 1, "soak_s": 1}))
PY
}
state() {
    curl -s "${R[0]}$RC/rollouts/1" | $PY -c 'import json, sys
d = json.load(sys.stdin); print(d["state"], d.get("phase"))'
}
check "create a rollout on A" 201 "$(req POST "$RC/rollouts" --data-binary "$(rollout_body)")"
check "approve" 200 "$(req POST "$RC/rollouts/1/approve" --data-binary "{\"digest\":\"$(field digest)\"}")"
check "start" 200 "$(req POST "$RC/rollouts/1/start")"
for _ in $(seq 1 100); do
    case $(state) in "running hold") break ;; esac
    sleep 0.1
done
check "the step is in hold" "running hold" "$(state)"
for n in 0 1; do roll_holds $n "r$n"; done
sleep 2 # a soak's worth and more: the hold must not pass while r2 holds v1
check "A's rollout still holds for r2 on C" "running hold" "$(state)"
curl -s "${R[0]}$RC/rollouts/1" >"$TMP/rollout"
has "... and names it" "$TMP/rollout" "r2 (v1)"
# r2 refuses the step (an agent whose proxy would not take it): A's rollout pauses at once, naming
# r2 and its reason, since a refusing client is not sent the step again while it is active
curl -s -o /dev/null -D "$TMP/rh" --max-time 10 -H "RK-Client: r2" -H "If-None-Match: $ROLL1" \
    "${R[2]}$RC/ring"
step=$(sed -n 's/^ETag: *//Ip' "$TMP/rh" | tr -d '\r')
curl -s -o /dev/null --max-time 10 -H "RK-Client: r2" -H "If-None-Match: $ROLL1" \
    -H "RK-Refused: $step validate: nginx: [emerg] unexpected \"}\"" "${R[2]}$RC/ring"
for _ in $(seq 1 100); do
    case $(state) in "paused "*) break ;; esac
    sleep 0.1
done
check "r2 on C refuses the step: the rollout pauses" paused "$(state | cut -d' ' -f1)"
curl -s "${R[0]}$RC/rollouts/1" >"$TMP/rollout"
has "... naming r2 and why" "$TMP/rollout" 'r2 (v1, refusing it: validate: nginx: [emerg] unexpected'
roll_holds 2 r2 # its agent restarted with the proxy fixed: it takes the step
for _ in $(seq 1 50); do # until A has heard it from C
    curl -s "${R[0]}$RC/clients" | grep -q '"converged":true' && break
    sleep 0.1
done
check "resume" 200 "$(req POST "$RC/rollouts/1/resume")"
for _ in $(seq 1 100); do
    case $(state) in "done "*) break ;; esac
    sleep 0.1
done
check "r2 holds the step: the rollout is done" done "$(state | cut -d' ' -f1)"

# C killed: c6 and c7 poll B from now on, c8 polls nowhere.
poll_all "$V3"
every "9 9 true 0" 3 >/dev/null
kill -9 "${P[2]}"
wait "${P[2]}" 2>/dev/null
for i in 6 7; do holds 1 "c$i" "$V3"; done
sleep 1
for n in 0 1; do check "C killed, c6 c7 on B: counted once (replica $n)" "9 9 true 0" "$(report $n)"; done
for _ in $(seq 1 $(((EXPIRY + 6) * 10))); do
    [ "$(report 0)" = "8 8 true 0" ] && [ "$(report 1)" = "8 8 true 0" ] && break
    # the live clients go on polling, as clients do
    for i in 0 1 2; do holds 0 "c$i" "$V3"; done
    for i in 3 4 5 6 7; do holds 1 "c$i" "$V3"; done
    sleep 0.1
done
for n in 0 1; do check "c8 gone after C's lease expired (replica $n)" "8 8 true 0" "$(report $n)"; done
$PY -c 'import json, sys
c = {x["id"]: x["replica"] for x in json.load(open(sys.argv[1]))["clients"]}
sys.exit(not (c["c6"] == "B" and c["c7"] == "B" and "c8" not in c))' "$TMP/report.0"
check "c6 and c7 now B's on A's report, c8 gone" 0 "$?"

kill -TERM "${P[0]}" "${P[1]}"

# With --token-file, ids a client invents without a client token cost each replica at most 100
# etcd writes a second: 400 strangers on D reach E's report in about 4 s, never at once.
echo "ops:$(printf 'o%.0s' $(seq 1 32))" >"$TMP/tokens"
for name in D E; do
    rk_start --token-file "$TMP/tokens" --replica-name "$name" --clients-expiry 60 \
        --store "etcd://$ETCD_ENDPOINTS/rk-strangers"
    R+=("$BASE") P+=("$PID")
    PID=
done
BASE=${R[3]}
check "publish on D" 201 "$(req POST "$C/versions?activate=true" \
    -H "Authorization: Bearer $(printf 'o%.0s' $(seq 1 32))" --data-binary "$(data 2)")"
strangers() { # strangers N: how many ids replica N lists apart
    curl -s "${R[$1]}$C/clients" | $PY -c 'import json, sys
print(json.load(sys.stdin)["unauthenticated"]["summary"]["total"])'
}
start=$(date +%s%3N)
printf 'url = "%s"\nheader = "RK-Client: s%d"\noutput = "/dev/null"\nnext\n' \
    $(for i in $(seq 1 400); do echo "${R[3]}$C/ring $i"; done) | sed '$d' >"$TMP/strangers.cfg"
curl -s --no-progress-meter --parallel --parallel-max 50 -K "$TMP/strangers.cfg"
sent=$(($(date +%s%3N) - start))
check "D lists the 400 apart" 400 "$(strangers 3)"
sleep 1
early=$(strangers 4)
echo "E lists $early of 400 strangers 1 s after D had all of them (sent in $sent ms)"
check "... E has at most some 100 a second of them" 1 "$([ "$early" -le $((100 * (sent + 1000) / 1000 + 30)) ] && echo 1)"
for _ in $(seq 1 100); do [ "$(strangers 4)" = 400 ] && break; sleep 0.1; done
check "... and all of them within seconds" 400 "$(strangers 4)"
finish
