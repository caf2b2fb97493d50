#!/usr/bin/env bash
# test_log_escape.sh — a request can neither forge a log line nor put control bytes in the log:
# paths, methods and error bodies are escaped as \xNN (CR, LF, ESC, DEL, bytes over 0x7f, the
# backslash, spaces inside a field), and every request is exactly one line.
# usage: test_log_escape.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
RAW="$(dirname "$0")/raw_http.py"
rk_start

forged='/x%0aPOST%20/v1/clusters/prod/versions/7/activate%20200%20512%201.2ms%20alice%0d'
check "forged path: 400 (a control character in a path)" 400 "$(req GET "$forged")"
check "ESC and DEL in the path: 400" 400 "$(req GET '/y%1b[2J%7f%c2%9b%5cx41' -g)"
# a method MHD takes as a token, with a byte over 0x7f in it
printf 'G\xe9T /z HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | "$RAW" "$PORT" >/dev/null
check "healthz" 200 "$(req GET /healthz)"
rk_stop

grep -a -v '^ringkeeperd: ' "$TMP/server.log" >"$TMP/requests"
check "one line per request" 4 "$(wc -l <"$TMP/requests")"
if grep -aq '^POST /v1/clusters/prod' "$TMP/requests"; then bad "a forged line: $(cat "$TMP/requests")"; else ok; fi
has "LF and spaces escaped" "$TMP/requests" 'GET /x\x0aPOST\x20/v1/clusters/prod/versions/7/activate\x20200\x20512\x201.2ms\x20alice\x0d 400 '
has "ESC, DEL, C1 and the backslash escaped" "$TMP/requests" 'GET /y\x1b[2J\x7f\xc2\x9b\x5cx41 400 '
has "method escaped" "$TMP/requests" 'G\xe9T /z '
if LC_ALL=C grep -aq $'[\x01-\x1f\x7f-\xff]' "$TMP/requests"; then
    bad "control or non-ASCII bytes in the log: $(od -c "$TMP/requests" | head)"
else ok; fi
finish
