#!/usr/bin/env bash
# migrate_lib.sh — sourced by the mover's end-to-end scripts (test_migrate.sh,
# test_migrate_lifecycle.sh, test_rollout_data.sh) as `. migrate_lib.sh RINGKEEPERD RINGKEEPER`:
# the data servers' helpers (servers.sh) and a ringkeeperd's (server/lib.sh), both cleaned up at
# exit, and what the scripts share over them:
#   RK, HERE               the CLI's absolute path, this folder
#   as METHOD PATH ...     req with $OPS's token and a JSON content type
#   jq_ FILE EXPR          EXPR over the JSON document d of FILE, printed
#   job_field EXPR         jq_ over GET $C/migration
#   node_map               "n0=ADDR n1=ADDR ..." of the servers in ADDR
#   owners OLD NEW         "key<TAB>old owner<TAB>new owner" of $KEYS keys into $TMP/owners
#   wait_lines FILE N      until FILE has N lines (30 s at most: a run may first wait out a
#                          killed worker's 10 s lease, up to 12 s, then start under the sanitizers)
#   data_servers STORE [N] N servers of STORE (memcached, redis; N=4) up, their addresses in ADDR
#   topo N                 a topology of nodes n0..n(N-1) of weight 1 on ADDR's servers, of $STORE
#   within NAME GOT WANT P ok when |GOT - WANT| <= P% of WANT, else bad naming it
RK=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=servers.sh
. "$HERE/servers.sh"
RKM_TMP_SAVED=$RKM_TMP
trap - EXIT
# shellcheck source=../server/lib.sh
. "$HERE/../server/lib.sh" "$1"
trap 'rkm_cleanup; rk_cleanup' EXIT
RKM_TMP=$RKM_TMP_SAVED

as() { local method=$1 path=$2; shift 2; req "$method" "$path" -H "Authorization: Bearer $OPS" -H 'Content-Type: application/json' "$@"; }
jq_() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
job_field() { req GET "$C/migration" >/dev/null; jq_ "$TMP/body" "$1"; }
node_map() { local i; for i in "${!ADDR[@]}"; do printf 'n%s=%s ' "$i" "${ADDR[$i]}"; done; }

owners() {
    seq -f 'key-%g' 0 $((KEYS - 1)) >"$TMP/keys"
    "$RK" lookup --topology "$1" <"$TMP/keys" >"$TMP/own1"
    "$RK" lookup --topology "$2" <"$TMP/keys" | cut -f2 | paste "$TMP/own1" - >"$TMP/owners"
}

data_servers() {
    rkm_ports "${2:-4}"
    ADDR=()
    for p in "${PORTS[@]}"; do
        if [ "$1" = memcached ]; then rkm_memcached "$p"; else rkm_redis "$p"; fi
        ADDR+=("127.0.0.1:$p")
    done
    rkm_up "${PORTS[@]}" || exit 1
}

wait_lines() {
    for _ in $(seq 1 300); do
        [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

topo() {
    local nodes= i
    for i in $(seq 0 $(($1 - 1))); do
        nodes="$nodes${nodes:+,}{\"id\":\"n$i\",\"addr\":\"${ADDR[$i]}\",\"weight\":1}"
    done
    printf '{"hash":"xxh3_64","vnode_factor":100,"data":"%s","nodes":[%s]}' "$STORE" "$nodes"
}

within() {
    if /usr/bin/python3 -c 'import sys; g, w, p = map(float, sys.argv[1:]); sys.exit(abs(g - w) > p / 100 * w)' "$2" "$3" "$4"; then
        ok
    else
        bad "$1: $2 is not within $4% of $3"
    fi
}
