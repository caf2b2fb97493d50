#!/usr/bin/env bash
# make_api_doc.sh — regenerates docs/API.md: starts a real ringkeeperd on a free loopback port with a
# temporary database, runs a fixed sequence of curl requests against it, and writes every route with
# its request and the response it really got. Run it after any change to the API:
#   tests/server/make_api_doc.sh build/server/ringkeeperd .
# Each request is checked for the status the doc expects; on a surprise it stops and writes nothing.
# JSON bodies are pretty-printed with python3 when it is installed (else shown as sent).
# usage: make_api_doc.sh RINGKEEPERD SOURCE_DIR
# shellcheck disable=SC2016 # '$RK' and markdown backticks are meant literally
if [ $# -ne 2 ]; then
    echo "usage: $0 RINGKEEPERD SOURCE_DIR" >&2
    exit 2
fi
. "$(dirname "$0")/lib.sh" "$1"
set -o pipefail
src=$(cd "$2" && pwd)
EX=$TMP/ex # one markdown snippet per example: $EX/NAME.md
mkdir -p "$EX"
J='Content-Type: application/json'
PRETTY=
command -v python3 >/dev/null && PRETTY=1
# The pretty-printer: indented JSON, with objects and arrays of plain values on one line when short.
PRETTY_PY='
import json, sys
def fmt(v, ind):
    flat = json.dumps(v, ensure_ascii=False)
    inner = v.values() if isinstance(v, dict) else v if isinstance(v, list) else []
    if not isinstance(v, (dict, list)) or not inner or (
            not any(isinstance(x, (dict, list)) for x in inner) and ind + len(flat) <= 120):
        return flat
    pad = " " * (ind + 2)
    if isinstance(v, dict):
        items, o, c = [pad + json.dumps(k) + ": " + fmt(x, ind + 2) for k, x in v.items()], "{", "}"
    else:
        items, o, c = [pad + fmt(x, ind + 2) for x in v], "[", "]"
    return o + "\n" + ",\n".join(items) + "\n" + " " * ind + c
print(fmt(json.load(sys.stdin), 0))
'
FILTER= # when set, a function the next example's body goes through (to trim it)

die() {
    echo "make_api_doc: $*" >&2
    exit 1
}

# shown ARG: the argument as a reader would type it: '$RK...' in double quotes, plain words bare,
# anything else in single quotes.
shown() {
    case $1 in
    '$RK'*) printf ' "%s"' "$1" ;;
    '' | *[!A-Za-z0-9_./:=@%+,-]*) printf " '%s'" "${1//\'/\'\\\'\'}" ;;
    *) printf ' %s' "$1" ;;
    esac
}

# ex NAME STATUS [curl args...]: runs curl against the server ('$RK' in an argument stands for its
# base URL, '@FILE' reads $TMP/FILE), checks the status, and writes the command and the response
# (status line, the headers that matter, the body) to $EX/NAME.md.
ex() {
    local name=$1 want=$2 a cmd=curl run=() status ctype
    shift 2
    for a in "$@"; do
        cmd+=$(shown "$a")
        case $a in
        '$RK'*) run+=("$BASE${a#\$RK}") ;;
        @*) run+=("@$TMP/${a#@}") ;;
        *) run+=("$a") ;;
        esac
    done
    rm -f "$TMP/h" "$TMP/b" # curl leaves -o's file alone when there is no body (304)
    curl -sS --max-time 15 -D "$TMP/h" -o "$TMP/b" "${run[@]}" || die "curl failed: $cmd"
    status=$(head -1 "$TMP/h" | tr -d '\r')
    case $status in
    "HTTP/"*" $want "* | "HTTP/"*" $want") ;;
    *) die "$cmd: want $want, got [$status]: $(head -c 400 "$TMP/b")" ;;
    esac
    ctype=$(sed -n 's/^Content-Type: *//Ip' "$TMP/h" | tr -d '\r')
    {
        printf '```sh\n%s\n```\n\n```http\n%s\n' "${cmd/curl/curl -i}" "$status"
        grep -iE '^(Content-Type|ETag|Location|Allow):' "$TMP/h" | tr -d '\r'
        printf '```\n'
        if [ -s "$TMP/b" ]; then
            if [ -n "$FILTER" ]; then
                printf '\n```text\n'
                "$FILTER" <"$TMP/b"
            elif [ -n "$PRETTY" ] && [[ $ctype == application/json* ]]; then
                printf '\n```json\n'
                python3 -c "$PRETTY_PY" <"$TMP/b" || die "$cmd: the body is not JSON"
            else
                printf '\n```text\n'
                cat "$TMP/b"
            fi
            printf '```\n'
        fi
    } >"$EX/$name.md"
    FILTER=
}

# show NAME: the snippet of an example, into the document.
show() {
    [ -f "$EX/$1.md" ] || die "no example named $1"
    cat "$EX/$1.md"
}

# Metrics: each family's TYPE line and first sample (OPERATIONS.md's table says what each counts, so
# the HELP lines go), then how many samples were left out: the whole answer has a line per bucket and
# route of the latency histogram, some 300 lines.
trim_metrics() {
    awk '/^# HELP/ { n = 0; next }
         /^#/ { print; next }
         { if (++n == 1) print; else more++ }
         END { if (more) print "# ... and " more " more samples in the whole answer" }'
}

# ---- the requests, in the order they run ----

node() { printf '{"id":"cache-%s","addr":"10.0.0.%s:11211","weight":1}' "$1" "$2"; }
T3="{\"hash\":\"xxh3_64\",\"vnode_factor\":8,\"nodes\":[$(node a 1),$(node b 2),$(node c 3)],\"comment\":\"three cache nodes\"}"
T4="{\"hash\":\"xxh3_64\",\"vnode_factor\":8,\"nodes\":[$(node a 1),$(node b 2),$(node c 3),$(node d 4)],\"comment\":\"add cache-d\"}"
T1='{"hash":"xxh3_64","vnode_factor":160,"nodes":[{"id":"cache-a","addr":"10.0.0.1:11211","weight":1}]}'
S1='{"hash":"fnv1a_32","vnode_factor":160,"nodes":[{"id":"s1","addr":"10.1.0.1:6379","weight":1}]}'
S2='{"hash":"xxh3_64","vnode_factor":160,"nodes":[{"id":"s1","addr":"10.1.0.1:6379","weight":1}]}'
MAX_BODY=4096
{
    printf '{"hash":"xxh3_64","vnode_factor":160,"nodes":['
    for i in $(seq 1 120); do
        [ "$i" -gt 1 ] && printf ','
        printf '{"id":"n%s","addr":"10.2.0.%s:11211","weight":1}' "$i" "$i"
    done
    printf ']}'
} >"$TMP/big.json"
[ "$(wc -c <"$TMP/big.json")" -gt "$MAX_BODY" ] || die "big.json is not over $MAX_BODY bytes"

MAX_CLUSTERS=2
rk_start --max-body "$MAX_BODY" --max-plan-rows 1000 --max-clusters "$MAX_CLUSTERS"
ex healthz 200 '$RK/healthz'
ex readyz 200 '$RK/readyz'
ex clusters_empty 200 '$RK/v1/clusters'
ex publish_v1 201 -X POST '$RK/v1/clusters/cache/versions' -H "$J" --data-binary "$T3"
ex e_no_active_version 404 '$RK/v1/clusters/cache/ring'
ex get_v1 200 '$RK/v1/clusters/cache/versions/1'
ex activate_v1 200 -X POST '$RK/v1/clusters/cache/versions/1/activate'
# a client that fetches version 1 and then stays silent: the straggler of the clients example
curl -s -o /dev/null -H 'RK-Client: web-1' -A 'libringkeeper/0.1.0' "$BASE/v1/clusters/cache/ring"
ex publish_v2 201 -X POST '$RK/v1/clusters/cache/versions' -H "$J" -H 'If-Match: "v1"' --data-binary "$T4"
ex plan_json 200 '$RK/v1/clusters/cache/plan?max_step=0.1&keys=1000000'
ex plan_text 200 '$RK/v1/clusters/cache/plan?from=1&to=2&max_step=0.1' -H 'Accept: text/plain'
ex picture 200 '$RK/v1/clusters/cache/versions/2/picture?bins=360'
ex arc 200 '$RK/v1/clusters/cache/versions/2/arc?hash=8000000000000000'
ex plan_picture 200 '$RK/v1/clusters/cache/plan?from=1&to=2&format=picture&bins=360'
ex activate_v2 200 -X POST '$RK/v1/clusters/cache/versions/2/activate' -H 'If-Match: "v1"'
ex ring 200 '$RK/v1/clusters/cache/ring'
TAG=$(sed -n 's/^ETag: *//Ip' "$TMP/h" | tr -d '\r')
ex ring_304 304 '$RK/v1/clusters/cache/ring' -H "If-None-Match: $TAG"
ex ring_bare 200 '$RK/v1/clusters/cache/ring' -H 'If-None-Match: "v2"'
start=$(date +%s)
ex ring_wait 304 '$RK/v1/clusters/cache/ring?wait=1' -H "If-None-Match: $TAG"
WAITED=$(($(date +%s) - start))
# web-2 fetches v2 and confirms it (its next poll names it); web-3 refuses v2 and says so
for id in web-2 web-3; do
    curl -s -o /dev/null -H "RK-Client: $id" -A 'libringkeeper/0.1.0' "$BASE/v1/clusters/cache/ring"
done
curl -s -o /dev/null -H "RK-Client: web-2" -A 'libringkeeper/0.1.0' -H "If-None-Match: $TAG" \
    "$BASE/v1/clusters/cache/ring"
ex ring_refused 304 '$RK/v1/clusters/cache/ring' -H 'RK-Client: web-3' -A 'libringkeeper/0.1.0' \
    -H "RK-Refused: $TAG vnode_factor: the server's ring has vnode_factor 160 but this application expects 100"
ex clients 200 '$RK/v1/clusters/cache/clients'
ex clients_limit 200 '$RK/v1/clusters/cache/clients?limit=1'
ex changes 200 '$RK/v1/clusters/cache/changes'
SEQ=$(curl -s "$BASE/v1/clusters/cache/changes" | sed 's/.*"seq": *\([0-9]*\).*/\1/')
ex changes_wait 200 "\$RK/v1/clusters/cache/changes?since=$SEQ&wait=1"
ex revert_v1 201 -X POST '$RK/v1/clusters/cache/versions/1/revert'
ex list 200 '$RK/v1/clusters/cache/versions?limit=2'
ex list_before 200 '$RK/v1/clusters/cache/versions?limit=2&before=2'
# one example of each error
ex e_invalid_topology 400 -X POST '$RK/v1/clusters/cache/versions' -H "$J" \
    --data-binary '{"hash":"xxh3_64","vnode_factor":160,"nodes":[{"id":"cache-a","addr":"10.0.0.1:11211","weight":-1}]}'
ex e_malformed_json 400 -X POST '$RK/v1/clusters/cache/versions' -H "$J" --data-binary '{"hash": "xxh3_64",'
ex e_invalid_parameter 400 '$RK/v1/clusters/cache/ring?wait=61'
ex e_invalid_header 400 -X POST '$RK/v1/clusters/cache/versions/3/activate' -H 'If-Match: v2'
ex e_invalid_cluster 400 '$RK/v1/clusters/Cache/ring'
ex e_invalid_version 400 '$RK/v1/clusters/cache/versions/latest'
ex e_invalid_path 400 -X POST '$RK/v1/clusters/cache/versions%00zzz' -H "$J" --data-binary "$T1"
ex e_not_found 404 '$RK/v1/cluster'
ex e_unknown_cluster 404 '$RK/v1/clusters/nope/versions'
ex e_unknown_version 404 '$RK/v1/clusters/cache/versions/42'
ex e_method_not_allowed 405 -X DELETE '$RK/v1/clusters/cache/versions'
ex e_conflict 409 -X POST '$RK/v1/clusters/cache/versions/1/activate'
ex e_precondition_failed 412 -X POST '$RK/v1/clusters/cache/versions' -H "$J" -H 'If-Match: "v2"' --data-binary "$T1"
ex e_body_too_large 413 -X POST '$RK/v1/clusters/cache/versions' -H "$J" --data-binary @big.json
ex e_cross_origin 403 -X POST '$RK/v1/clusters/cache/versions?activate=true' -H 'Origin: https://evil.example' -H "$J" --data-binary "$T1"
ex e_unsupported_media_type 415 -X POST '$RK/v1/clusters/cache/versions' -H 'Content-Type: text/plain' --data-binary "$T1"
ex e_unknown_host 421 -X POST '$RK/v1/clusters/cache/versions/1/activate' -H 'Host: rebound.evil.example:7070' -H 'Origin: http://rebound.evil.example:7070'
ex e_too_many_points 422 -X POST '$RK/v1/clusters/cache/versions' -H "$J" \
    --data-binary '{"hash":"xxh3_64","vnode_factor":4096,"nodes":[{"id":"a","addr":"10.0.0.1:11211","weight":1000},{"id":"b","addr":"10.0.0.2:11211","weight":100}]}'
ex publish_new 201 -X POST '$RK/v1/clusters/sessions/versions?activate=true' -H "$J" -H 'If-Match: "v0"' --data-binary "$S1"
ex publish_s2 201 -X POST '$RK/v1/clusters/sessions/versions' -H "$J" --data-binary "$S2"
ex e_too_many_clusters 422 -X POST '$RK/v1/clusters/carts/versions' -H "$J" --data-binary "$T3"
ex e_hash_mismatch 422 '$RK/v1/clusters/sessions/plan'
ex e_plan_too_large 422 '$RK/v1/clusters/cache/plan?from=1&to=2&max_step=0.0001'
ex clusters 200 '$RK/v1/clusters'
ex clusters_page 200 '$RK/v1/clusters?limit=1'
ex clusters_next 200 '$RK/v1/clusters?limit=1&after=cache'
FILTER=trim_metrics ex metrics 200 '$RK/metrics'
rk_stop
[ "$STOP_CODE" -eq 0 ] || die "the server exited $STOP_CODE"

# a second server, with tokens
printf '# name:token [roles], one a line\nops:0f3a9c1e7b2d4a6f8e0c\nalice:a11ce5ecret0000000000\nbob:b0b5ecret00000000000\ncarol:ca401ecret0000000000 publish\n' >"$TMP/tokens"
rk_start --token-file "$TMP/tokens" --db "$TMP/auth.db"
ex e_unauthorized 401 -X POST '$RK/v1/clusters/cache/versions' -H "$J" --data-binary "$T1"
ex e_forbidden 403 -X POST '$RK/v1/clusters/cache/versions' -H "$J" -H 'Authorization: Bearer not-a-configured-token' --data-binary "$T1"
ex auth_ok 201 -X POST '$RK/v1/clusters/cache/versions' -H "$J" -H 'Authorization: Bearer 0f3a9c1e7b2d4a6f8e0c' --data-binary "$T3"
# the cutover (docs/API.md, "Cutover"), as two operators: alice publishes, bob approves
ALICE='Authorization: Bearer a11ce5ecret0000000000'
BOB='Authorization: Bearer b0b5ecret00000000000'
ex policy_default 200 '$RK/v1/clusters/cache/policy'
ex policy_put 200 -X PUT '$RK/v1/clusters/cache/policy' -H "$J" -H "$ALICE" \
    --data-binary '{"max_moved_fraction":0.05,"approvals":1,"distinct_approver":true}'
ex e_invalid_body 400 -X PUT '$RK/v1/clusters/cache/policy' -H "$J" -H "$ALICE" --data-binary '{"approvals":-1}'
ex cutover_approve_v1 409 -X POST '$RK/v1/clusters/cache/versions/1/approve' -H "$J" -H "$BOB" --data-binary '{"digest":"0000000000000000"}'
D01=$(sed -n 's/.*is now \([0-9a-f]\{16\}\), not.*/\1/p' "$TMP/b")
ex approve_first 200 -X POST '$RK/v1/clusters/cache/versions/1/approve' -H "$J" -H "$BOB" --data-binary "{\"digest\":\"$D01\"}"
ex cutover_activate_v1 200 -X POST '$RK/v1/clusters/cache/versions/1/activate' -H "$ALICE"
ex cutover_publish_v2 201 -X POST '$RK/v1/clusters/cache/versions' -H "$J" -H "$ALICE" --data-binary "$T4"
ex cutover_plan 200 '$RK/v1/clusters/cache/plan?format=text'
D12=$(sed -n 's/^digest *//p' "$TMP/b")
CAROL='Authorization: Bearer ca401ecret0000000000'
ex e_role_required 403 -X POST '$RK/v1/clusters/cache/versions/2/approve' -H "$J" -H "$CAROL" --data-binary '{"digest":"0000000000000000"}'
ex e_admin_required 403 -X PUT '$RK/v1/clusters/cache/policy' -H "$J" -H "$CAROL" --data-binary '{"approvals":0}'
ex e_self_approval 403 -X POST '$RK/v1/clusters/cache/versions/2/approve' -H "$J" -H "$ALICE" --data-binary "{\"digest\":\"$D12\"}"
ex e_plan_changed 409 -X POST '$RK/v1/clusters/cache/versions/2/approve' -H "$J" -H "$BOB" --data-binary "{\"digest\":\"$D01\"}"
ex e_budget_exceeded 422 -X POST '$RK/v1/clusters/cache/versions/2/activate' -H "$BOB"
ex e_approval_required 409 -X POST '$RK/v1/clusters/cache/versions/2/activate' -H "$J" -H "$BOB" --data-binary '{"force":true,"reason":"capacity for the sale"}'
ex approve_dry_run 200 -X POST '$RK/v1/clusters/cache/versions/2/approve' -H "$J" -H "$BOB" --data-binary "{\"digest\":\"$D12\",\"dry_run\":true}"
ex approve 200 -X POST '$RK/v1/clusters/cache/versions/2/approve' -H "$J" -H "$BOB" --data-binary "{\"digest\":\"$D12\",\"comment\":\"reviewed the plan\"}"
ex activate_force 200 -X POST '$RK/v1/clusters/cache/versions/2/activate' -H "$J" -H "$BOB" --data-binary '{"force":true,"reason":"capacity for the sale"}'
ex events 200 '$RK/v1/clusters/cache/events?limit=4'
# the migration window of docs/API.md, on a cluster of its own
ex window_v1 201 -X POST '$RK/v1/clusters/web/versions?activate=true' -H "$J" -H "$ALICE" --data-binary "$T3"
ex window_policy 200 -X PUT '$RK/v1/clusters/web/policy' -H "$J" -H "$ALICE" --data-binary '{"migration_window":true}'
ex window_v2 201 -X POST '$RK/v1/clusters/web/versions' -H "$J" -H "$ALICE" --data-binary "$T4"
ex window_open 200 -X POST '$RK/v1/clusters/web/versions/2/activate' -H "$ALICE"
ex window_ring 200 '$RK/v1/clusters/web/ring'
WTAG=$(sed -n 's/^ETag: *//Ip' "$TMP/h" | tr -d '\r')
ex window_v3 201 -X POST '$RK/v1/clusters/web/versions' -H "$J" -H "$ALICE" --data-binary "$T1"
ex e_migration_open 409 -X POST '$RK/v1/clusters/web/versions/3/activate' -H "$ALICE"
ex window_finish 200 -X POST '$RK/v1/clusters/web/migration/finish' -H "$J" -H "$BOB" --data-binary '{"comment":"copied the moved keys"}'
ex window_ring_after 200 '$RK/v1/clusters/web/ring' -H "If-None-Match: $WTAG"
ex e_no_migration_window 409 -X POST '$RK/v1/clusters/web/migration/finish' -H "$BOB"
ex window_events 200 '$RK/v1/clusters/web/events?limit=1'
# the migration job of docs/MIGRATE.md, on a memcached cluster of its own
TD3="{\"hash\":\"xxh3_64\",\"vnode_factor\":8,\"data\":\"memcached\",\"nodes\":[$(node a 1),$(node b 2),$(node c 3)]}"
TD4="{\"hash\":\"xxh3_64\",\"vnode_factor\":8,\"data\":\"memcached\",\"nodes\":[$(node a 1),$(node b 2),$(node c 3),$(node d 4)]}"
ex job_v1 201 -X POST '$RK/v1/clusters/mc/versions?activate=true' -H "$J" -H "$ALICE" --data-binary "$TD3"
ex job_policy 200 -X PUT '$RK/v1/clusters/mc/policy' -H "$J" -H "$ALICE" --data-binary '{"migration_window":true}'
ex job_v2 201 -X POST '$RK/v1/clusters/mc/versions?activate=true' -H "$J" -H "$ALICE" --data-binary "$TD4"
ex e_no_migration 404 '$RK/v1/clusters/mc/migration'
ex job_start 201 -X POST '$RK/v1/clusters/mc/migration' -H "$J" -H "$ALICE" --data-binary '{"throttle":{"keys_per_s":20000,"bytes_per_s":0}}'
ex e_job_state 409 -X POST '$RK/v1/clusters/mc/migration' -H "$J" -H "$ALICE" --data-binary '{}'
ex job_claim 200 -X POST '$RK/v1/clusters/mc/migration/claim' -H "$J" -H "$ALICE" --data-binary '{"worker":"mover-1"}'
ex e_leased 409 -X POST '$RK/v1/clusters/mc/migration/claim' -H "$J" -H "$ALICE" --data-binary '{"worker":"mover-2"}'
ex job_progress 200 -X POST '$RK/v1/clusters/mc/migration/progress' -H "$J" -H "$ALICE" --data-binary '{"worker":"mover-1","seq":1,"step":1,"phase":"copy","node":"cache-a","cursor":"500","done":false,"counters":{"scanned":500,"stay":371,"copied":126,"present":3,"bytes":201600}}'
ex job_throttle 200 -X PUT '$RK/v1/clusters/mc/migration/throttle' -H "$J" -H "$ALICE" --data-binary '{"keys_per_s":5000}'
ex job_pause 200 -X POST '$RK/v1/clusters/mc/migration/pause' -H "$J" -H "$ALICE" --data-binary '{"comment":"peak hour"}'
ex job_resume 200 -X POST '$RK/v1/clusters/mc/migration/resume' -H "$J" -H "$ALICE"
ex e_not_verified 409 -X POST '$RK/v1/clusters/mc/migration/finish' -H "$J" -H "$ALICE"
ex job_get 200 '$RK/v1/clusters/mc/migration'
ex job_cancel 200 -X POST '$RK/v1/clusters/mc/migration/cancel' -H "$J" -H "$ALICE" --data-binary '{"comment":"moved by hand instead"}'
# a pre-warm whose versions change under it, and a topology that says nothing of its data
ex job_pre_v1 201 -X POST '$RK/v1/clusters/pre/versions?activate=true' -H "$J" -H "$ALICE" --data-binary "$TD3"
ex job_pre_v2 201 -X POST '$RK/v1/clusters/pre/versions' -H "$J" -H "$ALICE" --data-binary "$TD4"
ex job_pre_v3 201 -X POST '$RK/v1/clusters/pre/versions' -H "$J" -H "$ALICE" --data-binary "$T4"
ex e_data_unknown 422 -X POST '$RK/v1/clusters/pre/migration' -H "$J" -H "$ALICE" --data-binary '{"mode":"before_cutover","to":3}'
ex job_before 201 -X POST '$RK/v1/clusters/pre/migration' -H "$J" -H "$ALICE" --data-binary '{"mode":"before_cutover","to":2}'
ex job_pre_activate 200 -X POST '$RK/v1/clusters/pre/versions/2/activate' -H "$ALICE"
ex e_version_changed 409 -X POST '$RK/v1/clusters/pre/migration/claim' -H "$J" -H "$ALICE" --data-binary '{"worker":"mover-1"}'
# a job of more sources than a server keeps: 1100 nodes, nearly all losing keys to a big new one
many() { # many N [LAST_WEIGHT]: nodes n1..nN of weight 1, and with LAST_WEIGHT one more of it
    local n=$1 i nodes=
    for i in $(seq 1 "$n"); do nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"10.1.$((i / 250)).$((i % 250)):11211\",\"weight\":1}"; done
    [ -z "${2:-}" ] || nodes="$nodes,{\"id\":\"big\",\"addr\":\"10.2.0.1:11211\",\"weight\":$2}"
    printf '{"hash":"xxh3_64","vnode_factor":8,"data":"memcached","nodes":[%s]}' "$nodes"
}
many 1100 >"$TMP/n1100.json"
many 1100 500 >"$TMP/n1101.json"
ex job_big_v1 201 -X POST '$RK/v1/clusters/big/versions?activate=true' -H "$J" -H "$ALICE" --data-binary @n1100.json
ex job_big_policy 200 -X PUT '$RK/v1/clusters/big/policy' -H "$J" -H "$ALICE" --data-binary '{"migration_window":true}'
ex job_big_v2 201 -X POST '$RK/v1/clusters/big/versions?activate=true' -H "$J" -H "$ALICE" --data-binary @n1101.json
ex e_job_too_large 422 -X POST '$RK/v1/clusters/big/migration' -H "$J" -H "$ALICE"
# a rollout (docs/MIGRATE.md, "Rollouts"): draining cache-d of four nodes in two approved steps
ex ro_v1 201 -X POST '$RK/v1/clusters/rack/versions?activate=true' -H "$J" -H "$ALICE" --data-binary "$T4"
ex rollout_create 201 -X POST '$RK/v1/clusters/rack/rollouts' -H "$J" -H "$ALICE" --data-binary "{\"target\":$T3,\"steps\":2,\"soak_s\":60}"
RD=$(sed -n 's/.*"digest":"\([0-9a-f]\{16\}\)".*/\1/p' "$TMP/b")
ex rollouts 200 '$RK/v1/clusters/rack/rollouts'
ex e_rollout_too_large 422 -X POST '$RK/v1/clusters/rack/rollouts' -H "$J" -H "$ALICE" --data-binary "{\"target\":$T3,\"max_step_moved\":0.001}"
ex e_no_rollout 404 '$RK/v1/clusters/rack/rollouts/9'
ex rollout_approve 200 -X POST '$RK/v1/clusters/rack/rollouts/1/approve' -H "$J" -H "$BOB" --data-binary "{\"digest\":\"$RD\"}"
ex e_rollout_state 409 -X POST '$RK/v1/clusters/rack/rollouts/1/approve' -H "$J" -H "$BOB" --data-binary "{\"digest\":\"$RD\"}"
ex rollout_get 200 '$RK/v1/clusters/rack/rollouts/1'
ex rollout_start 200 -X POST '$RK/v1/clusters/rack/rollouts/1/start' -H "$ALICE"
ex e_rollout_running 409 -X POST '$RK/v1/clusters/rack/versions/1/activate' -H "$ALICE"
ex rollout_pause 200 -X POST '$RK/v1/clusters/rack/rollouts/1/pause' -H "$ALICE"
ex rollout_resume 200 -X POST '$RK/v1/clusters/rack/rollouts/1/resume' -H "$ALICE"
ex rollout_abort 200 -X POST '$RK/v1/clusters/rack/rollouts/1/abort' -H "$ALICE"
# the load profile (docs/LOAD.md): a small one, as `ringkeeper measure` writes them
PROFILE='{"profile":1,"cluster":"rack","hash":"xxh3_64","data":"redis","measured_at":"2026-12-07T08:18:52Z","measured_epoch_s":1796631532,"seconds":0.4,"sample_rate":1.0,"servers":[{"id":"r1","addr":"10.0.1.1:6379","keys_scanned":2033,"keys_sampled":2033,"bytes_sampled":10481856}],"load":{"bits":64,"bins":4,"sample_rate":1.0,"keys":[510,498,520,505],"bytes":[2600000,2510000,2700000,2671856],"requests":[0,0,0,0]}}'
ex e_no_load_profile 404 '$RK/v1/clusters/rack/load'
ex load_put 200 -X PUT '$RK/v1/clusters/rack/load' -H "$J" -H "$ALICE" --data-binary "$PROFILE"
ex load_get 200 '$RK/v1/clusters/rack/load'
rk_stop
[ "$STOP_CODE" -eq 0 ] || die "the server with tokens exited $STOP_CODE"

# ---- the document ----

# The error table of api.c's header comment, as markdown.
error_table() {
    printf '| status | code | when |\n|---|---|---|\n'
    sed -n 's/^ \* | \([0-9][0-9][0-9]\) *| \([a-z_]*\) *| \(.*[^ ]\) *|$/| \1 | `\2` | \3 |/p' \
        "$src/server/api/api.c" | sed 's/(http\.c) //; s/"v<N>"/`"v<N>"`/g; s/If-Match /`If-Match` /g; s/Allow header/`Allow` header/g'

}

{
    cat <<EOF
# ringkeeperd HTTP API

<!-- Generated by tests/server/make_api_doc.sh from a real run; do not edit by hand. -->

This is the HTTP/JSON API of \`ringkeeperd\`. Every example below is a
real request and the real response a \`ringkeeperd\` gave it: the file is generated by
\`tests/server/make_api_doc.sh\`, which starts a server on a free loopback port with an empty database,
runs the requests in order and writes this file. Timestamps, durations and metric values change from
run to run; everything else is what the server says. To regenerate it after changing the API, from the
repository root (python3, when installed, indents the JSON):

\`\`\`sh
cmake --build build -j2 && tests/server/make_api_doc.sh build/server/ringkeeperd .
\`\`\`

The ctest test \`server_api_doc\` fails when a route of \`server/api/api.c\` or an error code of its table is
missing here.

## Basics

**Base URL.** \`http://HOST:PORT\` as given to \`--listen\` (default \`127.0.0.1:7070\`). The examples use
\`RK=http://127.0.0.1:7070\`, and \`curl -i\` to show the status line and headers; of the headers, only
\`Content-Type\`, \`ETag\`, \`Location\` and \`Allow\` are shown (the server also sends \`Date\` and
\`Content-Length\`). JSON bodies are shown indented; the server sends them compact, on one line.
\`HEAD\` is answered like \`GET\`, without the body.

**Content types.** Request bodies are JSON, sent with \`Content-Type: application/json\` (a body of
another type is 415 \`unsupported_media_type\`: a page of another site could send it without a CORS
preflight), at most \`--max-body\` bytes (default 8388608; the examples ran with
\`--max-body $MAX_BODY\`). A write from a browser page must come from this server's own origin or one
of \`--allow-origin\` (403 \`cross_origin\`), and a browser's \`Host\` must be an IP address,
\`localhost\` or a \`--public-name\` (421 \`unknown_host\`; docs/OPERATIONS.md, "Browsers"). Responses are
\`application/json; charset=utf-8\`, except the plan as a table (\`text/plain; charset=utf-8\`) and
\`/metrics\` (\`text/plain; version=0.0.4; charset=utf-8\`, the Prometheus text format).

**Errors.** Every error, whatever its status, has the same body:

\`\`\`json
{"error": {"code": "invalid_topology", "message": "nodes[0].weight: ...", "field": "nodes[0].weight"}}
\`\`\`

\`code\` is a fixed machine word (the table below), \`message\` one sentence a person can act on, and
\`field\` is there only when one thing is to blame: the JSON path of a topology field, the name of a
query parameter or of a header. A refused request changes nothing.

**Authentication.** Without \`--token-file\`, anyone who can reach the port may write, and versions are
recorded with author \`anonymous\`. With \`--token-file FILE\` (lines \`name:token\`; tokens of 16 to 256
printable bytes; reloaded on \`SIGHUP\`), every write — every method other than \`GET\` and \`HEAD\` — needs
\`Authorization: Bearer <token>\`: no usable header is 401 \`unauthorized\`, a token that is not in the
file is 403 \`forbidden\`, and the token's name becomes the version's \`author\`. Reads never need a
token (one that is not in the file is ignored there: the ring must reach a client whose token was
rotated away). The check happens before the body is read.

<a id="tokens-and-roles"></a>**Tokens and roles.** A line may end with roles after a blank,
\`name:token publish,approve\`; a token may then do only what its roles allow, and any other write is
403 \`role_required\`, naming the roles the route needs:

| role | may |
|---|---|
| \`publish\` | publish, activate, revert, finish a migration window, and tighten a policy |
| \`approve\` | approve a version's plan, and tighten a policy |
| \`admin\` | loosen a policy's guard, force an activation past its budget (with \`publish\` to activate) |
| \`client\` | be counted as an authenticated client of the fleet report ([clients](#get-v1clusterscclients)) |

A token without roles has them all: token files written before roles keep working as they did. A
policy change that loosens a guard — a higher \`max_moved_fraction\` or \`max_balance_after\` (or none),
fewer \`approvals\`, \`distinct_approver\`, \`migration_window\` or \`prewarm\` turned off — needs \`admin\`, and so does
\`{"force": true}\`; without it the answer is 403 \`admin_required\` naming the field. Admin rather than
approvals of the change itself: an approval flow for policies would need its own digest and pending
state, while a separate role is one line of the token file and is checked at once; the \`policy\` event
still records who changed what.

**Versions and ETags.** Versions of a cluster are numbered 1, 2, 3 ... with no gaps and no reuse, and
never change once published — within one **store**. Every database has a store id (16 lowercase hex
digits, \`"store_id"\` in every version document); a backup copy gets a new one, and a database
restored from it numbers versions on from where the copy was taken, so the same number can name
another ring under another store id (docs/OPERATIONS.md). A version is named in headers as an ETag,
quotes included: \`"v4.<store id>"\`, or the bare \`"v4"\` where the store does not matter; the ring's
ETag adds the ring's fingerprint, \`"v4.<store id>.<fingerprint>"\`.

- \`ETag: "v<N>.<store id>.<fingerprint>"\` comes with the ring (\`GET .../ring\`): N is the active
  version and the fingerprint its ring's; while a migration window is open it is
  \`"v<N>+.<store id>.<fingerprint>"\` (the ring document names a previous version), so that its close
  is news to a client holding the open window's ETag.
- \`If-None-Match: "v<N>.<store id>.<fingerprint>"\` on \`GET .../ring\`: 304 with no body when N is
  still the active version of this store and the fingerprint is its ring's, so a 304 always means
  "the ring you hold is this one"; with \`?wait=S\` the server first holds the request up to S seconds
  for another activation. The client sends the fingerprint it recomputed from the ring it holds, not
  one it was told: a ring a hostile server sent under this store's id and a number the store had not
  issued yet gets the real ring at once (200, never held), and the client says what it replaced. A
  tag without the fingerprint (\`"v<N>.<store id>"\` of clients before it, or a bare \`"v<N>"\`, which
  may name a ring lost in a restore) never gets a 304: it is held like the full ETag, then answered
  with the ring (200). Any other value (or none) gets the ring.
- \`If-Match: "v<N>"\` (or the full ETag) makes a write conditional, 412 \`precondition_failed\`
  otherwise: on publish and revert, N must be the latest version of the cluster (\`"v0"\`: the cluster
  has no version yet); on activate, N must be the active version; a store id, when given, must be this
  server's. A value of neither form is 400 \`invalid_header\`.

**States** of a version: \`staged\` (published, not active), \`active\` (exactly one per cluster once any
version was activated), \`retired\` (was active, replaced by a newer one), \`superseded\` (was staged, but a
newer version was activated first). The active version only moves forward: to roll back, revert (publish
a copy of the old version) and activate the copy.

**Names.** A cluster name is 1 to 63 bytes of \`a-z\`, \`0-9\`, \`.\`, \`_\`, \`-\`, starting with a letter or
a digit; the cluster is created by its first publish. A version in a path is a positive integer.

### Error codes

EOF
    error_table
    cat <<'EOF'

500 and 503 leave nothing half-written; 503 is worth retrying. Each code has an example under
[Errors](#errors).

## Routes

| method and path | what it does |
|---|---|
| [`GET /healthz`](#get-healthz) | 200 while the process runs |
| [`GET /readyz`](#get-readyz) | 200 when the database answers, 503 otherwise |
| [`GET /metrics`](#get-metrics) | Prometheus metrics |
| [`GET /v1/clusters`](#get-v1clusters) | the clusters by name, with their active and latest versions, paged |
| [`POST /v1/clusters/{c}/versions`](#post-v1clusterscversions) | publish a topology as a new version |
| [`GET /v1/clusters/{c}/versions`](#get-v1clusterscversions) | the versions, newest first, paged |
| [`GET /v1/clusters/{c}/versions/{v}`](#get-v1clusterscversionsv) | one version document |
| [`POST /v1/clusters/{c}/versions/{v}/activate`](#post-v1clusterscversionsvactivate) | cut over to version v |
| [`POST /v1/clusters/{c}/versions/{v}/revert`](#post-v1clusterscversionsvrevert) | publish a copy of version v |
| [`GET /v1/clusters/{c}/ring`](#get-v1clusterscring) | the active version, with ETag and long poll |
| [`GET /v1/clusters/{c}/plan`](#get-v1clusterscplan) | what moves between two versions |
| [`GET /v1/clusters/{c}/clients`](#get-v1clusterscclients) | which clients hold which version, stragglers first |
| [`GET /v1/clusters/{c}/changes`](#get-v1clusterscchanges) | wait for any change of the cluster (the console's live panels) |
| [`GET /v1/clusters/{c}/versions/{v}/picture`](#get-v1clusterscversionsvpicture) | a version's ring in equal bins, for drawing it |
| [`GET /v1/clusters/{c}/versions/{v}/arc`](#get-v1clusterscversionsvarc) | the exact arc holding a hash value |
| [`GET /v1/clusters/{c}/policy`](#get-v1clusterscpolicy) | the cluster's cutover policy |
| [`PUT /v1/clusters/{c}/policy`](#put-v1clusterscpolicy) | change it |
| [`POST /v1/clusters/{c}/versions/{v}/approve`](#post-v1clusterscversionsvapprove) | approve the plan from the active version to v |
| [`GET /v1/clusters/{c}/events`](#get-v1clusterscevents) | the audit of publishes, approvals, activations and policy changes |
| [`POST /v1/clusters/{c}/migration/finish`](#post-v1clusterscmigrationfinish) | close the migration window: clients drop the previous ring |
| [`GET /v1/clusters/{c}/migration`](#get-v1clusterscmigration) | the cluster's migration job: what the data mover did |
| [`POST /v1/clusters/{c}/migration`](#post-v1clusterscmigration) | start a job over the window's plan, or ahead of a cutover |
| [`POST /v1/clusters/{c}/migration/claim`](#post-v1clusterscmigrationclaim), [`progress`](#post-v1clusterscmigrationprogress) | a worker's lease and its reports |
| [`PUT /v1/clusters/{c}/migration/throttle`](#put-v1clusterscmigrationthrottle), [`pause`, `resume`, `cancel`](#post-v1clusterscmigrationpause) | steer a running job |
| [`POST /v1/clusters/{c}/rollouts`](#post-v1clusterscrollouts), [`GET`](#get-v1clusterscrollouts) | review a change in steps, kept as the cluster's rollout |
| [`GET /v1/clusters/{c}/rollouts/{r}`](#get-v1clusterscrolloutsr), [`approve`](#post-v1clusterscrolloutsrapprove) | one rollout, and its approval over its digest |
| [`POST /v1/clusters/{c}/rollouts/{r}/start`](#post-v1clusterscrolloutsrstart), [`pause`](#post-v1clusterscrolloutsrpause), [`resume`](#post-v1clusterscrolloutsrresume), [`abort`](#post-v1clusterscrolloutsrabort) | drive it, step by step, and steer it |
| [`PUT /v1/clusters/{c}/load`](#put-v1clusterscload), [`GET`](#get-v1clusterscload) | the cluster's load profile: what its data servers hold |
| [`GET /`](#get-), [`GET /ui/{file}`](#get-uifile) | the operator console |

The examples run in this order on one server: cluster `cache` gets three nodes (version 1), which are
activated; a fourth node is published (version 2), its plan reviewed, and it is activated; then version 1
is reverted (version 3). A second cluster, `sessions`, shows a plan refused across hash algorithms. The
topologies use `vnode_factor` 8 so that the plan fits on a screen — the plan warns about that; use 100
or more.

### `GET /healthz`

Liveness: 200 while the process runs and serves HTTP. It does not touch the database.

EOF
    show healthz
    cat <<'EOF'

### `GET /readyz`

Readiness: 200 when the database answers a query now, else 503 `unavailable` (busy, locked, I/O error,
disk full) — take the instance out of rotation until it answers again.

EOF
    show readyz
    cat <<'EOF'

### `GET /metrics`

The Prometheus text format: requests by method, route pattern and status, a latency histogram by route,
publishes, activations, database errors, the active version of each cluster, and the long polls waiting
now. Routes are reported by pattern (`/v1/clusters/{c}/ring`), unknown paths as `other`. The response
below is an excerpt: every family once, its type and first sample; `curl "$RK/metrics"` shows them all,
with a `# HELP` line each.
What each family counts, and the alerts worth having on them, are in
[OPERATIONS.md, "Metrics to alert on"](OPERATIONS.md#metrics-to-alert-on).

EOF
    show metrics
    cat <<'EOF'

### `GET /v1/clusters`

The clusters, by name (in byte order), with their active version (`null` before the first activation)
and their latest version, a page at a time: a store holds up to `--max-clusters` of them (default
10000). `next_after` is the value of `after` for the next page, or `null` on the last page. A page is
one range read of the store's index of names, whatever the store holds.

| parameter | default | meaning |
|---|---|---|
| `?limit=N` | 100 | at most N clusters, 1..1000 |
| `?after=NAME` | none | only clusters whose names sort after NAME (a cluster name, not necessarily one that exists) |

Errors: 400 `invalid_parameter` (`field`: `limit` or `after`). On an empty database:

EOF
    show clusters_empty
    cat <<'EOF'

At the end of the examples:

EOF
    show clusters
    cat <<'EOF'

A page of one, and the next:

EOF
    show clusters_page
    echo
    show clusters_next
    cat <<'EOF'

### `POST /v1/clusters/{c}/versions`

Publishes a topology ([RING.md, "Topology"](RING.md#topology): `hash`, `vnode_factor`, `nodes`, optional `comment` and `data`) as the next
version of cluster `c`, creating the cluster on its first publish. The answer is 201 with the version
document (the topology plus `cluster`, `version`, `state`, `created_at`, `activated_at`, `author`,
`points` and the ring's `fingerprint`) and `Location`. The new version is `staged`: nothing changes for
clients until it is activated. Unknown fields are refused; the fields the server assigns are accepted and
ignored, so a fetched version document can be edited and published again.

| parameter | default | meaning |
|---|---|---|
| `?activate=true` | `false` | publish and activate in one transaction (the answer is 201 with `state` `active`) |
| `If-Match: "v<N>"` | none | publish only if the latest version is N (`"v0"`: only if the cluster is new); 412 otherwise |
| body | required | the topology, at most `--max-body` bytes; total points (`vnode_factor` × weights) at most 4194304 |

Errors: 400 `malformed_json`, `invalid_topology` (with `field`), `invalid_parameter`, `invalid_header`,
`invalid_cluster`; 401, 403; 412; 413; 422 `too_many_points`, `too_many_clusters` (a new cluster while the
store holds `--max-clusters`; nothing is stored, and publishes to the clusters there go on).

EOF
    show publish_v1
    cat <<'EOF'

Conditional on the latest version being 1 — the way to publish an edit of what you have read without
overwriting someone else's:

EOF
    show publish_v2
    cat <<'EOF'

Creating a cluster and activating its first version in one call, only if the cluster is new:

EOF
    show publish_new
    cat <<'EOF'

With tokens configured, the token's name is the author:

EOF
    show auth_ok
    cat <<'EOF'

### `GET /v1/clusters/{c}/versions`

The versions of cluster `c`, newest first, as version documents without their node lists. `next_before`
is the value of `before` for the next (older) page, or `null` on the last page. Read from the store
itself, not a cache: the first version of `?limit=1` is the latest the store has ever issued, with its
`store_id`, which the client library asks when its accepted version may be one the store never
issued (docs/CLIENT.md, "Healing").

| parameter | default | meaning |
|---|---|---|
| `?limit=N` | 100 | at most N versions, 1..1000 |
| `?before=N` | none | only versions older than N |

Errors: 400 `invalid_parameter`, `invalid_cluster`; 404 `unknown_cluster`.

EOF
    show list
    cat <<'EOF'

The next page:

EOF
    show list_before
    cat <<'EOF'

### `GET /v1/clusters/{c}/versions/{v}`

One version document, with its nodes, in any state.

Errors: 400 `invalid_cluster`, `invalid_version`; 404 `unknown_cluster`, `unknown_version`.

EOF
    show get_v1
    cat <<'EOF'

### `POST /v1/clusters/{c}/versions/{v}/activate`

Cuts cluster `c` over to version `v`: `v` becomes `active`, the previous active version `retired`, and
staged versions older than `v` `superseded`. Answers 200 with the version document. `v` must be newer
than the active version (409 `conflict` otherwise — to roll back, revert). Long polls on the ring are
woken at once. No body.

| parameter | default | meaning |
|---|---|---|
| `If-Match: "v<N>"` | none | activate only if N is the active version now; 412 otherwise |

Errors: 400 `invalid_header`, `invalid_cluster`, `invalid_version`; 401, 403; 404 `unknown_cluster`,
`unknown_version`; 409 `conflict`; 412 `precondition_failed`.

EOF
    show activate_v1
    cat <<'EOF'

Conditional on version 1 being the active one, after the plan below was reviewed:

EOF
    show activate_v2
    cat <<'EOF'

### `POST /v1/clusters/{c}/versions/{v}/revert`

Publishes a copy of version `v` (same hash, vnode factor and nodes, so the same ring and fingerprint) as
a new staged version, with the comment `revert to v<v>: <its comment>`. Activate the copy to roll back.
No body. Answers 201 with the new version document and `Location`.

| parameter | default | meaning |
|---|---|---|
| `?activate=true` | `false` | publish the copy and activate it in one transaction |
| `If-Match: "v<N>"` | none | only if the latest version is N; 412 otherwise |

Errors: as for publish, and 404 `unknown_version`.

EOF
    show revert_v1
    cat <<'EOF'

### `GET /v1/clusters/{c}/ring`

The active version document of cluster `c` — what clients route by — with
`ETag: "v<N>.<store id>.<fingerprint>"`,
and `"previous"`: `null`, or while a migration window is open ([below](#the-migration-window))
`{"version": u, "fingerprint": "..."}`, the version clients keep answering the owners of, with the
ETag `"v<N>+.<store id>.<fingerprint>"`. Before any activation it is 404 `no_active_version`.

On the etcd store ([ETCD.md](ETCD.md)), a replica that can neither watch nor read etcd (no quorum)
keeps answering with the ring it has (200, or 304 and long polls as usual), adding
`RK-Stale: etcd unreachable since <RFC 3339>`, the time from which it may have missed another
replica's activation or finish. The header goes once etcd answers again (the replica then catches
up first); SQLite never sends it. A ring the replica does not have answers 503 `unavailable`.

| parameter | default | meaning |
|---|---|---|
| `If-None-Match: "v<N>.<store id>.<fingerprint>"` | none | 304 with no body when N is still the active version of this store, the fingerprint its ring's (and the window as open or closed as the ETag says); without the fingerprint, or bare `"v<N>"`, it gets the ring (200) |
| `?wait=S` | 0 | with `If-None-Match`: hold the request until another version is activated or the migration window closes (200 with the ring) or S seconds pass (304); 0..60 |
| `RK-Client: <id>` | none | count this client (1..128 bytes of `!`..`~`) under the version its `If-None-Match` says it holds; see [clients](#get-v1clusterscclients) |
| `RK-Refused: "v<N>.<store id>" <reason>` | none | this client refused version N, for `reason` (printable ASCII, 160 bytes kept): while N is active it is not sent again: 304, and a long poll is held until a newer version is active (or S seconds pass: 304) |

Errors: 400 `invalid_parameter`, `invalid_cluster`; 404 `unknown_cluster`, `no_active_version`.

EOF
    show ring
    cat <<'EOF'

A client that has version 2 of this store already:

EOF
    show ring_304
    cat <<'EOF'

A bare `"v2"` (an older client's) may name a ring of another store, lost in a restore: the ring again.

EOF
    show ring_bare
    cat <<EOF

A long poll: nothing was activated within the second, so it ended with 304 (after ${WAITED} s in this run).
An activation during the wait answers 200 with the new version at once. Clients loop: send the ETag they
have, with \`wait=60\`, and send the new ETag after each 200.

EOF
    show ring_wait
    cat <<'EOF'

Before the first activation:

EOF
    show e_no_active_version
    cat <<'EOF'

A client whose application refused the active ring (the library does this by itself, in its next
request after a refusal) is not sent it again: 304 at once, or its long poll held:

EOF
    show ring_refused
    cat <<'EOF'

### `GET /v1/clusters/{c}/clients`

The clients of cluster `c`: every `RK-Client` id that asked for the ring in the last
180 s (`--clients-expiry`), with `held`, the version its own latest request says it holds (its
`If-None-Match`; `null` for none, as on a first fetch, or a tag of another store), never merely the one
it was sent: a client that died with its poll open, or that refused the new ring, stays on the version
it named. Then `offered`, the version last sent to it or confirmed by a 304 (a held poll is offered
nothing until it is answered); `refused` and `reason`, the version its latest request said it refuses
(`RK-Refused`) and why, as its library told its application (`null` when none); its address, user
agent (cut to 128 bytes, bytes outside `0x20..0x7e` as `?`) and when it was last seen; and
`proxy`, for the agent of a proxy (`ringkeeper agent`, whose user agent is
`ringkeeper-agent/VERSION (PROXY) ...`), the proxy it drives (`nginx`, `haproxy`, `nutcracker`:
a lowercase word of at most 15 letters; absent for any other client).
Stragglers come first: the lowest version held (none first), then the one seen longest ago. `summary`
counts every client whatever `limit` lists: how many hold each version (`by_version`), were last offered
each (`offered_by_version`) and refuse each (`refusing_by_version`); `none`, those holding none;
`refusing`, those that refuse the active version; the `active` version (`null` before the first
activation); `previous`, the version an open migration window keeps (`null` when none is open:
the fleet reads from both rings while one is); `converged` — at least one client, and every one holding the active version — and
`total`.
Requests without `RK-Client`, or with an id that is not 1..128 bytes of `!`..`~`, are served but not
counted. The table is in memory, and bounded: at most `--max-clients-per-cluster` ids (default
50000) in a cluster and `--max-clients` (default 100000) in all; past a cap the id seen longest ago is
forgotten. `ringkeeper clients` prints the summary as a table.

**Several replicas.** On a store several ringkeeperd share (etcd), every replica counts the whole
fleet: each writes the records of the clients it serves to the store and reads the others'
([ETCD.md](ETCD.md), "The fleet across replicas"), so `summary`, `converged`, `/metrics`, a rollout's
`hold` and a migration job's `fleet_held` are the same on every replica (within about 0.1 s plus
etcd's round trip of a client's request). Each client then also has `replica`, the `--replica-name` of
the replica it polled last; `last_seen` of a client another replica serves is when that replica last
recorded a change of it. The caps bound the whole fleet there. With SQLite (one server) nothing of
this applies and `replica` is absent.

**Authenticated clients.** With `--token-file`, the report counts only clients whose ring requests
carry a token with the `client` role (or a token without roles): the library sends its `token` with
every fetch and long poll, `ringkeeper watch` and `lookup` their `--token`. Each such entry shows the
token's name in `token`. An id sent without such a token is recorded apart, under `unauthenticated`
(`{"clients", "summary"}` of the same shape, with caps of its own): it can neither change nor evict an
authenticated client's entry, however many a stranger invents, and it never counts towards the main
`summary` or `converged`. An id is bound to the client token that first registered it (until it
expires): another client token naming it is recorded apart too, so one client's token cannot speak
for another client and make the report say converged. `ringkeeperd --unauthenticated-clients ignore` does not record such ids at
all (`"unauthenticated": null`). Without `--token-file` nothing is authenticated: every client is in
the main list, as `null` tokens, and `unauthenticated` stays empty.

| parameter | default | meaning |
|---|---|---|
| `?limit=N` | 100 | list at most N clients, 1..1000 |

Errors: 400 `invalid_parameter`, `invalid_cluster`; 404 `unknown_cluster`.

Here `web-1` fetched version 1 and has not been seen since (it holds none, as far as its request said);
`web-2` holds version 2; `web-3` was sent version 2, refused it, and holds none:

EOF
    show clients
    cat <<'EOF'

`?limit=1`: the worst straggler only, and the summary of all:

EOF
    show clients_limit
    cat <<'EOF'

### `GET /v1/clusters/{c}/changes`

A long poll that answers when anything of cluster `c` changes: what the console's live panels wait on
instead of polling each route. `seq` is the cluster's change counter; every write to the cluster that
changed something (a publish, an approval — not a dry run —, an activation, a policy, a migration job's
start, progress, pause, resume, throttle, cancel or finish, a rollout's review, approval or control),
each step the rollout driver takes and each change in the fleet report (a new client, or one that now
holds, was offered or refuses another version) moves it on. Without `since` it answers at once; with
`since` equal to the current `seq` and `wait`, it holds the request until the counter moves or `wait`
seconds pass, then answers the `seq` it has then (the same one when nothing changed). Also `active`,
the active version (`null` before the first). Then fetch what you show, and ask again with the new
`seq`.

The counters are kept in memory, a fixed table of 4096 (32 KiB, whatever the number of clusters),
indexed by a hash of the name: two clusters that share a slot share a counter, which costs a watcher a
needless look, never a missed change. They start at the server's start time in milliseconds, so a
watcher that outlives a restart sees a change. Behind a shared etcd, a change another ringkeeperd
makes wakes this one's watchers when it is an activation or a window's close (the store's watch
carries them); other changes show at the end of the wait. A held request counts against
`--max-polls`, with the rings' long polls, and is answered from memory on the server's own threads.

| parameter | default | meaning |
|---|---|---|
| `?since=N` | none | the `seq` last seen: wait while it is still the current one |
| `?wait=S` | 0 | with `since`: hold up to S seconds, 0..60 |

Errors: 400 `invalid_parameter`, `invalid_cluster`; 404 `unknown_cluster`; 503 `busy` (`--max-polls`
held already).

EOF
    show changes
    cat <<'EOF'

Waiting on it, when nothing changes for the second asked:

EOF
    show changes_wait
    cat <<'EOF'

### `GET /v1/clusters/{c}/plan`

The migration plan of [RING.md, "Migration plan"](RING.md#migration-plan) between two versions of cluster `c`: which arcs of the hash space
move from which node to which, how much moves against the least any placement could move
(`minimal_fraction`), each node's share before and after, the balance before and after, and warnings.
Both versions must use the same `hash` (422 `hash_mismatch` otherwise). Fractions are of the whole hash
space. `moved_fraction` can even be under `minimal_fraction`, as below: the new node got less than its
ideal share, which `balance` and `warnings` point out.

| parameter | default | meaning |
|---|---|---|
| `?from=A` | the active version | the version the plan starts from |
| `?to=B` | the latest version | the version it goes to |
| `?max_step=F` | none | adds `steps`: the arcs packed into ordered steps of at most F of the hash space each, 0 < F <= 1 |
| `?keys=K` | none | adds `keys_estimate` (for K keys) to each transfer and step; K >= 1 |
| `?arcs=false` | `true` | leaves out the top-level `arcs` list (the steps still list theirs) |
| `?nodes=false` | `true` | leaves out the `nodes` list: a summary (moved, minimal, balance, warnings, transfers, digest) that still covers every node, and is not refused for their number by `--max-plan-rows` (the console's first screen) |
| `?format=text` or `Accept: text/plain` | JSON | a table for people instead of JSON (`format=json` forces JSON) |
| `?format=picture` | JSON | the picture's three circles as JSON, for a program that draws them itself (the console): see below |
| `?bins=N` | `2880` | with `format=picture`: bins per circle, 360 to 4096 |
| `?format=svg` | JSON | one self-contained SVG picture (`image/svg+xml`): the ring before (outside) and after (inside), the moving arcs between them in the colour of the node they move to, per-node share bars against the ideal, and moved vs minimal in the title; bounded whatever the ring (at most 1440 arcs per circle, finer stretches drawn by quarter degree; bars for the 32 most changed nodes), so `--max-plan-rows` does not apply to it |

When the cluster has a load profile stored ([below](#the-load-profile)), the JSON plan also has
`load`: the plan weighed by it (docs/LOAD.md: keys, bytes and reads that move, each node's bytes
before and after, and `profile` with its `age_s`); a profile that cannot weigh this plan (keys
placed by another hash) leaves `load` out and says why in `load_error`. The table
(`format=text`) has the same figures as lines after it (`load: not weighed: ...` instead). The
profile is read with each JSON or text plan (at most 1 MiB).

Errors: 400 `invalid_parameter`, `invalid_cluster`; 404 `unknown_cluster`, `unknown_version`,
`no_active_version` (no `from` given and nothing active); 422 `hash_mismatch`, `plan_too_large` (over
`--max-plan-arcs`, or `--max-plan-rows` counting a row per node, arc, transfer and step as the form
renders them: a version to itself on more nodes than that is refused too, and `format=svg` is the way
to see it; the message says how to ask for less); 503 `unavailable` when
`--plan-concurrency` plans are being computed, or all but one of them (at least one) for the client's
address (an IPv6 address counted by its /64), with `Retry-After: 2`. A `plan_too_large` is
remembered: asked again (the same versions, and for a refusal by rows the same rendering), the same
answer comes from memory, without a plan slot (`ringkeeper_plan_refusals_remembered_total`).

From the active version 1 to the latest version 2, in steps of at most 10%, for a million keys:

EOF
    show plan_json
    cat <<'EOF'

The same plan as a table:

EOF
    show plan_text
    cat <<'EOF'

The same plan as the console draws it (`format=picture`): the SVG's three circles, each in `bins`
equal bins of the hash space (bin b holds the values from b × 2^bits / bins on), run-length encoded as
`[bins, node]` pairs, `node` the index of a node in the plan's `nodes` list (its `rank`, which sets its
colour), `null` where nothing is. `before` and `after` are the rings by owner (as
`.../versions/{v}/picture`), `moving` the arcs that move, by destination. `nodes` lists the nodes
drawn. Its size is bounded by the bins whatever the ring, so `--max-plan-rows` does not apply; the
plan is still computed (`--max-plan-arcs`, `--plan-concurrency`).

EOF
    show plan_picture
    cat <<'EOF'

### `GET /v1/clusters/{c}/versions/{v}/picture`

Version `v`'s ring in `bins` equal bins of the hash space, each bin in the node of its longest
stretch, as the library computes it (`rk_ring_picture`): what the console draws, so a browser never
rebuilds a ring. `runs` are `[bins, rank]` pairs in hash order, `rank` a node's index among all the
version's nodes in id byte order (the index the plan's `nodes` list gives it, which sets its colour);
`nodes` lists the nodes drawn, by rank, with their `share` of the hash space and `ideal` share. Also
`points`, `node_count`, `bits` (the hash space is 2^bits) and the `fingerprint`. A version never
changes: the answer has the ETag `"v<N>.<store id>"`, and `If-None-Match` with it gets 304. Its
size is bounded by the bins whatever the ring; the ring is built once and kept with the plans'.

| parameter | default | meaning |
|---|---|---|
| `?bins=N` | `2880` | bins, 360 to 4096 (an eighth of a degree by default) |

Errors: 400 `invalid_parameter` (field `bins`), `invalid_cluster`, `invalid_version`; 404
`unknown_cluster`, `unknown_version`.

EOF
    show picture
    cat <<'EOF'

### `GET /v1/clusters/{c}/versions/{v}/arc`

The arc of version `v`'s ring that holds hash value `hash` (`rk_ring_arc_at`): its `first` and
`last` hash values (inclusive, 16 hex digits as plan arcs have them; `first` is above `last` for the
arc that wraps past the top of the hash space), its `owner` and the owner's `rank` (as in the
picture), the arc's `fraction` of the hash space and the owner's `share` of the ring; `at` is the
value asked. The next arc is the one at `last` + 1, the
previous one the one at `first` − 1: that is how the console steps from arc to arc. ETag and 304 as
for the picture.

| parameter | default | meaning |
|---|---|---|
| `?hash=H` | required | a value of the ring's hash space (2^`bits` values): 16 hex digits as the API writes hash values (also 8 on a 32-bit ring), else a decimal number (a decimal of exactly 16 digits, or 8 on a 32-bit ring, needs a leading 0) |

Errors: 400 `invalid_parameter` (field `hash`), `invalid_cluster`, `invalid_version`; 404
`unknown_cluster`, `unknown_version`.

EOF
    show arc
    cat <<'EOF'

## Cutover: policy, approvals, the gate, events

Each cluster has a policy; its defaults keep everything above unchanged. With a
policy, an activation (also `?activate=true` on publish or revert) passes a gate, in this order: the
**budget** (the plan from the active version to `v`: `moved_fraction` at most `max_moved_fraction`, and
the balance after — the most loaded node's share over its ideal — at most `max_balance_after`, and the
bytes it moves by the cluster's [load profile](#the-load-profile) at most `max_moved_bytes`; else 422
`budget_exceeded` with the figures and the limit, `field` `max_moved_bytes` for the bytes, also when
no profile is stored or it cannot weigh the plan), then the **approvals** (at least `approvals` operators
approved exactly this plan, by its `digest`; else 409 `approval_required`). An activation with the body
`{"force": true, "reason": "..."}` passes the budget (never the approvals), and the reason is recorded.
A first activation (nothing active) has no plan: only the approvals count, of the digest from version 0
with an empty fingerprint (`0:>1:<fingerprint>`). Whatever the policy, a version whose scheme, hash or
hash tag is not the active one's moves every key (its plan is refused, 422 `hash_mismatch`): activating
it is 422 `budget_exceeded`, its `field` naming what differs, unless forced with a reason; a publish
with `?activate=true` of such a version stores nothing (publish it staged, then activate it forced).
The check reads the active version's ring: when other activations of the cluster keep replacing it
under three tries, the activation (or the publish that activates) is 409 `conflict`, nothing stored: retry.
The whole gate (and, before it, whether a rollout holds the cluster: 409 `rollout_running`) is
checked inside the activation's transaction, against the policy, the rollout and the active version
that transaction reads: a policy tightened, or a rollout started, an instant before the commit is the
one the activation answers to. The budget's plan needs the active version's ring; when the server has
not cached it, it reads it between tries of the transaction, and if another activation commits
meanwhile, it tries again against the new one: after three such tries, 409 `conflict`, nothing
changed (retry).

The examples run on the server with tokens, as two operators: `alice` publishes, `bob` approves.
The whole flow end to end, as the two of them run it with the CLI while 50 library clients watch
(approval, a stale approval, re-approval, activation under a migration window, the fleet converging
and reading from both owners, the window finished, the previous ring dropped), is
`tests/flow/test_flow.sh` (ctest `flow_cutover`).

### `GET /v1/clusters/{c}/policy`

The cluster's policy; a cluster that never set one has the defaults.

Errors: 400 `invalid_cluster`; 404 `unknown_cluster`.

EOF
    show policy_default
    cat <<'EOF'

### `PUT /v1/clusters/{c}/policy`

Sets the policy; fields left out keep their value. Recorded as a `policy` event. Needs a token where
tokens are configured.

| field | default | allowed |
|---|---|---|
| `max_moved_fraction` | `1.0` | a number from 0 to 1: the most of the hash space one activation may move |
| `max_balance_after` | `null` | `null` (no limit) or a number >= 1: the most a node may hold over its ideal share after it |
| `approvals` | `0` | a whole number from 0 to 100: approvals of the plan an activation needs |
| `distinct_approver` | `false` | `true`: a version's author's approval does not count (and is refused) |
| `migration_window` | `false` | `true`: an activation over another version opens a migration window (below) |
| `max_moved_bytes` | `null` | `null` (no limit) or a whole number of bytes >= 1: the most bytes one activation may move, counted by the cluster's load profile ([below](#the-load-profile), docs/LOAD.md); with none stored, or one of another hash, an activation is refused until one is measured (or forced) |
| `prewarm` | `false` | `true`: the cluster is served by proxies, which read one ring: activating a version whose topology names its `data` over another needs that version's verified pre-warm (a `before_cutover` job from the active version, [below](#moving-the-data-the-migration-job)), else 409 `not_verified` (a `publish` with `activate=true` always; `force` with a reason goes cold); a rollout's step waits in `prewarm` for it and opens no window unless `migration_window` is set too ([MIGRATE.md](MIGRATE.md#clusters-served-by-proxies)) |

Errors: 400 `malformed_json`, `invalid_body` (with `field`), `invalid_cluster`; 401, 403; 404 `unknown_cluster`.

EOF
    show policy_put
    cat <<'EOF'

### `POST /v1/clusters/{c}/versions/{v}/approve`

Records that the token's name approves moving from the version active now to `v` by exactly the plan
named `digest` (the `digest` of `GET .../plan`: XXH3-64 of `<from>:<fingerprint>><to>:<fingerprint>`).
Body `{"digest": "...", "comment": "...", "dry_run": false}` (comment and dry_run optional). Approving
twice counts once. Once another version is activated, the plan from the active version to `v` is
another one and its approvals no longer count: approve again. With nothing active (a first activation:
no plan, only the approvals count), the digest is the one from version 0, `0:>v:<fingerprint>`: the 409
`approval_required` of the activation names it, and `ringkeeper approve V` computes it.
`"dry_run": true` runs every check of an approval (who may approve, which plan, the version) and records
nothing: 200 with `"dry_run": true`, or the refusal the approval would get. `ringkeeper approve` asks
it first, so that an author under `distinct_approver` is told before the plan is printed.

Errors: 400 `malformed_json`, `invalid_body`; 401, 403, 403 `self_approval`; 404 `unknown_cluster`,
`unknown_version`; 409 `conflict` (v not newer than the active version), `plan_changed` (its message
says which plan the digest is: the plan from a version active before, whose review an activation
overtook, or no plan to `v` from any earlier version, a digest mistyped).

The plan bob reviews (its `digest` line is what he approves):

EOF
    show cutover_plan
    cat <<'EOF'

Asking first whether bob may approve it (nothing is recorded), then approving:

EOF
    show approve_dry_run
    echo
    show approve
    cat <<'EOF'

The first activation of `cache` needed an approval too, of the digest from version 0:

EOF
    show approve_first
    cat <<'EOF'

Then, over budget but approved, with a reason (activation bodies: `{}` or none, or
`{"force": true, "reason": "..."}`):

EOF
    show activate_force
    cat <<'EOF'

### `GET /v1/clusters/{c}/events`

The cluster's audit, newest first, paged like the versions (`?limit=` 1..1000, default 100; `?before=N`;
`next_before`). Kinds: `publish`, `revert`, `approve`, `activate`, `force` (an activation that passed the
budget by force; `detail` is the reason), `policy` (`detail` is the policy set), `finish` (a migration
window closed: `version` is the active one, `from_version` the previous one kept until then, `detail`
the comment). Each event is written in
the transaction of the change it records. `version`, `from_version`, `digest`, `moved_fraction` (computed
when the policy has a budget) and `detail` are `null` where they do not apply.

Errors: 400 `invalid_parameter`, `invalid_cluster`; 404 `unknown_cluster`.

EOF
    show events
    cat <<'EOF'

## The migration window

With the policy's `migration_window` set, activating `v` over `u` (also
`?activate=true` on publish or revert) opens a window in the activation's transaction: the ring
document carries `"previous": {"version": u, "fingerprint": "..."}` and its ETag is `"v<N>+.<store id>.<fingerprint>"`,
and clients keep answering the owner of each key under `u` next to the owner under `v` (dual reads: read
from the new owner, fall back to the previous one for data that has not moved yet). A client that does
not hold `u` fetches it with `GET .../versions/u` and verifies it like a ring. The window stays open,
across restarts, until `POST .../migration/finish` closes it. A first activation (nothing active) opens
none; without the policy, `previous` is always `null`.

While a window is open, no version can be activated (409 `migration_open`, also forced, also over
budget): finish the migration first, so that clients never jump from one pair of rings to another
while data still moves. Version documents (`GET .../versions/{v}`) do not carry `previous`: the window
is the cluster's state, not the version's.

On a cluster `web` whose policy has `migration_window`, version 2 is activated over version 1:

EOF
    show window_open
    echo
    show window_ring
    cat <<'EOF'

Activating the next version while the window is open:

EOF
    show e_migration_open
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration/finish`

Closes the cluster's migration window once the data has moved: the ring's `previous` becomes `null`,
its ETag loses the `+` (long polls holding the open window's ETag wake with the ring at once), clients
drop the previous ring by themselves, and the next activation is possible again. Recorded as a
`finish` event in the same transaction. Body: none, `{}` or `{"comment": "..."}`. Answers 200 with the
ring document as it is now, and its ETag. Needs a token where tokens are configured. Cost: one
transaction and one ring document, like an activation.

Errors: 400 `malformed_json`, `invalid_body`, `invalid_cluster`; 401, 403; 404 `unknown_cluster`;
409 `no_migration_window` (none is open).

EOF
    show window_finish
    cat <<'EOF'

A client that held the open window's ETag gets the ring again, now with `"previous": null`:

EOF
    show window_ring_after
    echo
    show window_events
    cat <<'EOF'

## Moving the data: the migration job

A plan says which arcs move; the migration job is what moves their keys between the data servers
(SPEC section 10; the worker is `ringkeeper migrate run`, docs/MIGRATE.md). `ringkeeperd` keeps the job's
state, so any worker resumes it and the console and `/metrics` show it; a worker that can reach the data
servers copies. One job per cluster at a time; its document is stored whole, and each change below reads
it, decides, and writes it back by compare and set in one transaction with its event, so two requests
or two servers never lose a change. Cost: one store read and one write of the document, at most
about 200 KB (`sources` of all steps are capped at 1024 entries); a start also computes the plan, under
the plan limits (`--max-plan-arcs`, `--plan-concurrency`).

The document: `id`, `state` (`copying`, `paused`, `verifying`, `verified`, `finished`, `cancelled`,
`failed`), `mode` (`window`: from the open window's previous version to the active one; `before_cutover`:
from the active version to a staged `to`, while the old ring still serves), `from`, `to`, `data`
(`memcached` or `redis`, from the topology), `digest` (the plan's), `max_step`, `step` (1-based) and
`steps` with `plan_steps` (each step's source nodes and arcs), `throttle`, `counters` (the copy's, over
every source and step: `scanned`, `copied`, `present` (already on the new owner, kept), `skipped` (over
the size cap), `bytes`, `errors`, `expired`, `stay`, `not_owned`, `later` (moving in another
step)), `sources` (the current step's, or the
verify's: `node`, `phase`, `cursor`, `done`, `seq`, `counters`), `worker` (`{"id", "lease_until"}` or
`null`), `verify` (`arcs`, `keys` checked, `mismatches`: `null` until verified, `written`: the
keys whose copy differs on its new owner, taken for the application's writes when `fleet_held`, and
its `counters`:
`scanned`, `checked`, `matched`, `skipped`, `missing`, `value`, `ttl`, `errors`, `expired`, `updated`
(written over by a `before_cutover` job's catch-up, then matched), `deleted` (by `delete_source`)),
`delete_source`, `fleet_held` (a window job: every claim found every client the server knows of
holding `to`, so every write since the copy began went to the new owners),
`errors`, `skipped_keys` and `mismatch_keys` (the first 100 of each, with their node), `paused_from`,
`started_at`, `started_by`, `updated_at`.

### `GET /v1/clusters/{c}/migration`

The cluster's job, the last one when none runs. Errors: 404 `unknown_cluster`, `no_migration`
(before the first).

EOF
    show job_get
    echo
    show e_no_migration
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration`

Starts a job. Body (every field optional): `mode` (`window`, the default, or `before_cutover`), `to`
(the staged version a `before_cutover` job pre-warms; for a window, the active one), `max_step` (pack
the plan into steps that each move at most this fraction, like `GET .../plan?max_step=`), `throttle`
(`{"keys_per_s", "bytes_per_s"}`, 0 unlimited) and `delete_source` (`true`: the verify deletes each key
it found matched on its new owner from its old one; a window job's only, 400 with `before_cutover`,
whose sources still serve). Answers 201 with the job, in state `copying`, with a
`migration_start` event. Both versions must say what their nodes serve (`"data"`; a version without
it counts as the other's, two different ones are refused).

Errors: 400 `invalid_body` (the field named); 404 `unknown_cluster`, `no_active_version`; 409
`no_migration_window` (a window job with no window open), `job_state` (a job is copying, paused or
verifying: pause, cancel or finish it first); 422 `data_unknown`, `plan_too_large`, `job_too_large`.

EOF
    show job_start
    echo
    show e_job_state
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration/claim`

A worker takes the job: `{"worker": "<id>"}` gives it a lease of 10 s (`worker.lease_until`), renewed
by claiming again or by each progress report. While another worker's lease runs, 409 `leased` names
it: two workers never copy the same job at once. A claim of a job whose versions are no longer the
cluster's (the window was finished, another version was activated) fails the job: 409
`version_changed`. 409 `job_state` for a job that ended. `{"worker": "<id>", "release": true}` lets go
of the lease when that worker holds it (a worker that stops: the next need not wait 10 s), and
changes nothing otherwise; it answers the job.

EOF
    show job_claim
    echo
    show e_leased
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration/progress`

A worker's report for one source, after each batch: `worker`, `seq` (one more for each report of that
source: a report whose `seq` is not newer changes nothing, so a retried report counts once), `step` and
`phase` (`copy` or `verify`, the job's now), `node`, `cursor` (where its scan is), `done`, `counters`
(the source's in that phase since the job began: never below what was reported before), and the new
`errors`, `skipped` and `mismatches` (`[{"key", ...}]`, keys percent-encoded, 100 at most). An
`error` is a failure that stopped the worker (a data server unreachable after its retries): the job
pauses with it. The answer is the job after the report: when every source of a step is done the next
step begins; after the last, `verifying`; after the verify, `verified` (no mismatches) or `failed`. A
mismatch is a key `missing` on its new owner, or one whose copy differs there (`value`, `ttl`),
except in a window job with `fleet_held`: then a differing copy holds the application's newer write
(the copy never writes over) and counts in `written`.
A paused or cancelled state tells the worker to stop at this batch. Errors: 400 `invalid_body` (the
field named), 409 `leased` (the worker does not hold the lease), `job_state` (another step or phase, or
a job that ended), `version_changed`.

EOF
    show job_progress
    cat <<'EOF'

### `PUT /v1/clusters/{c}/migration/throttle`

`{"keys_per_s": N, "bytes_per_s": N}` (either may be left out; 0 is unlimited): the worker applies it
within a second. A `migration_throttle` event.

EOF
    show job_throttle
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration/pause`

Pauses a copying or verifying job (the worker stops at its next batch boundary): `migration_pause`, with
the optional `{"comment"}` as its detail. Pausing a paused job changes nothing.

EOF
    show job_pause
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration/resume`

Resumes a paused job where it was (409 `job_state` for one that is not paused); run the worker again.

EOF
    show job_resume
    cat <<'EOF'

### `POST /v1/clusters/{c}/migration/cancel`

Ends a job that has not ended: nothing is deleted anywhere, every source keeps its keys. A rollback is a
revert.

EOF
    show job_cancel
    cat <<'EOF'

**The window's finish waits for the job.** When a job was started for the open window, `POST
.../migration/finish` closes it only once that job is `verified` (the job becomes `finished`), else 409
`not_verified`, unless `{"force": true, "reason": "..."}` from a token with the admin role. A cluster
whose job is of other versions (a pre-warm, an earlier window) is refused the same way, naming that job
(a job is one cutover's, SPEC 10), unless the window moves nothing the mover could copy (the same ring,
or no `data`). A cluster that never had a job finishes as above. The cancel works on a `verified` job
that is not finished, too.

EOF
    show e_not_verified
    cat <<'EOF'

## Rollouts: a change in approved steps

SPEC section 11 and [MIGRATE.md, "Rollouts"](MIGRATE.md#rollouts-a-big-change-in-steps-issue-23-part-2).

### `POST /v1/clusters/{c}/rollouts`

Reviews the change from the active version to `target` (a topology of the same scheme, hash and
`vnode_factor`) in steps that ramp weights, and keeps it as the cluster's rollout, in state `review`:
`{"target", "steps": N}` (1..100) for exactly N steps, or `{"target", "max_step_moved": F}` for the
fewest steps none of which moves more than F; optional `"soak_s"` (0..86400, the wait after each
step) and `"guard"`, checked after each step's soak: `{"url"}`, a URL that must answer 2xx within
5 s, or `{"url", "metric", "max"}`, whose answer in the Prometheus text format must have a sample of
`metric` (its name, and its labels as the answer writes them) at most `max`; a guard that fails
pauses the rollout, its `reason` saying why (a ringkeeperd built without libcurl refuses guards). The policy's `max_moved_fraction` bounds every step: `max_step_moved`
is cut to it, and with a count of steps a step over it is 422 `budget_exceeded`, naming the step. The
document has every step's topology, plan figures (`moved_fraction`, `balance_after`) and weight
`changes`, the steps' `total_moved` against the `one_shot_moved` of the change at once, and the
`digest` (XXH3-64 over the steps' plan digests in order) that the approval names;
`approvals_needed` is the policy's `approvals`, at least 1. With a load profile stored with the
cluster (`PUT .../load`, docs/LOAD.md), each step also has `load`, what its plan moves by the
profile (`moving_keys`, `moving_bytes`, `bytes_balance_after`, `bytes_over_mean_after`, and the
reads' figures where the profile counted reads), and the document `load`: the profile's totals,
the steps' `moving_bytes` summed and the `profile` (who, when, `age_s`), as of the review; or
`load_error`, why the profile cannot weigh it (another hash). Once started, each step's activation
answers to the policy in force at its commit: approvals short of what it asks now, or a step over
its budget, pause the rollout, its `reason` naming the rule (docs/MIGRATE.md). The cluster keeps its latest rollout only:
a new one replaces one in review or approved (the events keep the history). Bounds (docs/RELIABILITY.md):
the review's intermediate rings at most 16M points built, the document at most 1 MiB, else 422
`rollout_too_large`, which also answers a `max_step_moved` no split keeps. Needs the `publish` role.

EOF
    show rollout_create
    cat <<'EOF'

### `GET /v1/clusters/{c}/rollouts`

`{"rollouts": [...]}`: the cluster's latest rollout, or none.

EOF
    show rollouts
    cat <<'EOF'

### `GET /v1/clusters/{c}/rollouts/{r}`

Rollout `r`; 404 `no_rollout` for an id the cluster does not keep. While it runs in a `hold` or
`move` phase, the answer (and `GET .../rollouts`) adds `waiting`, what the phase waits for as this
server sees it now, for people: `"hold: 3 of 5 clients hold v7; still not: web-2 (v6), web-4
(none)"`, or `"move: no worker has claimed job 12 (copying): run ringkeeper migrate run --finish"`
(docs/MIGRATE.md, "What a phase waits for"). It is not stored.

EOF
    show rollout_get
    cat <<'EOF'

### `POST /v1/clusters/{c}/rollouts/{r}/approve`

`{"digest"}`: approves the whole rollout once, bound to its digest (409 `plan_changed` for another).
The policy's `distinct_approver` keeps its author, and a second approval by one name, out (403
`self_approval`); with `approvals_needed` approvals it is `approved`. An event `rollout_approve`
records each. Needs the `approve` role.

EOF
    show rollout_approve
    cat <<'EOF'

### `POST /v1/clusters/{c}/rollouts/{r}/start`

Starts an approved rollout (409 `rollout_state` otherwise; 409 `version_changed` when the active
version is no longer its start; 409 `migration_open` while a window is open). ringkeeperd then drives
it, moving each step through its phases (`"phase"`): `publish` (a staged version, author
`rollout N`), `activate` (in a migration window whatever the policy, its approvals the rollout's;
event `activate` with detail `rollout N step K`), `hold` (until every client of the cluster holds it,
[clients](#get-v1clusterscclients); paused after 600 s), `move` (until the window is finished: by
`ringkeeper migrate run --finish` when the topology says its `data`, else by ringkeeperd, event
`finish`), `soak` (`soak_s`, then the guard), then the next step, or `done`. A ringkeeperd stopped or killed at any
point goes on where the document says. While it runs or is paused, an activation by hand is 409
`rollout_running`.

EOF
    show rollout_start
    cat <<'EOF'

EOF
    show e_rollout_running
    cat <<'EOF'

### `POST /v1/clusters/{c}/rollouts/{r}/pause`

Pauses a running rollout where it is: the step in hand keeps its version and window. An event
`rollout_pause`; 409 `rollout_state` for a rollout that is not running.

EOF
    show rollout_pause
    cat <<'EOF'

### `POST /v1/clusters/{c}/rollouts/{r}/resume`

Goes on from where a paused rollout is (409 `rollout_state` otherwise): event `rollout_resume`.

EOF
    show rollout_resume
    cat <<'EOF'

### `POST /v1/clusters/{c}/rollouts/{r}/abort`

Ends a rollout in review, approved, running or paused (409 `rollout_state` otherwise). With `{}` it
leaves the cluster as its last step left it (finish a window still open with `POST
.../migration/finish`); event `rollout_abort`. With `{"revert": true}` a started rollout goes back:
it is `reverting` (still refusing activations by hand) while ringkeeperd closes the window its
step left open, publishes the start's topology again (comment `revert to vN: rollout R aborted`)
and activates it in a window like a step, waits for the fleet and the data (the worker moves the
keys back), then it is `aborted` (events `rollout_revert`, then `rollout_abort` "reverted to its
start as version V"). Before the start there is nothing to undo: it is a plain abort.

EOF
    show rollout_abort
    cat <<'EOF'

## The load profile

### `PUT /v1/clusters/{c}/load`

Stores the cluster's load profile, replacing the last one: what `ringkeeper measure` found on its
data servers, the keys, bytes and reads over the ring (docs/LOAD.md); `ringkeeper measure -c C
--store` measures and sends it. The body is the profile as measure writes it: `profile` (1),
`hash` (the hash its keys were placed by), `measured_epoch_s`, `sample_rate` (0 < rate <= 1) and
`load` (docs/RING.md, "Load over the ring") are checked, a `cluster` must be the path's; the rest
(`measured_at`, `servers`, ...) is kept as sent. Recorded as a `load` event. The answer is the
stored profile without its bins, with `stored_by` and `updated_at`. Needs a `publish` token where
tokens are configured. Bounded: the body by `--max-body`, the stored profile (compact JSON) at
1 MiB (16384 bins of 5- to 8-digit counts take 339 KB; 400 `invalid_body`, `field` `load`, saying to measure with fewer
`--bins`), so that one etcd request holds it.

Errors: 400 `malformed_json`, `invalid_body` (with `field`), `invalid_cluster`; 401, 403; 404
`unknown_cluster`.

EOF
    show load_put
    cat <<'EOF'

### `GET /v1/clusters/{c}/load`

The cluster's load profile as stored, with `age_s`: seconds since it was measured (from its
`measured_epoch_s`), so that a plan weighed by it says how old its figures are. 404
`no_load_profile` when none was stored.

EOF
    show load_get
    cat <<'EOF'

## The operator console

### `GET /`

302 to `/ui/`, the operator console (README, "Reviewing a plan in the console").

### `GET /ui`

302 to `/ui/`.

### `GET /ui/{file}`

The console's files, embedded in ringkeeperd at build time from `server/ui/` (`/ui/` is
`index.html`): `text/html`, `text/css` or `text/javascript`, 404 `not_found` for any other name. The
console loads nothing from elsewhere and reads only the routes above; writes carry the token the
operator pastes, kept in the tab's `sessionStorage`.

## Errors

One real example of each error code, in the order of the table above. 500 `internal` and 503
`unavailable` cannot be provoked on a healthy server, so they have none.

EOF
    for e in invalid_topology malformed_json invalid_parameter invalid_header invalid_cluster \
        invalid_version invalid_path unauthorized forbidden not_found unknown_cluster unknown_version \
        no_active_version method_not_allowed conflict precondition_failed body_too_large \
        too_many_points hash_mismatch plan_too_large invalid_body self_approval role_required \
        admin_required cross_origin unsupported_media_type unknown_host plan_changed \
        approval_required budget_exceeded migration_open no_migration_window no_migration \
        job_state leased not_verified version_changed data_unknown job_too_large no_rollout no_load_profile \
        rollout_state rollout_running rollout_too_large too_many_clusters; do
        printf '### `%s`\n\n' "$e"
        case $e in
        invalid_topology) echo "A topology rule is broken; \`field\` is the JSON path of the culprit." ;;
        malformed_json) echo "The body is not JSON (here: cut short)." ;;
        invalid_parameter) echo "A query parameter is out of range; \`field\` names it." ;;
        invalid_header) echo "\`If-Match\` without the quotes of an ETag." ;;
        invalid_cluster) echo "Cluster names are lower case." ;;
        invalid_version) echo "Versions in a path are numbers; there is no \`latest\` alias (the ring is the active version)." ;;
        invalid_path) echo "A %00 would cut the path short (libmicrohttpd decodes it to a NUL): the request is refused, whatever comes before it. So is an escaped slash (\`%2F\`) in the path: segments are split as sent, so that a proxy's rule on the raw path sees the route this server takes (\`versions%2F2%2Factivate\` is no activation); in a query string \`%2F\` is a value's \`/\`." ;;
        unauthorized) echo "A write to a server started with \`--token-file\`, without \`Authorization\`." ;;
        forbidden) echo "A bearer token that is not in the token file." ;;
        not_found) echo "No route has this path." ;;
        unknown_cluster) echo "No cluster of that name has been published." ;;
        unknown_version) echo "The cluster has no such version." ;;
        no_active_version) echo "The cluster exists, but no version has been activated yet." ;;
        method_not_allowed) echo "The path exists, the method does not; \`Allow\` lists the methods that do." ;;
        conflict) echo "Activating a version that is not newer than the active one (here: the retired version 1, while 2 is active)." ;;
        precondition_failed) echo "\`If-Match\` names version 2, but the latest is 3." ;;
        body_too_large) echo "A body over \`--max-body\` (this server ran with \`--max-body $MAX_BODY\`; \`big.json\` is a $(wc -c <"$TMP/big.json")-byte topology)." ;;
        too_many_points) echo "4096 × (1000 + 100) points is over the cap of 4194304." ;;
        plan_too_large) echo "Steps of 0.01% would render more rows than this server's \`--max-plan-rows 1000\`." ;;
        invalid_body) echo "A field of a policy, approval or activation body is out of range; \`field\` names it." ;;
        self_approval) echo "The policy asks for a distinct approver, and alice published version 2." ;;
        role_required) echo "carol's token has only the \`publish\` role, and approving needs \`approve\`." ;;
        admin_required) echo "Lowering the policy's approvals from 1 to 0 loosens a guard: carol's \`publish\` token may tighten it, not loosen it." ;;
        cross_origin) echo "A page of another site makes its visitor's browser publish and activate (no \`--token-file\`: the browser is the credential). Browsers send \`Origin\` with every write; only this server's own origin, or one given with \`--allow-origin\`, may write. curl and the client library send no \`Origin\`." ;;
        unsupported_media_type) echo "A write's body must be sent as \`application/json\`: a page of another site can send \`text/plain\` or a form without asking the server first (no CORS preflight), and older browsers send no \`Origin\` with a form." ;;
        unknown_host) echo "A browser's request (it sends \`Origin\` or \`Sec-Fetch-Site\`) must name in \`Host\` an IP address, \`localhost\` or a name given with \`--public-name\`: here an attacker's name, pointed at this server by the attacker's DNS once the page loaded (DNS rebinding), which makes the page's origin the server's own." ;;
        plan_changed) echo "The digest approved is not the plan from the active version to 2 (here: the first activation's, of version 1)." ;;
        approval_required) echo "Forced past the budget, but nobody approved the plan yet: force never passes the approvals." ;;
        budget_exceeded) echo "The plan moves more than the policy's \`max_moved_fraction\`, or the version changes the scheme, hash or hash tag (every key moves) without force." ;;
        migration_open) echo "A migration window from version 1 to 2 of \`web\` is open: finish it before activating version 3." ;;
        no_migration_window) echo "The window of \`web\` was finished already." ;;
        no_migration) echo "Cluster \`mc\` never had a migration job." ;;
        job_state) echo "A job of \`mc\` is copying: one job at a time." ;;
        leased) echo "mover-1 holds the job's lease; a second worker is refused." ;;
        not_verified) echo "The window of \`mc\` has a job that has not verified its copy yet." ;;
        version_changed) echo "A pre-warm of version 2 of \`pre\` from version 1, after version 2 was activated: the job failed." ;;
        data_unknown) echo "Version 3 of \`pre\` does not say whether its nodes serve memcached or redis." ;;
        no_rollout) echo "The cluster keeps its latest rollout only." ;;
        no_load_profile) echo "No load profile was stored for the cluster." ;;
        rollout_state) echo "A rollout is approved once." ;;
        rollout_running) echo "An activation by hand while a rollout drives the cluster." ;;
        rollout_too_large) echo "No split of the drain of one node of weight 1 at \`vnode_factor\` 8 keeps each step at 0.1% of the hash space." ;;
        too_many_clusters) echo "A publish that would create a third cluster on this server, which ran with \`--max-clusters $MAX_CLUSTERS\` (default 10000); \`field\` is \`cluster\`. Publishes to the two clusters there go on." ;;
        job_too_large) echo "Over a thousand of 1100 nodes lose keys to a new node of weight 500: more sources than the 1024 a job keeps." ;;
        hash_mismatch) echo "Version 1 of \`sessions\` hashes with \`fnv1a_32\`, version 2 with \`xxh3_64\`: every key would move." ;;
        esac
        echo
        show "e_$e"
        echo
    done
} >"$TMP/API.md"
mkdir -p "$src/docs"
mv "$TMP/API.md" "$src/docs/API.md"
echo "wrote $src/docs/API.md"
