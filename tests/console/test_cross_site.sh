#!/usr/bin/env bash
# test_cross_site.sh RINGKEEPERD — issue 52, item 1, in Debian's chromium: a ringkeeperd without
# --token-file (the browser is then the credential) and a page of another local origin that makes
# its visitor's browser try every kind of write: fetch with text/plain or no body (no-cors), a JSON
# fetch (preflighted), a beacon, form posts (urlencoded, multipart, text/plain carrying JSON) and
# one from a sandboxed frame (Origin: null). Each reaches the server and is refused (its log says
# so), and nothing is stored. With --allow-origin that origin, its JSON write passes CORS. A name
# the attacker's DNS points at the server (DNS rebinding, here chromium's resolver rule) gets 421.
# curl, which sends no Origin, and the console on its own origin keep working (test_console.sh).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../server/lib.sh" "$1"
if ! command -v node >/dev/null || [ ! -x /usr/bin/chromium ]; then
    echo "SKIPPED: the cross-site test needs node and /usr/bin/chromium (deploy/install-deps.sh)"
    exit 77
fi
[ -d "$HERE/node_modules/puppeteer-core" ] || { echo "FAIL: puppeteer-core is missing: run deploy/install-deps.sh"; exit 1; }

# the attack page, served from another origin (another port) by python's http.server
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$HERE/cross_site" >"$TMP/page.log" 2>&1 &
PAGE_PID=$!
for _ in $(seq 1 100); do
    PAGE_PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$TMP/page.log" | head -1)
    [ -n "$PAGE_PORT" ] && break
    sleep 0.05
done
[ -n "$PAGE_PORT" ] || { echo "FAIL: the page server did not start"; kill "$PAGE_PID"; exit 1; }
PAGE=http://127.0.0.1:$PAGE_PORT
browser() { timeout 120 node "$HERE/cross_site/cross_site.js" "$@" 2>&1; }

rk_start
check "a staged version to activate" 201 "$(req POST /v1/clusters/seed/versions --data-binary "$(topo 3)")"
seen=$(browser attack "$PAGE/attack.html" "$BASE")
echo "the page saw: $seen"
has_text() { case $2 in *"$3"*) ok ;; *) bad "$1: no [$3] in [$2]" ;; esac; }
has_text "the preflighted JSON write failed in the page" "$seen" '"fetch_json_cors":"threw TypeError"'
# each write reached the server and was refused: the log line of each path, with its status
for w in "csrf/versions 403" "seed/versions/1/activate 403" "cors/versions 403" "beacon/versions 403" \
    "formjson/versions 403" "formurl/versions 403" "formmulti/versions 403" "sandbox/versions 403"; do
    set -- $w
    if grep -q "\(POST\|OPTIONS\) /v1/clusters/$1 $2" "$TMP/server.log"; then ok; else
        bad "no refusal $2 of /v1/clusters/$1 in the log: $(grep "/v1/clusters/${1%%/*}" "$TMP/server.log" | tail -3)"
    fi
done
check "nothing stored: the clusters" 200 "$(req GET /v1/clusters)"
check "... only seed" 1 "$(grep -o '"cluster":' "$TMP/body" | wc -l)"
check "... seed's v1 still staged" 404 "$(req GET /v1/clusters/seed/ring)"
check "curl (no Origin) still writes" 200 "$(req POST /v1/clusters/seed/versions/1/activate)"
check "the console's own origin writes" 201 "$(req POST /v1/clusters/own/versions -H "Origin: $BASE" --data-binary "$(topo 3)")"
seen=$(browser rebind "http://rebind.test:$PORT")
echo "the rebound page saw: $seen"
check "a DNS-rebound page's write: 421" '{"status":421}' "$seen"
check "... not stored" 404 "$(req GET /v1/clusters/rebind/versions)"
rk_stop

rk_start --allow-origin "$PAGE"
seen=$(browser allowed "$PAGE/attack.html" "$BASE")
echo "the allowed page saw: $seen"
check "--allow-origin: the page's JSON write passes CORS" '{"fetch_json_cors":"201"}' "$seen"
check "... stored" 200 "$(req GET /v1/clusters/cors/ring)"
check "... a text/plain body is still refused" 415 \
    "$(req POST /v1/clusters/x/versions -H "Origin: $PAGE" -H 'Content-Type: text/plain' --data-binary "$(topo 3)")"
rk_stop
kill "$PAGE_PID" 2>/dev/null
wait "$PAGE_PID" 2>/dev/null
finish
