#!/usr/bin/python3
"""plot_hit_ratio.py — the hit ratio over time of run_cutover.sh's procedures, as one SVG.

usage: /usr/bin/python3 plot_hit_ratio.py DIR [DIR...] --out FILE.svg [--bin S] [--title TEXT]

Each DIR is a run_cutover.sh --out folder (its results.json and <procedure>.csv files): one panel
per DIR, stacked, with one line per procedure: hits / reads over bins of --bin seconds (default
0.5, five of rk_workload's 100 ms lines; a bin with no read is left out), a dashed line where the
change was made, and a dot on a procedure's line where its change ended (the window closed,
nutcracker restarted). Standard library only: the SVG is written by hand.
"""
import json
import math
import os
import sys
from xml.sax.saxutils import escape

COLOURS = {
    "baseline": "#b0b0b0",
    "naive": "#d62728",
    "window": "#ff7f0e",
    "window+mover": "#2ca02c",
    "nutcracker-naive": "#9467bd",
    "nutcracker-prewarm": "#1f77b4",
    "nutcracker-agent": "#8c564b",
    "rollout": "#17becf",
}
EXTRA = ["#8c564b", "#e377c2", "#17becf", "#bcbd22"]
# (stroke width, dash): lines that lie on each other at 100% stay told apart, the widest below
STYLES = {"baseline": (7, None), "window+mover": (4, None), "nutcracker-prewarm": (2, "6,3")}
WIDTH, PANEL_H = 960, 360
LEFT, RIGHT, TOP, BOTTOM = 78, 210, 56, 58


def parse_args(argv):
    dirs, out, binsize, title = [], None, 0.5, None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--out", "--bin", "--title"):
            if i + 1 >= len(argv):
                sys.exit(f"plot_hit_ratio.py: {a} wants a value")
            v = argv[i + 1]
            if a == "--out":
                out = v
            elif a == "--bin":
                binsize = float(v)
            else:
                title = v
            i += 2
        elif a.startswith("--"):
            sys.exit(f"plot_hit_ratio.py: unknown flag {a}")
        else:
            dirs.append(a)
            i += 1
    if not dirs or not out or binsize <= 0:
        sys.exit(__doc__)
    return dirs, out, binsize, title


def read_csv(path):
    rows = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            vals = line.strip().split(",")
            if len(vals) == len(head):
                rows.append({k: float(v) for k, v in zip(head, vals)})
    return rows


def binned(rows, binsize):
    """[(t of the bin's end, hit ratio)] over bins of binsize seconds."""
    acc = {}
    for r in rows:
        b = math.ceil(round(r["t"] / binsize, 6))
        h, n = acc.get(b, (0, 0))
        acc[b] = (h + r["hits"], n + r["reads"])
    return [(b * binsize, h / n) for b, (h, n) in sorted(acc.items()) if n > 0]


def nice_step(span, ticks):
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def panel(d, binsize, y0):
    res = json.load(open(os.path.join(d, "results.json")))
    series = []
    for k, p in enumerate(res["procedures"]):
        path = os.path.join(d, p["name"] + ".csv")
        if not os.path.exists(path):
            continue
        pts = binned(read_csv(path), binsize)
        ev = p.get("events", {})
        start = ev.get("start")
        end_ev = ev.get("closed") or ev.get("closed_forced") or ev.get("restarted")
        end_t = (end_ev - start) / 1000.0 if start and end_ev else None
        colour = COLOURS.get(p["name"], EXTRA[k % len(EXTRA)])
        series.append((p, pts, colour, end_t))
    seconds = res.get("seconds") or max((pts[-1][0] for _, pts, _, _ in series if pts), default=1)
    lo = min((y for _, pts, _, _ in series for _, y in pts), default=0.9)
    lo_pct = min(95, int(math.floor(lo * 100 - 0.5)))  # whole percent, at most 95
    pct_step = next(st for st in (1, 2, 5, 10, 20, 25) if (100 - lo_pct) / st <= 6)
    lo_pct = lo_pct // pct_step * pct_step
    ymin = lo_pct / 100.0
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = PANEL_H - TOP - BOTTOM

    def x(t):
        return LEFT + plot_w * t / seconds

    def y(v):
        return y0 + TOP + plot_h * (1 - (v - ymin) / (1 - ymin))

    out = []
    change = {"add": "from 10 to 11 nodes", "drain": "draining one of 10 nodes"}.get(
        res.get("change"), res.get("change", "?"))
    out.append(f'<text x="{LEFT}" y="{y0 + 30}" class="title">Hit ratio through a change '
               f'{escape(change)}: {escape(str(res.get("store")))}</text>')
    out.append(f'<text x="{LEFT}" y="{y0 + 47}" class="sub">{res.get("keys", 0):,} keys wl:0.., '
               f'Zipf 0.99, 90% reads, {res.get("rate", 0):g} ops/s; hits / reads per '
               f'{binsize:g} s</text>')
    # grid and axes
    out.append(f'<rect x="{LEFT}" y="{y0 + TOP}" width="{plot_w}" height="{plot_h}" '
               f'class="frame"/>')
    for pct in range(lo_pct, 101, pct_step):
        yy = y(pct / 100.0)
        out.append(f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + plot_w}" y2="{yy:.1f}" '
                   f'class="grid"/>')
        out.append(f'<text x="{LEFT - 8}" y="{yy + 4:.1f}" class="ytick">{pct}%</text>')
    xstep = nice_step(seconds, 8)
    t = 0.0
    while t <= seconds + 1e-9:
        xx = x(t)
        out.append(f'<line x1="{xx:.1f}" y1="{y0 + TOP}" x2="{xx:.1f}" y2="{y0 + TOP + plot_h}" '
                   f'class="grid"/>')
        out.append(f'<text x="{xx:.1f}" y="{y0 + TOP + plot_h + 18}" class="xtick">{t:g}</text>')
        t += xstep
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{y0 + PANEL_H - 14}" class="label">seconds '
               f'since the run started (after the fill)</text>')
    out.append(f'<text transform="translate({LEFT - 52},{y0 + TOP + plot_h / 2}) rotate(-90)" '
               f'class="label">hit ratio</text>')
    # the change
    change_t = next((p.get("change_at_s") for p, _, _, _ in series
                     if p["name"] != "baseline" and p.get("change_at_s") is not None), None)
    if change_t is not None:
        xx = x(change_t)
        out.append(f'<line x1="{xx:.1f}" y1="{y0 + TOP}" x2="{xx:.1f}" y2="{y0 + TOP + plot_h}" '
                   f'class="change"/>')
        out.append(f'<text x="{xx + 4:.1f}" y="{y0 + TOP + 14}" class="note">change</text>')
    # the lines, baseline first so that the others are drawn over it
    out.append(f'<clipPath id="clip{y0}"><rect x="{LEFT}" y="{y0 + TOP - 2}" width="{plot_w}" '
               f'height="{plot_h + 4}"/></clipPath>')
    order = sorted(series, key=lambda s_: -STYLES.get(s_[0]["name"], (2, None))[0])
    for p, pts, colour, end_t in order:
        if not pts:
            continue
        width, dash = STYLES.get(p["name"], (2, None))
        d_attr = " ".join(f"{x(tt):.1f},{y(vv):.1f}" for tt, vv in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{d_attr}" fill="none" stroke="{colour}" '
                   f'stroke-width="{width}"{dash_attr} stroke-linejoin="round" '
                   f'clip-path="url(#clip{y0})"/>')
        if end_t is not None:
            near = min(pts, key=lambda q: abs(q[0] - end_t))
            out.append(f'<circle cx="{x(end_t):.1f}" cy="{y(near[1]):.1f}" r="4" fill="{colour}" '
                       f'stroke="white" stroke-width="1"/>')
    # legend: name, then extra misses and stale reads
    lx, ly = LEFT + plot_w + 16, y0 + TOP + 6
    for i, (p, _, colour, _) in enumerate(series):
        yy = ly + i * 40
        width, dash = STYLES.get(p["name"], (2, None))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{lx}" y1="{yy + 6}" x2="{lx + 22}" y2="{yy + 6}" stroke="{colour}" '
                   f'stroke-width="{min(width, 5)}"{dash_attr}/>')
        out.append(f'<text x="{lx + 28}" y="{yy + 10}" class="legend">{escape(p["name"])}</text>')
        extra = p.get("extra_misses", p.get("misses", 0))
        out.append(f'<text x="{lx + 28}" y="{yy + 25}" class="legsub">{extra:,} extra misses, '
                   f'{p.get("stale_reads", 0):,} stale reads</text>')
    out.append(f'<text x="{lx}" y="{ly + len(series) * 40 + 10}" class="legsub">\u25cf the change '
               f'ended</text>')
    return out


def main():
    dirs, path, binsize, title = parse_args(sys.argv)
    parts = []
    extra_top = 30 if title else 0
    for i, d in enumerate(dirs):
        parts += panel(d, binsize, extra_top + i * PANEL_H)
    height = extra_top + PANEL_H * len(dirs)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
           "<style>"
           ".title{font-size:15px;font-weight:bold;fill:#222}"
           ".sub{font-size:12px;fill:#555}"
           ".frame{fill:#fcfcfc;stroke:#999;stroke-width:1}"
           ".grid{stroke:#e2e2e2;stroke-width:1}"
           ".ytick{font-size:11px;fill:#444;text-anchor:end}"
           ".xtick{font-size:11px;fill:#444;text-anchor:middle}"
           ".label{font-size:12px;fill:#333;text-anchor:middle}"
           ".change{stroke:#444;stroke-width:1;stroke-dasharray:5,4}"
           ".note{font-size:11px;fill:#444}"
           ".legend{font-size:12px;fill:#222}"
           ".legsub{font-size:10.5px;fill:#666}"
           "</style>",
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    if title:
        svg.append(f'<text x="{LEFT}" y="24" class="title">{escape(title)}</text>')
    svg += parts
    svg.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
