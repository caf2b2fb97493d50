#!/usr/bin/env bash
# test_backup.sh — `ringkeeperd backup` while the server takes writes: three backups taken during a
# publish loop each pass PRAGMA integrity_check, hold versions 1..N without a gap, and a second
# server started on a copy of each serves every one of those versions with the fingerprint the live
# server serves. Also: a file that is not a ringkeeper database is refused (exit 3), an existing
# target is kept without --force and replaced with it, bad flags exit 2, no temporary file stays.
# usage: test_backup.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
db=$TMP/ringkeeper.db
rk_start

# pairs FILE: "version fingerprint" lines from the version documents in FILE (concatenated JSON)
pairs() {
    grep -o '"version": *[0-9]*\|"fingerprint": *"[0-9a-f]*"' "$1" | sed 's/.*: *"*\([0-9a-f]*\)"*/\1/' |
        paste -d' ' - -
}
# served N: versions 1..N of cluster bk as the server at $BASE serves them, one per line
served() {
    curl -s --max-time 120 "$BASE/v1/clusters/bk/versions/[1-$1]" >"$TMP/served.json"
    pairs "$TMP/served.json"
}

# the publish loop: until $TMP/stop appears, bounded by 2000 publishes and 20 s; every third
# publish also activates, so versions change state while the backups run
(end=$((SECONDS + 20))
for i in $(seq 1 2000); do
    [ -e "$TMP/stop" ] || [ "$SECONDS" -ge "$end" ] && break
    topo $((i % 7 + 1)) 16 >"$TMP/t"
    q=$([ $((i % 3)) = 0 ] && echo '?activate=true')
    curl -s -o /dev/null --max-time 5 -H 'Content-Type: application/json' \
        --data-binary @"$TMP/t" "$BASE/v1/clusters/bk/versions$q" || break
done) &
loop=$!
for _ in $(seq 1 100); do # until some versions exist (at most 10 s)
    [ "$(req GET /v1/clusters/bk/versions/10)" = 200 ] && break
    sleep 0.1
done
for b in 1 2 3; do
    if kill -0 "$loop" 2>/dev/null; then ok; else bad "backup $b: the publish loop had ended"; fi
    timeout 60 "$RKD" backup --db "$db" --to "$TMP/backup$b" 2>"$TMP/backup.log"
    rc=$?
    check "backup $b: exit code ($(cat "$TMP/backup.log"))" 0 "$rc"
    sleep 0.3
done
touch "$TMP/stop"
wait "$loop"

# what the live server serves, up to the newest version any backup can hold
latest=$(sqlite3 "$db" "SELECT MAX(version) FROM versions")
served "$latest" >"$TMP/live"
check "live server: serves versions 1..$latest" "$latest" "$(wc -l <"$TMP/live")"
rk_stop
check "live server stopped cleanly" 0 "$STOP_CODE"

prev=0
for b in 1 2 3; do
    f=$TMP/backup$b
    check "backup $b: integrity_check" ok "$(sqlite3 "$f" 'PRAGMA integrity_check')"
    sqlite3 "$f" "SELECT v.version || ' ' || v.fingerprint FROM versions v JOIN clusters c
        ON c.id = v.cluster_id WHERE c.name = 'bk' ORDER BY v.version" >"$TMP/held"
    n=$(wc -l <"$TMP/held")
    echo "backup $b holds $n versions"
    if [ "$n" -ge 10 ] && [ "$n" -ge "$prev" ]; then ok; else bad "backup $b: $n versions (before: $prev)"; fi
    prev=$n
    check "backup $b: versions 1..$n without a gap" "$(seq 1 "$n")" "$(cut -d' ' -f1 "$TMP/held")"
    if head -n "$n" "$TMP/live" | cmp -s - "$TMP/held"; then ok; else
        bad "backup $b: fingerprints differ from the live server's"
    fi
    cp "$f" "$TMP/copy$b"
    rk_start --db "$TMP/copy$b"
    served "$n" >"$TMP/got"
    if cmp -s "$TMP/held" "$TMP/got"; then ok; else
        bad "backup $b: a server on it serves other versions: $(diff "$TMP/held" "$TMP/got" | head -5)"
    fi
    rk_stop
    check "server on backup $b stopped cleanly" 0 "$STOP_CODE"
done

# refusals: not ringkeeper databases (exit 3, nothing written), an existing target, bad flags
echo 'not a database' >"$TMP/junk"
sqlite3 "$TMP/other.db" 'CREATE TABLE t (x)'
for src in junk other.db; do
    "$RKD" backup --db "$TMP/$src" --to "$TMP/refused" 2>"$TMP/err"
    check "backup of $src: exit code" 3 "$?"
    has "backup of $src: says why" "$TMP/err" "not a ringkeeper database"
    if [ -e "$TMP/refused" ]; then bad "backup of $src: wrote --to"; else ok; fi
done
cp "$TMP/backup1" "$TMP/before"
"$RKD" backup --db "$TMP/backup3" --to "$TMP/backup1" 2>"$TMP/err"
check "existing target without --force: exit code" 1 "$?"
has "existing target without --force: says so" "$TMP/err" "--force"
if cmp -s "$TMP/before" "$TMP/backup1"; then ok; else bad "existing target was changed"; fi
"$RKD" backup --db "$TMP/backup3" --to "$TMP/backup1" --force 2>"$TMP/err"
rc=$?
check "existing target with --force: exit code ($(cat "$TMP/err"))" 0 "$rc"
check "existing target with --force: replaced" \
    "$(sqlite3 "$TMP/backup3" 'SELECT COUNT(*) FROM versions')" \
    "$(sqlite3 "$TMP/backup1" 'SELECT COUNT(*) FROM versions')"
"$RKD" backup --db "$db" 2>/dev/null
check "backup without --to: exit code" 2 "$?"
"$RKD" backup --db "$db" --to "$TMP/x" --bogus 2>/dev/null
check "backup with an unknown flag: exit code" 2 "$?"
"$RKD" backup --help >"$TMP/help"
check "backup --help: exit code" 0 "$?"
has "backup --help: explains restoring" "$TMP/help" "Restore: stop ringkeeperd"
check "no temporary files left" "" "$(find "$TMP" -name '*.tmp-*')"
finish
