#!/usr/bin/python3
"""check_layers.py — the layers of docs/ARCHITECTURE.md, checked on the include and call graphs.

Every file of server/ and client/ belongs to a layer by its folder; a file may include the headers of
its own layer and of the layers below, never above. Headers include one another without a circle.
A file calls only down too: it uses no function defined in a layer above, and no two files use each
other's functions, directly or around a longer circle (a call edge is rough: file A names a function
that file B defines, not static). The API's handlers (server/api/api_<resource>.c)
call only down: none includes another handler's header (api_<other>.h), nor names what one declares
or calls what another defines; only the route table (api.c) calls them.
Run by ctest (arch_layers); prints each breach with the files, the names and the layers.
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
# The handlers: api_<resource>.c of this folder, each with its header api_<resource>.h; api.c, the
# route table, is the one file that calls them.
HANDLERS = "server/api"
ROUTE_TABLE = "server/api/api.c"

COMMENTS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# A function's head at the start of a line: its return type and name, then "(".
HEAD = re.compile(r'^(static\s+)?(?:inline\s+)?[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\(', re.M)
IDENT = re.compile(r'[A-Za-z_]\w*')
# What a header declares: functions, typedef names, macros.
DECLARED = re.compile(r'\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?'
                      r'(?:RK_MUST_CHECK\s*)?;|\btypedef\b[^;]*?\b([A-Za-z_]\w*)\s*;|'
                      r'^#define\s+([A-Za-z_]\w*)', re.M | re.S)


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


def code_of(text):
    """The text without comments, and string and character literals emptied."""
    return COMMENTS.sub(lambda m: " " if m.group(0).startswith("/") else '""', text)


def functions(code):
    """(defined, exported): every function the file defines, and those that are not static."""
    defined, exported = set(), set()
    for m in HEAD.finditer(code):
        if code.startswith(("typedef", "extern", "#"), m.start()):
            continue
        i, depth = m.end(), 1
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        if not code[i:i + 200].lstrip().startswith("{"):
            continue  # a declaration, or a call at the start of a line
        defined.add(m.group(2))
        if not m.group(1):
            exported.add(m.group(2))
    return defined, exported


def is_handler(path):
    name = os.path.basename(path)
    return (os.path.dirname(path) == HANDLERS and name.startswith("api_") and name.endswith(".c"))


def main(root):
    files = sorted(sources(root))
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    code = {f: code_of(open(os.path.join(root, f), encoding="utf-8").read()) for f in files}
    breaches, edges = [], {}
    for f in files:
        layer, rank = layer_of(f)
        if layer is None:
            breaches.append(f"{f}: in no layer (move it into a layer's folder, or add its folder to LAYERS in tests/arch/check_layers.py)")
            continue
        text = open(os.path.join(root, f), encoding="utf-8").read()
        for header in re.findall(r'^#include "([^"]+)"', text, re.M):
            here = os.path.normpath(os.path.join(os.path.dirname(f), header))
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
    include_circles = circles(edges, lambda a, b: "")
    breaches += ["include circle: " + c for c in include_circles]
    calls = call_graph([f for f in files if f.endswith(".c")], code)
    breaches += calls_up(calls)
    call_circles = circles(calls, lambda a, b: " (" + ", ".join(sorted(calls[a][b])[:3]) + ")")
    breaches += ["call circle: " + c for c in call_circles]
    breaches += handlers(files, code, edges, calls)
    for b in breaches:
        print("FAIL:", b)
    print(f"{len(files)} files, {sum(len(v) for v in edges.values())} includes, "
          f"{sum(len(v) for v in calls.values())} call edges; "
          f"{len(include_circles)} include circles, {len(call_circles)} call circles; "
          f"{len(breaches)} breaches")
    return 1 if breaches else 0


def call_graph(files, code):
    """{file: {file it calls: the names}}: file A calls B when it names a function that B defines,
    not static, and A does not define one of that name itself."""
    owner, defined, idents = {}, {}, {}
    for f in files:
        defined[f], exported = functions(code[f])
        for name in exported:
            owner.setdefault(name, []).append(f)
        idents[f] = set(IDENT.findall(code[f]))
    calls = {}
    for f in files:
        for name in idents[f] - defined[f]:
            for g in owner.get(name, ()):
                calls.setdefault(f, {}).setdefault(g, set()).add(name)
    return calls


def calls_up(calls):
    found = []
    for f in sorted(calls):
        layer, rank = layer_of(f)
        for g in sorted(calls[f]):
            g_layer, g_rank = layer_of(g)
            if rank is not None and g_rank is not None and g_rank > rank:
                found.append(f"{f} ({layer}) calls {', '.join(sorted(calls[f][g]))} of {g} "
                             f"({g_layer}), a layer above it")
    return found


def handlers(files, code, includes, calls):
    """Breaches of "a handler calls only down": a handler file (or a helper of the API's folder)
    including a handler's header other than its own, naming what it declares, or calling a
    function another handler file defines."""
    found = []
    own = {}  # handler header -> its handler file
    for f in files:
        if is_handler(f) and f[:-2] + ".h" in files:
            own[f[:-2] + ".h"] = f
    declared = {}
    for h, c in own.items():
        names = set()
        for m in DECLARED.finditer(code[h]):
            names.update(n for n in m.groups() if n)
        declared[c] = names - {h.upper()}
    for f in files:
        if os.path.dirname(f) != HANDLERS or f == ROUTE_TABLE or not f.endswith(".c"):
            continue
        what = "handler" if is_handler(f) else "helper of the handlers"
        for h in sorted(includes.get(f, ())):
            if h in own and own[h] != f:
                found.append(f"{what} {f} includes {h}, another handler's header: move what they "
                             f"share down into a service (server/app/)")
        names = set(IDENT.findall(code[f]))
        for g in sorted(declared):
            used = sorted((names & declared[g]) | calls.get(f, {}).get(g, set()))
            if g != f and used:
                found.append(f"{what} {f} uses {', '.join(used)} of handler {g}: a handler calls "
                             f"only down (services, the store, the API's helpers); move what they "
                             f"share down into a service (server/app/)")
        for g in sorted(calls.get(f, {})):
            if is_handler(g) and g != f and g not in declared:
                found.append(f"{what} {f} calls {', '.join(sorted(calls[f][g]))} of handler {g}")
    return found


def circles(edges, label):
    """The circles of a graph, one a back edge of a depth-first search; label(a, b) says why a
    goes to b."""
    found, state = [], {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                ring = path[path.index(nxt):] + [nxt]
                found.append(ring[0] + "".join(label(a, b) + " -> " + b for a, b in zip(ring, ring[1:])))
            elif state.get(nxt) is None:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if state.get(node) is None:
            visit(node, [node])
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
