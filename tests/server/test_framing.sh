#!/usr/bin/env bash
# test_framing.sh — requests whose end a proxy and ringkeeperd could see differently are refused
# with 400, a JSON error naming the header, and the connection closed before any body is read: a
# length with chunks, two lengths, a length that is not a number, a coding other than chunked, two
# Authorization or Host headers, HTTP/1.1 without Host. A piggy-backed request is never served.
# usage: test_framing.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
RAW="$(dirname "$0")/raw_http.py"
rk_start
P='POST /v1/clusters/f/versions HTTP/1.1\r\nHost: x\r\n'
H='GET /healthz HTTP/1.1\r\nHost: x\r\n'
NEXT='GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' # piggy-backed: must not be answered

# refused NAME FIELD REQUEST: 400 with field FIELD, then the connection closed, nothing more
refused() {
    printf "$3" | "$RAW" "$PORT" --wait 3 >"$TMP/answer"
    check "$1: status" "HTTP/1.1 400 Bad Request" "$(head -1 "$TMP/answer" | tr -d '\r')"
    has "$1: JSON error" "$TMP/answer" "{\"error\":{\"code\":\"invalid_header\""
    has "$1: field" "$TMP/answer" "\"field\":\"$2\""
    check "$1: closed" "--closed" "$(tail -1 "$TMP/answer")"
    check "$1: one answer" 1 "$(grep -c '^HTTP/1' "$TMP/answer")"
}
refused "length and chunks" Transfer-Encoding "${P}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$NEXT"
refused "chunks and length" Transfer-Encoding "${P}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n$NEXT"
refused "two lengths" Content-Length "${P}Content-Length: 2\r\nContent-Length: 30\r\n\r\n{}$NEXT"
refused "same length twice" Content-Length "${P}Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}$NEXT"
refused "gzip, chunked" Transfer-Encoding "${P}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
refused "two codings" Transfer-Encoding "${P}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
refused "two Authorization" Authorization "${H}Authorization: Bearer aaaaaaaaaaaaaaaaaaaa\r\nAuthorization: Bearer bbbbbbbbbbbbbbbbbbbb\r\n\r\n"
refused "two Host" Host "${H}Host: y\r\n\r\n"
refused "HTTP/1.1 without Host" Host 'GET /healthz HTTP/1.1\r\n\r\n'
refused "a space before the colon" "Transfer-Encoding " "${P}Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n$NEXT"

# Content-Length: -1 never reaches ringkeeperd: libmicrohttpd answers 400 itself and closes
printf "${H}Content-Length: -1\r\n\r\n$NEXT" | "$RAW" "$PORT" --wait 3 >"$TMP/answer"
check "length -1: status" "HTTP/1.1 400 Bad Request" "$(head -1 "$TMP/answer" | tr -d '\r')"
check "length -1: closed" "--closed" "$(tail -1 "$TMP/answer")"
if grep -q '^HTTP/1.1 200' "$TMP/answer"; then bad "length -1: the piggy-backed request was served"; else ok; fi

# sound requests still pass: one chunked publish, HTTP/1.0 without Host, keep-alive kept
topo 3 >"$TMP/t3"
got=$(curl -s -o /dev/null -w '%{http_code}' -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' \
    --data-binary @"$TMP/t3" "$BASE/v1/clusters/f/versions")
check "chunked publish" 201 "$got"
printf 'GET /healthz HTTP/1.0\r\n\r\n' | "$RAW" "$PORT" --wait 3 >"$TMP/answer"
check "HTTP/1.0 without Host" "HTTP/1.1 200 OK" "$(head -1 "$TMP/answer" | tr -d '\r')"
printf "${H}\r\n$NEXT" | "$RAW" "$PORT" --wait 1 >"$TMP/answer"
check "two requests on one connection" 2 "$(grep -c '^HTTP/1.1 200' "$TMP/answer")"
# %00 or a malformed %-escape in the path: 400 before any route sees it (libmicrohttpd decodes %00
# to a NUL, which cut the path short: versions%00zzz published, healthz%00/admin was /healthz)
for path in '/v1/clusters/x/versions%00zzz' '/healthz%00/admin' '/healthz%zz' '/healthz%4' '/healthz%'; do
    got=$(curl -s -o "$TMP/body" -w '%{http_code}' --path-as-is -H 'Content-Type: application/json' \
        --data-binary @"$TMP/t3" "$BASE$path")
    check "$path: 400" 400 "$got"
    has "$path: says why" "$TMP/body" '"code":"invalid_path"'
done
check "nothing was published to x" 404 "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/clusters/x/versions")"
check "a sound escape still decodes" 200 "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/clusters/%66/versions")"
# %2F in the path is not a separator (a proxy's rule on the raw path would see another route):
# versions%2F2%2Factivate activated v2 before; now 400, and v2 stays staged. In a query it decodes.
curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @"$TMP/t3" "$BASE/v1/clusters/f/versions"
for path in '/v1/clusters/f/versions%2F2%2Factivate' '/v1/clusters/f/versions%2f2/activate'; do
    got=$(curl -s -o "$TMP/body" -w '%{http_code}' --path-as-is -X POST "$BASE$path")
    check "$path: 400" 400 "$got"
    has "$path: says why" "$TMP/body" 'escaped slash (%2F)'
done
curl -s -o "$TMP/body" "$BASE/v1/clusters/f/versions/2"
has "v2 stays staged" "$TMP/body" '"state":"staged"'
check "%2F in a query is a value's" 400 "$(curl -s -o "$TMP/body" -w '%{http_code}' "$BASE/v1/clusters/f/versions/1/arc?key=a%2Fb")"
has "... (the arc route's own answer)" "$TMP/body" '"code":"invalid_parameter"'
rk_stop
check "stopped by SIGTERM" 0 "$STOP_CODE"
finish
