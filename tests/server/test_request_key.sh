#!/usr/bin/env bash
# test_request_key.sh — a balancer topology's request_key (docs/LOADBALANCERS.md, "Requests")
# through a real ringkeeperd: kept in the version and ring documents, `lookup --requests` of the
# server's ring equal to the offline one's, a change of request_key refused on activation and in
# plans unless forced, a bad one refused with its field and nothing stored.
# usage: test_request_key.sh RINGKEEPERD RINGKEEPER_CLI
. "$(dirname "$0")/lib.sh" "$1"
RK=$2
rk_start
J='Content-Type: application/json'

nginx() { # nginx KEY N: an nginx topology of N servers taking its keys as KEY
    local nodes= i
    for i in $(seq 1 "$2"); do
        nodes="$nodes${nodes:+,}{\"id\":\"10.0.0.$i:80\",\"addr\":\"10.0.0.$i:80\",\"weight\":$i}"
    done
    printf '{"scheme":"nginx","hash":"crc32a","request_key":"%s","nodes":[%s]}' "$1" "$nodes"
}
nginx '$uri' 5 >"$TMP/v1"
nginx '$uri' 6 >"$TMP/v2"
nginx '$arg_id' 6 >"$TMP/v3"

check "publish v1" 201 "$(req POST '/v1/clusters/web/versions?activate=true' -H "$J" --data-binary @"$TMP/v1")"
has "v1 keeps request_key" "$TMP/body" '"request_key":"$uri"'
check "ring" 200 "$(req GET /v1/clusters/web/ring)"
has "the ring keeps it" "$TMP/body" '"request_key":"$uri"'

# Requests routed by the server's ring as by the file's: dot segments, escapes, queries.
for i in $(seq 1 300); do
    printf '/img/%d/./a//b/../c%%41?id=%d\tX-Key: k%d\n' "$i" "$i" "$i"
done >"$TMP/requests"
"$RK" lookup --requests --topology "$TMP/v1" <"$TMP/requests" >"$TMP/offline"
"$RK" lookup --requests --server "$BASE" --cluster web --expect-scheme nginx <"$TMP/requests" \
    >"$TMP/online" 2>"$TMP/err"
check "lookup --requests of the server's ring" 0 $?
if cmp -s "$TMP/offline" "$TMP/online"; then ok; else bad "the server's ring routes requests differently"; fi
check "every request routed" 300 "$(grep -c $'\t10.0.0.' "$TMP/online")"
# $uri is the path nginx normalises: /img/1/./a//b/../c%41 is /img/1/a/cA
printf '/img/1/a/cA\n' | "$RK" lookup --topology "$TMP/v1" >"$TMP/bare"
check "a request keyed by its normalised path" "$(cut -f2 "$TMP/bare")" "$(head -1 "$TMP/online" | cut -f2)"

# The same key: a plan and a plain activation; another key moves every request's key.
check "publish v2 (a sixth server)" 201 "$(req POST /v1/clusters/web/versions -H "$J" --data-binary @"$TMP/v2")"
check "plan 1 -> 2" 200 "$(req GET '/v1/clusters/web/plan?arcs=false')"
check "activate v2" 200 "$(req POST /v1/clusters/web/versions/2/activate)"
check "publish v3 (another request_key)" 201 "$(req POST /v1/clusters/web/versions -H "$J" --data-binary @"$TMP/v3")"
check "plan 2 -> 3 refused" 422 "$(req GET '/v1/clusters/web/plan?from=2&to=3')"
has "... naming request_key" "$TMP/body" '"field":"request_key"'
check "activate v3 refused" 422 "$(req POST /v1/clusters/web/versions/3/activate)"
has "... naming request_key" "$TMP/body" '"field":"request_key"'
check "forced with a reason" 200 "$(req POST /v1/clusters/web/versions/3/activate -H "$J" \
    --data-binary '{"force":true,"reason":"hash by the id argument"}')"

# A key nginx cannot be told offline is refused, with its field, and nothing is stored.
nginx '$remote_addr' 2 >"$TMP/bad"
check "publish \$remote_addr" 400 "$(req POST /v1/clusters/web/versions -H "$J" --data-binary @"$TMP/bad")"
has "... naming request_key" "$TMP/body" '"field":"request_key"'
has "... saying what is evaluated" "$TMP/body" 'evaluated from $request_uri, $uri'
check "versions" 200 "$(req GET /v1/clusters/web/versions)"
if grep -q '"version":4' "$TMP/body"; then bad "a refused publish left a version"; else ok; fi
check "request_key in a ketama topology" 400 "$(req POST /v1/clusters/kt/versions -H "$J" \
    --data-binary '{"scheme":"ketama","hash":"md5","request_key":"$uri","nodes":[{"id":"a","addr":"h:1","weight":1}]}')"
has "... says whose it is" "$TMP/body" 'only the balancer schemes'

rk_stop
finish
