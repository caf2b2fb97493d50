#!/usr/bin/env bash
# test_rollouts.sh — a rollout's review and approval over HTTP (SPEC 11, docs/MIGRATE.md
# "Rollouts"): POST .../rollouts reviews the change from the active version to a target in steps
# and keeps it; its refusals, field by field, keep nothing; the policy's budget bounds each step;
# the approval is bound to the digest over the steps' plans and to the policy's approvers; the
# rollout and its events survive a restart. Run on SQLite and on etcd (RK_TEST_STORE=etcd).
# usage: test_rollouts.sh RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
PY=/usr/bin/python3 # Debian's, whatever comes first on PATH
ALICE=alice-token-0123456789
BOB=bob-token-0123456789ab
printf 'alice:%s\nbob:%s\n' "$ALICE" "$BOB" >"$TMP/tokens"
A=(-H "Authorization: Bearer $ALICE")
B=(-H "Authorization: Bearer $BOB")
C=/v1/clusters/r
rk_start --token-file "$TMP/tokens"

# field FILE NAME: a top-level field of a JSON document, as Python prints it.
field() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# body TARGET MORE: a create's body, the target's nodes n0..n9 without those in $DROP.
body() {
    $PY - "$1" "$2" <<'PY'
import json, sys
drop, more = sys.argv[1].split(","), sys.argv[2]
nodes = [{"id": "n%d" % i, "addr": "10.0.0.%d:11211" % i, "weight": 1} for i in range(10)]
doc = {"target": {"hash": "xxh3_64", "vnode_factor": 40,
                  "nodes": [n for n in nodes if n["id"] not in drop]}}
doc.update(json.loads(more or "{}"))
print(json.dumps(doc))
PY
}
create() { req POST "$C/rollouts" "${A[@]}" --data-binary "$1"; }

check "no active version: 404" 404 "$(create "$(body n3 '{"steps":5}')")"
check "publish ten nodes" 201 "$(req POST "$C/versions?activate=true" "${A[@]}" \
    --data-binary "$(topo 10 40 xxh3_64)")"
check "a create needs a token" 401 "$(req POST "$C/rollouts" --data-binary "$(body n3 '{"steps":5}')")"

# Refusals, each naming its field; none keeps anything.
refused() { # refused NAME STATUS CODE FIELD BODY
    check "$1: $2" "$2" "$(create "$5")"
    has "$1: code" "$TMP/body" "\"code\":\"$3\""
    has "$1: field" "$TMP/body" "\"field\":\"$4\""
}
refused "steps and max_step_moved" 400 invalid_body steps "$(body n3 '{"steps":5,"max_step_moved":0.1}')"
refused "neither" 400 invalid_body steps "$(body n3 '')"
refused "101 steps" 400 invalid_body steps "$(body n3 '{"steps":101}')"
refused "max_step_moved 0" 400 invalid_body max_step_moved "$(body n3 '{"max_step_moved":0}')"
refused "soak_s -1" 400 invalid_body soak_s "$(body n3 '{"steps":5,"soak_s":-1}')"
refused "a guard of ftp" 400 invalid_body guard.url \
    "$(body n3 '{"steps":5,"guard":{"url":"ftp://x"}}')"
refused "a metric without max" 400 invalid_body guard.metric \
    "$(body n3 '{"steps":5,"guard":{"url":"http://127.0.0.1:1/metrics","metric":"x"}}')"
refused "a guard with more" 400 invalid_body guard \
    "$(body n3 '{"steps":5,"guard":{"url":"http://127.0.0.1:1/","when":1}}')"
refused "an unknown field" 400 invalid_body when "$(body n3 '{"steps":5,"when":"now"}')"
refused "a weight off the steps of 1/40" 400 invalid_topology "target.nodes[0].weight" \
    '{"steps":5,"target":{"hash":"xxh3_64","vnode_factor":40,"nodes":[{"id":"a","addr":"h:1","weight":1.01}]}}'
refused "another hash" 422 hash_mismatch target \
    '{"steps":5,"target":{"hash":"fnv1a_32","vnode_factor":40,"nodes":[{"id":"a","addr":"h:1","weight":1}]}}'
refused "more steps than units" 400 invalid_body steps "$(body n3 '{"steps":41}')"
refused "no split within max_step_moved" 422 rollout_too_large max_step_moved \
    "$(body n3 '{"max_step_moved":0.0001}')"
check "the refusals kept no rollout" 200 "$(req GET "$C/rollouts")"
has "an empty list" "$TMP/body" '"rollouts":[]'

# The review: five steps draining n3, which move together what one shot moves.
check "create" 201 "$(create "$(body n3 '{"steps":5,"soak_s":30}')")"
cp "$TMP/body" "$TMP/r1"
check "rollout 1 in review" "1 review" "$(field "$TMP/r1" id) $(field "$TMP/r1" state)"
check "five steps, ramping n3 1 -> 0.8 ... -> 0, the last the target" ok "$($PY - "$TMP/r1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = [[n["weight"] for n in s["topology"]["nodes"] if n["id"] == "n3"] for s in r["steps"]]
ok = (w == [[0.8], [0.6], [0.4], [0.2], []] and
      abs(sum(s["moved_fraction"] for s in r["steps"]) - r["one_shot_moved"]) < 1e-9 and
      all(s["state"] == "pending" and s["version"] is None for s in r["steps"]) and
      r["from"]["version"] == 1 and r["options"]["soak_s"] == 30 and len(r["digest"]) == 16)
print("ok" if ok else json.dumps({k: r[k] for k in r if k != "steps"}) + " " + str(w))
PY
)"
check "GET it" 200 "$(req GET "$C/rollouts/1")"
check "as created" "$(field "$TMP/r1" digest)" "$(field "$TMP/body" digest)"
check "an id not kept: 404" 404 "$(req GET "$C/rollouts/7")"
has "no_rollout" "$TMP/body" '"code":"no_rollout"'
check "an id that is no number" 400 "$(req GET "$C/rollouts/x")"
has "says a rollout id" "$TMP/body" "a rollout id in the path"

# The budget: with max_moved_fraction 0.025 a 5-step split (one step moves 0.033) is refused,
# naming the step; max_step_moved is cut to the budget.
check "a budget" 200 "$(req PUT "$C/policy" "${A[@]}" --data-binary \
    '{"max_moved_fraction":0.025,"approvals":2,"distinct_approver":true}')"
check "a step over the budget: 422" 422 "$(create "$(body n3 '{"steps":5}')")"
has "budget_exceeded" "$TMP/body" '"code":"budget_exceeded"'
has "names the step" "$TMP/body" "step 2 moves"
check "max_step_moved over the budget is cut to it" 201 "$(create "$(body n3 '{"max_step_moved":0.5}')")"
cp "$TMP/body" "$TMP/r2"
check "rollout 2 replaced the one in review" 2 "$(field "$TMP/r2" id)"
check "each step within the budget" ok "$($PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("ok" if all(s["moved_fraction"] <= 0.025 for s in r["steps"]) and r["approvals_needed"] == 2
      else r)' "$TMP/r2")"
check "rollout 1 is gone: 404" 404 "$(req GET "$C/rollouts/1")"

# Approvals: the digest's, two names, none the author's.
D=$(field "$TMP/r2" digest)
approve() { req POST "$C/rollouts/2/approve" "$@" --data-binary "{\"digest\":\"$D\"}"; }
check "a stale digest: 409" 409 "$(req POST "$C/rollouts/2/approve" "${B[@]}" --data-binary \
    '{"digest":"0000000000000000"}')"
has "plan_changed" "$TMP/body" '"code":"plan_changed"'
check "the author may not approve: 403" 403 "$(approve "${A[@]}")"
has "self_approval" "$TMP/body" '"code":"self_approval"'
check "bob approves" 200 "$(approve "${B[@]}")"
check "one of two: still in review" review "$(field "$TMP/body" state)"
check "bob again: 403" 403 "$(approve "${B[@]}")"
check "the policy down to one approval" 200 "$(req PUT "$C/policy" "${A[@]}" --data-binary \
    '{"max_moved_fraction":0.025,"approvals":1,"distinct_approver":false}')"
check "alice approves" 200 "$(approve "${A[@]}")"
check "approved" approved "$(field "$TMP/body" state)"
check "approved once: 409" 409 "$(approve "${A[@]}")"
has "rollout_state" "$TMP/body" '"code":"rollout_state"'

# The CLI's view of them.
RK=$(dirname "$RKD")/../client/ringkeeper
export RINGKEEPER_SERVER=$BASE
check "ringkeeper rollouts show" "rollout 2 approved, step 0 of $($PY -c '
import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$TMP/r2"), digest $D" \
    "$("$RK" rollouts show --cluster r)"
check "... -q: the state" approved "$("$RK" rollouts show --cluster r -q)"
"$RK" rollouts approve --id 2 --cluster r --token "$ALICE" >/dev/null 2>"$TMP/cli.err"
check "approve without --digest: usage, exit 2" 2 "$?"
"$RK" rollouts start --id 9 --cluster r --token "$ALICE" >/dev/null 2>"$TMP/cli.err"
check "start an unknown id: exit 2" 2 "$?"
has "... the server's message" "$TMP/cli.err" "no rollout 9"
$PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["target"]))' \
    <(body n4 '') >"$TMP/t.json"
"$RK" rollouts create --to-file "$TMP/t.json" --max-step-moved 0.02 --cluster r --token "$BOB" \
    -o json >"$TMP/r3" 2>"$TMP/cli.err"
check "ringkeeper rollouts create" "3 review" "$(field "$TMP/r3" id) $(field "$TMP/r3" state)"

# Kept across a restart, with its events.
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
rk_start --token-file "$TMP/tokens"
check "rollout 3 replaced the approved one" 404 "$(req GET "$C/rollouts/2")"
check "after a restart" 200 "$(req GET "$C/rollouts/3")"
check "still in review, same digest" "review $(field "$TMP/r3" digest)" "$(field "$TMP/body" state) $(field "$TMP/body" digest)"
check "events" 200 "$(req GET "$C/events?limit=100")"
check "the rollout's events" "rollout_create rollout_create rollout_approve rollout_approve rollout_create" \
    "$($PY -c '
import json, sys
print(" ".join(e["kind"] for e in reversed(json.load(open(sys.argv[1]))["events"])
               if e["kind"].startswith("rollout")))' "$TMP/body")"
finish
