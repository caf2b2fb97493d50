#!/usr/bin/env bash
# test_agent_drain.sh — issue 57's drain behind proxies, short (counts, not timings): one of ten
# memcached drained behind a real nutcracker, naively (activate, export, restart) and by a
# 3-step rollout with `ringkeeper agent` driving nutcracker and the policy pre-warming each step
# (one worker following the cluster), under rk_workload's Zipf reads and writes
# (run_cutover.sh's nutcracker-naive and nutcracker-agent; the agent with --catch-up). The rollout
# must cost at most 0.1% of the reads after the change in extra misses where the naive restart
# costs the moving keys' cold reads, reach the target, and serve no stale read. Skips (77) without memcached, redis-server or nutcracker.
# usage: test_agent_drain.sh BUILD_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?usage: test_agent_drain.sh BUILD_DIR}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$HERE/run_cutover.sh" "$BUILD" --store memcached --keys 20000 --seconds 20 --rate 2000 \
    --change drain --change-at 2 --procedures nutcracker-naive,nutcracker-agent --rollout-steps 3 \
    --out "$OUT" >"$OUT/run.out" 2>&1
rc=$?
cat "$OUT/run.out"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "FAIL: run_cutover.sh exited $rc"; tail -20 "$OUT"/nutcracker-agent.agent.log "$OUT"/nutcracker-agent.mover.log 2>/dev/null; exit 1; }

/usr/bin/python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
res = {p["name"]: p for p in json.load(open(os.path.join(out, "results.json")))["procedures"]}
failed = passed = 0

def check(what, ok, got):
    global failed, passed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}: {got}")

for name in ("nutcracker-naive", "nutcracker-agent"):
    check(f"{name} ran", name in res, sorted(res))
if failed:
    sys.exit(1)
n, a = res["nutcracker-naive"], res["nutcracker-agent"]
for p in (n, a):
    check(f"{p['name']}: reads", p["reads"] > 1000, p["reads"])
    check(f"{p['name']}: no corrupt value", p["corrupt"] == 0, p["corrupt"])
exp = n.get("expected_cold_reads", 0)
check("naive restart: about the cold reads of the moving keys",
      exp > 20 and 0.5 * exp <= n["extra_misses"] <= 1.5 * exp,
      f"{n['extra_misses']} extra misses, {exp:.0f} expected")
check("agent rollout: extra misses <= 0.1% of the reads after the change",
      a["reads_after"] > 0 and a["extra_misses"] <= 0.001 * a["reads_after"],
      f"{a['extra_misses']} of {a['reads_after']}")
check("agent rollout: done", a["closed_by"] == "rollout done", a["closed_by"])
# the agent stops nutcracker, catches each moving key up on its new owner, then starts it: a
# write through the old pool after the pre-warm is never read stale from the new owner
check("agent rollout: no stale read", a["stale_reads"] == 0 and a["stale_keys"] == 0,
      (a["stale_reads"], a["stale_keys"]))
agent_log = open(os.path.join(out, "nutcracker-agent.agent.log")).read()
check("agent rollout: each step caught up with nutcracker stopped (and v1 at the start)",
      agent_log.count("caught up in") == 4, agent_log[-800:])
check("agent rollout: every step pre-warmed by the follower",
      open(os.path.join(out, "nutcracker-agent.mover.log")).read().count("started job") == 3,
      open(os.path.join(out, "nutcracker-agent.mover.log")).read()[-600:])
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
