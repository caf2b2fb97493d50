#!/usr/bin/env bash
# test_auth_db.sh — bearer tokens (401/403, author, SIGHUP reload) and the database at start-up
# (migrations on an empty and on an existing database, refusals).
# usage: test_auth_db.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
command -v sqlite3 >/dev/null || bad "the sqlite3 CLI is missing: deploy/install-deps.sh installs it"
J='Content-Type: application/json'
topo 3 >"$TMP/t"
printf '# operators\nops:0123456789abcdef0123\nci:fedcba9876543210fedc\n' >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"

check "no token" 401 "$(req POST /v1/clusters/c/versions -H "$J" --data-binary @"$TMP/t")"
check "wrong token" 403 "$(req POST /v1/clusters/c/versions -H "$J" -H 'Authorization: Bearer nope-nope-nope-nope' --data-binary @"$TMP/t")"
check "reads need no token" 200 "$(req GET /v1/clusters)"
check "nothing written by refusals" 0 "$(grep -c '"cluster":"c"' "$TMP/body")"
check "right token" 201 "$(req POST /v1/clusters/c/versions -H "$J" -H 'Authorization: Bearer 0123456789abcdef0123' --data-binary @"$TMP/t")"
has "author is the token's name" "$TMP/body" '"author":"ops"'
if grep -q 0123456789abcdef0123 "$TMP/server.log"; then bad "a token reached the log"; else ok; fi

# SIGHUP reloads: ci's token is replaced
printf 'ops:0123456789abcdef0123\nci:aaaaaaaaaaaaaaaaaaaa\n' >"$TMP/tokens"
kill -HUP "$PID"
for _ in $(seq 1 50); do grep -q "tokens reloaded" "$TMP/server.log" && break; sleep 0.1; done
check "old token after reload" 403 "$(req POST /v1/clusters/c/versions -H "$J" -H 'Authorization: Bearer fedcba9876543210fedc' --data-binary @"$TMP/t")"
check "new token after reload" 201 "$(req POST /v1/clusters/c/versions -H "$J" -H 'Authorization: Bearer aaaaaaaaaaaaaaaaaaaa' --data-binary @"$TMP/t")"
has "new author" "$TMP/body" '"author":"ci"'

# 503 with nothing half-written: another writer holds the database longer than the 5 s busy timeout;
# reads go on (WAL), and publishes work again once it lets go, without a restart
if command -v sqlite3 >/dev/null; then
    (echo 'BEGIN IMMEDIATE;'; sleep 7; echo 'ROLLBACK;') | sqlite3 "$TMP/ringkeeper.db" &
    holder=$!
    sleep 0.5
    check "publish while the db is held" 503 "$(req POST /v1/clusters/c/versions -H "$J" -H 'Authorization: Bearer 0123456789abcdef0123' --data-binary @"$TMP/t")"
    has "503 error code" "$TMP/body" '"code":"unavailable"'
    check "reads while the db is held" 200 "$(req GET /v1/clusters/c/versions/2)"
    wait "$holder"
    check "publish after the db is free" 201 "$(req POST /v1/clusters/c/versions -H "$J" -H 'Authorization: Bearer 0123456789abcdef0123' --data-binary @"$TMP/t")"
    has "no gap after the 503" "$TMP/body" '"version":3'
fi
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"

# an existing database: migrations are not applied again, versions are still there
rk_start
check "existing db keeps versions" 200 "$(req GET /v1/clusters/c/versions/3)"
rk_stop

# refusals at start-up: a schema newer than known, and a file that is not a ringkeeper database
cp "$TMP/ringkeeper.db" "$TMP/newer.db"
if command -v sqlite3 >/dev/null; then
    sqlite3 "$TMP/newer.db" 'PRAGMA user_version = 999;'
    "$RKD" --listen 127.0.0.1:0 --db "$TMP/newer.db" 2>"$TMP/err" &
    wait $!
    check "newer schema refused" 3 "$?"
    has "newer schema message" "$TMP/err" "newer"
fi
printf 'this is not a database, just text that is long enough to look like a header..........' >"$TMP/garbage.db"
"$RKD" --listen 127.0.0.1:0 --db "$TMP/garbage.db" 2>"$TMP/err" &
wait $!
check "garbage file refused" 3 "$?"
"$RKD" --bogus 2>/dev/null
check "bad flag" 2 "$?"
"$RKD" --help >"$TMP/help"
has "help lists flags" "$TMP/help" "--token-file"
finish
