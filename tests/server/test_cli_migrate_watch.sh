#!/usr/bin/env bash
# test_cli_migrate_watch.sh — `ringkeeper migrate status --watch` against a real ringkeeperd, the
# job driven through its HTTP routes (no data server): JSON lines at each change, ending with the
# job when it is verified (exit 0); a cancelled job ends the watch with exit 1; SIGINT ends it at
# once (exit 1, "interrupted"); on a terminal (script(1)) a bar, then the job as status prints it.
# Every wait is bounded (the watch polls every 2 s).
# usage: test_cli_migrate_watch.sh RINGKEEPERD RINGKEEPER
. "$(dirname "$0")/lib.sh" "$1"
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
OPS=ops-token-0123456789ab
printf 'ops:%s\n' "$OPS" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
C=/v1/clusters/cache
M=$C/migration
as() { local method=$1 path=$2; shift 2; req "$method" "$path" -H "Authorization: Bearer $OPS" "$@"; }
j() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TMP/body" "$1"; }
data() { # data N: a memcached topology of N nodes (never contacted: the job is driven by hand)
    local nodes= i
    for i in $(seq 0 $(($1 - 1))); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"127.0.0.1:$((21000 + i))\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":64,"data":"memcached","nodes":[%s]}' "$nodes"
}
# done_sources SEQ COUNTERS: worker w1 reports every source of the job's step or phase done
done_sources() {
    req GET "$M" >/dev/null
    local step phase n
    step=$(j "d['step']") phase=$(j "d['sources'][0]['phase']")
    for n in $(j "' '.join(s['node'] for s in d['sources'])"); do
        as POST "$M/progress" --data-binary "{\"worker\":\"w1\",\"seq\":$1,\"step\":$step,\"phase\":\"$phase\",\"node\":\"$n\",\"cursor\":\"end\",\"done\":true,\"counters\":$2}" >/dev/null
    done
}
# wait_for FILE TEXT: until FILE holds TEXT (10 s at most)
wait_for() {
    for _ in $(seq 1 100); do
        grep -qF "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# ended PID: waits for PID, which must end within 10 s (else it is killed), and returns its exit
# code (bash reaps an ended child at once and keeps its code for wait).
ended() {
    for _ in $(seq 1 100); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$1" 2>/dev/null
    wait "$1"
}
watch() { # watch OUT ERR ARGS...: the watch in the background, its pid in W
    local out=$1 err=$2
    shift 2
    RINGKEEPER_TOKEN=$OPS "$RK" migrate status --watch --server "$BASE" --cluster cache "$@" \
        </dev/null >"$out" 2>"$err" &
    W=$!
}

check "v1 activated" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 3)")"
check "policy: migration_window" 200 "$(as PUT "$C/policy" --data-binary '{"migration_window":true}')"
check "v2 activated: a window" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 4)")"
RINGKEEPER_TOKEN=$OPS "$RK" migrate status --watch --server "$BASE" --cluster cache >"$TMP/out" 2>"$TMP/err"
check "no job: exit" 2 "$?"
has "no job: said" "$TMP/err" "cluster cache has no migration job"

# JSON lines at each change until the job is verified: exit 0
check "a job" 201 "$(as POST "$M")"
watch "$TMP/json" "$TMP/json.err" -o json
wait_for "$TMP/json" '"state":"copying"' && ok || bad "no first line: $(cat "$TMP/json.err")"
check "claim by w1" 200 "$(as POST "$M/claim" --data-binary '{"worker":"w1"}')"
done_sources 1 '{"scanned":400,"copied":100,"bytes":9900}'
wait_for "$TMP/json" '"state":"verifying"' && ok || bad "the verify not shown: $(cat "$TMP/json")"
done_sources 2 '{"scanned":400,"checked":100,"matched":100}'
ended "$W"
check "verified: exit 0" 0 "$?"
check "the last line is the verified job" verified \
    "$(tail -1 "$TMP/json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
LINES=$(wc -l <"$TMP/json")
[ "$LINES" -le 6 ] && ok || bad "a line per change, not per poll: $LINES lines"
check "finish the window" 200 "$(as POST "$M/finish")"

# a cancelled job ends the watch with exit 1; SIGINT ends it at once, exit 1
check "v3 activated: a window" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 5)")"
check "a second job" 201 "$(as POST "$M")"
watch "$TMP/c" "$TMP/c.err"
WC=$W
wait_for "$TMP/c" '"state":"copying"' && ok || bad "no line without a terminal: $(cat "$TMP/c.err")"
watch "$TMP/i" "$TMP/i.err"
wait_for "$TMP/i" '"state":"copying"' && ok || bad "the second watch showed nothing"
kill -INT "$W"
ended "$W"
check "SIGINT: exit 1" 1 "$?"
has "SIGINT: said" "$TMP/i.err" "interrupted: job 2 is still copying"

# on a terminal: the bar, then the job as it ended
script -qec "RINGKEEPER_TOKEN=$OPS '$RK' migrate status --watch --server '$BASE' --cluster cache" \
    /dev/null >"$TMP/tty" 2>&1 </dev/null &
T=$!
wait_for "$TMP/tty" "job 2 copying, step 1/1 [" && ok || bad "no bar on a terminal: $(cat "$TMP/tty")"
check "cancel" 200 "$(as POST "$M/cancel")"
ended "$WC"
check "cancelled: exit 1 (no terminal)" 1 "$?"
has "cancelled: said" "$TMP/c.err" "job 2 ended cancelled"
ended "$T"
check "cancelled: exit 1 (terminal)" 1 "$?"
has "the job as status prints it" "$TMP/tty" "job 2: cancelled"
finish
