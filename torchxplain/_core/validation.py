"""Input validation at the public boundary: early errors that say what was wrong and how to fix it."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Literal, overload

import torch
from torch import Tensor

from torchxplain._core.settings import validation


def check_matrix(x: Tensor, name: str, n_features: int | None = None, allow_empty: bool = False) -> Tensor:
    """Check that ``x`` is a 2-D ``(rows, n_features)`` tensor and return it.

    A 1-D tensor of length ``n_features`` is *not* silently reshaped: pass ``x[None]`` for one row.
    """
    if x.ndim != 2:
        want = f"(rows, {n_features})" if n_features is not None else "(rows, features)"
        raise ValueError(f"{name} must be a 2-D tensor of shape {want}, got shape {tuple(x.shape)}")
    if n_features is not None and x.shape[1] != n_features:
        raise ValueError(f"{name} has {x.shape[1]} features (shape {tuple(x.shape)}), expected {n_features}")
    if not allow_empty and x.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)}); pass at least one row")
    return x


def check_finite(x: Tensor, name: str) -> Tensor:
    """Raise ``ValueError`` naming the first row and column holding a NaN or infinity.

    Skipped under ``tx.settings.validation("shapes")``.
    """
    if validation.checks_values() and (x.is_floating_point() or x.is_complex()):
        bad = ~torch.isfinite(x)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or infinite values (first at index {idx})")
    return x


def check_binary(x: Tensor, name: str) -> Tensor:
    """Raise ``ValueError`` naming the first column (and row) whose value is not 0 or 1.

    Skipped under ``tx.settings.validation("shapes")``.
    """
    if not validation.checks_values():
        return x
    check_finite(x, name)
    bad = (x != 0) & (x != 1)
    if bool(bad.any()):
        row, col = (int(i) for i in bad.nonzero()[0][-2:]) if x.ndim >= 2 else (0, int(bad.nonzero()[0][0]))
        value = x.reshape(-1, x.shape[-1])[row, col].item() if x.ndim >= 2 else x[col].item()
        raise ValueError(
            f"{name} must hold binary features in {{0, 1}}; column {col} (row {row}) holds {value}. "
            "Encode categorical features one-hot and pass groups/feature_mask to explain them per variable"
        )
    return x


def check_same_device(**tensors: Tensor) -> torch.device:
    """Return the common device of the named tensors, or raise ``ValueError`` naming the mismatch."""
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"tensors are on different devices ({listing}); move them with .to(device) first")
    return next(iter(devices.values()))


def float_dtype(*tensors: Tensor) -> torch.dtype:
    """The floating dtype results use: the widest floating dtype among ``tensors``, else float32."""
    floats = [t.dtype for t in tensors if t.is_floating_point()]
    if not floats:
        return torch.get_default_dtype()
    return max(floats, key=lambda d: torch.finfo(d).bits)


def check_float_dtype(dtype: object, name: str = "dtype") -> torch.dtype:
    """``dtype`` if it is a floating ``torch.dtype``; strings and integer dtypes are refused, never coerced.

    Raises:
        TypeError: not a floating ``torch.dtype``.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating torch dtype such as torch.float64, got {str(dtype)[:40]!r}")
    return dtype


def check_flag(value: object, name: str) -> bool:
    """``value`` if it is a bool (``"no"`` or ``0`` would otherwise read as a truth value).

    Raises:
        TypeError: not a bool.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {str(value)[:40]!r}")
    return value


def _shown(value: object) -> str:
    return f"{type(value).__name__} {str(value)[:40]!r}"


@overload
def check_int(
    value: object,
    name: str,
    minimum: int | None = ...,
    maximum: int | None = ...,
    hint: str = ...,
    *,
    optional: Literal[False] = ...,
) -> int: ...


@overload
def check_int(
    value: object, name: str, minimum: int | None = ..., maximum: int | None = ..., hint: str = ..., *, optional: bool
) -> Any: ...


def check_int(
    value: object,
    name: str,
    minimum: int | None = None,
    maximum: int | None = None,
    hint: str = "",
    *,
    optional: bool = False,
) -> Any:
    """``value`` as an int in ``[minimum, maximum]`` (either bound optional; ``None`` too when ``optional``);
    numpy integers are accepted.

    Bools, floats (even ``2.0``), strings and ``None`` are refused, never truncated or read as truth values.
    ``hint`` (e.g. ``"e.g. 100"``) ends the message.

    Raises:
        TypeError: not an integer.
        ValueError: out of range.
    """
    if value is None and optional:
        return None
    tail = f"; {hint}" if hint else ""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {_shown(value)}{tail}")
    number = int(value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        low = "" if minimum is None else f">= {minimum}"
        high = "" if maximum is None else f"<= {maximum}"
        raise ValueError(f"{name} must be {' and '.join(p for p in (low, high) if p)}, got {number}{tail}")
    return number


def _number_range(low: tuple[str, float] | None, high: tuple[str, float] | None, nonzero: bool) -> str:
    kind = "a nonzero finite number" if nonzero else "a finite number"
    if low is not None and high is not None:
        return f"{kind} in {'(' if low[0] == '>' else '['}{low[1]:g}, {high[1]:g}{')' if high[0] == '<' else ']'}"
    bound = low or high
    return kind if bound is None else f"{kind} {bound[0]} {bound[1]:g}"


def check_number(
    value: object,
    name: str,
    *,
    greater_than: float | None = None,
    at_least: float | None = None,
    less_than: float | None = None,
    at_most: float | None = None,
    nonzero: bool = False,
    hint: str = "",
) -> float:
    """``value`` as a finite float within the given bounds (ints and numpy scalars accepted).

    Bools, strings, ``None``, complex numbers and tensors are refused; NaN and infinities too. Give at most one
    lower (``greater_than``/``at_least``) and one upper (``less_than``/``at_most``) bound. ``hint`` (e.g.
    ``"e.g. 1e-6"``) ends the message.

    Raises:
        TypeError: not a real number.
        ValueError: NaN, infinite, zero (with ``nonzero``) or out of the bounds.
    """
    low = (">", greater_than) if greater_than is not None else (">=", at_least) if at_least is not None else None
    high = ("<", less_than) if less_than is not None else ("<=", at_most) if at_most is not None else None
    want = _number_range(low, high, nonzero)
    tail = f"; {hint}" if hint else ""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be {want}, got {_shown(value)}{tail}")
    number = float(value)
    bad = (
        not math.isfinite(number)
        or (greater_than is not None and not number > greater_than)
        or (at_least is not None and not number >= at_least)
        or (less_than is not None and not number < less_than)
        or (at_most is not None and not number <= at_most)
        or (nonzero and number == 0)
    )
    if bad:
        raise ValueError(f"{name} must be {want}, got {value!r}{tail}")
    return number
