"""``ThresholdEncoding``: binary threshold features of continuous inputs, and the map from raw rows to them.

Binary feature ``b`` is 1 exactly when a row's value of ``feature[b]`` lies right of ``threshold[b]``: ``x >
threshold`` (``x >= threshold`` when ``strict``), after casting ``x`` to the ``input_dtype`` the thresholds were
learnt in; missing values (NaN, and zero where ``zero_is_missing``) go right when ``nan_right``. The thresholds of
one feature are a thermometer code of it, so a hybrid of two rows (each feature taken whole from one of them) is
the hybrid of their codes, feature by feature: the features are the players (:attr:`groups`). A tree ensemble's
splits are one such encoding (:class:`~torchxplain.fourier.TreeEncoding`); :meth:`ThresholdEncoding.from_data`
places the thresholds between the values rows actually take, for a black box on continuous inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import check_flag, check_int, check_matrix, chunk_bounds, rows_per_chunk, settings
from torchxplain._core.inputs import check_feature_names, rows, to_tensor


def threshold_codes(
    x: Tensor,
    feature: Tensor,
    threshold: Tensor,
    nan_right: Tensor,
    zero_is_missing: Tensor,
    strict: bool,
    input_dtype: torch.dtype,
    missing_value: float = float("nan"),
) -> Tensor:
    """``(N, p)`` raw rows -> ``(N, n_binary)`` 0/1 codes in ``x``'s floating dtype (float32 for integer ``x``).

    The split arrays (``(n_binary,)`` each) must be on ``x``'s device; chunked over rows to the memory budget.
    A ``missing_value`` other than NaN (XGBoost's ``missing=`` sentinel) is missing too, compared in
    ``input_dtype``.
    """
    sentinel = None if missing_value != missing_value else float(torch.tensor(missing_value, dtype=input_dtype))
    out = torch.empty(
        x.shape[0], feature.shape[0], dtype=x.dtype if x.is_floating_point() else torch.float32, device=x.device
    )
    step = rows_per_chunk(feature.shape[0] * 24, x.shape[0])
    for start, stop in chunk_bounds(x.shape[0], step):
        v = x[start:stop].to(input_dtype).double()[:, feature]
        right = v >= threshold if strict else v > threshold
        missing = torch.isnan(v) | (zero_is_missing & (v.abs() <= 1e-35))
        if sentinel is not None:
            missing |= v == sentinel
        out[start:stop] = torch.where(missing, nan_right, right)
    return out


class ThresholdEncoding:
    """Binary threshold features of ``n_features`` continuous inputs (module docstring).

    Attributes:
        feature: ``(n_binary,)`` int64 input feature of each binary feature (= :attr:`groups`).
        threshold: ``(n_binary,)`` float64 thresholds, in the units of the inputs.
        nan_right: ``(n_binary,)`` bool, where missing values go.
        zero_is_missing: ``(n_binary,)`` bool, whether zero counts as missing (LightGBM ``missing_type``
            ``'Zero'``).
        strict: ``True`` when ``x >= threshold`` goes right (XGBoost's ``x < threshold`` splits).
        input_dtype: the precision inputs are cast to before comparing (float32 or float64).
        n_features: number of input features.
        missing_value: a value that marks a missing entry besides NaN (XGBoost's ``missing=``; NaN: none).
        feature_names: the inputs' column names (``None`` when unknown); a DataFrame passed to :meth:`transform`
            must have these columns in this order.

    Example:
        >>> import numpy as np
        >>> import torchxplain as tx
        >>> encoding = tx.fourier.ThresholdEncoding.from_data(np.array([[0.0], [1.0], [3.0]]))
        >>> encoding.threshold  # midpoints between the column's values
        tensor([0.5000, 2.0000], dtype=torch.float64)
        >>> encoding.transform(np.array([[0.2], [2.5]]))  # thermometer codes
        tensor([[0., 0.],
                [1., 1.]], dtype=torch.float64)
    """

    def __init__(
        self,
        feature: Tensor,
        threshold: Tensor,
        nan_right: Tensor,
        zero_is_missing: Tensor,
        strict: bool,
        input_dtype: torch.dtype,
        n_features: int,
        feature_names: Sequence[str] | None = None,
        missing_value: float = float("nan"),
    ) -> None:
        self.n_features = check_int(n_features, "n_features", minimum=1)
        if isinstance(missing_value, bool) or not isinstance(missing_value, (int, float)):
            raise TypeError(f"missing_value must be a number (NaN: none), got {type(missing_value).__name__}")
        self.missing_value = float(missing_value)
        arrays = [
            to_tensor(a, name, ndim=1).tensor
            for a, name in zip(
                (feature, threshold, nan_right, zero_is_missing),
                ("feature", "threshold", "nan_right", "zero_is_missing"),
            )
        ]
        if len({a.shape[0] for a in arrays}) != 1:
            raise ValueError(
                "feature, threshold, nan_right and zero_is_missing must hold one entry per binary feature, got lengths "
                f"{[a.shape[0] for a in arrays]}"
            )
        if arrays[0].is_floating_point() or arrays[0].dtype == torch.bool:
            raise TypeError(f"feature must hold integer feature ids, got dtype {arrays[0].dtype}")
        self.feature = arrays[0].long()
        if self.feature.numel() and not (0 <= int(self.feature.min()) and int(self.feature.max()) < self.n_features):
            bad = int(self.feature[(self.feature < 0) | (self.feature >= self.n_features)][0])
            raise ValueError(f"feature ids must be in 0..{self.n_features - 1}, found {bad}")
        self.threshold = arrays[1].double()
        if bool(torch.isnan(self.threshold).any()):
            raise ValueError(f"threshold holds NaN at index {int(torch.isnan(self.threshold).nonzero()[0])}")
        self.nan_right = arrays[2].bool()
        self.zero_is_missing = arrays[3].bool()
        self.strict = check_flag(strict, "strict")
        if input_dtype not in (torch.float32, torch.float64):
            raise ValueError(f"input_dtype must be torch.float32 or torch.float64, got {str(input_dtype)[:40]}")
        self.input_dtype = input_dtype
        self.feature_names = None if feature_names is None else tuple(str(c) for c in feature_names)
        if self.feature_names is not None and len(self.feature_names) != self.n_features:
            raise ValueError(f"feature_names has {len(self.feature_names)} names for {self.n_features} features")

    @classmethod
    def from_data(cls, data: Any, background: Any = None, *, max_thresholds: int | None = None) -> ThresholdEncoding:
        """Thresholds that follow the values of ``data`` ∪ ``background``, feature by feature.

        Rules (per feature):

        * The thresholds are the midpoints between consecutive distinct values of the pooled rows (a midpoint that
          rounds onto the upper value is replaced by the lower one), so every pooled value gets a code of its own:
          the encoding is exact on the rows it was built from and on every hybrid of them.
        * A value not seen falls into the slot of the nearest pooled value (a tie at a midpoint goes to the
          lower one); values beyond the range take the end slots.
        * With more than ``max_thresholds`` midpoints, those kept are, for each of ``max_thresholds`` equally
          spaced quantiles of the pooled rows, the first midpoint at or past it (equal-count bins that never
          split a repeated value); a value then falls into the bin that holds it.
        * A feature with one distinct value has no threshold (it never varies).

        Comparisons run in float32 when ``data`` is float32 (so float64 copies of its values land in their own
        slots), else in float64.

        Args:
            data: ``(N, p)`` rows like the ones to be explained (tensor, numpy array, list or DataFrame; its
                columns become :attr:`feature_names`).
            background: optional ``(D, p)`` background rows (the same columns when both are DataFrames).
            max_thresholds: optional cap on the thresholds per feature (``None``: every midpoint).

        Returns:
            A :class:`ThresholdEncoding` on the CPU, its binary features sorted by feature and threshold.

        Raises:
            TypeError: non-numeric input.
            ValueError: NaN or infinite values (impute them first: a threshold code needs ordered values), a
                width mismatch, empty rows, different column names, or ``max_thresholds < 1``.
        """
        cap = check_int(max_thresholds, "max_thresholds", minimum=1, optional=True)
        converted = rows(data, "data", values="finite")
        pooled, names = converted.tensor.cpu(), converted.feature_names
        input_dtype = torch.float32 if pooled.dtype == torch.float32 else torch.float64
        if background is not None:
            extra = rows(background, "background", n_features=pooled.shape[1], values="finite")
            check_feature_names(names, extra.feature_names, "background")
            names = names or extra.feature_names
            pooled = torch.cat((pooled.double(), extra.tensor.cpu().double()))
        return cls._from_checked(pooled, input_dtype, cap, names)

    @classmethod
    def _from_checked(
        cls, pooled: Tensor, input_dtype: torch.dtype, cap: int | None, names: Sequence[str] | None = None
    ) -> ThresholdEncoding:
        """:meth:`from_data` on rows already converted and checked (finite, ``(R, p)``; the rules there), compared
        in ``input_dtype``: for callers that validated the user's rows once (a black-box fit)."""
        feature, threshold = _midpoints(pooled.cpu().to(input_dtype).double(), cap)
        false = torch.zeros(feature.shape[0], dtype=torch.bool)
        return cls(feature, threshold, false, false, False, input_dtype, pooled.shape[1], feature_names=names)

    @property
    def n_binary(self) -> int:
        """Number of binary threshold features (the spectrum's ``n``)."""
        return int(self.feature.shape[0])

    @property
    def groups(self) -> Tensor:
        """``(n_binary,)`` int64 player id of each binary feature: its input feature index."""
        return self.feature

    def split_table(self) -> np.ndarray:
        """``(n_binary, 4)`` float64 rows ``(feature, threshold, nan_right, zero_is_missing)``."""
        columns = (self.feature, self.threshold, self.nan_right, self.zero_is_missing)
        return np.stack([c.cpu().numpy().astype(np.float64) for c in columns], axis=1).reshape(-1, 4)

    def transform(self, x: Any, max_memory: int | str | None = None) -> Tensor:
        """Encode raw inputs as binary threshold features.

        Args:
            x: ``(N, n_features)`` tensor, numpy array, list or pandas DataFrame (its columns must be
                :attr:`feature_names` in order, when names are known); NaN marks a missing value.
            max_memory: budget for the ``(N, n_binary)`` intermediates (default ``tx.settings.max_memory``).

        Returns:
            ``(N, n_binary)`` tensor of 0/1 in ``x``'s floating dtype (float32 for integer inputs), on its
            device (CPU for arrays and frames).

        Raises:
            TypeError: ``x`` is not array-like or has non-numeric columns.
            ValueError: wrong number of features, or DataFrame columns that differ from :attr:`feature_names`.
        """
        converted = to_tensor(x, "x", ndim=2)
        check_feature_names(self.feature_names, converted.feature_names, "x")
        with settings.using(max_memory=max_memory):
            return self._transform(check_matrix(converted.tensor, "x", self.n_features, allow_empty=True))

    def _transform(self, x: Tensor) -> Tensor:
        device = x.device
        return threshold_codes(
            x,
            self.feature.to(device),
            self.threshold.to(device),
            self.nan_right.to(device),
            self.zero_is_missing.to(device),
            self.strict,
            self.input_dtype,
            self.missing_value,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_features={self.n_features}, n_binary={self.n_binary}, strict={self.strict})"


def _midpoints(values: Tensor, cap: int | None) -> tuple[Tensor, Tensor]:
    """``(feature, threshold)`` of :meth:`ThresholdEncoding.from_data`'s rules for float64 ``values`` ``(N, p)``."""
    n_rows, p = values.shape
    ordered = values.sort(dim=0).values
    low, high = ordered[:-1], ordered[1:]  # (N - 1, p): each gap between consecutive sorted rows
    boundary = high > low
    middle = low + (high - low) / 2
    middle = torch.where(middle < high, middle, low)  # adjacent floats: the lower value still separates them
    if cap is not None:
        # the first boundary at or past each quantile q/(cap + 1): boundaries where the count of quantiles passed
        # grows (the share of rows left of a gap only grows, so a running maximum holds the previous boundary's)
        share = torch.arange(1, n_rows, dtype=torch.float64)[:, None].expand(-1, p) / n_rows
        passed = torch.floor(share * (cap + 1) + 1e-9).clamp(max=cap) * boundary
        before = torch.cat((torch.zeros(1, p, dtype=passed.dtype), passed[:-1].cummax(dim=0).values))
        thin = boundary & (passed > before)
        boundary = torch.where(boundary.sum(0) > cap, thin, boundary)
    feature, gap = boundary.T.nonzero(as_tuple=True)  # sorted by feature, then by value
    return feature, middle[gap, feature]
