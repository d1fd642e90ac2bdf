"""Captum's ``additional_forward_args`` on a fitted black box: bound into every query of the fit, then checked.

A black-box explainer fits one spectrum to ``x -> model(x, *additional_forward_args)``: the arguments are the same
for every query (a per-example tensor would make each row a different function, which one spectrum cannot hold).
:func:`bind` makes that function for the fit; :func:`same_args` tells whether a later call passes the arguments the
spectrum was fitted with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor


def as_args(args: Any) -> tuple[Any, ...] | None:
    """Captum's formatting: ``None`` stays ``None``, a tuple is kept, anything else becomes a 1-tuple."""
    if args is None:
        return None
    return args if isinstance(args, tuple) else (args,)


def bind(model: Callable[..., Tensor], args: tuple[Any, ...] | None) -> Callable[[Tensor], Tensor]:
    """``x -> model(x, *args)`` (``model`` itself without arguments)."""
    if args is None:
        return model

    def with_args(x: Tensor) -> Tensor:
        return model(x, *args)

    return with_args


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return (
            isinstance(a, Tensor)
            and isinstance(b, Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and torch.equal(a.detach().cpu(), b.detach().cpu())
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError, RuntimeError):
        return False


def same_args(given: tuple[Any, ...], fitted: tuple[Any, ...]) -> bool:
    """Whether ``given`` are the arguments the spectrum was fitted with (the same objects, or equal values)."""
    return len(given) == len(fitted) and all(_same(a, b) for a, b in zip(given, fitted))


def model_output(
    model: Callable[..., Tensor],
    x: Tensor,
    args: tuple[Any, ...] | None,
    target: int | None,
    device: torch.device,
    dtype: torch.dtype,
    batch: int | None,
) -> Tensor:
    """``(Q,)`` the model's ``target`` output at binary rows ``x`` (queried as the fit queried it), float64.

    Args:
        model: the user's black box; ``args``: its additional forward arguments.
        x: ``(Q, n)`` rows; ``device``, ``dtype``: where and in which dtype the model takes them.
        target: its output column (``None``: its only output).
        batch: rows per call (``None``: all at once).
    """
    call = bind(model, args)
    parts = []
    step = batch or max(1, x.shape[0])
    with torch.no_grad():
        for start in range(0, x.shape[0], step):
            out = call(x[start : start + step].to(device=device, dtype=dtype))
            if not isinstance(out, Tensor):
                raise TypeError(f"the model must return a torch.Tensor, got {type(out).__name__}")
            parts.append((out[:, target or 0] if out.ndim == 2 else out).to(device=x.device, dtype=torch.float64))
    return torch.cat(parts) if parts else x.new_zeros(0, dtype=torch.float64)


class _Opaque:
    """An argument that cannot be compared by value (e.g. a DataFrame): equal to nothing, so never reused."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def snapshot(value: Any) -> Any:
    """A copy of a call's arguments that later calls can be compared with by value (:func:`same_snapshot`):
    tensors and arrays are copied (an in-place change of the user's tensor must not match), containers
    recursively, scalars and strings kept, anything else made opaque (never equal)."""
    if isinstance(value, Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return tuple(snapshot(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype)):
        return value
    return _Opaque()


def same_snapshot(old: Any, new: Any) -> bool:
    """Whether two :func:`snapshot` values are equal (tensors and arrays by shape, dtype and value)."""
    if isinstance(old, tuple) and isinstance(new, tuple):
        return len(old) == len(new) and all(same_snapshot(a, b) for a, b in zip(old, new))
    if isinstance(old, _Opaque) or isinstance(new, _Opaque):
        return False
    if isinstance(old, (Tensor, np.ndarray)) or isinstance(new, (Tensor, np.ndarray)):
        return _same(old, new) and type(old) is type(new)
    return type(old) is type(new) and old == new
