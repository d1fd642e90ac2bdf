"""What each input is explained against: Captum's ``baselines`` (one reference per row) or a ``background`` set.

The rule, stated once (the explainers' docstrings and the black-box guide repeat it):

* ``background=`` — a ``(B, n)`` set of rows, any ``B ≥ 1``: every input is explained against all of them (the
  interventional game ``v(S) = mean_b f(x_S, b_~S)``). Default: the explainer's own background.
* ``baselines=`` — Captum's argument, with Captum's meaning: **one reference per input row**. A scalar (every
  feature of every row), a ``(1, n)`` row shared by all inputs, or an ``(N, n)`` tensor shaped like the inputs,
  whose row ``i`` is input ``i``'s reference (``v_i(S) = f(x_{i,S}, b_{i,~S})``). A tuple of inputs takes a tuple of
  such baselines, one per input. Any other number of rows is refused (pass it as ``background=``), so an ``(N, n)``
  table is never silently averaged as a background set.

:func:`reference` validates and encodes either into a :class:`Reference`.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any

import torch
from torch import Tensor

from torchxplain._core.inputs import FeatureNames, check_feature_names, rows, to_tensor
from torchxplain.fourier.encoding import InputEncoder


@dataclass(frozen=True)
class Reference:
    """The encoded reference rows of one call.

    Attributes:
        bits: ``(R, n_binary)`` encoded rows in the compute dtype, or ``None`` for the explainer's own background.
        paired: row ``i`` is input ``i``'s only reference (Captum's ``baselines`` of ``R = N ≠ 1`` rows);
            otherwise every input is explained against all ``R`` rows (a one-row baseline among them).
        raw: ``(R, n_inputs)`` the rows before encoding (``None`` with ``bits``), where a black box of continuous
            inputs is queried.
    """

    bits: Tensor | None
    paired: bool = False
    raw: Tensor | None = None

    def rows(self, start: int, stop: int) -> Reference:
        """The reference of inputs ``start:stop`` (a paired reference is cut with them)."""
        if not self.paired or self.bits is None:
            return self
        return Reference(self.bits[start:stop], True, None if self.raw is None else self.raw[start:stop])


def _is_scalar(value: Any) -> bool:
    if isinstance(value, Tensor):
        return value.ndim == 0
    return isinstance(value, Real) and not isinstance(value, bool)


def _baseline_rows(baselines: Any, inputs: tuple[Tensor, ...], dtype: torch.dtype) -> tuple[Tensor, Any]:
    """Captum's ``baselines`` as ``(1 or N, n)`` raw rows, and the column names of a DataFrame baseline."""
    entries = baselines if isinstance(baselines, tuple) else (baselines,) * len(inputs)
    if not isinstance(baselines, tuple) and not _is_scalar(baselines) and len(inputs) > 1:
        raise ValueError(
            f"baselines for a tuple of {len(inputs)} inputs must be a tuple with one entry per input (a scalar or "
            "a tensor each), as in Captum"
        )
    if len(entries) != len(inputs):
        raise ValueError(f"baselines has {len(entries)} entries for {len(inputs)} inputs; pass one per input")
    device = inputs[0].device
    parts, names = [], None
    for i, (given, x) in enumerate(zip(entries, inputs)):
        name = "baselines" if len(inputs) == 1 else f"baselines[{i}]"
        width = int(torch.Size(x.shape[1:]).numel())
        if _is_scalar(given):
            value = float(given)
            parts.append(torch.full((1, width), value, dtype=dtype, device=device))
            continue
        converted = to_tensor(given, name, device=device)
        tensor, names = converted.tensor, converted.feature_names or names
        shape, want = tuple(tensor.shape), tuple(x.shape)
        if shape != want and not (len(shape) == len(want) and shape[0] == 1 and shape[1:] == want[1:]):
            raise ValueError(
                f"{name} has shape {shape}, but Captum's baselines give one reference per input row: the inputs' "
                f"shape {want} (row i is input i's reference), (1, {', '.join(map(str, want[1:]))}) for one row "
                "shared by all inputs, or a scalar. To explain every input against a set of B rows, pass them as "
                "background= instead"
            )
        parts.append(tensor.reshape(shape[0], width))
    count = max(p.shape[0] for p in parts)
    return torch.cat([p.expand(count, -1).to(dtype) for p in parts], dim=1), names


def _background_rows(background: Any, n_features: int, device: torch.device) -> tuple[Tensor, Any]:
    """A ``background=`` set: a ``(B, n)`` table, or a tuple of per-input tensors with ``B`` rows each."""
    if isinstance(background, tuple):
        parts = [to_tensor(b, f"background[{i}]", device=device).tensor for i, b in enumerate(background)]
        if any(p.ndim < 2 for p in parts) or len({p.shape[0] for p in parts}) != 1:
            raise ValueError(
                f"background as a tuple must hold (B, ...) tensors with the same B, got shapes "
                f"{[tuple(p.shape) for p in parts]}"
            )
        background = torch.cat([p.reshape(p.shape[0], -1) for p in parts], dim=1)
    converted = rows(background, "background", n_features=n_features, device=device)
    return converted.tensor, converted.feature_names


def reference(
    baselines: Any,
    background: Any,
    inputs: tuple[Tensor, ...],
    encoder: InputEncoder,
    feature_names: FeatureNames | None,
    dtype: torch.dtype,
) -> Reference:
    """Validate and encode a call's ``baselines`` or ``background`` (the module's rule).

    Args:
        baselines: Captum's per-row references, or ``None``.
        background: a set of rows, or ``None``.
        inputs: the call's inputs (a tuple of ``(N, ...)`` tensors, validated).
        encoder: the explainer's encoder (checks and encodes raw rows).
        feature_names: the explainer's column names (a DataFrame's are checked against them).
        dtype: the compute dtype of the encoded rows.

    Raises:
        ValueError: both given; baselines whose rows are neither 1 nor ``N``; rows of the wrong width, values the
            encoder refuses, or columns other than the explainer's.
    """
    if baselines is None and background is None:
        return Reference(None)
    if baselines is not None and background is not None:
        raise ValueError(
            "pass baselines= (Captum's: one reference per input row) or background= (a set of rows every input is "
            "explained against), not both"
        )
    if background is not None:
        raw, names = _background_rows(background, encoder.n_inputs, inputs[0].device)
        name = "background"
    else:
        raw, names = _baseline_rows(baselines, inputs, dtype)
        name = "baselines"
    check_feature_names(feature_names, names, name)
    encoder.check(raw, name)
    return Reference(encoder.encode(raw, dtype), paired=baselines is not None and raw.shape[0] != 1, raw=raw)
