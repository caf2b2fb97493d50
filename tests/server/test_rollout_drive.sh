#!/usr/bin/env bash
# test_rollout_drive.sh — ringkeeperd drives an approved rollout (SPEC 11, docs/MIGRATE.md
# "Rollouts"): each step published, activated in a migration window, held by the fleet (a real
# long-polling client of the ring), its window finished (a topology without "data": nothing to
# copy), soaked, then the next; activations by hand refused while it runs; pause and resume;
# kill -9 of ringkeeperd mid-rollout, after which a restarted server goes on where it was; the
# end is the target, step for step in the events; abort, and abort with revert back to the start's
# ring; guards (a URL's status, a metric's threshold in this server's own /metrics) that stop a
# rollout after a step, and one that lets it finish. Run on SQLite and on etcd.
# usage: test_rollout_drive.sh RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
PY=/usr/bin/python3 # Debian's, whatever comes first on PATH
C=/v1/clusters/d
rk_start
echo "$BASE" >"$TMP/base"

field() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$1" "$2"; }
# state: "state step phase" of rollout $1, into $TMP/r too.
state() {
    req GET "$C/rollouts/$1" >/dev/null
    $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["state"], d.get("step"), d.get("phase"))' "$TMP/body"
}
# wait_for ID PATTERN [SECONDS]: until the state line matches (a glob), at most SECONDS (60).
wait_for() {
    local s i
    for i in $(seq 1 $((${3:-60} * 5))); do
        s=$(state "$1")
        case "$s" in $2) echo "$s"; return 0 ;; esac
        sleep 0.2
    done
    echo "$s"
}
# body: drain n3 of ten nodes in STEPS steps.
body() {
    $PY - "$1" <<'PY'
import json, sys
nodes = [{"id": "n%d" % i, "addr": "10.0.0.%d:11211" % i, "weight": 1} for i in range(10)]
print(json.dumps({"target": {"hash": "xxh3_64", "vnode_factor": 40,
                             "nodes": [n for n in nodes if n["id"] != "n3"]},
                  "steps": int(sys.argv[1]), "soak_s": 1}))
PY
}

check "publish ten nodes" 201 "$(req POST "$C/versions?activate=true" --data-binary "$(topo 10 40 xxh3_64)")"
# A client of the library as the server sees it: long polls with its id and the ring it holds,
# from whatever port the server has now.
( etag=
  for _ in $(seq 1 2000); do
      curl -s -D "$TMP/client.h" -o /dev/null --max-time 5 -H "RK-Client: app-1" \
          ${etag:+-H "If-None-Match: $etag"} "$(cat "$TMP/base")$C/ring?wait=1" || sleep 0.2
      e=$(sed -n 's/^ETag: *//Ip' "$TMP/client.h" | tr -d '\r')
      [ -n "$e" ] && etag=$e
      [ -f "$TMP/client.stop" ] && exit 0
  done ) &
CLIENT=$!

check "create" 201 "$(req POST "$C/rollouts" --data-binary "$(body 4)")"
D=$(field "$TMP/body" digest)
check "start before approval: 409" 409 "$(req POST "$C/rollouts/1/start")"
has "rollout_state" "$TMP/body" '"code":"rollout_state"'
check "approve" 200 "$(req POST "$C/rollouts/1/approve" --data-binary "{\"digest\":\"$D\"}")"
check "start" 200 "$(req POST "$C/rollouts/1/start")"
check "started" running "$(field "$TMP/body" state)"
check "an activation by hand: 409" 409 "$(req POST "$C/versions/1/activate")"
has "rollout_running" "$TMP/body" '"code":"rollout_running"'
check "a publish that activates: 409" 409 "$(req POST "$C/versions?activate=true" \
    --data-binary "$(topo 3 40 xxh3_64)")"
check "a staged publish is fine" 201 "$(req POST "$C/versions" --data-binary "$(topo 3 40 xxh3_64)")"

# Pause once step 2 is under way, and see it stay.
check "step 2 under way" "running 2" "$(wait_for 1 'running 2 *' | cut -d' ' -f1,2)"
check "pause" 200 "$(req POST "$C/rollouts/1/pause")"
sleep 2
S=$(state 1)
sleep 1.5
check "paused, and stays where it was" "$S" "$(state 1)"
check "resume" 200 "$(req POST "$C/rollouts/1/resume")"

# kill -9 in step 3, then a new server on the same store goes on.
check "step 3 under way" "running 3" "$(wait_for 1 'running 3 *' | cut -d' ' -f1,2)"
kill -9 "$PID"
wait "$PID" 2>/dev/null
PID=
rk_start
echo "$BASE" >"$TMP/base"
check "done after the restart" "done" "$(wait_for 1 'done *' 90 | cut -d' ' -f1)"
check "the ring is the target" 200 "$(req GET "$C/ring")"
check "nine nodes, no window" "9 None" "$($PY -c '
import json, sys
d = json.load(open(sys.argv[1])); print(len(d["nodes"]), d.get("previous"))' "$TMP/body")"
check "rollout" 200 "$(req GET "$C/rollouts/1")"
check "every step done, each with its version" ok "$($PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = [s["version"] for s in d["steps"]]
print("ok" if all(s["state"] == "done" for s in d["steps"]) and v == sorted(v) and len(set(v)) == 4
      else d["steps"])' "$TMP/body")"
check "events" 200 "$(req GET "$C/events?limit=200")"
check "each step activated by the rollout, in a window it finished" ok "$($PY -c '
import json, sys
ev = list(reversed(json.load(open(sys.argv[1]))["events"]))
acts = [e for e in ev if e["kind"] == "activate" and (e.get("detail") or "").startswith("rollout 1 step")]
fins = [e for e in ev if e["kind"] == "finish" and (e.get("detail") or "").startswith("rollout 1 step")]
kinds = [e["kind"] for e in ev if e["kind"].startswith("rollout")]
ok = (len(acts) == 4 and len(fins) == 4 and kinds[:3] == ["rollout_create", "rollout_approve",
      "rollout_start"] and kinds[-1] == "rollout_done" and "rollout_pause" in kinds and
      "rollout_resume" in kinds)
print("ok" if ok else kinds)' "$TMP/body")"
check "activations by hand again" 201 "$(req POST "$C/versions/1/revert?activate=true")"

# abort with revert: a rollout draining n9 in 2 steps, aborted in its second step, goes back to
# where it started (ten nodes, the same ring), in a window of its own.
check "the start's ring" 200 "$(req GET "$C/ring")"
START_FP=$(field "$TMP/body" fingerprint)
check "create 2" 201 "$(req POST "$C/rollouts" --data-binary "$(body 2 | sed 's/"n3"/"n9"/')")"
D=$(field "$TMP/body" digest)
check "abort {revert} before the start: a plain abort" 200 "$(req POST "$C/rollouts/2/abort" \
    --data-binary '{"revert":true}')"
check "... aborted" aborted "$(field "$TMP/body" state)"
check "create 3" 201 "$(req POST "$C/rollouts" --data-binary "$(body 2 | sed 's/"n3"/"n9"/')")"
D=$(field "$TMP/body" digest)
check "approve 3" 200 "$(req POST "$C/rollouts/3/approve" --data-binary "{\"digest\":\"$D\"}")"
check "start 3" 200 "$(req POST "$C/rollouts/3/start")"
check "step 2 under way" "running 2" "$(wait_for 3 'running 2 *' | cut -d' ' -f1,2)"
check "revert must be a boolean" 400 "$(req POST "$C/rollouts/3/abort" --data-binary '{"revert":1}')"
check "abort with revert" 200 "$(req POST "$C/rollouts/3/abort" --data-binary '{"revert":true}')"
check "reverting" reverting "$(field "$TMP/body" state)"
check "hands off meanwhile: 409" 409 "$(req POST "$C/versions/1/activate")"
check "back at the start, aborted" "aborted" "$(wait_for 3 'aborted *' | cut -d' ' -f1)"
check "the ring is the start's again" 200 "$(req GET "$C/ring")"
check "same fingerprint, no window" "$START_FP None" "$(field "$TMP/body" fingerprint) $(field "$TMP/body" previous)"
check "the revert's events" 200 "$(req GET "$C/events?limit=20")"
has "... the revert asked" "$TMP/body" '"kind":"rollout_revert"'
has "... and done" "$TMP/body" "reverted to its start as version"
check "abort again: 409" 409 "$(req POST "$C/rollouts/3/abort")"
check "resume an aborted one: 409" 409 "$(req POST "$C/rollouts/3/resume")"

# Guards: after each step's soak, a URL must answer 2xx and a metric stay under its max. This
# server's own /metrics counts its publishes: a max of 0 stops the rollout after its first step.
guarded() { # guarded ID GUARD: make, approve and start rollout ID (drain n9 in 2 steps) with GUARD
    check "create $1" 201 "$(req POST "$C/rollouts" --data-binary "$(body 2 | sed 's/"n3"/"n9"/' |
        $PY -c 'import json,sys; d=json.load(sys.stdin); d["guard"]=json.loads(sys.argv[1]); print(json.dumps(d))' "$2")")"
    D=$(field "$TMP/body" digest)
    check "approve $1" 200 "$(req POST "$C/rollouts/$1/approve" --data-binary "{\"digest\":\"$D\"}")"
    check "start $1" 200 "$(req POST "$C/rollouts/$1/start")"
}
guarded 4 "{\"url\":\"$BASE/v1/clusters/d/nowhere\"}"
check "a guard answering 404 pauses it after step 1" "paused 1" "$(wait_for 4 'paused *' | cut -d' ' -f1,2)"
check "... saying why" "the guard stopped it after step 1: GET $BASE/v1/clusters/d/nowhere answered 404, not 2xx" \
    "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["reason"])' "$TMP/body")"
check "abort 4 back to the start" 200 "$(req POST "$C/rollouts/4/abort" --data-binary '{"revert":true}')"
check "... aborted" aborted "$(wait_for 4 'aborted *' | cut -d' ' -f1)"
guarded 5 "{\"url\":\"$BASE/metrics\",\"metric\":\"ringkeeper_publishes_total\",\"max\":0}"
check "a metric over its max pauses it" "paused 1" "$(wait_for 5 'paused *' | cut -d' ' -f1,2)"
has "... naming the metric" "$TMP/body" "ringkeeper_publishes_total is"
check "abort 5 back to the start" 200 "$(req POST "$C/rollouts/5/abort" --data-binary '{"revert":true}')"
check "... aborted" aborted "$(wait_for 5 'aborted *' | cut -d' ' -f1)"
guarded 6 "{\"url\":\"$BASE/metrics\",\"metric\":\"ringkeeper_publishes_total\",\"max\":1000000}"
check "a guard that holds lets it finish" done "$(wait_for 6 'done *' | cut -d' ' -f1)"
# A policy tightened after the approval (issue 52: approved under one approval, an admin then
# asked for 3 and max_moved_fraction 0.01, and step 1 activated 8% anyway): each step's activation
# answers to the policy in force at its commit, and a step it refuses pauses the rollout naming the
# rule; loosened again, the rollout resumes. On cluster p, its own.
C=/v1/clusters/p
check "p: ten nodes" 201 "$(req POST "$C/versions?activate=true" --data-binary "$(topo 10 40 xxh3_64)")"
check "p: create" 201 "$(req POST "$C/rollouts" --data-binary "$(body 2)")"
D=$(field "$TMP/body" digest)
check "p: approve, one approval" 200 "$(req POST "$C/rollouts/1/approve" --data-binary "{\"digest\":\"$D\"}")"
check "p: the policy asks for 3 approvals now" 200 "$(req PUT "$C/policy" --data-binary \
    '{"approvals":3,"max_moved_fraction":0.01}')"
check "p: start" 200 "$(req POST "$C/rollouts/1/start")"
check "p: step 1 refused: paused" "paused 1" "$(wait_for 1 'paused *' | cut -d' ' -f1,2)"
has "p: ... naming the approvals" "$TMP/body" "policy asks for 3 approvals now, and rollout 1 has 1"
check "p: still the start's version" 1 "$(req GET "$C/ring" >/dev/null; field "$TMP/body" version)"
check "p: one approval again" 200 "$(req PUT "$C/policy" --data-binary \
    '{"approvals":0,"max_moved_fraction":0.01}')"
check "p: resume" 200 "$(req POST "$C/rollouts/1/resume")"
check "p: refused by the budget: paused" "paused 1" "$(wait_for 1 'paused *' | cut -d' ' -f1,2)"
has "p: ... naming max_moved_fraction" "$TMP/body" "over the policy's max_moved_fraction of 1.0000%"
check "p: still the start's version" 1 "$(req GET "$C/ring" >/dev/null; field "$TMP/body" version)"
check "p: the budget loosened" 200 "$(req PUT "$C/policy" --data-binary '{"max_moved_fraction":1}')"
check "p: resume" 200 "$(req POST "$C/rollouts/1/resume")"
check "p: step 1 activated" yes "$(wait_for 1 'running 1 hold' >/dev/null; wait_for 1 'running 2 *' >/dev/null;
    req GET "$C/ring" >/dev/null; [ "$(field "$TMP/body" version)" -gt 1 ] && echo yes)"
check "p: abort" 200 "$(req POST "$C/rollouts/1/abort")"

touch "$TMP/client.stop"
wait "$CLIENT"
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
[ "$FAILED" -eq 0 ] || tail -n 60 "$TMP/server.log" # a sanitizer's report, when run under one
finish
