#!/usr/bin/env bash
# make_corpus.sh — regenerates the seed corpora in tests/fuzz/corpus/<harness>/ from the fixtures,
# the golden vectors and the CLI's test files. Crash inputs (crash-*) found later are kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=tests/fuzz/corpus
for h in fuzz_topology fuzz_verify fuzz_plan fuzz_api; do
    mkdir -p "$out/$h"
    find "$out/$h" -name 'seed-*' -delete
done

# Topologies: every valid and invalid fixture, and the CLI's.
for f in tests/fixtures/*/*/topology.json; do
    case_dir=$(dirname "$f")
    cp "$f" "$out/fuzz_topology/seed-$(basename "$(dirname "$case_dir")")-$(basename "$case_dir").json"
done
for f in tests/cli/*.json tests/cli/lookups/*.json; do
    cp "$f" "$out/fuzz_topology/seed-cli-$(basename "$f")"
done
# Balancer topologies with a request_key: every variable and option the evaluators read.
t=$out/fuzz_topology/seed-request-key
printf '{"scheme":"nginx","hash":"crc32a","request_key":"k-$arg_id-${uri}$http_x_key$cookie_sid$http_cookie$http_x_forwarded_for$request_uri","nodes":[{"id":"127.0.0.1:1","addr":"a","weight":1}],"comment":"/a/./b/../%%41?id=1&ID=2"}' >"$t-nginx.json"
printf '{"scheme":"haproxy","hash":"sdbm_avalanche","request_key":"uri whole len 20 depth 3","nodes":[{"id":"1","addr":"a","weight":1}]}' >"$t-haproxy-uri.json"
printf '{"scheme":"haproxy","hash":"djb2","request_key":"hdr(X-Key)","nodes":[{"id":"1","addr":"a","weight":1}]}' >"$t-haproxy-hdr.json"
# Envoy's and gRPC's schemes (docs/ENVOY.md): every parameter, node order and weights that matter.
t=$out/fuzz_topology/seed-envoy
printf '{"scheme":"envoy_ring_hash","hash":"murmur_hash_2","minimum_ring_size":64,"maximum_ring_size":1024,"use_hostname_for_hashing":true,"nodes":[{"id":"cache-1.svc","addr":"10.0.0.1:80","weight":3},{"id":"10.0.0.2:80","addr":"10.0.0.2:80","weight":1},{"id":"c","addr":"c:1","weight":0}]}' >"$t-ring-hash.json"
printf '{"scheme":"grpc_ring_hash","hash":"xx_hash","minimum_ring_size":10000,"maximum_ring_size":20000,"ring_size_cap":4096,"nodes":[{"id":"[::1]:50051","addr":"[::1]:50051","weight":7},{"id":"node-2","addr":"10.0.0.2:50051","weight":2}]}' >"$t-grpc.json"
printf '{"scheme":"maglev","hash":"xx_hash","table_size":17,"use_hostname_for_hashing":false,"nodes":[{"id":"b","addr":"b:1","weight":2},{"id":"a","addr":"a:1","weight":5},{"id":"z","addr":"z:1","weight":0}]}' >"$t-maglev.json"

python3 - "$out" <<'PY'
import json, random, sys
out = sys.argv[1]
rings = json.load(open("tests/vectors/rings.json"))

def write(harness, name, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(f"{out}/{harness}/seed-{name}", mode) as f:
        f.write(data)

# Version documents: the golden rings as the server would send them, and ways to get them wrong.
for i, r in enumerate(rings):
    doc = {"cluster": "cache", "version": i + 1, "state": "active",
           "created_at": "2026-11-29T19:49:47Z", "activated_at": "2026-11-29T19:49:47Z",
           "author": "anonymous", "comment": None, **r["topology"],
           "points": r["points"], "fingerprint": r["fingerprint"]}
    write("fuzz_verify", f"{r['name']}.json", json.dumps(doc, indent=1))
    for field, value in [("fingerprint", "0" * 16), ("cluster", "other"), ("version", 0),
                         ("hash", "sha1"), ("fingerprint", "ABC")]:
        bad = dict(doc, **{field: value})
        write("fuzz_verify", f"{r['name']}-{field}-{value}.json", json.dumps(bad))
    write("fuzz_verify", f"{r['name']}-truncated.json", json.dumps(doc)[:-20])

# Plans: hash, vnodes, mask and weights of each topology, options, probes (see fuzz_plan.c).
rnd = random.Random(1)
for i in range(12):
    head = [i % 3, rnd.randrange(16), rnd.randrange(256)] + [rnd.randrange(4) for _ in range(8)]
    head += [rnd.randrange(16), rnd.randrange(256)] + [rnd.randrange(4) for _ in range(8)]
    head += [rnd.randrange(4), rnd.randrange(256)]
    write("fuzz_plan", f"{i:02d}", bytes(head + [rnd.randrange(256) for _ in range(64)]))

# Requests: method, path, query, headers (one line each), then the body (see fuzz_api.c).
topo = json.dumps(rings[0]["topology"])
topo2 = json.dumps(rings[1]["topology"])
requests = {
    "healthz": ("GET", "/healthz", "", "", ""),
    "readyz": ("GET", "/readyz", "", "", ""),
    "metrics": ("GET", "/metrics", "", "", ""),
    "clusters": ("GET", "/v1/clusters", "", "", ""),
    "publish": ("POST", "/v1/clusters/cache/versions", "", "Content-Type: application/json", topo),
    "publish-activate": ("POST", "/v1/clusters/cache/versions", "activate=true",
                         'If-Match: "v0"', topo2),
    "publish-bad": ("POST", "/v1/clusters/cache/versions", "", "", '{"hash":"x"}'),
    "list": ("GET", "/v1/clusters/cache/versions", "limit=2&before=5", "", ""),
    "version": ("GET", "/v1/clusters/cache/versions/1", "", "", ""),
    "activate": ("POST", "/v1/clusters/cache/versions/1/activate", "", 'If-Match: "v0"', ""),
    "revert": ("POST", "/v1/clusters/cache/versions/1/revert", "activate=true", "", ""),
    "ring": ("GET", "/v1/clusters/cache/ring", "wait=5", 'If-None-Match: "v1"', ""),
    "plan": ("GET", "/v1/clusters/cache/plan", "from=1&to=2&max_step=0.1&keys=1000&arcs=true",
             "Accept: text/plain", ""),
    "plan-text": ("GET", "/v1/clusters/cache/plan", "format=text", "", ""),
    "not-found": ("DELETE", "/v1/clusters/cache", "", "", ""),
}
for name, (method, path, query, headers, body) in requests.items():
    write("fuzz_api", name, f"{method}\n{path}\n{query}\n{headers}\n{body}")
PY
echo "make_corpus: $(find "$out" -type f | wc -l) files in $out"
# Configuration formats (fuzz_formats): the first byte picks the format in client/CMakeLists.txt's
# order (0 nutcracker, 1 nginx, 2 haproxy, 3 envoy); the rest is a file of it.
h=$out/fuzz_formats
mkdir -p "$h"
find "$h" -name 'seed-*' -delete
{ printf '\000'; cat tests/cli/nutcracker.yml; } >"$h/seed-nutcracker.yml"
{ printf '\001'; printf 'http {\n  upstream cache {\n    hash $request_uri consistent;\n    keepalive 16;\n    server 10.0.0.1:80 max_fails=3;\n    server 10.0.0.2:80 weight=2;\n  }\n}\n'; } >"$h/seed-nginx.conf"
{ printf '\002'; printf 'defaults\n    hash-type consistent\nbackend cache\n    balance uri whole\n    server c1 10.0.0.1:80 id 1 check\n    server c2 10.0.0.2:80 id 2 weight 2\n'; } >"$h/seed-haproxy.cfg"
for y in c two; do # the YAML files of the envoy format's CLI test
    { printf '\003'; sed -n "/^cat >\"\\\$TMP\/$y.yaml\" <<.EOF.\$/,/^EOF\$/p" tests/cli/test_envoy_format.sh | sed '1d;$d'; } >"$h/seed-envoy-$y.yaml"
done
