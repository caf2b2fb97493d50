#!/usr/bin/env bash
# test_clients.sh — the cutover's (docs/API.md) clients: RK-Client recorded on a ring 200, a 304 and a held
# long poll (with the version sent or already had), none without the header; the summary and
# converged flipping with an activation; the expiry; the caps; hostile ids and user agents; the
# ringkeeper_clients gauge; `ringkeeper clients`.
# usage: test_clients.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
CLI=$2
J='Content-Type: application/json'
rk_start --clients-expiry 5 --max-clients-per-cluster 4 --max-clients 6
topo 3 >"$TMP/t"
publish() { # publish CLUSTER: a new version, activated
    req POST "/v1/clusters/$1/versions?activate=true" -H "$J" --data-binary @"$TMP/t"
}
ring() { # ring CLUSTER ID [curl args...]: GET the ring as client ID
    local c=$1 id=$2
    shift 2
    req GET "/v1/clusters/$c/ring" -H "RK-Client: $id" "$@"
}
clients() { # clients CLUSTER [QUERY]: GET .../clients into $TMP/body
    req GET "/v1/clusters/$1/clients${2:-}"
}
summary() { sed -n 's/.*"summary":\(.*\)}$/\1/p' "$TMP/body"; }
ids() { grep -o '"id":"[^"]*"' "$TMP/body" | cut -d'"' -f4 | tr '\n' ' '; }

check "publish v1" 201 "$(publish fleet)"
check "no clients yet" 200 "$(clients fleet)"
check "empty summary: not converged" '{"by_version":{},"active":1,"converged":false,"total":0}' "$(summary)"
check "unknown cluster" 404 "$(clients nosuch)"
has "unknown cluster code" "$TMP/body" '"code":"unknown_cluster"'
check "limit 0" 400 "$(clients fleet '?limit=0')"
has "limit names its field" "$TMP/body" '"field":"limit"'

# a 200, a 304 (it already has v1) and a request without the header (not tracked)
check "a: 200" 200 "$(ring fleet a -A 'agent-a/1')"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
check "b: 304" 304 "$(ring fleet b -H "If-None-Match: $tag")"
check "anonymous: 200" 200 "$(req GET /v1/clusters/fleet/ring)"
check "list" 200 "$(clients fleet)"
check "a and b at v1" '{"by_version":{"1":2},"active":1,"converged":true,"total":2}' "$(summary)"
has "a's record" "$TMP/body" '{"id":"a","version":1,"addr":"127.0.0.1","user_agent":"agent-a/1","last_seen":"'

# a held long poll is recorded when it starts, with the version it has
curl -s -o "$TMP/held" -w '%{http_code}' --max-time 70 -H "RK-Client: held" \
    -H "If-None-Match: $tag" "$BASE/v1/clusters/fleet/ring?wait=30" >"$TMP/held.code" &
held=$!
for _ in $(seq 1 100); do
    clients fleet >/dev/null
    [ "$(summary)" = '{"by_version":{"1":3},"active":1,"converged":true,"total":3}' ] && break
    sleep 0.1
done
check "held poll recorded at v1" '{"by_version":{"1":3},"active":1,"converged":true,"total":3}' "$(summary)"

# an activation: the held poll gets v2 and is recorded so; a and b are stragglers until they ask
check "publish v2" 201 "$(publish fleet)"
wait "$held"
check "held poll woken" 200 "$(cat "$TMP/held.code")"
check "list after v2" 200 "$(clients fleet)"
check "not converged" '{"by_version":{"1":2,"2":1},"active":2,"converged":false,"total":3}' "$(summary)"
check "stragglers first" "a b held " "$(ids)"
check "limit 1 lists one, counts all" 200 "$(clients fleet '?limit=1')"
check "one listed" "a " "$(ids)"
has "summary counts all" "$TMP/body" '"total":3'
check "a: 200 v2" 200 "$(ring fleet a -H "If-None-Match: $tag")"
check "b: 200 v2" 200 "$(ring fleet b)"
check "list converged" 200 "$(clients fleet)"
check "converged" '{"by_version":{"2":3},"active":2,"converged":true,"total":3}' "$(summary)"

# the gauge: one line per cluster and version
curl -s "$BASE/metrics" | grep '^ringkeeper_clients' >"$TMP/metrics"
check "metric" 'ringkeeper_clients{cluster="fleet",version="2"} 3' "$(cat "$TMP/metrics")"

# ids outside the rule are not tracked; the ring is served all the same
long=$(printf 'x%.0s' $(seq 1 129))
check "129-byte id: 200" 200 "$(ring fleet "$long")"
check "id with a space: 200" 200 "$(ring fleet 'two words')"
check "id with a control byte: 200" 200 "$(ring fleet $'ctl\x01')"
check "id with a UTF-8 byte: 200" 200 "$(ring fleet $'caf\xc3\xa9')"
clients fleet >/dev/null
has "none of them tracked" "$TMP/body" '"total":3'
# the 128-byte id is kept whole; a hostile user agent is cut to 128 bytes and made printable
check "128-byte id: 200" 200 "$(ring fleet "${long:1}" -A "$(printf 'u%.0s' $(seq 1 200))")"
clients fleet >/dev/null
has "128-byte id kept" "$TMP/body" "\"id\":\"${long:1}\""
has "agent cut" "$TMP/body" "\"user_agent\":\"$(printf 'u%.0s' $(seq 1 128))\","
check "agent with controls" 200 "$(ring fleet d -A $'evil\x1b[2J\x7f')"
clients fleet >/dev/null
has "agent made printable" "$TMP/body" '"user_agent":"evil?[2J?"'

# the cap of a cluster (4): the id seen longest ago goes
for id in e f g; do ring fleet "$id" >/dev/null; done
clients fleet >/dev/null
check "cluster cap" '{"by_version":{"2":4},"active":2,"converged":true,"total":4}' "$(summary)"
check "the newest four" "d e f g " "$(ids)"
# the total cap (6): two more in another cluster fill it, a third pushes out the oldest of all (d)
check "publish other" 201 "$(publish other)"
for id in o1 o2 o3; do ring other "$id" >/dev/null; done
clients fleet >/dev/null
check "total cap" "e f g " "$(ids)"
clients other >/dev/null
check "other" "o1 o2 o3 " "$(ids)"

# `ringkeeper clients`: the table, then the active version and converged; exit 0 either way
check "publish v3" 201 "$(publish fleet)"
check "g: v3" 200 "$(ring fleet g)"
"$CLI" clients --server "$BASE" --cluster fleet >"$TMP/out" 2>&1
check "cli exit" 0 "$?"
printf '%s\n' "version  clients" "      2        2" "      3        1" "active: 3" "converged: no" >"$TMP/want"
check "cli table" "$(cat "$TMP/want")" "$(cat "$TMP/out")"
"$CLI" clients --server "$BASE" --cluster fleet --quiet >"$TMP/out" 2>&1
check "cli --quiet: whether converged" "false" "$(cat "$TMP/out")"
"$CLI" clients --server "$BASE" --cluster fleet -o json >"$TMP/out" 2>&1
check "cli -o json exit" 0 "$?"
check "cli -o json: every client listed" 3 "$(grep -c '"id": ' "$TMP/out")"
has "cli -o json: the summary" "$TMP/out" '"converged": false'
"$CLI" clients --server "$BASE" --cluster nosuch >"$TMP/out" 2>&1
check "cli unknown cluster exit" 2 "$?"
check "cli unknown cluster" "ringkeeper clients: server: there is no cluster named nosuch; publishing a version creates it (HTTP 404)" "$(cat "$TMP/out")"

# lookup --client-id is counted under that id; a lookup without it is not
echo key | "$CLI" lookup --server "$BASE" --cluster other --client-id cli-7 >/dev/null
check "lookup exit" 0 "$?"
echo key | "$CLI" lookup --server "$BASE" --cluster other >/dev/null
clients other >/dev/null
check "lookup counted once" "o1 o2 o3 cli-7 " "$(ids)"
has "the library's agent" "$TMP/body" '"user_agent":"libringkeeper/'
echo key | "$CLI" lookup --server "$BASE" --cluster other --client-id 'two words' >"$TMP/out" 2>&1
check "lookup: a bad id exit" 2 "$?"
check "lookup: a bad id" 'ringkeeper lookup: --client-id: must be 1..128 bytes of printable ASCII without spaces, got "two words"' "$(cat "$TMP/out")"

# the expiry (5 s here): ids silent that long are forgotten
sleep 5.5
clients fleet >/dev/null
check "expired" '{"by_version":{},"active":3,"converged":false,"total":0}' "$(summary)"
curl -s "$BASE/metrics" | grep -c '^ringkeeper_clients{' >"$TMP/lines"
check "no gauge left" 0 "$(cat "$TMP/lines")"
"$CLI" clients --server "$BASE" --cluster fleet >"$TMP/out" 2>&1
printf '%s\n' "version  clients" "active: 3" "converged: no" >"$TMP/want"
check "cli with none" "$(cat "$TMP/want")" "$(cat "$TMP/out")"

rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
finish
