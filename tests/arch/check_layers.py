#!/usr/bin/python3
"""check_layers.py — the layers of docs/ARCHITECTURE.md, checked on the include graph.

Every file of server/ and client/ belongs to a layer by its folder; a file may include the headers of
its own layer and of the layers below, never above. Headers include one another without a circle.
Run by ctest (arch_layers); prints each breach with the file, the header and both layers.
usage: check_layers.py SOURCE_DIR
"""
import os
import re
import sys

# (layer, rank, folder): the folder is the layer, subfolders included; higher ranks sit above.
LAYERS = [
    ("daemon", 10, "server/cmd"),
    ("http", 9, "server/http"),
    ("api", 8, "server/api"),
    ("app", 7, "server/app"),
    ("store", 6, "server/store"),
    ("ops", 5, "server/ops"),
    ("cli", 7, "client/cli"),
    ("mover", 6, "client/mover"),
    ("client", 5, "client/lib"),
    ("core", 4, "client/core"),
    ("core", 4, "client/include"),
]
# What may not meet at all, whatever the ranks: the library never sees the server, nor the CLI
# the daemon's code (it speaks HTTP to it); one store backend never sees another's.
APART = [("client/", "server/"), ("server/", "client/cli/"), ("server/", "client/mover/"),
         ("server/store/sqlite/", "server/store/etcd/"), ("server/store/etcd/", "server/store/sqlite/")]


def layer_of(path):
    folder = os.path.dirname(path)
    for layer, rank, where in LAYERS:
        if folder == where or folder.startswith(where + "/"):
            return layer, rank
    return None, None


def sources(root):
    for top in ("server", "client"):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("python", "go", "ui")]
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(folder, f), root)


def main(root):
    files = sorted(sources(root))
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    breaches, edges = [], {}
    for f in files:
        layer, rank = layer_of(f)
        if layer is None:
            breaches.append(f"{f}: in no layer (move it into a layer's folder, or add its folder to LAYERS in tests/arch/check_layers.py)")
            continue
        text = open(os.path.join(root, f), encoding="utf-8").read()
        for header in re.findall(r'^#include "([^"]+)"', text, re.M):
            here = os.path.join(os.path.dirname(f), header)
            target = here if here in files else (by_name.get(os.path.basename(header)) or [None])[0]
            if target is None:
                continue  # generated (ui_files.c) or outside the tree
            edges.setdefault(f, set()).add(target)
            t_layer, t_rank = layer_of(target)
            for a, b in APART:
                if f.startswith(a) and target.startswith(b):
                    breaches.append(f"{f} ({layer}) includes {target}: {a} never includes {b}")
            if t_rank is not None and t_rank > rank and not (f.startswith("client/") != target.startswith("client/")):
                breaches.append(f"{f} ({layer}) includes {target} ({t_layer}), a layer above it")
    breaches += circles(edges)
    for b in breaches:
        print("FAIL:", b)
    print(f"{len(files)} files, {sum(len(v) for v in edges.values())} includes, {len(breaches)} breaches")
    return 1 if breaches else 0


def circles(edges):
    """Header include circles, by depth-first search."""
    found, state = [], {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append("include circle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            elif state.get(nxt) is None:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if state.get(node) is None:
            visit(node, [node])
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
