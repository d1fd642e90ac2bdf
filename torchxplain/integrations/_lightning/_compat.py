"""Lightning import compatibility: ``lightning.pytorch`` (the ``lightning`` package) and ``pytorch_lightning``.

Both packages ship the same Trainer under two import names (``lightning`` even depends on ``pytorch-lightning``),
and each Trainer checks ``isinstance`` against its own package's classes. So:

* the callbacks (:class:`ExplanationCallback`, :class:`ExplanationWriter`) inherit from the ``Callback`` /
  ``BasePredictionWriter`` of *every* installed package, and either Trainer accepts them;
* a ``LightningModule`` can belong to one package only (the Trainer compares its hooks with its own base
  class), so :func:`~torchxplain.integrations._lightning.explain_module_class` builds one per package;
  ``ExplainModule`` is the one on :data:`DEFAULT`.

A ``pytorch_lightning``-only install works the same way, with ``pytorch_lightning`` as the default.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Literal, get_args

PackageName = Literal["lightning.pytorch", "pytorch_lightning"]
PACKAGE_NAMES: tuple[PackageName, ...] = get_args(PackageName)


def _try_import(name: str) -> ModuleType | None:
    """The package, or ``None`` when it is not installed (any other import failure propagates)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and (name == err.name or name.startswith(err.name + ".")):
            return None
        raise


PACKAGES: dict[PackageName, ModuleType] = {
    name: module for name in PACKAGE_NAMES if (module := _try_import(name)) is not None
}
if not PACKAGES:
    raise ImportError(
        "torchxplain.integrations' Lightning tools need Lightning: pip install 'torchxplain[lightning]' "
        "(or `pip install pytorch-lightning`)"
    )
DEFAULT: PackageName = next(iter(PACKAGES))


def package(name: str | None = None) -> ModuleType:
    """The installed Lightning package called ``name`` (``None``: :data:`DEFAULT`).

    Raises:
        ValueError: ``name`` is neither ``"lightning.pytorch"`` nor ``"pytorch_lightning"``.
        ImportError: that package is not installed.
    """
    if name is None:
        return PACKAGES[DEFAULT]
    if name not in PACKAGE_NAMES:
        raise ValueError(f"package must be one of {list(PACKAGE_NAMES)}, got {str(name)[:60]!r}")
    if name not in PACKAGES:
        raise ImportError(f"{name} is not installed (installed: {list(PACKAGES)}); pip install it or pick another")
    return PACKAGES[name]


def _union(attribute: str) -> type:
    """One class deriving from ``attribute`` (a dotted path) of every installed package, in package order."""
    bases = []
    for module in PACKAGES.values():
        value: Any = module
        for part in attribute.split("."):
            value = getattr(value, part)
        bases.append(value)
    name = attribute.rpartition(".")[2]
    return type(name, tuple(bases), {"__module__": __name__, "__doc__": f"``{attribute}`` of {list(PACKAGES)}."})


# Module attributes, so that pickling (``strategy="ddp_spawn"``) finds them by name.
Callback: Any = _union("Callback")
BasePredictionWriter: Any = _union("callbacks.BasePredictionWriter")
