"""Print the import graph of the ``jaxprox`` package and any import circle in it.

    python scripts/import_graph.py [--all] [--graph] [--root DIR]

Every ``import`` / ``from ... import`` statement of every module under ``jaxprox/`` is read with
:mod:`ast` (relative imports resolved; ``from . import x`` counts as an import of the submodule
``x`` where one exists). By default only the statements at module level count (what runs on
``import``); ``--all`` adds the imports inside functions, which run later but are still a
dependency. ``--graph`` prints every module's imports. Exits 1 when a circle is found.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
PACKAGE = "jaxprox"


def modules(root: str = ROOT) -> dict[str, str]:
    """``{dotted name: path}`` of every module of the package (a package is its ``__init__``)."""
    out = {}
    for base, dirs, files in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(base, f), root)[:-3].split(os.sep)
                name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
                out[name] = os.path.join(base, f)
    return out


def imports(name: str, path: str, known: set[str], everywhere: bool) -> set[str]:
    """The package's modules that ``name`` imports."""
    tree = ast.parse(open(path).read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    nodes = ast.walk(tree) if everywhere else tree.body
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # ``import jaxprox.x.y`` names the module jaxprox.x.y
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="count imports inside functions too")
    parser.add_argument("--graph", action="store_true", help="print every module's imports")
    parser.add_argument("--root", default=ROOT, help="the checkout to read (default: this one)")
    args = parser.parse_args()
    mods = modules(args.root)
    graph = {m: imports(m, p, set(mods), args.all) for m, p in mods.items()}
    if args.graph:
        for m in sorted(graph):
            print(f"{m} -> {', '.join(sorted(graph[m])) or '-'}")
    found = cycles(graph)
    scope = "all imports" if args.all else "module-level imports"
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} edges ({scope}): "
          + (f"{len(found)} circle(s)" if found else "no import circle"))
    for comp in found:
        print("  circle among: " + ", ".join(comp))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
