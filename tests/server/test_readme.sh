#!/usr/bin/env bash
# test_readme.sh — runs the README's curl walkthrough as written, against a real ringkeeperd on a
# free port: only the line "RK=http://127.0.0.1:7070" is pointed at that port. Every curl in it
# uses -f, so any HTTP error fails the walkthrough. Then the "CLI with a server" block, pasted after
# it on the same server (RINGKEEPER_SERVER pointed the same way), with set -e.
# usage: test_readme.sh RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
src=$(cd "$2" && pwd)
build=$(cd "$(dirname "$1")/.." && pwd) # ringkeeperd is build/server/ringkeeperd
awk '/<!-- walkthrough -->/{on=1; next} on && /^```$/ && seen {exit} on && /^```/{seen=1; next} on{print}' \
    "$src/README.md" >"$TMP/walk.sh"
if grep -q '^RK=http://127.0.0.1:7070$' "$TMP/walk.sh"; then ok; else bad "README walkthrough has no RK= line"; fi
check "walkthrough has curl commands" 1 "$([ "$(grep -c curl "$TMP/walk.sh")" -ge 8 ] && echo 1)"
rk_start
sed -i "s|^RK=http://127.0.0.1:7070\$|RK=$BASE|" "$TMP/walk.sh"
(cd "$src" && bash -euo pipefail "$TMP/walk.sh") >"$TMP/walk.out" 2>&1
code=$?
check "walkthrough runs" 0 "$code"
[ "$code" -eq 0 ] || cat "$TMP/walk.out"
has "walkthrough: an unknown cluster at first" "$TMP/walk.out" \
    '{"error":{"code":"unknown_cluster","message":"there is no cluster named cache; publishing a version creates it"}}'
has "walkthrough: ... as a 404" "$TMP/walk.out" " (HTTP 404)"
has "walkthrough: a refused topology with its field" "$TMP/walk.out" '"field":"nodes[0].weight"}}'
has "walkthrough: ... as a 400" "$TMP/walk.out" " (HTTP 400)"
has "walkthrough: activating an older version says to revert" "$TMP/walk.out" "to roll back, revert to it"
has "walkthrough: ... as a 409" "$TMP/walk.out" "(HTTP 409)"
has "walkthrough shows the plan table" "$TMP/walk.out" "moved"
has "walkthrough shows the ETag" "$TMP/walk.out" 'ETag: "v2.'
has "walkthrough gets a 304" "$TMP/walk.out" "304"
has "walkthrough: refused before the approval" "$TMP/walk.out" "approval_required"
has "walkthrough: the audit" "$TMP/walk.out" '"kind":"approve"'
has "walkthrough: the window's ETag" "$TMP/walk.out" 'ETag: "v2+.'
has "walkthrough: the window's previous version" "$TMP/walk.out" '"previous":{"version":1,'
has "walkthrough: the window finished" "$TMP/walk.out" '"previous":null'
has "walkthrough: a straggler" "$TMP/walk.out" '"summary":{"by_version":{"1":1,"4":1},"offered_by_version":{"1":1,"4":1},"refusing_by_version":{},"none":0,"refusing":0,"active":4,"converged":false,"total":2,"previous":null}'
has "walkthrough: converged" "$TMP/walk.out" '"summary":{"by_version":{"4":2},"offered_by_version":{"4":2},"refusing_by_version":{},"none":0,"refusing":0,"active":4,"converged":true,"total":2,"previous":null}'
check "the approved version is active at the end" 200 "$(req GET /v1/clusters/cache/ring)"

# the "CLI with a server" block, pasted after the walkthrough as a reader would, from a folder like
# the repository root (the sources' tests/ and this build's build/), with `set -e`; the files it
# makes go to a temporary folder of its own (mktemp -d, under $TMP here), none to that root
awk '/<!-- cli-server -->/{on=1; next} on && /^```$/ && seen {exit} on && /^```/{seen=1; next} on{print}' \
    "$src/README.md" >"$TMP/cli.sh"
check "the CLI block has ringkeeper commands" 1 "$([ "$(grep -c '^ringkeeper ' "$TMP/cli.sh")" -ge 10 ] && echo 1)"
sed -i "s|RINGKEEPER_SERVER=http://127.0.0.1:7070|RINGKEEPER_SERVER=$BASE|" "$TMP/cli.sh"
mkdir -p "$TMP/root" && ln -s "$src/tests" "$TMP/root/tests" && ln -s "$build" "$TMP/root/build"
mkdir "$TMP/scratch"
(cd "$TMP/root" && TMPDIR=$TMP/scratch timeout 120 bash -euo pipefail "$TMP/cli.sh") >"$TMP/cli.out" 2>&1
code=$?
check "the CLI block runs" 0 "$code"
[ "$code" -eq 0 ] || cat "$TMP/cli.out"
check "the CLI block leaves nothing in the repository root" "build tests" "$(ls -A "$TMP/root" | tr '\n' ' ' | sed 's/ $//')"
check "the CLI block's files are in its temporary folder" "keys.txt next.json shop.ring" \
    "$(cd "$TMP/scratch"/tmp.* && ls -A | tr '\n' ' ' | sed 's/ $//')"
has "the CLI block: the watch saw the activation" "$TMP/cli.out" "version=2 fingerprint="
check "the CLI block: the edited version published, as a table" 1 "$(grep -cE '^version +4$' "$TMP/cli.out")"
has "ring is v4" "$TMP/headers" 'ETag: "v4.'
rk_stop
finish
