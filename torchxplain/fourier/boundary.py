"""The Fourier explainer's public boundary: every check on what users pass, done once per call.

Private kernels after this point assume valid inputs: a ``(Q, n)`` matrix on the explainer's device, players as
integer ids, a non-empty background.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchxplain._core import check_matrix, settings
from torchxplain._core.inputs import FeatureNames, to_tensor

_FLOATS = (torch.float32, torch.float64)


def validated_background(
    background: Any, n_features: int | None, name: str = "background"
) -> tuple[Tensor, FeatureNames | None]:
    """``(B, n)`` background rows as a tensor with at least one row, and the DataFrame's column names.

    Raises:
        TypeError / ValueError: not array-like, not 2-D, empty, or the wrong number of features.
    """
    converted = to_tensor(background, name, ndim=2)
    raw = check_matrix(converted.tensor, name, n_features)
    return raw, converted.feature_names


def state_dtype(raw: Tensor, fallback: torch.dtype) -> torch.dtype:
    """The dtype an explainer computes in, under ``tx.settings.dtype_policy``.

    ``"auto"``: the background's dtype when it is float32/float64, else ``fallback`` when that is float32/float64,
    else float32 (half, bfloat16, integer and bool data never make the closed forms run in low precision).
    """
    policy = settings.dtype_policy.value()
    if policy != "auto":
        return torch.float64 if policy == "float64" else torch.float32
    for dtype in (raw.dtype, fallback):
        if dtype in _FLOATS:
            return dtype
    return torch.float32


def flatten_inputs(
    inputs: tuple[Tensor, ...], n_features: int, device: torch.device
) -> tuple[Tensor, list[torch.Size]]:
    """Concatenate a tuple of ``(Q, ...)`` tensors into ``(Q, n_features)`` and check shape and device."""
    shapes = [t.shape for t in inputs]
    if any(t.ndim < 2 for t in inputs) or len({t.shape[0] for t in inputs}) != 1:
        got = [tuple(s) for s in shapes]
        raise ValueError(
            f"inputs must be tensors of shape (Q, ...) with the same Q, got shapes {got}; pass x[None] for one row"
        )
    x = torch.cat([t.reshape(t.shape[0], int(torch.Size(t.shape[1:]).numel())) for t in inputs], dim=1)
    if x.shape[1] != n_features:
        raise ValueError(
            f"inputs has {x.shape[1]} features in all (shapes {[tuple(s) for s in shapes]}), expected {n_features}"
        )
    if x.device != device:
        raise ValueError(f"inputs are on {x.device} but the explainer is on {device}; call .to(device) on one of them")
    if x.is_complex():
        raise TypeError(f"inputs must be real-valued, got dtype {x.dtype}")
    return x, shapes


def unflatten_values(values: Tensor, inputs: tuple[Tensor, ...], shapes: list[torch.Size]) -> tuple[Tensor, ...]:
    """Split ``(Q, n_features)`` values back into the inputs' shapes.

    Values come in the inputs' dtype when it is float32/float64, else in the computation's dtype.
    """
    out, start = [], 0
    for t, shape in zip(inputs, shapes):
        width = int(torch.Size(shape[1:]).numel())
        dtype = t.dtype if t.dtype in _FLOATS else values.dtype
        out.append(values[:, start : start + width].reshape(shape).to(dtype))
        start += width
    return tuple(out)


def player_ids(
    ids: Any, n_features: int, name: str, device: torch.device, shapes: list[torch.Size] | None = None
) -> Tensor | None:
    """``(n_features,)`` int64 player id of each input feature, from ``groups`` or a Captum ``feature_mask``.

    Args:
        ids: ``None``; an ``(n_features,)`` integer vector (``groups``); or, with ``shapes``, a tuple of integer
            masks each broadcastable to its input's shape and the same in every row (Captum's ``feature_mask``).
        n_features: number of input features.
        name: the argument's name, for messages.
        device: where the ids go.
        shapes: the inputs' shapes (for a ``feature_mask``).

    Raises:
        TypeError: float or bool ids (they would silently merge features).
        ValueError: wrong shape, not broadcastable, or different per row.
    """
    if ids is None:
        return None
    if shapes is None:
        vector = _integer_ids(to_tensor(ids, name).tensor, name)
        if vector.shape != (n_features,):
            raise ValueError(
                f"{name} must give one player id per input feature: expected shape ({n_features},), "
                f"got {tuple(vector.shape)}"
            )
        return vector.to(device)
    flat = []
    for index, (mask, shape) in enumerate(zip(ids, shapes)):
        mask = _integer_ids(to_tensor(mask, name).tensor, name)
        target = shape if shape[0] else torch.Size((1, *shape[1:]))  # an empty batch still has one grouping
        try:
            full = torch.broadcast_to(mask.to(device), target).reshape(target[0], -1)
        except RuntimeError:
            raise ValueError(
                f"{name}[{index}] has shape {tuple(mask.shape)}, which does not broadcast to the input's shape "
                f"{tuple(shape)}; pass one id per feature, e.g. shape (1, {', '.join(str(s) for s in shape[1:])})"
            ) from None
        if not bool((full == full[:1]).all()):
            raise ValueError(f"{name} must be the same for every row (one grouping of players per call)")
        flat.append(full[0])
    return torch.cat(flat)


def _integer_ids(ids: Tensor, name: str) -> Tensor:
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer player ids, got dtype {ids.dtype}; pass e.g. torch.long ids")
    return ids.long()


def check_target(target: Any, fitted: int | None) -> None:
    """Refuse a Captum ``target`` other than the output the spectrum was built for."""
    if target is None:
        return
    if isinstance(target, Tensor):
        values = set(target.flatten().tolist())
    elif isinstance(target, (list, tuple)):
        values = set(target)
    else:
        values = {target}
    if values != {fitted}:
        raise ValueError(
            f"this explainer was built for target={fitted}; got target={str(target)[:40]}. "
            "Build one explainer per output column"
        )
