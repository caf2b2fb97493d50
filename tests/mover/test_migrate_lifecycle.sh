#!/usr/bin/env bash
# test_migrate_lifecycle.sh — a job is one cutover's (SPEC 10), once per store (memcached, redis),
# on a real ringkeeperd and four real data servers: a pre-warm, its cutover, then a window that
# drains a node gets a job of its own (0 moving keys missing after `run --finish`), and the
# window's finish is refused while only the pre-warm's job is verified; a second pre-warm copies
# its own plan; a verified job can be cancelled. A worker killed -9 is waited out by the next run;
# one interrupted (SIGINT) or paused lets go of its lease, so the next run starts at once. Then,
# on memcached only: a verify that compared nothing while the copy met errors ends `failed` (the
# verdict counts every key it could not read), and two hostile servers (faked: no real memcached
# does it): a metadump that never ends stops the scan with a clear error, its spool bounded, and
# a server answering every mg with garbage fails the job, its window left open. On
# Redis: 8 values of 20 MiB are skipped and listed, never read whole (the worker's peak RSS stays
# under 64 MB; not checked under the sanitizers, RK_MOVER_SANITIZED), and the job is not verified.
# Skips (77) when memcached or redis-server is not installed.
# usage: test_migrate_lifecycle.sh RINGKEEPERD RINGKEEPER
set -u
# shellcheck source=migrate_lib.sh
. "$(dirname "$0")/migrate_lib.sh" "$1" "$2"
KEYS=1500
SLOW=200 # keys/s of the runs that are stopped mid-way
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
export RINGKEEPER_SERVER=$BASE RINGKEEPER_TOKEN=$OPS


# topo STORE NODE...: the nodes named (n0..n3) on the store's servers
topo() {
    local store=$1 nodes= n
    shift
    for n in "$@"; do
        nodes="$nodes${nodes:+,}{\"id\":\"$n\",\"addr\":\"${ADDR[${n#n}]}\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":100,"data":"%s","nodes":[%s]}' "$store" "$nodes"
}

# shellcheck disable=SC2046 # node_map's words are the arguments
keys() { python3 "$HERE/migrate_keys.py" "$1" "$STORE" $(node_map); }

# moved NAME OLD NEW: every key on its owner by OLD, every moving one on its owner by NEW
moved() {
    owners "$2" "$3"
    local got; got=$(keys check <"$TMP/owners")
    local moving=${got#moving=}; moving=${moving%% *}
    check "$1: 0 moving keys missing" "moving=$moving on_old=$KEYS on_new=$moving" "$got"
    if [ "$moving" -gt 0 ]; then ok; else bad "$1: nothing moves"; fi
}

# slow_worker OUT ERR [FLAGS...]: a throttled worker in the background, once it reported twice
slow_worker() {
    local out=$1 err=$2
    shift 2
    : >"$out"
    "$RK" migrate run "${M[@]}" --keys-per-s $SLOW --batch 50 -o json "$@" >"$out" 2>"$err" &
    W=$!
    wait_lines "$out" 2 || bad "$STORE: the worker reported nothing: $(cat "$err")"
}

# the pre-warm, its cutover, a window draining n1, a second pre-warm, a cancelled verified job
lifecycle() {
    local rc
    topo "$STORE" n0 n1 n2 >"$TMP/t1"
    topo "$STORE" n0 n1 n2 n3 >"$TMP/t2"
    topo "$STORE" n0 n2 n3 >"$TMP/t3"
    check "$STORE: v1" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t1")"
    check "$STORE: v2 staged" 201 "$(as POST "$C/versions" --data-binary @"$TMP/t2")"
    owners "$TMP/t1" "$TMP/t2"
    keys fill <"$TMP/owners"
    "$RK" migrate run "${M[@]}" --before-cutover --to 2 --keys-per-s $SLOW --batch 50 -o json \
        >"$TMP/j1" 2>"$TMP/e1"; rc=$?
    check "$STORE: the pre-warm is verified" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e1"
    # the rate shown, over the last 10 s of the run, is the throttle's across sources and phases:
    # every line but the first second's within 10%
    local rates
    rates=$(/usr/bin/python3 -c 'import json,sys
lines=[json.loads(l) for l in open(sys.argv[1])][:-1]
r=[l["keys_per_s"] for l in lines[4:]]
print(len(set(l["node"] for l in lines)) >= 3 and len(r) >= 8 and
      all(0.9*int(sys.argv[2]) <= x <= 1.1*int(sys.argv[2]) for x in r), r)' "$TMP/j1" $SLOW)
    check "$STORE: the shown rate is the throttle's (10%) over each source" True "${rates%% *}"
    echo "NOTE: $STORE: keys/s shown at $SLOW keys/s: ${rates#* }"
    moved "$STORE: the pre-warm" "$TMP/t1" "$TMP/t2"
    "$RK" migrate run "${M[@]}" --before-cutover --to 2 --finish >/dev/null 2>"$TMP/e1"; rc=$?
    check "$STORE: --finish with --before-cutover is refused" 2 $rc
    check "$STORE: the cutover to v2" 200 "$(as POST "$C/versions/2/activate")"
    check "$STORE: policy: windows" 200 "$(as PUT "$C/policy" --data-binary '{"migration_window":true}')"
    check "$STORE: v3 drains n1, in a window" 201 "$(as POST "$C/versions?activate=true" --data-binary @"$TMP/t3")"

    check "$STORE: the window's finish is refused: only the pre-warm's job is verified" 409 \
        "$(as POST "$C/migration/finish")"
    has "$STORE: ... naming that job and its versions" "$TMP/body" "before_cutover job of v1 -> v2"
    "$RK" migrate run "${M[@]}" --finish >/dev/null 2>"$TMP/e2"; rc=$?
    check "$STORE: run --finish copies the window's own job" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e2"
    has "$STORE: ... a new job" "$TMP/e2" "started job 2: v2 -> v3"
    has "$STORE: ... and the window finished" "$TMP/e2" "the migration window is finished"
    check "$STORE: ... job 2 finished" "2 finished" "$(job_field 'str(d["id"])+" "+d["state"]')"
    moved "$STORE: the drained node" "$TMP/t2" "$TMP/t3"

    check "$STORE: v4 staged (n1 back)" 201 "$(as POST "$C/versions" --data-binary @"$TMP/t2")"
    "$RK" migrate run "${M[@]}" --before-cutover --to 4 -o json >"$TMP/j3" 2>"$TMP/e3"; rc=$?
    check "$STORE: a second pre-warm" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e3"
    check "$STORE: ... is a job of its own" '{"job":3,"state":"verified"}' "$(tail -1 "$TMP/j3")"
    moved "$STORE: the second pre-warm" "$TMP/t3" "$TMP/t2"
    "$RK" migrate cancel "${M[@]}" --comment "not this one" >/dev/null 2>"$TMP/e4"; rc=$?
    check "$STORE: a verified job is cancelled" "0 cancelled" "$rc $(job_field 'd["state"]')"
}

# a killed worker's lease waited out; SIGINT and a pause let go of it
leases() {
    local rc
    check "$STORE: v4 active, in a window" 200 "$(as POST "$C/versions/4/activate")"
    slow_worker "$TMP/j5" "$TMP/e5" --worker wa
    kill -9 $W; wait $W 2>/dev/null
    slow_worker "$TMP/j6" "$TMP/e6"
    has "$STORE: the next run waits out the killed worker's lease" "$TMP/e6" "waiting up to 12 s"
    kill -INT $W; wait $W; rc=$?
    check "$STORE: SIGINT stops the run" 1 $rc
    has "$STORE: ... saying how to go on" "$TMP/e6" "run ringkeeper migrate run again"
    check "$STORE: ... its lease let go" None "$(job_field 'd["worker"]')"
    slow_worker "$TMP/j7" "$TMP/e7" --no-wait
    "$RK" migrate pause "${M[@]}" >/dev/null
    wait $W; rc=$?
    check "$STORE: a pause stops the run" 0 $rc
    "$RK" migrate resume "${M[@]}" >/dev/null
    "$RK" migrate run "${M[@]}" --no-wait --finish >/dev/null 2>"$TMP/e8"; rc=$?
    check "$STORE: the next run starts at once and finishes" 0 $rc
    [ $rc = 0 ] || cat "$TMP/e8"
    moved "$STORE: after kill -9, SIGINT and a pause" "$TMP/t3" "$TMP/t2"
}

# the verdict over reports: copy errors and a verify that compared nothing never verify
verdict() {
    local C=/v1/clusters/verdict
    topo memcached n0 n1 >"$TMP/v1"
    topo memcached n0 n1 n2 >"$TMP/v2"
    as POST "$C/versions?activate=true" --data-binary @"$TMP/v1" >/dev/null
    as PUT "$C/policy" --data-binary '{"migration_window":true}' >/dev/null
    as POST "$C/versions?activate=true" --data-binary @"$TMP/v2" >/dev/null
    check "verdict: a job" 201 "$(as POST "$C/migration" --data-binary '{}')"
    as POST "$C/migration/claim" --data-binary '{"worker":"w"}' >/dev/null
    local phase node seq=1
    for phase in copy verify; do
        for node in $(jq_ "$TMP/body" '" ".join(s["node"] for s in d["sources"])'); do
            local counters='{"scanned":10,"errors":3,"stay":7}'
            [ $phase = verify ] && counters='{"scanned":10}'
            as POST "$C/migration/progress" --data-binary "{\"worker\":\"w\",\"seq\":$seq,\"step\":1,\"phase\":\"$phase\",\"node\":\"$node\",\"cursor\":\"x\",\"done\":true,\"counters\":$counters}" >/dev/null
        done
    done
    check "verdict: copy errors, nothing compared: failed" failed "$(jq_ "$TMP/body" 'd["state"]')"
    local n; n=$(jq_ "$TMP/body" 'len(d["sources"])')
    check "verdict: ... by reason" "$((3 * n)) $((3 * n))" \
        "$(jq_ "$TMP/body" 'str(d["verify"]["reasons"]["copy_errors"])+" "+str(d["verify"]["reasons"]["unchecked"])')"
    check "verdict: ... and the window stays open" 409 "$(as POST "$C/migration/finish")"
}

# --follow on a window whose version names no data: refused once, said once, not tried again
# every 2 s; SIGTERM ends it with 0
follow_refused() {
    local C=/v1/clusters/nodata rc
    local t='{"hash":"xxh3_64","vnode_factor":100,"nodes":[%s]}'
    # shellcheck disable=SC2059 # $t is the format
    printf "$t" "{\"id\":\"a\",\"addr\":\"${ADDR[0]}\",\"weight\":1}" >"$TMP/n1"
    # shellcheck disable=SC2059
    printf "$t" "{\"id\":\"a\",\"addr\":\"${ADDR[0]}\",\"weight\":1},{\"id\":\"b\",\"addr\":\"${ADDR[1]}\",\"weight\":1}" >"$TMP/n2"
    as POST "$C/versions?activate=true" --data-binary @"$TMP/n1" >/dev/null
    as PUT "$C/policy" --data-binary '{"migration_window":true}' >/dev/null
    as POST "$C/versions?activate=true" --data-binary @"$TMP/n2" >/dev/null
    "$RK" migrate run --cluster nodata --follow >/dev/null 2>"$TMP/ef" &
    local w=$!
    sleep 5
    kill -TERM $w; wait $w; rc=$?
    check "follow: SIGTERM ends it" 0 $rc
    check "follow: a refused run is not tried again and again" 1 "$(grep -c 'does not say what its nodes serve' "$TMP/ef")"
    has "follow: ... saying it waits" "$TMP/ef" "waiting for the job or the window to change"
}

# a metadump that never ends: the scan stops at the server's own count, with a clear error
# hostile MODE: a window from a fake memcached of MODE (hostile_memcached.py) to a real one, run
# once; its stderr in $TMP/e9, its exit in RC
hostile() {
    rkm_ports 1
    local port=${PORTS[0]}
    /usr/bin/python3 "$HERE/hostile_memcached.py" "$port" "$1" &
    RKM_PIDS+=($!)
    rkm_up "$port" || return
    C=/v1/clusters/$1
    ADDR[3]=127.0.0.1:$port
    topo memcached n3 >"$TMP/e1.json"
    topo memcached n3 n0 >"$TMP/e2.json"
    as POST "$C/versions?activate=true" --data-binary @"$TMP/e1.json" >/dev/null
    as PUT "$C/policy" --data-binary '{"migration_window":true}' >/dev/null
    as POST "$C/versions?activate=true" --data-binary @"$TMP/e2.json" >/dev/null
    "$RK" migrate run --cluster "$1" --finish >/dev/null 2>"$TMP/e9"; RC=$?
}

# a metadump that never ends: the scan stops at the server's own count, with a clear error; a
# server that answers every mg with garbage: the job fails on the keys it could not read
hostiles() {
    hostile endless
    check "endless metadump: the run fails" 1 $RC
    has "endless metadump: ... saying why" "$TMP/e9" "more than the server's own count allows"
    # 10 items said: the spool stops at 10 x 2 + 100000 keys, about 2 MB, not the disk
    has "endless metadump: ... after the server's count with margin" "$TMP/e9" "past 100021 keys"
    check "endless metadump: the job is paused, not verified" paused "$(job_field 'd["state"]')"
    hostile garbage
    echo "NOTE: garbage answers: $(grep 'ringkeeper migrate' "$TMP/e9" | head -3)"
    check "garbage answers: the run fails, the window stays open" 1 $RC
    has "garbage answers: ... the job ended failed" "$TMP/e9" "ended failed"
    check "garbage answers: ... every key it could not read counted" "failed True" \
        "$(job_field 'd["state"]+" "+str(d["verify"]["reasons"]["copy_errors"]+d["verify"]["reasons"]["errors"] > 0)')"
    req GET "$C/ring" >/dev/null
    if grep -q '"previous":null' "$TMP/body"; then bad "garbage answers: the window was closed"; else ok; fi
}

# big_values: 8 moving keys of 20 MiB and 100 small ones; with --relay and without, every small
# key moves, every big one is skipped and listed, the job fails (skipped), the worker stays small
big_values() {
    local C=/v1/clusters/big rc mode
    topo redis n0 >"$TMP/b1"
    topo redis n0 n1 >"$TMP/b2"
    as POST "$C/versions?activate=true" --data-binary @"$TMP/b1" >/dev/null
    as PUT "$C/policy" --data-binary '{"migration_window":true}' >/dev/null
    as POST "$C/versions?activate=true" --data-binary @"$TMP/b2" >/dev/null
    seq -f 'big-%g' 0 199 | "$RK" lookup --topology "$TMP/b2" | awk '$2 == "n1"' | head -8 | cut -f1 >"$TMP/big"
    check "big values: 8 of them move" 8 "$(wc -l <"$TMP/big")"
    /usr/bin/python3 - "${ADDR[0]}" "$TMP/big" <<'PY'
import os, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
def cmd(*args):
    s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
keys = [k.strip().encode() for k in open(sys.argv[2])]
for k in keys:
    cmd(b"SET", k, os.urandom(20 << 20))
for i in range(100):
    cmd(b"SET", b"small-%d" % i, b"v-%d" % i)
f = s.makefile("rb")
for _ in range(len(keys) + 100):
    assert f.readline() == b"+OK\r\n"
PY
    for mode in --relay ""; do
        # shellcheck disable=SC2086 # $mode is one flag or none
        "$RK" migrate run --cluster big $mode >/dev/null 2>"$TMP/eb" &
        local w=$! peak=0 hwm
        for _ in $(seq 1 600); do # VmHWM: the worker's peak RSS so far, in kB
            hwm=$(awk '/^VmHWM/ { print $2 }' /proc/$w/status 2>/dev/null)
            [ -n "$hwm" ] || break
            peak=$hwm
            sleep 0.1
        done
        wait $w; rc=$?
        check "big values ${mode:-(MIGRATE)}: the job is not verified" "1 failed" "$rc $(job_field 'd["state"]')"
        has "big values ${mode:-(MIGRATE)}: ... saying so" "$TMP/eb" "ended failed"
        check "big values ${mode:-(MIGRATE)}: ... the 8 skipped, by reason" "8 8" \
            "$(job_field 'str(len(d["skipped_keys"]))+" "+str(d["verify"]["reasons"]["skipped"])')"
        check "big values ${mode:-(MIGRATE)}: ... every small key moved" 0 "$(job_field 'd["verify"]["reasons"]["missing"]')"
        if grep -q "connection lost" "$TMP/eb"; then bad "big values: $(cat "$TMP/eb")"; else ok; fi
        echo "NOTE: big values ${mode:-(MIGRATE)}: the worker's peak RSS ${peak} kB"
        if [ -n "${RK_MOVER_SANITIZED:-}" ] || [ "$peak" -lt 65536 ]; then ok; else
            bad "big values ${mode:-(MIGRATE)}: the worker reached ${peak} kB"; fi
    done
}

run_store() {
    STORE=$1
    C=/v1/clusters/${STORE}life
    M=(--cluster "${STORE}life")
    data_servers "$STORE"
    lifecycle
    leases
}

run_store memcached
verdict
follow_refused
hostiles
run_store redis
big_values
finish
