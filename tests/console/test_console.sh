#!/usr/bin/env bash
# test_console.sh RINGKEEPERD OUTDIR — the operator console in a real browser: Debian's chromium,
# headless, driven by puppeteer-core (installed by deploy/install-deps.sh into tests/console/)
# against a real ringkeeperd with seeded versions and a token. Screenshots go to OUTDIR.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../server/lib.sh"
OUT=$2
if ! command -v node >/dev/null || [ ! -x /usr/bin/chromium ]; then
    echo "SKIPPED: the console's browser test needs node and /usr/bin/chromium (deploy/install-deps.sh)"
    exit 77
fi
if [ ! -d "$HERE/node_modules/puppeteer-core" ]; then
    echo "FAIL: puppeteer-core is missing: run deploy/install-deps.sh (npm ci in tests/console)"
    exit 1
fi
mkdir -p "$OUT"
TOKEN=console-test-token-0123456789
printf 'ops:%s\n' "$TOKEN" >"$TMP/tokens"
# the big views show a 100000-node ring's shares: a plan of 100000 node rows, which the default
# --max-plan-rows (50000) refuses; an operator of such a cluster raises it (1.3 s, 275 MB a plan)
# An empty store first, for what a new user sees before any publish (its own database, stopped
# after the browser test); then the seeded server, whose BASE and PID the rest of the script uses.
rk_start --db "$TMP/empty.db"
EMPTY_BASE=$BASE
EMPTY_PID=$PID
rk_start --token-file "$TMP/tokens" --max-plan-rows 200000
AUTH=(-H "Authorization: Bearer $TOKEN")
python3 - "$TMP" <<'PY'
import json, sys
def topo(n, comment, drop=None):
    nodes = [{"id": "cache-%s" % c, "addr": "10.0.0.%d:11211" % i, "weight": 1}
             for i, c in enumerate("abcdef"[:n]) if c != drop]
    return {"hash": "fnv1a_32", "vnode_factor": 40, "nodes": nodes, "comment": comment}
for name, doc in (("v1", topo(4, "four nodes")), ("v2", topo(5, "add cache-e")),
                  ("v3", topo(4, "remove cache-b", drop="b"))):
    json.dump(doc, open("%s/%s.json" % (sys.argv[1], name), "w"))
PY
for v in v1 v2 v3; do
    check "publish $v" 201 "$(req POST /v1/clusters/c/versions "${AUTH[@]}" --data-binary "@$TMP/$v.json")"
done
check "activate v1" 200 "$(req POST /v1/clusters/c/versions/1/activate "${AUTH[@]}")"
# with a token file only clients that send a token of the client role are counted (a token
# without roles has it): web-1 sends the ops token, as a fleet sends its own
check "a client of c (the clients column)" 200 "$(req GET /v1/clusters/c/ring -H 'RK-Client: web-1' "${AUTH[@]}")"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
check "... that holds v1 from its next request" 304 \
    "$(req GET /v1/clusters/c/ring -H 'RK-Client: web-1' -H "If-None-Match: $tag" "${AUTH[@]}")"
# A big cluster: 100000 nodes x 40 points (4M points, under the server's 4194304), then ten nodes
# replaced: the ring and the plan must stay bounded in the page whatever the ring's size.
python3 - "$TMP" <<'PY'
import json, sys
def topo(ids):
    return {"hash": "xxh3_64", "vnode_factor": 40,
            "nodes": [{"id": i, "addr": "10.%d.%d.%d:11211" % (k >> 16, (k >> 8) & 255, k & 255), "weight": 1}
                      for k, i in enumerate(ids)]}
ids = ["node-%06d" % k for k in range(100000)]
json.dump(topo(ids), open(sys.argv[1] + "/big1.json", "w"))
json.dump(topo(ids[10:] + ["new-%02d" % k for k in range(10)]), open(sys.argv[1] + "/big2.json", "w"))
PY
# A thousand nodes, twenty replaced: the ranked transfers, the flows and the shares at that size.
python3 - "$TMP" <<'PY'
import json, sys
def topo(ids):
    return {"hash": "xxh3_64", "vnode_factor": 100,
            "nodes": [{"id": i, "addr": "10.7.%d.%d:11211" % (k >> 8, k & 255), "weight": 1} for k, i in enumerate(ids)]}
ids = ["cache-%04d" % k for k in range(1000)]
json.dump(topo(ids), open(sys.argv[1] + "/k1.json", "w"))
json.dump(topo(ids[20:] + ["fresh-%02d" % k for k in range(20)]), open(sys.argv[1] + "/k2.json", "w"))
PY
for v in k1 k2; do
    check "publish $v" 201 "$(req POST /v1/clusters/k/versions "${AUTH[@]}" --data-binary "@$TMP/$v.json")"
done
check "activate k v1" 200 "$(req POST /v1/clusters/k/versions/1/activate "${AUTH[@]}")"
for v in big1 big2; do
    check "publish $v" 201 "$(req POST /v1/clusters/big/versions "${AUTH[@]}" --data-binary "@$TMP/$v.json")"
done
check "activate big v1" 200 "$(req POST /v1/clusters/big/versions/1/activate "${AUTH[@]}")"
# A ketama ring (docs/KETAMA.md): a 32-bit space whatever its hash, drawn and pointed at as the server says.
KETAMA='{"scheme":"ketama","hash":"fnv1a_64","nodes":[{"id":"10.0.0.1","addr":"10.0.0.1:11211","weight":1},{"id":"cache-b","addr":"10.0.0.2:11212","weight":2},{"id":"10.0.0.3:11213","addr":"10.0.0.3:11213","weight":1}]}'
check "publish a ketama ring" 201 "$(req POST '/v1/clusters/kt/versions?activate=true' "${AUTH[@]}" --data "$KETAMA")"
check "a second cluster" 201 "$(req POST /v1/clusters/other/versions "${AUTH[@]}" --data-binary "@$TMP/v2.json")"
check "GET / redirects" 302 "$(req GET /)"
has "to the console" "$TMP/headers" 'Location: /ui/'
check "console page" 200 "$(req GET /ui/)"
has "as HTML" "$TMP/headers" 'Content-Type: text/html; charset=utf-8'
check "script" 200 "$(req GET /ui/console.js)"
has "as JavaScript" "$TMP/headers" 'Content-Type: text/javascript; charset=utf-8'
check "no such file" 404 "$(req GET /ui/nope.js)"
check "no path outside" 404 "$(req GET /ui/../api.c)"
# (the SVG namespace is a name, never fetched)
if grep -E 'https?://' "$HERE/../../server/ui/"*.html "$HERE/../../server/ui/"*.js "$HERE/../../server/ui/"*.css |
    grep -vq '"http://www.w3.org/2000/svg"'; then
    bad "the console names an external address"
else
    ok
fi
node "$HERE/test_console.js" "$BASE" "$TOKEN" "$OUT" "$EMPTY_BASE" &
NODE=$!
wait "$NODE" && ok || bad "browser test"
kill "$EMPTY_PID"
wait "$EMPTY_PID" 2>/dev/null
finish
