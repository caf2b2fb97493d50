#!/usr/bin/env bash
# etcd_requests.sh — how many requests ringkeeperd sends etcd for each kind of write, counted with
# strace on the server (its POSTs to the gateway's /v3/ routes): a publish, an activation, an
# approval, a publish with ?activate=true, and, under a budget (max_moved_fraction 0.9), an
# activation after a review of its plan, a publish with ?activate=true after a review, after the
# replica's own last one, and with the active version's ring not cached. 40-node topologies.
# A program, not a test (strace attaches to a process: root, or ptrace allowed).
# usage: tests/etcd/with_etcd.sh tests/bench/etcd_requests.sh RINGKEEPERD
command -v strace >/dev/null || {
    echo "etcd_requests.sh: needs strace (apt-get install -y strace)" >&2
    exit 2
}
export RK_TEST_STORE=etcd
. "$(dirname "$0")/../server/lib.sh" "$1"
rk_start
J='Content-Type: application/json'
for n in 40 41 42; do topo "$n" >"$TMP/t$n"; done
send() { # send METHOD PATH [TOPOLOGY|-d BODY]: one request, its status on stdout
    local m=$1 p=$2
    shift 2
    case ${1:-} in
    t*) set -- -H "$J" --data-binary @"$TMP/$1" ;;
    -d) set -- -H "$J" --data-binary "$2" ;;
    esac
    curl -s -o "$TMP/body" -w '%{http_code}' -X "$m" "$@" "$BASE$p"
}
count() { # count LABEL METHOD PATH [ARGS]: the request's status and its requests to etcd
    local label=$1 sp code
    shift
    strace -f -p "$PID" -e trace=sendto,write,writev,sendmsg -s 64 -o "$TMP/st" 2>/dev/null &
    sp=$!
    sleep 1 # strace attached to every thread
    code=$(send "$@")
    sleep 0.3
    kill "$sp"
    wait "$sp" 2>/dev/null
    printf '%-58s %s  %d\n' "$label" "$code" "$(grep -c 'POST /v3/' "$TMP/st")"
}
printf '%-58s %s  %s\n' "write" "HTTP" "etcd requests"
send POST /v1/clusters/a/versions t40 >/dev/null
count "publish" POST /v1/clusters/a/versions t41
count "activation (first)" POST /v1/clusters/a/versions/1/activate
send POST /v1/clusters/a/versions t42 >/dev/null
send GET "/v1/clusters/a/plan?from=1&to=2&arcs=false" >/dev/null
digest=$(sed -n 's/.*"digest":"\([0-9a-f]*\)".*/\1/p' "$TMP/body")
count "approval" POST /v1/clusters/a/versions/2/approve -d "{\"digest\":\"$digest\"}"
count "activation" POST /v1/clusters/a/versions/2/activate
count "publish ?activate=true" POST "/v1/clusters/a/versions?activate=true" t40

# Under a budget: cluster b reviewed, cluster c activated without one (nothing cached).
send POST "/v1/clusters/b/versions?activate=true" t40 >/dev/null
send POST /v1/clusters/b/versions t41 >/dev/null
send POST /v1/clusters/c/versions t40 >/dev/null
send POST /v1/clusters/c/versions/1/activate >/dev/null
for c in b c; do send PUT "/v1/clusters/$c/policy" -d '{"max_moved_fraction":0.9}' >/dev/null; done
send GET "/v1/clusters/b/plan?from=1&to=2&arcs=false" >/dev/null
count "budget: activation after a review" POST /v1/clusters/b/versions/2/activate
count "budget: publish ?activate=true after a review" POST "/v1/clusters/b/versions?activate=true" t42
count "budget: publish ?activate=true, active ring not cached" \
    POST "/v1/clusters/c/versions?activate=true" t41
count "budget: publish ?activate=true after its own last one" \
    POST "/v1/clusters/c/versions?activate=true" t42
rk_stop
