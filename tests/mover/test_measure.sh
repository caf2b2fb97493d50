#!/usr/bin/env bash
# test_measure.sh — `ringkeeper measure` and `plan --load` on real data servers, once per store
# (memcached, redis): eight servers hold $KEYS keys of skewed sizes (Zipf-like, three hot keys of
# 900 KB) placed by a ring; the profile's bytes per server equal memcached's own `stats` bytes, and
# are within 2% of Redis's used_memory less its baseline, with values of 64 bytes too (each key
# charged its share of the key space's tables); a Redis sample of a quarter estimates
# their sum within 10% (the same sample every run: it is chosen by the keys' hashes), and of
# values alike within three times the standard error the profile states; the plan
# of a drain weighed by the profile predicts the bytes and keys that move within 5% of the keys'
# own sizes (metadump, MEMORY USAGE); measure reads a cluster's active version from a real
# ringkeeperd, and `--store` keeps the profile there, which the server's plan is then weighed by; a
# measure killed with -9 resumes from its checkpoint to the same profile; progress
# lines on a pipe are JSON; Redis's LFU counters (OBJECT FREQ) estimate the
# reads of 200 keys read 200 times each within 25%, and the share of them a drain moves (half)
# within 10%; keys a server will not weigh are counted, and past 1% fail the measure; bad input
# exits 2 naming what. Skips (77) when
# memcached or redis-server is not installed.
# usage: test_measure.sh RINGKEEPERD RINGKEEPER
set -u
# shellcheck source=migrate_lib.sh
. "$(dirname "$0")/migrate_lib.sh" "$1" "$2"
KEYS=${RK_MEASURE_KEYS:-16000}
rk_start
export RINGKEEPER_SERVER=$BASE

valid_json() { /usr/bin/python3 -c 'import json,sys;[json.loads(l) for l in sys.stdin]' <"$1"; }
# shellcheck disable=SC2046 # node_map's words are the arguments
data() { python3 "$HERE/measure_data.py" "$1" "$STORE" $(node_map); }

# per_server PROFILE FIELD: "NODE VALUE" per server of a profile
per_server() { jq_ "$1" "'\n'.join('%s %d' % (s['id'], s['$2']) for s in d['servers'])"; }

# server_bytes PROFILE LABEL: each server's bytes in the profile against the server's own count
# (memcached: stats bytes, and the keys' own sizes add up to it exactly; Redis: used_memory less
# its baseline, within 2%)
server_bytes() {
    local node got sampled base used
    per_server "$1" bytes_estimate >"$TMP/measured"
    per_server "$1" bytes_sampled >"$TMP/sampled"
    while read -r node got; do
        base=$(awk -v n="$node" '$1 == n { print $2 }' "$TMP/base")
        used=$(awk -v n="$node" '$1 == n { print $2 }' "$TMP/used")
        sampled=$(awk -v n="$node" '$1 == n { print $2 }' "$TMP/sampled")
        if [ "$STORE" = memcached ]; then
            check "$STORE, $2: $node's keys add up to its stats bytes" "$((used - base))" "$sampled"
        fi
        within "$STORE, $2: $node's bytes against the server's own" "$got" "$((used - base))" 2
        echo "$STORE $2 $node profile=$got sizes=$sampled server=$((used - base))"
    done <"$TMP/measured"
}

one_store() {
    STORE=$1
    data_servers "$STORE" 8
    local a
    for a in "${ADDR[@]}"; do # Redis counts reads (OBJECT FREQ) under an LFU policy, without decay here
        [ "$STORE" = redis ] && redis-cli -p "${a##*:}" CONFIG SET maxmemory-policy allkeys-lfu >/dev/null &&
            redis-cli -p "${a##*:}" CONFIG SET lfu-decay-time 0 >/dev/null
    done
    topo 8 >"$TMP/a.json"
    topo 7 >"$TMP/b.json" # n7 drained
    seq -f 'm-%g' 0 $((KEYS - 1)) >"$TMP/keys"
    "$RK" lookup --topology "$TMP/a.json" <"$TMP/keys" >"$TMP/own-a"
    "$RK" lookup --topology "$TMP/b.json" <"$TMP/keys" | cut -f2 | paste "$TMP/own-a" - >"$TMP/owners"
    data used >"$TMP/base"
    data fill <"$TMP/own-a"
    data used >"$TMP/used"

    "$RK" measure --topology "$TMP/a.json" --out "$TMP/p1.json" 2>"$TMP/progress"; rc=$?
    check "$STORE: measure exits 0" 0 $rc
    if valid_json "$TMP/progress"; then ok; else bad "$STORE: progress lines are not JSON"; fi
    check "$STORE: a last progress line per server" 8 "$(grep -c '"done":true' "$TMP/progress")"
    check "$STORE: every key sampled" "$KEYS" "$(jq_ "$TMP/p1.json" "sum(s['keys_sampled'] for s in d['servers'])")"
    check "$STORE: none misplaced" 0 "$(jq_ "$TMP/p1.json" "sum(s['misplaced_sampled'] for s in d['servers'])")"
    check "$STORE: sample rate 1" 1.0 "$(jq_ "$TMP/p1.json" "d['sample_rate']")"
    server_bytes "$TMP/p1.json" "every key"

    # killed (-9) after its first server, measure resumes from its checkpoint: the same profile
    local pid
    rm -f "$TMP/p9.json"
    "$RK" measure --topology "$TMP/a.json" --rate 4000 --out "$TMP/p9.json" 2>/dev/null &
    pid=$!
    for _ in $(seq 1 100); do [ -s "$TMP/p9.json.partial" ] && break; sleep 0.1; done
    kill -9 "$pid"; wait "$pid" 2>/dev/null
    check "$STORE: killed, a checkpoint and no profile" "yes no" \
        "$([ -s "$TMP/p9.json.partial" ] && echo yes || echo no) $([ -e "$TMP/p9.json" ] && echo yes || echo no)"
    "$RK" measure --topology "$TMP/a.json" --out "$TMP/p9.json" 2>"$TMP/resume.err"
    check "$STORE: the rerun exits 0" 0 $?
    has "$STORE: ... saying it resumes" "$TMP/resume.err" "resuming from $TMP/p9.json.partial"
    local whole='json.dumps([d["servers"], d["load"]], sort_keys=True)'
    check "$STORE: ... to the profile of one run" "$(jq_ "$TMP/p1.json" "$whole")" "$(jq_ "$TMP/p9.json" "$whole")"
    check "$STORE: ... and removes its checkpoint" no "$([ -e "$TMP/p9.json.partial" ] && echo yes || echo no)"

    if [ "$STORE" = redis ]; then # a sample of a quarter, the same every run
        "$RK" measure --topology "$TMP/a.json" --sample-rate 0.25 --out "$TMP/p4.json" 2>/dev/null
        check "$STORE: the quarter's rate" 0.25 "$(jq_ "$TMP/p4.json" "d['sample_rate']")"
        per_server "$TMP/p4.json" bytes_estimate | while read -r node est; do
            echo "$STORE a quarter $node estimate=$est whole=$(awk -v n="$node" '$1 == n { print $2 }' "$TMP/measured")"
        done
        local est total
        est=$(jq_ "$TMP/p4.json" "int(sum(s['bytes_estimate'] for s in d['servers']))")
        total=$(jq_ "$TMP/p1.json" "sum(s['bytes_sampled'] for s in d['servers'])")
        within "$STORE: a quarter's sizes estimate the whole's" "$est" "$total" 10
        check "$STORE: ... stating the error the sample implies" True "$(jq_ "$TMP/p4.json" "0 < d['bytes_error']")"
        echo "$STORE sample 0.25: the error it states $(jq_ "$TMP/p4.json" "int(d['bytes_error'])")"
        check "$STORE: ... and every key weighed, none" 0.0 "$(jq_ "$TMP/p1.json" "d['bytes_error']")"
        echo "$STORE sample 0.25: sizes estimate=$est whole=$total"
        "$RK" measure --topology "$TMP/a.json" --sample-rate 0.25 --out "$TMP/p5.json" 2>/dev/null
        check "$STORE: the same sample again" "$est" \
            "$(jq_ "$TMP/p5.json" "int(sum(s['bytes_estimate'] for s in d['servers']))")"
    fi

    # the plan of the drain, weighed: against the keys' own sizes
    data sizes <"$TMP/owners" >"$TMP/truth"
    local truth_bytes truth_keys
    truth_bytes=$(sed 's/.*moving_bytes=//' "$TMP/truth")
    truth_keys=$(sed 's/.*moving_keys=\([0-9]*\).*/\1/' "$TMP/truth")
    "$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/p1.json" -o json >"$TMP/plan.json"
    check "$STORE: plan --load exits 0" 0 $?
    within "$STORE: bytes the plan says move" "$(jq_ "$TMP/plan.json" "d['load']['moving_bytes']")" "$truth_bytes" 5
    within "$STORE: keys the plan says move" "$(jq_ "$TMP/plan.json" "d['load']['moving_keys']")" "$truth_keys" 5
    if [ "$STORE" = redis ]; then
        "$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/p4.json" -o json >"$TMP/plan4.json"
        echo "$STORE plan by a quarter: moving_bytes=$(jq_ "$TMP/plan4.json" "int(d['load']['moving_bytes'])") truth=$truth_bytes"
        within "$STORE: bytes a quarter's plan says move" "$(jq_ "$TMP/plan4.json" "d['load']['moving_bytes']")" "$truth_bytes" 15
    fi
    echo "$STORE plan: moving_bytes=$(jq_ "$TMP/plan.json" "int(d['load']['moving_bytes'])") truth=$truth_bytes keys=$(jq_ "$TMP/plan.json" "int(d['load']['moving_keys'])") truth=$truth_keys"
    within "$STORE: n7 loses what it held" \
        "$(jq_ "$TMP/plan.json" "[n for n in d['load']['nodes'] if n['id'] == 'n7'][0]['bytes_lost']")" \
        "$(awk '$1 == "n7" { print $2 }' "$TMP/measured")" 5
    "$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/p1.json" >"$TMP/plan.txt"
    has "$STORE: the table says what moves in bytes" "$TMP/plan.txt" "by bytes the most loaded node holds"

    if [ "$STORE" = redis ]; then # 200 keys read 200 times each, half of them moving
        awk '$2 != $3' "$TMP/owners" | head -100 | cut -f1,2 >"$TMP/hot"
        awk '$2 == $3' "$TMP/owners" | head -100 | cut -f1,2 >>"$TMP/hot"
        data read <"$TMP/hot"
        "$RK" measure --topology "$TMP/a.json" --out "$TMP/p7.json" 2>/dev/null
        "$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/p7.json" -o json >"$TMP/plan7.json"
        local reads share
        reads=$(jq_ "$TMP/p7.json" "int(sum(s['requests_estimate'] for s in d['servers']))")
        share=$(jq_ "$TMP/plan7.json" "d['load']['moving_requests'] / d['load']['requests']")
        echo "$STORE reads: estimate=$reads truth=40000 moving share=$share truth=0.5"
        check "$STORE: every key's reads counted" 16000 "$(jq_ "$TMP/p7.json" "sum(s['keys_counted'] for s in d['servers'])")"
        within "$STORE: the reads the LFU counters estimate" "$reads" 40000 25
        within "$STORE: the share of reads that change owner" "$share" 0.5 10
        "$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/p7.json" >"$TMP/plan7.txt"
        has "$STORE: the table says what share of reads changes owner" "$TMP/plan7.txt" "change owner; by reads"
        grep "change owner" "$TMP/plan7.txt"
    else
        check "$STORE: no reads counted, no requests figures" False "$(jq_ "$TMP/plan.json" "'requests' in d['load']")"
    fi

    # from the server: the active version
    C=/v1/clusters/measure-$STORE
    check "$STORE: publish and activate" 201 "$(req POST "$C/versions?activate=true" --data-binary @"$TMP/a.json")"
    "$RK" measure -c "measure-$STORE" --out "$TMP/p2.json" 2>/dev/null
    check "$STORE: measure -c exits 0" 0 $?
    check "$STORE: the profile names its cluster and version" "measure-$STORE 1" \
        "$(jq_ "$TMP/p2.json" "d['cluster'] + ' ' + str(d['version'])")"
    "$RK" plan -c "measure-$STORE" --to-file "$TMP/b.json" --load "$TMP/p2.json" -o json >"$TMP/plan2.json"
    check "$STORE: the server's version weighed the same" "$(jq_ "$TMP/plan.json" "int(d['load']['moving_bytes'])")" \
        "$(jq_ "$TMP/plan2.json" "int(d['load']['moving_bytes'])")"
    check "$STORE: the profile's age is shown" True "$(jq_ "$TMP/plan2.json" "0 <= d['load']['profile']['age_s'] < 600")"

    # stored with the cluster: the server's own plan is weighed by it, as the CLI's was
    "$RK" measure -c "measure-$STORE" --store >"$TMP/stored.out" 2>"$TMP/stored.err"
    check "$STORE: measure --store exits 0, printing nothing" "0 0" "$? $(wc -c <"$TMP/stored.out")"
    has "$STORE: ... saying where it went" "$TMP/stored.err" "stored as the load profile of cluster measure-$STORE"
    check "$STORE: publish the drain" 201 "$(req POST "$C/versions" --data-binary @"$TMP/b.json")"
    check "$STORE: the server's plan: 200" 200 "$(req GET "$C/plan?from=1&to=2&arcs=false")"
    check "$STORE: ... weighed as the CLI's" "$(jq_ "$TMP/plan2.json" "int(d['load']['moving_bytes'])")" \
        "$(jq_ "$TMP/body" "int(d['load']['moving_bytes'])")"
    "$RK" plan -c "measure-$STORE" --from 1 --to 2 >"$TMP/plan-remote.txt"
    has "$STORE: ... and its table, which plan -c prints" "$TMP/plan-remote.txt" "by bytes the most loaded node holds"
}

one_store memcached
one_store redis

# values of 64 bytes: a Redis key's share of the key space's tables (its bucket, its entry as the
# allocator rounds it), which MEMORY USAGE leaves out, is an eighth of its memory; counted, the
# profile still comes within 2% of used_memory
for a in "${ADDR[@]}"; do redis-cli -p "${a##*:}" FLUSHALL >/dev/null; done
data used >"$TMP/base"
RK_MEASURE_SIZE=64 data fill <"$TMP/own-a"
data used >"$TMP/used"
"$RK" measure --topology "$TMP/a.json" --out "$TMP/p8.json" 2>/dev/null
check "redis, small values: measure exits 0" 0 $?
server_bytes "$TMP/p8.json" "values of 64 bytes"
# a quarter of them: the sum within three times the standard error the profile states (keys of
# like sizes; a sample that misses a few giant keys cannot see them, LOAD.md)
"$RK" measure --topology "$TMP/a.json" --sample-rate 0.25 --out "$TMP/p11.json" 2>/dev/null
check "redis, small values, a quarter: within three times its stated error" True \
    "$(/usr/bin/python3 -c 'import json,sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); s = lambda d: sum(x["bytes_estimate"] for x in d["servers"]); print(0 < a["bytes_error"] and abs(s(a) - s(b)) <= 3 * a["bytes_error"])' "$TMP/p11.json" "$TMP/p8.json")"
# a server that will not say its tables' size (MEMORY STATS denied) charges its keys nothing more
for a in "${ADDR[@]}"; do redis-cli -p "${a##*:}" ACL SETUSER default '-memory|stats' >/dev/null; done
"$RK" measure --topology "$TMP/a.json" --out "$TMP/p10.json" 2>/dev/null
check "redis, MEMORY STATS denied: measure exits 0" 0 $?
check "... its keys weighed by MEMORY USAGE alone" "$(data sizes <"$TMP/owners" | sed 's/.* bytes=\([0-9]*\).*/\1/')" \
    "$(jq_ "$TMP/p10.json" "sum(s['bytes_sampled'] for s in d['servers'])")"
for a in "${ADDR[@]}"; do redis-cli -p "${a##*:}" ACL SETUSER default '+memory|stats' >/dev/null; done

# keys a Redis will not weigh (its ACL denies MEMORY USAGE of them) are counted, and past 1% of a
# server's sample the measure fails, naming the server and the server's answer
acl() { local a; for a in "${ADDR[@]}"; do redis-cli -p "${a##*:}" ACL SETUSER default resetkeys "$@" >/dev/null; done; }
acl '~m-[0-8]*' '~m-9[0-8]*' '~m-99[0-8]*' '~m-999?*' # m-9, m-99 and m-999 denied
"$RK" measure --topology "$TMP/a.json" --out "$TMP/p6.json" 2>/dev/null; check "three keys unweighed: exits 0" 0 $?
check "... and counted" 3 "$(jq_ "$TMP/p6.json" "sum(s['keys_failed'] for s in d['servers'])")"
acl '~m-1*'
"$RK" measure --topology "$TMP/a.json" >/dev/null 2>"$TMP/e6"; check "most keys unweighed: exits 1" 1 $?
has "... saying how many could not be weighed" "$TMP/e6" "could not be weighed"
has "... with the server's answer" "$TMP/e6" "NOPERM"
acl '~*'

# bad input: exit 2, naming what
"$RK" measure --topology "$TMP/a.json" --bins 3 2>"$TMP/e1"; check "--bins 3 exits 2" 2 $?
has "... naming the power of two" "$TMP/e1" "power of two"
sed 's/,"data":"redis"//' "$TMP/a.json" >"$TMP/nodata.json"
"$RK" measure --topology "$TMP/nodata.json" 2>"$TMP/e2"; check "no data servers: exits 2" 2 $?
has "... saying there is nothing to measure" "$TMP/e2" "nothing to measure"
sed 's/xxh3_64/fnv1a_64/' "$TMP/p1.json" >"$TMP/other-hash.json"
"$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/other-hash.json" 2>"$TMP/e3"
check "a profile of another hash: exits 2" 2 $?
has "... naming both hashes" "$TMP/e3" "hash fnv1a_64"
echo '{"load": {"bits": 64, "bins": 3}}' >"$TMP/bad-load.json"
"$RK" plan --from-file "$TMP/a.json" --to-file "$TMP/b.json" --load "$TMP/bad-load.json" 2>"$TMP/e4"
check "a load of 3 bins: exits 2" 2 $?
has "... naming bins" "$TMP/e4" "bins"
kill "${RKM_PIDS[-1]}"; wait "${RKM_PIDS[-1]}" 2>/dev/null
"$RK" measure --topology "$TMP/a.json" >/dev/null 2>"$TMP/e5"; check "a server down: exits 4" 4 $?
has "... naming it" "$TMP/e5" "${ADDR[7]}"
finish
