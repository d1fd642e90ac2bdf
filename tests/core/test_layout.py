"""The package's layout rules: one concept per module, ``_core`` at the bottom, no import cycles,
internals underscored, and every public object at one public path.

The import graph is read from the source with :mod:`ast` (every ``import``/``from ... import`` of a
``torchxplain`` module, at any depth in the file, lazy imports included), so the graph checks need no imports.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2] / "torchxplain"
SANITY_LINES = 800  # one concept per module; a module this long has more than one
FACADE = (
    "FourierShap",
    "FourierSpectrum",
    "SparseFourierSurrogate",
    "fit_sparse_fourier",
    "tree_spectrum",
    "Goals",
    "explain_after_fit",
    "AfterFitResult",
)
"""The headline names at the top of the package; their only public path is ``torchxplain.<name>``."""
CONCEPT_PACKAGES = ("fourier",)  # packages arranged by concept: every module below them is private


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


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


ENTRY_POINTS = ("torchxplain.cli",)  # the console script's module (setup.cfg): public by path, no names to export


def public_namespaces() -> list[str]:
    """Every module whose dotted path has no private part and that declares ``__all__``."""
    return [name for name, path in _modules().items() if not _is_private(name) and "__all__" in path.read_text()]


def test_no_module_is_unreasonably_long():
    long = {name: n for name, p in _modules().items() if (n := len(p.read_text().splitlines())) > SANITY_LINES}
    assert not long, f"modules over {SANITY_LINES} lines (split them by concept): {long}"


def test_core_imports_nothing_above_it():
    graph = import_graph()
    upward = [
        (a, b) for a, b in graph.edges if a.startswith("torchxplain._core") and not b.startswith("torchxplain._core")
    ]
    assert not upward, f"_core must not import its siblings: {upward}"


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, f"import cycles: {sorted(cycles, key=len)[:10]}"


def test_fourier_does_not_import_goals_or_idx():
    graph = import_graph()
    wrong = [
        (a, b)
        for a, b in graph.edges
        if a.startswith("torchxplain.fourier") and b.startswith(("torchxplain.goals", "torchxplain.idx"))
    ]
    assert not wrong, f"fourier/ must not depend on goals/ or idx/: {wrong}"


def test_concept_packages_keep_their_modules_private():
    """Below ``torchxplain.fourier`` every module is private (``_name.py``) and every subpackage ``__init__``
    declares no public names: the family's public names live in ``torchxplain.fourier`` (and the facade)."""
    public = []
    for name, path in _modules().items():
        for package in CONCEPT_PACKAGES:
            prefix = f"torchxplain.{package}."
            if name.startswith(prefix) and not _is_private(name):
                is_package = path.name == "__init__.py"
                if not is_package or "__all__" in path.read_text():
                    public.append(name)
    assert not public, f"public modules (or subpackages exporting names) inside a concept package: {public}"


def test_every_public_object_has_one_public_path():
    homes: dict[int, list[str]] = {}
    for module_name in public_namespaces():
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if isinstance(obj, type(importlib)) or isinstance(obj, (str, int, float, tuple)):
                continue  # submodules and constants
            homes.setdefault(id(obj), []).append(f"{module_name}.{attr}")
    duplicated = sorted(paths for paths in homes.values() if len(paths) > 1)
    assert not duplicated, f"objects exported at several public paths: {duplicated}"


def test_facade_names_live_at_the_top_only():
    import torchxplain

    assert set(FACADE) <= set(torchxplain.__all__)
    for namespace in public_namespaces():
        if namespace != "torchxplain":
            assert not set(FACADE) & set(importlib.import_module(namespace).__all__), namespace


def _is_interface(name: str, path: Path) -> bool:
    """A subpackage ``__init__`` of a concept package that documents its private modules and imports, from them
    only, the names its siblings use (its one interface to them)."""
    if path.name != "__init__.py" or not any(name.startswith(f"torchxplain.{p}.") for p in CONCEPT_PACKAGES):
        return False
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            if not (node.module or "").startswith(f"{name}."):
                return False
        elif not isinstance(node, ast.Expr):
            return False
    return True


def test_internals_are_underscored():
    """A module without a private part in its path is public: it declares its public names (``__all__``), or it
    is a package ``__init__`` that only documents its private modules (or, in a concept package, imports from
    them its interface to its siblings), or the console script's entry point."""
    unmarked = []
    for name, path in _modules().items():
        if _is_private(name) or name in ENTRY_POINTS:
            continue
        text = path.read_text()
        if "__all__" in text:
            continue
        is_doc_only = path.name == "__init__.py" and all(isinstance(node, ast.Expr) for node in ast.parse(text).body)
        if not (is_doc_only or _is_interface(name, path)):
            unmarked.append(name)
    assert not unmarked, f"modules that are neither private (_name) nor declare __all__: {unmarked}"


PRIVATE_ALLOWED: dict[str, str] = {}
"""Imports of another subpackage's private module allowed by name (importer -> imported), with the reason."""


def _subpackage(name: str) -> str | None:
    """``torchxplain.fourier.<sub>`` of a module below the concept package (``None`` for others)."""
    parts = name.split(".")
    return ".".join(parts[:3]) if len(parts) > 3 and parts[1] in CONCEPT_PACKAGES else None


def test_no_module_imports_a_private_module_of_another_subpackage():
    """Siblings meet at each subpackage's ``__init__`` (its interface), never at its private modules; outside
    the concept package too (``integrations`` uses ``FourierShap`` and the sources, not fit internals). The
    family's own public namespace (``torchxplain.fourier``) and the facade gather the public names."""
    gatherers = {"torchxplain", *(f"torchxplain.{p}" for p in CONCEPT_PACKAGES)}
    wrong = []
    for a, b in import_graph().edges:
        home = _subpackage(b)
        if a in gatherers or home is None or a.startswith(home + ".") or a == home or b == home:
            continue
        if _is_private(b.removeprefix(home)) and PRIVATE_ALLOWED.get(a) != b:
            wrong.append((a, b))
    assert not wrong, f"imports of another subpackage's private modules: {sorted(wrong)}"


def _compares_to_auto(path: Path, names: tuple[str, ...], strings: bool) -> list[int]:
    """Lines where a variable called one of ``names`` is compared with ``"auto"`` (or, with ``strings``, tested for
    being a string)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = any(isinstance(o, ast.Name) and o.id in names for o in operands)
            if named and any(isinstance(o, ast.Constant) and o.value == "auto" for o in operands):
                lines.append(node.lineno)
        if strings and isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name) and first.id in names and ast.unparse(node.args[1]) == "str":
                lines.append(node.lineno)
    return lines


def test_only_the_router_decides_routes_and_players():
    """``method="auto"`` is decided in ``sources/_route.py`` alone and ``groups="auto"`` resolved in
    ``sources/_problem.py`` alone (for ``FourierShap`` and ``explain_after_fit`` alike, which goes through it)."""
    home = {"method": "torchxplain.fourier.sources._route", "groups": "torchxplain.fourier.sources._problem"}
    found = []
    for name, path in _modules().items():
        if not name.startswith("torchxplain.fourier"):
            continue
        for variable, owner in home.items():
            if name != owner and (lines := _compares_to_auto(path, (variable,), strings=variable == "groups")):
                found.append((name, variable, lines))
    assert not found, f"route decisions outside the router: {found}"
    after_fit = import_graph().successors("torchxplain.integrations._after_fit")
    assert not [m for m in after_fit if m.startswith("torchxplain.fourier.fit")], "explain_after_fit decides no route"


def test_public_names_resolve_and_are_documented():
    undocumented = []
    for module_name in public_namespaces():
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)  # AttributeError: __all__ names something the module lacks
            if type(obj).__module__ == "typing" or isinstance(obj, type(importlib)):
                continue  # type aliases and submodules
            if callable(obj) and not (obj.__doc__ or "").strip():
                undocumented.append(f"{module_name}.{attr}")
    assert not undocumented, f"public callables without a docstring: {undocumented}"
