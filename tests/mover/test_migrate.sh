#!/usr/bin/env bash
# test_migrate.sh — `ringkeeper migrate` end to end, once per store (memcached, redis): a real
# ringkeeperd (a token file), four data servers, a cluster growing from three nodes to four in a
# migration window, 3000 keys placed by the old ring. A worker killed mid-run resumes and every
# moving key arrives; a second worker is refused while the first holds the lease; kill -9 of
# ringkeeperd keeps every report it answered; a pause stops
# the worker cleanly, a throttle change is seen; run --finish ends the job finished and closes the
# window; a cancel leaves every key in place; a stepped job (--max-step) still copies everything;
# a window job with delete_source deletes each verified key from its old owner and keeps one a
# client wrote on its new owner (a mismatch: the job fails); a before_cutover job pre-warms a
# staged version while a live writer changes keys on the sources, and its catch-up leaves every
# moving key's latest value on its new owner (the staleness after it is measured and printed);
# a data server that is down pauses the job with an error naming the node. -o json lines are JSON.
# Skips (77) when memcached or redis-server is not installed.
# usage: test_migrate.sh RINGKEEPERD RINGKEEPER
set -u
# shellcheck source=migrate_lib.sh
. "$(dirname "$0")/migrate_lib.sh" "$1" "$2"
KEYS=${RK_MIGRATE_KEYS:-3000}
SLOW=200 # keys/s of the runs that are killed or paused: a few seconds of copying
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
export RINGKEEPER_SERVER=$BASE RINGKEEPER_TOKEN=$OPS

valid_json() { /usr/bin/python3 -c 'import json,sys;[json.loads(l) for l in sys.stdin]' <"$1"; }

# topo STORE N: nodes n0..n(N-1) on the store's servers
topo_of() {
    local store=$1 n=$2 nodes= i addr
    for i in $(seq 0 $((n - 1))); do
        addr=${ADDR[$i]}
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"$addr\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":100,"data":"%s","nodes":[%s]}' "$store" "$nodes"
}


# check_keys NAME: every key on its old owner and every moving one on its new owner
check_keys() {
    # shellcheck disable=SC2046
    local got; got=$(python3 "$HERE/migrate_keys.py" check "$STORE" $(node_map) <"$TMP/owners")
    local moving=${got#moving=}; moving=${moving%% *}
    check "$1: every key in place, every moving key moved" \
        "moving=$moving on_old=$KEYS on_new=$moving" "$got"
    MOVING=$moving
}


# keys STORE-COMMAND [PREFIX]: migrate_keys.py over the four servers, the owners file on stdin
# shellcheck disable=SC2046 # node_map's words are the arguments
keys() { PREFIX=${2:-v-} python3 "$HERE/migrate_keys.py" "$1" "$STORE" $(node_map); }

# wait_for FILE TEXT: until FILE has a line with TEXT (20 s at most)
wait_for() {
    for _ in $(seq 1 200); do
        grep -qF "$2" "$1" && return 0
        sleep 0.1
    done
    return 1
}

now_ms() { date +%s%3N; }

# delete_source: a window v3 -> v4 whose verify deletes every matched key from its old owner; a
# key a client wrote on its new owner is a mismatch, and stays on its old owner too
delete_source() {
    local rc moving
    check "$STORE: v4 opens a window" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t4")"
    owners "$TMP/t3" "$TMP/t4"
    awk -F'\t' '$2 != $3 { print $1 "\t" $3; exit }' "$TMP/owners" >"$TMP/contested"
    keys fill c- <"$TMP/contested" # a client's write to the new owner, during the window
    local key; key=$(cut -f1 "$TMP/contested")
    "$RK" migrate run "${M[@]}" --delete-source --finish -o json >"$TMP/j6" 2>"$TMP/e9"; rc=$?
    check "$STORE: delete_source: the job fails on the contested key" 1 $rc
    has "$STORE: ... saying so" "$TMP/e9" "ended failed"
    if valid_json "$TMP/j6"; then ok; else bad "$STORE: j6 is not JSON lines"; fi
    check "$STORE: ... the job says delete_source" True "$(job_field 'd["delete_source"]')"
    check "$STORE: ... one mismatch" 1 "$(job_field 'd["verify"]["mismatches"]')"
    check "$STORE: ... the contested key, by value" "$key value" \
        "$(job_field 'd["mismatch_keys"][0]["key"]+" "+d["mismatch_keys"][0]["reason"]')"
    local got; got=$(keys check <"$TMP/owners")
    moving=${got#moving=}; moving=${moving%% *}
    check "$STORE: every matched key left its old owner, the contested one stayed" \
        "moving=$moving on_old=$((KEYS - moving + 1)) on_new=$((moving - 1))" "$got"
    check "$STORE: ... counted deleted" $((moving - 1)) "$(job_field 'd["verify"]["counters"]["deleted"]')"
    check "$STORE: ... the contested key on both" "moving=1 same=0 on_old=1" \
        "$(awk -F'\t' -v k="$key" '$1 == k' "$TMP/owners" | keys same)"
    "$RK" migration finish "${M[@]}" >/dev/null 2>"$TMP/e11"; rc=$?
    check "$STORE: the failed job's window does not close" 2 $rc
    "$RK" migration finish "${M[@]}" --force "the contested key is the client's" --comment seen \
        -o json >"$TMP/f.json" 2>"$TMP/e11"; rc=$?
    check "$STORE: ... but closes by force (migration finish --force)" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e11"
    check "$STORE: ... and the ring names no previous version" None "$(jq_ "$TMP/f.json" 'd["previous"]')"
}

# before_cutover: v1 active, v2 staged; a pre-warm copies while a writer changes keys on the
# sources; its catch-up leaves each moving key's latest value on its new owner, the sources as
# they were; writes after the catch-up are not on the new owners at the switch (measured)
prewarm() {
    local C=/v1/clusters/${STORE}pre rc t0 t1 t2
    local P=(--cluster "${STORE}pre")
    keys flush </dev/null
    check "$STORE pre-warm: v1" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
    check "$STORE pre-warm: v2 staged" 201 "$(as POST "$C/versions" --data-binary @"$TMP/t4")"
    owners "$TMP/t3" "$TMP/t4"
    keys fill <"$TMP/owners"
    : >"$TMP/j7" # emptied before the start: the job's redirect may come too late
    "$RK" migrate run "${P[@]}" --before-cutover --to 2 --keys-per-s $SLOW --batch 50 -o json \
        >"$TMP/j7" 2>"$TMP/e10" &
    local w=$!
    wait_for "$TMP/j7" '"phase":"copy","node":"n1"' || bad "$STORE: the pre-warm never reached n1: $(cat "$TMP/e10")"
    # the live writer: every moving key of n0 (copied already) and of n2 (not yet) changes
    awk -F'\t' '$2 != $3 && ($2 == "n0" || $2 == "n2") { print $1 "\t" $2 }' "$TMP/owners" >"$TMP/written"
    keys fill w- <"$TMP/written"
    local n0; n0=$(grep -c $'\tn0$' "$TMP/written")
    wait_for "$TMP/j7" '"phase":"verify"' || bad "$STORE: the pre-warm never verified: $(cat "$TMP/e10")"
    t0=$(now_ms)
    wait $w; rc=$?
    t1=$(now_ms)
    check "$STORE pre-warm: verified" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e10"
    has "$STORE pre-warm: ... the last line says verified" "$TMP/j7" '"state":"verified"'
    if valid_json "$TMP/j7"; then ok; else bad "$STORE: j7 is not JSON lines"; fi
    check "$STORE pre-warm: no mismatch" 0 "$(job_field 'd["verify"]["mismatches"]')"
    local updated; updated=$(job_field 'd["verify"]["counters"]["updated"]')
    if [ "$n0" -gt 0 ] && [ "$updated" -ge "$n0" ]; then ok; else bad "$STORE: the catch-up updated $updated keys, n0's $n0 changed after their copy"; fi
    local got; got=$(keys same <"$TMP/owners")
    local moving=${got#moving=}; moving=${moving%% *}
    check "$STORE pre-warm: every moving key's latest value on its new owner, every key on its old" \
        "moving=$moving same=$moving on_old=$KEYS" "$got"
    local c; c=$(wc -l <"$TMP/written")
    check "$STORE pre-warm: the writer's values on the sources and the new owners" \
        "moving=$c on_old=$c on_new=$c" \
        "$(awk -F'\t' 'NR == FNR { w[$1]; next } $1 in w' "$TMP/written" "$TMP/owners" | keys check w-)"
    # writes after the catch-up passed their keys, before the switch: not on the new owners
    awk -F'\t' '$2 != $3 { print $1 "\t" $2 }' "$TMP/owners" | head -10 >"$TMP/late"
    keys fill x- <"$TMP/late"
    check "$STORE pre-warm: activate v2" 200 "$(as POST "$C/versions/2/activate")"
    t2=$(now_ms)
    check "$STORE pre-warm: the 10 late writes are stale on the new owners" "same=$((moving - 10))" \
        "$(keys same <"$TMP/owners" | cut -d' ' -f2)"
    echo "NOTE: $STORE pre-warm: the catch-up (verify) of $moving moving keys at $SLOW keys/s took" \
        "$(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100)) s; a write to a source after it passed its key," \
        "up to the cutover $((t2 - t1)) ms after the job ended, is stale on the new owner"
}

run_store() {
    STORE=$1
    CL=$STORE
    C=/v1/clusters/$CL
    local rc
    data_servers "$STORE"
    topo_of "$STORE" 3 >"$TMP/t3"
    topo_of "$STORE" 4 >"$TMP/t4"
    check "$STORE: v1" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
    check "$STORE: policy" 200 "$(as PUT "$C/policy" --data-binary '{"migration_window":true}')"
    check "$STORE: v2 opens a window" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t4")"
    owners "$TMP/t3" "$TMP/t4"
    # shellcheck disable=SC2046
    python3 "$HERE/migrate_keys.py" fill "$STORE" $(node_map) <"$TMP/owners"
    M=(--cluster "$CL")

    # a worker killed after two reports; another worker refused while its lease runs
    : >"$TMP/j1" # emptied before the start: the job's redirect may come too late
    "$RK" migrate run "${M[@]}" --worker w1 --keys-per-s $SLOW --batch 100 -o json >"$TMP/j1" 2>"$TMP/e1" &
    local w=$!
    wait_lines "$TMP/j1" 2 || bad "$STORE: the first worker reported nothing: $(cat "$TMP/e1")"
    kill -9 $w; wait $w 2>/dev/null
    "$RK" migrate run "${M[@]}" --worker w2 --no-wait >"$TMP/o2" 2>"$TMP/e2"; rc=$?
    check "$STORE: a second worker is refused (--no-wait)" 2 $rc
    has "$STORE: ... saying who holds the lease" "$TMP/e2" "is being run by worker w1"

    # kill -9 of ringkeeperd loses no report it answered: the last line the killed worker printed
    # (printed once its report was answered) is in the job after a restart on the same database
    local node acked
    node=$(tail -1 "$TMP/j1" | jq_ /dev/stdin 'd["node"]')
    acked=$(tail -1 "$TMP/j1" | jq_ /dev/stdin 'd["copied"]+d["present"]')
    kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=
    rk_start --token-file "$TMP/tokens"
    export RINGKEEPER_SERVER=$BASE
    local kept
    kept=$(job_field '[s["counters"]["copied"]+s["counters"]["present"] for s in d["sources"] if s["node"]=="'"$node"'"][0]')
    if [ "$kept" -ge "$acked" ]; then ok; else
        bad "$STORE: after kill -9 of ringkeeperd, $node has $kept keys of the $acked acknowledged"; fi

    # the same worker resumes; a throttle change is seen; a pause stops it cleanly
    : >"$TMP/j2" # emptied before the start: the job's redirect may come too late
    "$RK" migrate run "${M[@]}" --worker w1 --batch 100 -o json >"$TMP/j2" 2>"$TMP/e3" &
    w=$!
    wait_lines "$TMP/j2" 1 || bad "$STORE: the resumed worker reported nothing: $(cat "$TMP/e3")"
    "$RK" migrate throttle "${M[@]}" --keys-per-s 100 -o json >"$TMP/t.json"; rc=$?
    check "$STORE: migrate throttle" 0 $rc
    check "$STORE: the job's throttle" 100 "$(jq_ "$TMP/t.json" 'd["throttle"]["keys_per_s"]')"
    sleep 1.5
    local before; before=$(job_field 'd["counters"]["copied"]+d["counters"]["present"]')
    sleep 2
    local after; after=$(job_field 'd["counters"]["copied"]+d["counters"]["present"]')
    if [ $((after - before)) -le 300 ]; then ok; else bad "$STORE: 100 keys/s moved $((after - before)) in 2 s"; fi
    "$RK" migrate pause "${M[@]}" --comment test >/dev/null; rc=$?
    check "$STORE: migrate pause" 0 $rc
    for _ in $(seq 1 50); do kill -0 $w 2>/dev/null || break; sleep 0.1; done
    if kill -0 $w 2>/dev/null; then bad "$STORE: the worker did not stop within 5 s of the pause"; kill -9 $w; fi
    wait $w; rc=$?
    check "$STORE: the paused worker exits 0" 0 $rc
    has "$STORE: ... saying how to resume" "$TMP/e3" "migrate resume"
    check "$STORE: the job is paused" paused "$(job_field 'd["state"]')"
    "$RK" migrate run "${M[@]}" --worker w1 >/dev/null 2>"$TMP/e4"; rc=$?
    check "$STORE: run on a paused job is refused" 2 $rc
    "$RK" migrate resume "${M[@]}" >/dev/null; rc=$?
    check "$STORE: migrate resume" 0 $rc
    "$RK" migrate throttle "${M[@]}" --keys-per-s 0 >/dev/null
    "$RK" migrate run "${M[@]}" --worker w1 --finish -o json >"$TMP/j3" 2>"$TMP/e5"; rc=$?
    check "$STORE: the resumed run finishes" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e5"
    has "$STORE: ... the last line says finished" "$TMP/j3" '"state":"finished"'
    for j in j1 j2 j3; do
        if valid_json "$TMP/$j"; then ok; else bad "$STORE: $j is not JSON lines"; fi
    done
    check_keys "$STORE window"
    local copied present
    copied=$(job_field 'd["counters"]["copied"]'); present=$(job_field 'd["counters"]["present"]')
    if [ "$copied" -le "$MOVING" ] && [ $((copied + present)) -ge "$MOVING" ]; then ok; else
        bad "$STORE: copied $copied present $present for $MOVING moving keys"; fi
    check "$STORE: verified with no mismatch" 0 "$(job_field 'd["verify"]["mismatches"]')"
    req GET "$C/ring" >/dev/null
    has "$STORE: the window is closed" "$TMP/body" '"previous":null'
    "$RK" migrate verify "${M[@]}" >"$TMP/v.out" 2>"$TMP/v.err"; rc=$?
    check "$STORE: migrate verify is clean" 0 $rc
    "$RK" migrate status "${M[@]}" >"$TMP/status"; rc=$?
    check "$STORE: migrate status" 0 $rc
    has "$STORE: ... the state" "$TMP/status" "finished"

    # back to three nodes: a cancel leaves every key where it was
    check "$STORE: v3 (three nodes) opens a window" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
    : >"$TMP/j4" # emptied before the start: the job's redirect may come too late
    "$RK" migrate run "${M[@]}" --keys-per-s 100 --batch 50 -o json >"$TMP/j4" 2>"$TMP/e6" &
    w=$!
    wait_lines "$TMP/j4" 1 || bad "$STORE: the worker of v3 reported nothing: $(cat "$TMP/e6")"
    "$RK" migrate cancel "${M[@]}" >/dev/null
    for _ in $(seq 1 50); do kill -0 $w 2>/dev/null || break; sleep 0.1; done
    wait $w; rc=$?
    check "$STORE: the cancelled worker exits 0" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e6"
    has "$STORE: ... saying so" "$TMP/e6" "cancelled"
    check_keys "$STORE after a cancel"

    # a new job for the same window, in steps
    "$RK" migrate run "${M[@]}" --max-step 0.05 --finish -o json >"$TMP/j5" 2>"$TMP/e7"; rc=$?
    check "$STORE: a stepped job finishes" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e7"
    local steps; steps=$(job_field 'd["steps"]')
    if [ "$steps" -gt 1 ]; then ok; else bad "$STORE: --max-step 0.05 gave $steps step(s)"; fi
    if valid_json "$TMP/j5"; then ok; else bad "$STORE: j5 is not JSON lines"; fi
    cp "$TMP/owners" "$TMP/owners.v2"
    owners "$TMP/t4" "$TMP/t3" # the keys n3 got now moved back to their v1 owners
    local back; back=$(python3 "$HERE/migrate_keys.py" check "$STORE" $(node_map) <"$TMP/owners")
    local mv=${back#moving=}; mv=${mv%% *}
    check "$STORE: the stepped job moved every key back" "on_new=$mv" "${back##* }"

    delete_source
    prewarm

    # a data server that is down: the job pauses with an error naming the node
    check "$STORE: v5 opens a window" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"
    kill "${RKM_PIDS[-1]}"; wait "${RKM_PIDS[-1]}" 2>/dev/null
    "$RK" migrate run "${M[@]}" >/dev/null 2>"$TMP/e8"; rc=$?
    check "$STORE: a server down fails the run" 1 $rc
    has "$STORE: ... naming the node and address" "$TMP/e8" "node n3 (${ADDR[3]})"
    check "$STORE: ... and the job is paused" paused "$(job_field 'd["state"]')"
    has "$STORE: ... with the error" "$TMP/body" "n3 (${ADDR[3]})"
}

run_store memcached
run_store redis
finish
