"""Import cycles of Ember's packages, function-local and ``TYPE_CHECKING`` imports included (issue 31, item 3).

A cycle hidden behind a function-local import (``def f(): from ..record import X``) or an
``if TYPE_CHECKING:`` block still ties the modules together: neither can be understood, moved or tested without
the other. This script builds the import graph with grimp (the library under import-linter; it reads the sources
and imports nothing), finds its strongly connected components (each one cycle, possibly over many modules), and
says which imports close each: the edges inside a component, by kind (module level, function-local,
``TYPE_CHECKING``).

    python tools/import_cycles.py                    # report every cycle, exit 1 if one is not in ALLOWED
    python tools/import_cycles.py --count            # one line: cycles, modules in them, closing imports
    python tools/import_cycles.py --package-inits    # also the packages' __init__ that an import runs

``--package-inits`` adds the imports Python makes implicitly: ``import a.b.c`` from outside ``a.b`` first runs
``a/b/__init__.py``, so a module importing ``ember.autodiff._gradients`` depends on everything
``ember/autodiff/__init__.py`` imports. A cycle through a package's ``__init__`` works only in one import order.

Run from the repository root with the packages importable (``source`` the environment, or ``nox -s lint``, which
runs it after ``lint-imports``).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGES = ("ember", "ember_numpy", "ember_torch", "ember_jax", "ember_train", "ember_import")

#: cycles still accepted, with the reason; any other cycle fails (none is accepted today: keep it so). A key is one
#: or more space-separated module prefixes: a cycle is allowed when each of its modules is under one of them.
ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    kind: str  # "module", "local" (inside a function) or "type-checking"

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} (line {self.line}, {self.kind})"


def _graph(package_inits: bool = False):  # -> grimp.ImportGraph
    import grimp

    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    if package_inits:
        for importer in list(graph.modules):
            for imported in list(graph.find_modules_directly_imported_by(importer)):
                parts = imported.split(".")
                for i in range(1, len(parts)):
                    package = ".".join(parts[:i])
                    inside = importer == package or importer.startswith(package + ".")
                    if not inside and package in graph.modules:
                        graph.add_import(importer=importer, imported=package)
    return graph


@cache
def _kinds(path: str) -> dict[int, str]:
    """Line number -> kind of every import statement of a source file."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    out: dict[int, str] = {}

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            k = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and kind == "module":
                k = "local"
            elif isinstance(child, ast.If) and _is_type_checking(child.test) and kind == "module":
                for stmt in child.body:
                    visit_stmt(stmt, "type-checking")
                for stmt in child.orelse:
                    visit_stmt(stmt, kind)
                continue
            visit_stmt(child, k)

    def visit_stmt(node: ast.AST, kind: str) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                out[line] = kind
        visit(node, kind if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "local")

    visit(tree, "module")
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_file(module: str) -> str:
    spec_mod = sys.modules.get(module.split(".")[0])
    if spec_mod is None:
        import importlib.util

        spec = importlib.util.find_spec(module.split(".")[0])
        assert spec is not None and spec.submodule_search_locations, module
        root = Path(list(spec.submodule_search_locations)[0])
    else:
        root = Path(spec_mod.__path__[0])
    parts = module.split(".")[1:]
    base = root.joinpath(*parts)
    return str(base / "__init__.py") if (base / "__init__.py").is_file() else str(base.with_suffix(".py"))


def _edges(graph, inside: set[str]) -> Iterable[Edge]:
    for importer in sorted(inside):
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & inside):
            kinds = _kinds(_module_file(importer))
            details = graph.get_import_details(importer=importer, imported=imported)
            for d in details:
                yield Edge(importer, imported, d["line_number"], kinds.get(d["line_number"], "module"))
            if not details:  # added by --package-inits
                yield Edge(importer, imported, 0, "package-init")


def _components(graph) -> list[set[str]]:
    """Tarjan's strongly connected components with more than one module (iterative: the graph is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []
    succ = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on.add(node)
            for j in range(i, len(succ[node])):
                nxt = succ[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.add(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(comp)
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return found


def cycles(package_inits: bool = False) -> list[tuple[set[str], list[Edge]]]:
    """Each cycle: its modules and the imports between them."""
    graph = _graph(package_inits)
    return [(comp, list(_edges(graph, comp))) for comp in _components(graph)]


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", action="store_true", help="print one summary line")
    parser.add_argument("--package-inits", action="store_true", help="add the imports of packages' __init__")
    args = parser.parse_args(argv)
    found = cycles(args.package_inits)
    modules = sum(len(c) for c, _ in found)
    hidden = sum(1 for _, edges in found for e in edges if e.kind in ("local", "type-checking"))
    if args.count:
        print(f"{len(found)} cycles over {modules} modules; {hidden} function-local or TYPE_CHECKING imports in them")
        return 0
    bad = 0
    for comp, edges in sorted(found, key=lambda ce: sorted(ce[0])):
        reason = next(
            (r for key, r in ALLOWED.items() if all(any(_under(m, p) for p in key.split()) for m in comp)), None
        )
        bad += reason is None
        print(f"cycle over {len(comp)} modules{f' (allowed: {reason})' if reason else ''}:")
        for e in edges:
            print(f"    {e}")
    print(f"{len(found)} cycles over {modules} modules; {hidden} function-local or TYPE_CHECKING imports in them")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
