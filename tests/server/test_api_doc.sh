#!/usr/bin/env bash
# test_api_doc.sh — docs/API.md is current in what does not vary between runs: every route of the
# route table in server/api/api.c is a heading of docs/API.md, and every error code of api.c's table
# (status and code) is a row of the doc's error table, and the other way round, and the rows of
# server/api/api_errors.h, which the server answers with, are that table. Needs no server and
# no python3. When it fails, regenerate the doc: tests/server/make_api_doc.sh build/server/ringkeeperd .
# usage: test_api_doc.sh RINGKEEPERD SOURCE_DIR
# shellcheck disable=SC2016 # markdown backticks are meant literally
. "$(dirname "$0")/lib.sh" "$1"
src=$(cd "$2" && pwd)
api=$src/server/api/api.c
doc=$src/docs/API.md
fix="add it to tests/server/make_api_doc.sh (a new route or code needs its text and example) and run: tests/server/make_api_doc.sh build/server/ringkeeperd ."
[ -f "$doc" ] || { echo "FAIL: no $doc; $fix"; exit 1; }

# The routes: the lines {"METHOD", "/pattern", ...} of "static const route routes[]".
sed -n '/^static const route routes\[\] = {/,/^};/s/^ *{"\([A-Z]*\)", "\([^"]*\)".*/\1 \2/p' "$api" >"$TMP/routes"
check "api.c has a route table" 1 "$([ "$(wc -l <"$TMP/routes")" -ge 10 ] && echo 1)"
while read -r method pattern; do
    if grep -qF -x "### \`$method $pattern\`" "$doc"; then ok; else bad "no heading ### \`$method $pattern\` in docs/API.md; $fix"; fi
done <"$TMP/routes"

# The error codes: "| 400 | malformed_json | ..." rows of api.c's header comment, and the rows of the
# doc's table ("| 400 | `malformed_json` | ...").
sed -n 's/^ \* | \([0-9][0-9][0-9]\) *| \([a-z_]*\) *|.*/\1 \2/p' "$api" | sort >"$TMP/codes_api"
sed -n 's/^| \([0-9][0-9][0-9]\) | `\([a-z_]*\)` |.*/\1 \2/p' "$doc" | sort >"$TMP/codes_doc"
check "api.c has an error table" 1 "$([ "$(wc -l <"$TMP/codes_api")" -ge 15 ] && echo 1)"
while read -r status code; do
    if grep -qx "$status $code" "$TMP/codes_doc"; then ok; else bad "error $status $code of api.c is not in docs/API.md's table; $fix"; fi
done <"$TMP/codes_api"
while read -r status code; do
    if grep -qx "$status $code" "$TMP/codes_api"; then ok; else bad "error $status $code of docs/API.md is not in api.c's table; $fix"; fi
done <"$TMP/codes_doc"

# The same codes and statuses are the rows the server answers with (server/api/api_errors.h).
sed -n 's/^ *X([A-Z_]*, \([0-9][0-9][0-9]\), "\([a-z_]*\)").*/\1 \2/p' "$src/server/api/api_errors.h" | sort >"$TMP/codes_c"
check "api_errors.h has the codes of api.c's table" "$(cat "$TMP/codes_api")" "$(cat "$TMP/codes_c")"

# Each error of the table but 500 and 503 has an example heading in the Errors section.
while read -r status code; do
    case $status in 5*) continue ;; esac
    if grep -qF -x "### \`$code\`" "$doc"; then ok; else bad "no example of $code in docs/API.md; $fix"; fi
done <"$TMP/codes_api"
finish
