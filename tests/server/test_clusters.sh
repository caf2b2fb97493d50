#!/usr/bin/env bash
# test_clusters.sh — the clusters a store may hold and how they are listed (issue 52, item 11):
# without tokens anyone could create clusters without end and GET /v1/clusters answered them all
# at once. Past --max-clusters a publish that would create one more gets 422 too_many_clusters and
# stores nothing, while the clusters there are keep taking versions; GET /v1/clusters answers
# pages (?limit, ?after, next_after) as the versions do, and refuses a bad limit or cursor.
# usage: test_clusters.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"

topo 3 >"$TMP/t3"
topo 4 >"$TMP/t4"
publish() { req POST "/v1/clusters/$1/versions${2:-}" --data-binary @"$TMP/t3"; }
# names PATH: the clusters of the page at PATH, space-separated, then its next_after
names() {
    req GET "$1" >/dev/null
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(" ".join(c["cluster"] for c in d["clusters"]), d["next_after"])' "$TMP/body"
}

rk_start --max-clusters 5
for c in c3 c0 c4 c1 c2; do check "create $c" 201 "$(publish $c)"; done
check "the sixth cluster: refused" 422 "$(publish c5)"
has "refused: the code" "$TMP/body" '"code":"too_many_clusters"'
has "refused: the field" "$TMP/body" '"field":"cluster"'
has "refused: names the flag" "$TMP/body" 'the store holds 5 clusters, this server'"'"'s limit (ringkeeperd --max-clusters 5)'
check "the sixth, activated at once: refused too" 422 "$(publish c5 '?activate=true')"
check "... and nothing was stored" 404 "$(req GET /v1/clusters/c5/versions)"
check "a policy cannot create it either" 404 "$(req PUT /v1/clusters/c5/policy --data-binary '{"approvals":0}')"
check "an existing cluster at the cap: publish" 201 "$(publish c0)"
has "... its second version" "$TMP/body" '"version":2'
check "... activate" 200 "$(req POST /v1/clusters/c0/versions/2/activate)"
check "... revert" 201 "$(req POST /v1/clusters/c0/versions/1/revert)"
check "... publish and activate" 201 "$(publish c4 '?activate=true')"

# Pages by name, resumed after the last of the page before
check "the default page: all five" "c0 c1 c2 c3 c4 None" "$(names /v1/clusters)"
has "versions shown" "$TMP/body" '{"cluster":"c0","active_version":2,"latest_version":3}'
check "page 1" "c0 c1 c1" "$(names '/v1/clusters?limit=2')"
check "page 2" "c2 c3 c3" "$(names '/v1/clusters?limit=2&after=c1')"
check "page 3, the last" "c4 None" "$(names '/v1/clusters?limit=2&after=c3')"
check "a full last page has no next" "c3 c4 None" "$(names '/v1/clusters?limit=2&after=c2')"
check "after the last" " None" "$(names '/v1/clusters?after=c4')"
check "after a name no cluster has" "c1 c2 c2" "$(names '/v1/clusters?limit=2&after=c0a')"
check "the largest page" "c0 c1 c2 c3 c4 None" "$(names '/v1/clusters?limit=1000')"

# A bad limit or cursor: 400 invalid_parameter naming it
for q in limit=0 limit=1001 limit=x 'limit=' limit=-1; do
    check "?$q" 400 "$(req GET "/v1/clusters?$q")"
    has "?$q: the field" "$TMP/body" '"field":"limit"'
done
long=$(printf 'a%.0s' $(seq 1 64))
for q in after=C1 'after=' after=-c after=a%2Fb "after=$long"; do
    check "?$q" 400 "$(req GET "/v1/clusters?$q")"
    has "?$q: the code" "$TMP/body" '"code":"invalid_parameter"'
    has "?$q: the field" "$TMP/body" '"field":"after"'
done

# The cap is the server's, not the store's: raised, the next cluster goes in; lowered under what
# the store holds, none is lost or refused a version, and none more is created.
rk_stop
rk_start --max-clusters 6
check "raised: the sixth" 201 "$(publish c5)"
check "raised: the seventh refused" 422 "$(publish c6)"
rk_stop
rk_start --max-clusters 3
check "lowered: a new one refused" 422 "$(publish c6)"
has "lowered: says how many" "$TMP/body" 'the store holds 6 clusters, this server'"'"'s limit (ringkeeperd --max-clusters 3)'
check "lowered: an existing one takes a version" 201 "$(publish c5)"
check "lowered: all still listed" "c0 c1 c2 c3 c4 c5 None" "$(names /v1/clusters)"
rk_stop

# The flag's own range
for bad in 0 10000001 x; do
    "$RKD" --listen 127.0.0.1:0 --db "$TMP/flags.db" --max-clusters "$bad" 2>"$TMP/flag.err"
    check "--max-clusters $bad: refused" 2 "$?"
    has "--max-clusters $bad: says the range" "$TMP/flag.err" '--max-clusters'
done
finish
