#!/usr/bin/env bash
# test_picture.sh — the console's pictures through a real ringkeeperd (api_picture.c): the arc at a
# hash value walked around a ring against the CLI's offline lookups of keys and the shares of the
# plan document, a version's picture against those arcs, a plan's three circles against the
# plan's arcs and the versions' pictures, ETags, and the parameters refused with their field.
# usage: test_picture.sh RINGKEEPERD RINGKEEPER_CLI
. "$(dirname "$0")/lib.sh" "$1"
RK=$2
rk_start
J='Content-Type: application/json'
topo 4 40 >"$TMP/four.json"
topo 5 40 >"$TMP/five.json"
check "publish v1" 201 "$(req POST '/v1/clusters/p/versions?activate=true' -H "$J" --data-binary "@$TMP/four.json")"
check "publish v2" 201 "$(req POST /v1/clusters/p/versions -H "$J" --data-binary "@$TMP/five.json")"
KETAMA='{"scheme":"ketama","hash":"fnv1a_64","nodes":[{"id":"10.0.0.1","addr":"10.0.0.1:11211","weight":1},{"id":"10.0.0.2","addr":"10.0.0.2:11211","weight":2}]}'
check "publish a ketama ring" 201 "$(req POST /v1/clusters/kt/versions -H "$J" --data "$KETAMA")"

# Keys and where the library (the CLI, offline) routes them.
for i in $(seq 1 300); do echo "key:$i"; done >"$TMP/keys"
"$RK" lookup --topology "$TMP/four.json" <"$TMP/keys" >"$TMP/lookups"

# The arcs of v1, walked from hash 0 by last + 1 until they wrap, each as the route says.
python3 - "$BASE" "$TMP" <<'PY' || bad "the arcs, walked"
import json, sys, urllib.request
base, tmp = sys.argv[1], sys.argv[2]
get = lambda p: json.load(urllib.request.urlopen(base + p))
arcs, h = [], 0
while len(arcs) < 1000:
    a = get("/v1/clusters/p/versions/1/arc?hash=%016x" % h)
    if arcs and int(a["last"], 16) < h:
        break
    arcs.append(a)
    if int(a["last"], 16) == 0xFFFFFFFF:
        break
    h = int(a["last"], 16) + 1
json.dump(arcs, open(tmp + "/arcs.json", "w"))
print(len(arcs), "arcs")
PY
ARCS=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$TMP/arcs.json")
check "one arc per point of v1" 160 "$ARCS"

check "the ring's shares" 200 "$(req GET '/v1/clusters/p/plan?from=1&to=1&arcs=false')"
cp "$TMP/body" "$TMP/shares.json"
check "v1's picture" 200 "$(req GET /v1/clusters/p/versions/1/picture)"
cp "$TMP/body" "$TMP/picture.json"
has "with its ETag" "$TMP/headers" 'ETag: "v1.'
ETAG=$(tr -d '\r' <"$TMP/headers" | sed -n 's/^ETag: //Ip')
check "an unchanged picture: 304" 304 "$(req GET /v1/clusters/p/versions/1/picture -H "If-None-Match: $ETAG")"
check "an unchanged arc: 304" 304 "$(req GET '/v1/clusters/p/versions/1/arc?hash=0' -H "If-None-Match: $ETAG")"
check "another version's tag: 200" 200 "$(req GET /v1/clusters/p/versions/2/picture -H "If-None-Match: $ETAG")"
check "v1 and v2: the plan's circles" 200 "$(req GET '/v1/clusters/p/plan?from=1&to=2&format=picture&bins=360')"
cp "$TMP/body" "$TMP/plan_picture.json"
check "v1 and v2: the plan" 200 "$(req GET '/v1/clusters/p/plan?from=1&to=2')"
cp "$TMP/body" "$TMP/plan.json"
check "v2's picture in 360 bins" 200 "$(req GET '/v1/clusters/p/versions/2/picture?bins=360')"
cp "$TMP/body" "$TMP/picture2.json"
check "v1's picture in 360 bins" 200 "$(req GET '/v1/clusters/p/versions/1/picture?bins=360')"
cp "$TMP/body" "$TMP/picture1.json"

python3 - "$TMP" <<'PY' || bad "arcs and pictures against the library"
import json, sys
tmp = sys.argv[1]
load = lambda n: json.load(open("%s/%s" % (tmp, n)))
arcs, shares, pic = load("arcs.json"), load("shares.json"), load("picture.json")
fails = []
def fnv1a_32(s):
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h
def owner_at(h):  # the walked arc holding h: the first whose last is >= h, else the wrapping one
    return next((a["owner"] for a in arcs if int(a["last"], 16) >= h), arcs[0]["owner"])
for line in open(tmp + "/lookups"):
    key, node = line.split()
    if owner_at(fnv1a_32(key)) != node:
        fails.append("key %s: arcs say %s, the CLI %s" % (key, owner_at(fnv1a_32(key)), node))
by_owner = {}
for a in arcs:
    by_owner[a["owner"]] = by_owner.get(a["owner"], 0) + a["fraction"]
    if a["share"] != next(n["share_after"] for n in shares["nodes"] if n["id"] == a["owner"]):
        fails.append("arc %s: share %s" % (a["first"], a["share"]))
    if shares["nodes"][a["rank"]]["id"] != a["owner"]:
        fails.append("arc %s: rank %s" % (a["first"], a["rank"]))
for n in shares["nodes"]:
    if abs(by_owner[n["id"]] - n["share_after"]) > 1e-12:
        fails.append("%s: arcs sum to %s, the share is %s" % (n["id"], by_owner[n["id"]], n["share_after"]))
# The picture: 2880 bins by default, each bin a whole arc covers in that arc's owner.
bins = [r for run, r in pic["runs"] for _ in range(run)]
ids = {n["rank"]: n["id"] for n in pic["nodes"]}
if pic["bins"] != 2880 or len(bins) != 2880 or pic["bits"] != 32 or pic["points"] != 160:
    fails.append("picture: %s bins, %s bits, %s points" % (len(bins), pic["bits"], pic["points"]))
if [n["id"] for n in pic["nodes"]] != sorted(n["id"] for n in shares["nodes"]) or sorted(ids) != list(range(4)):
    fails.append("picture nodes: %s" % pic["nodes"])
covered = 0
for a in arcs[1:]:  # the first wraps around zero
    lo, hi = int(a["first"], 16), int(a["last"], 16) + 1
    for b in range(lo * 2880 // 2**32 + 1, hi * 2880 // 2**32):
        covered += 1
        if ids.get(bins[b]) != a["owner"]:
            fails.append("bin %d: %s, the arc's owner %s" % (b, ids.get(bins[b]), a["owner"]))
if covered < 1000:
    fails.append("only %d bins covered by a whole arc" % covered)
# The plan's circles: before and after are the versions' pictures, the moving circle the plan's
# arcs in their destinations' ranks (plan node indexes), empty where nothing moves.
pp, plan = load("plan_picture.json"), load("plan.json")
rank = {n["id"]: i for i, n in enumerate(plan["nodes"])}
expand = lambda runs: [r for run, r in runs for _ in range(run)]
for circle, name in (("before", "picture1.json"), ("after", "picture2.json")):
    own = load(name)
    oid = {n["rank"]: n["id"] for n in own["nodes"]}
    if expand(pp["circles"][circle]) != [rank[oid[r]] for r in expand(own["runs"])]:
        fails.append("plan circle %s is not the version's picture" % circle)
moving, touched = expand(pp["circles"]["moving"]), set()
for a in plan["arcs"]:
    lo, hi = int(a["first"], 16), int(a["last"], 16) + 1
    touched.update(range(lo * 360 // 2**32, (hi - 1) * 360 // 2**32 + 1))
    for b in range(lo * 360 // 2**32 + 1, hi * 360 // 2**32):
        if moving[b] != rank[a["to"]]:
            fails.append("moving bin %d: %s, the arc goes to %s" % (b, moving[b], a["to"]))
if any(moving[b] is not None for b in range(360) if b not in touched) or len(moving) != 360:
    fails.append("moving bins outside the plan's arcs")
if {n["id"] for n in pp["nodes"]} != set(rank):
    fails.append("plan picture nodes: %s" % pp["nodes"])
for f in fails[:20]:
    print(f)
sys.exit(1 if fails else 0)
PY

# One arc asked three ways; the ketama ring is 32-bit whatever its hash's bits.
check "hex" 200 "$(req GET '/v1/clusters/p/versions/1/arc?hash=0000000080000000')"
cp "$TMP/body" "$TMP/hex"
check "8 hex digits" 200 "$(req GET '/v1/clusters/p/versions/1/arc?hash=80000000')"
cmp -s "$TMP/body" "$TMP/hex" && ok || bad "8 hex digits: $(cat "$TMP/body")"
check "decimal" 200 "$(req GET '/v1/clusters/p/versions/1/arc?hash=2147483648')"
cmp -s "$TMP/body" "$TMP/hex" && ok || bad "decimal: $(cat "$TMP/body")"
has "the value asked" "$TMP/body" '"at":"0000000080000000"'
check "ketama picture" 200 "$(req GET /v1/clusters/kt/versions/1/picture?bins=360)"
has "ketama: 32 bits" "$TMP/body" '"bits":32'

# Refused, naming the field.
refused() { # refused NAME FIELD PATH
    check "$1" 400 "$(req GET "$3")"
    has "$1: invalid_parameter" "$TMP/body" '"code":"invalid_parameter"'
    has "$1: the field" "$TMP/body" "\"field\":\"$2\""
}
refused "bins below 360" bins '/v1/clusters/p/versions/1/picture?bins=359'
refused "bins above 4096" bins '/v1/clusters/p/versions/1/picture?bins=4097'
refused "bins not a number" bins '/v1/clusters/p/versions/1/picture?bins=many'
refused "plan bins" bins '/v1/clusters/p/plan?from=1&to=2&format=picture&bins=10'
refused "no hash" hash '/v1/clusters/p/versions/1/arc'
refused "hash not a number" hash '/v1/clusters/p/versions/1/arc?hash=zz'
refused "hash past a 32-bit space" hash '/v1/clusters/p/versions/1/arc?hash=4294967296'
refused "hash negative" hash '/v1/clusters/p/versions/1/arc?hash=-1'
refused "a format" format '/v1/clusters/p/plan?format=png'
check "no such version" 404 "$(req GET /v1/clusters/p/versions/9/picture)"
has "unknown_version" "$TMP/body" '"code":"unknown_version"'
check "no such cluster" 404 "$(req GET '/v1/clusters/nope/versions/1/arc?hash=0')"
finish
