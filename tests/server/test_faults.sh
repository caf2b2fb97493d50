#!/usr/bin/env bash
# test_faults.sh — storage faults under a running ringkeeperd: the disk full (a small tmpfs), the
# database files made read-only while it runs (chattr +i, which also stops writes through open
# descriptors) and a read-only database at start. In each: publishes and activations get 503 with a
# message that says why, reads keep working, nothing half-written appears, and once the fault is
# gone the next write succeeds with the next version number, without a restart.
# Needs root: mounting a tmpfs and `chattr +i`. A case the machine cannot stage (no mount in a
# container; a file system where the immutable flag does not stop writes through open descriptors)
# is reported as SKIPPED; with no case possible at all the test exits 77 (skipped).
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
    has "$1: ring version" "$TMP/headers" "ETag: \"v$2."
    local tag
    tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
    check "$1: ring 304" 304 "$(req GET /v1/clusters/f/ring -H "If-None-Match: $tag")"
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

# The disk-full case proper, on a full $FULL.
fill_the_disk() {
    expect_refused full "database or disk is full"
    expect_reads full 2
    has "full: 503s logged with the reason" "$TMP/server.log" "disk is full; nothing was changed"
    check "full: one log line per request, no blank lines" 0 "$(grep -c '^$' "$TMP/server.log")"
    curl -s "$BASE/metrics" >"$TMP/metrics"
    if grep -q '^ringkeeper_database_errors_total [1-9]' "$TMP/metrics"; then ok; else
        bad "full: database errors not counted: $(grep database_errors "$TMP/metrics")"
    fi
    rm "$FULL/filler"
}

# What this machine can stage: a tmpfs to fill, and an immutable flag that stops writes through a
# descriptor opened before it was set (ext4 and xfs do; tmpfs does not).
mkdir "$FULL"
can_fill=0 can_freeze=0 can_lock=0
mount -t tmpfs -o size=8m tmpfs "$FULL" 2>/dev/null && can_fill=1
: >"$TMP/probe"
exec 3>>"$TMP/probe"
if chattr +i "$TMP/probe" 2>/dev/null; then
    can_lock=1
    (echo x >&3) 2>/dev/null || can_freeze=1
    chattr -i "$TMP/probe"
fi
exec 3>&-
skipped() { echo "SKIPPED: $*"; }
[ $((can_fill + can_lock)) -gt 0 ] || { skipped "cannot mount a tmpfs nor set chattr +i here"; exit 77; }

# ---- 1. The disk fills up ----
rk_start --db "$FULL/rk.db"
check "full: setup v1" 201 "$(publish '?activate=true')"
check "full: setup v2" 201 "$(publish '?activate=true')"
check "full: setup v3 (staged)" 201 "$(publish)"
if [ "$can_fill" = 1 ]; then
    dd if=/dev/zero of="$FULL/filler" bs=64k 2>/dev/null # until no space is left
    fill_the_disk
else
    skipped "disk full: cannot mount a tmpfs here (needs CAP_SYS_ADMIN)"
fi
expect_recovered full 4
rk_stop
check "full: clean stop" 0 "$STOP_CODE"
if command -v sqlite3 >/dev/null; then
    check "full: integrity" ok "$(sqlite3 "$FULL/rk.db" 'PRAGMA integrity_check')"
fi
cp "$FULL/rk.db" "$DB" # the next cases go on from here, on a file system with chattr
[ "$can_fill" = 0 ] || umount "$FULL"

# Each case leaves version L staged and L-1 active (expect_recovered).
latest() { versions | awk '{print $NF}'; }

# ---- 2. The database files are made read-only while the server runs ----
rk_start --db "$DB"
L=$(latest)
expect_reads running $((L - 1))
if [ "$can_freeze" = 1 ]; then
    chattr +i "$DB" "$DB-wal"
    expect_refused read-only "nothing was changed"
    expect_reads read-only $((L - 1))
    chattr -i "$DB" "$DB-wal"
    expect_recovered read-only $((L + 1))
else
    skipped "files made read-only while running: chattr +i does not stop writes here"
fi
rk_stop

# ---- 3. The server starts on a read-only database ----
if [ "$can_lock" = 1 ]; then
    chattr +i "$DB"
    rk_start --db "$DB"
    L=$(latest)
    has "read-only start: warned" "$TMP/server.log" "is read-only: reads are served"
    expect_refused start "the database file $DB is read-only"
    expect_reads start $((L - 1))
    chattr -i "$DB"
    expect_recovered start $((L + 1))
    rk_stop
    check "read-only start: clean stop" 0 "$STOP_CODE"
else
    skipped "read-only start: cannot set chattr +i here"
fi
finish
