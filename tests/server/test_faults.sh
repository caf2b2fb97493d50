#!/usr/bin/env bash
# test_faults.sh — storage faults under a running ringkeeperd: the disk full (a small tmpfs), the
# database files made read-only while it runs (chattr +i, which also stops writes through open
# descriptors) and a read-only database at start. In each: publishes and activations get 503 with a
# message that says why, reads keep working, nothing half-written appears, and once the fault is
# gone the next write succeeds with the next version number, without a restart.
# Needs root (mount, chattr); skipped (77) otherwise.
# usage: test_faults.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root to mount a tmpfs and to set the immutable attribute"
    exit 77
fi
J='Content-Type: application/json'
FULL=$TMP/full # the tmpfs
DB=$TMP/rk.db  # the read-only cases' database, on $TMP's own file system

fault_cleanup() {
    chattr -i "$DB" "$DB-wal" 2>/dev/null
    rk_cleanup # stops the server first, so the tmpfs is no longer busy
    umount "$FULL" 2>/dev/null
    rm -rf "$TMP"
}
trap fault_cleanup EXIT

topo 4 >"$TMP/t"
publish() { req POST "/v1/clusters/f/versions${1:-}" -H "$J" --data-binary @"$TMP/t"; }
activate() { req POST "/v1/clusters/f/versions/$1/activate"; }
versions() { # the version numbers stored, oldest first, on one line
    curl -s "$BASE/v1/clusters/f/versions?limit=1000" | grep -o '"version":[0-9]*' | cut -d: -f2 |
        sort -n | paste -sd' '
}

# expect_refused CASE WORDS: a publish, a publish-and-activate and an activation each get 503
# "unavailable" with WORDS in the message, and the stored versions stay as they were.
expect_refused() {
    local before
    before=$(versions)
    check "$1: publish" 503 "$(publish)"
    has "$1: publish says why" "$TMP/body" "$2"
    has "$1: error code" "$TMP/body" '"code":"unavailable"'
    check "$1: publish and activate" 503 "$(publish '?activate=true')"
    check "$1: activate" 503 "$(activate "${before##* }")" # the latest, staged
    check "$1: nothing half-written" "$before" "$(versions)"
    check "$1: the refused activation's version" 200 "$(req GET "/v1/clusters/f/versions/${before##* }")"
    has "$1: ... is still staged" "$TMP/body" '"state":"staged"'
}

# expect_reads CASE V: the ring (v V), its 304, the list, a version and a plan still answer.
expect_reads() {
    check "$1: ring" 200 "$(req GET /v1/clusters/f/ring)"
    has "$1: ring version" "$TMP/headers" "ETag: \"v$2\""
    check "$1: ring 304" 304 "$(req GET /v1/clusters/f/ring -H "If-None-Match: \"v$2\"")"
    check "$1: list" 200 "$(req GET /v1/clusters/f/versions)"
    check "$1: version" 200 "$(req GET "/v1/clusters/f/versions/$2")"
    check "$1: plan" 200 "$(req GET "/v1/clusters/f/plan?from=1&to=$2")"
    check "$1: readyz" 200 "$(req GET /readyz)"
}

# expect_recovered CASE N: the next publish is version N and activating it works; N+1 is then
# published staged, for the next case to try to activate.
expect_recovered() {
    check "$1: publish after the fault" 201 "$(publish)"
    has "$1: next number, no gap" "$TMP/body" "\"version\":$2,"
    check "$1: activate after the fault" 200 "$(activate "$2")"
    check "$1: publish staged" 201 "$(publish)"
    check "$1: versions 1..$(($2 + 1))" "$(seq -s ' ' 1 $(($2 + 1)))" "$(versions)"
}

# ---- 1. The disk fills up ----
mkdir "$FULL"
mount -t tmpfs -o size=8m tmpfs "$FULL" || { bad "cannot mount a tmpfs"; finish; exit; }
rk_start --db "$FULL/rk.db"
check "full: setup v1" 201 "$(publish '?activate=true')"
check "full: setup v2" 201 "$(publish '?activate=true')"
check "full: setup v3 (staged)" 201 "$(publish)"
dd if=/dev/zero of="$FULL/filler" bs=64k 2>/dev/null # until no space is left
expect_refused full "database or disk is full"
expect_reads full 2
has "full: 503s logged with the reason" "$TMP/server.log" "disk is full; nothing was changed"
check "full: one log line per request, no blank lines" 0 "$(grep -c '^$' "$TMP/server.log")"
curl -s "$BASE/metrics" >"$TMP/metrics"
if grep -q '^ringkeeper_database_errors_total [1-9]' "$TMP/metrics"; then ok; else
    bad "full: database errors not counted: $(grep database_errors "$TMP/metrics")"
fi
rm "$FULL/filler"
expect_recovered full 4
rk_stop
check "full: clean stop" 0 "$STOP_CODE"
if command -v sqlite3 >/dev/null; then
    check "full: integrity" ok "$(sqlite3 "$FULL/rk.db" 'PRAGMA integrity_check')"
fi
cp "$FULL/rk.db" "$DB" # the next cases go on from here, on a file system with chattr
umount "$FULL"

# ---- 2. The database files are made read-only while the server runs ----
rk_start --db "$DB"
expect_reads running 4
if chattr +i "$DB" "$DB-wal"; then
    expect_refused read-only "nothing was changed"
    expect_reads read-only 4
    chattr -i "$DB" "$DB-wal"
    expect_recovered read-only 6
else
    bad "cannot set the immutable attribute on $DB"
fi
rk_stop

# ---- 3. The server starts on a read-only database ----
chattr +i "$DB"
rk_start --db "$DB"
has "read-only start: warned" "$TMP/server.log" "is read-only: reads are served"
expect_refused start "the database file $DB is read-only"
expect_reads start 6
chattr -i "$DB"
expect_recovered start 8
rk_stop
check "read-only start: clean stop" 0 "$STOP_CODE"
finish
