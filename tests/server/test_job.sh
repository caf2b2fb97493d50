#!/usr/bin/env bash
# test_job.sh — the migration job's routes (SPEC 10, docs/MIGRATE.md "The job") over HTTP, with no
# data server: a job is refused before a window opens and for a topology without "data"; it starts
# over the window's plan in steps, one worker holds its lease (and another gets it once it ran out),
# progress reports count once by their seq and move it through its steps, verify and the verdict;
# throttle, pause, resume and cancel; the finish of the window waits for a verified job unless an
# admin forces it; a before_cutover job fails when its versions change; every change is an event and
# survives a restart. Bad input changes nothing.
# usage: test_job.sh RINGKEEPERD
. "$(dirname "$0")/lib.sh" "$1"
OPS=ops-token-0123456789ab
PUBL=pub-token-0123456789ab
printf 'ops:%s\npub:%s publish\n' "$OPS" "$PUBL" >"$TMP/tokens"
rk_start --token-file "$TMP/tokens"
C=/v1/clusters/cache
M=$C/migration
as() { local method=$1 path=$2; shift 2; req "$method" "$path" -H "Authorization: Bearer $OPS" -H 'Content-Type: application/json' "$@"; }
pub() { local method=$1 path=$2; shift 2; req "$method" "$path" -H "Authorization: Bearer $PUBL" -H 'Content-Type: application/json' "$@"; }
# j EXPR: EXPR (Python, over the body as `d`) of the last answer
j() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TMP/body" "$1"; }
code() { j "d['error']['code']"; }
# data N [DATA]: a topology of N nodes, with "data" unless DATA is "none"
data() {
    local n=$1 d=${2:-memcached} nodes= i
    for i in $(seq 0 $((n - 1))); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"127.0.0.1:$((21000 + i))\",\"weight\":1}"
    done
    if [ "$d" = none ]; then
        printf '{"hash":"xxh3_64","vnode_factor":64,"nodes":[%s]}' "$nodes"
    else
        printf '{"hash":"xxh3_64","vnode_factor":64,"data":"%s","nodes":[%s]}' "$d" "$nodes"
    fi
}
# report NODE SEQ [JSON fields]: a progress report of worker w1 for the job's step and phase
report() {
    local node=$1 seq=$2 more=${3:-}
    req GET "$M" >/dev/null
    local step phase
    step=$(j "d['step']")
    phase=$(j "d['sources'][0]['phase']")
    as POST "$M/progress" --data-binary "{\"worker\":\"w1\",\"seq\":$seq,\"step\":$step,\"phase\":\"$phase\",\"node\":\"$node\"${more:+,$more}}"
}
# finish_sources SEQ COUNTERS: reports every source of the current step or phase done
finish_sources() {
    req GET "$M" >/dev/null
    local n
    for n in $(j "' '.join(s['node'] for s in d['sources'])"); do
        report "$n" "$1" "\"cursor\":\"end\",\"done\":true,\"counters\":$2" >/dev/null
    done
}

check "no cluster yet" 404 "$(req GET "$M")"
check "a start needs a token" 401 "$(req POST "$M")"
check "publish v1 (no data) and activate" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 3 none)")"
check "no job yet" 404 "$(req GET "$M")"
check "no job: code" no_migration "$(code)"
check "no window: start refused" 409 "$(as POST "$M")"
check "no window: code" no_migration_window "$(code)"
check "policy: migration_window" 200 "$(as PUT "$C/policy" --data-binary '{"migration_window":true}')"
check "publish v2 (no data) and activate: a window" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 4 none)")"
check "no data: start refused" 422 "$(as POST "$M")"
check "no data: code" data_unknown "$(code)"
check "no data: field" data "$(j "d['error']['field']")"
check "finish the window" 200 "$(as POST "$C/migration/finish")"
check "publish v3 (redis) and activate: a window v2 -> v3" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 4 redis)")"
check "finish the window" 200 "$(as POST "$C/migration/finish")"
check "publish v4 (memcached) and activate: a window v3 -> v4" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 5)")"
check "a window over versions of different data: refused" 422 "$(as POST "$M")"
check "... the same code" data_unknown "$(code)"
has "... names both" "$TMP/body" 'version 3 serves redis and version 4 memcached'
check "finish the window" 200 "$(as POST "$C/migration/finish")"
check "publish v5 (memcached, 6 nodes) and activate: a window v4 -> v5" 201 "$(as POST "$C/versions?activate=true" --data-binary "$(data 6)")"

# bad bodies change nothing
check "bad mode" 400 "$(as POST "$M" --data-binary '{"mode":"now"}')"
check "bad mode: field" mode "$(j "d['error']['field']")"
check "bad max_step" 400 "$(as POST "$M" --data-binary '{"max_step":2}')"
check "bad throttle" 400 "$(as POST "$M" --data-binary '{"throttle":{"keys_per_s":-1}}')"
check "bad throttle: field" keys_per_s "$(j "d['error']['field']")"
check "unknown field" 400 "$(as POST "$M" --data-binary '{"speed":1}')"
check "delete_source not a boolean" 400 "$(as POST "$M" --data-binary '{"delete_source":1}')"
check "delete_source before the cutover is refused" 400 "$(as POST "$M" --data-binary '{"mode":"before_cutover","to":6,"delete_source":true}')"
check "... field" delete_source "$(j "d['error']['field']")"
check "window: another to" 400 "$(as POST "$M" --data-binary '{"to":4}')"
check "before_cutover needs to" 400 "$(as POST "$M" --data-binary '{"mode":"before_cutover"}')"
check "still no job" 404 "$(req GET "$M")"

# the start: the window's plan, in steps
check "start in steps" 201 "$(pub POST "$M" --data-binary '{"max_step":0.08,"throttle":{"keys_per_s":1000}}')"
check "state copying" copying "$(j "d['state']")"
check "from v4" 4 "$(j "d['from']")"
check "to v5" 5 "$(j "d['to']")"
check "data" memcached "$(j "d['data']")"
check "step 1" 1 "$(j "d['step']")"
STEPS=$(j "d['steps']")
[ "$STEPS" -ge 2 ] && ok || bad "steps: want >= 2, got $STEPS"
check "the throttle" 1000 "$(j "d['throttle']['keys_per_s']")"
check "sources are the first step's" "$(j "d['plan_steps'][0]['sources']")" "$(j "[s['node'] for s in d['sources']]")"
check "no worker yet" None "$(j "d['worker']")"
check "a second start while it runs" 409 "$(as POST "$M")"
check "... code" job_state "$(code)"

# the lease
check "progress before a claim" 409 "$(report n0 1 '"counters":{}')"
check "... code" leased "$(code)"
check "claim: no worker" 400 "$(as POST "$M/claim" --data-binary '{}')"
check "claim by w1" 200 "$(as POST "$M/claim" --data-binary '{"worker":"w1"}')"
check "w1 holds it" w1 "$(j "d['worker']['id']")"
check "claim by w2 while w1 holds it" 409 "$(as POST "$M/claim" --data-binary '{"worker":"w2"}')"
check "... code" leased "$(code)"
has "... names the holder" "$TMP/body" 'worker w1 holds job 1'
check "w1 claims again (a renewal)" 200 "$(as POST "$M/claim" --data-binary '{"worker":"w1"}')"

# progress reports
S0=$(j "d['sources'][0]['node']")
check "a report of another worker" 409 "$(as POST "$M/progress" --data-binary "{\"worker\":\"w2\",\"seq\":1,\"step\":1,\"phase\":\"copy\",\"node\":\"$S0\",\"counters\":{}}")"
check "a report without seq" 400 "$(report "$S0" 0 '"counters":{}')"
check "... field" seq "$(j "d['error']['field']")"
check "a report of a node that is no source" 400 "$(report nope 1 '"counters":{}')"
check "... field" node "$(j "d['error']['field']")"
check "a report of another step" 409 "$(as POST "$M/progress" --data-binary "{\"worker\":\"w1\",\"seq\":1,\"step\":9,\"phase\":\"copy\",\"node\":\"$S0\",\"counters\":{}}")"
check "an unknown counter" 400 "$(report "$S0" 1 '"counters":{"moved":1}')"
check "a report" 200 "$(report "$S0" 1 '"cursor":"100","counters":{"scanned":100,"copied":40,"bytes":4000},"errors":[{"key":"k%20x","message":"NOT_STORED?"}]')"
check "counted" 40 "$(j "d['counters']['copied']")"
check "the cursor kept" 100 "$(j "[s for s in d['sources'] if s['node']=='$S0'][0]['cursor']")"
check "the error listed with its node" "$S0" "$(j "d['errors'][0]['node']")"
check "the same report again (a retry) counts once" 200 "$(report "$S0" 1 '"cursor":"100","counters":{"scanned":100,"copied":40,"bytes":4000}')"
check "... still 40" 40 "$(j "d['counters']['copied']")"
check "counters never go back" 400 "$(report "$S0" 2 '"counters":{"copied":30}')"
check "... field" counters "$(j "d['error']['field']")"
check "the next report adds what grew" 200 "$(report "$S0" 2 '"cursor":"200","counters":{"scanned":200,"copied":90,"bytes":9000}')"
check "... 90" 90 "$(j "d['counters']['copied']")"
check "... bytes" 9000 "$(j "d['counters']['bytes']")"
# the caps of a report (docs/API.md, limits): 100 listed keys, 1 KB of text; refused whole
LIST=$(/usr/bin/python3 -c 'import json; print(json.dumps([{"key":"k%d" % i,"message":"m"} for i in range(101)]))')
check "a report listing 101 keys" 400 "$(report "$S0" 3 "\"counters\":{},\"errors\":$LIST")"
check "... field" errors "$(j "d['error']['field']")"
LONG=$(head -c 1025 /dev/zero | tr '\0' k)
check "a report with a key over 1024 bytes" 400 "$(report "$S0" 3 "\"counters\":{},\"skipped\":[{\"key\":\"$LONG\",\"bytes\":1}]")"
check "a report with a cursor over 1024 bytes" 400 "$(report "$S0" 3 "\"cursor\":\"$LONG\",\"counters\":{}")"
check "... field" cursor "$(j "d['error']['field']")"
check "... none of them changed the job" "90 200 1" "$(req GET "$M" >/dev/null; j "'%d %s %d' % (d['counters']['copied'], [s for s in d['sources'] if s['node']=='$S0'][0]['cursor'], len(d['errors']))")"

# throttle, pause, resume
check "throttle" 200 "$(pub PUT "$M/throttle" --data-binary '{"keys_per_s":50,"bytes_per_s":1000000}')"
check "... set" 50 "$(j "d['throttle']['keys_per_s']")"
check "throttle: bad" 400 "$(as PUT "$M/throttle" --data-binary '{"bytes_per_s":"fast"}')"
check "resume a running job" 409 "$(as POST "$M/resume")"
check "pause" 200 "$(as POST "$M/pause" --data-binary '{"comment":"peak hour"}')"
check "... paused" paused "$(j "d['state']")"
check "a report while paused is kept" 200 "$(report "$S0" 3 '"cursor":"300","counters":{"scanned":300,"copied":100,"bytes":9900}')"
check "... and the job stays paused" paused "$(j "d['state']")"
check "resume" 200 "$(as POST "$M/resume")"
check "... copying" copying "$(j "d['state']")"
check "finish before the job is verified" 409 "$(as POST "$C/migration/finish")"
check "... code" not_verified "$(code)"
check "force without a reason" 400 "$(as POST "$C/migration/finish" --data-binary '{"force":true}')"
check "force without admin" 403 "$(pub POST "$C/migration/finish" --data-binary '{"force":true,"reason":"r"}')"

# every step, then verify, then the verdict
for s in $(seq 1 "$STEPS"); do
    finish_sources $((10 + s)) '{"scanned":400,"copied":100,"bytes":9900}'
done
check "after the last step: verifying" verifying "$(j "d['state']")"
check "... verify sources" verify "$(j "d['sources'][0]['phase']")"
check "... a fatal error pauses the job" 200 "$(report "$(j "d['sources'][0]['node']")" 1 '"counters":{},"error":"memcached 127.0.0.1:21001: cannot connect"')"
check "... paused" paused "$(j "d['state']")"
has "... the error kept" "$TMP/body" 'cannot connect'
check "resume" 200 "$(as POST "$M/resume")"
check "... verifying again" verifying "$(j "d['state']")"
finish_sources 20 '{"scanned":400,"checked":100,"matched":100,"updated":3,"deleted":100}'
check "verified" verified "$(j "d['state']")"
NV=$(j "len(d['sources'])")
check "... the catch-up's and delete_source's counters" "$((3 * NV)) $((100 * NV))" "$(j "'%d %d' % (d['verify']['counters']['updated'], d['verify']['counters']['deleted'])")"
check "no mismatches" 0 "$(j "d['verify']['mismatches']")"
check "the lease let go" None "$(j "d['worker']")"
COPIED=$(req GET "$M" >/dev/null; j "d['counters']['copied']")
check "metrics" 200 "$(req GET /metrics)"
has "metrics: the job's state" "$TMP/body" 'ringkeeper_migration_state{cluster="cache",state="verified"} 1'
has "metrics: not another" "$TMP/body" 'ringkeeper_migration_state{cluster="cache",state="copying"} 0'
has "metrics: keys copied" "$TMP/body" "ringkeeper_migration_keys_total{cluster=\"cache\",kind=\"copied\"} $COPIED"
has "metrics: bytes" "$TMP/body" 'ringkeeper_migration_bytes_total{cluster="cache"} '
check "a report to a verified job" 409 "$(report "$S0" 99 '"counters":{}')"

# the job survives a restart
rk_stop
rk_start --token-file "$TMP/tokens"
check "after a restart" 200 "$(req GET "$M")"
check "... still verified" verified "$(j "d['state']")"
check "finish the window" 200 "$(as POST "$C/migration/finish")"
check "the job finished with it" finished "$(req GET "$M" >/dev/null; j "d['state']")"
check "events" 200 "$(req GET "$C/events?limit=30")"
KINDS=$(j "' '.join(sorted(set(e['kind'] for e in d['events'] if e['kind'].startswith('migration'))))")
check "the job's events" "migration_pause migration_resume migration_start migration_throttle migration_verified" "$KINDS"
check "the pause's comment" "peak hour" "$(j "[e['detail'] for e in d['events'] if e['kind']=='migration_pause'][-1]")"

# a before_cutover job, whose versions change under it; a lease that runs out
check "publish v6 (staged)" 201 "$(as POST "$C/versions" --data-binary "$(data 7)")"
check "before_cutover of the active version" 400 "$(as POST "$M" --data-binary '{"mode":"before_cutover","to":5}')"
check "before_cutover to v6" 201 "$(as POST "$M" --data-binary '{"mode":"before_cutover","to":6}')"
check "... from the active v5" 5 "$(j "d['from']")"
check "claim by w1" 200 "$(as POST "$M/claim" --data-binary '{"worker":"w1"}')"
sleep $((10 + 1))
check "w2 claims once w1's lease ran out" 200 "$(as POST "$M/claim" --data-binary '{"worker":"w2"}')"
check "... w2 holds it" w2 "$(j "d['worker']['id']")"
check "activate v6 (a window v5 -> v6)" 200 "$(as POST "$C/versions/6/activate")"
check "the pre-warm's claim now" 409 "$(as POST "$M/claim" --data-binary '{"worker":"w2"}')"
check "... code" version_changed "$(code)"
check "... the job failed" failed "$(req GET "$M" >/dev/null; j "d['state']")"

# cancel
check "a window job v5 -> v6, with delete_source" 201 "$(as POST "$M" --data-binary '{"delete_source":true}')"
check "... kept" True "$(j "d['delete_source']")"
check "cancel" 200 "$(as POST "$M/cancel")"
check "... cancelled" cancelled "$(j "d['state']")"
check "cancel again" 409 "$(as POST "$M/cancel")"
check "finish past a cancelled job: not verified" 409 "$(as POST "$C/migration/finish")"
check "an admin forces it with a reason" 200 "$(as POST "$C/migration/finish" --data-binary '{"force":true,"reason":"copied by hand"}')"
check "the job stays cancelled" cancelled "$(req GET "$M" >/dev/null; j "d['state']")"
# a window job while the whole fleet holds its version: a copy that differs on its new owner is
# the application's newer write (every write went there), counted "written", not a mismatch; one
# client still on the old version makes it a mismatch again (it may have written behind the copy)
etag() { sed -n 's/^ETag: *//Ip' "$TMP/headers" | tr -d '\r'; }
held_job() { # held_job CLUSTER OLD: a job v1 -> v2 claimed while client app-1 holds v2 (v1: OLD=1)
    C=/v1/clusters/$1 M=/v1/clusters/$1/migration
    as POST "$C/versions?activate=true" --data-binary "$(data 3)" >/dev/null
    req GET "$C/ring" >/dev/null; local t1; t1=$(etag)
    as PUT "$C/policy" --data-binary '{"migration_window":true}' >/dev/null
    as POST "$C/versions?activate=true" --data-binary "$(data 4)" >/dev/null
    req GET "$C/ring" >/dev/null; local t2; t2=$(etag)
    req GET "$C/ring" -H "RK-Client: app-1" -H "If-None-Match: $([ "$2" = 1 ] && echo "$t1" || echo "$t2")" >/dev/null
    as POST "$M" >/dev/null
    as POST "$M/claim" --data-binary '{"worker":"w1"}' >/dev/null
    local s
    for s in $(seq 1 "$(j "d['steps']")"); do
        finish_sources $((10 + s)) '{"scanned":400,"copied":100,"bytes":9900}'
    done
    finish_sources 20 '{"scanned":400,"checked":100,"matched":98,"value":2}'
}
held_job held 0
check "the fleet held v2: verified" verified "$(j "d['state']")"
check "... the differing copies counted written, no mismatch" "True 0 $((2 * $(j "len(d['sources'])")))" "$(j "'%s %d %d' % (d['fleet_held'], d['verify']['mismatches'], d['verify']['written'])")"
held_job straggler 1
check "a client on v1: failed" failed "$(j "d['state']")"
check "... the differing copies are mismatches" "False $((2 * $(j "len(d['sources'])")))" "$(j "'%s %d' % (d['fleet_held'], d['verify']['mismatches'])")"
C=/v1/clusters/cache M=/v1/clusters/cache/migration

# a job of more sources than the server keeps (RKD_JOB_SOURCES_MAX 1024): 1100 nodes, nearly
# all losing keys to a big new one; refused whole
many() { # many N [BIG_WEIGHT]: nodes n1..nN of weight 1, and with BIG_WEIGHT a node "big"
    /usr/bin/python3 -c 'import json,sys; n=int(sys.argv[1]); nodes=[{"id":"n%d" % i,"addr":"10.1.%d.%d:11211" % (i // 250, i % 250),"weight":1} for i in range(1, n + 1)]
if len(sys.argv) > 2: nodes.append({"id":"big","addr":"10.2.0.1:11211","weight":int(sys.argv[2])})
print(json.dumps({"hash":"xxh3_64","vnode_factor":8,"data":"memcached","nodes":nodes}))' "$@"
}
B=/v1/clusters/big
check "1100 nodes" 201 "$(as POST "$B/versions?activate=true" --data-binary "$(many 1100)")"
check "... a window policy" 200 "$(as PUT "$B/policy" --data-binary '{"migration_window":true}')"
check "... and a big new node" 201 "$(as POST "$B/versions?activate=true" --data-binary "$(many 1100 500)")"
check "a job of over 1024 sources" 422 "$(as POST "$B/migration")"
check "... code" job_too_large "$(code)"
check "... and no job" 404 "$(req GET "$B/migration")"
check "unknown cluster" 404 "$(req GET /v1/clusters/nope/migration)"
check "the job's routes' methods" 405 "$(req GET "$M/claim")"
finish
