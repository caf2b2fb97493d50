#!/usr/bin/env bash
# test_svg.sh RINGKEEPERD RINGKEEPER — the plan as SVG: `ringkeeper plan --format svg` offline and
# GET .../plan?format=svg from a real server, each parsed and checked against the plan's JSON by
# check_svg.py (well-formed, arcs, colours per node, bounded on big rings).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../server/lib.sh"
CLI=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")

# topology FILE N VNODE [EXTRA_ID]: N nodes n0..n(N-1), and one more with an id XML must escape
topology() {
    python3 - "$@" <<'PY'
import json, sys
path, n, vf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
nodes = [{"id": "n%d" % i, "addr": "10.0.%d.%d:11211" % (i // 250, i % 250), "weight": 1} for i in range(n)]
if len(sys.argv) > 4:
    nodes.append({"id": sys.argv[4], "addr": "10.9.9.9:11211", "weight": 2})
json.dump({"hash": "fnv1a_32", "vnode_factor": vf, "nodes": nodes}, open(path, "w"))
PY
}

# offline A B NAME: the CLI's SVG and JSON of the plan A -> B, checked
offline() {
    "$CLI" plan --from-file "$1" --to-file "$2" --format svg >"$TMP/plan-$3.svg" &&
        "$CLI" plan --from-file "$1" --to-file "$2" --format json >"$TMP/plan-$3.json" &&
        python3 "$HERE/check_svg.py" "$TMP/plan-$3.svg" "$TMP/plan-$3.json" && ok || bad "offline $3"
}

topology "$TMP/four.json" 4 160
topology "$TMP/five.json" 4 160 'n<4> & "q'"'"'s"'
topology "$TMP/big.json" 600 20
topology "$TMP/bigger.json" 700 20
offline "$TMP/four.json" "$TMP/five.json" small     # every arc drawn, an id that needs escaping
offline "$TMP/big.json" "$TMP/bigger.json" big      # over the caps: binned rings and moves, 32 bars
offline "$TMP/four.json" "$TMP/four.json" unchanged # nothing moves: no moving arcs at all
has "escaped id" "$TMP/plan-small.svg" 'n&lt;4&gt; &amp; &quot;q'
has "binned moves said" "$TMP/plan-big.svg" '<!-- move: '
has "bars capped said" "$TMP/plan-big.svg" 'the 32 most changed of 700 nodes'

rk_start
for f in four five big; do
    check "publish $f" 201 "$(req POST /v1/clusters/c/versions --data-binary "@$TMP/$f.json")"
done
check "activate 1" 200 "$(req POST /v1/clusters/c/versions/1/activate)"
check "plan svg" 200 "$(req GET '/v1/clusters/c/plan?format=svg&to=2')"
has "svg content type" "$TMP/headers" 'Content-Type: image/svg+xml'
cp "$TMP/body" "$TMP/server.svg"
check "plan json" 200 "$(req GET '/v1/clusters/c/plan?to=2')"
python3 "$HERE/check_svg.py" "$TMP/server.svg" "$TMP/body" && ok || bad "server svg"
has "server title names versions" "$TMP/server.svg" 'plan c v1 ('
check "default plan svg" 200 "$(req GET '/v1/clusters/c/plan?format=svg')"
has "defaults to latest" "$TMP/body" ' v3 ('
check "cli remote svg" 0 "$("$CLI" plan --server "$BASE" --cluster c --to 2 --format svg \
    >"$TMP/remote.svg"; echo $?)"
cmp -s "$TMP/remote.svg" "$TMP/server.svg" && ok || bad "the CLI prints the server's SVG as sent"
check "bad format" 400 "$(req GET '/v1/clusters/c/plan?format=png')"
has "bad format names svg" "$TMP/body" 'json, text, svg or picture'
check "svg of unknown version" 404 "$(req GET '/v1/clusters/c/plan?format=svg&to=9')"
finish
