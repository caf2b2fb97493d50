#!/usr/bin/env bash
# test_cli_watch.sh — `ringkeeper watch` against a real ringkeeperd: its first line (the active
# version), one line per activation in each output form, --count, SIGTERM and SIGINT (exit 0),
# an unknown cluster (exit 2), and a server that goes away (the reason once, then exit 4 after
# --timeout).
# usage: test_cli_watch.sh RINGKEEPERD RINGKEEPER SOURCE_DIR
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$3" && pwd)
four=$src/tests/cli/four.json
five=$src/tests/cli/five.json
unset RINGKEEPER_SERVER RINGKEEPER_TOKEN RINGKEEPER_CA_FILE
WPID=

cli() { # cli CODE NAME ARGS...: ringkeeper ARGS, stdout to $TMP/out, stderr to $TMP/err
    local want=$1 name=$2
    shift 2
    timeout 60 "$RK" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    local got=$?
    check "$name: exit code (stderr: $(head -c 300 "$TMP/err"))" "$want" "$got"
}
# watch_bg ARGS...: ringkeeper watch ARGS in the background with SIGINT at its default (a shell's
# background job would ignore it), output in $TMP/w.out and $TMP/w.err
watch_bg() {
    : >"$TMP/w.out" # now, not when the child opens it: lines() must not count the last watch's lines
    python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$RK" watch "$@" </dev/null >"$TMP/w.out" 2>"$TMP/w.err" &
    WPID=$!
}
# lines N: waits (at most 20 s) until $TMP/w.out has N lines
lines() {
    for _ in $(seq 1 200); do
        [ "$(wc -l <"$TMP/w.out")" -ge "$1" ] && return 0
        sleep 0.1
    done
    bad "watch printed no line $1: $(cat "$TMP/w.out" "$TMP/w.err")"
}
# ended NAME CODE: waits (at most 30 s) for the watch to exit, and checks its exit code
ended() {
    for _ in $(seq 1 300); do
        kill -0 "$WPID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$WPID" 2>/dev/null && kill -9 "$WPID"
    wait "$WPID"
    local got=$?
    check "$1: exit code (stderr: $(head -c 300 "$TMP/w.err"))" "$2" "$got"
}
line_re='^version=[0-9]+ fingerprint=[0-9a-f]{16} nodes=[0-9]+ seen_at=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
fields() { sed 's/ seen_at=.*//' "$1"; } # the lines without their time

# bad input
cli 2 "--wait 0" watch --server http://127.0.0.1:1 --cluster w --wait 0
check "--wait 0: says why" 'ringkeeper watch: --wait: must be 1..60, got "0"' "$(cat "$TMP/err")"
cli 2 "--count 0" watch --server http://127.0.0.1:1 --cluster w --count 0
check "--count 0: says why" 'ringkeeper watch: --count: must be 1..1000000, got "0"' "$(cat "$TMP/err")"
cli 2 "-o yaml" watch --server http://127.0.0.1:1 --cluster w -o yaml
check "-o yaml: says why" 'ringkeeper watch: --output: must be json or table, got "yaml"' "$(cat "$TMP/err")"
cli 0 "--help" watch --help
has "--help: the line" "$TMP/out" "version=7 fingerprint=dbb9f9d3244ab4f7 nodes=5 seen_at="

rk_start
S=(--server "$BASE" --cluster w)
cli 2 "unknown cluster" watch "${S[@]}"
check "unknown cluster: the server's words" \
    "ringkeeper watch: HTTP 404 from $BASE/v1/clusters/w/ring: there is no cluster named w; publishing a version creates it" \
    "$(cat "$TMP/err")"
cli 0 "publish v1" publish "$four" "${S[@]}" --activate --quiet
check "publish --quiet: the version" 1 "$(cat "$TMP/out")"
cli 0 "publish v2" publish "$five" "${S[@]}" --quiet
cli 0 "publish v3" publish "$four" "${S[@]}" --quiet

# --count 1: the active version's line, then the activation's, then exit 0
watch_bg "${S[@]}" --count 1 --wait 5
lines 1
cli 0 "activate 2" activate 2 "${S[@]}" --quiet
check "activate --quiet prints nothing" "" "$(cat "$TMP/out")"
ended "--count 1" 0
check "two lines, the active version first" "version=1 fingerprint=7bb0b9b16b5a8abe nodes=4
version=2 fingerprint=dbb9f9d3244ab4f7 nodes=5" "$(fields "$TMP/w.out")"
check "both lines in the documented form" 2 "$(grep -cE "$line_re" "$TMP/w.out")"
check "nothing on stderr" "" "$(cat "$TMP/w.err")"

# -o json: one object a line; SIGTERM ends it with exit 0
watch_bg "${S[@]}" -o json
lines 1
check "-o json: an object a line" '{"version":2,"fingerprint":"dbb9f9d3244ab4f7","nodes":5,"seen_at":' \
    "$(sed 's/"seen_at":.*/"seen_at":/' "$TMP/w.out")"
check "-o json: is JSON" 2 "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$TMP/w.out")"
kill -TERM "$WPID"
ended "SIGTERM" 0

# --quiet: the version numbers; SIGINT ends it with exit 0
watch_bg "${S[@]}" --quiet
lines 1
cli 0 "activate 3" activate 3 "${S[@]}" --quiet
lines 2
kill -INT "$WPID"
ended "SIGINT" 0
check "--quiet: the versions" "2
3" "$(cat "$TMP/w.out")"

# the server goes away: the reason once on stderr, then exit 4 after --timeout
watch_bg "${S[@]}" --timeout 2
lines 1
rk_stop
ended "server gone" 4
check "server gone: two lines on stderr" 2 "$(wc -l <"$TMP/w.err")"
has "server gone: retrying" "$TMP/w.err" "; retrying every 1 s for up to 2 s (--timeout)"
check "server gone: gave up" 1 \
    "$(grep -c "^ringkeeper watch: server unreachable: cannot get $BASE/v1/clusters/w/ring?wait=30: .*(failing for over 2 s: gave up)\$" "$TMP/w.err")"
finish
