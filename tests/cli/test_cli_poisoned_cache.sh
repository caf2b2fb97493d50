#!/usr/bin/env bash
# test_cli_poisoned_cache.sh — a --cache file poisoned by a fake server heals by itself (issue 20,
# item 6). The fake server sends the real ring of v1 as version 2^53-1 under the real (public)
# store id; `ringkeeper lookup --cache` saves it. The real server's v2 is then taken anyway, since
# its store says it never issued 2^53-1: lookups route on the real ring, with a note saying what
# was discarded and why, the file is rewritten, and the next lookup says nothing. A version the
# store has issued is never discarded: a file holding one (v3, staged) still refuses the older
# active ring, as it must against a lagging server. A fake ring under the number the store issues
# next is replaced by the real one of that number (issue 52, item 2: the ETag names the fingerprint).
# usage: test_cli_poisoned_cache.sh RINGKEEPER FAKE_SERVER RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/../server/lib.sh" "$3" # ringkeeperd on a free port; stops what we start
RK=$1
FAKE=$2
src=$(cd "$4" && pwd)
four=$src/tests/cli/four.json
five=$src/tests/cli/five.json
MAX=9007199254740991
LKG=$TMP/lkg
unset RINGKEEPER_SERVER RINGKEEPER_TOKEN RINGKEEPER_CA_FILE
printf 'user:1\nuser:2\nsession:9f2c\n\nlast' >"$TMP/keys"

# lookup CODE NAME ARGS...: ringkeeper lookup of the keys; stdout to $TMP/out, stderr to $TMP/err.
# A lookup that cannot reach its server serves the --cache file and exits 0 too, so the fake
# server's lookups get a long --timeout (a loaded machine, a sanitizer build) and a check of what
# the file then holds.
lookup() {
    local want=$1 name=$2
    shift 2
    timeout 60 "$RK" lookup --cluster cache --cache "$LKG" "$@" <"$TMP/keys" >"$TMP/out" 2>"$TMP/err"
    check "$name: exit code (stderr: $(head -c 400 "$TMP/err"))" "$want" "$?"
}
same() { # same NAME FILE_A FILE_B
    if cmp -s "$2" "$3"; then ok; else bad "$1: $(diff "$2" "$3" | head -10)"; fi
}
# publish FILE [QUERY]: a new version of cluster cache on the real server
publish() {
    curl -fsS -X POST "$BASE/v1/clusters/cache/versions${2:-}" -H 'Content-Type: application/json' \
        --data-binary @"$1" >/dev/null ||
        bad "publish $1${2:-}"
}
# forge VERSION: the real server's ring document as version VERSION, into $TMP/forged.json
forge() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["version"] = int(sys.argv[2])
print(json.dumps(d))' "$TMP/ring.json" "$1" >"$TMP/forged.json"
}
# fake: the fake server answering every request with $TMP/forged.json; sets FAKE_URL
fake() {
    [ -n "${FAKE_PID:-}" ] && kill "$FAKE_PID" && wait "$FAKE_PID" 2>/dev/null
    # emptied here, not by the job's own redirection: the forked job may truncate the file only
    # after the loop below has read the old server's port in it (seen under load: the lookup then
    # met a dead port, served the --cache file, and passed for the wrong reason)
    : >"$TMP/fake.log"
    "$FAKE" 200 "$(cat "$TMP/forged.json")" >>"$TMP/fake.log" &
    FAKE_PID=$!
    local port=
    for _ in $(seq 1 100); do
        port=$(sed -n 's/listening on port \([0-9]*\)/\1/p' "$TMP/fake.log")
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { echo "the fake server did not start"; exit 1; }
    FAKE_URL=http://127.0.0.1:$port
}

rk_start
publish "$four" "?activate=true"
curl -fsS "$BASE/v1/clusters/cache/ring" >"$TMP/ring.json" || bad "GET ring"
SID=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["store_id"])' "$TMP/ring.json")
"$RK" lookup --topology "$TMP/ring.json" <"$TMP/keys" >"$TMP/v1.expected"
lookup 0 "v1 from the real server" --server "$BASE"
same "v1 routes" "$TMP/v1.expected" "$TMP/out"

# the fake server poisons the file: the real ring of v1, version 2^53-1, the real store id
forge "$MAX"
fake
lookup 0 "the fake server's ring" --server "$FAKE_URL" --timeout 60
has "the file holds the forged version" "$LKG" "\"version\": $MAX"
has "under the real store id" "$LKG" "\"store_id\": \"$SID\""

# the real server's v2 heals the client: its store never issued 2^53-1
publish "$five" "?activate=true"
curl -fsS "$BASE/v1/clusters/cache/ring" >"$TMP/ring2.json" || bad "GET ring v2"
"$RK" lookup --topology "$TMP/ring2.json" <"$TMP/keys" >"$TMP/v2.expected"
if cmp -s "$TMP/v1.expected" "$TMP/v2.expected"; then bad "v1 and v2 route the keys alike"; else ok; fi
lookup 0 "healed by the real server" --server "$BASE"
same "routes on the real v2" "$TMP/v2.expected" "$TMP/out"
has "the note says what was discarded" "$TMP/err" \
    "ringkeeper lookup: discarded v$MAX of the last-known-good file $LKG, which store $SID never issued (its latest is v2): a hostile or broken server sent it; version 2 from $BASE/v1/clusters/cache/ring is in service"
check "the note is one line" 1 "$(wc -l <"$TMP/err")"
has "the file holds v2 now" "$LKG" '"version":2'
lookup 0 "after the heal" --server "$BASE"
same "still v2" "$TMP/v2.expected" "$TMP/out"
check "no note after the heal" 0 "$(wc -c <"$TMP/err")"
rk_stop
lookup 0 "the server gone: the healed file serves" --server "$BASE"
same "the file routes on v2" "$TMP/v2.expected" "$TMP/out"
rk_start

# a version the store has issued is never discarded: v3 staged, a file that holds it (forged here,
# as a server that activated v3 and then lagged would have left it) refuses the active v2
publish "$four"
forge 3
fake
lookup 0 "v3 from the fake server" --server "$FAKE_URL" --timeout 60
has "the file holds the fake server's v3" "$LKG" '"version": 3,'
lookup 0 "the issued v3 stays" --server "$BASE"
same "routes on the file's v3" "$TMP/v1.expected" "$TMP/out"
has "the refusal names the way out" "$TMP/err" "ring v2 is older than v3 in the last-known-good file $LKG"
lookup 0 "--reset-cache takes the server's ring" --server "$BASE" --reset-cache
same "reset: v2" "$TMP/v2.expected" "$TMP/out"

# issue 52, item 2: the fake server sends the number the store issues next (v4) with the real
# store id and another ring (v1's nodes: the attacker's addresses); then the real store activates
# its own v4. The held ring's ETag names its fingerprint, so the real server does not answer 304
# to it: the client takes the real v4 and says what it replaced.
forge 4
fake
lookup 0 "the fake server's v4" --server "$FAKE_URL" --timeout 60
has "the file holds the fake server's v4" "$LKG" '"version": 4,'
publish "$five" "?activate=true"
curl -fsS -D "$TMP/v4.headers" "$BASE/v1/clusters/cache/ring" >"$TMP/ring4.json" || bad "GET ring v4"
FP1=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["fingerprint"])' "$TMP/ring.json")
FP4=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["fingerprint"])' "$TMP/ring4.json")
has "the ring's ETag names its fingerprint" "$TMP/v4.headers" "\"v4.$SID.$FP4\""
check "the forged v4's ETag gets the real ring, not 304" 200 "$(curl -s -o /dev/null -w '%{http_code}' \
    -H "If-None-Match: \"v4.$SID.$FP1\"" "$BASE/v1/clusters/cache/ring")"
lookup 0 "healed by the real v4" --server "$BASE"
same "routes on the real v4" "$TMP/v2.expected" "$TMP/out"
has "the note says what was replaced" "$TMP/err" \
    "ringkeeper lookup: version 4 from $BASE/v1/clusters/cache/ring is in service in place of another ring numbered the same (fingerprint $FP1, the server's is $FP4): a hostile or broken server sent it under this store's id"
has "the file holds the real v4" "$LKG" "\"fingerprint\":\"$FP4\""
lookup 0 "after that heal" --server "$BASE"
check "no note after that heal" 0 "$(wc -c <"$TMP/err")"
kill "$FAKE_PID" && wait "$FAKE_PID" 2>/dev/null
finish
