"""Integrations with Lightning and Captum. Names load lazily: ``import torchxplain`` never imports Lightning.

* :mod:`torchxplain.integrations.lightning` (needs the ``lightning`` extra, or ``pytorch_lightning``):
  ``ExplanationCallback``, ``ExplainModule``, ``ExplanationWriter``, ``MeanAbsAttribution``, ``plot_drift``,
  ``explain_module_class``.
* :mod:`torchxplain.integrations.batch`: ``explain_batch``, ``merge_shards`` (pure torch; Ray Data, torchrun).
* :mod:`torchxplain.integrations.captum`: ``expand_to_inputs``, ``background_averaged``.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ExplanationCallback": "lightning",
    "ExplainModule": "lightning",
    "ExplanationWriter": "lightning",
    "MeanAbsAttribution": "lightning",
    "plot_drift": "lightning",
    "explain_module_class": "lightning",
    "explain_batch": "batch",
    "merge_shards": "batch",
    "expand_to_inputs": "captum",
    "background_averaged": "captum",
    "BackgroundAveraged": "captum",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'torchxplain.integrations' has no attribute {name!r}")
    module = importlib.import_module(f"torchxplain.integrations.{_LAZY[name]}")
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
