#!/usr/bin/env bash
# test_rollout_data.sh — a rollout whose topology names its data (SPEC 11 with SPEC 10): draining
# one of four memcached servers in two steps, ringkeeperd drives each step into a window and waits
# while the worker (`ringkeeper migrate run --finish`, run by this script whenever a step is in
# its move phase, as an operator's loop would) copies, verifies and finishes it; at the end every
# key is on its owner under the target, none left only on the drained server. A long-polling
# client holds each step. Then back in two steps with a worker as a service (--follow); then the
# same cluster as one served by proxies (the policy's prewarm): an activation without its verified
# pre-warm is refused, and a rollout pre-warms each step (the follower runs it) before activating
# it, with no window. Skips (77) when memcached is not installed.
# usage: test_rollout_data.sh RINGKEEPERD RINGKEEPER
set -u
# shellcheck source=migrate_lib.sh
. "$(dirname "$0")/migrate_lib.sh" "$1" "$2"
trap 'touch "$TMP/client.stop"; rkm_cleanup; rk_cleanup' EXIT
PY=/usr/bin/python3
KEYS=2000
C=/v1/clusters/mc
rk_start
export RINGKEEPER_SERVER=$BASE

rkm_ports 4
ADDR=()
for p in "${PORTS[@]}"; do
    rkm_memcached "$p"
    ADDR+=("127.0.0.1:$p")
done
rkm_up "${PORTS[@]}" || exit 1
# nodes N: n0..n(N-1) on the servers, as a topology
topo_of() {
    local nodes= i
    for i in $(seq 0 $(($1 - 1))); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"${ADDR[$i]}\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":100,"data":"memcached","nodes":[%s]}' "$nodes"
}
topo_of 4 >"$TMP/t4"
topo_of 3 >"$TMP/t3"
seq -f 'key-%g' 0 $((KEYS - 1)) >"$TMP/keys"
"$RK" lookup --topology "$TMP/t4" <"$TMP/keys" >"$TMP/own4"
"$RK" lookup --topology "$TMP/t3" <"$TMP/keys" | cut -f2 | paste "$TMP/own4" - >"$TMP/owners"
# shellcheck disable=SC2046 # node_map's words are the arguments
python3 "$HERE/migrate_keys.py" fill memcached $(node_map) <"$TMP/own4"

check "publish four nodes" 201 "$(req POST "$C/versions?activate=true" --data-binary @"$TMP/t4")"
( etag=
  for _ in $(seq 1 2000); do
      curl -s -D "$TMP/client.h" -o /dev/null --max-time 5 -H "RK-Client: app-1" \
          ${etag:+-H "If-None-Match: $etag"} "$BASE$C/ring?wait=1" || sleep 0.2
      e=$(sed -n 's/^ETag: *//Ip' "$TMP/client.h" | tr -d '\r')
      [ -n "$e" ] && etag=$e
      [ -f "$TMP/client.stop" ] && exit 0
  done ) &
check "create" 201 "$(req POST "$C/rollouts" --data-binary "{\"target\":$(cat "$TMP/t3"),\"steps\":2}")"
D=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$TMP/body")
check "approve" 200 "$(req POST "$C/rollouts/1/approve" --data-binary "{\"digest\":\"$D\"}")"
check "start" 200 "$(req POST "$C/rollouts/1/start")"

# state_of R: "state phase" of rollout R, its "waiting" (what a phase waits for) into $TMP/waiting
state_of() {
    req GET "$C/rollouts/$1" >/dev/null
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("waiting", ""), file=open(sys.argv[2], "w")); print(d["state"], d.get("phase"))' "$TMP/body" "$TMP/waiting"
}

runs=0
: >"$TMP/waited"
for _ in $(seq 1 300); do
    s=$(state_of 1)
    case "$s" in
    "running move")
        cat "$TMP/waiting" >>"$TMP/waited"
        "$RK" migrate run --cluster mc --finish >>"$TMP/worker.out" 2>&1 && runs=$((runs + 1)) ;;
    "running hold") cat "$TMP/waiting" >>"$TMP/waited"; sleep 0.2 ;;
    running*) sleep 0.2 ;;
    *) break ;;
    esac
done
check "done" "done None" "$s"
check "one worker run a step" 2 "$runs"
has "a move phase says what it waits for" "$TMP/waited" "move: no job copies the window to v"
if grep -q "^hold" "$TMP/waited"; then
    has "a hold phase says who holds what" "$TMP/waited" "clients hold v"
else ok; fi
# shellcheck disable=SC2046
check "every key on its owner under the target, each moving key moved" ok "$(
    got=$(python3 "$HERE/migrate_keys.py" check memcached $(node_map) <"$TMP/owners")
    moving=${got#moving=}; moving=${moving%% *}
    [ "$got" = "moving=$moving on_old=$KEYS on_new=$moving" ] && [ "$moving" -gt 0 ] && echo ok || echo "$got")"
check "events" 200 "$(req GET "$C/events?limit=100")"
check "each window finished by the worker's verified job" 2 "$($PY -c '
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
print(sum(1 for e in ev if e["kind"] == "migration_verified"))' "$TMP/body")"

# back to four nodes, in two steps, with one worker as a service (run --follow) that runs each
# step's window job to its finish as it opens, until SIGTERM
check "create the way back" 201 "$(req POST "$C/rollouts" --data-binary "{\"target\":$(cat "$TMP/t4"),\"steps\":2}")"
D=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$TMP/body")
check "approve it" 200 "$(req POST "$C/rollouts/2/approve" --data-binary "{\"digest\":\"$D\"}")"
"$RK" migrate run --cluster mc --follow >"$TMP/follow.out" 2>"$TMP/follow.err" &
follower=$!
check "start it" 200 "$(req POST "$C/rollouts/2/start")"
for _ in $(seq 1 300); do
    s=$(state_of 2)
    case "$s" in running*) sleep 0.2 ;; *) break ;; esac
done
check "the follower took it to the end" "done None" "$s"
kill -TERM $follower; wait $follower; rc=$?
check "SIGTERM ends the follower" 0 $rc
has "... saying so" "$TMP/follow.err" "stopped by a signal"
check "... which finished both windows" 2 "$(grep -c "the migration window is finished" "$TMP/follow.err")"
"$RK" lookup --topology "$TMP/t3" <"$TMP/keys" >"$TMP/own3"
"$RK" lookup --topology "$TMP/t4" <"$TMP/keys" | cut -f2 | paste "$TMP/own3" - >"$TMP/owners"
# shellcheck disable=SC2046
check "every key back on its owner under four nodes" ok "$(
    got=$(python3 "$HERE/migrate_keys.py" check memcached $(node_map) <"$TMP/owners")
    moving=${got#moving=}; moving=${moving%% *}
    [ "$got" = "moving=$moving on_old=$KEYS on_new=$moving" ] && [ "$moving" -gt 0 ] && echo ok || echo "$got")"
# served by proxies, which read one ring (docs/MIGRATE.md, "Clusters served by proxies"): no
# window, and each activation only after its version's pre-warm is verified
check "policy: prewarm, no window" 200 "$(req PUT "$C/policy" --data-binary '{"prewarm":true,"migration_window":false}')"
check "policy: says so" True "$(jq_ "$TMP/body" 'd["prewarm"]')"
check "publish --activate: refused" 409 "$(req POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
has "... saying how" "$TMP/body" "publish the version without activate=true, pre-warm it"
check "publish staged" 201 "$(req POST "$C/versions" --data-binary @"$TMP/t3")"
V=$(jq_ "$TMP/body" 'd["version"]')
check "activate, not pre-warmed: refused" 409 "$(req POST "$C/versions/$V/activate")"
has "... as not verified" "$TMP/body" '"code":"not_verified"'
has "... naming the command" "$TMP/body" "ringkeeper migrate run -c mc --before-cutover --to $V, then activate"
"$RK" migrate run --cluster mc --before-cutover --to "$V" >>"$TMP/worker.out" 2>&1
check "the pre-warm" 0 $?
check "activate, pre-warmed" 200 "$(req POST "$C/versions/$V/activate")"
check "no window opened" 0 "$(req GET "$C/clients?limit=1" >/dev/null; jq_ "$TMP/body" 'd["summary"]["previous"] or 0')"
"$RK" lookup --topology "$TMP/t4" <"$TMP/keys" >"$TMP/own4"
"$RK" lookup --topology "$TMP/t3" <"$TMP/keys" | cut -f2 | paste "$TMP/own4" - >"$TMP/owners"
# shellcheck disable=SC2046
check "every moving key on its new owner at the activation" ok "$(
    got=$(python3 "$HERE/migrate_keys.py" check memcached $(node_map) <"$TMP/owners")
    moving=${got#moving=}; moving=${moving%% *}
    [ "$got" = "moving=$moving on_old=$KEYS on_new=$moving" ] && [ "$moving" -gt 0 ] && echo ok || echo "$got")"

check "a rollout back to four" 201 "$(req POST "$C/rollouts" --data-binary "{\"target\":$(cat "$TMP/t4"),\"steps\":2}")"
D=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$TMP/body")
check "approve it" 200 "$(req POST "$C/rollouts/3/approve" --data-binary "{\"digest\":\"$D\"}")"
check "start it, no worker yet" 200 "$(req POST "$C/rollouts/3/start")"
for _ in $(seq 1 50); do
    s=$(state_of 3)
    [ "$s" = "running prewarm" ] && break
    sleep 0.2
done
check "it waits for the pre-warm" "running prewarm" "$s"
has "... saying what it waits for" "$TMP/waiting" "prewarm: no job pre-warms v"
"$RK" migrate run --cluster mc --follow >"$TMP/follow.out" 2>"$TMP/follow2.err" &
follower=$!
: >"$TMP/phases"
for _ in $(seq 1 300); do
    s=$(state_of 3)
    echo "$s" >>"$TMP/phases"
    case "$s" in running*) sleep 0.2 ;; *) break ;; esac
done
check "the follower pre-warmed each step to the end" "done None" "$s"
kill -TERM $follower; wait $follower
check "... pre-warming both" 2 "$(grep -c "started job .*v[0-9]* -> v[0-9]*" "$TMP/follow2.err")"
has "... held by the client" "$TMP/phases" "running hold"
check "... never a window" 0 "$(grep -c "window is finished" "$TMP/follow2.err")"
check "events" 200 "$(req GET "$C/events?limit=100")"
check "... no window was finished since the policy" 0 "$($PY -c '
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
pol = max(e["event"] for e in ev if e["kind"] == "policy")
print(sum(1 for e in ev if e["kind"] == "finish" and e["event"] > pol))' "$TMP/body")"
check "each step activated after its pre-warm was verified" ok "$($PY -c '
import json, sys
ev = sorted(json.load(open(sys.argv[1]))["events"], key=lambda e: e["event"])
steps = [e for e in ev if e["kind"] == "activate" and e.get("author") == "rollout"]
bad = [s["version"] for s in steps[-2:] if not any(
    v["kind"] == "migration_verified" and v["version"] == s["version"] and
    v["from_version"] == s["from_version"] and v["event"] < s["event"] for v in ev)]
print("ok" if len(steps) >= 2 and not bad else "steps %s, not pre-warmed %s" % ([s["version"] for s in steps], bad))' "$TMP/body")"
"$RK" lookup --topology "$TMP/t3" <"$TMP/keys" >"$TMP/own3"
"$RK" lookup --topology "$TMP/t4" <"$TMP/keys" | cut -f2 | paste "$TMP/own3" - >"$TMP/owners"
# shellcheck disable=SC2046
check "every key on its owner under four nodes again" ok "$(
    got=$(python3 "$HERE/migrate_keys.py" check memcached $(node_map) <"$TMP/owners")
    moving=${got#moving=}; moving=${moving%% *}
    [ "$got" = "moving=$moving on_old=$KEYS on_new=$moving" ] && [ "$moving" -gt 0 ] && echo ok || echo "$got")"
[ "$FAILED" -eq 0 ] || { tail -n 30 "$TMP/worker.out"; tail -n 30 "$TMP/follow.err"; tail -n 30 "$TMP/follow2.err"; tail -n 30 "$TMP/server.log"; }
finish
