#!/usr/bin/env bash
# test_flow.sh — the whole cutover as two operators run it with the CLI (docs/API.md, "Cutover"),
# watched from inside a fleet of 50 real libringkeeper clients (rk_lib_fleet): alice publishes,
# bob approves exactly the plan he read, an unrelated activation makes that approval stale, bob
# approves again, alice activates under a migration window; the fleet converges (`clients` says
# so), reads keys from both owners during the window, and drops the previous ring once alice
# finishes the migration. The events tell the same story.
# usage: test_flow.sh RINGKEEPERD RINGKEEPER RK_LIB_FLEET
. "$(dirname "$0")/../server/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
FLEET_BIN=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
ALICE=alice-token-0123456789
BOB=bob-token-0123456789ab
FLEET_TOKEN=fleet-token-0123456789ab # the fleet's credential: its clients are counted
printf 'alice:%s\nbob:%s\nfleet:%s client\n' "$ALICE" "$BOB" "$FLEET_TOKEN" \
    >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
FLEET=
N=50
STATE=$TMP/fleet.state

as() { # as TOKEN EXIT NAME ARGS...: one operator's ringkeeper command, its exit code checked
    local token=$1 want=$2 name=$3
    shift 3
    RINGKEEPER_TOKEN=$token "$RK" "$@" --server "$BASE" --cluster shop </dev/null \
        >"$TMP/out" 2>"$TMP/err"
    check "$name: exit" "$want" "$?"
}
alice() { as "$ALICE" "$@"; }
bob() { as "$BOB" "$@"; }
# fleet_is V P D: every one of the N clients holds version V with previous version P (0: none) and
# reads D keys of its 1000 from both owners; D "+" means the same number, above 0, in every client
# (at most 10 s)
fleet_is() {
    local got=
    for _ in $(seq 1 100); do
        got=$(awk '{ n[$2 " " $3 " " $4]++ } END { for (l in n) printf "%s%s x%d", s, l, n[l]; s = ", " }' \
            "$STATE" 2>/dev/null)
        case "$got" in "$1 $2 $3 x$N") return 0 ;; "$1 $2 "[1-9]*" x$N") [ "$3" = + ] && return 0 ;; esac
        sleep 0.1
    done
    bad "the fleet: want every client at [$1 $2 $3], got [$got]"
}
# clients_say TABLE...: `ringkeeper clients`, line by line (at most 5 s: a client holds a new ring on
# the server's books from its next poll, which follows the one that sent it at once)
clients_say() {
    for _ in $(seq 1 50); do
        RINGKEEPER_TOKEN= "$RK" clients --server "$BASE" --cluster shop >"$TMP/out" 2>"$TMP/err"
        [ "$(cat "$TMP/out")" = "$(printf '%s\n' "$@")" ] && break
        sleep 0.1
    done
    as "" 0 "clients" clients
    check "clients: the table" "$(printf '%s\n' "$@")" "$(cat "$TMP/out")"
}

topo 4 >"$TMP/t4"; topo 5 >"$TMP/t5"; topo 6 >"$TMP/t6"
alice 0 "alice publishes v1 and activates it" publish "$TMP/t4" --activate
alice 0 "alice sets the policy" policy set --approvals 1 --distinct-approver yes

"$FLEET_BIN" --server "$BASE" --cluster shop --clients "$N" --state "$STATE" --seconds 120 \
    --token "$FLEET_TOKEN" 2>"$TMP/fleet.err" &
FLEET=$!
fleet_is 1 0 0
clients_say "version  holding  offered  refusing" "      1       50       50         0" \
    "holding none: 0" "active: 1" "converged: yes"

alice 0 "alice publishes v2, a hotfix" publish "$TMP/t5"
alice 0 "alice publishes v3, the change to review" publish "$TMP/t6"
alice 0 "alice reads the plan 1 -> 3" plan --from 1 --to 3 --format json
d13=$(grep -o '"digest": *"[0-9a-f]*"' "$TMP/out" | grep -o '[0-9a-f]\{16\}')
check "the plan's digest" 16 "${#d13}"
alice 2 "alice cannot approve her own v3" approve 3 --yes
check "self approval: says so, and not that the token is wrong" "ringkeeper approve: server: cluster shop: alice published version 3 and the policy asks for a distinct approver; another operator must approve it (HTTP 403)" "$(cat "$TMP/err")"
bob 0 "bob approves v3" approve 3 --yes --comment "reviewed"
has "bob approved the plan alice read" "$TMP/out" "$d13"

bob 0 "bob approves the hotfix v2" approve 2 --yes
alice 0 "alice activates the hotfix: an unrelated activation" activate 2
fleet_is 2 1 + # without a window the replaced ring stays the previous one, as before
alice 2 "alice activates v3: bob's approval is stale" activate 3
has "stale: the approval was of another plan" "$TMP/err" "activating version 3 over 2 needs 1 approval of plan"
bob 0 "bob approves v3 again, the plan from v2" approve 3 --yes
alice 0 "alice opens migration windows" policy set --migration-window yes
alice 0 "alice activates v3: the window opens" activate 3

# the fleet converges, every client reads the moving keys from both owners
fleet_is 3 2 +
clients_say "version  holding  offered  refusing" "      3       50       50         0" \
    "holding none: 0" "active: 3" "converged: yes"
check "the ring names the previous version" 200 "$(req GET /v1/clusters/shop/ring)"
has "previous: v2" "$TMP/body" '"previous":{"version":2'

alice 0 "alice finishes the migration" migration finish --comment "data copied"
check "migration finish: says so" "cluster shop: the migration window of version 3 is finished; clients drop the previous ring at their next refresh" "$(cat "$TMP/out")"
fleet_is 3 0 0
check "the ring: no previous" 200 "$(req GET /v1/clusters/shop/ring)"
has "previous: null" "$TMP/body" '"previous":null'

kill -TERM "$FLEET"
wait "$FLEET"
check "the fleet stops cleanly" 0 "$?"
FLEET=
check "the fleet said nothing wrong" "" "$(cat "$TMP/fleet.err")"
alice 0 "events" events --limit 20
check "events: the story, newest first" \
    "finish activate policy approve activate approve approve publish publish policy activate publish" \
    "$(awk 'NR > 1 { printf "%s%s", sep, $3; sep = " " }' "$TMP/out")"
rk_stop
finish
