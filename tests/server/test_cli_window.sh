#!/usr/bin/env bash
# test_cli_window.sh — the migration window as an operator runs it with the CLI: policy set
# --migration-window yes, an activation opens the window, lookup prints the previous owners too
# (with a note), the next activation is refused plainly until `migration finish`, which closes it;
# `activate --force REASON` passes the budget and is recorded.
# usage: test_cli_window.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
cli() { # cli EXIT NAME ARGS...: runs ringkeeper with the token, checks its exit code
    local want=$1 name=$2
    shift 2
    RINGKEEPER_TOKEN=$OPS "$RK" "$@" --server "$BASE" --cluster shop </dev/null >"$TMP/out" 2>"$TMP/err"
    check "$name: exit" "$want" "$?"
}
topo 3 >"$TMP/t3"; topo 4 >"$TMP/t4"; topo 5 >"$TMP/t5"
printf 'a\nb\nc\n' >"$TMP/keys"
lookup() { "$RK" lookup --server "$BASE" --cluster shop "$@" <"$TMP/keys" >"$TMP/out" 2>"$TMP/err"; }
# the owner of each key under topology file $1
owners() { "$RK" lookup --topology "$1" <"$TMP/keys"; }

cli 0 "publish v1" publish "$TMP/t3" --activate
cli 2 "migration finish: none open" migration finish
check "migration finish: none open, says so" "ringkeeper migration: server: cluster shop has no open migration window: one opens when a version is activated over another under a policy with migration_window set (HTTP 409)" "$(cat "$TMP/err")"
cli 2 "migration: finish is the operand" migration close
has "migration: the operand" "$TMP/err" "the operand is finish, not close"
cli 2 "policy set: migration window yes or no" policy set --migration-window maybe
cli 0 "policy set: migration window" policy set --migration-window yes
has "policy set: migration window" "$TMP/out" '"migration_window": true'
cli 2 "policy set: prewarm yes or no" policy set --prewarm maybe
cli 0 "policy set: prewarm" policy set --prewarm yes
has "policy set: prewarm" "$TMP/out" '"prewarm": true'
cli 0 "policy set: prewarm off (no data here: it changes nothing)" policy set --prewarm no
cli 0 "publish v2 and activate: the window opens" publish "$TMP/t4" --activate

lookup
check "lookup in the window: exit" 0 "$?"
paste "$TMP/keys" <(owners "$TMP/t4" | cut -f2) <(owners "$TMP/t3" | cut -f2) >"$TMP/want"
check "lookup in the window: key, owner, previous owner" "$(cat "$TMP/want")" "$(cat "$TMP/out")"
check "lookup in the window: the note" "ringkeeper lookup: a migration window is open: after the owners under v2, each line has the owners under the previous ring v1 (read from them until the data has moved)" "$(cat "$TMP/err")"
lookup --replicas 2
check "lookup --replicas 2 in the window: 2 + 2 owners" 5 "$(head -1 "$TMP/out" | awk -F'\t' '{ print NF }')"

cli 0 "publish v3" publish "$TMP/t5"
cli 2 "activate v3 in the window" activate 3
check "activate in the window: plainly" "ringkeeper activate: server: cluster shop: the migration window from version 1 to 2 is open; once the data has moved, finish it (ringkeeper migration finish --cluster shop, or POST /v1/clusters/shop/migration/finish), then activate (HTTP 409)" "$(cat "$TMP/err")"
cli 0 "migration finish" migration finish --comment "copied" -o json
has "migration finish -o json: the ring document" "$TMP/out" '"previous": null'
cli 2 "migration finish again" migration finish --quiet
check "migration finish again: nothing on stdout" "" "$(cat "$TMP/out")"
lookup
check "lookup after the finish: owners only" "$(owners "$TMP/t4")" "$(cat "$TMP/out")"
check "lookup after the finish: no note" "" "$(cat "$TMP/err")"

cli 0 "policy: a budget, no window" policy set --max-moved-fraction 0.01 --migration-window no
cli 2 "activate v3 over budget" activate 3
has "activate over budget: the figures" "$TMP/err" "over the policy's max_moved_fraction of 1.0000%"
cli 2 "activate --force needs a reason" activate 3 --force ""
has "activate --force '': the server says why" "$TMP/err" "a forced activation needs a reason"
cli 0 "activate --force REASON" activate 3 --force "capacity for the sale"
has "activate --force: active" "$TMP/out" '"state": "active"'
cli 0 "events" events --limit 3
check "events: force, policy, finish" "force policy finish" "$(awk 'NR > 1 { printf "%s%s", sep, $3; sep = " " }' "$TMP/out")"
has "events: the reason" "$TMP/out" "capacity for the sale"
has "events: the finish's comment" "$TMP/out" "copied"
finish
