#!/usr/bin/env bash
# run_cutover.sh — one topology change of a live cache fleet under each procedure of issue 23
# (docs/PERFORMANCE.md, "Zero cold reads"), measured with rk_workload, side by side.
#
# usage: run_cutover.sh BUILD_DIR [--store memcached|redis] [--seconds S] [--keys N] [--rate OPS]
#            [--change add|drain] [--change-at S] [--window-s S] [--mover-keys-per-s N]
#            [--rollout-steps N]
#            [--procedures LIST] [--seed N] [--out DIR]      (numbers: whole numbers)
#
# For each procedure, on fresh servers: eleven data servers (memcached -m 256, or redis-server) on
# free loopback ports (tests/mover/servers.sh), a fresh ringkeeperd with a temporary database and a
# token (tests/server/lib.sh), version 1 active (ten nodes n0..n9) and version 2 staged: an eleventh
# node (--change add, default) or n9 at weight 0 (--change drain). rk_workload fills every key, then
# runs --seconds (default 30) at --rate ops/s (default 5000); --change-at seconds (default 5) into
# the run the change is made:
#   baseline             nothing: what the same traffic misses with no change
#   naive                activate v2 with no window; the clients read the owner now only
#   window               activate v2 in a migration window, the clients dual-read; once they hold
#                        v2, --window-s (default 10) later `ringkeeper migration finish` closes it
#   window+mover         the same window; once the clients hold v2, `ringkeeper migrate run
#                        --finish` copies the moving keys, verifies them and closes it. When the
#                        job does not end finished (its verify fails on keys the clients wrote on
#                        their new owners: docs/MIGRATE.md, "Verify"), the window is closed the way
#                        an operator would after a look, `POST .../migration/finish` with force,
#                        and the table says so
#   nutcracker-naive     a ketama cluster (fnv1a_64) behind a real nutcracker: activate v2, write
#                        its pool into nutcracker.yml (`ringkeeper export --into`), restart nutcracker
#   nutcracker-prewarm   `ringkeeper migrate run --before-cutover --to 2`, then the same activation,
#                        export and restart
#   rollout              window+mover in --rollout-steps (default 5) approved steps that ringkeeperd
#                        drives (docs/MIGRATE.md, "Rollouts"): a rollout to v2's topology is
#                        reviewed, approved and started, and `ringkeeper migrate run --finish` runs
#                        whenever a step waits for its data to move
#   nutcracker-agent     the cluster served by proxies (docs/AGENT.md): `ringkeeper agent` drives
#                        nutcracker (its reload a restart), the policy pre-warms, and a rollout to
#                        v2 in --rollout-steps steps is driven by ringkeeperd while one worker
#                        follows it (`migrate run --follow`): each step pre-warmed, activated,
#                        the agent rewriting the pool and, with --catch-up, stopping nutcracker,
#                        catching each moving key up on its new owner and starting it again
# Under ketama every weight is 3 (the ring of weight 1, which a pool's shares make it), so that a
# drain's rollout has steps (3, 2, 1, 0).
# (--procedures: a comma-separated subset, in that order; default the first six.) The migration jobs run
# unthrottled unless --mover-keys-per-s N.
# It prints a table (cutover_report.py): reads, misses, the extra misses against baseline (count,
# and % of the reads from the change to the end of the run), stale reads, dual reads, database
# loads, errors, p99 (the run's, and the worst 100 ms after the change), how long the change took
# and who closed the window. In --out DIR (default BUILD_DIR/cutover-<store>-<change>), for each
# procedure P: rk_workload's lines per 100 ms (P.csv), totals (P.json), stderr (P.log) and the keys
# it wrote (P.written); events (P.events: "name unix_ms" lines: start, change, converged, cutover,
# restarted, mover_done, closed, closed_forced, end); /proc/loadavg at its start and end (P.load);
# the plan's moved fraction (P.moved) and every key's owners in v1 and v2 (P.owners); the mover's
# JSON lines, stderr and its job at the end (P.mover.json, P.mover.log, P.job.json); then the
# table (table.txt) and results.json, which plot_hit_ratio.py draws. Every process it starts it
# stops; every wait is bounded. Exit 0 when every procedure ran, 1 otherwise, 77 without memcached,
# redis-server, python3 (servers.sh) or, for the nutcracker procedures, nutcracker.
set -u
BUILD=${1:?usage: run_cutover.sh BUILD_DIR [options]}
shift
BUILD=$(cd "$BUILD" && pwd)
RKD=$BUILD/server/ringkeeperd
RK=$BUILD/client/ringkeeper
WL=$BUILD/tests/workload/rk_workload
HERE=$(cd "$(dirname "$0")" && pwd)
for b in "$RKD" "$RK" "$WL"; do
    [ -x "$b" ] || { echo "run_cutover.sh: $b is not built" >&2; exit 1; }
done

STORE=memcached SECONDS_=30 KEYS=200000 RATE=5000 CHANGE=add CHANGE_AT=5 WINDOW_S=10 MOVER_RATE=0
SEED=1 OUT='' PROCS=baseline,naive,window,window+mover,nutcracker-naive,nutcracker-prewarm ROLLOUT_STEPS=5
while [ $# -gt 0 ]; do
    case $1 in
    --store) STORE=$2 ;;
    --seconds) SECONDS_=$2 ;;
    --keys) KEYS=$2 ;;
    --rate) RATE=$2 ;;
    --change) CHANGE=$2 ;;
    --change-at) CHANGE_AT=$2 ;;
    --window-s) WINDOW_S=$2 ;;
    --mover-keys-per-s) MOVER_RATE=$2 ;;
    --rollout-steps) ROLLOUT_STEPS=$2 ;;
    --procedures) PROCS=$2 ;;
    --seed) SEED=$2 ;;
    --out) OUT=$2 ;;
    *) echo "run_cutover.sh: unknown flag $1" >&2; exit 2 ;;
    esac
    [ $# -ge 2 ] || { echo "run_cutover.sh: $1 wants a value" >&2; exit 2; }
    shift 2
done
case $STORE in memcached | redis) ;; *) echo "run_cutover.sh: --store memcached|redis" >&2; exit 2 ;; esac
for v in SECONDS_ KEYS RATE CHANGE_AT WINDOW_S MOVER_RATE SEED ROLLOUT_STEPS; do
    case ${!v} in '' | *[!0-9]*) echo "run_cutover.sh: ${v%_} wants a whole number, got '${!v}'" >&2; exit 2 ;; esac
done
[ "$CHANGE_AT" -lt "$SECONDS_" ] || { echo "run_cutover.sh: --change-at must come before --seconds" >&2; exit 2; }
case $CHANGE in add | drain) ;; *) echo "run_cutover.sh: --change add|drain" >&2; exit 2 ;; esac
IFS=, read -r -a PROC_LIST <<<"$PROCS"
for p in "${PROC_LIST[@]}"; do
    case $p in
    baseline | naive | window | window+mover | rollout) ;;
    nutcracker-naive | nutcracker-prewarm | nutcracker-agent)
        command -v nutcracker >/dev/null || { echo "SKIP: nutcracker is not installed"; exit 77; } ;;
    *) echo "run_cutover.sh: unknown procedure $p" >&2; exit 2 ;;
    esac
done
OUT=${OUT:-$BUILD/cutover-$STORE-$CHANGE}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/*.csv "$OUT"/*.json "$OUT"/*.events "$OUT"/*.log "$OUT"/*.moved "$OUT"/*.owners \
    "$OUT"/*.written "$OUT"/*.load "$OUT/table.txt"

# shellcheck source=../mover/servers.sh
. "$HERE/../mover/servers.sh"
RKM_TMP_SAVED=$RKM_TMP
trap - EXIT
# shellcheck source=../server/lib.sh
. "$HERE/../server/lib.sh" "$RKD"
RKM_TMP=$RKM_TMP_SAVED
WL_PID='' AGENT_PID='' FOLLOW_PID=''
cleanup() {
    for pid in $WL_PID $AGENT_PID $FOLLOW_PID; do
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    [ -x "$TMP/nc.sh" ] && "$TMP/nc.sh" stop
    rkm_cleanup
    rk_cleanup
}
trap cleanup EXIT
TOKEN=wl-token-0123456789abcdef
printf 'ops:%s\n' "$TOKEN" >"$TMP/tokens"
export RINGKEEPER_TOKEN=$TOKEN

now_ms() { date +%s%3N; }
event() { echo "$1 $(now_ms)" >>"$OUT/$PROC.events"; }
say() { echo "[$(date +%H:%M:%S)] $PROC: $*" >&2; }
py() { /usr/bin/python3 "$@"; }

# sleep_until MS: until the wall clock reads MS
sleep_until() {
    local left=$(($1 - $(now_ms)))
    [ $left -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
    return 0
}

# wait_pid PID SECONDS: until PID exits, at most SECONDS; then SIGTERM, and SIGKILL 5 s later
wait_pid() {
    local pid=$1 i
    for i in $(seq 1 $(($2 * 10))); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "run_cutover.sh: process $pid still runs after $2 s: stopping it" >&2
        kill -TERM "$pid"
        for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    wait "$pid"
}

# topology SCHEME VERSION: the fleet's topology of version 1 or 2 on stdout
topology() {
    local scheme=$1 v=$2 nodes='' i n=10 w id unit=1
    [ "$v" = 2 ] && [ "$CHANGE" = add ] && n=11
    [ "$scheme" = ketama ] && unit=3
    for i in $(seq 0 $((n - 1))); do
        w=$unit
        [ "$v" = 2 ] && [ "$CHANGE" = drain ] && [ "$i" = 9 ] && w=0
        id=n$i # under ketama too: the pool names its servers n0..n10 (docs/KETAMA.md), so the
        # ring is the same whatever ports the servers got
        nodes="$nodes${nodes:+,}{\"id\":\"$id\",\"addr\":\"${ADDR[$i]}\",\"weight\":$w}"
    done
    if [ "$scheme" = ketama ]; then
        printf '{"scheme":"ketama","hash":"fnv1a_64","data":"%s","nodes":[%s]}\n' "$STORE" "$nodes"
    else
        printf '{"hash":"xxh3_64","vnode_factor":160,"data":"%s","nodes":[%s]}\n' "$STORE" "$nodes"
    fi
}

start_data() {
    rkm_ports 13
    ADDR=()
    local p
    for p in "${PORTS[@]:0:11}"; do
        if [ "$STORE" = memcached ]; then rkm_memcached "$p" -m 256; else rkm_redis "$p"; fi
        ADDR+=("127.0.0.1:$p")
    done
    NC_LISTEN=${PORTS[11]} NC_STATS=${PORTS[12]}
    rkm_up "${PORTS[@]:0:11}"
}

stop_data() {
    local pid
    for pid in "${RKM_PIDS[@]}"; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    RKM_PIDS=()
}

# nc.sh start|stop|restart: nutcracker as a service runs it, daemonized with a pid file, so that
# this script and an agent's reload command (nutcracker cannot reload: it is restarted) stop and
# start the same process
nc_script() {
    cat >"$TMP/nc.sh" <<EOF
#!/bin/sh
stop() {
    pid=\$(cat "$TMP/nc.pid" 2>/dev/null) || return 0
    kill -TERM "\$pid" 2>/dev/null
    i=0
    while kill -0 "\$pid" 2>/dev/null && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done
    kill -9 "\$pid" 2>/dev/null
    rm -f "$TMP/nc.pid"
}
start() {
    nutcracker -d -c "$TMP/nutcracker.yml" -s $NC_STATS -a 127.0.0.1 -p "$TMP/nc.pid" \\
        -o "$OUT/$PROC.nutcracker.log"
}
case \$1 in start) start ;; stop) stop ;; restart) stop; start ;; *) exit 2 ;; esac
EOF
    chmod +x "$TMP/nc.sh"
}

nc_start() {
    nc_script
    "$TMP/nc.sh" start && rkm_up "$NC_LISTEN" ||
        { say "nutcracker did not start: $(tail -5 "$OUT/$PROC.nutcracker.log")"; return 1; }
}

nc_stop() { [ -x "$TMP/nc.sh" ] && "$TMP/nc.sh" stop; }

# nc_cutover: v2 active, its pool written into nutcracker.yml, nutcracker restarted on it
nc_cutover() {
    "$RK" activate 2 --cluster wl -q || return 1
    "$RK" export --format nutcracker --into "$TMP/nutcracker.yml" --pool wl --cluster wl || return 1
    event cutover
    nc_stop
    nc_start || return 1
    event restarted
}

# converged: until the fleet (the one generator) holds the active version, 10 s at most
converged() {
    local i
    for i in $(seq 1 100); do
        [ "$("$RK" clients --cluster wl -q 2>/dev/null)" = true ] && { event converged; return 0; }
        sleep 0.1
    done
    say "the clients did not hold the new version within 10 s"
    return 1
}

ring_has_window() { req GET /v1/clusters/wl/ring >/dev/null; ! grep -q '"previous":null' "$TMP/body"; }

# job_done: the migration job's document into $OUT/$PROC.job.json, its state into JOB_STATE
job_done() {
    req GET /v1/clusters/wl/migration >/dev/null
    cp "$TMP/body" "$OUT/$PROC.job.json"
    JOB_STATE=$(py -c 'import json,sys; print(json.load(open(sys.argv[1])).get("state"))' "$TMP/body" 2>/dev/null)
}

# force_close REASON: what an operator does with a window whose job failed verify
force_close() {
    local code
    code=$(req POST /v1/clusters/wl/migration/finish -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' --data "{\"force\":true,\"reason\":\"$1\"}")
    [ "$code" = 200 ] || { say "the forced finish answered $code: $(cat "$TMP/body")"; return 1; }
    event closed_forced
}

# rollout_state: "state phase" of the cluster's rollout 1
rollout_state() {
    req GET /v1/clusters/wl/rollouts/1 >/dev/null
    py -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["state"], d.get("phase"))' "$TMP/body"
}

# rollout: v2's topology in $ROLLOUT_STEPS approved steps, driven by ringkeeperd; a worker run per
# step, when the step waits for its data, unless one follows the cluster; 600 s at most
rollout() {
    local auth=(-H "Authorization: Bearer $TOKEN") s i digest
    [ "$(req POST /v1/clusters/wl/rollouts "${auth[@]}" --data-binary \
        "{\"target\":$(cat "$TMP/v2.json"),\"steps\":$ROLLOUT_STEPS}")" = 201 ] ||
        { say "the rollout's review answered: $(cat "$TMP/body")"; return 1; }
    digest=$(py -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$TMP/body")
    req POST /v1/clusters/wl/rollouts/1/approve "${auth[@]}" --data-binary "{\"digest\":\"$digest\"}" >/dev/null
    [ "$(req POST /v1/clusters/wl/rollouts/1/start "${auth[@]}")" = 200 ] ||
        { say "the rollout did not start: $(cat "$TMP/body")"; return 1; }
    for i in $(seq 1 3000); do
        s=$(rollout_state)
        case "$s" in
        "running move")
            [ -n "$FOLLOW_PID" ] && { sleep 0.2; continue; }
            timeout 600 "$RK" migrate run --cluster wl --finish --keys-per-s "$MOVER_RATE" -o json \
                >>"$OUT/$PROC.mover.json" 2>>"$OUT/$PROC.mover.log" ;;
        running*) sleep 0.2 ;;
        *) break ;;
        esac
    done
    job_done
    [ "$s" = "done None" ] || { say "the rollout ended $s: $(cat "$TMP/body")"; return 1; }
    event closed
}

# agent_start: the cluster served by proxies: its policy pre-warms, `ringkeeper agent` drives
# nutcracker (and restarts it on v1 at once: before the fill), one worker follows the cluster
agent_start() {
    "$RK" policy set --cluster wl --prewarm yes >/dev/null || return 1
    "$RK" agent --proxy nutcracker --file "$TMP/nutcracker.yml" --pool wl --cluster wl \
        --stats "127.0.0.1:$NC_STATS" --reload "$TMP/nc.sh restart" --client-id nutcracker@wl \
        --catch-up --stop "$TMP/nc.sh stop" --start "$TMP/nc.sh start" \
        >"$OUT/$PROC.agent.log" 2>&1 &
    AGENT_PID=$!
    converged || { say "the agent did not hold v1: $(tail -3 "$OUT/$PROC.agent.log")"; return 1; }
    rkm_up "$NC_LISTEN" || return 1
    "$RK" migrate run --cluster wl --follow --keys-per-s "$MOVER_RATE" -o json \
        >"$OUT/$PROC.mover.json" 2>"$OUT/$PROC.mover.log" &
    FOLLOW_PID=$!
}

agent_stop() {
    local pid
    for pid in $FOLLOW_PID $AGENT_PID; do
        kill -TERM "$pid" 2>/dev/null
        wait_pid "$pid" 30
    done
    FOLLOW_PID='' AGENT_PID=''
}

# the change of procedure $PROC, made at once; its outcome in rc
change() {
    local rc=0
    case $PROC in
    baseline) ;;
    naive) "$RK" activate 2 --cluster wl -q || rc=1 ;;
    window)
        "$RK" activate 2 --cluster wl -q || rc=1
        converged
        sleep "$WINDOW_S"
        "$RK" migration finish --cluster wl -q || rc=1
        event closed
        ;;
    window+mover)
        "$RK" activate 2 --cluster wl -q || rc=1
        converged
        timeout 600 "$RK" migrate run --cluster wl --finish --keys-per-s "$MOVER_RATE" -o json \
            >"$OUT/$PROC.mover.json" 2>"$OUT/$PROC.mover.log"
        event mover_done
        job_done
        if [ "$JOB_STATE" = finished ] && ! ring_has_window; then
            event closed
        else
            say "the mover did not close the window (job $JOB_STATE): $(tail -2 "$OUT/$PROC.mover.log")"
            force_close "rk_workload: the job ended $JOB_STATE" || rc=1
        fi
        ;;
    rollout) rollout || rc=1 ;;
    nutcracker-naive) nc_cutover || rc=1 ;;
    nutcracker-agent) rollout || rc=1 ;;
    nutcracker-prewarm)
        timeout 600 "$RK" migrate run --cluster wl --before-cutover --to 2 \
            --keys-per-s "$MOVER_RATE" -o json >"$OUT/$PROC.mover.json" 2>"$OUT/$PROC.mover.log"
        event mover_done
        job_done
        [ "$JOB_STATE" = verified ] ||
            say "the pre-warm ended $JOB_STATE: $(tail -2 "$OUT/$PROC.mover.log"); cutting over all the same"
        nc_cutover || rc=1
        ;;
    esac
    return $rc
}

# procedure: servers, ringkeeperd, versions 1 and 2, the generator, the change, the generator's end
procedure() {
    local scheme=ringkeeper via
    case $PROC in nutcracker-*) scheme=ketama ;; esac
    start_data || return 1
    rk_start --db "$TMP/$PROC.db" --token-file "$TMP/tokens"
    export RINGKEEPER_SERVER=$BASE
    topology $scheme 1 >"$TMP/v1.json"
    topology $scheme 2 >"$TMP/v2.json"
    "$RK" publish "$TMP/v1.json" --cluster wl --activate -q >/dev/null || return 1
    case $PROC in window*)
        "$RK" policy set --cluster wl --migration-window yes >/dev/null || return 1 ;;
    esac
    "$RK" publish "$TMP/v2.json" --cluster wl -q >/dev/null || return 1
    "$RK" plan --cluster wl --from 1 --to 2 -q >"$OUT/$PROC.moved" 2>/dev/null
    # every key's owner in v1 and v2, for the report's moving keys (the ring math, offline)
    seq 0 $((KEYS - 1)) | sed 's/^/wl:/' >"$TMP/keys"
    "$RK" lookup --topology "$TMP/v1.json" <"$TMP/keys" >"$TMP/own1" || return 1
    "$RK" lookup --topology "$TMP/v2.json" <"$TMP/keys" | cut -f2 | paste "$TMP/own1" - \
        >"$OUT/$PROC.owners" || return 1
    via=(--via ringkeeper --server "$BASE" --cluster wl --client-id "wl-$PROC")
    [ "$PROC" = naive ] && via+=(--no-dual-read)
    if [ $scheme = ketama ]; then
        "$RK" export --format nutcracker --pool wl --listen "127.0.0.1:$NC_LISTEN" --cluster wl \
            --version 1 >"$TMP/nutcracker.yml" || return 1
        echo '  timeout: 2000' >>"$TMP/nutcracker.yml"
        nc_start || return 1
        [ "$PROC" = nutcracker-agent ] && { agent_start || return 1; }
        via=(--via nutcracker --proxy "127.0.0.1:$NC_LISTEN" --store "$STORE")
    fi
    # the generator's ringkeeper client sends $RINGKEEPER_TOKEN (the client role: it is counted)
    "$WL" "${via[@]}" --keys "$KEYS" --fill --seconds "$SECONDS_" --rate "$RATE" --seed "$SEED" \
        --out "$OUT/$PROC.csv" --written "$OUT/$PROC.written" >"$OUT/$PROC.json" 2>"$OUT/$PROC.log" &
    WL_PID=$!
    local i t0='' rc=0
    for i in $(seq 1 3000); do # the fill: 300 s at most
        t0=$(sed -n '2s/^[^,]*,\([0-9]*\),.*/\1/p' "$OUT/$PROC.csv" 2>/dev/null)
        [ -n "$t0" ] && break
        kill -0 $WL_PID 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$t0" ]; then
        say "rk_workload did not start: $(cat "$OUT/$PROC.log")"
        return 1
    fi
    t0=$((t0 - 100))
    echo "start $t0" >>"$OUT/$PROC.events"
    say "$(grep -o 'filled.*' "$OUT/$PROC.log")"
    sleep_until $((t0 + CHANGE_AT * 1000))
    event change
    change || rc=1
    wait_pid $WL_PID $((SECONDS_ + 60)) || { say "rk_workload failed: $(tail -3 "$OUT/$PROC.log")"; rc=1; }
    WL_PID=
    event end
    say "$(cat "$OUT/$PROC.json")"
    return $rc
}

run_procedure() {
    PROC=$1
    : >"$OUT/$PROC.events"
    cat /proc/loadavg >"$OUT/$PROC.load" 2>/dev/null
    local rc=0
    procedure || rc=1
    cat /proc/loadavg >>"$OUT/$PROC.load" 2>/dev/null
    if [ -n "$WL_PID" ]; then
        kill -TERM "$WL_PID" 2>/dev/null
        wait_pid "$WL_PID" 10
        WL_PID=
    fi
    agent_stop
    nc_stop
    [ -n "$PID" ] && rk_stop
    stop_data
    return $rc
}

FAILED_PROCS=()
for p in "${PROC_LIST[@]}"; do
    run_procedure "$p" || FAILED_PROCS+=("$p")
done
py "$HERE/cutover_report.py" "$OUT" --store "$STORE" --change "$CHANGE" --keys "$KEYS" \
    --seconds "$SECONDS_" --rate "$RATE" --procedures "$PROCS" | tee "$OUT/table.txt"
if [ ${#FAILED_PROCS[@]} -gt 0 ]; then
    echo "run_cutover.sh: failed: ${FAILED_PROCS[*]}" >&2
    exit 1
fi
