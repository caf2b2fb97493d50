#!/usr/bin/env bash
# test_cutover.sh — The cutover (docs/API.md) over HTTP with two operators' tokens: the policy (defaults,
# field-by-field refusals, tokens), approvals bound to the plan's digest (self approval, a stale
# digest), the gate (approval_required, budget_exceeded with its figures, whether its rings were
# cached or not, force with a reason) and
# the events that record all of it, newest first and paged.
# usage: test_cutover.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
ALICE=alice-token-0123456789
BOB=bob-token-0123456789ab
printf 'alice:%s\nbob:%s\n' "$ALICE" "$BOB" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
C=/v1/clusters/cache
as() { local who=$1 method=$2 path=$3; shift 3; req "$method" "$path" -H "Authorization: Bearer $who" -H 'Content-Type: application/json' "$@"; }
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$TMP/body" | head -1; }
digest() { req GET "$C/plan?from=$1&to=$2&arcs=false" >/dev/null; field digest; }

topo 3 >"$TMP/t3"; topo 4 >"$TMP/t4"; topo 5 >"$TMP/t5"; topo 6 >"$TMP/t6"
check "publish v1 and activate" 201 "$(as "$ALICE" POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
check "publish v2" 201 "$(as "$ALICE" POST "$C/versions" --data-binary @"$TMP/t4")"

check "policy: defaults" 200 "$(req GET "$C/policy")"
check "policy: default body" '{"max_moved_fraction":1.0,"max_balance_after":null,"approvals":0,"distinct_approver":false,"migration_window":false,"prewarm":false,"max_moved_bytes":null}' "$(cat "$TMP/body")"
check "policy: unknown cluster" 404 "$(req GET /v1/clusters/nope/policy)"
check "policy: a write needs a token" 401 "$(req PUT "$C/policy" --data-binary '{"approvals":1}')"
for bad in '{"max_moved_fraction":1.5}:max_moved_fraction' '{"max_balance_after":0.5}:max_balance_after' \
    '{"approvals":1.5}:approvals' '{"approvals":101}:approvals' '{"distinct_approver":1}:distinct_approver' \
    '{"budget":1}:budget' '{"max_moved_fraction":"0.1"}:max_moved_fraction'; do
    check "policy ${bad%:*}: 400" 400 "$(as "$ALICE" PUT "$C/policy" --data-binary "${bad%:*}")"
    check "policy ${bad%:*}: names the field" "${bad##*:}" "$(field field)"
done
check "policy: not JSON" 400 "$(as "$ALICE" PUT "$C/policy" --data-binary 'nope')"
check "policy: refusals changed nothing" 200 "$(req GET "$C/policy")"
has "policy: still the defaults" "$TMP/body" '"approvals":0'
check "policy: set" 200 "$(as "$ALICE" PUT "$C/policy" --data-binary '{"max_moved_fraction":0.1,"approvals":1,"distinct_approver":true}')"
check "policy: fields left out keep their value" 200 "$(as "$ALICE" PUT "$C/policy" --data-binary '{"max_balance_after":1.5}')"
check "policy: merged, the fraction as it was set (shortest form)" '{"max_moved_fraction":0.1,"max_balance_after":1.5,"approvals":1,"distinct_approver":true,"migration_window":false,"prewarm":false,"max_moved_bytes":null}' "$(cat "$TMP/body")"

D12=$(digest 1 2)
check "plan digest: 16 hex digits" 16 "${#D12}"
check "approve: own version" 403 "$(as "$ALICE" POST "$C/versions/2/approve" --data-binary "{\"digest\":\"$D12\"}")"
check "approve: own version code" self_approval "$(field code)"
check "approve: another plan" 409 "$(as "$BOB" POST "$C/versions/2/approve" --data-binary '{"digest":"0123456789abcdef"}')"
check "approve: another plan code" plan_changed "$(field code)"
has "approve: a digest of no plan says so" "$TMP/body" "the plan to version 2 is now $D12, not 0123456789abcdef, which is no plan to it from any earlier version: check the digest"
# a dry run checks everything an approval would and records nothing
check "approve: dry run of her own version" 403 "$(as "$ALICE" POST "$C/versions/2/approve" --data-binary "{\"digest\":\"$D12\",\"dry_run\":true}")"
check "approve: dry run of her own version: code" self_approval "$(field code)"
check "approve: dry run" 200 "$(as "$BOB" POST "$C/versions/2/approve" --data-binary "{\"digest\":\"$D12\",\"dry_run\":true}")"
has "approve: dry run says so" "$TMP/body" '"dry_run":true'
check "approve: dry_run must be a boolean" 400 "$(as "$BOB" POST "$C/versions/2/approve" --data-binary "{\"digest\":\"$D12\",\"dry_run\":1}")"
check "approve: dry_run must be a boolean: field" dry_run "$(field field)"
check "approve: no digest" 400 "$(as "$BOB" POST "$C/versions/2/approve" --data-binary '{"comment":"ok"}')"
check "activate: over budget first" 422 "$(as "$BOB" POST "$C/versions/2/activate")"
check "activate: forced but not approved" 409 "$(as "$BOB" POST "$C/versions/2/activate" --data-binary '{"force":true,"reason":"r"}')"
check "activate: force never passes the approvals" approval_required "$(field code)"
has "activate: says how many (the dry run recorded none)" "$TMP/body" "needs 1 approval of plan $D12 and has 0"
check "approve: bob" 200 "$(as "$BOB" POST "$C/versions/2/approve" --data-binary "{\"digest\":\"$D12\",\"comment\":\"looks right\"}")"
check "approve: twice is one approval" 200 "$(as "$BOB" POST "$C/versions/2/approve" --data-binary "{\"digest\":\"$D12\"}")"
check "activate: over budget" 422 "$(as "$BOB" POST "$C/versions/2/activate")"
check "activate: over budget code" budget_exceeded "$(field code)"
has "activate: the figure and the limit" "$TMP/body" "moves 18.7389% of the hash space"
has "activate: the limit" "$TMP/body" "max_moved_fraction of 10.0000%"
check "activate: force without a reason" 400 "$(as "$BOB" POST "$C/versions/2/activate" --data-binary '{"force":true}')"
check "activate: force a string" 400 "$(as "$BOB" POST "$C/versions/2/activate" --data-binary '{"force":"yes","reason":"x"}')"
check "activate: still v1" 200 "$(req GET "$C/ring")"
has "activate: refusals changed nothing" "$TMP/body" '"version":1'
check "activate: forced" 200 "$(as "$BOB" POST "$C/versions/2/activate" --data-binary '{"force":true,"reason":"capacity for the sale"}')"

# an approval goes stale when another version is activated first
check "policy: no budget" 200 "$(as "$ALICE" PUT "$C/policy" --data-binary '{"max_moved_fraction":1,"max_balance_after":null}')"
check "publish v3" 201 "$(as "$ALICE" POST "$C/versions" --data-binary @"$TMP/t5")"
check "publish v4" 201 "$(as "$ALICE" POST "$C/versions" --data-binary @"$TMP/t6")"
D24=$(digest 2 4)
check "approve v4 over v2" 200 "$(as "$BOB" POST "$C/versions/4/approve" --data-binary "{\"digest\":\"$D24\"}")"
check "approve v3" 200 "$(as "$BOB" POST "$C/versions/3/approve" --data-binary "{\"digest\":\"$(digest 2 3)\"}")"
check "activate v3" 200 "$(as "$ALICE" POST "$C/versions/3/activate")"
check "activate v4: its approval is stale" 409 "$(as "$ALICE" POST "$C/versions/4/activate")"
check "activate v4: stale code" approval_required "$(field code)"
D34=$(digest 3 4)
check "approve v4 with the old digest" 409 "$(as "$BOB" POST "$C/versions/4/approve" --data-binary "{\"digest\":\"$D24\"}")"
has "approve v4 with the old digest: which plan it was" "$TMP/body" "the plan to version 4 is now $D34, not $D24, which is the plan from version 2: version 3 was activated since that review"
check "re-approve v4" 200 "$(as "$BOB" POST "$C/versions/4/approve" --data-binary "{\"digest\":\"$D34\"}")"
check "activate v4" 200 "$(as "$ALICE" POST "$C/versions/4/activate")"
check "revert to v1" 201 "$(as "$ALICE" POST "$C/versions/1/revert")"

check "events" 200 "$(req GET "$C/events")"
kinds=$(grep -o '"kind":"[a-z]*"' "$TMP/body" | sed 's/"kind":"\([a-z]*\)"/\1/' | tr '\n' ' ')
check "events: newest first" "revert activate approve activate approve approve publish publish policy force approve approve policy policy publish activate publish " "$kinds"
has "events: the force's reason" "$TMP/body" '"kind":"force","at"'
has "events: reason recorded" "$TMP/body" '"detail":"capacity for the sale"'
has "events: the approval's digest and author" "$TMP/body" "\"author\":\"bob\",\"digest\":\"$D34\""
check "events: moved fraction of the forced activation" 1 "$(grep -c '"kind":"force".*"moved_fraction":0\.18738' "$TMP/body")"
check "events: a page" 200 "$(req GET "$C/events?limit=2")"
check "events: next_before" 16 "$(field next_before)"
check "events: the next page" 200 "$(req GET "$C/events?limit=2&before=16")"
check "events: older" '"kind":"approve" "kind":"activate"' "$(grep -o '"kind":"[a-z]*"' "$TMP/body" | tr '\n' ' ' | sed 's/ $//')"
check "events: bad limit" 400 "$(req GET "$C/events?limit=0")"

# the budget is checked inside the activation's transaction: with the rings its first try asked
# for, then with the rings the cache holds, the same verdict; a forced one records the plan's figure
G=/v1/clusters/gate
check "gate: v1 active" 201 "$(as "$ALICE" POST "$G/versions?activate=true" --data-binary @"$TMP/t3")"
check "gate: a budget" 200 "$(as "$ALICE" PUT "$G/policy" --data-binary '{"max_moved_fraction":0.05}')"
check "gate: publish v2" 201 "$(as "$ALICE" POST "$G/versions" --data-binary @"$TMP/t5")"
check "gate: over budget, no ring cached" 422 "$(as "$BOB" POST "$G/versions/2/activate")"
cp "$TMP/body" "$TMP/verdict"
has "gate: the figures" "$TMP/body" "activating version 2 over version 1 moves "
check "gate: over budget, the rings cached" 422 "$(as "$BOB" POST "$G/versions/2/activate")"
check "gate: the same verdict" "$(cat "$TMP/verdict")" "$(cat "$TMP/body")"
check "gate: publish and activate over budget" 422 "$(as "$ALICE" POST "$G/versions?activate=true" --data-binary @"$TMP/t5")"
has "gate: ... of the new version" "$TMP/body" "activating the new version over version 1 moves "
check "gate: nothing published" 200 "$(req GET "$G/versions?limit=1")"
check "gate: v2 is the latest" 2 "$(field version)"
check "gate: forced" 200 "$(as "$BOB" POST "$G/versions/2/activate" --data-binary '{"force":true,"reason":"r"}')"
check "gate: the plan" 200 "$(req GET "$G/plan?from=1&to=2&arcs=false")"
moved=$(field moved_fraction)
check "gate: the plan moves something" 1 "$(case $moved in 0.[0-9]*) echo 1;; esac)"
check "gate: events" 200 "$(req GET "$G/events?limit=1")"
check "gate: the event's figure is the plan's" "$moved" "$(field moved_fraction)"

# a first activation needs only the approvals (from version 0, fingerprint "")
check "new cluster" 201 "$(as "$ALICE" POST /v1/clusters/fresh/versions --data-binary @"$TMP/t3")"
check "policy: approvals" 200 "$(as "$ALICE" PUT /v1/clusters/fresh/policy --data-binary '{"approvals":1,"max_moved_fraction":0}')"
check "first activation: needs an approval" 409 "$(as "$ALICE" POST /v1/clusters/fresh/versions/1/activate)"
has "first activation: says so, and how to approve it" "$TMP/body" "activating version 1 (a first activation) needs 1 approval of plan "
has "first activation: ... with the CLI" "$TMP/body" "approve it with: ringkeeper approve 1"
check "publish with activate: needs an approval" 409 "$(as "$ALICE" POST "/v1/clusters/fresh/versions?activate=true" --data-binary @"$TMP/t4")"
has "publish with activate: names no version that does not exist" "$TMP/body" "nothing was published: publish it without activate=true, then approve it (ringkeeper approve V) and activate it"
check "first approval: a wrong digest" 409 "$(as "$BOB" POST /v1/clusters/fresh/versions/1/approve --data-binary '{"digest":"0123456789abcdef"}')"
D01=$(sed -n 's/.*is now \([0-9a-f]\{16\}\), not.*/\1/p' "$TMP/body")
check "first approval: the digest is from version 0" 200 "$(as "$BOB" POST /v1/clusters/fresh/versions/1/approve --data-binary "{\"digest\":\"$D01\"}")"
check "first activation: no plan, no budget" 200 "$(as "$ALICE" POST /v1/clusters/fresh/versions/1/activate)"
finish
