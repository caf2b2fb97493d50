#!/usr/bin/env bash
# test_docs.sh — what the docs state that the project can check: the version docs/CLIENT.md names
# (the shared library's file, rk_version(), find_package) is the project's (CMakeLists.txt).
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
finish
