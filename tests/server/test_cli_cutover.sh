#!/usr/bin/env bash
# test_cli_cutover.sh — the cutover as two operators run it with the CLI and their own tokens:
# alice sets the policy and publishes, bob reads the plan and approves it (declining first),
# an unrelated activation makes his approval stale, he approves again, the gate answers plainly
# (budget, approvals), a forced activation goes through, and the events tell the story.
# usage: test_cli_cutover.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
ALICE=alice-token-0123456789
BOB=bob-token-0123456789ab
BOT=bot-token-0123456789ab # a long name, as automation's tokens have
printf 'alice:%s\nbob:%s\nrelease-automation-bot:%s\n' "$ALICE" "$BOB" "$BOT" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
cli() { # cli TOKEN EXIT NAME ARGS...: runs ringkeeper with TOKEN, checks its exit code
    local tok=$1 want=$2 name=$3
    shift 3
    RINGKEEPER_TOKEN=$tok "$RK" "$@" --server "$BASE" --cluster shop </dev/null >"$TMP/out" 2>"$TMP/err"
    check "$name: exit" "$want" "$?"
}
topo 3 >"$TMP/t3"; topo 4 >"$TMP/t4"; topo 5 >"$TMP/t5"

cli "$ALICE" 0 "publish v1" publish "$TMP/t3" --activate
cli "$ALICE" 0 "policy show" policy show
has "policy show: the defaults" "$TMP/out" '"approvals": 0'
cli "$ALICE" 2 "policy set: a bad value" policy set --approvals 500
cli "$ALICE" 2 "policy: show or set" policy list
cli "" 2 "policy set: needs a token" policy set --approvals 1
cli "$ALICE" 0 "policy set" policy set --approvals 1 --distinct-approver yes --max-moved-fraction 0.1
has "policy set: approvals" "$TMP/out" '"approvals": 1'
has "policy set: the budget, as set" "$TMP/out" '"max_moved_fraction": 0.1,'
cli "$ALICE" 2 "policy set: a byte budget of 0" policy set --max-moved-bytes 0
has "policy set: ... says what is allowed" "$TMP/err" "none or a whole number of bytes"
cli "$ALICE" 0 "policy set: a byte budget" policy set --max-moved-bytes 5000000000
has "policy set: ... as set" "$TMP/out" '"max_moved_bytes": 5000000000'
cli "$ALICE" 0 "policy set: no byte budget" policy set --max-moved-bytes none
has "policy set: ... none" "$TMP/out" '"max_moved_bytes": null'
cli "$ALICE" 0 "publish v2" publish "$TMP/t4"
cli "$ALICE" 0 "publish v3" publish "$TMP/t5"

cli "$BOB" 2 "approve: declined (no answer on stdin)" approve 3
has "approve: shows the plan" "$TMP/out" "digest"
has "approve: says it was not approved" "$TMP/err" "not approved"
printf 'y\n' | RINGKEEPER_TOKEN=$BOB "$RK" approve 3 --server "$BASE" --cluster shop >"$TMP/out" 2>"$TMP/err"
check "approve v3: confirmed" 0 "$?"
cli "$ALICE" 2 "approve: alice published it" approve 3 --yes
has "approve: self approval refused" "$TMP/err" "another operator must approve"
check "approve: refused before the plan is shown" "" "$(cat "$TMP/out")"

cli "$BOB" 0 "approve v2" approve 2 --yes --comment "small step first"
cli "$ALICE" 2 "activate v2: over budget" activate 2
has "activate: the gate's figures" "$TMP/err" "moves 18.7389% of the hash space, over the policy's max_moved_fraction of 10.0000%"
cli "$ALICE" 0 "policy: no budget" policy set --max-moved-fraction 1
cli "$ALICE" 0 "activate v2" activate 2
cli "$ALICE" 2 "activate v3: bob's approval is stale" activate 3
has "activate v3: says why" "$TMP/err" "needs 1 approval of plan"
cli "$BOB" 0 "approve v3 again" approve 3 --yes
cli "$ALICE" 0 "activate v3" activate 3

cli "$BOB" 0 "events" events --limit 5
check "events: newest first" "activate approve activate policy approve" \
    "$(awk 'NR > 1 { printf "%s%s", sep, $3; sep = " " }' "$TMP/out")"
has "events: the versions moved" "$TMP/out" "v2 -> v3"
has "events: bob's comment" "$TMP/out" "small step first"
cli "$BOB" 2 "events: a bad limit" events --limit 0
# the table stays in line with a long author and a long detail: each column starts where its
# header does, on every line, and the detail (last) is each event's whole
LONG=$(printf 'the canary held for an hour, %.0s' 1 2 3 4 5 6)
cli "$ALICE" 0 "publish v4" publish "$TMP/t4"
cli "$BOT" 0 "a long name approves v4 with a long comment" approve 4 --yes --comment "$LONG"
cli "$BOB" 0 "events with long cells" events --limit 4
/usr/bin/python3 - "$TMP/out" "$LONG" >"$TMP/aligned" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
starts = [m.start() for m in re.finditer(r"\S+", lines[0])]  # where each header's column begins
bad = [l for l in lines[1:] if any(l[s - 2:s] != "  " or l[s] == " " for s in starts[1:-1])
       or (sys.argv[2] in l and l[starts[-1]:] != sys.argv[2])]
print("aligned" if len(lines) == 5 and not bad and sys.argv[2] in lines[1] else "not aligned: %r" % lines)
PY
check "events: columns in line" aligned "$(cat "$TMP/aligned")"

# a policy that needs approvals from the very first activation: every refusal leads somewhere
clu() { # clu TOKEN EXIT NAME ARGS...: as cli, on cluster fresh
    local tok=$1 want=$2 name=$3
    shift 3
    RINGKEEPER_TOKEN=$tok "$RK" "$@" --server "$BASE" --cluster fresh </dev/null >"$TMP/out" 2>"$TMP/err"
    check "$name: exit" "$want" "$?"
}
clu "$ALICE" 0 "fresh: publish v1" publish "$TMP/t3"
clu "$ALICE" 0 "fresh: policy" policy set --approvals 1 --distinct-approver yes
clu "$ALICE" 2 "fresh: activate v1 unapproved" activate 1
has "fresh: says how to approve" "$TMP/err" "approve it with: ringkeeper approve 1"
clu "$BOB" 0 "fresh: approve 1, a first activation" approve 1 --yes
has "fresh: shows what it approves" "$TMP/out" "first activation of cluster fresh: no version is active, so nothing moves"
has "fresh: v1's nodes" "$TMP/out" "version 1: 3 nodes"
clu "$ALICE" 0 "fresh: activate v1 approved" activate 1
# publish --activate: nothing is active without approvals, so the version is published staged and
# the refusal names it
clu "$ALICE" 2 "fresh: publish --activate unapproved" publish "$TMP/t4" --activate
check "fresh: publish --activate: says what to do" "ringkeeper publish: published version 2, staged: the policy of cluster fresh needs approvals before it is activated; approve it with: ringkeeper approve 2, then activate it with: ringkeeper activate 2" "$(cat "$TMP/err")"
clu "$ALICE" 0 "fresh: v2 exists" show 2 -o json
has "fresh: v2 is staged" "$TMP/out" '"state": "staged"'
clu "$BOB" 0 "fresh: approve 2" approve 2 --yes
clu "$ALICE" 0 "fresh: activate 2" activate 2
finish
