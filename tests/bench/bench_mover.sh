#!/usr/bin/env bash
# bench_mover.sh — figures of the data mover, `ringkeeper migrate run` (docs/PERFORMANCE.md, "The
# data mover (issue 22)"), against a plain pipelined copy loop (bench_copy_peer) in the same run.
#
# usage: bench_mover.sh BUILD_DIR [--keys N] [--rss-keys N] [--stores memcached,redis]
#                                 [--only copy,resume,throttle,rss] [--throttle-s S]
#                                 [--rss-store redis|memcached]
#
# BUILD_DIR is a build with RK_BENCH (measure a Release build): its server/ringkeeperd,
# client/ringkeeper and tests/bench/bench_copy_peer. For each store it starts four data servers on
# free loopback ports (tests/mover/servers.sh) and one ringkeeperd on a temporary database, fills
# the three sources with N keys (default 1,000,000; values of 100 B to 4 KB, uniform, from a fixed
# seed) placed by a ring of three nodes, and for a cluster growing to four nodes (a quarter of the
# keys move, all to the new node n3) measures:
#   copy      the plain loop over the moving keys (libmemcached mget + noreply add; Redis MIGRATE
#             COPY KEYS), the same keys in the mover's protocol one at a time (a timing split),
#             then `migrate run --finish` over the same keys: copy and verify keys/s, MB/s of the
#             moving values, the worker's peak RSS, the progress reports' time in ringkeeperd
#   resume    a run killed (-9) once half the moving keys are copied, run again with the same
#             --worker: keys redone (present on resume) and the seconds over an uninterrupted run
#   throttle  --keys-per-s 2000, then --bytes-per-s 2000000, each for S seconds (default 12): the
#             rate of the job's counters (GET .../migration, once a second, from the second sample
#             to the last: about S - 0.5 s) against the set one
#   rss       a source of --rss-keys keys (default 10,000,000) of 16 B on one server of
#             --rss-store (default redis), 1% of them moving to a second one: the worker's peak RSS
#             over a whole run (/usr/bin/time), with --batch RK_BENCH_RSS_BATCH
# The new node is emptied before each run. A `migrate run --finish` that fails is a figure too: its
# exit, time and keys copied are printed, and that store's other runs are skipped. Every server and
# worker stops before the script exits; each wait is bounded.
# Environment: RK_BENCH_MIN, RK_BENCH_MAX (value bytes, 100 and 4096), RK_BENCH_SEED (1),
# RK_BENCH_BATCH (the peer's batch of moving keys, 500), RK_BENCH_WORKER_BATCH (the worker's
# --batch of scanned keys; default: the worker's own default).
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR [--keys N] [--rss-keys N] [--stores memcached,redis] [--only copy,resume,throttle,rss] [--throttle-s S]" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
shift
KEYS=1000000
RSS_KEYS=10000000
STORES=memcached,redis
ONLY=copy,resume,throttle,rss
THROTTLE_S=12
RSS_STORE=redis
while [ $# -gt 0 ]; do
    case $1 in
    --keys) KEYS=$2; shift 2 ;;
    --rss-keys) RSS_KEYS=$2; shift 2 ;;
    --stores) STORES=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --throttle-s) THROTTLE_S=$2; shift 2 ;;
    --rss-store) RSS_STORE=$2; shift 2 ;;
    *) echo "$0: unknown argument $1" >&2; exit 2 ;;
    esac
done
MIN=${RK_BENCH_MIN:-100}
MAX=${RK_BENCH_MAX:-4096}
SEED=${RK_BENCH_SEED:-1}
BATCH=${RK_BENCH_BATCH:-500}
WBATCH=${RK_BENCH_WORKER_BATCH:-}
RSS_BATCH=${RK_BENCH_RSS_BATCH:-$WBATCH}
RKD=$BUILD/server/ringkeeperd
RK=$BUILD/client/ringkeeper
PEER=$BUILD/tests/bench/bench_copy_peer
for b in "$RKD" "$RK" "$PEER"; do
    [ -x "$b" ] || { echo "$0: $b is not built (RK_BENCH=ON, libmemcached-dev, libhiredis-dev)" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "$0: curl is not installed" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "$0: /usr/bin/time is not installed (Debian: time)" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../mover/servers.sh
. "$HERE/../mover/servers.sh" # memcached, redis-server on free ports; exits 77 when missing
TMP=$RKM_TMP
RKD_PID=
WORKERS=()
cleanup() {
    local p
    for p in "${WORKERS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    if [ -n "$RKD_PID" ]; then kill -9 "$RKD_PID" 2>/dev/null || true; wait "$RKD_PID" 2>/dev/null || true; fi
    rkm_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM
wants() { case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
say() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

# ringkeeperd on a free port, a temporary database, no tokens
"$RKD" --listen 127.0.0.1:0 --db "$TMP/ringkeeper.db" 2>"$TMP/server.log" &
RKD_PID=$!
PORT=
for _ in $(seq 1 100); do
    PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$TMP/server.log" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$RKD_PID" 2>/dev/null || break
    sleep 0.1
done
[ -n "$PORT" ] || { echo "ringkeeperd did not start:" >&2; cat "$TMP/server.log" >&2; exit 1; }
BASE=http://127.0.0.1:$PORT
export RINGKEEPER_SERVER=$BASE
unset RINGKEEPER_TOKEN

req() { # req METHOD PATH [FILE]: the body on stdout; fails on a status >= 300
    local code
    code=$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 30 -X "$1" -H 'Content-Type: application/json' \
        ${3:+--data-binary @"$3"} "$BASE$2")
    if [ "$code" -ge 300 ]; then echo "$0: $1 $2: HTTP $code: $(head -c 300 "$TMP/body")" >&2; exit 1; fi
    cat "$TMP/body"
}
py() { /usr/bin/python3 -c "$@"; }
# topo FILE STORE ADDR:WEIGHT...: nodes n0.. on those servers
topo() {
    local file=$1 store=$2 nodes= i=0 a
    shift 2
    for a in "$@"; do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"${a%:*}\",\"weight\":${a##*:}}"
        i=$((i + 1))
    done
    printf '{"hash":"xxh3_64","vnode_factor":100,"data":"%s","nodes":[%s]}' "$store" "$nodes" >"$file"
}
# window CLUSTER OLD NEW: the cluster at OLD, then NEW activated in a migration window
window() {
    req POST "/v1/clusters/$1/versions?activate=true" "$2" >/dev/null
    printf '{"migration_window":true}' >"$TMP/policy"
    req PUT "/v1/clusters/$1/policy" "$TMP/policy" >/dev/null
    req POST "/v1/clusters/$1/versions?activate=true" "$3" >/dev/null
}
counters() { req GET "/v1/clusters/$1/migration" | py 'import json,sys; c=json.load(sys.stdin)["counters"]; print(c["copied"], c["present"], c["bytes"])'; }
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
# wait_job_line FILE: until the worker's last -o json line ({"job", ...}) is in FILE (10 s at most)
wait_job_line() { for _ in $(seq 1 100); do grep -q '"job"' "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
emptied() { # emptied STORE ADDR: the new node empty again (memcached counts by the second)
    "$PEER" flush "$1" "$2"
    if [ "$1" = memcached ]; then sleep 1.1; fi
}
RESULTS=$TMP/results
: >"$RESULTS"
result() { printf '%s\n' "$*" >>"$RESULTS"; printf '  %s\n' "$*" >&2; }

stop_servers() {
    local p
    for p in "${RKM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    RKM_PIDS=()
}

run_store() {
    local store=$1 p addr=() i rc
    rkm_ports 4
    for p in "${PORTS[@]}"; do
        if [ "$store" = memcached ]; then rkm_memcached "$p" -m 1536 -c 256; else rkm_redis "$p"; fi
        addr+=("127.0.0.1:$p")
    done
    rkm_up "${PORTS[@]}"
    topo "$TMP/t3" "$store" "${addr[0]}:1" "${addr[1]}:1" "${addr[2]}:1"
    topo "$TMP/t4" "$store" "${addr[0]}:1" "${addr[1]}:1" "${addr[2]}:1" "${addr[3]}:1"
    local dst=${addr[3]} t0 t1
    say "$store: filling $KEYS keys of $MIN-$MAX B"
    t0=$EPOCHREALTIME
    local fill; fill=$("$PEER" fill "$TMP/t3" "$KEYS" "$MIN" "$MAX" "$SEED")
    t1=$EPOCHREALTIME
    result "$store fill $fill seconds=$(py "print(round($t1-$t0,2))")"
    local moving; moving=$("$PEER" moving "$TMP/t3" "$TMP/t4" "$KEYS" "$MIN" "$MAX" "$SEED")
    local M=${moving#moving=}; M=${M%% *}
    local MB=${moving##*bytes=}
    result "$store $moving"

    if wants copy; then
        for i in 0 1 2; do
            result "$store scan n$i $("$PEER" scan "$store" "${addr[$i]}" "$BATCH")"
        done
        emptied "$store" "$dst"
        say "$store: the plain loop"
        result "$store peer $("$PEER" copy "$TMP/t3" "$TMP/t4" "$KEYS" "$MIN" "$MAX" "$SEED" "$BATCH")"
        result "$store peer_dest_keys $("$PEER" count "$store" "$dst")"
        emptied "$store" "$dst"
        say "$store: the mover's protocol, key by key (a timing split)"
        result "$store per_key $("$PEER" copy-per-key "$TMP/t3" "$TMP/t4" "$KEYS" "$MIN" "$MAX" "$SEED" "$BATCH")"
        emptied "$store" "$dst"
        say "$store: migrate run --finish"
        window "copy-$store" "$TMP/t3" "$TMP/t4"
        t0=$EPOCHREALTIME
        rc=0
        /usr/bin/time -f '%M %e' -o "$TMP/time" "$RK" migrate run --cluster "copy-$store" ${WBATCH:+--batch "$WBATCH"} \
            --finish -o json > >(stamp >"$TMP/j-copy") 2>"$TMP/e-copy" || rc=$?
        if [ $rc != 0 ]; then # a figure too: what it had done, and why it stopped
            result "$store rk_failed rc=$rc after_s=$(py "print(round($EPOCHREALTIME-$t0,2))") copied=$(counters "copy-$store" | cut -d' ' -f1) of=$M"
            result "$store rk_failed_message $(tail -1 "$TMP/e-copy")"
            stop_servers
            return
        fi
        wait_job_line "$TMP/j-copy" || { echo "$0: no last line from the worker" >&2; exit 1; }
        read -r c_present c_copied c_bytes < <(req GET "/v1/clusters/copy-$store/migration" |
            py 'import json,sys; c=json.load(sys.stdin)["counters"]; print(c["present"], c["copied"], c["bytes"])')
        result "$store rk $(py '
import json, sys
t0 = float(sys.argv[1]); copy_end = verify_end = t0; checked = 0; reports = {"copy": 0, "verify": 0}
for l in open(sys.argv[2]):
    ts, _, j = l.partition(" ")
    d = json.loads(j)
    if "phase" not in d: continue
    reports[d["phase"]] += 1
    if d["phase"] == "copy": copy_end = float(ts)
    else: verify_end = float(ts); checked = d.get("checked", checked)
print("copy_s=%.3f verify_s=%.3f copy_reports=%d verify_reports=%d last_checked=%d" % (
    copy_end - t0, verify_end - copy_end, reports["copy"], reports["verify"], checked))
' "$t0" "$TMP/j-copy") copied=$c_copied present=$c_present bytes=$c_bytes rss_kb_wall_s=$(tr ' ' , <"$TMP/time")"
        result "$store rk_reports $(awk -v p="/v1/clusters/copy-$store/migration/progress" \
            '$4 == p { n++; ms += $7 + 0 } END { printf "n=%d server_ms=%.0f", n, ms }' "$TMP/server.log")"
        result "$store rk_dest_keys $("$PEER" count "$store" "$dst")"
        result "$store rk_verify $(req GET "/v1/clusters/copy-$store/migration" | py 'import json,sys; d=json.load(sys.stdin); print("state=%s checked=%s mismatches=%s" % (d["state"], d["verify"]["counters"]["checked"], d["verify"].get("mismatches")))')"
    fi

    if wants resume; then
        emptied "$store" "$dst"
        say "$store: a worker killed half-way, then resumed"
        window "resume-$store" "$TMP/t3" "$TMP/t4"
        t0=$EPOCHREALTIME
        "$RK" migrate run --cluster "resume-$store" --worker w1 ${WBATCH:+--batch "$WBATCH"} -o json >"$TMP/j-r1" 2>"$TMP/e-r1" &
        local w=$!
        WORKERS+=("$w")
        local copied=0 _p _b
        for _ in $(seq 1 3000); do # 300 s at most
            sleep 0.1
            kill -0 "$w" 2>/dev/null || break
            grep -q '"phase"' "$TMP/j-r1" || continue
            read -r copied _p _b < <(counters "resume-$store")
            [ "$copied" -ge $((M / 2)) ] && break
        done
        kill -9 "$w" 2>/dev/null || true
        wait "$w" 2>/dev/null || true
        t1=$EPOCHREALTIME
        local at_kill=$copied
        read -r copied _p _b < <(counters "resume-$store")
        local reported=$copied
        rc=0
        "$RK" migrate run --cluster "resume-$store" --worker w1 ${WBATCH:+--batch "$WBATCH"} --finish -o json \
            >"$TMP/j-r2" 2>"$TMP/e-r2" || rc=$?
        local t2=$EPOCHREALTIME
        [ $rc = 0 ] || { echo "$0: the resumed run exited $rc: $(tail -3 "$TMP/e-r2")" >&2; exit 1; }
        read -r copied _p _b < <(counters "resume-$store")
        result "$store resume killed_s=$(py "print(round($t1-$t0,3))") resumed_s=$(py "print(round($t2-$t1,3))") copied_at_kill=$at_kill copied_reported=$reported copied=$copied present=$_p dest_keys=$("$PEER" count "$store" "$dst")"
    fi

    if wants throttle; then
        local kind rate
        for kind in keys bytes; do
            emptied "$store" "$dst"
            window "throttle-$kind-$store" "$TMP/t3" "$TMP/t4"
            if [ $kind = keys ]; then rate=2000; else rate=2000000; fi
            say "$store: --$kind-per-s $rate for $THROTTLE_S s"
            "$RK" migrate run --cluster "throttle-$kind-$store" ${WBATCH:+--batch "$WBATCH"} "--$kind-per-s" $rate -o json \
                >"$TMP/j-t" 2>"$TMP/e-t" &
            local w=$!
            WORKERS+=("$w")
            : >"$TMP/samples"
            for _ in $(seq 1 100); do grep -q '"phase"' "$TMP/j-t" && break; sleep 0.1; done
            for _ in $(seq 0 "$THROTTLE_S"); do
                printf '%s %s\n' "$EPOCHREALTIME" "$(counters "throttle-$kind-$store")" >>"$TMP/samples"
                sleep 1
            done
            "$RK" migrate cancel --cluster "throttle-$kind-$store" >/dev/null
            for _ in $(seq 1 50); do kill -0 "$w" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$w" 2>/dev/null || true
            wait "$w" 2>/dev/null || true
            result "$store throttle_$kind set=$rate $(py '
import sys
rows = [l.split() for l in open(sys.argv[1])]
col = 1 if sys.argv[2] == "keys" else 3
s = [(float(r[0]), int(r[col]) + (int(r[2]) if col == 1 else 0)) for r in rows]
(ta, a), (tb, b) = s[1], s[-1]   # from the second sample: the first may fall in the first batch
print("measured=%.1f over_s=%.2f" % ((b - a) / (tb - ta), tb - ta))
' "$TMP/samples" $kind)"
        done
    fi
    stop_servers
}

run_rss() {
    local p addr=() rc store=$RSS_STORE
    rkm_ports 2
    for p in "${PORTS[@]}"; do
        if [ "$store" = memcached ]; then rkm_memcached "$p" -m 3072; else rkm_redis "$p"; fi
        addr+=("127.0.0.1:$p")
    done
    rkm_up "${PORTS[@]}"
    topo "$TMP/r1" "$store" "${addr[0]}:1"
    topo "$TMP/r2" "$store" "${addr[0]}:99" "${addr[1]}:1"
    say "rss: filling $RSS_KEYS keys of 16 B on $store"
    result "rss fill $("$PEER" fill "$TMP/r1" "$RSS_KEYS" 16 16 "$SEED") items=$("$PEER" count "$store" "${addr[0]}") store=$store"
    result "rss $("$PEER" moving "$TMP/r1" "$TMP/r2" "$RSS_KEYS" 16 16 "$SEED")"
    window rss "$TMP/r1" "$TMP/r2"
    say "rss: migrate run --finish"
    rc=0
    /usr/bin/time -f '%M %e' -o "$TMP/time" "$RK" migrate run --cluster rss ${RSS_BATCH:+--batch "$RSS_BATCH"} --finish -o json \
        >"$TMP/j-rss" 2>"$TMP/e-rss" || rc=$?
    [ $rc = 0 ] || { echo "$0: migrate run exited $rc: $(tail -3 "$TMP/e-rss")" >&2; exit 1; }
    read -r kb secs <"$TMP/time"
    result "rss worker peak_rss_kb=$kb wall_s=$secs $(counters rss | awk '{print "copied=" $1}')"
    for p in "${RKM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    RKM_PIDS=()
}

say "bench_mover: $KEYS keys, stores $STORES, runs $ONLY; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -r -a store_list <<<"$STORES"
for s in "${store_list[@]}"; do
    if wants copy || wants resume || wants throttle; then run_store "$s"; fi
done
if wants rss; then run_rss; fi

# the summary
py '
import re, sys
rows = [l.split() for l in open(sys.argv[1])]
kv = lambda r: dict(x.split("=", 1) for x in r if "=" in x)
by = {}
for r in rows:
    if "=" in r[1]:   # "redis moving=N bytes=B"
        by.setdefault((r[0], r[1].split("=")[0]), kv(r[1:]))
    else:
        by.setdefault((r[0], r[1]), kv(r[2:]))
for store in ("memcached", "redis"):
    mv = by.get((store, "moving"))
    if not mv: continue
    m, mb = int(mv["moving"]), int(mv["bytes"]) / 1e6
    print("%s: %s keys moving of %s, %.1f MB" % (store, m, by[(store, "fill")]["keys"], mb))
    f = by.get((store, "rk_failed"))
    if f:
        print("  migrate run FAILED (exit %s) after %s s, %s of %s keys copied: %s" % (f["rc"], f["after_s"],
              f["copied"], f["of"], " ".join(next(r for r in rows if r[:2] == [store, "rk_failed_message"])[2:])))
    peer, rk = by.get((store, "peer")), by.get((store, "rk"))
    if peer and rk:
        ps, cs, vs = float(peer["seconds"]), float(rk["copy_s"]), float(rk["verify_s"])
        print("  plain loop   %9.0f keys/s %7.1f MB/s  (%.2f s)" % (m / ps, mb / ps, ps))
        print("  migrate copy %9.0f keys/s %7.1f MB/s  (%.2f s)  ratio %.2fx" % (m / cs, mb / cs, cs, ps / cs))
        print("  verify       %9.0f keys/s %7.1f MB/s  (%.2f s)" % (m / vs, mb / vs, vs))
        pk = by.get((store, "per_key"))
        if pk:
            s = float(pk["seconds"])
            print("  key by key   %9.0f keys/s %7.1f MB/s  (%.2f s: the round trips of the mover, alone)" % (m / s, mb / s, s))
        rp = by.get((store, "rk_reports"))
        if rp:
            print("  progress reports: %s, %.1f s in ringkeeperd" % (rp["n"], float(rp["server_ms"]) / 1000))
        print("  worker peak RSS %s MB" % (int(rk["rss_kb_wall_s"].split(",")[0]) // 1024))
    rs = by.get((store, "resume"))
    if rs and rk:
        extra = float(rs["killed_s"]) + float(rs["resumed_s"]) - float(rk["rss_kb_wall_s"].split(",")[1])
        print("  resume: %s present (redone), %+.1f s over the uninterrupted run" % (rs["present"], extra))
    for k in ("keys", "bytes"):
        t = by.get((store, "throttle_" + k))
        if t:
            print("  throttle %s/s: set %s, measured %s (%+.1f%%) over %s s" % (k, t["set"], t["measured"],
                  100 * (float(t["measured"]) / float(t["set"]) - 1), t["over_s"]))
r = by.get(("rss", "worker"))
if r:
    print("rss: worker peak RSS %.1f MB over %s keys on %s (%s s)" % (int(r["peak_rss_kb"]) / 1024, by[("rss", "fill")]["keys"], by[("rss", "fill")]["store"], r["wall_s"]))
' "$RESULTS"
echo "raw:" && cat "$RESULTS"
