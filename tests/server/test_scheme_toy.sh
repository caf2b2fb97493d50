#!/usr/bin/env bash
# test_scheme_toy.sh — a ring scheme is one file and one line (issue 21; docs/ARCHITECTURE.md,
# "Where a newcomer adds"): a build with -DRK_TOY_SCHEME=ON registers tests/core/scheme_rendezvous.c
# (points placed node by node) and tests/core/scheme_table.c (a table filled for every node at
# once, as Maglev's, with a parameter of its own, table_size), and with no other file changed
# ringkeeperd publishes, validates, stores and serves their topologies, plans between them, and the
# CLI looks keys up on them, from a file and from the server. Rendezvous hashing moves only the
# keys of a node taken away, the table at least those: the plans and the lookups must show it.
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

# toy N [FIELDS] [SCHEME]: a topology of SCHEME (rendezvous) of nodes n0..n(N-1), weight 1, and
# extra fields.
toy() {
    $PY - "$1" "${2:-}" "${3:-rendezvous}" <<'PY'
import json, sys
n, extra, scheme = int(sys.argv[1]), sys.argv[2], sys.argv[3]
doc = {"scheme": scheme, "hash": "xxh3_64",
       "nodes": [{"id": "n%d" % i, "addr": "127.0.0.1:%d" % (7000 + i), "weight": 1}
                 for i in range(n)]}
doc.update(json.loads(extra or "{}"))
print(json.dumps(doc))
PY
}
refused() { # refused NAME BODY FIELD TEXT [CLUSTER]: a publish answered 400 naming FIELD, saying TEXT
    check "$1: 400" 400 "$(req POST "/v1/clusters/${5:-toy}/versions" --data-binary "$2")"
    has "$1: the field" "$TMP/body" "\"field\":\"$3\""
    has "$1: the rule" "$TMP/body" "$4"
}
without() { # without FILE ID: the topology of FILE without node ID
    $PY - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["nodes"] = [n for n in doc["nodes"] if n["id"] != sys.argv[2]]
print(json.dumps(doc))
PY
}
# plan_and_lookups FILE1 FILE2 ID CLUSTER: the server's plan CLUSTER 1 -> 2 into $TMP/plan.json, the CLI's
# from the files agreeing on the fraction moved, and the lookups of 300 keys on FILE1, on FILE2 and
# on the server's ring (FILE1's, the active version) into $TMP/own1, own2, own_server; ID's keys
# must all move
plan_and_lookups() {
    check "$4: the plan 1 -> 2" 200 "$(req GET "/v1/clusters/$4/plan?from=1&to=2")"
    cp "$TMP/body" "$TMP/plan.json"
    "$RK" plan --from-file "$1" --to-file "$2" --quiet >"$TMP/q" 2>>"$TMP/err1"
    check "$4: CLI plan" 0 "$?"
    check "$4: the CLI's plan moves what the server's does" \
        "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["moved_fraction"])' "$TMP/plan.json")" \
        "$(cat "$TMP/q")"
    seq 1 300 | sed 's/^/key-/' >"$TMP/keys"
    "$RK" lookup --topology "$1" <"$TMP/keys" >"$TMP/own1" 2>>"$TMP/err1"
    check "$4: CLI lookup on the file" 0 "$?"
    "$RK" lookup --topology "$2" <"$TMP/keys" >"$TMP/own2" 2>>"$TMP/err1"
    "$RK" lookup --server "$BASE" --cluster "$4" <"$TMP/keys" >"$TMP/own_server" 2>>"$TMP/err1"
    check "$4: CLI lookup on the server's ring" 0 "$?"
    check "$4: the server's ring routes as the file" "" "$(diff "$TMP/own1" "$TMP/own_server")"
    check "$4: $3's keys all move" 0 \
        "$(paste "$TMP/own1" "$TMP/own2" | awk -F'\t' -v n="$3" '$2 == n && $4 == n' | wc -l)"
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
without "$TMP/v1.json" n3 >"$TMP/v2.json"
check "publish v2" 201 "$(req POST /v1/clusters/toy/versions --data-binary @"$TMP/v2.json")"
plan_and_lookups "$TMP/v1.json" "$TMP/v2.json" n3 toy
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
check "all eight nodes own keys" 8 "$(cut -f2 "$TMP/own1" | sort -u | wc -l)"
check "only n3's keys move" 0 "$(paste "$TMP/own1" "$TMP/own2" | awk -F'\t' '$2 != $4 && $2 != "n3"' | wc -l)"

# The table scheme: table_size slots filled for all nodes at once, a point a slot.
toy 5 '{"table_size":251}' table >"$TMP/t1.json"
check "table: publish 5 nodes" 201 "$(req POST '/v1/clusters/tab/versions?activate=true' \
    --data-binary @"$TMP/t1.json")"
has "table: the version's scheme" "$TMP/body" '"scheme":"table"'
has "table: its parameter" "$TMP/body" '"table_size":251'
has "table: a point a slot" "$TMP/body" '"points":251'
refused "table: a size that is no prime" "$(toy 2 '{"table_size":250}' table)" table_size \
    "must be a prime 7..65537" tab
refused "table: no size" "$(toy 2 '' table)" table_size "must be an integer 7..65537" tab
refused "table: a vnode_factor" "$(toy 2 '{"table_size":7,"vnode_factor":8}' table)" vnode_factor \
    "set table_size instead" tab
refused "table: a weight of 2" "$(toy 2 '{"table_size":7,"nodes":[{"id":"a","addr":"h:1","weight":2}]}' table)" \
    'nodes[0].weight' "must be 0 or 1 in the table scheme" tab
toy 5 '{"table_size":257}' table >"$TMP/t257.json"
check "table: another size publishes" 201 "$(req POST /v1/clusters/tab2/versions --data-binary @"$TMP/t257.json")"
"$RK" plan --from-file "$TMP/t1.json" --to-file "$TMP/t257.json" >"$TMP/out" 2>&1
check "table: no plan between sizes" 2 "$?"
has "table: it names the parameter" "$TMP/out" "table_size"
without "$TMP/t1.json" n2 >"$TMP/t2.json"
check "table: publish v2" 201 "$(req POST /v1/clusters/tab/versions --data-binary @"$TMP/t2.json")"
plan_and_lookups "$TMP/t1.json" "$TMP/t2.json" n2 tab
check "table: n2's whole share moves, and at least that" ok "$($PY - "$TMP/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
n2 = [n for n in plan["nodes"] if n["id"] == "n2"][0]
out = sum(t["fraction"] for t in plan["transfers"] if t["from"] == "n2")
print("ok" if abs(out - n2["share_before"]) < 1e-12 and plan["moved_fraction"] >= out > 0.15 else
      "n2 lost %s of %s, moved %s" % (out, n2["share_before"], plan["moved_fraction"]))
PY
)"
check "table: all five nodes own keys" 5 "$(cut -f2 "$TMP/own1" | sort -u | wc -l)"
rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
[ -s "$TMP/err1" ] && cat "$TMP/err1"
finish
