#!/usr/bin/env bash
# test_docs.sh — what the docs state that the project can check: the version docs/CLIENT.md names
# (the shared library's file, rk_version(), find_package) is the project's (CMakeLists.txt); every
# file the README and docs/ name under docs/examples/ is there; and docs/MIGRATE.md's rollout
# example runs as written, from the repository root against a real ringkeeperd, printing what the
# page shows.
# usage: test_docs.sh RINGKEEPERD RINGKEEPER SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$3" && pwd)

# the project's version, and every version docs/CLIENT.md names: X.Y.Z of the library file and of
# rk_version(), X.Y of find_package and of what it accepts
version=$(sed -n 's/^project(ringkeeper VERSION \([0-9][0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
check "CMakeLists.txt names the project's version" 1 "$([ -n "$version" ] && echo 1)"
grep -oE '(\.so\.|`")[0-9]+\.[0-9]+\.[0-9]+|find_package\(ringkeeper [0-9]+\.[0-9]+|accepts [0-9]+\.[0-9]+' \
    "$src/docs/CLIENT.md" >"$TMP/named"
check "docs/CLIENT.md names the version five times" 5 "$(wc -l <"$TMP/named")"
while read -r named; do
    want=$version
    case $named in find_package* | accepts*) want=${version%.*} ;; esac
    check "docs/CLIENT.md's [$named] is the project's $version" "$want" "$(grep -oE '[0-9]+(\.[0-9]+)+$' <<<"$named")"
done <"$TMP/named"

# every file named under docs/examples/ (in a code block or the text) exists
cat "$src/README.md" "$src"/docs/*.md | grep -oE 'docs/examples/[A-Za-z0-9_.-]*[A-Za-z0-9_]' | sort -u >"$TMP/examples"
check "the docs name files under docs/examples/" 1 "$([ "$(wc -l <"$TMP/examples")" -ge 3 ] && echo 1)"
while read -r path; do
    check "$path, named in the docs, exists" 1 "$([ -f "$src/$path" ] && echo 1)"
done <"$TMP/examples"

# fenced FILE MARKER N: the lines of the Nth fenced block after the line <!-- MARKER --> of FILE
fenced() {
    awk -v m="<!-- $2 -->" -v n="$3" '$0 == m { on = 1; next }
        on && /^```/ { if (inb && ++k == n) exit; inb = !inb; next }
        on && inb && k == n - 1 { print }' "$1"
}
# docs/MIGRATE.md's rollout example: its commands from the source root (the server's URL pointed at
# this one's), and the steps the page prints are what its first command prints
fenced "$src/docs/MIGRATE.md" rollout-example 1 >"$TMP/rollout.sh"
fenced "$src/docs/MIGRATE.md" rollout-example 2 >"$TMP/rollout.want"
check "the rollout example has ringkeeper commands" 3 "$(grep -c '^ringkeeper ' "$TMP/rollout.sh")"
check "the rollout example shows the steps" 1 "$(grep -c '^digest [0-9a-f]\{16\}$' "$TMP/rollout.want")"
rk_start
sed -i "s|http://127.0.0.1:7070|$BASE|g" "$TMP/rollout.sh"
(cd "$src" && PATH=$(dirname "$RK"):$PATH timeout 60 bash -euo pipefail "$TMP/rollout.sh") \
    >"$TMP/rollout.out" 2>"$TMP/rollout.err"
code=$?
check "the rollout example runs (stderr: $(head -c 300 "$TMP/rollout.err"))" 0 "$code"
head -n "$(wc -l <"$TMP/rollout.want")" "$TMP/rollout.out" >"$TMP/rollout.got"
if cmp -s "$TMP/rollout.want" "$TMP/rollout.got"; then ok; else
    bad "the rollout example prints what docs/MIGRATE.md shows"
    diff "$TMP/rollout.want" "$TMP/rollout.got" | head -20
fi
has "the server's review ends at the drained topology" "$TMP/rollout.out" '"comment": "ten.json with n3 drained and removed"'
rk_stop
finish
