#!/usr/bin/env bash
# test_window.sh — the cutover's (docs/API.md) migration window over HTTP: with the policy's migration_window,
# an activation opens one (the ring document names the previous version, the ETag is "v<N>+.<id>"),
# another activation is refused until POST .../migration/finish closes it (with its event), a long
# poll holding the open window's ETag is woken by the close, the window survives a restart (the
# ring cached at an activation, or a publish with activate=true, is byte for byte what a restarted
# server reads), and without the policy nothing changes.
# usage: test_window.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
C=/v1/clusters/cache
as() { local method=$1 path=$2; shift 2; req "$method" "$path" -H "Authorization: Bearer $OPS" -H 'Content-Type: application/json' "$@"; }
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$TMP/body" | head -1; }
etag() { sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r'; }
topo 3 >"$TMP/t3"; topo 4 >"$TMP/t4"; topo 5 >"$TMP/t5"

# without the policy: no window, "previous" null, the ETag as before
check "publish v1 and activate" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
check "publish v2" 201 "$(as POST "$C/versions" --data-binary @"$TMP/t4")"
check "activate v2 without the policy" 200 "$(as POST "$C/versions/2/activate")"
check "ring without a window" 200 "$(req GET "$C/ring")"
has "ring: previous null" "$TMP/body" '"previous":null'
ID=$(field store_id)
FP=$(field fingerprint)
check "ETag without a window" "\"v2.$ID.$FP\"" "$(etag)"
check "finish without a window" 409 "$(as POST "$C/migration/finish")"
check "finish without a window: code" no_migration_window "$(field code)"
check "finish: unknown cluster" 404 "$(as POST /v1/clusters/nope/migration/finish)"
check "finish: a write needs a token" 401 "$(req POST "$C/migration/finish")"
check "finish: GET not allowed" 405 "$(req GET "$C/migration/finish")"

# the policy opens a window at the next activation
check "policy: migration_window" 200 "$(as PUT "$C/policy" --data-binary '{"migration_window":true}')"
has "policy: set" "$TMP/body" '"migration_window":true'
check "publish v3" 201 "$(as POST "$C/versions" --data-binary @"$TMP/t5")"
check "activate v3 opens a window" 200 "$(as POST "$C/versions/3/activate")"
check "ring in the window" 200 "$(req GET "$C/ring")"
FP2=$(req GET "$C/versions/2" >/dev/null; field fingerprint)
req GET "$C/ring" >/dev/null
has "ring: previous is v2" "$TMP/body" "\"previous\":{\"version\":2,\"fingerprint\":\"$FP2\"}"
OPEN=$(etag)
FP3=$(req GET "$C/versions/3" >/dev/null; field fingerprint)
check "ETag in the window" "\"v3+.$ID.$FP3\"" "$OPEN"
check "the closed window's ETag gets the ring" 200 "$(req GET "$C/ring" -H "If-None-Match: \"v3.$ID.$FP3\"")"
check "the open window's ETag gets 304" 304 "$(req GET "$C/ring" -H "If-None-Match: $OPEN")"
check "version documents do not carry the window" 200 "$(req GET "$C/versions/3")"
if contains "$TMP/body" '"previous"'; then bad "version 3's document names a previous version"; else ok; fi

# no activation while the window is open, whatever the version or force
check "publish v4" 201 "$(as POST "$C/versions" --data-binary @"$TMP/t3")"
check "activate v4 in the window" 409 "$(as POST "$C/versions/4/activate")"
check "activate in the window: code" migration_open "$(field code)"
has "activate in the window: says how to finish" "$TMP/body" "ringkeeper migration finish --cluster cache"
check "forced activation in the window" 409 "$(as POST "$C/versions/4/activate" --data-binary '{"force":true,"reason":"r"}')"
check "publish and activate in the window" 409 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t4")"
check "... changed nothing: latest is still v4" 200 "$(req GET "$C/versions?limit=1")"
has "... v4" "$TMP/body" '"version":4'
check "with a budget too, the window is what is refused" 200 "$(as PUT "$C/policy" --data-binary '{"max_moved_fraction":0.01}')"
check "activate over budget in the window" 409 "$(as POST "$C/versions/4/activate")"
check "... code" migration_open "$(field code)"
check "policy: budget back" 200 "$(as PUT "$C/policy" --data-binary '{"max_moved_fraction":1}')"

# a restart keeps the window open
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
rk_start --token-file "$TMP/tokens"
check "ring after a restart" 200 "$(req GET "$C/ring")"
has "the window survived the restart" "$TMP/body" '"previous":{"version":2,'
check "same ETag after a restart" "$OPEN" "$(etag)"

# a long poll holding the open window's ETag wakes when it closes (its wait is 60 s; curl gives up
# at 50 s, so a poll that is not woken fails here)
curl -s -o "$TMP/poll" -w '%{http_code}' --max-time 50 -H "If-None-Match: $OPEN" \
    "$BASE$C/ring?wait=60" >"$TMP/poll.status" &
poll=$!
polls_held "the poll is held" 1
check "finish" 200 "$(as POST "$C/migration/finish" --data-binary '{"comment":"data copied"}')"
has "finish answers the ring: previous null" "$TMP/body" '"previous":null'
has "finish answers the ring: v3" "$TMP/body" '"version":3'
CLOSED=$(etag)
check "ETag after the finish" "\"v3.$ID.$FP3\"" "$CLOSED"
wait "$poll"
check "the poll was woken by the finish" 200 "$(cat "$TMP/poll.status")"
has "the poll got the closed window" "$TMP/poll" '"previous":null'
check "ring after the finish" 200 "$(req GET "$C/ring" -H "If-None-Match: $OPEN")"
has "ring: previous null" "$TMP/body" '"previous":null'
check "the closed window's ETag gets 304" 304 "$(req GET "$C/ring" -H "If-None-Match: $CLOSED")"
check "finish again" 409 "$(as POST "$C/migration/finish")"
check "finish again: code" no_migration_window "$(field code)"
check "finish: unknown field" 400 "$(as POST "$C/migration/finish" --data-binary '{"speed":1}')"
check "finish: unknown field named" speed "$(field field)"

# the finish is in the audit; the next activation opens the next window
check "events" 200 "$(req GET "$C/events?limit=1")"
has "finish event" "$TMP/body" '"kind":"finish","at":"'
has "finish event: who" "$TMP/body" '"author":"ops"'
has "finish event: why" "$TMP/body" '"detail":"data copied"'
has "finish event: version" "$TMP/body" '"version":3'
has "finish event: from" "$TMP/body" '"from_version":2'
check "activate v4 after the finish" 200 "$(as POST "$C/versions/4/activate")"
FP4=$(req GET "$C/versions/4" >/dev/null; field fingerprint)
check "ring: the next window" 200 "$(req GET "$C/ring")"
has "ring: previous is v3" "$TMP/body" '"previous":{"version":3,'
check "ETag of the next window" "\"v4+.$ID.$FP4\"" "$(etag)"
# The ring just read ($TMP/body), cached at the activation from the version the store committed,
# is the ring a server that has to read it from the store serves.
same_after_restart() {
    cp "$TMP/body" "$TMP/ring.cached"
    rk_stop
    check "$1: stopped cleanly" 0 "$STOP_CODE"
    rk_start --token-file "$TMP/tokens"
    check "$1: ring read afresh" 200 "$(req GET "$C/ring")"
    check "$1: the same ring cached and read afresh" "" "$(cmp "$TMP/ring.cached" "$TMP/body")"
}
same_after_restart "activation"
# Likewise for a publish that activates: the window it opens is cached from what it committed.
check "finish v4's window" 200 "$(as POST "$C/migration/finish")"
check "publish v5 and activate: opens a window" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t5")"
check "ring of the publish's window" 200 "$(req GET "$C/ring")"
has "ring: previous is v4" "$TMP/body" '"previous":{"version":4,'
same_after_restart "publish with activate=true"
rk_stop
finish
