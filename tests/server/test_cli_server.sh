#!/usr/bin/env bash
# test_cli_server.sh — the `ringkeeper` CLI's server commands against a real ringkeeperd on a free
# port: publish/activate/versions/show, plan and simulate from the server against the offline ones
# on the same files, lookup --server (with its --cache file once the server is gone), exit codes,
# and RINGKEEPER_SERVER / RINGKEEPER_CLUSTER / RINGKEEPER_TOKEN.
# usage: test_cli_server.sh RINGKEEPERD RINGKEEPER SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$3" && pwd)
four=$src/tests/cli/four.json
five=$src/tests/cli/five.json
unset RINGKEEPER_SERVER RINGKEEPER_CLUSTER RINGKEEPER_TOKEN

# cli CODE NAME CMD...: runs CMD with stdin from $TMP/in, stdout to $TMP/out, stderr to $TMP/err
cli() {
    local want=$1 name=$2
    shift 2
    timeout 60 "$@" <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    check "$name: exit code (stderr: $(head -c 300 "$TMP/err"))" "$want" "$got"
}
same() { # same NAME FILE_A FILE_B
    if cmp -s "$2" "$3"; then ok; else bad "$1"; diff "$2" "$3" | head -20; fi
}
hasnt() { # hasnt NAME FILE TEXT
    if grep -qF -- "$3" "$2"; then bad "$1: [$3] in $2"; else ok; fi
}
printf 'user:1\nuser:2\nsession:9f2c\n\nlast' >"$TMP/keys"
seq -f 'user:%g' 1 5000 >"$TMP/many"
: >"$TMP/in"

# help and bad input, before any server runs
for cmd in lookup plan simulate publish activate versions show; do
    cli 0 "$cmd --help" "$RK" "$cmd" --help
    has "$cmd --help" "$TMP/out" "usage: ringkeeper $cmd"
done
cli 0 "help" "$RK" --help
has "help lists the exit codes" "$TMP/out" "4  server unreachable"
cli 2 "no server" "$RK" versions --cluster cache
has "no server says what to set" "$TMP/err" "RINGKEEPER_SERVER"
cli 2 "unknown flag" "$RK" versions --server http://127.0.0.1:1 --cluster cache --bogus
cli 2 "missing --cluster" "$RK" versions --server http://127.0.0.1:1
has "missing --cluster says so" "$TMP/err" "--cluster"
cli 2 "bad cluster name" "$RK" versions --server http://127.0.0.1:1 --cluster 'A/B'
cli 2 "bad version" "$RK" show x1 --server http://127.0.0.1:1 --cluster cache
cli 2 "topology and server" "$RK" lookup --topology "$four" --server http://127.0.0.1:1 --cluster c
cli 2 "publish without file" "$RK" publish --server http://127.0.0.1:1 --cluster cache

rk_start
export RINGKEEPER_SERVER=$BASE
S=(--cluster cache)

# publish, activate, versions, show
cli 0 "publish four" "$RK" publish "$four" "${S[@]}"
has "publish prints the version" "$TMP/out" '"version": 1'
has "published version is staged" "$TMP/out" '"state": "staged"'
cli 0 "activate 1" "$RK" activate 1 "${S[@]}"
has "activate prints the active version" "$TMP/out" '"state": "active"'
cli 0 "publish five" "$RK" publish "$five" --server "$BASE" "${S[@]}"
has "five is version 2" "$TMP/out" '"version": 2'
cli 0 "versions" "$RK" versions "${S[@]}"
check "versions: header and two rows" 3 "$(wc -l <"$TMP/out")"
has "versions header" "$TMP/out" "version  state"
check "versions: v2 staged first" "2 staged dbb9f9d3244ab4f7" "$(awk 'NR==2{print $1, $2, $6}' "$TMP/out")"
check "versions: v1 active" "1 active anonymous 640" "$(awk 'NR==3{print $1, $2, $4, $5}' "$TMP/out")"
cli 0 "versions --limit 1" "$RK" versions "${S[@]}" --limit 1
check "versions --limit 1: one row" 2 "$(wc -l <"$TMP/out")"
cli 2 "versions --limit 0" "$RK" versions "${S[@]}" --limit 0
cli 0 "show 2" "$RK" show 2 "${S[@]}"
has "show: fingerprint" "$TMP/out" '"fingerprint": "dbb9f9d3244ab4f7"'
has "show: nodes" "$TMP/out" '"id": "cache-e"'
cli 2 "show unknown version" "$RK" show 9 "${S[@]}"
has "show unknown version: the server's message" "$TMP/err" "no version 9"
cli 2 "activate an older version" "$RK" activate 1 "${S[@]}"
has "409 message" "$TMP/err" "HTTP 409"
cli 2 "unknown cluster" "$RK" versions --cluster nosuch
printf '{"hash":"fnv1a_32","vnode_factor":160,"nodes":[{"id":"a","addr":"h:1","weight":-1}]}' >"$TMP/badw.json"
cli 2 "publish invalid topology" "$RK" publish "$TMP/badw.json" "${S[@]}"
has "invalid topology: message and field" "$TMP/err" "field: nodes[0].weight"
cli 2 "publish unreadable file" "$RK" publish "$TMP/nope.json" "${S[@]}"

# revert and --if-match (cluster rv): a write on a stale version is refused with 412 and changes nothing
R=(--cluster rv)
cli 0 "publish --if-match 0: a new cluster" "$RK" publish "$four" --if-match 0 "${R[@]}"
cp "$TMP/out" "$TMP/v1-rv"
cli 2 "publish --if-match 0: the cluster exists" "$RK" publish "$five" --if-match 0 "${R[@]}"
check "412 says why" "ringkeeper publish: server: cluster rv: the latest version is 1, not 0; fetch it, review, and publish again (HTTP 412)" "$(cat "$TMP/err")"
cli 0 "publish --if-match 1" "$RK" publish "$five" --if-match 1 "${R[@]}"
has "v2 published" "$TMP/out" '"version": 2'
cli 2 "revert --if-match on a stale version" "$RK" revert 1 --if-match 1 "${R[@]}"
has "revert: 412" "$TMP/err" "(HTTP 412)"
cli 2 "revert: a bad --if-match" "$RK" revert 1 --if-match v2 "${R[@]}"
check "revert: a bad --if-match says why" \
    'ringkeeper revert: --if-match: must be a version number (0: the cluster is new), got "v2"' "$(cat "$TMP/err")"
cli 2 "revert without V" "$RK" revert "${R[@]}"
has "revert without V says why" "$TMP/err" "ringkeeper revert: the V operand is missing"
cli 0 "revert 1" "$RK" revert 1 --if-match 2 "${R[@]}"
has "revert: a new version" "$TMP/out" '"version": 3'
has "revert: staged" "$TMP/out" '"state": "staged"'
has "revert: its comment" "$TMP/out" '"comment": "revert to v1: four equal cache nodes"'
has "revert: v1's fingerprint" "$TMP/out" "\"fingerprint\": \"$(sed -n 's/.*"fingerprint": "\([0-9a-f]*\)".*/\1/p' "$TMP/v1-rv")\""
cli 0 "activate 2" "$RK" activate 2 "${R[@]}"
cli 2 "activate --if-match on another active version" "$RK" activate 3 --if-match 1 "${R[@]}"
has "activate: 412" "$TMP/err" "(HTTP 412)"
cli 0 "activate --if-match the active version" "$RK" activate 3 --if-match 2 "${R[@]}"
has "v3 active" "$TMP/out" '"state": "active"'
cli 2 "show takes no --if-match" "$RK" show 1 --if-match 1 "${R[@]}"
has "show: unknown option" "$TMP/err" "ringkeeper show: unknown option --if-match"

# plan from the server (active v1 -> latest v2) against the offline plan of the same two files
cli 0 "offline plan" "$RK" plan --from-file "$four" --to-file "$five" --max-step 0.1 --keys 1000000
cp "$TMP/out" "$TMP/plan-offline"
cli 0 "server plan text" "$RK" plan "${S[@]}" --max-step 0.1 --keys 1000000
cp "$TMP/out" "$TMP/plan-server"
check "plan text: same moved line" "$(grep '^moved' "$TMP/plan-offline")" "$(grep '^moved' "$TMP/out")"
# the title and the digest name the versions (0 for files), so those differ; the rest may not
check "plan text: digests of versions 1 and 2 differ from the files' digest" differ \
    "$([ "$(grep '^digest' "$TMP/plan-offline")" != "$(grep '^digest' "$TMP/out")" ] && echo differ)"
tail -n +3 "$TMP/plan-offline" >"$TMP/a"
tail -n +3 "$TMP/out" >"$TMP/b"
same "plan text: same table below the title and digest" "$TMP/a" "$TMP/b"
cli 0 "server plan text, explicit versions" "$RK" plan "${S[@]}" --from 1 --to 2 --max-step 0.1 --keys 1000000
same "plan --from 1 --to 2 is the default plan" "$TMP/plan-server" "$TMP/out"
cli 0 "offline plan json" "$RK" plan --from-file "$four" --to-file "$five" --format json
off=$(sed -n 's/.*"moved_fraction": *\([0-9.e-]*\).*/\1/p' "$TMP/out")
cli 0 "server plan json" "$RK" plan "${S[@]}" --format json
on=$(sed -n 's/.*"moved_fraction": *\([0-9.e-]*\).*/\1/p' "$TMP/out")
check "plan json: same moved_fraction" 1 "$(awk -v a="$off" -v b="$on" 'BEGIN{d=a-b; print (a>0 && d<1e-12 && d>-1e-12) ? 1 : 0}')"
cli 2 "plan --from not a number" "$RK" plan "${S[@]}" --from one
cli 2 "plan to an unknown version" "$RK" plan "${S[@]}" --to 9

# simulate from the server equals simulate on the same files
cli 0 "offline simulate" "$RK" simulate --keys "$TMP/many" --from-file "$four" --to-file "$five"
cp "$TMP/out" "$TMP/sim-offline"
cli 0 "server simulate" "$RK" simulate --keys "$TMP/many" "${S[@]}"
same "simulate --server = simulate --from-file" "$TMP/sim-offline" "$TMP/out"
cli 0 "server simulate, explicit versions" "$RK" simulate --keys "$TMP/many" "${S[@]}" --from 1 --to 2
same "simulate --from 1 --to 2" "$TMP/sim-offline" "$TMP/out"
cli 0 "server simulate, reversed" "$RK" simulate --keys "$TMP/many" "${S[@]}" --from 2 --to 1
cli 0 "offline simulate, reversed" "$RK" simulate --keys "$TMP/many" --from-file "$five" --to-file "$four"
cp "$TMP/out" "$TMP/sim-rev"
cli 0 "server simulate, reversed again" "$RK" simulate --keys "$TMP/many" "${S[@]}" --from 2 --to 1
same "simulate reversed" "$TMP/sim-rev" "$TMP/out"

# lookup --server equals lookup --topology on the same topology; --cache is written
cli 0 "activate 2" "$RK" activate 2 "${S[@]}"
cp "$TMP/keys" "$TMP/in"
cli 0 "offline lookup" "$RK" lookup --topology "$five" --replicas 2
cp "$TMP/out" "$TMP/lookup-offline"
cli 0 "server lookup" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/lkg.json"
same "lookup --server = lookup --topology" "$TMP/lookup-offline" "$TMP/out"
check "no note while the server answers" 0 "$(wc -c <"$TMP/err")"
check "--cache file written" 1 "$([ -s "$TMP/lkg.json" ] && echo 1)"
cli 0 "lookup with expectations met" "$RK" lookup "${S[@]}" --expect-hash xxh3_64 --expect-vnode-factor 160
cli 3 "lookup --expect-hash mismatch" "$RK" lookup "${S[@]}" --expect-hash fnv1a_32
has "refused ring says why" "$TMP/err" "refused"
cli 3 "lookup --expect-vnode-factor mismatch" "$RK" lookup "${S[@]}" --expect-vnode-factor 100
cli 2 "lookup of a cluster without a ring" "$RK" lookup --cluster nosuch
: >"$TMP/in"

# RINGKEEPER_CLUSTER is the default --cluster; --cluster and -c win over it. It never sends a
# command given files to the server: lookup --topology and a plan of two files stay offline.
export RINGKEEPER_CLUSTER=envc
cli 0 "publish to RINGKEEPER_CLUSTER" "$RK" publish "$four" --activate
has "publish: the environment's cluster" "$TMP/out" '"cluster": "envc"'
cli 0 "versions of RINGKEEPER_CLUSTER" "$RK" versions --quiet
check "versions: envc's one version" 1 "$(cat "$TMP/out")"
cli 0 "--cluster wins over RINGKEEPER_CLUSTER" "$RK" versions --quiet --cluster rv
check "versions: rv's three versions" "3 2 1" "$(tr '\n' ' ' <"$TMP/out" | sed 's/ $//')"
cli 0 "-c wins over RINGKEEPER_CLUSTER" "$RK" versions -q -c cache
check "versions: cache's two versions" "2 1" "$(tr '\n' ' ' <"$TMP/out" | sed 's/ $//')"
cli 0 "-c publishes" "$RK" publish "$five" -c envc2 -q
check "-c: version 1 of envc2" 1 "$(cat "$TMP/out")"
cli 0 "-c shows" env -u RINGKEEPER_CLUSTER "$RK" show 1 -c envc2 -q
check "-c: without the environment" 1 "$(cat "$TMP/out")"
cp "$TMP/keys" "$TMP/in"
cli 0 "lookup of RINGKEEPER_CLUSTER" "$RK" lookup --replicas 2
cp "$TMP/out" "$TMP/lookup-env"
cli 0 "lookup --topology with RINGKEEPER_CLUSTER set" env RINGKEEPER_SERVER=http://127.0.0.1:1 \
    "$RK" lookup --topology "$four" --replicas 2
check "lookup --topology: nothing on stderr" "" "$(cat "$TMP/err")"
same "lookup of RINGKEEPER_CLUSTER = lookup --topology offline" "$TMP/out" "$TMP/lookup-env"
cli 0 "lookup -c wins" "$RK" lookup -c cache --replicas 2
same "lookup -c cache = lookup --topology five" "$TMP/lookup-offline" "$TMP/out"
: >"$TMP/in"
cli 0 "a plan of two files with RINGKEEPER_CLUSTER set" env RINGKEEPER_SERVER=http://127.0.0.1:1 \
    "$RK" plan --from-file "$four" --to-file "$five" -q
cp "$TMP/out" "$TMP/moved-offline"
cli 0 "a plan of one file against RINGKEEPER_CLUSTER's active version" "$RK" plan --to-file "$five" -q
same "plan --to-file: envc's active is four" "$TMP/moved-offline" "$TMP/out"
unset RINGKEEPER_CLUSTER

# text the server stores as given (a comment) or echoes (an unknown field's name) reaches the
# terminal escaped: raw, ESC sequences and CR/LF recolour it and forge table rows or error lines
clean() { # clean NAME FILE: nothing but printable ASCII and newlines
    local rest
    rest=$(LC_ALL=C tr -d '\n -~' <"$2" | od -An -c)
    if [ -z "$rest" ]; then ok; else bad "$1: raw control bytes: $rest"; fi
}
evil='\u001b[31mred\r\n      9  active  2026-01-01T00:00:00Z  forged\u007f\u0085'
code=$(req POST /v1/clusters/evil/versions -H 'Content-Type: application/json' \
    --data "{\"hash\":\"fnv1a_32\",\"vnode_factor\":160,\"comment\":\"$evil\",\"nodes\":[{\"id\":\"a\",\"addr\":\"h:1\",\"weight\":1}]}")
check "publish a comment with controls (curl)" 201 "$code"
cli 0 "versions of a hostile comment" "$RK" versions --cluster evil
clean "versions: no raw control bytes" "$TMP/out"
check "versions: header and one row" 2 "$(wc -l <"$TMP/out")"
has "versions: the comment escaped" "$TMP/out" '\x1b[31mred\r\n      9  active  2026-01-01T00:00:00Z  forged\x7f\u0085'
cli 0 "show a hostile comment" "$RK" show 1 --cluster evil
clean "show: no raw control bytes" "$TMP/out"
has "show: the comment as JSON escapes" "$TMP/out" 'forged\u007F\u0085'
printf '{"hash":"fnv1a_32","vnode_factor":160,"\\u001b[2J\\r\\n":1,"nodes":[]}' >"$TMP/evil.json"
cli 2 "publish an unknown field with controls" "$RK" publish "$TMP/evil.json" --cluster evil
clean "the echoed field: no raw control bytes" "$TMP/err"
has "the echoed field escaped" "$TMP/err" '(field: \x1b[2J\r\n; HTTP 400)'

# tokens: the server now wants one for writes; RINGKEEPER_TOKEN or --token, never printed
rk_stop
printf 'ops:0123456789abcdef0123\n' >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
export RINGKEEPER_SERVER=$BASE
cli 2 "publish without a token" "$RK" publish "$four" "${S[@]}"
has "401 message" "$TMP/err" "HTTP 401"
cli 2 "publish with a wrong token" "$RK" publish "$four" "${S[@]}" --token wrong-wrong-wrong-wrong
has "403 message" "$TMP/err" "HTTP 403"
hasnt "the token is not printed" "$TMP/err" "wrong-wrong-wrong-wrong"
cli 0 "reads need no token" "$RK" versions "${S[@]}"
RINGKEEPER_TOKEN=0123456789abcdef0123 cli 0 "publish with RINGKEEPER_TOKEN" "$RK" publish "$four" "${S[@]}"
has "author is the token's name" "$TMP/out" '"author": "ops"'
hasnt "the token is not printed (stdout)" "$TMP/out" "0123456789abcdef0123"
cli 0 "activate with --token" "$RK" activate 3 "${S[@]}" --token 0123456789abcdef0123
has "v3 active" "$TMP/out" '"state": "active"'
cli 0 "activate 4 with --activate publish" env RINGKEEPER_TOKEN=0123456789abcdef0123 "$RK" publish "$five" --activate "${S[@]}"
has "publish --activate" "$TMP/out" '"state": "active"'

# a --cache file holding a newer version of the same store than the server's (saved from a copy of
# its database, or from a hostile server). (A plain file copy keeps the store id; `ringkeeperd
# backup` copies get their own.) A version the store never issued is discarded by itself, with a
# note saying so (docs/CLIENT.md, "Healing"). One it has issued (v5 staged here) stays: the
# server's ring is refused as older and the file serves, with a note naming the file, both
# versions and the way out; --reset-cache takes the server's ring and rewrites the file, after
# which lookups agree with the server and say nothing.
rk_stop
cp "$TMP/ringkeeper.db" "$TMP/other.db"
rk_start --db "$TMP/other.db"
cli 0 "copy of the database: publish v5" "$RK" publish "$four" --activate "${S[@]}" --server "$BASE"
cp "$TMP/keys" "$TMP/in"
cli 0 "lookup saves v5 of the other server" "$RK" lookup "${S[@]}" --server "$BASE" --cache "$TMP/ahead.json"
cp "$TMP/ahead.json" "$TMP/ahead.v5"
rk_stop
rk_start --token-file "$TMP/tokens"
export RINGKEEPER_SERVER=$BASE
cli 0 "a v5 the store never issued heals" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/ahead.json"
same "healed lookup = lookup --topology" "$TMP/lookup-offline" "$TMP/out"
has "the note says what was discarded, and why" "$TMP/err" "discarded v5 of the last-known-good file $TMP/ahead.json, which store"
has "the note names the server's latest" "$TMP/err" "never issued (its latest is v4)"
cli 0 "publish v5, staged" env RINGKEEPER_TOKEN=0123456789abcdef0123 "$RK" publish "$five" "${S[@]}"
cp "$TMP/keys" "$TMP/in"
cp "$TMP/ahead.v5" "$TMP/ahead.json"
cli 0 "the newer file serves" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/ahead.json"
has "the note names both versions and the file" "$TMP/err" "ring v4 is older than v5 in the last-known-good file $TMP/ahead.json"
has "the note names the way out" "$TMP/err" "run once with --reset-cache"
cli 2 "--reset-cache needs --cache" "$RK" lookup "${S[@]}" --reset-cache
cli 0 "--reset-cache takes the server's ring" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/ahead.json" --reset-cache
same "reset lookup = lookup --topology" "$TMP/lookup-offline" "$TMP/out"
cli 0 "after the reset" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/ahead.json"
check "no note after the reset" 0 "$(wc -c <"$TMP/err")"

# the server is gone: lookup falls back to the last-known-good file (exit 0 and a note on stderr),
# without one it exits 4, and so do the other commands
cp "$TMP/keys" "$TMP/in"
cli 0 "lookup refreshes the cache" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/lkg.json"
rk_stop
cli 0 "lookup from the cache" "$RK" lookup "${S[@]}" --replicas 2 --cache "$TMP/lkg.json"
same "cached lookup = lookup --topology" "$TMP/lookup-offline" "$TMP/out"
has "note on stderr" "$TMP/err" "server unreachable: using the last-known-good ring v4 from $TMP/lkg.json"
cli 4 "cached ring refused too: unreachable" "$RK" lookup "${S[@]}" --cache "$TMP/lkg.json" --expect-hash md5_32
has "why the cache did not help" "$TMP/err" "cannot be used"
cli 4 "lookup, no server, no cache" "$RK" lookup "${S[@]}"
: >"$TMP/in"
cli 4 "versions, no server" "$RK" versions "${S[@]}"
has "unreachable says so" "$TMP/err" "server unreachable"
cli 4 "plan, no server" "$RK" plan "${S[@]}"
cli 4 "publish, no server" "$RK" publish "$four" "${S[@]}"
finish
