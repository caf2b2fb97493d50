#!/usr/bin/env bash
# test_cli_hostile.sh — the `ringkeeper` CLI against a fake server answering bytes no ringkeeperd
# sends: escape sequences, CR/LF, DEL and C1 controls in error messages, fields, version lists,
# documents and plans. They must reach the terminal escaped (\x1b, \r, \n, \x7f, \u0085), never raw:
# raw, they recolour or clear the screen and forge table rows or error lines.
# usage: test_cli_hostile.sh RINGKEEPER FAKE_SERVER
set -u
RK=$1
FAKE=$2
TMP=$(mktemp -d)
FAKE_PID=
PASSED=0
FAILED=0
unset RINGKEEPER_SERVER RINGKEEPER_TOKEN RINGKEEPER_CA_FILE
trap '[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null; rm -rf "$TMP"' EXIT

ok() { PASSED=$((PASSED + 1)); }
bad() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { # check NAME WANT GOT
    if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi
}
has() { # has NAME FILE TEXT
    if grep -qF -- "$3" "$2"; then ok; else bad "$1: no [$3] in: $(head -c 600 "$2" | od -c | head)"; fi
}
clean() { # clean NAME FILE: nothing but printable ASCII, tabs and newlines
    local rest
    rest=$(LC_ALL=C tr -d '\n\t -~' <"$2" | od -An -c)
    if [ -z "$rest" ]; then ok; else bad "$1: raw control bytes in $2: $rest"; fi
}

# serve STATUS BODY: (re)starts the fake server answering every request so; sets URL
serve() {
    [ -n "$FAKE_PID" ] && kill "$FAKE_PID" && wait "$FAKE_PID" 2>/dev/null
    : >"$TMP/port" # here: the forked job's own truncation may come after the loop read the old port
    "$FAKE" "$1" "$2" >>"$TMP/port" &
    FAKE_PID=$!
    local port=
    for _ in $(seq 1 100); do
        port=$(sed -n 's/listening on port \([0-9]*\)/\1/p' "$TMP/port")
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { echo "the fake server did not start"; exit 1; }
    URL=http://127.0.0.1:$port
}

# cli CODE NAME ARGS...: runs ringkeeper ARGS, stdout to $TMP/out, stderr to $TMP/err
cli() {
    local want=$1 name=$2
    shift 2
    timeout 60 "$RK" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    check "$name: exit code" "$want" "$?"
}

ESC='\u001b[2J\u001b]0;pwned\u0007'
FORGED='\r\nringkeeper: all good\u007f\u0085'
SHOWN='\x1b[2J\x1b]0;pwned\x07\r\nringkeeper: all good\x7f\u0085'

# error messages and fields: through the CLI's own HTTP call, and through the client library
serve 400 "{\"error\":{\"code\":\"x\",\"message\":\"no$ESC$FORGED\",\"field\":\"f$ESC\"}}"
cli 2 "versions, hostile error" versions --server "$URL" --cluster c
clean "versions, hostile error: stderr" "$TMP/err"
has "versions, hostile error: message escaped" "$TMP/err" "server: no$SHOWN (field: f\\x1b[2J"
check "versions, hostile error: one line" 1 "$(wc -l <"$TMP/err")"
cli 2 "lookup, hostile error" lookup --server "$URL" --cluster c
clean "lookup, hostile error: stderr" "$TMP/err"
has "lookup, hostile error: message escaped" "$TMP/err" "no\\x1b[2J\\x1b]0;pwned\\x07\\r\\n"
check "lookup, hostile error: one line" 1 "$(wc -l <"$TMP/err")"
serve 500 "{\"error\":{\"code\":\"x\",\"message\":\"$FORGED\"}}"
cli 1 "plan, hostile 500" plan --server "$URL" --cluster c
clean "plan, hostile 500: stderr" "$TMP/err"

# the version table: a comment or author cannot forge rows or drive the terminal
row="{\"version\":7,\"state\":\"staged\u001b[32m\",\"created_at\":\"2026-01-01T00:00:00Z\",\
\"author\":\"ops$ESC\",\"points\":160,\"fingerprint\":\"0123456789abcdef\",\"comment\":\"x$ESC$FORGED\"}"
serve 200 "{\"versions\":[$row],\"next_before\":null}"
cli 0 "versions, hostile rows" versions --server "$URL" --cluster c
clean "versions table" "$TMP/out"
check "versions table: header and one row" 2 "$(wc -l <"$TMP/out")"
has "versions table: comment escaped" "$TMP/out" "x$SHOWN"
has "versions table: author and state escaped" "$TMP/out" "staged\\x1b[32m"
# invisible and direction marks: a U+202E would reverse the rest of the row on a terminal
row="{\"version\":8,\"state\":\"staged\",\"created_at\":\"2026-01-01T00:00:00Z\",\
\"author\":\"ops\",\"points\":160,\"fingerprint\":\"0123456789abcdef\",\"comment\":\"rev\u202eersed\u2028line\u200b\"}"
serve 200 "{\"versions\":[$row],\"next_before\":null}"
cli 0 "versions, bidi marks" versions --server "$URL" --cluster c
has "versions table: marks escaped" "$TMP/out" 'rev\u202Eersed\u2028line\u200B'
if grep -q $'\xe2\x80\xae' "$TMP/out"; then bad "a raw U+202E reached the terminal"; else ok; fi

# JSON documents stay JSON: what jansson leaves raw (DEL, C1) is written as \u escapes
serve 200 "{\"version\":7,\"comment\":\"x$ESC$FORGED\"}"
cli 0 "show, hostile document" show 7 --server "$URL" --cluster c
clean "show" "$TMP/out"
has "show: C0 escaped by jansson" "$TMP/out" '\u001B[2J'
has "show: DEL and C1 escaped" "$TMP/out" 'all good\u007F\u0085'
# the same document as a table (-o table), a key and a list of objects: one line per field or row
serve 200 "{\"version\":7,\"comment\":\"x$ESC$FORGED\",\"k$ESC\":1,\"nodes\":[{\"id\":\"a$ESC\"}]}"
cli 0 "show -o table, hostile document" show 7 --server "$URL" --cluster c -o table
clean "show -o table" "$TMP/out"
check "show -o table: a value escaped" "x$SHOWN" "$(sed -n 's/^comment  *//p' "$TMP/out")"
has "show -o table: a key escaped" "$TMP/out" 'k\x1b[2J'
has "show -o table: a cell escaped" "$TMP/out" 'a\x1b[2J'
check "show -o table: the lines" 7 "$(wc -l <"$TMP/out")"
cli 0 "show --quiet, hostile document" show 7 --server "$URL" --cluster c --quiet
check "show --quiet: the version" 7 "$(cat "$TMP/out")"

# a plan is printed as the server sends it, but escaped; its lines stay lines
serve 200 $'moved 0%\e[2J\r\nfake\x7f\xc2\x85\xff\n'
cli 0 "plan text, hostile" plan --server "$URL" --cluster c
clean "plan text" "$TMP/out"
has "plan text: escaped" "$TMP/out" 'moved 0%\x1b[2J\r'
has "plan text: DEL, C1, invalid UTF-8" "$TMP/out" 'fake\x7f\u0085\xff'
check "plan text: two lines" 2 "$(wc -l <"$TMP/out")"
serve 200 $'{"moved_fraction": 0, "note": "\e\x7f"}\n'
cli 0 "plan json, hostile" plan --server "$URL" --cluster c --format json
clean "plan json" "$TMP/out"
has "plan json: \\u escapes keep it JSON" "$TMP/out" '"note": "\u001B\u007F"'

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
