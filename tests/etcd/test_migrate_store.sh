#!/usr/bin/env bash
# test_migrate_store.sh — ringkeeperd migrate-store between SQLite and etcd, both ways: a database
# with several clusters (active, retired, superseded and staged versions, a policy, an approval,
# a topology large enough to be chunked in etcd) is copied into etcd, the server on etcd answers
# every read as the server on SQLite did (rings with their ETags, version documents, lists,
# events, policies), the copy back into a new database again; then the refusals (a destination
# holding clusters, flags) and an open migration window (kept SQLite to SQLite, to etcd and back).
# usage: test_migrate_store.sh RINGKEEPERD
. "$(dirname "$0")/../server/lib.sh" "$1"
ALICE=alice-token-0123456789 BOB=bob-token-0123456789ab
printf 'alice:%s\nbob:%s\n' "$ALICE" "$BOB" >"$TMP/tokens"
as() { local tok=$1 method=$2 path=$3; shift 3; req "$method" "$path" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' "$@"; }
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$TMP/body" | head -1; }
migrate() { "$RKD" migrate-store "$@" >"$TMP/migrate.out" 2>&1; echo $?; }

# snapshot DIR: every read a client or an operator makes, bodies and ETags, into DIR
snapshot() {
    local dir=$1 c v
    mkdir -p "$dir"
    req GET /v1/clusters >/dev/null; cp "$TMP/body" "$dir/clusters"
    for c in cache web big; do
        req GET "/v1/clusters/$c/ring" >"$dir/$c.ring.status"; cp "$TMP/body" "$dir/$c.ring"
        sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r' >"$dir/$c.ring.etag"
        req GET "/v1/clusters/$c/versions" >/dev/null; cp "$TMP/body" "$dir/$c.versions"
        req GET "/v1/clusters/$c/events" >/dev/null; cp "$TMP/body" "$dir/$c.events"
        req GET "/v1/clusters/$c/policy" >/dev/null; cp "$TMP/body" "$dir/$c.policy"
        for v in 1 2 3; do
            req GET "/v1/clusters/$c/versions/$v" >"$dir/$c.$v.status"; cp "$TMP/body" "$dir/$c.$v"
        done
    done
}
same_as_sqlite() { # same_as_sqlite NAME DIR
    if diff -r "$TMP/snap.sqlite" "$2" >"$TMP/diff"; then ok; else bad "$1: $(head -c 800 "$TMP/diff")"; fi
}

# ---- a database with some history ----
rk_start --db "$TMP/src.db" --token-file "$TMP/tokens"
topo 3 >"$TMP/t3"; topo 4 >"$TMP/t4"; topo 5 >"$TMP/t5"; topo 12000 1 >"$TMP/big"
check "cache v1 active" 201 "$(as "$ALICE" POST "/v1/clusters/cache/versions?activate=true" --data-binary @"$TMP/t3")"
check "cache v2" 201 "$(as "$ALICE" POST /v1/clusters/cache/versions --data-binary @"$TMP/t4")"
check "cache policy" 200 "$(as "$ALICE" PUT /v1/clusters/cache/policy --data-binary '{"approvals":1,"distinct_approver":true,"prewarm":true}')"
req GET "/v1/clusters/cache/plan?from=1&to=2&arcs=false" >/dev/null
check "cache v2 approved" 200 "$(as "$BOB" POST /v1/clusters/cache/versions/2/approve --data-binary "{\"digest\":\"$(field digest)\",\"comment\":\"looks right\"}")"
check "cache v2 active" 200 "$(as "$BOB" POST /v1/clusters/cache/versions/2/activate)"
check "cache v3 staged" 201 "$(as "$ALICE" POST /v1/clusters/cache/versions --data-binary @"$TMP/t5")"
check "web v1" 201 "$(as "$BOB" POST /v1/clusters/web/versions --data-binary @"$TMP/t3")"
check "web v2 active (v1 superseded)" 201 "$(as "$BOB" POST "/v1/clusters/web/versions?activate=true" --data-binary @"$TMP/t4")"
check "big v1 (over 512 KiB)" 201 "$(as "$ALICE" POST /v1/clusters/big/versions --data-binary @"$TMP/big")"
check "big is over 512 KiB" 1 "$([ "$(stat -c %s "$TMP/big")" -gt 524288 ] && echo 1)"
snapshot "$TMP/snap.sqlite"
has "the snapshot has the approval's gate passed" "$TMP/snap.sqlite/cache.events" '"kind":"approve"'
rk_stop

# ---- SQLite -> etcd ----
etcd_start_cluster
ETCD=etcd://$ETCD_ENDPOINTS/rk-test
check "migrate to etcd" 0 "$(migrate --from "$TMP/src.db" --to "$ETCD")"
has "summary" "$TMP/migrate.out" "copied to $ETCD and verified: 3 clusters, 6 versions"
has "a line per cluster" "$TMP/migrate.out" "cluster cache: 3 versions (active 2)"
rk_start --store "$ETCD"
snapshot "$TMP/snap.etcd"
same_as_sqlite "etcd serves what SQLite served (rings, ETags, documents, events)" "$TMP/snap.etcd"
has "etcd: the ring's ETag, same version, store id and fingerprint" "$TMP/snap.etcd/cache.ring.etag" \
    "\"v2.$(sed -n 's/.*"store_id":"\([0-9a-f]*\)".*/\1/p' "$TMP/snap.sqlite/cache.2").$(sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p' "$TMP/snap.sqlite/cache.2")\""
check "etcd: v1 of cache retired" retired "$(sed -n 's/.*"state":"\([a-z]*\)".*/\1/p' "$TMP/snap.etcd/cache.1")"
check "etcd: v1 of web superseded" superseded "$(sed -n 's/.*"state":"\([a-z]*\)".*/\1/p' "$TMP/snap.etcd/web.1")"
rk_stop
check "the server on etcd stopped cleanly" 0 "$STOP_CODE"

# ---- etcd -> SQLite ----
check "migrate back" 0 "$(migrate --from "$ETCD" --to "$TMP/back.db")"
rk_start --db "$TMP/back.db"
snapshot "$TMP/snap.back"
same_as_sqlite "the round trip is equal" "$TMP/snap.back"
rk_stop
check "the server on the copy back stopped cleanly" 0 "$STOP_CODE"

# ---- refusals ----
check "into etcd holding clusters" 3 "$(migrate --from "$TMP/src.db" --to "$ETCD")"
has "into etcd holding clusters: why" "$TMP/migrate.out" "already holds clusters"
sum_before=$(md5sum <"$TMP/back.db")
check "into a database holding clusters" 3 "$(migrate --from "$ETCD" --to "$TMP/back.db")"
check "into a database holding clusters: unchanged" "$sum_before" "$(md5sum <"$TMP/back.db")"
check "no --to" 2 "$(migrate --from "$TMP/src.db")"
has "no --to: why" "$TMP/migrate.out" "--from and --to are required"
check "a --from file that does not exist" 2 "$(migrate --from "$TMP/nope.db" --to "$TMP/z.db")"
has "a --from file that does not exist: why" "$TMP/migrate.out" "--from $TMP/nope.db: No such file"
check "a --from file that does not exist: not created" 1 "$([ ! -e "$TMP/nope.db" ] && echo 1)"
check "the same store twice" 2 "$(migrate --from "$TMP/src.db" --to "$TMP/src.db")"
check "an unknown flag" 2 "$(migrate --from "$TMP/src.db" --to "$TMP/x.db" --merge)"
check "a bad etcd location" 2 "$(migrate --from "$TMP/src.db" --to "etcd://127.0.0.1:1/bad prefix")"
echo junk >"$TMP/junk.db"
check "a source that is not a database" 3 "$(migrate --from "$TMP/junk.db" --to "$TMP/y.db")"

# ---- an open migration window ----
rk_start --db "$TMP/win.db" --token-file "$TMP/tokens"
as "$ALICE" POST "/v1/clusters/w/versions?activate=true" --data-binary @"$TMP/t3" >/dev/null
as "$ALICE" PUT /v1/clusters/w/policy --data-binary '{"migration_window":true}' >/dev/null
as "$ALICE" POST "/v1/clusters/w/versions?activate=true" --data-binary @"$TMP/t4" >/dev/null
req GET /v1/clusters/w/ring >/dev/null; cp "$TMP/body" "$TMP/w.ring"
has "the window is open" "$TMP/w.ring" '"previous":{'
rk_stop
check "a window, SQLite to SQLite" 0 "$(migrate --from "$TMP/win.db" --to "$TMP/win2.db")"
has "a window: in the summary" "$TMP/migrate.out" "migration window open"
rk_start --db "$TMP/win2.db"
req GET /v1/clusters/w/ring >/dev/null
check "a window: the ring names the previous version" "$(cat "$TMP/w.ring")" "$(cat "$TMP/body")"
rk_stop
check "a window into etcd" 0 "$(migrate --from "$TMP/win.db" --to "$ETCD-win")"
rk_start --store "$ETCD-win"
req GET /v1/clusters/w/ring >/dev/null
check "a window on etcd: the ring names the previous version" "$(cat "$TMP/w.ring")" "$(cat "$TMP/body")"
rk_stop
check "a window from etcd" 0 "$(migrate --from "$ETCD-win" --to "$TMP/win3.db")"
has "a window from etcd: in the summary" "$TMP/migrate.out" "migration window open"
finish
