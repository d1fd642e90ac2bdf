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


PER_ROW = (
    "a black box's spectrum explains one function x -> model(x, *additional_forward_args) for every row (the fit "
    "queries it on batches of hybrid rows), so a per-example tensor (Captum's convention) cannot be bound to it: pass "
    "arguments shared by every row (e.g. a (1, ...) tensor the model broadcasts), or explain one row per explainer "
    "with its own arguments"
)


def _leading(arg: Any) -> int | None:
    """The first dimension of a tensor or array argument (``None`` for scalars and other objects)."""
    shape = getattr(arg, "shape", None) if isinstance(arg, (Tensor, np.ndarray)) else None
    return int(shape[0]) if shape is not None and len(shape) >= 1 else None


def _row_count(table: Any) -> int:
    """Rows of a user's table (tensor, array, DataFrame or list; 0 for ``None`` or anything else)."""
    shape = getattr(table, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(table) if isinstance(table, (list, tuple)) else 0


def refuse_per_row(args: tuple[Any, ...] | None, tables: dict[str, Any]) -> None:
    """Refuse, before any query, a tensor argument with one entry per row of a table given with it (``tables``:
    e.g. ``{"background": ..., "data": ...}``, as the user passed them): Captum's per-example arguments, which one
    spectrum cannot hold."""
    rows = {name: _row_count(table) for name, table in tables.items()}
    for i, arg in enumerate(args or ()):
        size = _leading(arg)
        for name, count in rows.items():
            if size is not None and size == count > 1:
                raise ValueError(
                    f"additional_forward_args[{i}] has shape {tuple(arg.shape)}: one entry per {name} row; {PER_ROW}"
                )


def bind(model: Callable[..., Tensor], args: tuple[Any, ...] | None) -> Callable[[Tensor], Tensor]:
    """``x -> model(x, *args)`` (``model`` itself without arguments); when the model fails on a batch and an
    argument has another leading size than the batch (a per-example tensor), the error says so (chained)."""
    if args is None:
        return model

    def with_args(x: Tensor) -> Tensor:
        try:
            return model(x, *args)
        except Exception as err:
            sizes = [(i, _leading(a)) for i, a in enumerate(args)]
            odd = [(i, size) for i, size in sizes if size is not None and size not in (1, x.shape[0])]
            if not odd:
                raise
            i, size = odd[0]
            raise ValueError(
                f"the model failed on a batch of {x.shape[0]} rows with additional_forward_args[{i}] of {size} rows "
                f"({type(err).__name__}: {str(err)[:200]}); {PER_ROW}"
            ) from err

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


def check_forward_args(given: Any, fitted: tuple[Any, ...] | None) -> None:
    """Refuse ``additional_forward_args`` passed to a call (``given``) unless they are those the spectrum was
    fitted with (``fitted``, the constructor's): the values explain that fitted function."""
    args = as_args(given)
    if args is None:
        return
    if fitted is None:
        raise ValueError(
            "this explainer takes no additional_forward_args: it explains its spectrum. For a black box that "
            "needs them, pass them to the constructor: FourierShap(model, background, additional_forward_args=...) "
            "fits model(x, *additional_forward_args)"
        )
    if not same_args(args, fitted):
        raise ValueError(
            "additional_forward_args differ from those the spectrum was fitted with (the constructor's); the "
            "values explain that fitted function: build one explainer per set of arguments"
        )


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
