#!/usr/bin/env bash
# test_suggest.sh — `ringkeeper suggest` end to end, once per store (memcached, redis): a real
# ringkeeperd, eight data servers holding $KEYS keys of skewed sizes (Zipf-like, three hot keys of
# 900 KB; tests/mover/measure_data.py) placed by an 8-node ring of equal weights. measure --store
# keeps the profile with the cluster; suggest --publish (a 10% budget) publishes weights as a
# staged version whose byte imbalance (max over mean) it says is at most 1.10; the server's plan
# to it, weighed by the stored profile, predicts the bytes that move within 5% of what `migrate
# run` then copies; measuring again after the move (its sources deleted once verified) finds every
# server within 1.10 of the mean. A hot key that alone outweighs a node's fair share is named,
# and bad input exits 2 naming what. Skips (77) when memcached or redis-server is not installed.
# With RK_SUGGEST_SHOT=FILE, the console's plan to the suggestion (Redis) is kept in FILE, as
# docs/LOAD.md shows it (tests/console/shot_view.js: node and chromium).
# usage: test_suggest.sh RINGKEEPERD RINGKEEPER
set -u
# shellcheck source=migrate_lib.sh
. "$(dirname "$0")/migrate_lib.sh" "$1" "$2"
KEYS=${RK_SUGGEST_KEYS:-16000}
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
export RINGKEEPER_SERVER=$BASE RINGKEEPER_TOKEN=$OPS

# shellcheck disable=SC2046 # node_map's words are the arguments
data() { /usr/bin/python3 "$HERE/measure_data.py" "$1" "$STORE" $(node_map); }
# imbalance PROFILE: the largest server's bytes over the mean
imbalance() { jq_ "$1" "'%.4f' % (max(b) / (sum(b) / len(b))) if (b := [s['bytes_estimate'] for s in d['servers']]) else 0"; }
at_most() { if /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "$2" "$3"; then ok; else bad "$1: $2 > $3"; fi; }

one_store() {
    STORE=$1
    C=/v1/clusters/$STORE
    data_servers "$STORE" 8
    topo 8 >"$TMP/a.json"
    check "$STORE: v1" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/a.json")"
    check "$STORE: a migration window" 200 "$(as PUT "$C/policy" --data-binary '{"migration_window":true}')"
    seq -f 'm-%g' 0 $((KEYS - 1)) | "$RK" lookup --topology "$TMP/a.json" >"$TMP/own"
    data fill <"$TMP/own"
    "$RK" measure -c "$STORE" --store --out "$TMP/p1.json" 2>/dev/null
    check "$STORE: measure --store" 0 $?
    local before; before=$(imbalance "$TMP/p1.json")

    "$RK" suggest -c "$STORE" --publish -o json >"$TMP/s.json" 2>"$TMP/s.err"
    check "$STORE: suggest --publish exits 0" 0 $?
    cat "$TMP/s.err"
    check "$STORE: published as v2" 2 "$(jq_ "$TMP/s.json" "d['version']")"
    local after moved
    after=$(jq_ "$TMP/s.json" "d['imbalance_after']"); moved=$(jq_ "$TMP/s.json" "d['moved']")
    echo "$STORE suggest: imbalance $(jq_ "$TMP/s.json" "d['imbalance_before']") (servers $before) -> $after, moved $moved, $(jq_ "$TMP/s.json" "d['rounds']") units, stopped $(jq_ "$TMP/s.json" "d['stopped']")"
    at_most "$STORE: the suggestion's imbalance" "$after" 1.10
    at_most "$STORE: ... moving at most a tenth of the bytes" "$moved" 0.10
    check "$STORE: v2 is staged" staged "$(req GET "$C/versions/2" >/dev/null; jq_ "$TMP/body" "d['state']")"
    "$RK" suggest -c "$STORE" >"$TMP/s.txt"
    has "$STORE: the table says what it does" "$TMP/s.txt" "the most loaded node holds"
    has "$STORE: ... and by which profile, how old" "$TMP/s.txt" "by the load profile measured $(jq_ "$TMP/p1.json" "d['measured_at']") (0.0 h ago)"
    cat "$TMP/s.txt"

    # the server's plan to v2, weighed by the stored profile, against what the move copies
    check "$STORE: the plan v1 -> v2" 200 "$(req GET "$C/plan?from=1&to=2&arcs=false")"
    local predicted; predicted=$(jq_ "$TMP/body" "int(d['load']['moving_bytes'])")
    if [ "$STORE" = redis ] && [ -n "${RK_SUGGEST_SHOT:-}" ]; then # docs/LOAD.md's picture
        node "$HERE/../console/shot_view.js" "$BASE" "#/c/redis/plan?from=1&to=2" "$RK_SUGGEST_SHOT"
    fi
    # rollouts by load: three steps to v2, each weighed by the profile (the CLI's, the server's)
    "$RK" rollout -c "$STORE" --to 2 --steps 3 --load "$TMP/p1.json" -o json >"$TMP/r.json"
    check "$STORE: rollout --load exits 0" 0 $?
    check "$STORE: ... every step weighed, their sum the rollout's" True \
        "$(jq_ "$TMP/r.json" "abs(sum(s['load']['moving_bytes'] for s in d['steps']) - d['load']['moving_bytes']) < 1 and len(d['steps']) == 3")"
    at_most "$STORE: ... the steps move at least what one shot does" "$(jq_ "$TMP/r.json" "0.95 * $predicted")" \
        "$(jq_ "$TMP/r.json" "d['load']['moving_bytes']")"
    "$RK" rollout -c "$STORE" --to 2 --steps 3 --load "$TMP/p1.json" >"$TMP/r.txt"
    has "$STORE: ... the table says the bytes" "$TMP/r.txt" "by the load profile:"
    cat "$TMP/r.txt"
    jq_ "$TMP/s.json" "json.dumps({'target': d['topology'], 'steps': 3})" >"$TMP/ro.json"
    check "$STORE: the server's review" 201 "$(as POST "$C/rollouts" --data-binary @"$TMP/ro.json")"
    check "$STORE: ... weighed by the stored profile as the CLI's" \
        "$(jq_ "$TMP/r.json" "[int(s['load']['moving_bytes']) for s in d['steps']]")" \
        "$(jq_ "$TMP/body" "[int(s['load']['moving_bytes']) for s in d['steps']] if 'moving_bytes' in d['load'] else None")"
    check "$STORE: activate v2, a window opens" 200 "$(as POST "$C/versions/2/activate")"
    "$RK" migrate run --cluster "$STORE" --delete-source --finish -o json >"$TMP/j" 2>"$TMP/e"
    check "$STORE: the move finishes" 0 $?
    local copied; copied=$(job_field 'd["counters"]["bytes"]')
    echo "$STORE move: predicted $predicted bytes, copied $copied"
    within "$STORE: the plan's bytes against what migrate run copied" "$predicted" "$copied" 5

    # measured again: the fleet as the suggestion said
    "$RK" measure -c "$STORE" --out "$TMP/p2.json" 2>/dev/null
    check "$STORE: measure after the move" 0 $?
    check "$STORE: ... no key on a server the ring does not place it on" 0 \
        "$(jq_ "$TMP/p2.json" "sum(s['misplaced_sampled'] for s in d['servers'])")"
    echo "$STORE measured: imbalance $before -> $(imbalance "$TMP/p2.json")"
    at_most "$STORE: measured again, the servers' imbalance" "$(imbalance "$TMP/p2.json")" 1.10
}

one_store memcached
one_store redis

# a key that alone outweighs a node's fair share: named, since no weight moves it off its node
for a in "${ADDR[@]}"; do redis-cli -p "${a##*:}" FLUSHALL >/dev/null; done
RK_MEASURE_SIZE=64 RK_MEASURE_HOT=2000000 data fill <"$TMP/own"
"$RK" measure --topology "$TMP/a.json" --out "$TMP/p3.json" 2>/dev/null
"$RK" suggest --topology "$TMP/a.json" --load "$TMP/p3.json" -o json >"$TMP/hot.json"
check "a hot key: suggest exits 0" 0 $?
check "... naming the hot keys, each alone over its node's fair share" True \
    "$(jq_ "$TMP/hot.json" "len(d['hot_keys']) >= 1 and all(k['key'] in ('m-0', 'm-1', 'm-2') and k['bytes'] > k['fair_share'] for k in d['hot_keys'])")"
"$RK" suggest --topology "$TMP/a.json" --load "$TMP/p3.json" >"$TMP/hot.txt"
has "... in the table" "$TMP/hot.txt" "weights cannot fix: key m-"
grep "weights cannot fix" "$TMP/hot.txt"

# bad input, and nothing published
"$RK" suggest -c redis --max-moved 0 >/dev/null 2>"$TMP/bad"
check "--max-moved 0: exits 2" 2 $?
"$RK" suggest -c redis --target 0.5 >/dev/null 2>"$TMP/bad"
check "--target 0.5: exits 2" 2 $?
has "... naming it" "$TMP/bad" "--target: must be a number from 1"
"$RK" suggest --topology "$TMP/a.json" >/dev/null 2>"$TMP/bad"
check "--topology without --load: exits 2" 2 $?
check "nothing published" 2 "$(req GET "/v1/clusters/redis/versions?limit=1" >/dev/null; jq_ "$TMP/body" "d['versions'][0]['version']")"
finish
