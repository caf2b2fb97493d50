#!/usr/bin/env bash
# test_cli.sh — end-to-end tests of the `ringkeeper` CLI's offline commands (lookup, plan, simulate,
# rollout, import, export).
# usage: test_cli.sh RINGKEEPER_BINARY SOURCE_DIR
set -u
rk=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
here=$src/tests/cli
vec=$src/tests/vectors
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect CODE NAME -- CMD...: runs CMD with stdin from $tmp/in, stdout to $tmp/out, stderr to $tmp/err
expect() {
    local want=$1 name=$2
    shift 3
    "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$name: exit $got, want $want; stderr: $(cat "$tmp/err")"; fi
}
same() { # same NAME FILE_A FILE_B
    if cmp -s "$2" "$3"; then ok; else bad "$1"; diff "$2" "$3" | head -20; fi
}
same_text() { # same_text NAME WANT GOT
    if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi
}
json_of() { # json_of FILE EXPR: EXPR over the document d, printed (a tuple space-separated)
    /usr/bin/python3 -c 'import json, sys
v = eval(sys.argv[2], {"d": json.load(open(sys.argv[1]))})
print(" ".join(map(str, v)) if isinstance(v, tuple) else v)' "$1" "$2"
}
has() { # has NAME FILE TEXT
    if grep -qF -- "$3" "$2"; then ok; else bad "$1: no \"$3\" in $(head -c 400 "$2")"; fi
}

: >"$tmp/in"

# --help everywhere, exit 0, and usage errors exit 2
expect 0 "help" -- "$rk" --help
has "help lists commands" "$tmp/out" "simulate"
for cmd in lookup plan simulate; do
    expect 0 "$cmd --help" -- "$rk" "$cmd" --help
    has "$cmd --help" "$tmp/out" "usage: ringkeeper $cmd"
done
# --version: the project's version (CMakeLists.txt's project(VERSION)), from rk_version()
version=$(sed -n 's/^project(ringkeeper VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
expect 0 "--version" -- "$rk" --version
same_text "--version prints the project's version" "ringkeeper $version" "$(cat "$tmp/out")"
# as kubectl and git users type them: `help [COMMAND]` and `version`
expect 0 "version" -- "$rk" version
same_text "version prints the project's version" "ringkeeper $version" "$(cat "$tmp/out")"
expect 0 "help" -- "$rk" help
has "help lists the commands" "$tmp/out" "simulate"
for cmd in clients import export show; do
    expect 0 "help $cmd" -- "$rk" help "$cmd"
    "$rk" "$cmd" --help >"$tmp/want"
    same_text "help $cmd is $cmd --help" "$(cat "$tmp/want")" "$(cat "$tmp/out")"
done
expect 2 "help of an unknown command" -- "$rk" help frobnicate
has "help of an unknown command says so" "$tmp/err" 'unknown command "frobnicate"'
# read-only commands do not call --token "for writes"; import and export list their options
for cmd in show versions watch events; do
    "$rk" "$cmd" --help >"$tmp/out"
    if grep -q -- "--token.*for.*write" "$tmp/out"; then bad "$cmd --help calls --token for writes"; else ok; fi
done
for opt in --nutcracker --pool; do
    "$rk" import --help >"$tmp/out"
    has "import --help lists $opt" "$tmp/out" "  $opt "
done
for opt in --format --pool --listen --file --server --cluster --version --into; do
    "$rk" export --help >"$tmp/out"
    has "export --help lists $opt" "$tmp/out" "  $opt "
done
expect 2 "no command" -- "$rk"
expect 2 "unknown command" -- "$rk" frobnicate
expect 2 "unknown flag" -- "$rk" lookup --topology "$here/four.json" --bogus
expect 2 "missing topology" -- "$rk" lookup
expect 2 "bad replicas" -- "$rk" lookup --topology "$here/four.json" --replicas 0
has "bad replicas says why" "$tmp/err" "--replicas: must be 1..64"
expect 2 "unreadable file" -- "$rk" lookup --topology "$tmp/nope.json"
has "unreadable file names it" "$tmp/err" "nope.json"

# an invalid topology: exit 2 and the field to blame on stderr
printf '{"hash":"fnv1a_32","vnode_factor":160,"nodes":[{"id":"a","addr":"h:1","weight":-1}]}' >"$tmp/badw.json"
expect 2 "invalid topology" -- "$rk" lookup --topology "$tmp/badw.json"
has "invalid topology message" "$tmp/err" "nodes[0].weight: must be a number 0..1000, got -1"

# lookup: every lookup of the golden ring vectors; lookups/ holds each case of tests/vectors/rings.json
# as a topology file and a "key<TAB>owner" list, so the expected output is the vector itself
for name in three-fnv five-md5 drain-xxh3; do
    cut -f1 "$here/lookups/$name.tsv" >"$tmp/in"
    expect 0 "lookup $name" -- "$rk" lookup --topology "$here/lookups/$name.json"
    same "lookup $name output" "$tmp/out" "$here/lookups/$name.tsv"
done

# keys are the bytes before \n: an empty line is the empty key, a last line without \n counts
printf 'a\n\nlast' >"$tmp/in"
expect 0 "lookup raw keys" -- "$rk" lookup --topology "$here/lookups/three-fnv.json"
printf 'a\talpha\n\talpha\nlast\tbeta\n' >"$tmp/want"
same "lookup raw keys output" "$tmp/out" "$tmp/want"

# replicas: distinct nodes, as many as own points when more are asked
printf 'user:1\n' >"$tmp/in"
expect 0 "replicas" -- "$rk" lookup --topology "$here/lookups/drain-xxh3.json" --replicas 3
if [ "$(awk -F'\t' '{print NF}' "$tmp/out")" = 3 ]; then ok; else bad "replicas: want key + 2 owners (s2 drains): $(cat "$tmp/out")"; fi


# Envoy's and gRPC's schemes (docs/ENVOY.md): a key is the request hash; the ring is vector grpc-05
cat >"$tmp/grpc.json" <<'JSON'
{"scheme": "grpc_ring_hash", "hash": "xx_hash", "minimum_ring_size": 8, "maximum_ring_size": 16,
 "nodes": [{"id": "10.245.63.134:8000", "addr": "10.245.63.134:8000", "weight": 1},
           {"id": "10.87.104.130:8001", "addr": "10.87.104.130:8001", "weight": 1},
           {"id": "10.27.153.80:8002", "addr": "10.27.153.80:8002", "weight": 1},
           {"id": "10.22.133.58:8003", "addr": "10.22.133.58:8003", "weight": 1}]}
JSON
printf '7091780118066550258\n7091780118066550259\n18446744073709551615\n' >"$tmp/in"
expect 0 "lookup of request hashes (grpc_ring_hash)" -- "$rk" lookup --topology "$tmp/grpc.json" -q
same_text "request hashes pick as grpc-js-xds does" "10.87.104.130:8001 10.22.133.58:8003 10.245.63.134:8000" "$(tr '\n' ' ' <"$tmp/out" | sed 's/ $//')"
sed 's/"maximum_ring_size": 16,/"maximum_ring_size": 16, "ring_size_cap": 4,/' "$tmp/grpc.json" >"$tmp/grpc-capped.json"
expect 0 "plan of a ring size cap (grpc_ring_hash)" -- "$rk" plan --from-file "$tmp/grpc.json" --to-file "$tmp/grpc-capped.json" -o json
has "the capped ring moves keys" "$tmp/out" '"moved_fraction"'
sed 's/grpc_ring_hash/maglev/; s/"minimum_ring_size": 8, "maximum_ring_size": 16,/"table_size": 65536,/' "$tmp/grpc.json" >"$tmp/maglev.json"
expect 2 "a table size that is not prime" -- "$rk" lookup --topology "$tmp/maglev.json"
has "the refusal names table_size" "$tmp/err" "table_size"
# expected parameters: a mismatch refuses the ring with exit 3
expect 3 "expect-hash mismatch" -- "$rk" lookup --topology "$here/four.json" --expect-hash fnv1a_32
has "expect-hash says why" "$tmp/err" "ring refused"
expect 3 "expect-vnode-factor mismatch" -- "$rk" lookup --topology "$here/four.json" --expect-vnode-factor 100
expect 0 "expectations met" -- "$rk" lookup --topology "$here/four.json" --expect-hash xxh3_64 --expect-vnode-factor 160

# plan: the golden plan vectors through the CLI (JSON), and the table
expect 0 "plan json" -- "$rk" plan --from-file "$here/lookups/add-one-from.json" --to-file "$here/lookups/add-one-to.json" --format json
has "plan json moved" "$tmp/out" '"moved_fraction": 0.186098170932'
has "plan json transfer" "$tmp/out" '"fraction": 0.118866798235'
expect 0 "plan text" -- env -C "$here" "$rk" plan --from-file four.json --to-file five.json --max-step 0.05 --keys 1000000
same "plan text output" "$tmp/out" "$here/expected/plan-four-five.txt"
expect 2 "plan bad step" -- "$rk" plan --from-file "$here/four.json" --to-file "$here/five.json" --max-step 1.5
has "plan bad step says why" "$tmp/err" "--max-step: must be a fraction in (0, 1]"
expect 2 "plan bad format" -- "$rk" plan --from-file "$here/four.json" --to-file "$here/five.json" --format yaml
expect 2 "plan across hashes" -- "$rk" plan --from-file "$here/four.json" --to-file "$here/lookups/three-fnv.json"
has "plan across hashes says why" "$tmp/err" "every key would be rehashed"

# simulate: counts add up and match the expected report
seq -f 'user:%g' 1 20000 >"$tmp/keys"
expect 0 "simulate" -- "$rk" simulate --keys "$tmp/keys" --from-file "$here/four.json" --to-file "$here/five.json"
same "simulate output" "$tmp/out" "$here/expected/simulate-four-five.txt"
expect 2 "simulate missing keys" -- "$rk" simulate --keys "$tmp/none" --from-file "$here/four.json" --to-file "$here/five.json"
has "simulate missing keys says why" "$tmp/err" "ringkeeper simulate: cannot read $tmp/none: No such file or directory"
expect 0 "simulate --keys - (stdin)" -- sh -c '"$1" simulate --keys - --from-file "$2/four.json" --to-file "$2/five.json" <"$3"' sh "$rk" "$here" "$tmp/keys"
same "simulate --keys -: the same report" "$tmp/out" "$here/expected/simulate-four-five.txt"
# the modulo baseline: 4 -> 5 nodes moves about 4/5 of the keys; the same topology, none
has "simulate: the modulo line" "$tmp/out" "modulo   15979 (79.8950%) with hash % nodes instead (4 -> 5 nodes of weight > 0)"
expect 0 "simulate, one topology twice" -- "$rk" simulate --keys "$tmp/keys" --from-file "$here/four.json" --to-file "$here/four.json"
has "simulate: nothing moves by modulo either" "$tmp/out" "modulo   0 (0.0000%) with hash % nodes instead (4 -> 4 nodes of weight > 0)"

# the README's CLI example, run literally: every "$ " line inside the block marked cli-example
# import / export of twemproxy pools (docs/KETAMA.md): twemproxy's names, refusals that say why
expect 0 "import a pool" -- "$rk" import --nutcracker "$here/nutcracker.yml" --pool cache
tr -d ' \n' <"$tmp/out" >"$tmp/flat"
has "import: scheme and hash" "$tmp/flat" '"scheme":"ketama","hash":"fnv1a_64","hash_tag":"{}"'
has "import: port 11211 is left out of the name" "$tmp/flat" '{"id":"10.0.0.1","addr":"10.0.0.1:11211","weight":1}'
has "import: other ports stay in it" "$tmp/flat" '{"id":"10.0.0.2:11212","addr":"10.0.0.2:11212","weight":2}'
has "import: a configured name wins" "$tmp/flat" '{"id":"cache-c","addr":"10.0.0.3:11211","weight":1}'
has "import: a unix socket" "$tmp/flat" '{"id":"local","addr":"/var/run/memcached.sock","weight":1}'
cp "$tmp/out" "$tmp/cache.json"
expect 0 "the imported pool routes" -- "$rk" lookup --topology "$tmp/cache.json" --expect-scheme ketama --expect-hash fnv1a_64
expect 2 "import modula" -- "$rk" import --nutcracker "$here/nutcracker.yml" --pool sessions
has "modula refused with why" "$tmp/err" 'pool "sessions" uses distribution modula'
expect 2 "import auto_eject_hosts" -- "$rk" import --nutcracker "$here/nutcracker.yml" --pool ejecting
has "ejection refused with what to do" "$tmp/err" 'drain a server by publishing it with weight 0'
expect 2 "import a bad hash tag" -- "$rk" import --nutcracker "$here/nutcracker.yml" --pool badtag
has "tag refused" "$tmp/err" 'hash_tag "{" must be two characters'
expect 2 "import a missing pool" -- "$rk" import --nutcracker "$here/nutcracker.yml" --pool nope
has "missing pool named" "$tmp/err" 'no pool "nope"'
expect 2 "import without --pool" -- "$rk" import --nutcracker "$here/nutcracker.yml"
expect 0 "export the imported pool" -- "$rk" export --format nutcracker --pool cache --file "$tmp/cache.json"
has "export: default name, no name written" "$tmp/out" '- "10.0.0.1:11211:1"'
has "export: a name where the id differs" "$tmp/out" '- "10.0.0.3:11211:1 cache-c"'
has "export: the tag" "$tmp/out" 'hash_tag: "{}"'
sed 's/"weight": 2/"weight": 0/' "$tmp/cache.json" >"$tmp/drained.json"
expect 0 "export a drained node" -- "$rk" export --format nutcracker --pool cache --file "$tmp/drained.json"
if grep -q 10.0.0.2 "$tmp/out"; then bad "a drained node was exported"; else ok; fi
expect 2 "export a ringkeeper-scheme topology" -- "$rk" export --format nutcracker --pool p --file "$here/four.json"
has "export refusal says why" "$tmp/err" 'only a ketama topology'
expect 2 "export in another format" -- "$rk" export --format haproxy --pool p --file "$tmp/cache.json"
expect 2 "export without --pool or --into" -- "$rk" export --format nutcracker --file "$tmp/cache.json"
has "export: --pool is required, and when it is not" "$tmp/err" "--pool is required (with --into"
# the pool's protocol is the topology's "data": redis: true gives redis, anything else memcached
has "import: a memcached pool (no redis option)" "$tmp/flat" '"hash_tag":"{}","data":"memcached","nodes":'
expect 0 "export a memcached topology" -- "$rk" export --format nutcracker --pool cache --file "$tmp/cache.json"
if grep -q 'redis' "$tmp/out"; then bad "export of a memcached pool says redis"; else ok; fi
printf 'kv:\n  listen: 127.0.0.1:22125\n  redis: true\n  distribution: ketama\n  servers:\n   - 10.0.0.1:6379:1\n' >"$tmp/redis.yml"
sed 's/redis: true/redis: false/' "$tmp/redis.yml" >"$tmp/redis-false.yml"
expect 0 "import a redis pool" -- "$rk" import --nutcracker "$tmp/redis.yml"
has "import: a redis pool" "$tmp/out" '"data": "redis"'
cp "$tmp/out" "$tmp/redis.json"
expect 0 "import a pool with redis: false" -- "$rk" import --nutcracker "$tmp/redis-false.yml"
has "import: redis: false is memcached" "$tmp/out" '"data": "memcached"'
expect 0 "export a redis topology" -- "$rk" export --format nutcracker --pool kv --file "$tmp/redis.json"
has "export: redis: true" "$tmp/out" '  redis: true'
cp "$tmp/out" "$tmp/redis-back.yml"
expect 0 "import the exported redis pool" -- "$rk" import --nutcracker "$tmp/redis-back.yml"
same "redis: import, export, import gives the same topology" "$tmp/redis.json" "$tmp/out"
sed '/"data"/d' "$tmp/redis.json" >"$tmp/unknown.json"
expect 0 "export a topology of unknown data" -- "$rk" export --format nutcracker --pool kv --file "$tmp/unknown.json"
if grep -q 'redis' "$tmp/out"; then bad "export of unknown data says redis"; else ok; fi

# a ketama plan says how much moves between servers that did not change (ketama recounts every
# server's points), with the figure; the ringkeeper scheme has nothing of the kind to say
w10() { # w10 W5: ten servers of weights 1,1,2,2,W5,1,1,2,1,1 (docs/KETAMA.md's example)
    local w=(1 1 2 2 "$1" 1 1 2 1 1) i nodes=
    for i in $(seq 0 9); do
        nodes="$nodes${nodes:+,}{\"id\":\"10.0.0.$((i + 1))\",\"addr\":\"10.0.0.$((i + 1)):11211\",\"weight\":${w[$i]}}"
    done
    printf '{"scheme":"ketama","hash":"fnv1a_64","nodes":[%s]}' "$nodes"
}
w10 3 >"$tmp/w10.json"
w10 0 >"$tmp/w10-drained.json"
expect 0 "a ketama plan" -- "$rk" plan --from-file "$tmp/w10.json" --to-file "$tmp/w10-drained.json"
has "ketama: unchanged servers trade arcs, in words with the figure" "$tmp/out" \
    "6.52% of the hash space moves between servers that did not change: ketama recounts every server's points"
expect 0 "a ringkeeper-scheme plan" -- "$rk" plan --from-file "$here/four.json" --to-file "$here/five.json"
if grep -q "did not change" "$tmp/out"; then bad "a ringkeeper-scheme plan claims unchanged nodes trade"; else ok; fi

# hostile YAML is refused before it is composed, naming the limit (libyaml's composer and scanner
# were quadratic in anchors and in depth: 100k anchors took 38 s, 200 KB of nesting 56 s)
printf 'a: %s%s\n' "$(printf '[%.0s' $(seq 1 40))" "$(printf ']%.0s' $(seq 1 40))" >"$tmp/deep.yml"
expect 2 "import: nested too deep" -- "$rk" import --nutcracker "$tmp/deep.yml"
has "import: the depth limit named" "$tmp/err" "nested over 32 levels deep"
awk 'BEGIN { print "p:"; for (i = 0; i < 1001; i++) printf "  a%d: &x%d v\n", i, i }' >"$tmp/anchors.yml"
expect 2 "import: too many anchors" -- "$rk" import --nutcracker "$tmp/anchors.yml"
has "import: the anchor limit named" "$tmp/err" "over 1000 anchors and aliases"
awk 'BEGIN { print "p:"; print "  servers:"; for (i = 0; i < 300001; i++) print "   - h:1:1" }' >"$tmp/values.yml"
expect 2 "import: too many values" -- "$rk" import --nutcracker "$tmp/values.yml"
has "import: the value limit named" "$tmp/err" "over 300000 values"

# export --into: only the servers of the pool are rewritten, every other byte of the file is kept
cat >"$tmp/one.yml" <<'EOF'
# the web cache
web:
  listen: 127.0.0.1:22121
  hash: fnv1a_64   # as the apps hash
  distribution: ketama
  auto_eject_hosts: false
  timeout: 400
  backlog: 1024
  servers:
   - 10.0.0.1:11211:1
   - 10.0.0.2:11211:1
  server_retry_timeout: 30000
EOF
expect 0 "import the only pool without --pool" -- "$rk" import --nutcracker "$tmp/one.yml"
sed 's/"weight": 1/"weight": 3/' "$tmp/out" >"$tmp/heavier.json"
cp "$tmp/one.yml" "$tmp/one.orig"
chmod 640 "$tmp/one.yml"
expect 0 "export --into the only pool" -- "$rk" export --format nutcracker --into "$tmp/one.yml" --file "$tmp/heavier.json"
has "export --into: says what it did" "$tmp/out" "the servers of pool web rewritten"
diff "$tmp/one.orig" "$tmp/one.yml" | grep '^[<>]' >"$tmp/diff"
printf '%s\n' '<    - 10.0.0.1:11211:1' '<    - 10.0.0.2:11211:1' '>    - "10.0.0.1:11211:3"' \
    '>    - "10.0.0.2:11211:3"' >"$tmp/want"
same "export --into: only the servers changed" "$tmp/want" "$tmp/diff"
same_text "export --into: the file keeps its mode" 640 "$(stat -c %a "$tmp/one.yml")"
expect 0 "export --into: the pool reads back" -- "$rk" import --nutcracker "$tmp/one.yml" --pool web
has "export --into: the new weights" "$tmp/out" '"weight": 3'
# a flow list stays a flow list; another pool of the file is left alone
cp "$here/nutcracker.yml" "$tmp/many.yml"
printf 'flow:\n  hash: fnv1a_64\n  servers: ["10.0.0.9:11211:1"]\n' >>"$tmp/many.yml"
sed 's/"weight": 1/"weight": 3/' "$tmp/heavier.json" >"$tmp/flow.json"
expect 2 "export --into a file of many pools, no --pool" -- "$rk" export --format nutcracker --into "$tmp/many.yml" --file "$tmp/flow.json"
has "export --into: name one" "$tmp/err" "pools: name one with --pool"
expect 0 "export --into the flow pool" -- "$rk" export --format nutcracker --into "$tmp/many.yml" --pool flow --file "$tmp/flow.json"
has "export --into: flow stays flow" "$tmp/many.yml" '  servers: ["10.0.0.1:11211:3", "10.0.0.2:11211:3"]'
same "export --into: the other pools as they were" <(head -n 28 "$here/nutcracker.yml") <(head -n 28 "$tmp/many.yml")
# a pool whose hash is not the topology's: its servers alone would not route like it
cp "$tmp/many.yml" "$tmp/many.orig"
expect 2 "export --into a pool of another hash" -- "$rk" export --format nutcracker --into "$tmp/many.yml" --pool cache --file "$tmp/flow.json"
has "export --into: says which option differs" "$tmp/err" 'pool "cache" has hash_tag {} but the topology (none)'
same "export --into: a refusal changes nothing" "$tmp/many.orig" "$tmp/many.yml"
expect 2 "export --into with --listen" -- "$rk" export --format nutcracker --into "$tmp/one.yml" --listen 1.2.3.4:1 --file "$tmp/heavier.json"
# a pool that speaks another protocol than the topology's data: refused; unknown data goes anywhere
sed 's/"data": "memcached"/"data": "redis"/' "$tmp/heavier.json" >"$tmp/heavier-redis.json"
cp "$tmp/one.yml" "$tmp/one.orig"
expect 2 "export --into a memcached pool of a redis topology" -- "$rk" export --format nutcracker --into "$tmp/one.yml" --file "$tmp/heavier-redis.json"
has "export --into: says the protocols differ" "$tmp/err" "pool \"web\" speaks memcached to its servers but the topology's data is redis"
same "export --into: a protocol refusal changes nothing" "$tmp/one.orig" "$tmp/one.yml"
cp "$tmp/redis.yml" "$tmp/redis.orig"
expect 0 "export --into a redis pool" -- "$rk" export --format nutcracker --into "$tmp/redis.yml" --file "$tmp/redis.json"
same "export --into a redis pool: its options kept" <(grep -v '^   - ' "$tmp/redis.orig") <(grep -v '^   - ' "$tmp/redis.yml")
sed '/"data"/d' "$tmp/heavier-redis.json" >"$tmp/heavier-unknown.json"
expect 0 "export --into of unknown data" -- "$rk" export --format nutcracker --into "$tmp/one.yml" --file "$tmp/heavier-unknown.json"

# export --format nginx --into: only the upstream's servers change; the operator's options,
# comments, the other upstreams and the file's mode stay
cat >"$tmp/nginx.conf" <<'EOF'
# the caches, behind nginx
http {
    upstream other { server 10.0.0.1:8080; }
    upstream caches {
        hash $request_uri consistent;   # by URI
        keepalive 16;
        server 10.0.0.1:8080 max_fails=3 fail_timeout=10s;
        server 10.0.0.2:8080 weight=2 max_fails=3;  # rack B
        # rack C
        server 10.0.0.3:8080;
    }
}
EOF
chmod 640 "$tmp/nginx.conf"
cp -p "$tmp/nginx.conf" "$tmp/nginx.orig"
node() { printf '{"id":"%s","addr":"%s","weight":%s}' "$1" "$1" "$2"; }
printf '{"scheme":"nginx","hash":"crc32a","nodes":[%s,%s,%s,%s]}' "$(node 10.0.0.1:8080 3)" \
    "$(node 10.0.0.2:8080 0)" "$(node 10.0.0.3:8080 1)" "$(node 10.0.0.4:8080 2)" >"$tmp/ngx-next.json"
expect 0 "nginx: export --into" -- "$rk" export --format nginx --upstream caches --into "$tmp/nginx.conf" --file "$tmp/ngx-next.json"
same_text "nginx: export --into says what it did" \
    "$tmp/nginx.conf: the servers of upstream caches rewritten; every other line kept" "$(cat "$tmp/out")"
diff "$tmp/nginx.orig" "$tmp/nginx.conf" | grep '^[<>]' >"$tmp/diff"
printf '%s\n' '<         server 10.0.0.1:8080 max_fails=3 fail_timeout=10s;' \
    '<         server 10.0.0.2:8080 weight=2 max_fails=3;  # rack B' \
    '>         server 10.0.0.1:8080 weight=3 max_fails=3 fail_timeout=10s;' \
    '>         server 10.0.0.4:8080 weight=2;' >"$tmp/want"
same "nginx: export --into reweighs, drops and adds only servers, each keeping its options" "$tmp/want" "$tmp/diff"
same_text "nginx: export --into keeps the file's mode" 640 "$(stat -c %a "$tmp/nginx.conf")"
expect 0 "nginx: the rewritten upstream imports" -- "$rk" import --nginx "$tmp/nginx.conf" --upstream caches
same_text "nginx: it reads back as the topology, weight 0 left out" "10.0.0.1:8080/3 10.0.0.3:8080/1 10.0.0.4:8080/2" \
    "$(json_of "$tmp/out" 'tuple("%s/%d" % (n["id"], n["weight"]) for n in d["nodes"])')"
# weight 1 is written only where weight= was: a server that has it keeps it
printf '{"scheme":"nginx","hash":"crc32a","nodes":[%s,%s,%s]}' "$(node 10.0.0.1:8080 1)" \
    "$(node 10.0.0.3:8080 2)" "$(node 10.0.0.4:8080 1)" >"$tmp/ngx-ones.json"
expect 0 "nginx: export --into of weights 1" -- "$rk" export --format nginx --upstream caches --into "$tmp/nginx.conf" --file "$tmp/ngx-ones.json"
has "nginx: a written weight= stays written" "$tmp/nginx.conf" "server 10.0.0.1:8080 weight=1 max_fails=3 fail_timeout=10s;"
has "nginx: one not written is added when not 1" "$tmp/nginx.conf" "        server 10.0.0.3:8080 weight=2;"
# refused, the file unchanged: no consistent hash, a topology of another scheme, --key
sed 's/ consistent;/;/' "$tmp/nginx.orig" >"$tmp/modulo.conf"
sum=$(sha256sum <"$tmp/modulo.conf")
expect 2 "nginx: export --into an upstream without consistent" -- "$rk" export --format nginx --upstream caches --into "$tmp/modulo.conf" --file "$tmp/ngx-next.json"
has "nginx: the refusal names the file, the line and why" "$tmp/err" "$tmp/modulo.conf: line 5: hash without consistent maps keys by modulo"
same_text "nginx: a hash refusal changes nothing" "$sum" "$(sha256sum <"$tmp/modulo.conf")"
sum=$(sha256sum <"$tmp/nginx.orig")
expect 2 "nginx: export --into of a ketama topology" -- "$rk" export --format nginx --upstream caches --into "$tmp/nginx.orig" --file "$tmp/w10.json"
has "nginx: the scheme refusal says why" "$tmp/err" "needs a topology of the nginx scheme (its \"scheme\" is ketama)"
same_text "nginx: a scheme refusal changes nothing" "$sum" "$(sha256sum <"$tmp/nginx.orig")"
expect 2 "nginx: export --into with --key" -- "$rk" export --format nginx --upstream caches --key '$uri' --into "$tmp/nginx.orig" --file "$tmp/ngx-next.json"
has "nginx: --key is the file's own" "$tmp/err" "--into keeps the upstream's own hash key: drop --key"

# export --format haproxy --into: servers matched by id keep their names and options; those
# numbered by their place get their id pinned, so that removing the first moves no other
cat >"$tmp/haproxy.cfg" <<'EOF'
defaults
    mode http
    hash-type consistent
backend other
    balance uri
    server c1 10.0.0.1:8080
backend caches
    balance uri
    # the caches
    server c1 10.0.0.1:8080 check inter 2s   # rack A
    server c2 10.0.0.2:8080 weight 2 check
    server c3 10.0.0.3:8080 check
    server c4 10.0.0.4:8080 id 9 check
    option httpchk
EOF
chmod 604 "$tmp/haproxy.cfg"
cp -p "$tmp/haproxy.cfg" "$tmp/haproxy.orig"
hnode() { printf '{"id":"%s","addr":"%s","weight":%s}' "$1" "$2" "$3"; }
printf '{"scheme":"haproxy","hash":"sdbm_avalanche","nodes":[%s,%s,%s,%s]}' "$(hnode 2 10.0.0.2:8080 3)" \
    "$(hnode 3 10.0.0.33:8080 1)" "$(hnode 9 10.0.0.4:8080 0)" "$(hnode 4 10.0.0.5:8080 1)" >"$tmp/hap-next.json"
expect 0 "haproxy: export --into" -- "$rk" export --format haproxy --backend caches --into "$tmp/haproxy.cfg" --file "$tmp/hap-next.json"
same_text "haproxy: export --into says what it did" \
    "$tmp/haproxy.cfg: the servers of backend caches rewritten; every other line kept" "$(cat "$tmp/out")"
diff "$tmp/haproxy.orig" "$tmp/haproxy.cfg" | grep '^[<>]' >"$tmp/diff"
printf '%s\n' '<     server c1 10.0.0.1:8080 check inter 2s   # rack A' \
    '<     server c2 10.0.0.2:8080 weight 2 check' '<     server c3 10.0.0.3:8080 check' \
    '<     server c4 10.0.0.4:8080 id 9 check' '>     server c2 10.0.0.2:8080 weight 3 check id 2' \
    '>     server c3 10.0.0.33:8080 check id 3' '>     server c4 10.0.0.4:8080 id 9 check weight 0' \
    '>     server s4 10.0.0.5:8080 id 4 weight 1' >"$tmp/want"
same "haproxy: export --into sets addresses and weights, pins ids, drops and adds" "$tmp/want" "$tmp/diff"
same_text "haproxy: export --into keeps the file's mode" 604 "$(stat -c %a "$tmp/haproxy.cfg")"
expect 0 "haproxy: the rewritten backend imports" -- "$rk" import --haproxy "$tmp/haproxy.cfg" --backend caches
same_text "haproxy: it reads back as the topology" "2/10.0.0.2:8080/3 3/10.0.0.33:8080/1 9/10.0.0.4:8080/0 4/10.0.0.5:8080/1" \
    "$(json_of "$tmp/out" 'tuple("%s/%s/%d" % (n["id"], n["addr"], n["weight"]) for n in d["nodes"])')"
if [ -s "$tmp/err" ]; then bad "haproxy: a server is left numbered by its place: $(cat "$tmp/err")"; else ok; fi
# refused, the file unchanged: another hash function, hash-type map-based, another scheme, a name
# a new server would take
sum=$(sha256sum <"$tmp/haproxy.orig")
sed 's/sdbm_avalanche/djb2/' "$tmp/hap-next.json" >"$tmp/hap-djb2.json"
expect 2 "haproxy: export --into a backend of another hash" -- "$rk" export --format haproxy --backend caches --into "$tmp/haproxy.orig" --file "$tmp/hap-djb2.json"
has "haproxy: the refusal names the file, the line and what differs" "$tmp/err" \
    "$tmp/haproxy.orig: line 3: backend caches hashes keys with sdbm_avalanche but the topology with djb2"
same_text "haproxy: a hash refusal changes nothing" "$sum" "$(sha256sum <"$tmp/haproxy.orig")"
sed 's/hash-type consistent/hash-type map-based/' "$tmp/haproxy.orig" >"$tmp/map.cfg"
sum=$(sha256sum <"$tmp/map.cfg")
expect 2 "haproxy: export --into a map-based backend" -- "$rk" export --format haproxy --backend caches --into "$tmp/map.cfg" --file "$tmp/hap-next.json"
has "haproxy: map-based is no ring" "$tmp/err" "line 3: hash-type map-based (the default) maps keys by modulo"
same_text "haproxy: a map-based refusal changes nothing" "$sum" "$(sha256sum <"$tmp/map.cfg")"
sum=$(sha256sum <"$tmp/haproxy.orig")
expect 2 "haproxy: export --into of an nginx topology" -- "$rk" export --format haproxy --backend caches --into "$tmp/haproxy.orig" --file "$tmp/ngx-next.json"
has "haproxy: the scheme refusal says why" "$tmp/err" "needs a topology of the haproxy scheme (its \"scheme\" is nginx)"
sed 's/server c3 /server s4 /' "$tmp/haproxy.orig" >"$tmp/taken.cfg"
sum=$(sha256sum <"$tmp/taken.cfg")
expect 2 "haproxy: export --into where the new name is taken" -- "$rk" export --format haproxy --backend caches --into "$tmp/taken.cfg" --file "$tmp/hap-next.json"
has "haproxy: the name refusal says which" "$tmp/err" "is named s4 already, the name the new server of id 4 takes"
same_text "haproxy: a name refusal changes nothing" "$sum" "$(sha256sum <"$tmp/taken.cfg")"
expect 2 "haproxy: export --into with --balance" -- "$rk" export --format haproxy --backend caches --balance uri --into "$tmp/haproxy.orig" --file "$tmp/hap-next.json"
has "haproxy: --balance is the file's own" "$tmp/err" "--into keeps the backend's own balance: drop --balance"
# a topology that takes its keys from requests otherwise than the file (issue 53, item 2): its
# servers alone would not route like it
sed 's/"nodes"/"request_key":"hdr(X-Key)","nodes"/' "$tmp/hap-next.json" >"$tmp/hap-hdr.json"
sum=$(sha256sum <"$tmp/haproxy.orig")
expect 2 "haproxy: export --into a backend of another balance" -- "$rk" export --format haproxy --backend caches --into "$tmp/haproxy.orig" --file "$tmp/hap-hdr.json"
has "haproxy: the balance refusal says what differs" "$tmp/err" "backend caches balances by uri but the topology takes its keys as hdr(X-Key) (request_key)"
same_text "haproxy: a balance refusal changes nothing" "$sum" "$(sha256sum <"$tmp/haproxy.orig")"
sed 's/"nodes"/"request_key":"$uri","nodes"/' "$tmp/ngx-next.json" >"$tmp/ngx-uri.json"
sum=$(sha256sum <"$tmp/nginx.orig")
expect 2 "nginx: export --into an upstream of another hash key" -- "$rk" export --format nginx --upstream caches --into "$tmp/nginx.orig" --file "$tmp/ngx-uri.json"
has "nginx: the key refusal says what differs" "$tmp/err" "upstream caches hashes \$request_uri, the topology takes its keys as \$uri (request_key)"
same_text "nginx: a key refusal changes nothing" "$sum" "$(sha256sum <"$tmp/nginx.orig")"
sed 's/"nodes"/"request_key":"$request_uri","nodes"/' "$tmp/ngx-next.json" >"$tmp/ngx-same.json"
cp -p "$tmp/nginx.orig" "$tmp/nginx-same.conf"
expect 0 "nginx: export --into an upstream of the same key" -- "$rk" export --format nginx --upstream caches --into "$tmp/nginx-same.conf" --file "$tmp/ngx-same.json"
expect 2 "export --key against the topology's request_key" -- "$rk" export --format nginx --upstream caches --key '$arg_id' --file "$tmp/ngx-same.json"
has "export: --key refused, saying the topology's" "$tmp/err" 'the topology takes its keys as "$request_uri" (request_key)'
expect 0 "export writes the topology's request_key" -- "$rk" export --format nginx --upstream caches --file "$tmp/ngx-uri.json"
has "export: hash \$uri" "$tmp/out" 'hash $uri consistent;'

# rollout: a drain of one of four nodes in steps, then a budget, the digest and the refusals
/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
four = {"hash": "xxh3_64", "vnode_factor": 40,
        "nodes": [{"id": "n%d" % i, "addr": "10.0.0.%d:11211" % i, "weight": 1} for i in range(4)]}
json.dump(four, open(sys.argv[1] + "/four.json", "w"))
four["nodes"] = four["nodes"][:3]
json.dump(four, open(sys.argv[1] + "/three.json", "w"))
four["hash"] = "md5_32"
json.dump(four, open(sys.argv[1] + "/three-md5.json", "w"))
PY
expect 0 "rollout in 4 steps" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three.json" --steps 4
has "rollout: the third step" "$tmp/out" "n3 0.5 -> 0.25"
has "rollout: the total is the one-shot change" "$tmp/out" "(1.0000x)"
expect 0 "rollout as JSON" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three.json" --steps 4 -o json
same_text "rollout as JSON: 4 steps, the last without n3" "4 3" \
    "$(json_of "$tmp/out" 'len(d["steps"]), len(d["steps"][3]["topology"]["nodes"])')"
digest=$(json_of "$tmp/out" 'd["digest"]')
expect 0 "rollout --quiet" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three.json" --steps 4 -q
same_text "rollout --quiet prints the digest" "$digest" "$(cat "$tmp/out")"
expect 0 "rollout with a budget" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three.json" --max-step-moved 0.05 -o json
same_text "rollout with a budget: no step above it" "True" \
    "$(json_of "$tmp/out" 'max(s["moved_fraction"] for s in d["steps"]) <= 0.05')"
expect 2 "rollout to another hash" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three-md5.json" --steps 2
has "rollout to another hash says why" "$tmp/err" "must keep the scheme, hash and vnode_factor"
expect 2 "rollout with more steps than points" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three.json" --steps 41
has "rollout with more steps than points says how many" "$tmp/err" "must be at most 40 here"
expect 2 "rollout without steps or budget" -- "$rk" rollout --from-file "$tmp/four.json" --to-file "$tmp/three.json"
has "rollout without steps says what to give" "$tmp/err" "give --steps N or --max-step-moved F"

awk '/<!-- cli-example -->/{on=1; next} on && /^```$/ && seen {exit} on && /^```/{seen=1; next} on{print}' \
    "$src/README.md" >"$tmp/readme"
if [ -s "$tmp/readme" ]; then ok; else bad "README has no cli-example block"; fi
(
    cd "$src" && PATH="$(dirname "$rk"):$PATH"
    while IFS= read -r line; do
        case $line in
        '$ '*) printf '%s\n' "$line"; bash -c "${line#\$ }" 2>&1 ;;
        esac
    done <"$tmp/readme"
) >"$tmp/readme-run"
same "README cli example" "$tmp/readme-run" "$tmp/readme"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
