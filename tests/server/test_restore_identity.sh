#!/usr/bin/env bash
# test_restore_identity.sh — ring identity survives a restore (issue 10, finding 8). A backup taken
# while v1 is active is restored after v2 was activated, and the restored server publishes another
# ring as v2: a client holding the lost v2 is never told 304 about it (with the old ETag or a bare
# "v2"), and `ringkeeper lookup --cache F` routes with the new v2 and leaves F holding it and the new
# store id. Restoring the same backup twice gives two store ids.
# usage: test_restore_identity.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
db=$TMP/ringkeeper.db
cache=$TMP/lkg.ring
unset RINGKEEPER_SERVER RINGKEEPER_TOKEN

publish() { # publish NODES: publishes and activates a topology of NODES nodes in cluster c
    topo "$1" 16 >"$TMP/t$1"
    check "publish $1 nodes" 201 "$(req POST '/v1/clusters/c/versions?activate=true' \
        -H 'Content-Type: application/json' --data-binary @"$TMP/t$1")"
}
etag() { sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r'; }
store_id() { sed -n 's/.*"store_id": *"\([0-9a-f]*\)".*/\1/p' "$TMP/body" | head -1; }
lookup() { # lookup NAME ARGS...: the owners of $TMP/keys into $TMP/out
    timeout 60 "$RK" lookup "${@:2}" <"$TMP/keys" >"$TMP/out" 2>"$TMP/err"
    check "$1: exit code ($(head -c 300 "$TMP/err"))" 0 "$?"
}
# restore COPY: the restore of docs/OPERATIONS.md, with the server stopped
restore() {
    rm -f "$db-wal" "$db-shm"
    "$RKD" backup --db "$1" --to "$db" --force 2>"$TMP/restore.log"
    check "restore: exit code ($(cat "$TMP/restore.log"))" 0 "$?"
}
seq -f 'key:%g' 1 200 >"$TMP/keys"

rk_start
publish 3
"$RKD" backup --db "$db" --to "$TMP/backup" 2>/dev/null
check "backup while v1 is active" 0 "$?"
publish 4
check "v2 is the ring" 200 "$(req GET /v1/clusters/c/ring)"
old_tag=$(etag)
old_id=$(store_id)
old_fp=$(sed -n 's/.*"fingerprint": *"\([0-9a-f]*\)".*/\1/p' "$TMP/body")
check "the ETag names the version, the store and the ring" "\"v2.$old_id.$old_fp\"" "$old_tag"
check "the held v2 gets 304 before the restore" 304 "$(req GET /v1/clusters/c/ring -H "If-None-Match: $old_tag")"
lookup "lookup before the restore" --cluster c --server "$BASE" --cache "$cache"
has "the cache holds the old v2's store" "$cache" "$old_id"
rk_stop

restore "$TMP/backup"
rk_start
publish 5 # another ring, numbered 2 again
check "the restored server's ring" 200 "$(req GET /v1/clusters/c/ring)"
new_tag=$(etag)
new_id=$(store_id)
new_fp=$(sed -n 's/.*"fingerprint": *"\([0-9a-f]*\)".*/\1/p' "$TMP/body")
check "the new v2 is version 2" 1 "$(grep -c '"version": *2,' "$TMP/body")"
if [ -n "$new_id" ] && [ "$new_id" != "$old_id" ]; then ok; else bad "store id after the restore: [$new_id], before: [$old_id]"; fi
check "the new ETag" "\"v2.$new_id.$new_fp\"" "$new_tag"
cp "$TMP/body" "$TMP/new_ring"

check "the old v2's ETag gets the new ring" 200 "$(req GET /v1/clusters/c/ring -H "If-None-Match: $old_tag")"
if cmp -s "$TMP/body" "$TMP/new_ring"; then ok; else bad "the old ETag got another body"; fi
check "a bare \"v2\" gets the new ring" 200 "$(req GET /v1/clusters/c/ring -H 'If-None-Match: "v2"')"
check "a bare \"v2\" long poll ends with the new ring" 200 \
    "$(req GET '/v1/clusters/c/ring?wait=1' -H 'If-None-Match: "v2"')"
check "the new ETag gets 304" 304 "$(req GET /v1/clusters/c/ring -H "If-None-Match: $new_tag")"
check "If-Match of the old store: 412" 412 "$(req POST /v1/clusters/c/versions/2/revert -H "If-Match: $old_tag")"

lookup "lookup --topology of the new v2" --topology "$TMP/t5"
cp "$TMP/out" "$TMP/want"
lookup "lookup --cache after the restore" --cluster c --server "$BASE" --cache "$cache"
if cmp -s "$TMP/want" "$TMP/out"; then ok; else bad "lookup does not route with the new v2"; fi
has "the cache holds the new store id" "$cache" "$new_id"
has "the cache holds the new v2" "$cache" "$(sed -n 's/.*"fingerprint": *"\([0-9a-f]*\)".*/\1/p' "$TMP/new_ring")"
if grep -q "$old_fp" "$cache"; then bad "the cache still holds the old v2"; else ok; fi
rk_stop
lookup "the server gone: lookup serves the cache" --cluster c --server "$BASE" --cache "$cache"
if cmp -s "$TMP/want" "$TMP/out"; then ok; else bad "the cache does not route with the new v2"; fi

restore "$TMP/backup" # the same copy again: another history again
rk_start
check "ring after the second restore" 200 "$(req GET /v1/clusters/c/ring)"
again=$(store_id)
if [ "$again" != "$new_id" ] && [ "$again" != "$old_id" ]; then ok; else bad "the second restore reused a store id: $again"; fi
rk_stop
finish
