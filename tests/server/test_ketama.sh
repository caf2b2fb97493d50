#!/usr/bin/env bash
# test_ketama.sh — the ketama scheme (docs/KETAMA.md) through a real ringkeeperd: publish, the
# version and ring documents, the verified client (CLI lookup) against the offline ring, plans
# between ketama versions and refused across schemes, revert, the topology's "data" (shown, not
# the ring's), and a database that keeps the scheme.
# usage: test_ketama.sh RINGKEEPERD RINGKEEPER_CLI
. "$(dirname "$0")/lib.sh" "$1"
RK=$2
rk_start
J='Content-Type: application/json'

pool() { # pool N: N equal servers on 10.0.0.1..N, ids named as twemproxy names them
    local nodes= i
    for i in $(seq 1 "$1"); do
        nodes="$nodes${nodes:+,}{\"id\":\"10.0.0.$i:22122\",\"addr\":\"10.0.0.$i:22122\",\"weight\":1}"
    done
    printf '{"scheme":"ketama","hash":"fnv1a_64","hash_tag":"{}","nodes":[%s]}' "$nodes"
}
pool 10 >"$TMP/ten"
pool 11 >"$TMP/eleven"

check "publish ketama v1" 201 "$(req POST '/v1/clusters/tw/versions?activate=true' -H "$J" --data-binary @"$TMP/ten")"
has "v1 scheme" "$TMP/body" '"scheme":"ketama","hash":"fnv1a_64","hash_tag":"{}"'
has "v1 points: 160 a server" "$TMP/body" '"points":1600'
if grep -q vnode_factor "$TMP/body"; then bad "a ketama document has a vnode_factor"; else ok; fi
check "ring" 200 "$(req GET /v1/clusters/tw/ring)"
has "ring scheme" "$TMP/body" '"scheme":"ketama"'
check "version list" 200 "$(req GET /v1/clusters/tw/versions)"
has "list scheme" "$TMP/body" '"scheme":"ketama","hash":"fnv1a_64"'

# The verified client routes exactly as the offline ring, tagged keys and high bytes included.
for i in $(seq 1 400); do printf 'key:%d\nuser:{%d}:x\n\xe9\xff%d\n' "$i" $((i % 17)) "$i"; done >"$TMP/keys"
"$RK" lookup --topology "$TMP/ten" <"$TMP/keys" >"$TMP/offline"
"$RK" lookup --server "$BASE" --cluster tw --expect-scheme ketama --expect-hash fnv1a_64 \
    <"$TMP/keys" >"$TMP/online" 2>"$TMP/err"
check "client accepts the ketama ring" 0 $?
if cmp -s "$TMP/offline" "$TMP/online"; then ok; else bad "server ring routes differently"; fi
"$RK" lookup --server "$BASE" --cluster tw --expect-hash fnv1a_32 </dev/null >/dev/null 2>"$TMP/err"
check "client expecting the ringkeeper scheme refuses it" 3 $?
has "refusal names the scheme" "$TMP/err" "ketama scheme"

# Adding an eleventh equal server: the others keep their 160 points, so every moving arc goes to
# the new one and the plan names each (from, to) pair.
check "publish v2" 201 "$(req POST /v1/clusters/tw/versions -H "$J" --data-binary @"$TMP/eleven")"
check "plan 1 -> 2" 200 "$(req GET '/v1/clusters/tw/plan?arcs=false')"
has "plan scheme" "$TMP/body" '"scheme":"ketama"'
to_new=$(grep -o '"to":"10.0.0.11:22122","fraction"' "$TMP/body" | wc -l)
check "ten transfers, all to the new server" 10 "$to_new"
moved=$(sed -n 's/.*"moved_fraction":\([0-9.e-]*\).*/\1/p' "$TMP/body")
if awk -v m="$moved" 'BEGIN { exit !(m > 0.05 && m < 0.15) }'; then ok
else bad "moved $moved is not near 1/11"; fi

# Across schemes there is no plan.
topo 4 >"$TMP/rk4"
check "publish a ringkeeper-scheme v3" 201 "$(req POST /v1/clusters/tw/versions -H "$J" --data-binary @"$TMP/rk4")"
check "plan across schemes" 422 "$(req GET '/v1/clusters/tw/plan?from=2&to=3')"
has "422 names the scheme" "$TMP/body" '"field":"scheme"'
# ... and activating across schemes moves every key: it takes force with a reason, like a budget
# (issue 53: a scheme change had been activated silently while its plan was refused).
ring_version() { curl -s "$BASE/v1/clusters/$1/ring" | sed -n 's/.*"version":\([0-9]*\).*/\1/p'; }
before=$(ring_version tw)
check "activate across schemes: 422" 422 "$(req POST /v1/clusters/tw/versions/3/activate)"
has "... names the scheme" "$TMP/body" '"field":"scheme"'
has "... says force" "$TMP/body" 'every key would move; activate it with {\"force\": true'
check "... nothing changed" "$before" "$(ring_version tw)"
check "a first version needs no plan" 201 "$(req POST '/v1/clusters/tw2/versions?activate=true' \
    -H "$J" --data-binary @"$TMP/rk4")"
check "a publish that activates another scheme: 422" 422 "$(req POST \
    '/v1/clusters/tw2/versions?activate=true' -H "$J" --data-binary @"$TMP/ten")"
has "... saying to publish it staged" "$TMP/body" "publish it without activate=true, then activate it"
check "... and nothing stored" 200 "$(req GET /v1/clusters/tw2/versions)"
if grep -q '"version":2' "$TMP/body"; then bad "a refused publish left a version"; else ok; fi
check "forced with a reason: 200" 200 "$(req POST /v1/clusters/tw/versions/3/activate -H "$J" \
    --data-binary '{"force":true,"reason":"moving the fleet to the ringkeeper scheme"}')"
check "... active" 3 "$(ring_version tw)"

# Revert keeps the scheme and the tag, and so the fingerprint.
check "revert v1" 201 "$(req POST /v1/clusters/tw/versions/1/revert)"
has "revert is ketama" "$TMP/body" '"scheme":"ketama","hash":"fnv1a_64","hash_tag":"{}"'
fp1=$(curl -s "$BASE/v1/clusters/tw/versions/1" | sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p')
fp4=$(curl -s "$BASE/v1/clusters/tw/versions/4" | sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p')
check "revert has v1's fingerprint" "$fp1" "$fp4"

# Invalid ketama topologies are refused with the field to blame, and change nothing.
check "vnode_factor in ketama" 400 "$(req POST /v1/clusters/tw/versions -H "$J" \
    --data-binary '{"scheme":"ketama","hash":"md5","vnode_factor":160,"nodes":[{"id":"a","addr":"h:1","weight":1}]}')"
has "field vnode_factor" "$TMP/body" '"field":"vnode_factor"'
check "still four versions" 200 "$(req GET /v1/clusters/tw/versions)"
if grep -q '"version":5' "$TMP/body"; then bad "a refused publish left a version"; else ok; fi

# "data", the nodes' protocol, is stored and shown with the version but is not the ring's: v1's
# fingerprint, kept by a revert; in either scheme; any other value refused on the field.
sed 's/"hash_tag":"{}",/&"data":"redis",/' "$TMP/ten" >"$TMP/ten-redis"
check "publish v5 with data" 201 "$(req POST /v1/clusters/tw/versions -H "$J" --data-binary @"$TMP/ten-redis")"
has "v5 shows its data" "$TMP/body" '"hash_tag":"{}","data":"redis","nodes":'
fp5=$(sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p' "$TMP/body")
check "data leaves the fingerprint as it was" "$fp1" "$fp5"
check "v5 fetched" 200 "$(req GET /v1/clusters/tw/versions/5)"
has "fetched v5 shows its data" "$TMP/body" '"data":"redis"'
check "revert v5" 201 "$(req POST /v1/clusters/tw/versions/5/revert)"
has "the revert keeps the data" "$TMP/body" '"data":"redis"'
check "v1 fetched" 200 "$(req GET /v1/clusters/tw/versions/1)"
if grep -q '"data"' "$TMP/body"; then bad "a version without data shows one"; else ok; fi
sed 's/"vnode_factor":160,/&"data":"memcached",/' "$TMP/rk4" >"$TMP/rk4-memcached"
check "publish a ringkeeper-scheme v7 with data" 201 "$(req POST /v1/clusters/tw/versions -H "$J" --data-binary @"$TMP/rk4-memcached")"
has "v7 shows its data" "$TMP/body" '"vnode_factor":160,"data":"memcached","nodes":'
check "data of another protocol" 400 "$(req POST /v1/clusters/tw/versions -H "$J" \
    --data-binary "$(sed 's/"redis"/"mysql"/' "$TMP/ten-redis")")"
has "field data" "$TMP/body" '"field":"data"'
has "the message names the values" "$TMP/body" 'data: must be \"memcached\" or \"redis\"'

# After a restart the database gives the same documents.
check "v1 before restart" 200 "$(req GET /v1/clusters/tw/versions/1)"
cp "$TMP/body" "$TMP/v1-before"
check "v5 before restart" 200 "$(req GET /v1/clusters/tw/versions/5)"
cp "$TMP/body" "$TMP/v5-before"
rk_stop
rk_start
check "v1 after restart" 200 "$(req GET /v1/clusters/tw/versions/1)"
if cmp -s "$TMP/v1-before" "$TMP/body"; then ok; else bad "v1 changed across a restart"; fi
check "v5 after restart" 200 "$(req GET /v1/clusters/tw/versions/5)"
if cmp -s "$TMP/v5-before" "$TMP/body"; then ok; else bad "v5 (with data) changed across a restart"; fi
rk_stop
finish
