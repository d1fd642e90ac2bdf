"""Module modes and Pyro parameter scoping used across the Bayesian last-layer code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyro
from torch import nn


@contextmanager
def train_mode(module: object, training: bool) -> Iterator[None]:
    """Put an ``nn.Module`` (and every submodule) in train/eval mode, restoring each one's mode afterwards.

    Anything that is not an ``nn.Module`` (a plain callable) is left alone.
    """
    modes = [(m, m.training) for m in module.modules()] if isinstance(module, nn.Module) else []
    for m, _ in modes:
        m.training = training
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


def local_params() -> Any:
    """Pyro's ``module_local_params=True`` context: parameters live on the module, not in the global store."""
    return pyro.settings.context(module_local_params=True)


def native_params(module: object) -> Any:
    """The ``module_local_params`` setting a (user's) Pyro module was built under; calls must use the same."""
    return pyro.settings.context(module_local_params=hasattr(getattr(module, "_pyro_context", None), "param_state"))
