#!/usr/bin/env bash
# test_clients.sh — the cutover's (docs/API.md) clients: RK-Client recorded on a ring 200, a 304 and a held
# long poll with the version its request says it holds (If-None-Match), never merely the one it was
# sent, and the one it was offered; none without the header; a refusal (RK-Refused) shown with its
# reason, answered 304 and held, never counted as held; the summary and converged with an
# activation; a dead client; the expiry; the caps; hostile ids and user agents; the gauges;
# `ringkeeper clients`.
# usage: test_clients.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
CLI=$2
J='Content-Type: application/json'
# The expiry is long enough for the steps from the caps to `ringkeeper clients` on a loaded machine
# (at 5 s, a CI run beside other builds saw the first of them forgotten before the last check).
rk_start --clients-expiry 15 --max-clients-per-cluster 4 --max-clients 6
topo 3 >"$TMP/t"
publish() { # publish CLUSTER: a new version, activated
    req POST "/v1/clusters/$1/versions?activate=true" -H "$J" --data-binary @"$TMP/t"
}
ring() { # ring CLUSTER ID [curl args...]: GET the ring (with query $Q) as client ID
    local c=$1 id=$2
    shift 2
    req GET "/v1/clusters/$c/ring${Q:-}" -H "RK-Client: $id" "$@"
}
clients() { # clients CLUSTER [QUERY]: GET .../clients into $TMP/body
    req GET "/v1/clusters/$1/clients${2:-}"
}
# summary: the summary of $TMP/body in short: held, offered and refusing by version, then the rest
summary() {
    /usr/bin/python3 - "$TMP/body" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
t = lambda k: ",".join("%s:%s" % kv for kv in sorted(s[k].items(), key=lambda kv: int(kv[0])))
print("held {%s} offered {%s} refusing {%s} none %d refusing %d active %s converged %s total %d"
      % (t("by_version"), t("offered_by_version"), t("refusing_by_version"), s["none"],
         s["refusing"], s["active"], str(s["converged"]).lower(), s["total"]))
PY
}
ids() { grep -o '"id":"[^"]*"' "$TMP/body" | cut -d'"' -f4 | tr '\n' ' '; }
refuse() { # refuse ID TAG [curl args...]: GET the ring as client ID holding $tag, refusing TAG
    local id=$1 refused=$2
    shift 2
    ring fleet "$id" -H "If-None-Match: $tag" -H "RK-Refused: $refused vnode_factor: expected 160" "$@"
}

check "publish v1" 201 "$(publish fleet)"
check "no clients yet" 200 "$(clients fleet)"
check "empty summary: not converged" \
    'held {} offered {} refusing {} none 0 refusing 0 active 1 converged false total 0' "$(summary)"
check "unknown cluster" 404 "$(clients nosuch)"
has "unknown cluster code" "$TMP/body" '"code":"unknown_cluster"'
check "limit 0" 400 "$(clients fleet '?limit=0')"
has "limit names its field" "$TMP/body" '"field":"limit"'

# a first 200 (it holds nothing yet: offered v1, holding none), a 304 (it says it holds v1) and a
# request without the header (not tracked)
check "a: 200" 200 "$(ring fleet a -A 'agent-a/1')"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
check "b: 304" 304 "$(ring fleet b -H "If-None-Match: $tag")"
check "anonymous: 200" 200 "$(req GET /v1/clusters/fleet/ring)"
check "list" 200 "$(clients fleet)"
check "a holds none, b v1" \
    'held {1:1} offered {1:2} refusing {} none 1 refusing 0 active 1 converged false total 2' \
    "$(summary)"
has "a's record" "$TMP/body" '{"id":"a","held":null,"offered":1,"refused":null,"reason":null,"addr":"127.0.0.1","user_agent":"agent-a/1","token":null,"last_seen":"'
check "a: 304, now holding v1" 304 "$(ring fleet a -H "If-None-Match: $tag")"
clients fleet >/dev/null
check "a and b hold v1" \
    'held {1:2} offered {1:2} refusing {} none 0 refusing 0 active 1 converged true total 2' \
    "$(summary)"
# a tag of another store holds nothing of this one
check "c: another store's v1" 200 "$(ring fleet c -H 'If-None-Match: "v1.0123456789abcdef"')"
clients fleet >/dev/null
has "c holds none" "$TMP/body" '{"id":"c","held":null,"offered":1,'

# a held long poll is recorded when it starts, with the version it holds and offered nothing yet
poll() { # poll ID [curl args]: a 30 s long poll as ID, in the background; its code in $TMP/ID.code
    local id=$1
    shift
    curl -s -o /dev/null -w '%{http_code}' --max-time 70 -H "RK-Client: $id" "$@" \
        "$BASE/v1/clusters/fleet/ring?wait=30" >"$TMP/$id.code" &
}
until_summary() { # until_summary WANT: list until the summary is WANT (10 s at most)
    for _ in $(seq 1 100); do
        clients fleet >/dev/null
        [ "$(summary)" = "$1" ] && return
        sleep 0.1
    done
}
poll held -H "If-None-Match: $tag"
held=$!
want='held {1:3} offered {1:3} refusing {} none 1 refusing 0 active 1 converged false total 4'
until_summary "$want"
check "held poll recorded: holds v1, offered nothing yet" "$want" "$(summary)"

# an activation: the held poll is offered v2 but still holds v1 until its next request says so
check "publish v2" 201 "$(publish fleet)"
wait "$held"
check "held poll woken" 200 "$(cat "$TMP/held.code")"
check "list after v2" 200 "$(clients fleet)"
check "sent is not held" \
    'held {1:3} offered {1:3,2:1} refusing {} none 1 refusing 0 active 2 converged false total 4' \
    "$(summary)"
check "stragglers first: none, then v1 seen longest ago first" "c b a held " "$(ids)"
check "limit 1 lists one, counts all" 200 "$(clients fleet '?limit=1')"
check "one listed" "c " "$(ids)"
has "summary counts all" "$TMP/body" '"total":4'
old=$tag
check "a: 200 v2" 200 "$(ring fleet a -H "If-None-Match: $old")"
tag=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
for id in a b c held; do
    check "$id: 304 holding v2" 304 "$(ring fleet "$id" -H "If-None-Match: $tag")"
done
check "list converged" 200 "$(clients fleet)"
check "converged" \
    'held {2:4} offered {2:4} refusing {} none 0 refusing 0 active 2 converged true total 4' \
    "$(summary)"

# the gauges: one line per cluster and held version; none refusing
curl -s "$BASE/metrics" | grep '^ringkeeper_clients' >"$TMP/metrics"
check "metric" 'ringkeeper_clients{cluster="fleet",version="2"} 4' "$(cat "$TMP/metrics")"

# a refusing client (SPEC 9: it says so in its next request): shown with its reason, never counted
# on the refused version, and not sent that ring again: a 304 at once, its long poll held
check "publish v3" 201 "$(publish fleet)"
check "a: 200 v3" 200 "$(ring fleet a -H "If-None-Match: $tag")"
v3=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
rm -f "$TMP/body"
check "a refuses v3: 304, no ring" 304 "$(refuse a "$v3")"
if [ -s "$TMP/body" ]; then bad "a refusing client was sent a body"; else ok; fi
clients fleet >/dev/null
has "a's refusal" "$TMP/body" '{"id":"a","held":2,"offered":3,"refused":3,"reason":"vnode_factor: expected 160",'
check "refusing, not converged" \
    'held {2:4} offered {2:3,3:1} refusing {3:1} none 0 refusing 1 active 3 converged false total 4' \
    "$(summary)"
curl -s "$BASE/metrics" | grep '^ringkeeper_clients_refusing' >"$TMP/metrics"
check "refusing metric" 'ringkeeper_clients_refusing{cluster="fleet",version="3"} 1' "$(cat "$TMP/metrics")"
start=$(date +%s%N)
check "a refusing, polling: 304" 304 "$(Q='?wait=1' refuse a "$v3")"
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$ms" -ge 900 ]; then ok; else bad "a refusing long poll was answered after $ms ms, not held"; fi
# a refusal of an older ring than the active one is history: the newer ring is sent
check "publish v4" 201 "$(publish fleet)"
check "a refused v3, v4 is active: 200" 200 "$(refuse a "$v3")"
has "v4 sent" "$TMP/body" '"version":4'
check "a: 304 holding v4" 304 "$(ring fleet a -H "If-None-Match: $(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')")"
clients fleet >/dev/null
has "a's refusal is gone" "$TMP/body" '{"id":"a","held":4,"offered":4,"refused":null,'
# a dead client: its poll was answered v4, it never asked again, so it holds v2 until it expires
check "b: 200 v4, then silent" 200 "$(ring fleet b -H "If-None-Match: $tag")"
clients fleet >/dev/null
has "b holds v2" "$TMP/body" '{"id":"b","held":2,"offered":4,'
for id in c held; do ring fleet "$id" -H "If-None-Match: $tag" >/dev/null; done

# ids outside the rule are not tracked; the ring is served all the same
long=$(printf 'x%.0s' $(seq 1 129))
check "129-byte id: 200" 200 "$(ring fleet "$long")"
check "id with a space: 200" 200 "$(ring fleet 'two words')"
check "id with a control byte: 200" 200 "$(ring fleet $'ctl\x01')"
check "id with a UTF-8 byte: 200" 200 "$(ring fleet $'caf\xc3\xa9')"
clients fleet >/dev/null
has "none of them tracked" "$TMP/body" '"total":4'
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
check "cluster cap" \
    'held {} offered {4:4} refusing {} none 4 refusing 0 active 4 converged false total 4' \
    "$(summary)"
check "the newest four" "d e f g " "$(ids)"
# the total cap (6): two more in another cluster fill it, a third pushes out the oldest of all (d)
check "publish other" 201 "$(publish other)"
for id in o1 o2 o3; do ring other "$id" >/dev/null; done
clients fleet >/dev/null
check "total cap" "e f g " "$(ids)"
clients other >/dev/null
check "other" "o1 o2 o3 " "$(ids)"

# `ringkeeper clients`: per version holding, offered and refusing, then those holding none, the
# active version, converged and the refusers with their reasons; exit 0 either way
check "publish v5" 201 "$(publish fleet)"
check "g: v5" 200 "$(ring fleet g)"
v5=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
check "g: holding v5" 304 "$(ring fleet g -H "If-None-Match: $v5")"
check "f refuses v5" 304 "$(ring fleet f -H "RK-Refused: $v5 vnode_factor: expected 160")"
"$CLI" clients --server "$BASE" --cluster fleet >"$TMP/out" 2>&1
check "cli exit" 0 "$?"
printf '%s\n' "version  holding  offered  refusing" "      4        0        1         0" \
    "      5        1        2         1" "holding none: 2" "active: 5" "converged: no" \
    "refuses v5: f: vnode_factor: expected 160" >"$TMP/want"
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

# the expiry (15 s here): ids silent that long are forgotten
sleep 15.5
clients fleet >/dev/null
check "expired" \
    'held {} offered {} refusing {} none 0 refusing 0 active 5 converged false total 0' "$(summary)"
curl -s "$BASE/metrics" | grep -c '^ringkeeper_clients{' >"$TMP/lines"
check "no gauge left" 0 "$(cat "$TMP/lines")"
"$CLI" clients --server "$BASE" --cluster fleet >"$TMP/out" 2>&1
printf '%s\n' "version  holding  offered  refusing" "holding none: 0" "active: 5" "converged: no" \
    >"$TMP/want"
check "cli with none" "$(cat "$TMP/want")" "$(cat "$TMP/out")"

# a one-shot `ringkeeper lookup --cache` names the ring of its last-known-good file (a 304 when it
# is still the active one: no download), and when it refuses the new ring it falls back to that
# file: it is never counted on the refused version, however often it runs
lk() { # lk: one lookup of cluster lk as client cli-r, expecting vnode_factor 160
    echo key | "$CLI" lookup --server "$BASE" --cluster lk --client-id cli-r --cache "$TMP/lk.ring" \
        --expect-vnode-factor 160 >"$TMP/out" 2>"$TMP/err"
}
check "publish lk v1" 201 "$(publish lk)"
lk
check "lk: first lookup" 0 "$?"
lk
check "lk: second lookup" 0 "$?"
clients lk >/dev/null
has "lk: it holds v1 from its file, confirmed by a 304" "$TMP/body" '{"id":"cli-r","held":1,"offered":1,'
topo 3 100 >"$TMP/t100"
check "publish lk v2: vnode_factor 100" 201 "$(req POST '/v1/clusters/lk/versions?activate=true' \
    -H "$J" --data-binary @"$TMP/t100")"
for round in 1 2 3; do
    lk
    check "lk refusing, round $round: routed from the file" 0 "$?"
    has "lk refusing, round $round: says why" "$TMP/err" "vnode_factor 100"
    clients lk >/dev/null
    has "lk refusing, round $round: held v1, offered v2" "$TMP/body" '{"id":"cli-r","held":1,"offered":2,'
    has "lk refusing, round $round: never held v2" "$TMP/body" '"by_version":{"1":1}'
done

# a process killed -9 while its long poll is held: the activation answers its dead poll, and it
# stays on the version that poll named
check "publish dead v1" 201 "$(publish dead)"
check "victim: first fetch" 200 "$(ring dead victim)"
d1=$(sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r')
curl -s -o /dev/null --max-time 70 -H "RK-Client: victim" -H "If-None-Match: $d1" \
    "$BASE/v1/clusters/dead/ring?wait=30" &
victim=$!
for _ in $(seq 1 50); do
    clients dead >/dev/null
    grep -q '"id":"victim","held":1,' "$TMP/body" && break
    sleep 0.1
done
kill -9 "$victim"
wait "$victim" 2>/dev/null
check "publish dead v2 over the dead poll" 201 "$(publish dead)"
sleep 0.5 # the server answers the held poll on a dead connection
clients dead >/dev/null
has "the killed client stays on the version its poll named" "$TMP/body" '{"id":"victim","held":1,'
has "... and is not counted on v2" "$TMP/body" '"by_version":{"1":1}'
has "... so the fleet has not converged" "$TMP/body" '"converged":false'

rk_stop
check "stopped cleanly" 0 "$STOP_CODE"
finish
