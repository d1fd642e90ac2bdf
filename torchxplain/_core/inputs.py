"""The public boundary: tensors, numpy arrays, lists and pandas objects in, checked tensors out.

Every public entry point (Fourier, GOALS, IDX codes) converts what users pass here, once per call: tables of rows
(:func:`rows`), players (:func:`player_ids`, the one player-id contract for ``groups``, ``feature_groups`` and
Captum's ``feature_mask``) and Captum's tuples of inputs (:func:`flatten_inputs`). Kernels behind it assume valid
inputs; the dtype they compute in follows ``tx.settings.dtype_policy`` (:func:`data_dtype`).

Policy (stated once, used by every public entry point):

* **Accepted**: ``torch.Tensor``; ``numpy.ndarray``; nested lists/tuples of numbers; pandas ``DataFrame`` and
  ``Series`` of numeric, bool or nullable-numeric columns (``pd.NA`` becomes NaN). A DataFrame's column names are
  kept as ``feature_names``.
* **Refused** with the column named and the fix: object, string and categorical columns (encode them first),
  complex numbers, ragged lists, scalars where a table is required.
* **Device**: a tensor stays where it is (a device mismatch with the explainer is an error, never a silent
  move); arrays, lists and frames are placed on the ``device`` the caller names (the explainer's).
* **Dtype**: integer and bool inputs are kept as they are (binary features arrive as 0/1 ints); floating inputs
  keep their precision. Kernels then compute in ``tx.settings.dtype_policy``'s dtype.
* **Feature names** from a DataFrame are checked against the names an explainer saw at fit time
  (:func:`check_feature_names`): same names in the same order, else an error that lists the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from torchxplain._core.settings import dtype_policy
from torchxplain._core.validation import check_binary, check_finite, check_matrix

FeatureNames = tuple[str, ...]
_FLOATS = (torch.float32, torch.float64)


def _is_pandas(x: object, kind: str) -> bool:
    """Whether ``x`` is a pandas ``kind`` (``"DataFrame"``/``"Series"``), without importing pandas."""
    return any(cls.__name__ == kind and cls.__module__.startswith("pandas") for cls in type(x).__mro__)


def is_dataframe(x: object) -> bool:
    """Whether ``x`` is a pandas DataFrame (subclasses included)."""
    return _is_pandas(x, "DataFrame")


@dataclass(frozen=True)
class Converted:
    """A converted input: the tensor and, for a DataFrame (or a named Series), its column names."""

    tensor: Tensor
    feature_names: FeatureNames | None


def _frame_to_numpy(frame: Any, name: str) -> np.ndarray:
    for column, dtype in frame.dtypes.items():
        kind = getattr(dtype, "kind", "O")
        if kind not in "biuf":  # bool, signed, unsigned, float (nullable numerics report these kinds too)
            raise TypeError(
                f"{name} column {str(column)[:60]!r} has dtype {str(dtype)[:40]}, not numeric; encode it first "
                "(one-hot for categories, or codes with the model's own encoding)"
            )
    if any(not isinstance(dtype, np.dtype) for dtype in frame.dtypes):  # pandas' nullable dtypes: pd.NA -> NaN
        return frame.to_numpy(dtype=np.float64, na_value=np.nan)
    return frame.to_numpy(dtype=np.result_type(*frame.dtypes)) if frame.shape[1] else frame.to_numpy()


def to_tensor(
    x: object,
    name: str,
    *,
    device: torch.device | str | None = None,
    ndim: int | Sequence[int] | None = None,
) -> Converted:
    """Convert one public-boundary input to a tensor (see the module policy).

    Args:
        x: a tensor, numpy array, nested list, or pandas DataFrame/Series.
        name: the argument's name, used in every message.
        device: where non-tensor inputs are placed (``None``: CPU). Tensors are never moved.
        ndim: the accepted number(s) of dimensions (``None``: any).

    Returns:
        :class:`Converted` with the tensor (numpy's dtype kept; float64 stays float64) and the feature names.

    Raises:
        TypeError: not array-like, non-numeric columns or values.
        ValueError: ragged lists or the wrong number of dimensions.
    """
    names: FeatureNames | None = None
    if isinstance(x, Tensor):
        tensor = x
    else:
        if is_dataframe(x):
            names = tuple(str(c) for c in x.columns)  # type: ignore[attr-defined]
            array = _frame_to_numpy(x, name)
        elif _is_pandas(x, "Series"):
            array = _frame_to_numpy(x.to_frame(), name)[:, 0]  # type: ignore[attr-defined]
        elif isinstance(x, np.ndarray):
            array = x
        elif isinstance(x, (list, tuple)):
            try:
                array = np.asarray(x)
            except ValueError as err:
                raise ValueError(f"{name} is a ragged nested list (rows of different lengths): {err}") from None
        else:
            raise TypeError(
                f"{name} must be a tensor, numpy array, list or pandas DataFrame/Series, got {type(x).__name__}"
            )
        if array.dtype.kind not in "biuf":
            raise TypeError(
                f"{name} must hold numbers, got a numpy array of dtype {array.dtype}; encode strings or categories "
                "as numbers first"
            )
        array = np.ascontiguousarray(array)
        if not array.flags.writeable:  # torch shares memory with numpy and warns on read-only buffers: copy those
            array = array.copy()
        tensor = torch.from_numpy(array).to(device or "cpu")
    if tensor.is_complex():
        raise TypeError(f"{name} must be real-valued, got dtype {tensor.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if tensor.ndim not in allowed:
            shape = tuple(tensor.shape)
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"{name} must be {want}, got a {tensor.ndim}-D input of shape {shape}")
    return Converted(tensor, names)


def check_feature_names(seen: FeatureNames | None, given: FeatureNames | None, name: str) -> None:
    """Check a DataFrame's column names against those seen at fit time (either side ``None``: nothing to check).

    Raises:
        ValueError: different names or order; the message lists what is missing, extra or out of order.
    """
    if seen is None or given is None or tuple(seen) == tuple(given):
        return
    missing = [c for c in seen if c not in given][:5]
    extra = [c for c in given if c not in seen][:5]
    detail = f"missing {missing}, unexpected {extra}" if missing or extra else "the same names in another order"
    raise ValueError(
        f"{name} has columns that differ from those seen at fit time ({detail}); pass the columns "
        f"{list(seen)[:8]}{'...' if len(seen) > 8 else ''} in that order"
    )


def rows(
    x: object,
    name: str,
    *,
    n_features: int | None = None,
    device: torch.device | str | None = None,
    values: Literal["any", "finite", "binary"] = "any",
    allow_empty: bool = False,
) -> Converted:
    """Convert and check a ``(N, n_features)`` table of rows (the one rows check of every public entry point).

    Args:
        x, name, device: as :func:`to_tensor`.
        n_features: the required width (``None``: any).
        values: ``"finite"`` refuses NaN and infinities, ``"binary"`` anything but 0/1 (both skipped under
            ``tx.settings.validation("shapes")``); ``"any"`` checks no values.
        allow_empty: accept zero rows.

    Raises:
        TypeError / ValueError: not array-like or numeric, not 2-D, the wrong width, empty, or bad values.
    """
    converted = to_tensor(x, name, device=device, ndim=2)
    check_matrix(converted.tensor, name, n_features, allow_empty=allow_empty)
    if values == "binary":
        check_binary(converted.tensor, name)
    elif values == "finite":
        check_finite(converted.tensor, name)
    return converted


def player_ids(
    ids: Any, n_features: int, name: str, device: torch.device, shapes: Sequence[torch.Size] | None = None
) -> Tensor | None:
    """``(n_features,)`` int64 player id of each input feature: the one player-id contract of every entry point.

    A player is a set of input features sharing one id. Ids are non-negative integers, gaps allowed (``[5, 5,
    9, 9]`` is two players); players are ordered by id, so a ``(Q, m)`` result's columns follow the sorted
    distinct ids (:func:`dense_players`).

    Args:
        ids: ``None``; an ``(n_features,)`` integer vector (``groups``); or, with ``shapes``, a tuple of integer
            masks each broadcastable to its input's shape and the same in every row (Captum's ``feature_mask``).
        n_features: number of input features.
        name: the argument's name, for messages.
        device: where the ids go.
        shapes: the inputs' shapes (for a ``feature_mask``).

    Raises:
        TypeError: float, bool or complex ids (they would silently merge features), or not array-like.
        ValueError: wrong shape, negative ids, not broadcastable, or different per row.
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
        return _non_negative(vector.to(device), name)
    if not isinstance(ids, (tuple, list)) or len(ids) != len(shapes):
        count = len(ids) if isinstance(ids, (tuple, list)) else 1
        raise ValueError(f"{name} has {count} masks for {len(shapes)} inputs; pass one mask per input tensor")
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
    return _non_negative(torch.cat(flat), name)


def dense_players(ids: Tensor) -> tuple[Tensor, Tensor, int]:
    """``(player index 0..m-1 of each feature, (m,) sorted distinct ids, m)`` of validated :func:`player_ids`."""
    distinct, index = torch.unique(ids, return_inverse=True)
    return index.long(), distinct, int(distinct.shape[0])


def _integer_ids(ids: Tensor, name: str) -> Tensor:
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer player ids, got dtype {ids.dtype}; pass e.g. torch.long ids")
    return ids.long()


def _non_negative(ids: Tensor, name: str) -> Tensor:
    if ids.numel() and int(ids.min()) < 0:
        raise ValueError(f"{name} must hold non-negative player ids, found {int(ids.min())}")
    return ids


def flatten_inputs(
    inputs: tuple[Tensor, ...], n_features: int, device: torch.device
) -> tuple[Tensor, list[torch.Size]]:
    """Concatenate a (Captum) tuple of ``(Q, ...)`` tensors into ``(Q, n_features)``; check shape and device."""
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


def data_dtype(x: Tensor, fallback: torch.dtype) -> torch.dtype:
    """The dtype a computation on data ``x`` runs in: ``tx.settings.dtype_policy.compute_dtype`` of ``x``'s own
    dtype when it is float32/float64, else of ``fallback`` (half, integer and bool data take the fallback's rule)."""
    return dtype_policy.compute_dtype(x.dtype if x.dtype in _FLOATS else fallback)
