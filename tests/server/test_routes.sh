#!/usr/bin/env bash
# test_routes.sh — every route and status code of docs/API.md against a real ringkeeperd.
# usage: test_routes.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
rk_start
J='Content-Type: application/json'

check "healthz" 200 "$(req GET /healthz)"
check "readyz" 200 "$(req GET /readyz)"
check "clusters empty" 200 "$(req GET /v1/clusters)"
has "clusters empty body" "$TMP/body" '"clusters":[]'

# publish: 201, Location, staged, fingerprint and points from the library
topo 4 >"$TMP/t4"
check "publish v1" 201 "$(req POST /v1/clusters/cache/versions -H "$J" --data-binary @"$TMP/t4")"
has "publish Location" "$TMP/headers" "Location: /v1/clusters/cache/versions/1"
has "publish state" "$TMP/body" '"state":"staged"'
has "publish version" "$TMP/body" '"version":1'
has "publish points" "$TMP/body" '"points":640'
has "publish author" "$TMP/body" '"author":"anonymous"'
has "publish activated_at null" "$TMP/body" '"activated_at":null'
has "publish has nodes" "$TMP/body" '"nodes":[{"id":"n0"'

# 400 malformed JSON, invalid topology with field, 422 over the point cap, 413 over the body cap
check "malformed json" 400 "$(req POST /v1/clusters/cache/versions -H "$J" --data-binary '{"hash":')"
has "malformed json error object" "$TMP/body" '"error":{"code":'
check "invalid topology" 400 "$(req POST /v1/clusters/cache/versions -H "$J" \
    --data-binary '{"hash":"fnv1a_32","vnode_factor":160,"nodes":[{"id":"a","addr":"h:1","weight":-1}]}')"
has "invalid topology field" "$TMP/body" '"field":"nodes[0].weight"'
check "unknown field" 400 "$(req POST /v1/clusters/cache/versions -H "$J" \
    --data-binary '{"hash":"fnv1a_32","vnode_facter":160,"nodes":[{"id":"a","addr":"h:1","weight":1}]}')"
has "unknown field named" "$TMP/body" 'vnode_facter'
check "too many points" 422 "$(req POST /v1/clusters/cache/versions -H "$J" \
    --data-binary '{"hash":"fnv1a_32","vnode_factor":4096,"nodes":[{"id":"a","addr":"h:1","weight":1000},{"id":"b","addr":"h:2","weight":100}]}')"
head -c 9000000 /dev/zero | tr '\0' ' ' >"$TMP/big"
check "body over the cap" 413 "$(req POST /v1/clusters/cache/versions -H "$J" --data-binary @"$TMP/big")"
check "bad cluster name" 400 "$(req POST /v1/clusters/Bad%20Name/versions -H "$J" --data-binary @"$TMP/t4")"
check "nothing was written by the refusals" 200 "$(req GET /v1/clusters/cache/versions)"
has "only v1 exists" "$TMP/body" '"next_before":null'
if grep -q '"version":2' "$TMP/body"; then bad "a refused publish left a version"; else ok; fi

# ring before activation: 404 no_active_version
check "ring before activation" 404 "$(req GET /v1/clusters/cache/ring)"
has "no_active_version" "$TMP/body" '"code":"no_active_version"'

# activate, then the ring with ETag and 304
check "activate v1" 200 "$(req POST /v1/clusters/cache/versions/1/activate)"
has "activate state" "$TMP/body" '"state":"active"'
check "ring" 200 "$(req GET /v1/clusters/cache/ring)"
has "ring etag" "$TMP/headers" 'ETag: "v1.'
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
check "ring 304" 304 "$(req GET /v1/clusters/cache/ring -H "If-None-Match: $tag")"
check "ring bare etag: the ring" 200 "$(req GET /v1/clusters/cache/ring -H 'If-None-Match: "v1"')"
check "ring stale etag" 200 "$(req GET /v1/clusters/cache/ring -H 'If-None-Match: "v0"')"

# 409: activating an older (or the same) version
topo 5 >"$TMP/t5"
check "publish v2" 201 "$(req POST /v1/clusters/cache/versions -H "$J" --data-binary @"$TMP/t5")"
check "publish v3" 201 "$(req POST /v1/clusters/cache/versions -H "$J" --data-binary @"$TMP/t4")"
check "activate v3" 200 "$(req POST /v1/clusters/cache/versions/3/activate)"
check "activate older v2" 409 "$(req POST /v1/clusters/cache/versions/2/activate)"
check "activate same v3" 409 "$(req POST /v1/clusters/cache/versions/3/activate)"
req GET /v1/clusters/cache/versions/1 >/dev/null
has "v1 retired" "$TMP/body" '"state":"retired"'
req GET /v1/clusters/cache/versions/2 >/dev/null
has "v2 superseded" "$TMP/body" '"state":"superseded"'

# 412: If-Match on publish and activate
check "publish if-match wrong" 412 "$(req POST /v1/clusters/cache/versions -H "$J" -H 'If-Match: "v2"' --data-binary @"$TMP/t5")"
check "publish if-match right" 201 "$(req POST /v1/clusters/cache/versions -H "$J" -H 'If-Match: "v3"' --data-binary @"$TMP/t5")"
check "activate if-match wrong" 412 "$(req POST /v1/clusters/cache/versions/4/activate -H 'If-Match: "v1"')"
check "activate if-match right" 200 "$(req POST /v1/clusters/cache/versions/4/activate -H 'If-Match: "v3"')"

# publish and activate in one call
check "publish activate" 201 "$(req POST '/v1/clusters/cache/versions?activate=true' -H "$J" --data-binary @"$TMP/t4")"
has "published active" "$TMP/body" '"state":"active"'

# revert: a copy of v2 as a new staged version
check "revert" 201 "$(req POST /v1/clusters/cache/versions/2/revert)"
has "revert is v6" "$TMP/body" '"version":6'
has "revert staged" "$TMP/body" '"state":"staged"'
req GET /v1/clusters/cache/versions/2 >/dev/null
fp2=$(sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p' "$TMP/body")
req GET /v1/clusters/cache/versions/6 >/dev/null
check "revert same ring" "$fp2" "$(sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p' "$TMP/body")"

# list: newest first, paging with limit and before
check "list limit" 200 "$(req GET '/v1/clusters/cache/versions?limit=2')"
has "list newest first" "$TMP/body" '"version":6'
has "list next_before" "$TMP/body" '"next_before":5'
if grep -q '"nodes"' "$TMP/body"; then bad "list carries node lists"; else ok; fi
check "list before" 200 "$(req GET '/v1/clusters/cache/versions?limit=2&before=5')"
has "list page 2" "$TMP/body" '"version":4'
check "list limit 0" 400 "$(req GET '/v1/clusters/cache/versions?limit=0')"
check "list limit 1001" 400 "$(req GET '/v1/clusters/cache/versions?limit=1001')"
check "clusters" 200 "$(req GET /v1/clusters)"
has "clusters active" "$TMP/body" '"active_version":5'
has "clusters latest" "$TMP/body" '"latest_version":6'

# plan: JSON, text, steps, keys, arcs=false, defaults, across hashes
check "plan json" 200 "$(req GET '/v1/clusters/cache/plan?from=1&to=2')"
has "plan moved" "$TMP/body" '"moved_fraction"'
has "plan arcs" "$TMP/body" '"arcs":['
has "plan cluster" "$TMP/body" '"cluster":"cache"'
check "plan text by Accept" 200 "$(req GET '/v1/clusters/cache/plan?from=1&to=2' -H 'Accept: text/plain')"
has "plan text" "$TMP/body" "moved"
has "plan text content type" "$TMP/headers" "text/plain"
check "plan text by format" 200 "$(req GET '/v1/clusters/cache/plan?from=1&to=2&format=text')"
check "plan steps keys" 200 "$(req GET '/v1/clusters/cache/plan?from=1&to=2&max_step=0.05&keys=1000000')"
has "plan steps" "$TMP/body" '"steps":['
has "plan keys_estimate" "$TMP/body" '"keys_estimate"'
check "plan no arcs" 200 "$(req GET '/v1/clusters/cache/plan?from=1&to=2&arcs=false')"
if grep -q '"arcs":\[' "$TMP/body"; then bad "arcs=false still lists arcs"; else ok; fi
check "plan defaults" 200 "$(req GET /v1/clusters/cache/plan)"
check "plan bad max_step" 400 "$(req GET '/v1/clusters/cache/plan?max_step=1.5')"
check "plan bad version" 400 "$(req GET '/v1/clusters/cache/plan?from=x')"
topo 4 160 xxh3_64 >"$TMP/tx"
check "publish other hash" 201 "$(req POST /v1/clusters/cache/versions -H "$J" --data-binary @"$TMP/tx")"
check "plan across hashes" 422 "$(req GET '/v1/clusters/cache/plan?from=1&to=7')"

# 404s, 405, 400 on the version number
check "unknown cluster" 404 "$(req GET /v1/clusters/nope/versions)"
check "unknown version" 404 "$(req GET /v1/clusters/cache/versions/99)"
check "unknown route" 404 "$(req GET /v2/whatever)"
check "wrong method" 405 "$(req DELETE /v1/clusters/cache/versions/1)"
has "405 Allow" "$TMP/headers" "Allow:"
check "non-numeric version" 400 "$(req GET /v1/clusters/cache/versions/abc)"
check "wait over 60" 400 "$(req GET '/v1/clusters/cache/ring?wait=61')"

# metrics
check "metrics" 200 "$(req GET /metrics)"
has "metrics requests" "$TMP/body" "ringkeeper_http_requests_total"
has "metrics publishes" "$TMP/body" "ringkeeper_publishes_total"
has "metrics active version" "$TMP/body" 'ringkeeper_active_version{cluster="cache"} 5'

# one log line per request
has "log line" "$TMP/server.log" "POST /v1/clusters/cache/versions 201"

# the console's page and every answer: no sniffing, no framing, only the console's own files run
for path in /ui/ /ui/console.js /healthz /v1/clusters; do
    check "$path: 200" 200 "$(req GET "$path")"
    has "$path: nosniff" "$TMP/headers" "X-Content-Type-Options: nosniff"
    has "$path: not framed" "$TMP/headers" "X-Frame-Options: DENY"
    has "$path: a content security policy" "$TMP/headers" \
        "Content-Security-Policy: default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
done

# SIGTERM: exit 0
rk_stop
check "SIGTERM exit code" 0 "$STOP_CODE"
finish
