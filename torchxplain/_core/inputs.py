"""One conversion layer at the public boundary: tensors, numpy arrays, lists and pandas objects in, tensors out.

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
from typing import Any

import numpy as np
import torch
from torch import Tensor

FeatureNames = tuple[str, ...]


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
