#!/usr/bin/env python3
"""check_svg.py PLAN.svg PLAN.json: checks a plan picture (rk_plan_to_svg) against its plan document.

Parses the SVG with xml.etree (so it must be well-formed) and checks: the title names moved and
minimal; each node's colour is the one its id gives (node_colour() of plan_svg.c, as the console's);
every ring and moving arc is in a node's colour,
each moving arc in the colour of a node that gains; the number of moving-arc elements is that of the
plan's arcs with touching arcs to one node merged, or, over the cap, bounded and said so; the whole
picture stays within its element budget. Exits 1 with the reasons on failure."""
import json
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
CAP = 1440        # arcs drawn exactly per circle (RKI_LAYER_MAX, client/core/internal.h)
MAX_BARS = 32     # nodes with bars (plan_svg.c MAX_BARS)
PALETTE = ["#cc6677", "#332288", "#ddcc77", "#117733", "#88ccee",
           "#882255", "#44aa99", "#999933", "#aa4499", "#ee7733"]
failures = []


def fail(msg):
    failures.append(msg)


def id_colour(node_id):
    """FNV-1a 32 of the id's UTF-8 bytes into the palette: a node's colour in every view."""
    h = 2166136261
    for b in node_id.encode("utf-8"):
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return PALETTE[h % len(PALETTE)]


def expected_moves(plan):
    """The plan's arcs with arcs that touch and go to one node merged, as plan_svg.c draws them."""
    count, last = 0, None
    for a in plan["arcs"]:
        first, end = int(a["first"], 16), int(a["last"], 16)
        if not (last and last[1] == a["to"] and last[0] + 1 == first):
            count += 1
        last = (end, a["to"])
    return count


def main(svg_path, json_path):
    text = open(svg_path, encoding="utf-8").read()
    plan = json.load(open(json_path, encoding="utf-8"))
    root = ET.fromstring(text)  # raises on a malformed document
    title = root.find(NS + "title").text
    for key in ("moved_fraction", "minimal_fraction"):
        want = "%.4f%%" % (100 * plan[key])
        if want not in title:
            fail("title %r lacks %s %s" % (title, key, want))
    swatches = [e.get("fill") for e in root.iter(NS + "rect") if e.get("class") == "swatch"]
    ids = [e.text for e in root.iter(NS + "text") if e.get("class") == "id"]
    nodes = {n["id"]: n for n in plan["nodes"]}
    if len(ids) != min(len(nodes), MAX_BARS) or len(swatches) != len(ids):
        fail("%d ids and %d swatches for %d nodes" % (len(ids), len(swatches), len(nodes)))
    wrong = [(i, c) for i, c in zip(ids, swatches) if c != id_colour(i)]
    if wrong:
        fail("colours not derived from the ids: %s" % wrong[:5])
    colour = dict(zip(ids, swatches))
    for i in ids:
        if i not in nodes:
            fail("bar for unknown node %r" % i)
    arcs = {cls: [e for e in root.iter() if e.get("class") == cls] for cls in ("before", "after", "move")}
    binned = {cls: re.search(r"<!-- %s: (\d+) arcs, over the cap" % cls, text) for cls in arcs}
    for cls, elems in arcs.items():
        if len(elems) > CAP:
            fail("%s: %d elements, over the cap %d" % (cls, len(elems), CAP))
    if len(nodes) <= MAX_BARS:  # every node has a colour to compare with
        gainers = {colour[n["id"]] for n in plan["nodes"] if n["gained"] > 0}
        known = set(swatches)
        for cls in ("before", "after"):
            if not arcs[cls] or any(e.get("stroke") not in known for e in arcs[cls]):
                fail("%s: an arc in no node's colour" % cls)
        if any(e.get("stroke") not in gainers for e in arcs["move"]):
            fail("a moving arc is not in the colour of a node that gains")
    if "arcs" in plan:
        want = expected_moves(plan)
        got = len(arcs["move"])
        if want <= CAP and got != want:
            fail("moving arcs: want %d elements, got %d" % (want, got))
        if want > CAP and not (binned["move"] and 0 < got <= CAP):
            fail("moving arcs: %d over the cap should be binned, got %d elements" % (want, got))
    if sum(1 for _ in root.iter()) > 3 * CAP + 4 * MAX_BARS + 20:
        fail("the picture has %d elements" % sum(1 for _ in root.iter()))
    for f in failures:
        print("FAIL %s: %s" % (svg_path, f))
    if not failures:
        print("ok %s: %d before, %d moving, %d after arcs; %d nodes with bars%s" % (
            svg_path, len(arcs["before"]), len(arcs["move"]), len(arcs["after"]), len(ids),
            "; binned: " + ",".join(c for c in binned if binned[c]) if any(binned.values()) else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
