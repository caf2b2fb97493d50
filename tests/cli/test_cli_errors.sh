#!/usr/bin/env bash
# test_cli_errors.sh — every way the `ringkeeper` CLI can fail says why, in one line that starts
# "ringkeeper <command>:", with the documented exit code: usage errors (and a pointer to --help, not
# the whole usage), unreadable files with the system's reason, a --server without a scheme, 401 and
# 403 with where the token comes from, a server that never answers (--timeout), and a --cache file
# that cannot be written. The messages are compared whole.
# usage: test_cli_errors.sh RINGKEEPER FAKE_SERVER RINGKEEPERD SOURCE_DIR
. "$(dirname "$0")/../server/lib.sh" "$3" # ringkeeperd on a free port; stops what we start
RK=$1
FAKE=$2
src=$(cd "$4" && pwd)
unset RINGKEEPER_SERVER RINGKEEPER_CLUSTER RINGKEEPER_TOKEN RINGKEEPER_CA_FILE

# fails CODE NAME STDERR ARGS...: ringkeeper ARGS exits CODE, prints STDERR exactly and no stdout
fails() {
    local want=$1 name=$2 err=$3
    shift 3
    timeout 60 "$RK" "$@" <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
    check "$name: exit code" "$want" "$?"
    check "$name: stderr" "$err" "$(cat "$TMP/err")"
    check "$name: no output" "" "$(cat "$TMP/out")"
}
# usage_error NAME CMD WHY ARGS...: exit 2, "ringkeeper CMD: WHY" and the pointer to --help
usage_error() {
    local name=$1 cmd=$2 why=$3
    shift 3
    fails 2 "$name" "ringkeeper $cmd: $why
Try 'ringkeeper $cmd --help' for the options." "$cmd" "$@"
}

# start_port LOG CMD...: starts CMD in the background (lib.sh's trap stops it), waits (at most
# 10 s) for "listening on port N" in LOG and sets PORT
start_port() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 &
    PORT=
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$log" | head -1)
        [ -n "$PORT" ] && return
        sleep 0.1
    done
    echo "did not start: $*"
    cat "$log"
    exit 1
}

: >"$TMP/in"
four=$src/tests/cli/four.json
five=$src/tests/cli/five.json

# usage errors: the reason, then where the options are
usage_error "missing required flag" simulate "--keys is required" --from-file "$four" --to-file "$five"
usage_error "lookup with nothing to route with" lookup \
    "--topology FILE, or a cluster (--cluster C or RINGKEEPER_CLUSTER) with a server (--server URL or RINGKEEPER_SERVER), is required"
usage_error "unknown option" versions "unknown option --bogus" --cluster c --bogus
usage_error "unknown short option" lookup "unknown option -x" -x
usage_error "option without its value" versions "--cluster needs a value" --cluster
usage_error "missing operand" show "the V operand is missing" --cluster c
usage_error "extra operand" publish "unexpected operand \"b.json\"" a.json b.json --cluster c
usage_error "one file of two" plan \
    "--from-file needs --to-file as well, or a version of a cluster: give --cluster C or set RINGKEEPER_CLUSTER" \
    --from-file "$four"
usage_error "-c without its value" versions "--cluster needs a value" -c
usage_error "files and server" simulate \
    "--from-file/--to-file (two files) and --server, --cluster, --from, --to (the server) do not mix" \
    --keys k --from-file "$four" --to-file "$five" --cluster c
usage_error "topology and server" lookup \
    "--topology (a file) and the server options (--server, --cluster, --token, --ca-file, --timeout, --cache, --client-id) do not mix" \
    --topology "$four" --timeout 5
usage_error "reset-cache alone" lookup "--reset-cache needs --cache FILE" --cluster c --reset-cache
# no cluster, or a bad one: where it comes from (the option, else the environment)
fails 2 "no cluster" "ringkeeper versions: no cluster: give --cluster C (-c C) or set RINGKEEPER_CLUSTER" \
    versions --server http://127.0.0.1:1
RINGKEEPER_CLUSTER= fails 2 "an empty RINGKEEPER_CLUSTER is none" \
    "ringkeeper show: no cluster: give --cluster C (-c C) or set RINGKEEPER_CLUSTER" \
    show 1 --server http://127.0.0.1:1
bad_name='is not a cluster name (a-z, 0-9, '"'.', '_', '-'"'; 1..63 bytes, starting with a letter or digit)'
RINGKEEPER_CLUSTER='Bad!' fails 2 "a bad RINGKEEPER_CLUSTER" \
    "ringkeeper versions: RINGKEEPER_CLUSTER: \"Bad!\" $bad_name" versions --server http://127.0.0.1:1
RINGKEEPER_CLUSTER=good fails 2 "a bad -c over a good RINGKEEPER_CLUSTER" \
    "ringkeeper versions: --cluster: \"Bad!\" $bad_name" versions --server http://127.0.0.1:1 -c 'Bad!'
fails 2 "unknown command" "ringkeeper: unknown command \"frobnicate\"
Try 'ringkeeper --help' for the commands." frobnicate
fails 2 "timeout out of range" 'ringkeeper versions: --timeout: must be 1..3600, got "0"' \
    versions --cluster c --server http://127.0.0.1:1 --timeout 0

# a file that cannot be read: the system's reason
fails 2 "unreadable keys" "ringkeeper simulate: cannot read $TMP/keys.txt: No such file or directory" \
    simulate --keys "$TMP/keys.txt" --from-file "$four" --to-file "$five"

# a server URL without a scheme: refused by every command alike (the client library refuses it too)
for cmd in versions lookup; do
    fails 2 "$cmd --server without scheme" \
        "ringkeeper $cmd: --server: must start with http:// or https://, got \"127.0.0.1:7070\"" \
        "$cmd" --server 127.0.0.1:7070 --cluster c
done
RINGKEEPER_SERVER=127.0.0.1:7070 fails 2 "RINGKEEPER_SERVER without scheme" \
    'ringkeeper plan: RINGKEEPER_SERVER: must start with http:// or https://, got "127.0.0.1:7070"' \
    plan --cluster c

# 401 and 403 say where the token comes from
start_port "$TMP/fake401" "$FAKE" 401 '{"error":{"code":"unauthorized","message":"a token is required"}}'
fails 2 "401" "ringkeeper activate: server: a token is required (HTTP 401)
ringkeeper activate: writes need a token: give --token T or set RINGKEEPER_TOKEN" \
    activate 2 --server "http://127.0.0.1:$PORT" --cluster c
start_port "$TMP/fake403" "$FAKE" 403 '{"error":{"code":"forbidden","message":"unknown token"}}'
fails 2 "403" "ringkeeper publish: server: unknown token (HTTP 403)
ringkeeper publish: the token was refused: check --token or RINGKEEPER_TOKEN" \
    publish "$four" --server "http://127.0.0.1:$PORT" --cluster c --token wrong

# a server that accepts the connection and never answers: exit 4 after --timeout, not 30 s
start_port "$TMP/stall" "$FAKE" stall
STALL=http://127.0.0.1:$PORT
start=$(date +%s)
fails 4 "stalled server" \
    "ringkeeper versions: server unreachable: $STALL/v1/clusters/c/versions?limit=100: no answer within 1 s (--timeout)" \
    versions --server "$STALL" --cluster c --timeout 1
check "stalled server: gave up within a few seconds" 1 "$(($(date +%s) - start < 5))"
timeout 60 "$RK" lookup --server "$STALL" --cluster c --timeout 1 <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
check "stalled server, lookup: exit code" 4 "$?"
check "stalled server, lookup: says so" 1 "$(grep -c '^ringkeeper lookup: server unreachable: .*/ring: Operation timed out after 10[0-9][0-9] milliseconds' "$TMP/err")"

# a --cache file that cannot be written: the ring was fetched, but the fallback asked for is not
# there; refused (exit 2) before any key is routed
rk_start
timeout 60 "$RK" publish "$four" --server "$BASE" --cluster c --activate >/dev/null 2>&1 </dev/null
echo user:1 >"$TMP/in"
fails 2 "unwritable --cache" "ringkeeper lookup: --cache: version 1 is in service but was not saved: \
could not create a temporary file next to the last-known-good file $TMP/missing/ring.json: \
No such file or directory; check the folder's permissions and free space" \
    lookup --server "$BASE" --cluster c --cache "$TMP/missing/ring.json"
timeout 60 "$RK" lookup --server "$BASE" --cluster c --cache "$TMP/ring.json" <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
check "writable --cache: exit code" 0 "$?"
check "writable --cache: routed" "user:1" "$(cut -f1 "$TMP/out")"

# the policy before the cluster's first publish: the server's 404, and what to do about it
: >"$TMP/in"
for verb in set show; do
    args=(--approvals 1)
    [ "$verb" = set ] || args=()
    fails 2 "policy $verb before the first publish" "ringkeeper policy: cluster fresh has no policy to \
$verb yet: a cluster, and its policy, exist from its first publish; publish a first version \
(ringkeeper publish FILE -c fresh), then $verb the policy (HTTP 404)" \
        policy "$verb" "${args[@]}" --server "$BASE" -c fresh
done
timeout 60 "$RK" publish "$four" --server "$BASE" -c fresh >/dev/null 2>&1 </dev/null
timeout 60 "$RK" policy set --approvals 1 --server "$BASE" -c fresh -q </dev/null >"$TMP/out" 2>"$TMP/err"
code=$?
check "policy set after the first publish: exit code (stderr: $(cat "$TMP/err"))" 0 "$code"

# nginx and HAProxy files (issue 52, items 8 and 9): a NUL byte is refused with its line, not taken
# as the end of the line; nginx's servers are counted as it reads (a million of them had cost 7 s
# and 681 MB before the refusal); a HAProxy server's name in the note is printed escaped
: >"$TMP/in"
printf 'upstream u {\n    hash $request_uri consistent;\n    server 10.0.0.1:80\0 down;\n}\n' >"$TMP/nul.conf"
fails 2 "nginx: a NUL byte" "ringkeeper import: $TMP/nul.conf: line 3: a NUL byte: the file is not text" \
    import --nginx "$TMP/nul.conf" --upstream u
printf 'backend b\n    balance uri\n    hash-type consistent\n    server s1 10.0.0.1:80 id 1\0 weight 0\n' >"$TMP/nul.cfg"
fails 2 "haproxy: a NUL byte" "ringkeeper import: $TMP/nul.cfg: line 4: a NUL byte: the file is not text" \
    import --haproxy "$TMP/nul.cfg" --backend b
{
    printf 'upstream u {\n    hash $request_uri consistent;\n'
    seq -f '    server 10.%g:80;' 1 1000000 | sed 's/10\.\([0-9]*\)/10.0.0.1:\1/; s/:\([0-9]*\):80/:\1/'
    printf '}\n'
} >"$TMP/million.conf"
start=$(date +%s%N)
fails 2 "nginx: a million servers" "ringkeeper import: $TMP/million.conf: line 100003: more than 100000 servers" \
    import --nginx "$TMP/million.conf" --upstream u
echo "nginx import of a million servers refused in $((($(date +%s%N) - start) / 1000000)) ms"
printf 'backend b\n    balance uri\n    hash-type consistent\n    server rev\xe2\x80\xaeersed 10.0.0.1:80\n    server s2 10.0.0.2:80 id 2\n' >"$TMP/mark.cfg"
timeout 60 "$RK" import --haproxy "$TMP/mark.cfg" --backend b >"$TMP/out" 2>"$TMP/err"
check "haproxy: a marked server name imports" 0 "$?"
has "haproxy: its note escapes the mark" "$TMP/err" 'rev\u202Eersed (id 1)'
if grep -q $'\xe2\x80\xae' "$TMP/err"; then bad "a raw U+202E reached the terminal"; else ok; fi

# lookup --requests (issue 53, item 2): each refusal names its line and says why; nothing is
# printed for the lines before it that a script could take for the whole answer
printf '{"scheme":"nginx","hash":"crc32a","nodes":[{"id":"a:1","addr":"a:1","weight":1}]}' >"$TMP/nokey.json"
printf '/a\n' >"$TMP/in"
fails 2 "requests without request_key" "ringkeeper lookup: --requests: line 1: request_key: the topology \
does not say how its balancer takes a key from a request: import its configuration again, or add \
\"request_key\" (docs/LOADBALANCERS.md)" lookup --requests --topology "$TMP/nokey.json"
printf '{"scheme":"nginx","hash":"crc32a","request_key":"$uri","nodes":[{"id":"a:1","addr":"a:1","weight":1}]}' >"$TMP/key.json"
printf '/a b\n' >"$TMP/in"
fails 2 "requests: a space" "ringkeeper lookup: --requests: line 1: the target has a space or a \
control character: send it percent-encoded" lookup --requests --topology "$TMP/key.json"
printf '/a\tX-Key\n' >"$TMP/in"
fails 2 "requests: a field without a colon" "ringkeeper lookup: --requests: line 1: a header field \
is \"Name: value\"" lookup --requests --topology "$TMP/key.json"
printf 'a\n' >"$TMP/in"
fails 2 "requests: not origin form" "ringkeeper lookup: --requests: line 1: uri: must be a request \
target in origin form, starting with '/' (\"/path?query\")" lookup --requests --topology "$TMP/key.json"
printf '/..\n' >"$TMP/in"
fails 2 "requests: nginx's 400" "ringkeeper lookup: --requests: line 1: uri: nginx answers 400 to this \
target: a bad percent escape, %00, or \"..\" above the root" lookup --requests --topology "$TMP/key.json"
printf 'upstream u {\n    hash $remote_addr consistent;\n    server 10.0.0.1:80;\n}\n' >"$TMP/addr.conf"
: >"$TMP/in"
timeout 60 "$RK" import --nginx "$TMP/addr.conf" --upstream u >"$TMP/out" 2>"$TMP/err"
check "an unevaluated hash key imports" 0 "$?"
has "... with a note saying why" "$TMP/err" "import: note: the upstream hashes \$remote_addr, which is not taken from a request here"
if grep -q request_key "$TMP/out"; then bad "an unevaluated key became a request_key"; else ok; fi

finish
