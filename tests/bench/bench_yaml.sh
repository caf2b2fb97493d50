#!/usr/bin/env bash
# bench_yaml.sh — what `ringkeeper import --nutcracker` costs on hostile and on the largest inputs
# (docs/RELIABILITY.md, "YAML"): the goal is any 64 MiB file in at most 2 s. Writes each input to a
# temporary folder, then times one import of each with /usr/bin/time (seconds, peak RSS) and
# prints a table. Measure a Release build.
# usage: bench_yaml.sh RINGKEEPER
set -euo pipefail
rk=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp" <<'PY'
import sys
d = sys.argv[1]
def pool(n):
    return ("cache:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n  distribution: ketama\n  servers:\n"
            + "".join("   - 10.%d.%d.%d:11211:1\n" % (i >> 16, (i >> 8) & 255, i & 255) for i in range(n)))
files = {
    "nested 100k deep (200 KB)": "a: " + "[" * 100000 + "]" * 100000 + "\n",
    "100k anchors (2 MB)": "p:\n" + "".join("  a%d: &x%d v\n" % (i, i) for i in range(100000)),
    "a 10000-server pool (220 KB)": pool(10000),
    "2M servers (64 MiB)": pool(2700000)[: 64 << 20],
    "one 64 MiB scalar": 'a: "' + "x" * ((64 << 20) - 10) + '"\n',
    "5M flat keys (64 MiB)": "".join("k%d: v\n" % i for i in range(7000000))[: 64 << 20],
}
for i, (name, text) in enumerate(files.items()):
    with open("%s/%d.yml" % (d, i), "w") as f:
        f.write(text)
    with open("%s/%d.name" % (d, i), "w") as f:
        f.write(name)
PY
printf '%-32s %8s %10s  %s\n' input seconds "peak RSS" outcome
for f in "$tmp"/*.yml; do
    n=${f%.yml}
    /usr/bin/time -f '%e %M' -o "$n.time" "$rk" import --nutcracker "$f" >/dev/null 2>"$n.err" || true
    read -r secs kb < <(tail -1 "$n.time")
    printf '%-32s %8s %7s MB  %s\n' "$(cat "$n.name")" "$secs" "$((kb / 1024))" \
        "$(grep -o 'nested over [0-9]* levels\|over [0-9]* anchors\|over [0-9]* values\|points\|no pool "[a-z]*"' "$n.err" | head -1 || echo ok)"
done
