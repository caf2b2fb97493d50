#!/usr/bin/env bash
# test_deploy.sh — the deployment of docs/OPERATIONS.md, end to end: `cmake --install` into a
# temporary prefix; the INSTALLED unit's ExecStart= run from / (its state directory and port
# substituted, no --migrations: the installed daemon finds its own); three versions published, two
# activated in turn; the installed `ringkeeperd backup` while it serves; the backup restored into a new
# state directory as the guide says (the file in place, no -wal/-shm); a second installed daemon on it
# serves the same clusters, versions (fingerprints, states, times) and active ring (ETag and body).
# usage: test_deploy.sh BUILD_DIR SOURCE_DIR
# shellcheck source=tests/deploy/unit_lib.sh
. "$(dirname "$0")/unit_lib.sh" "$1" "$2"
RKD_INSTALLED=$P/bin/ringkeeperd

if [ -f "$P/share/ringkeeper/migrations/0001_init.sql" ]; then ok; else
    bad "not installed: share/ringkeeper/migrations/0001_init.sql"
fi

# ---- the first daemon, from the installed unit ----
mkdir -p "$TMP/state1" "$TMP/state2" && chmod 0700 "$TMP/state1" "$TMP/state2"
unit_argv "$TMP/state1" "--listen 127.0.0.1:0" || { finish; exit; }
check "the unit runs the installed daemon" "$RKD_INSTALLED" "${ARGV[0]}"
unit_start "$TMP/server1.log" "${ARGV[@]}" || { finish; exit; }
check "server 1: /readyz" 200 "$(req GET /readyz)"

publish() { # publish FILE
    req POST /v1/clusters/cache/versions -H 'Content-Type: application/json' --data-binary @"$1"
}
topo 3 >"$TMP/t3.json"
check "publish v1" 201 "$(publish "$src/tests/cli/four.json")"
check "publish v2" 201 "$(publish "$src/tests/cli/five.json")"
check "publish v3" 201 "$(publish "$TMP/t3.json")"
check "activate v1" 200 "$(req POST /v1/clusters/cache/versions/1/activate)"
check "activate v2" 200 "$(req POST /v1/clusters/cache/versions/2/activate)"

# snapshot DIR: what a server answers about cluster cache, one file per request (status line first),
# with the store id (new in every backup copy, so another after a restore) written as "ID" (in the
# ring's ETag "v<N>.<store id>.<fingerprint>" too) and kept
# in DIR/store_id
snapshot() {
    mkdir -p "$1"
    local path name
    for path in /v1/clusters /v1/clusters/cache/versions /v1/clusters/cache/versions/1 \
        /v1/clusters/cache/versions/2 /v1/clusters/cache/versions/3 /v1/clusters/cache/ring; do
        name=$(echo "$path" | tr / _)
        { req GET "$path"; echo; cat "$TMP/body"; } | sed -E 's/"store_id": *"[0-9a-f]{16}"/"store_id": "ID"/g' >"$1/$name"
    done
    sed -n 's/.*"store_id": *"\([0-9a-f]*\)".*/\1/p' "$TMP/body" | head -1 >"$1/store_id"
    grep -i '^etag:' "$TMP/headers" | tr -d '\r' | sed -E 's/\.[0-9a-f]{16}\.([0-9a-f]{16})"$/.ID.\1"/' >"$1/ring_etag"
}
snapshot "$TMP/before"
check "v1: retired" 1 "$(grep -c '"state": *"retired"' "$TMP/before/_v1_clusters_cache_versions_1")"
check "v2: active" 1 "$(grep -c '"state": *"active"' "$TMP/before/_v1_clusters_cache_versions_2")"
check "v3: staged" 1 "$(grep -c '"state": *"staged"' "$TMP/before/_v1_clusters_cache_versions_3")"
check "v2: its fingerprint" 1 "$(grep -c '"fingerprint": *"dbb9f9d3244ab4f7"' "$TMP/before/_v1_clusters_cache_versions_2")"
check "ring ETag: version, store id, fingerprint" 'ETag: "v2.ID.dbb9f9d3244ab4f7"' "$(cat "$TMP/before/ring_etag")"

# ---- the installed backup, while the daemon serves ----
backup=$TMP/backups/ringkeeper-$(date +%Y%m%d%H%M%S).db
mkdir -p "$TMP/backups"
(cd / && timeout 60 "$RKD_INSTALLED" backup --db "$TMP/state1/ringkeeper.db" --to "$backup") \
    >"$TMP/backup.log" 2>&1
rc=$?
check "ringkeeperd backup: exit 0 ($(head -c 400 "$TMP/backup.log"))" 0 "$rc"
if [ -s "$backup" ]; then ok; else
    bad "no backup file $backup: nothing to restore"
    rk_stop
    finish
    exit
fi
check "server 1 still serves after the backup" 200 "$(req GET /readyz)"
# a version published after the backup is not in it
check "publish v4 after the backup" 201 "$(publish "$TMP/t3.json")"

# ---- restore into a new state directory (docs/OPERATIONS.md, "Restore") ----
cp "$backup" "$TMP/state2/ringkeeper.db"
rm -f "$TMP/state2/ringkeeper.db-wal" "$TMP/state2/ringkeeper.db-shm"
first_pid=$PID first_base=$BASE
unit_argv "$TMP/state2" "--listen 127.0.0.1:0" || { finish; exit; }
unit_start "$TMP/server2.log" "${ARGV[@]}" || { finish; exit; }
check "server 2: /readyz" 200 "$(req GET /readyz)"
snapshot "$TMP/after"
check "the restored store has its own id" 1 \
    "$([ -s "$TMP/after/store_id" ] && ! cmp -s "$TMP/before/store_id" "$TMP/after/store_id" && echo 1)"
for f in "$TMP/before"/*; do
    [ "${f##*/}" = store_id ] && continue
    if cmp -s "$f" "$TMP/after/${f##*/}"; then ok; else
        bad "restored server answers ${f##*/} differently:"
        diff "$f" "$TMP/after/${f##*/}" | head -20
    fi
done
check "v4 (after the backup) is not in the restored database" 404 \
    "$(req GET /v1/clusters/cache/versions/4)"
# the restored server takes writes after its own latest version
check "restored: publish" 201 "$(publish "$TMP/t3.json")"
check "restored: the next version is 4" 1 "$(grep -c '"version": *4,' "$TMP/body")"

# ---- stop both: SIGTERM, exit 0 ----
rk_stop
check "server 2: SIGTERM exit 0" 0 "$STOP_CODE"
PID=$first_pid BASE=$first_base
rk_stop
check "server 1: SIGTERM exit 0" 0 "$STOP_CODE"
finish
