#!/usr/bin/env bash
# test_envoy_format.sh — `ringkeeper import --envoy` and `export --format envoy` (issue 58,
# docs/ENVOY.md "Import and export"): a Cluster with its endpoints in YAML and JSON, inline or as
# CDS and EDS apart, read into the topology Envoy routes by (ids the keys Envoy hashes); export
# and import again give the same topology, for ring_hash and Maglev; every vector of
# tests/vectors/envoy.json written as an EDS file and imported picks what the vector says; and
# each setting no ring says is refused, naming its field, with nothing printed on stdout.
# usage: test_envoy_format.sh RINGKEEPER SOURCE_DIR
set -u
RK=$1
SRC=$(cd "$2" && pwd)
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PASSED=0 FAILED=0
ok() { PASSED=$((PASSED + 1)); }
bad() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
check() { if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi; }
has() { if grep -qF -- "$3" "$2"; then ok; else bad "$1: no [$3] in: $(head -c 600 "$2")"; fi; }

cat >"$TMP/c.yaml" <<'EOF'
# as people write it: hash_key on one endpoint, a weight, an IPv6 address
name: redis
connect_timeout: 1s
type: STRICT_DNS
lb_policy: RING_HASH
ring_hash_lb_config: {minimum_ring_size: 2048, maximum_ring_size: "8388608"}
load_assignment:
  cluster_name: redis
  endpoints:
  - locality: {zone: a}
    lb_endpoints:
    - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 6379}}}
      metadata: {filter_metadata: {envoy.lb: {hash_key: cache-a}}}
    - endpoint: {address: {socket_address: {address: 10.0.0.2, port_value: 6379}}}
      load_balancing_weight: {value: 2}
  - locality: {zone: b}
    lb_endpoints:
    - endpoint: {address: {socket_address: {address: "fd00::3", port_value: 6379}}}
      health_status: HEALTHY
EOF
"$RK" import --envoy "$TMP/c.yaml" >"$TMP/t.json" 2>"$TMP/err"
check "import YAML" 0 $?
check "... the topology" '{"scheme": "envoy_ring_hash", "hash": "xx_hash", "minimum_ring_size": 2048, "maximum_ring_size": 8388608, "nodes": [{"id": "cache-a", "addr": "10.0.0.1:6379", "weight": 1}, {"id": "10.0.0.2:6379", "addr": "10.0.0.2:6379", "weight": 2}, {"id": "[fd00::3]:6379", "addr": "[fd00::3]:6379", "weight": 1}]}' \
    "$($PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$TMP/t.json")"
has "... a note for gRPC fleets" "$TMP/err" '"scheme": "grpc_ring_hash"'

# CDS and EDS as two YAML documents of one file (kubectl's way), the cluster naming its service
cat >"$TMP/two.yaml" <<'EOF'
name: sessions
type: EDS
lb_policy: MAGLEV
maglev_lb_config: {table_size: 65537}
eds_cluster_config: {service_name: sessions-eds}
---
cluster_name: sessions-eds
endpoints:
- lb_endpoints:
  - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 6379}}}
    metadata: {filter_metadata: {envoy.lb: {hash_key: cache-a}}}
EOF
"$RK" import --envoy "$TMP/two.yaml" >"$TMP/out" 2>"$TMP/err"
check "two YAML documents: CDS and its EDS by service_name" \
    '{"scheme": "maglev", "hash": "xx_hash", "table_size": 65537, "nodes": [{"id": "cache-a", "addr": "10.0.0.1:6379", "weight": 1}]}' \
    "$($PY -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$TMP/out")"

# export and import again: STATIC (inline) and EDS (apart), ring_hash and Maglev, by hostname
same() { # same NAME TOPOLOGY [EXPORT OPTIONS...]: export, import, compare
    local name=$1 t=$2
    shift 2
    "$RK" export --format envoy --file "$t" --envoy-cluster svc "$@" >"$TMP/e.json" 2>"$TMP/err" ||
        { bad "$name: export: $(cat "$TMP/err")"; return; }
    "$RK" import --envoy "$TMP/e.json" >"$TMP/back.json" 2>"$TMP/err" ||
        { bad "$name: import: $(cat "$TMP/err")"; return; }
    check "$name: round trip" "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1])))' "$t")" \
        "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1])))' "$TMP/back.json")"
}
same "ring_hash, STATIC" "$TMP/t.json"
same "ring_hash, EDS" "$TMP/t.json" --cluster-type EDS
has "... EDS: the cluster and its assignment apart" "$TMP/e.json" '"eds_cluster_config"'
has "... each node id its hash_key" "$TMP/e.json" '"hash_key": "10.0.0.2:6379"'
cat >"$TMP/m.json" <<'EOF'
{"scheme": "maglev", "hash": "xx_hash", "table_size": 65537, "use_hostname_for_hashing": true,
 "nodes": [{"id": "web-1.example", "addr": "10.0.1.1:80", "weight": 1},
           {"id": "web-2.example", "addr": "10.0.1.2:80", "weight": 3}]}
EOF
same "maglev by hostname, STATIC" "$TMP/m.json"
has "... the hostnames written" "$TMP/e.json" '"hostname": "web-2.example"'
same "maglev by hostname, EDS" "$TMP/m.json" --cluster-type EDS
"$RK" export --format envoy --file "$SRC/tests/cli/four.json" --envoy-cluster x >"$TMP/out" 2>"$TMP/err"
check "export of the ringkeeper scheme: refused" "2 0" "$? $(wc -c <"$TMP/out")"
has "... saying which are written" "$TMP/err" "envoy_ring_hash, grpc_ring_hash or maglev are written"
cp "$TMP/c.yaml" "$TMP/into.yaml"
"$RK" export --format envoy --file "$TMP/t.json" --into "$TMP/into.yaml" --envoy-cluster redis 2>"$TMP/err"
check "--into: refused" 2 $?
has "... saying why" "$TMP/err" "--into is not for --format envoy"
cmp -s "$TMP/c.yaml" "$TMP/into.yaml" && ok || bad "--into changed the file"

# every vector, written as Envoy configuration, imported, then looked up: the vector's picks
$PY - "$SRC/tests/vectors/envoy.json" "$TMP" <<'PY'
import json, os, sys
vec, tmp = json.load(open(sys.argv[1])), sys.argv[2]
for kind in ("envoy_ring_hash", "maglev"):
    for v in vec[kind]:
        les = []
        for e in v["endpoints"]:
            host, port = e["address"].rsplit(":", 1)
            le = {"endpoint": {"address": {"socket_address": {"address": host.strip("[]"), "port_value": int(port)}}},
                  "load_balancing_weight": e["weight"]}
            if e.get("hash_key"):
                le["metadata"] = {"filter_metadata": {"envoy.lb": {"hash_key": e["hash_key"]}}}
            if e.get("hostname"):
                le["endpoint"]["hostname"] = e["hostname"]
            les.append(le)
        c = {"name": v["name"], "lb_policy": "RING_HASH" if kind != "maglev" else "MAGLEV"}
        if kind == "maglev":
            c["maglev_lb_config"] = {"table_size": v["table_size"]}
        else:
            c["ring_hash_lb_config"] = {"minimum_ring_size": v["min_ring_size"], "maximum_ring_size": v["max_ring_size"],
                                        "hash_function": v["hash_function"]}
        if v.get("use_hostname_for_hashing"):
            c["common_lb_config"] = {"consistent_hashing_lb_config": {"use_hostname_for_hashing": True}}
        cla = {"@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
               "cluster_name": v["name"], "endpoints": [{"lb_endpoints": les}]}
        c["@type"] = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
        c["type"] = "EDS"
        with open(os.path.join(tmp, "v-" + v["name"] + ".json"), "w") as f:
            json.dump({"resources": [c, cla]}, f)
        with open(os.path.join(tmp, "v-" + v["name"] + ".picks"), "w") as f:
            for h, i in v["picks"]:
                f.write("%s\t%d\n" % (h, i))
PY
n=0
for f in "$TMP"/v-*.json; do
    name=$(basename "$f" .json)
    "$RK" import --envoy "$f" >"$TMP/vt.json" 2>/dev/null || { bad "$name: import: $("$RK" import --envoy "$f" 2>&1 >/dev/null)"; continue; }
    # node i of the vector is the i-th node: its id
    cut -f1 "$TMP/$name.picks" | "$RK" lookup --topology "$TMP/vt.json" >"$TMP/got" 2>/dev/null
    $PY -c '
import json, sys
ids = [n["id"] for n in json.load(open(sys.argv[1]))["nodes"]]
for line in open(sys.argv[2]):
    h, i = line.split()
    print("%s\t%s" % (h, ids[int(i)]))' "$TMP/vt.json" "$TMP/$name.picks" >"$TMP/want"
    if cmp -s "$TMP/want" "$TMP/got"; then ok; else bad "$name: picks differ: $(diff "$TMP/want" "$TMP/got" | head -3)"; fi
    n=$((n + 1))
done
[ "$n" -ge 10 ] && ok || bad "only $n vectors imported"

# refusals: exit 2, the field named, nothing on stdout
refuse() { # refuse NAME WANT-IN-MESSAGE SED-EXPRESSION-ON-c.yaml [import options]
    local name=$1 want=$2 expr=$3
    shift 3
    sed "$expr" "$TMP/c.yaml" >"$TMP/r.yaml"
    "$RK" import --envoy "$TMP/r.yaml" "$@" >"$TMP/out" 2>"$TMP/err"
    check "$name: exit, stdout" "2 0" "$? $(wc -c <"$TMP/out")"
    has "$name: says" "$TMP/err" "$want"
}
refuse "round robin" "lb_policy is ROUND_ROBIN (the default): no ring to read" '/^lb_policy/d'
refuse "least request" "lb_policy is LEAST_REQUEST" 's/^lb_policy: RING_HASH/lb_policy: LEAST_REQUEST/'
refuse "bounded load" "hash_balance_factor: bounded load" \
    's/^type: STRICT_DNS/common_lb_config: {consistent_hashing_lb_config: {hash_balance_factor: 150}}/'
refuse "locality weighting" "locality_weighted_lb_config" \
    's/^type: STRICT_DNS/common_lb_config: {locality_weighted_lb_config: {}}/'
refuse "typed policy" "load_balancing_policy: a typed policy is not read" \
    's/^type: STRICT_DNS/load_balancing_policy: {policies: []}/'
refuse "two priorities" "endpoints of priority 1: several priorities" 's/  - locality: {zone: b}/  - priority: 1/'
refuse "draining endpoint" "health_status DRAINING takes it out" 's/health_status: HEALTHY/health_status: DRAINING/'
refuse "weight past 1000" "load_balancing_weight is 1..1000" 's/{value: 2}/1001/'
refuse "weight 0" "load_balancing_weight is 1..1000" 's/{value: 2}/0/'
refuse "no port" "no endpoint.address.socket_address with an address and a port_value" 's/port_value: 6379}}}$/}}}/'
refuse "hash function" "hash_function CRC: XX_HASH or MURMUR_HASH_2" 's/maximum_ring_size: "8388608"}/maximum_ring_size: 9, hash_function: CRC}/'
refuse "ring size" "minimum_ring_size is not a whole number above 0" 's/minimum_ring_size: 2048/minimum_ring_size: -1/'
refuse "unknown cluster" "no cluster named web" 's/^#.*//' --envoy-cluster web
refuse "no assignment" "no load_assignment, and no ClusterLoadAssignment" '/^load_assignment:/,$d'
printf '{"resources": [{"name": "a", "lb_policy": "MAGLEV"}, {"name": "b", "lb_policy": "MAGLEV"}]}' >"$TMP/two.json"
"$RK" import --envoy "$TMP/two.json" >"$TMP/out" 2>"$TMP/err"
check "two clusters, none named: exit" 2 $?
has "... says to name one" "$TMP/err" "2 clusters: name one with --envoy-cluster"
printf 'a: [b\n' >"$TMP/bad.yaml"
"$RK" import --envoy "$TMP/bad.yaml" >"$TMP/out" 2>"$TMP/err"
check "neither JSON nor YAML: exit" 2 $?
has "... says so" "$TMP/err" "neither JSON nor YAML: line"
# a billion laughs: aliases counted, refused before they fill the memory
{ echo 'a: &a [x, x, x, x, x, x, x, x, x, x]'
  p=a; for i in b c d e f g h; do echo "$i: &$i [*$p, *$p, *$p, *$p, *$p, *$p, *$p, *$p, *$p, *$p]"; p=$i; done
} >"$TMP/laughs.yaml"
"$RK" import --envoy "$TMP/laughs.yaml" >"$TMP/out" 2>"$TMP/err"
check "aliases blown up: exit" 2 $?
has "... says so" "$TMP/err" "over 1000000 nodes (aliases counted)"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
