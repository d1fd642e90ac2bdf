"""The package's layout rules (issue 12): small modules, ``_core`` at the bottom, no import cycles.

The import graph is read from the source with :mod:`ast` (every ``import``/``from ... import`` of a
``torchxplain`` module, at any depth in the file, lazy imports included), so the check needs no imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2] / "torchxplain"
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The module a dotted import name refers to (``a.b.c`` may name ``a.b``'s attribute ``c``)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def import_graph() -> nx.DiGraph:
    """Directed graph: module -> each torchxplain module it imports (a package means its ``__init__``)."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                if not target.startswith("torchxplain"):
                    continue
                resolved = _resolve(target, modules)
                if resolved and resolved != name:
                    graph.add_edge(name, resolved)
                    # importing a.b.c first runs a.b's __init__ unless the importer is inside a.b already
                    parent = resolved.rpartition(".")[0]
                    while parent and parent != name and not name.startswith(parent + "."):
                        graph.add_edge(name, parent)
                        parent = parent.rpartition(".")[0]
    return graph


def test_no_module_is_over_400_lines():
    long = {name: n for name, p in _modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_core_imports_nothing_above_it():
    graph = import_graph()
    upward = [
        (a, b) for a, b in graph.edges if a.startswith("torchxplain._core") and not b.startswith("torchxplain._core")
    ]
    assert not upward, f"_core must not import its siblings: {upward}"


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, f"import cycles: {sorted(cycles, key=len)[:10]}"
