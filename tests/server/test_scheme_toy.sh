#!/usr/bin/env bash
# test_scheme_toy.sh — a ring scheme is one file and one line (issue 21; docs/ARCHITECTURE.md,
# "Where do I add ..."): a build with -DRK_TOY_SCHEME=ON registers tests/core/scheme_rendezvous.c,
# and with no other file changed ringkeeperd publishes, validates, stores and serves its
# topologies, plans between them, and the CLI looks keys up on them, from a file and from the
# server. Rendezvous hashing moves only the keys of a node taken away: the plan and the lookups
# must show exactly that.
# usage: test_scheme_toy.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
build=$(mktemp -d)
mkdir -p "$build/server"
. "$src/tests/server/lib.sh" "$build/server/ringkeeperd"
trap 'rk_cleanup; rm -rf "$build"' EXIT
PY=/usr/bin/python3 # Debian's, whatever comes first on PATH

rk_toy_build "$src" "$build" RK_TOY_SCHEME ringkeeperd ringkeeper_cli
RK=$build/client/ringkeeper

# toy N [FIELDS]: a rendezvous topology of nodes n0..n(N-1), weight 1, and extra fields.
toy() {
    $PY - "$1" "${2:-}" <<'PY'
import json, sys
n, extra = int(sys.argv[1]), sys.argv[2]
doc = {"scheme": "rendezvous", "hash": "xxh3_64",
       "nodes": [{"id": "n%d" % i, "addr": "127.0.0.1:%d" % (7000 + i), "weight": 1}
                 for i in range(n)]}
doc.update(json.loads(extra or "{}"))
print(json.dumps(doc))
PY
}
refused() { # refused NAME BODY FIELD TEXT: a publish answered 400 naming FIELD, saying TEXT
    check "$1: 400" 400 "$(req POST /v1/clusters/toy/versions --data-binary "$2")"
    has "$1: the field" "$TMP/body" "\"field\":\"$3\""
    has "$1: the rule" "$TMP/body" "$4"
}

rk_start
toy 8 >"$TMP/v1.json"
check "publish 8 nodes" 201 "$(req POST '/v1/clusters/toy/versions?activate=true' \
    --data-binary @"$TMP/v1.json")"
has "the version's scheme" "$TMP/body" '"scheme":"rendezvous"'
has "its hash, a ringkeeper scheme's too" "$TMP/body" '"hash":"xxh3_64"'
has "a point a slot" "$TMP/body" '"points":256'
refused "nine nodes" "$(toy 9)" nodes "must hold 1..8 nodes in the rendezvous scheme"
refused "a weight of 2" "$(toy 2 '{"nodes":[{"id":"a","addr":"h:1","weight":2}]}')" \
    'nodes[0].weight' "must be 0 or 1 in the rendezvous scheme"
refused "a vnode_factor" "$(toy 2 '{"vnode_factor":8}')" vnode_factor \
    "the rendezvous scheme has one point per slot"
refused "another scheme's hash" "$(toy 2 '{"hash":"fnv1a_32"}')" hash 'must be one of \"xxh3_64\"'
check "the refusals stored nothing" 200 "$(req GET /v1/clusters/toy/versions)"
has "one version" "$TMP/body" '"version":1'

check "the ring" 200 "$(req GET /v1/clusters/toy/ring)"
has "the ring's scheme" "$TMP/body" '"scheme":"rendezvous"'

# v2: n3 taken away. Only n3's slots move, to the nodes that rank next for them.
$PY - "$TMP/v1.json" >"$TMP/v2.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["nodes"] = [n for n in doc["nodes"] if n["id"] != "n3"]
print(json.dumps(doc))
PY
check "publish v2" 201 "$(req POST /v1/clusters/toy/versions --data-binary @"$TMP/v2.json")"
check "the plan 1 -> 2" 200 "$(req GET '/v1/clusters/toy/plan?from=1&to=2')"
cp "$TMP/body" "$TMP/plan.json"
check "every moving arc leaves n3, and n3's whole share moves" ok "$($PY - "$TMP/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
sources = {t["from"] for t in plan["transfers"]}
n3 = [n for n in plan["nodes"] if n["id"] == "n3"][0]
print("ok" if sources == {"n3"} and plan["moved_fraction"] == n3["share_before"] > 0 else
      "sources %s, moved %s of n3's %s" % (sorted(sources), plan["moved_fraction"],
                                           n3["share_before"]))
PY
)"

seq 1 300 | sed 's/^/key-/' >"$TMP/keys"
"$RK" lookup --topology "$TMP/v1.json" <"$TMP/keys" >"$TMP/own1" 2>"$TMP/err1"
check "CLI lookup on the file" 0 "$?"
"$RK" lookup --topology "$TMP/v2.json" <"$TMP/keys" >"$TMP/own2" 2>>"$TMP/err1"
"$RK" lookup --server "$BASE" --cluster toy <"$TMP/keys" >"$TMP/own_server" 2>>"$TMP/err1"
check "CLI lookup on the server's ring" 0 "$?"
check "the server's ring routes as the file" "" "$(diff "$TMP/own1" "$TMP/own_server")"
check "all eight nodes own keys" 8 "$(cut -f2 "$TMP/own1" | sort -u | wc -l)"
check "only n3's keys move" 0 "$(paste "$TMP/own1" "$TMP/own2" | awk -F'\t' '$2 != $4 && $2 != "n3"' | wc -l)"
check "n3's keys all move" 0 "$(paste "$TMP/own1" "$TMP/own2" | awk -F'\t' '$2 == "n3" && $4 == "n3"' | wc -l)"
"$RK" plan --from-file "$TMP/v1.json" --to-file "$TMP/v2.json" --quiet >"$TMP/q" 2>>"$TMP/err1"
check "CLI plan" 0 "$?"
check "the CLI's plan moves what the server's does" \
    "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["moved_fraction"])' "$TMP/plan.json")" \
    "$(cat "$TMP/q")"
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
[ -s "$TMP/err1" ] && cat "$TMP/err1"
finish
