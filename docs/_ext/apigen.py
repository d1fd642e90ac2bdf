"""Sphinx extension: the API reference, generated from the package's public ``__all__`` lists.

Every module of ``torchxplain`` whose dotted path has no private part (``_core``, ``_api`` …) and that defines
``__all__`` is a public module; every name in its ``__all__`` gets a page of its own under ``api/`` (a class, a
function, an exception, a constant) or links to its module's page (a subpackage such as ``torchxplain.fourier``).
A name added to an ``__all__`` therefore appears in the reference without editing the docs. The pages are written
when the builder starts (only files whose text changed are rewritten, so incremental builds stay incremental), and
the command line's ``--help`` texts are written beside them for the CLI guide.

Cross-references in docstrings that name an object by a private path (``torchxplain.idx._io.ChainApproximationWarning``)
or by a type annotation's private path resolve to the page of the same object under its public name; a reference to
an object that has no public page stays unresolved, and the build (``nitpicky``, warnings as errors) fails on it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.addnodes import desc_signature, pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.nodes import make_refnode

PACKAGE = "torchxplain"
API_DIR = "api"  # relative to the source directory; generated, not committed


@dataclass(frozen=True)
class Entry:
    """One name of one public ``__all__``: where it is listed and what it is."""

    module: str  # the public module whose __all__ lists it
    name: str
    kind: str  # "module", "class", "exception", "function", "data"
    canonical: str  # the dotted path of the page that documents the object ("module.name" of its first listing)

    @property
    def path(self) -> str:
        return f"{self.module}.{self.name}"


def is_public(dotted: str) -> bool:
    return not any(part.startswith("_") for part in dotted.split("."))


def public_modules() -> list[str]:
    """The package and each public submodule that defines ``__all__``, the package first."""
    package = importlib.import_module(PACKAGE)
    found = [PACKAGE]
    for info in pkgutil.walk_packages(package.__path__, PACKAGE + "."):
        if is_public(info.name):
            found.append(info.name)
    return [name for name in found if hasattr(importlib.import_module(name), "__all__")]


def kind_of(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isroutine(obj):
        return "function"
    return "data"


def public_entries() -> list[Entry]:
    """Every (module, name) of every public ``__all__``, in the order pages are listed; an object listed twice is
    documented at its first listing and the second page points there."""
    entries: list[Entry] = []
    first: dict[int, str] = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            kind = kind_of(obj)
            path = f"{module_name}.{name}"
            if kind == "module":
                canonical = obj.__name__
            elif kind == "data":
                canonical = path  # constants (ints, tuples) are not identified by id
            else:
                canonical = first.setdefault(id(obj), path)
            entries.append(Entry(module_name, name, kind, canonical))
    return entries


def external_bases(cls: type) -> list[str]:
    """Names of the classes outside the package in ``cls``'s MRO: their members are not documented on its page."""
    return sorted({base.__name__ for base in cls.__mro__[1:] if not base.__module__.startswith(PACKAGE)})


def has_own_bases(cls: type) -> bool:
    return any(base.__module__.startswith(PACKAGE) for base in cls.__mro__[1:])


def attribute_doc(obj: Any, name: str) -> str | None:
    """The ``#:`` comment or docstring that documents ``name`` where it is defined, looked up in every loaded module
    of the package that binds the same object (constants are re-exported by ``from … import``)."""
    for module_name, module in sorted(sys.modules.items()):
        if not module_name.startswith(PACKAGE) or getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        except Exception:  # a module without source (none in the package today)
            continue
        if ("", name) in docs:
            return "\n".join(docs[("", name)]).strip()
    return None


def title(text: str) -> str:
    return f"{text}\n{'=' * len(text)}\n"


def object_page(entry: Entry, obj: Any) -> str:
    head = title(entry.path) + f"\n.. currentmodule:: {entry.module}\n\n"
    if entry.canonical != entry.path:
        return head + f"``{entry.path}`` is :py:obj:`{entry.canonical}`, documented on its own page.\n"
    if entry.kind in ("class", "exception"):
        lines = [f".. auto{entry.kind}:: {entry.name}", "   :members:", "   :show-inheritance:"]
        if has_own_bases(obj):
            lines.append(f"   :inherited-members: {', '.join(external_bases(obj))}")
        return head + "\n".join(lines) + "\n"
    if entry.kind == "function":
        return head + f".. autofunction:: {entry.name}\n"
    if attribute_doc(obj, entry.name) is None:
        raise RuntimeError(
            f"{entry.path} is a public constant without documentation: add a '#:' comment above its definition"
        )
    return head + f".. autodata:: {entry.name}\n   :no-value:\n"  # its text: constant_docstring below


def module_page(module_name: str, entries: list[Entry]) -> str:
    """The module's docstring, a table of its names (linking to their pages) and the toctree of those pages."""
    own = [e for e in entries if e.module == module_name]
    lines = [
        title(module_name),
        f".. automodule:: {module_name}",
        "   :no-members:",
        "",
        f".. currentmodule:: {module_name}",
        "",
    ]
    lines += [".. autosummary::", "   :nosignatures:", ""]
    lines += [f"   {e.name}" for e in own]
    pages = [e.path for e in own if e.kind != "module"]
    if pages:
        lines += ["", ".. toctree::", "   :hidden:", ""] + [f"   {path}" for path in pages]
    return "\n".join(lines) + "\n"


def index_page(modules: list[str]) -> str:
    lines = [
        title("API reference"),
        "One page per public name: every name in the ``__all__`` of ``torchxplain`` and of each public subpackage.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    return "\n".join(lines + [f"   {name}" for name in modules]) + "\n"


def cli_help() -> str:
    """``torchxplain --help`` and each subcommand's ``--help``, as one literal block per command."""
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    blocks = []
    for args in ([], ["demo"], ["run"], ["bench"]):
        command = [sys.executable, "-m", PACKAGE, *args, "--help"]
        out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
        shown = " ".join(["torchxplain", *args, "--help"])
        blocks.append(
            f"``{shown}``:\n\n.. code-block:: text\n\n" + "".join(f"   {line}\n" for line in out.splitlines())
        )
    return "\n".join(blocks)


def write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def generate(app: Sphinx) -> None:
    root = Path(app.srcdir) / API_DIR
    entries = public_entries()
    modules = list(dict.fromkeys(e.module for e in entries))
    wanted = {root / "index.rst": index_page(modules)}
    for module_name in modules:
        wanted[root / f"{module_name}.rst"] = module_page(module_name, entries)
    for entry in entries:
        if entry.kind != "module":
            obj = getattr(importlib.import_module(entry.module), entry.name)
            wanted[root / f"{entry.path}.rst"] = object_page(entry, obj)
    wanted[root / "cli_help.inc"] = cli_help()
    for stale in set(root.glob("*")) - set(wanted):
        stale.unlink()  # a name that left an __all__
    for path, text in wanted.items():
        write_if_changed(path, text)


def public_name(target: str) -> str | None:
    """The documented public path of the object that ``target`` (a dotted path, possibly private) names."""
    if not target.startswith(PACKAGE + "."):
        return None
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest importable module prefix, then attributes
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        break
    else:
        return None
    return PUBLIC_BY_ID.get(id(getattr(obj, "__func__", obj)))  # a classmethod's bound method: its function


PUBLIC_BY_ID: dict[int, str] = {}


def index_public_objects(app: Sphinx) -> None:
    """id(object) -> its documented path, for every public class, function and module (and their methods)."""
    for entry in public_entries():
        obj = getattr(importlib.import_module(entry.module), entry.name)
        if entry.kind == "data":
            continue
        PUBLIC_BY_ID.setdefault(id(obj), entry.canonical)
        if entry.kind in ("class", "exception") and entry.canonical == entry.path:
            own = [base for base in obj.__mro__ if base.__module__.startswith(PACKAGE)]
            for base in own:  # its own and inherited members, documented on its page
                for attr, member in vars(base).items():
                    if not attr.startswith("_"):
                        PUBLIC_BY_ID.setdefault(id(getattr(member, "__func__", member)), f"{entry.path}.{attr}")


def resolve_private(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element) -> Any:
    """A reference by a private path to an object that is documented under its public name links there."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~")
    candidates = [target]
    if not target.startswith(PACKAGE):
        # a short name means what it names where the docstring is written: in its class, then in its module
        written = re.search(r"docstring of ([\w.]+)", node.source or "")
        if written is not None:
            parts = written.group(1).split(".")
            candidates += [".".join(parts[:cut] + [target]) for cut in range(len(parts) - 1, 1, -1)]
    domain = env.get_domain("py")
    for candidate in candidates:
        parts = candidate.split(".")
        for cut in range(len(parts), 1, -1):  # the object itself, else an attribute documented on its public owner
            public = public_name(".".join(parts[:cut]))
            if public is None:
                continue
            full = ".".join([public, *parts[cut:]])
            found = domain.objects.get(full)  # type: ignore[attr-defined]
            if found is not None:
                return make_refnode(app.builder, node["refdoc"], found.docname, found.node_id, contnode, full)
    return None


def public_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    """A class's "Bases:" line names public classes only: a private base of the package is replaced by its own
    bases (``FourierShap(FourierExplainerCore)`` shows Captum's ``PerturbationAttribution`` and ``nn.Module``)."""
    shown: list[Any] = []
    pending: list[Any] = list(bases)
    while pending:
        base = pending.pop(0)
        cls = typing.get_origin(base) or base  # _Setting[V] -> _Setting
        if getattr(cls, "__module__", "").startswith(PACKAGE) and id(cls) not in PUBLIC_BY_ID:
            pending[:0] = [b for b in getattr(cls, "__bases__", ()) if b not in (object, typing.Generic)]
        elif base not in shown:
            shown.append(base)
    bases[:] = shown


def in_annotation(node: nodes.Element) -> bool:
    """Whether ``node`` is part of a type annotation: in a signature, or in the "Type" field that an attribute's
    annotation becomes."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, desc_signature):
            return True
        if isinstance(parent, nodes.field) and parent[0].astext() in ("Type", "Return type"):
            return True
        parent = parent.parent
    return False


def private_annotation(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element) -> Any:
    """A type annotation that names a private class of the package (a return type such as a value plan, a
    ``TypeVar``, a dataclass field's type) is shown as text: it has no page to link to. Docstrings' own roles get no
    such pass."""
    target = node.get("reftarget", "")
    if node.get("refdomain") == "py" and not is_public(target) and target.startswith(PACKAGE) and in_annotation(node):
        return contnode
    return None


def constant_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A public constant (a tuple, a string) is documented by the ``#:`` comment at its definition, not by the
    docstring of its type ("Built-in immutable sequence."), on its page and in its module's summary table."""
    if what != "data" or not name.startswith(PACKAGE + ".") or inspect.isclass(obj) or inspect.isroutine(obj):
        return
    doc = attribute_doc(obj, name.rpartition(".")[2])
    if doc is not None:
        lines[:] = doc.splitlines()
    elif "\n".join(lines).strip() == (inspect.getdoc(type(obj)) or "").strip():
        lines[:] = []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    app.connect("builder-inited", index_public_objects)
    app.connect("missing-reference", resolve_private)
    app.connect("missing-reference", private_annotation)
    app.connect("autodoc-process-bases", public_bases)
    app.connect("autodoc-process-docstring", constant_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
