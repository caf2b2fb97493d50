#!/usr/bin/env bash
# test_plan_refusals.sh — clients looping on costly plans from one address leave the others plans
# (issue 52, item 5: four clients looping on a refused 100000-node plan took every
# --plan-concurrency slot: 29,773 × 503 against 42 × 200 for a client elsewhere in 15 s). A plan
# refused as too large is remembered, answered at the cost of a lookup; one address holds at most
# half the slots.
# usage: test_plan_refusals.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
J='Content-Type: application/json'

# topo_py N PREFIX [EXTRA]: N (+ EXTRA) nodes PREFIX0.. of vnode_factor 40 (python: bash's loop
# takes seconds for thousands of nodes)
topo_py() {
    python3 -c 'import json, sys
n, p = int(sys.argv[1]) + int(sys.argv[3]), sys.argv[2]
nodes = [{"id": "%s%d" % (p, i), "addr": "10.0.%d.%d:11211" % (i >> 8, i & 255), "weight": 1}
         for i in range(n)]
print(json.dumps({"hash": "xxh3_64", "vnode_factor": 40, "nodes": nodes}))' "$1" "$2" "${3:-0}"
}
publish() {
    check "publish $2 to $1" 201 "$(req POST "/v1/clusters/$1/versions" -H "$J" --data-binary @"$2")"
}
remembered() {
    curl -s "$BASE/metrics" | awk '$1 == "ringkeeper_plan_refusals_remembered_total" {print $2}'
}

# big: v1 and v2 share no node (about 240000 arcs, refused by --max-plan-arcs 1000 from the
# topologies: 20 ms each time on a Release build); v3 is v1 and one more node (about 40 arcs).
topo_py 3000 n >"$TMP/v1"
topo_py 3000 m >"$TMP/v2"
topo_py 3000 n 1 >"$TMP/v3"
topo 8 160 xxh3_64 >"$TMP/s1"
topo 9 160 xxh3_64 >"$TMP/s2"
rk_start --max-plan-arcs 1000 --max-plan-rows 2000
for v in v1 v2 v3; do publish big "$TMP/$v"; done
for v in s1 s2; do publish small "$TMP/$v"; done

# The second refusal comes from memory, the same answer; so does any rendering that lists nodes
# (the arcs depend on the versions alone, and the nodes, 6000 rows, on the versions and whether
# they are listed), and ?keys, which changes no count
check "refused" 422 "$(req GET '/v1/clusters/big/plan?from=1&to=2&arcs=false')"
has "refused: over the arcs" "$TMP/body" '"code":"plan_too_large"'
cp "$TMP/body" "$TMP/first"
check "nothing remembered yet" 0 "$(remembered)"
check "refused again" 422 "$(req GET '/v1/clusters/big/plan?from=1&to=2&arcs=false')"
check "the same answer" "$(cat "$TMP/first")" "$(cat "$TMP/body")"
check "... from memory" 1 "$(remembered)"
check "as text, with keys" 422 \
    "$(req GET '/v1/clusters/big/plan?from=1&to=2&format=text&keys=1000')"
check "... from memory too" 2 "$(remembered)"
# a rendering that lists no node is refused by the arcs alone: computed once, then remembered
check "as SVG" 422 "$(req GET '/v1/clusters/big/plan?from=1&to=2&format=svg')"
check "... computed" 2 "$(remembered)"
has "... by the arcs" "$TMP/body" 'ringkeeperd --max-plan-arcs'
check "as a picture" 422 "$(req GET '/v1/clusters/big/plan?from=1&to=2&format=picture&bins=360')"
check "... from memory" 3 "$(remembered)"
# refused by its rows (3001 nodes listed, over 2000): remembered apart from the summary, which fits
check "rows: refused" 422 "$(req GET '/v1/clusters/big/plan?from=1&to=3&arcs=false')"
check "rows: again" 422 "$(req GET '/v1/clusters/big/plan?from=1&to=3&arcs=false')"
check "rows: from memory" 4 "$(remembered)"
check "rows: the summary fits" 200 \
    "$(req GET '/v1/clusters/big/plan?from=1&to=3&arcs=false&nodes=false')"
check "rows: not remembered as refused" 4 "$(remembered)"
check "bad input: 400" 400 "$(req GET '/v1/clusters/big/plan?from=1&to=2&max_step=0')"

# loop SECONDS SOURCE:PATH:COUNT...: COUNT clients from loopback address SOURCE each asking for PATH
# again and again for SECONDS; prints "SOURCE STATUS COUNT" per status, and the distinct bodies of
# the 503s to $TMP/busy
loop() {
    python3 - "$PORT" "$TMP/busy" "$@" <<'PY'
import collections, http.client, sys, threading, time
port, busy, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
counts, lock, bodies = collections.Counter(), threading.Lock(), []
def client(source, path, end):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    while time.monotonic() < end:
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        with lock:
            counts[(source, r.status)] += 1
            if r.status == 503 and body.decode() not in bodies and len(bodies) < 20:
                bodies.append(body.decode())  # each kind: the server's limit, the address's share
end, threads = time.monotonic() + seconds, []
for spec in sys.argv[4:]:
    source, path, n = spec.split(":", 2)[0], spec.split(":", 2)[1], int(spec.split(":", 2)[2])
    threads += [threading.Thread(target=client, args=(source, path, end)) for _ in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for (source, status), n in sorted(counts.items()):
    print(source, status, n)
open(busy, "w").write("\n".join(bodies))
PY
}

# served NAME FILE: in loop's FILE, 127.0.0.3 got only 200s, and more than 10
served() {
    check "$1: the other address, only 200" "" "$(awk '$1 == "127.0.0.3" && $2 != 200' "$2")"
    check "$1: the other address was served" 1 \
        "$(awk '$1 == "127.0.0.3" && $2 == 200 {print ($3 > 10)}' "$2")"
}

# Four clients from 127.0.0.2 loop on the refused plan while one from 127.0.0.3 plans a small
# cluster: every plan of the other address is computed (before, most got 503: the refusals held
# both slots)
loop 2 "127.0.0.2:/v1/clusters/big/plan?from=1&to=2&arcs=false:4" \
    "127.0.0.3:/v1/clusters/small/plan?from=1&to=2:1" >"$TMP/refusals"
served "refusals" "$TMP/refusals"
check "refusals: refused, never 503" "422" \
    "$(awk '$1 == "127.0.0.2" {print $2}' "$TMP/refusals" | tr '\n' ' ' | xargs)"
n=$(remembered)
check "refusals: from memory" 1 "$((${n:-0} > 100))"

# Four clients from 127.0.0.2 loop on a plan that is computed each time (an SVG rebuilds both
# rings): they hold one slot at most, the other address is never refused, and the 503 of the one
# past its share says so
loop 2 "127.0.0.2:/v1/clusters/big/plan?from=1&to=3&format=svg:4" \
    "127.0.0.3:/v1/clusters/small/plan?from=1&to=2:1" >"$TMP/plans"
served "plans" "$TMP/plans"
check "plans: the looping address past its share" 1 \
    "$(awk '$1 == "127.0.0.2" && $2 == 503 {print ($3 > 0)}' "$TMP/plans")"
has "plans: its 503 names the share" "$TMP/busy" "this client address is computing its share of \
plans or ring builds: 2 of this server's 3 (ringkeeperd --plan-concurrency, all but one per \
client address)"
rk_stop
finish
