#!/usr/bin/env bash
# test_cutover.sh — the short run of issue 23's measurement (run_cutover.sh) as a test: 20,000 keys,
# memcached, a change from 10 to 11 nodes made 2 s into a 12 s run at 2000 ops/s, under baseline,
# naive, window+mover and rollout (in 2 steps). It asserts counts, never timings:
#   baseline      no miss, no stale read, no error: every key was filled and stays
#   naive         the storm: extra misses over 0.5x..1.5x of the cold reads expected from the keys
#                 that move (each misses at its first read after the change; cutover_report.py),
#                 no dual read, no stale read
#   window+mover  extra misses <= 0.1% of the reads from the change on, 0 stale reads, 0 errors,
#                 every moving key copied, and the window closed by the mover (its verify takes the
#                 workload's writes on the new owners for what they are: the fleet held v2)
#   rollout       the same in two approved steps driven by ringkeeperd, a worker run per step:
#                 extra misses <= 0.1%, 0 stale reads, 0 errors, done (its last window closed)
# Skips (77) when memcached, redis-server or python3 is not installed (servers.sh).
# usage: test_cutover.sh BUILD_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?usage: test_cutover.sh BUILD_DIR}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$HERE/run_cutover.sh" "$BUILD" --store memcached --keys 20000 --seconds 12 --rate 2000 \
    --change-at 2 --procedures baseline,naive,window+mover,rollout --rollout-steps 2 \
    --out "$OUT" >"$OUT/run.out" 2>&1
rc=$?
cat "$OUT/run.out"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "FAIL: run_cutover.sh exited $rc"; exit 1; }

/usr/bin/python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
res = {p["name"]: p for p in json.load(open(os.path.join(out, "results.json")))["procedures"]}
failed = 0
passed = 0

def check(what, ok, got):
    global failed, passed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}: {got}")

for name in ("baseline", "naive", "window+mover", "rollout"):
    check(f"{name} ran", name in res, sorted(res))
if failed:
    sys.exit(1)
b, n, w, r = res["baseline"], res["naive"], res["window+mover"], res["rollout"]
for p in (b, n, w, r):
    check(f"{p['name']}: reads", p["reads"] > 1000, p["reads"])
    check(f"{p['name']}: no error, no corrupt value", p["errors"] + p["corrupt"] == 0,
          (p["errors"], p["corrupt"]))
    check(f"{p['name']}: no stale read", p["stale_reads"] == 0, p["stale_reads"])
check("baseline: no miss (every key filled, nothing evicted)", b["misses"] == 0, b["misses"])
exp = n.get("expected_cold_reads", 0)
check("naive: the storm, about the cold reads of the moving keys",
      exp > 50 and 0.5 * exp <= n["extra_misses"] <= 1.5 * exp,
      f"{n['extra_misses']} extra misses, {exp:.0f} expected")
check("naive: no dual read", n["dual_reads"] == 0, n["dual_reads"])
check("window+mover: extra misses <= 0.1% of the reads during the change",
      w["reads_after"] > 0 and w["extra_misses"] <= 0.001 * w["reads_after"],
      f"{w['extra_misses']} of {w['reads_after']}")
check("window+mover: the mover copied the moving keys",
      (w.get("job") or {}).get("counters", {}).get("copied", 0) +
      (w.get("job") or {}).get("counters", {}).get("present", 0) >= w.get("moving_keys", 1),
      w.get("job"))
check("window+mover: closed by the mover", w["closed_by"] == "mover", w["closed_by"])
check("rollout: extra misses <= 0.1% of the reads during the change",
      r["reads_after"] > 0 and r["extra_misses"] <= 0.001 * r["reads_after"],
      f"{r['extra_misses']} of {r['reads_after']}")
check("rollout: done, its last window closed by the mover", r["closed_by"] == "mover",
      r["closed_by"])
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
