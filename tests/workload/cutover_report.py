#!/usr/bin/python3
"""cutover_report.py — run_cutover.sh's table: what each procedure of one change cost.

usage: cutover_report.py DIR [--store S] [--change C] [--keys N] [--seconds S] [--rate R]
                         [--procedures LIST] [--zipf S]

Reads, for each procedure P in DIR: P.csv (rk_workload's lines per 100 ms), P.json (its totals),
P.events ("name unix_ms" lines: start, change, converged, cutover, restarted, mover_done, closed),
P.moved (the plan's moved fraction of the hash space) and P.owners (key, owner in v1, owner in v2).
Prints the table and writes DIR/results.json (what plot_hit_ratio.py and test_cutover.sh read).

- extra misses: the procedure's misses less the baseline's (same keys, seed, rate and length), or
  its own misses when there is no baseline run; % of reads: of the reads from the change to the end
  of the run ("during the change": a change's misses come after it, and last as long as keys that
  moved are read for the first time).
- expected cold reads: for a change with no copy and no dual read, each moving key misses once, at
  its first read after the change unless a write came first: 0.9 * sum over moving keys k of
  (1 - (1 - p_k)^ops), p_k its Zipf probability and ops the operations after the change.
Standard library only.
"""
import json
import os
import sys


def parse_args(argv):
    args = {"dir": None, "store": "?", "change": "?", "keys": 0, "seconds": 0, "rate": 0,
            "procedures": None, "zipf": 0.99, "reads": 0.9}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if i + 1 >= len(argv):
                sys.exit(f"cutover_report.py: {a} wants a value")
            key = a[2:]
            if key not in args:
                sys.exit(f"cutover_report.py: unknown flag {a}")
            args[key] = argv[i + 1]
            i += 2
        else:
            args["dir"] = a
            i += 1
    if not args["dir"]:
        sys.exit(__doc__)
    return args


def read_events(path):
    ev = {}
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2:
                ev.setdefault(parts[0], int(parts[1]))
    return ev


def read_csv(path):
    rows = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            vals = line.strip().split(",")
            if len(vals) == len(head):
                rows.append({k: float(v) for k, v in zip(head, vals)})
    return rows


def zipf_probs(n, s):
    w = [(i + 1) ** -s for i in range(n)]
    total = sum(w)
    return [x / total for x in w]


def moving_keys(path):
    """Indexes of the keys whose owner changes, from lines "wl:<i> <old> <new>"."""
    out = []
    if not os.path.exists(path):
        return None
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 3 and parts[1] != parts[2]:
            out.append(int(parts[0].split(":", 1)[1]))
    return out


def analyse(d, name, args, probs):
    base = os.path.join(d, name)
    if not os.path.exists(base + ".json") or not os.path.exists(base + ".csv"):
        return None
    try:
        tot = json.load(open(base + ".json"))
    except ValueError:
        return None
    rows = read_csv(base + ".csv")
    ev = read_events(base + ".events")
    change = ev.get("change")
    after = [r for r in rows if change is not None and r["unix_ms"] > change]
    reads_after = sum(r["reads"] for r in after)
    ops_after = sum(r["reads"] + r["writes"] for r in after)
    res = dict(tot)
    res.update(name=name, reads_after=int(reads_after),
               misses_after=int(sum(r["misses"] for r in after)), events=ev,
               worst_p99_us=int(max((r["p99_us"] for r in after), default=0)))
    if os.path.exists(base + ".load"):
        res["loadavg"] = [line.split()[0] for line in open(base + ".load") if line.strip()]
    if change is not None and "start" in ev:
        res["change_at_s"] = (change - ev["start"]) / 1000.0
    if os.path.exists(base + ".moved"):
        try:
            res["moved_fraction"] = float(open(base + ".moved").read().strip())
        except ValueError:
            pass
    moving = moving_keys(base + ".owners")
    if moving is not None:
        res["moving_keys"] = len(moving)
        res["moving_read_share"] = sum(probs[i] for i in moving if i < len(probs))
        if ops_after:
            res["expected_cold_reads"] = float(args["reads"]) * sum(
                1 - (1 - probs[i]) ** ops_after for i in moving if i < len(probs))
    # how long the change lasted, and who ended it
    end = ev.get("closed") or ev.get("restarted")
    if change is not None and end:
        res["change_s"] = (end - change) / 1000.0
    job = None
    if os.path.exists(base + ".job.json"):
        try:
            job = json.load(open(base + ".job.json"))
        except ValueError:
            job = None
    if job:
        verify = job.get("verify") or {}
        reasons = {}
        for m in job.get("mismatch_keys") or []:
            reasons[m.get("reason")] = reasons.get(m.get("reason"), 0) + 1
        res["job"] = {"state": job.get("state"), "mode": job.get("mode"),
                      "counters": job.get("counters"), "mismatches": verify.get("mismatches"),
                      "verify_counters": verify.get("counters"), "listed_reasons": reasons}
    peak = peak_rate(base + ".mover.json")
    if peak is not None:
        res["peak_keys_per_s"] = peak
    if name in ("window+mover", "rollout"):
        if "closed" in ev:
            res["closed_by"] = "mover"
        elif "closed_forced" in ev:
            mism = res.get("job", {}).get("mismatches")
            res["closed_by"] = f"force: job {res.get('job', {}).get('state')}, {mism} mismatches"
        else:
            res["closed_by"] = "open"
        end = ev.get("closed") or ev.get("closed_forced")
        if change is not None and end:
            res["change_s"] = (end - change) / 1000.0
    elif name == "window":
        res["closed_by"] = "finish by hand" if "closed" in ev else "open"
    elif name == "nutcracker-prewarm" and res.get("job"):
        res["closed_by"] = f"(pre-warm {res['job']['state']})"
    elif name == "nutcracker-agent":
        res["closed_by"] = "rollout done" if "closed" in ev else "rollout not done"
        if change is not None and "closed" in ev:
            res["change_s"] = (ev["closed"] - change) / 1000.0
    else:
        res["closed_by"] = "-"
    stale_rows = [r for r in rows if r["stale_reads"] > 0]
    cut = ev.get("restarted") or ev.get("change")
    if stale_rows and "start" in ev and cut:
        cut_t = (cut - ev["start"]) / 1000.0
        res["stale_from_s"] = round(stale_rows[0]["t"] - 0.1 - cut_t, 1)  # after the cutover
        res["stale_to_s"] = round(stale_rows[-1]["t"] - cut_t, 1)
    if "mover_done" in ev and ev.get("restarted"):
        res["catchup_to_cutover_s"] = (ev["restarted"] - ev["mover_done"]) / 1000.0
    if "mover_done" in ev and change is not None:
        res["mover_s"] = (ev["mover_done"] - change) / 1000.0
    return res


def peak_rate(path):
    """The highest keys_per_s of the mover's JSON lines (its copy rate between reports), or None."""
    if not os.path.exists(path):
        return None
    peak = None
    for line in open(path):
        try:
            v = json.loads(line).get("keys_per_s")
        except (ValueError, AttributeError):
            continue
        if isinstance(v, (int, float)):
            peak = v if peak is None else max(peak, v)
    return peak


def fmt_int(v):
    return f"{int(v):,}"


def main():
    args = parse_args(sys.argv)
    d = args["dir"]
    procs = (args["procedures"] or "baseline,naive,window,window+mover,nutcracker-naive,"
             "nutcracker-prewarm").split(",")
    keys = int(args["keys"] or 0)
    probs = zipf_probs(keys, float(args["zipf"])) if keys else []
    results = [r for r in (analyse(d, p, args, probs) for p in procs) if r]
    baseline = next((r for r in results if r["name"] == "baseline"), None)
    for r in results:
        base_misses = baseline["misses"] if baseline else 0
        r["extra_misses"] = r["misses"] - base_misses
        r["extra_pct"] = 100.0 * r["extra_misses"] / r["reads_after"] if r["reads_after"] else 0.0
    doc = {"store": args["store"], "change": args["change"], "keys": keys,
           "seconds": float(args["seconds"] or 0), "rate": float(args["rate"] or 0),
           "procedures": results}
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")

    what = "10 -> 11 nodes" if args["change"] == "add" else "n9 of 10 nodes drained"
    print(f"store {args['store']}, change {args['change']} ({what}), {keys:,} keys, "
          f"{args['seconds']} s at {args['rate']} ops/s; load average (1 min) at each "
          f"procedure's start and end: " + ", ".join(
              f"{r['name']} {'/'.join(r.get('loadavg', []))}" for r in results))
    groups = {}  # procedures on the same two rings: the ringkeeper scheme's, the ketama pool's
    for r in results:
        if "moving_keys" in r:
            key = (r["name"].startswith("nutcracker"), r["moving_keys"], r.get("moved_fraction"))
            groups.setdefault(key, []).append(r)
    for (ketama, _, _), rs in groups.items():
        naive = next((r for r in rs if r["name"] in ("naive", "nutcracker-naive")), rs[0])
        r = rs[0]
        print(f"  {'ketama (fnv1a_64)' if ketama else 'ringkeeper scheme (xxh3_64, vnode_factor 160)'}"
              f" [{', '.join(x['name'] for x in rs)}]: {r.get('moved_fraction', 0) * 100:.2f}% of "
              f"the hash space moves, {r['moving_keys']:,} keys, {r['moving_read_share'] * 100:.2f}% "
              f"of the reads (Zipf); expected cold reads of a change with no copy and no dual read: "
              f"{naive.get('expected_cold_reads', 0):,.0f} (over {naive['name']}'s operations)")
    cols = ["procedure", "reads", "after change", "misses", "extra misses", "% of reads",
            "stale", "dual reads", "db loads", "errors", "p99 us", "worst 100 ms p99", "change s",
            "peak moved/s", "window closed by"]
    table = []
    for r in results:
        table.append([r["name"], fmt_int(r["reads"]), fmt_int(r["reads_after"]),
                      fmt_int(r["misses"]), fmt_int(r["extra_misses"]), f"{r['extra_pct']:.3f}%",
                      fmt_int(r["stale_reads"]) + (f" ({fmt_int(r['stale_keys'])} key{'' if r['stale_keys'] == 1 else 's'})"
                                                   if r.get("stale_reads") and "stale_keys" in r
                                                   else ""),
                      fmt_int(r["dual_reads"]), fmt_int(r["db_loads"]),
                      fmt_int(r["errors"] + r["corrupt"]), fmt_int(r["p99_us"]),
                      fmt_int(r["worst_p99_us"]),
                      f"{r['change_s']:.1f}" if "change_s" in r else "-",
                      fmt_int(r["peak_keys_per_s"]) if "peak_keys_per_s" in r else "-",
                      r["closed_by"]])
    widths = [max(len(c), *(len(row[i]) for row in table)) if table else len(c)
              for i, c in enumerate(cols)]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in table:
        print("| " + " | ".join(v.ljust(w) if i == 0 or i == len(row) - 1 else v.rjust(w)
                                for i, (v, w) in enumerate(zip(row, widths))) + " |")
    for r in results:
        if "stale_from_s" in r:
            print(f"  {r['name']}: stale reads from {r['stale_from_s']:.1f} s to "
                  f"{r['stale_to_s']:.1f} s after the cutover"
                  + (f"; the catch-up ended {r['catchup_to_cutover_s']:.1f} s before nutcracker "
                     f"restarted" if "catchup_to_cutover_s" in r else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
