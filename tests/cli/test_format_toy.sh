#!/usr/bin/env bash
# test_format_toy.sh — a configuration format of import and export is one file and one line (issue
# 55; docs/ARCHITECTURE.md, "Where a newcomer adds"): a build with -DRK_TOY_FORMAT=ON registers
# tests/cli/toy_format.c, and with no other file changed `ringkeeper import --toy`, `export --format
# toy` and `export --format toy --into` read and write it, their help names it, and the other
# formats' options are refused with it as with any format.
# usage: test_format_toy.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
build=$(mktemp -d)
mkdir -p "$build/server"
. "$src/tests/server/lib.sh" "$build/server/ringkeeperd"
trap 'rk_cleanup; rm -rf "$build"' EXIT

rk_toy_build "$src" "$build" RK_TOY_FORMAT ringkeeper_cli
RK=$build/client/ringkeeper

printf '# two sets\nweb a 10.0.0.1:80 1\nweb b 10.0.0.2:80 2\ndb x 10.0.1.1:5432 1\n' >"$TMP/sets.toy"
"$RK" import --toy "$TMP/sets.toy" --set web >"$TMP/web.json" 2>"$TMP/err"
check "import --toy" 0 "$?"
has "import: the set's servers" "$TMP/web.json" '"id": "b"'
has "import: the toy's note" "$TMP/err" "note: set web: 2 servers"
if grep -q '"x"' "$TMP/web.json"; then bad "import took another set's server"; else ok; fi
"$RK" import --toy "$TMP/sets.toy" >/dev/null 2>"$TMP/err"
check "import --toy without --set" 2 "$?"
has "the usage names every format" "$TMP/err" "--envoy FILE [--envoy-cluster NAME] or --toy FILE --set NAME"

"$RK" export --format toy --set web --title hello --file "$TMP/web.json" >"$TMP/out" 2>"$TMP/err"
check "export --format toy" 0 "$?"
check "export: the toy's text" "$(printf '# hello\nweb a 10.0.0.1:80 1\nweb b 10.0.0.2:80 2')" \
    "$(cat "$TMP/out")"
"$RK" export --format toy --set web --pool p --file "$TMP/web.json" >/dev/null 2>"$TMP/err"
check "export --format toy --pool" 2 "$?"
has "another format's option refused" "$TMP/err" "--format toy takes --set NAME [--title TEXT]"

sed 's/"weight": 2/"weight": 5/' "$TMP/web.json" >"$TMP/heavier.json"
"$RK" export --format toy --set web --into "$TMP/sets.toy" --file "$TMP/heavier.json" \
    >"$TMP/out" 2>"$TMP/err"
check "export --format toy --into" 0 "$?"
has "--into says what it did" "$TMP/out" "the servers of set web rewritten"
check "--into: only the set's servers changed" \
    "$(printf '# two sets\nweb a 10.0.0.1:80 1\nweb b 10.0.0.2:80 5\ndb x 10.0.1.1:5432 1')" \
    "$(cat "$TMP/sets.toy")"
"$RK" export --format toy --set web --title t --into "$TMP/sets.toy" --file "$TMP/web.json" \
    >/dev/null 2>"$TMP/err"
check "--into with --title" 2 "$?"
has "--into keeps the file's own" "$TMP/err" "--into keeps the set's own comments: drop --title"

"$RK" import --help >"$TMP/help"
has "import --help names the toy" "$TMP/help" "  --toy FILE"
"$RK" export --help >"$TMP/help"
has "export --help names the toy" "$TMP/help" "With --format toy"
has "export --help lists it among the formats" "$TMP/help" "nutcracker, nginx, haproxy, envoy or toy"
finish
