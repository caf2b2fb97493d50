#!/usr/bin/env bash
# test_plan_limits.sh — what one plan may cost: --max-plan-arcs and --max-plan-rows answer 422 with
# the way to a smaller plan, and past --plan-concurrency plans at once the next gets 503.
# usage: test_plan_limits.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
J='Content-Type: application/json'

# publish CLUSTER FILE: version published, 201
publish() {
    check "publish $2 to $1" 201 "$(req POST "/v1/clusters/$1/versions" -H "$J" --data-binary @"$2")"
}

# v1 and v2 share no node: most cuts of either ring start an arc (2224 arcs).
# v3 is v1 and one more node: 149 arcs in 8 transfers.
# v4 and v5 share no node either, but have 1600 points: few enough to be counted whole (about 1400).
topo 8 160 xxh3_64 >"$TMP/v1"
topo 8 160 xxh3_64 | sed 's/"id":"n/"id":"m/g' >"$TMP/v2"
topo 9 160 xxh3_64 >"$TMP/v3"
topo 5 160 xxh3_64 >"$TMP/v4"
topo 5 160 xxh3_64 | sed 's/"id":"n/"id":"m/g' >"$TMP/v5"
rk_start --max-plan-arcs 1000 --max-plan-rows 120
for v in v1 v2 v3; do publish c "$TMP/$v"; done
for v in v4 v5; do publish d "$TMP/$v"; done

# Cold, the refusal comes from the topologies, before either ring is built: the arcs in a prefix of
# the hash space alone pass the limit (a 100000-node pair took 1.8 s to refuse after two builds).
check "unrelated: over --max-plan-arcs" 422 "$(req GET '/v1/clusters/c/plan?from=1&to=2&arcs=false')"
has "arcs: code" "$TMP/body" '"code":"plan_too_large"'
has "arcs: counted before the rings" "$TMP/body" 'the plan has more than 1000 arcs in the first 78.1% of the hash space alone'
has "arcs: the limit" "$TMP/body" 'over the limit of 1000 of this server (ringkeeperd --max-plan-arcs)'
has "arcs: the way out" "$TMP/body" 'compute it offline: ringkeeper plan --from-file A.json --to-file B.json'
check "arcs: as text too" 422 "$(req GET '/v1/clusters/c/plan?from=1&to=2&format=text')"
check "fewer points: over --max-plan-arcs" 422 "$(req GET '/v1/clusters/d/plan?from=1&to=2&arcs=false')"
has "fewer points: counted whole" "$TMP/body" 'arcs, over the limit of 1000 of this server (ringkeeperd --max-plan-arcs)'

check "one node added: under the arc limit" 200 "$(req GET '/v1/clusters/c/plan?from=1&to=3&arcs=false')"
rows=$(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); t = d["transfers"]; print(sum(x["arcs"] for x in t) + len(t) + len(d["nodes"]))' "$TMP/body")
check "one node added: between the row and arc limits" 1 "$((rows > 120 && rows <= 1000))"
check "with its arcs: over --max-plan-rows" 422 "$(req GET '/v1/clusters/c/plan?from=1&to=3')"
has "rows: the limit" "$TMP/body" "the plan has $rows rows to render, over this server's limit of 120 (ringkeeperd --max-plan-rows)"
has "rows: arcs=false" "$TMP/body" 'ask for less (arcs=false, format=text)'
check "small steps: over --max-plan-rows" 422 "$(req GET '/v1/clusters/c/plan?from=1&to=3&arcs=false&max_step=0.0001')"
has "rows: a larger max_step" "$TMP/body" 'ask for less (a larger max_step, no max_step)'
check "the table of larger steps fits" 200 "$(req GET '/v1/clusters/c/plan?from=1&to=3&format=text&max_step=0.05')"

# Each node is a row too, the costliest in JSON (a 100000-node version to itself, which the console
# asks for its shares, rendered 18.5 MB and peaked at 276 MB). 100 nodes fit in 120 rows, 150 not.
topo 100 1 >"$TMP/w1"
topo 150 1 >"$TMP/w2"
publish w100 "$TMP/w1"
publish w150 "$TMP/w2"
check "100 nodes to themselves fit" 200 "$(req GET '/v1/clusters/w100/plan?from=1&to=1&arcs=false')"
check "150 nodes to themselves: over --max-plan-rows" 422 "$(req GET '/v1/clusters/w150/plan?from=1&to=1&arcs=false')"
has "nodes: the count" "$TMP/body" "the plan has 150 rows to render, over this server's limit of 120 (ringkeeperd --max-plan-rows)"
has "nodes: the way out" "$TMP/body" 'ask for less (its nodes alone are as many: nodes=false, format=svg) or compute it offline'
check "nodes: as text too" 422 "$(req GET '/v1/clusters/w150/plan?from=1&to=1&format=text')"
check "nodes: the SVG lists none" 200 "$(req GET '/v1/clusters/w150/plan?from=1&to=1&format=svg')"
# The summary lists no node (the console's first screen): not refused for their number, and its
# balance and warnings still cover them all
check "nodes: the summary lists none" 200 "$(req GET '/v1/clusters/w150/plan?from=1&to=1&arcs=false&nodes=false')"
python3 - "$TMP/body" <<'PY' && ok || bad "the summary: no nodes, the rest there"
import json, sys
d = json.load(open(sys.argv[1]))
assert "nodes" not in d and "arcs" not in d, d.keys()
assert d["moved_fraction"] == 0 and d["balance"]["after"]["max"] >= 1 and d["transfers"] == [] and d["digest"], d
PY
check "the summary's flag is true or false" 400 "$(req GET '/v1/clusters/w150/plan?from=1&to=1&nodes=no')"
has "the summary's flag named" "$TMP/body" '"field":"nodes"'
# Two versions sharing no id list both: 200 node rows, counted from the topologies before either
# ring is built (a 100000-node pair took 3.2 s to refuse after both builds and the plan).
topo 100 1 | sed 's/"id":"n/"id":"m/g' >"$TMP/w3"
publish w100 "$TMP/w3"
check "unrelated 100-node versions: over --max-plan-rows" 422 "$(req GET '/v1/clusters/w100/plan?from=1&to=2&arcs=false')"
has "union: the count" "$TMP/body" "the plan has 200 rows to render, over this server's limit of 120 (ringkeeperd --max-plan-rows)"
has "union: the way out" "$TMP/body" 'ask for less (its nodes alone are as many: nodes=false, format=svg) or compute it offline'
check "union: the SVG lists none" 200 "$(req GET '/v1/clusters/w100/plan?from=1&to=2&format=svg')"
rk_stop

# Plans between two unrelated 1500-node versions take a good part of a second each; six at once with
# --plan-concurrency 1: some are refused at once, the rest answer, and /healthz is not held up.
topo 1500 40 >"$TMP/b1"
topo 1500 40 | sed 's/"id":"n/"id":"m/g' >"$TMP/b2"
rk_start --plan-concurrency 1
publish big "$TMP/b1"
publish big "$TMP/b2"
plans=()
for i in 1 2 3 4 5 6; do
    curl -s -o "$TMP/p$i" -D "$TMP/h$i" -w '%{http_code}\n' --max-time 60 \
        "$BASE/v1/clusters/big/plan?from=1&to=2&arcs=false" >"$TMP/status$i" &
    plans+=($!)
done
sleep 0.2
health=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 10 "$BASE/healthz")
wait "${plans[@]}"
statuses=$(cat "$TMP"/status* | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
case "$statuses" in
*200:*503:*) ok ;;
*) bad "six plans at once, one allowed: want some 200 and some 503, got $statuses" ;;
esac
refused=$(grep -l '"code":"unavailable"' "$TMP"/p* | head -1)
has "503: says which limit" "${refused:-/dev/null}" 'this server'"'"'s limit (ringkeeperd --plan-concurrency); retry in a few seconds'
has "503: says when to retry" "$TMP/h${refused##*/p}" $'Retry-After: 2\r'
check "healthz during plans" 1 "$(awk -v h="$health" 'BEGIN { split(h, f, " "); print (f[1] == 200 && f[2] < 1) ? 1 : 0 }')"
check "a plan after the others" 200 "$(req GET '/v1/clusters/big/plan?from=1&to=2&arcs=false')"
rk_stop
finish
