"""``TreeEncoding``: the binary split features of a tree ensemble and the map from raw inputs to them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import check_matrix, chunk_bounds, rows_per_chunk, settings
from torchxplain._core.inputs import check_feature_names, to_tensor
from torchxplain.fourier.adapters import TreeEnsemble, parse_model_outputs


class TreeEncoding:
    """The binary split features of a tree ensemble and the map from raw inputs to them.

    Binary feature ``b`` is 1 exactly when a sample goes right at every split keyed
    ``(feature[b], threshold[b], nan_right[b], zero_is_missing[b])``: ``x > threshold`` (``x >= threshold``
    for XGBoost's ``x < threshold`` splits) after casting ``x`` to the library's input precision; missing
    values (NaN, and zero where the library treats zero as missing) go right when ``nan_right``.

    Build it with :meth:`from_model`; pass it to :func:`tree_spectrum` (``encoding=``), encode inputs with
    :meth:`transform`, and use :attr:`groups` as the player groups of the Shapley values, so that values come
    per original feature. An encoding built from one model serves every output of it (it holds the splits of
    all classes) and any model that splits on a subset of its splits.

    Attributes:
        feature: ``(n_binary,)`` int64 original feature of each binary feature (= :attr:`groups`).
        threshold: ``(n_binary,)`` float64 thresholds, in the units of the inputs.
        nan_right: ``(n_binary,)`` bool, where missing values go.
        zero_is_missing: ``(n_binary,)`` bool, whether zero counts as missing (LightGBM ``missing_type``
            ``'Zero'``).
        strict: ``True`` when the split sends ``x >= threshold`` right (XGBoost).
        input_dtype: the precision inputs are cast to before comparing (float32 or float64).
        n_features: number of original input features.
        feature_names: the model's fit-time column names (``None`` when it was fitted on an array); a
            DataFrame passed to :meth:`transform` must have these columns in this order.
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
    ) -> None:
        self.feature = feature.long()
        self.threshold = threshold.double()
        self.nan_right = nan_right.bool()
        self.zero_is_missing = zero_is_missing.bool()
        self.strict = bool(strict)
        self.input_dtype = input_dtype
        self.n_features = int(n_features)
        self.feature_names = None if feature_names is None else tuple(str(c) for c in feature_names)
        if self.feature_names is not None and len(self.feature_names) != self.n_features:
            raise ValueError(f"feature_names has {len(self.feature_names)} names for {self.n_features} features")

    @classmethod
    def from_model(cls, model: Any, target: int | None = None) -> TreeEncoding:
        """One binary feature per distinct split of ``model``, sorted by feature and threshold.

        ``target=None`` takes the splits of every output the model has (all classes of a multiclass model),
        so one encoding serves each of them; ``target=c`` only those of output ``c``. Raises like
        :func:`~torchxplain.fourier.adapters.parse_model_outputs` for unsupported or unfitted models.
        """
        return cls.from_ensembles(parse_model_outputs(model, target))

    @classmethod
    def from_ensemble(cls, ensemble: TreeEnsemble) -> TreeEncoding:
        """One binary feature per distinct split of a parsed :class:`TreeEnsemble`."""
        return cls.from_ensembles([ensemble])

    @classmethod
    def from_ensembles(cls, ensembles: Sequence[TreeEnsemble]) -> TreeEncoding:
        """One binary feature per distinct split of any of ``ensembles`` (the outputs of one model)."""
        if not ensembles:
            raise ValueError("from_ensembles needs at least one parsed ensemble")
        first = ensembles[0]
        keys = np.unique(np.concatenate([e.split_table() for e in ensembles]), axis=0).reshape(-1, 4)
        return cls(
            feature=torch.from_numpy(keys[:, 0].astype(np.int64)),
            threshold=torch.from_numpy(keys[:, 1].copy()),
            nan_right=torch.from_numpy(keys[:, 2] > 0),
            zero_is_missing=torch.from_numpy(keys[:, 3] > 0),
            strict=first.strict,
            input_dtype=torch.float32 if first.input_dtype == np.float32 else torch.float64,
            n_features=first.n_features,
            feature_names=first.feature_names,
        )

    @property
    def n_binary(self) -> int:
        """Number of binary split features (the spectrum's ``n``)."""
        return int(self.feature.shape[0])

    @property
    def groups(self) -> Tensor:
        """``(n_binary,)`` int64 player id of each binary feature: its original feature index."""
        return self.feature

    def split_table(self) -> np.ndarray:
        """``(n_binary, 4)`` float64 rows ``(feature, threshold, nan_right, zero_is_missing)``."""
        columns = (self.feature, self.threshold, self.nan_right, self.zero_is_missing)
        return np.stack([c.cpu().numpy().astype(np.float64) for c in columns], axis=1).reshape(-1, 4)

    def transform(self, x: Any, max_memory: int | str | None = None) -> Tensor:
        """Encode raw inputs as binary split features.

        Args:
            x: ``(N, n_features)`` tensor, numpy array, list or pandas DataFrame (its columns must be
                :attr:`feature_names` in order, when the model recorded names); NaN marks a missing value.
            max_memory: budget for the ``(N, n_binary)`` intermediates (default ``tx.settings.max_memory``).

        Returns:
            ``(N, n_binary)`` tensor of 0/1 in ``x``'s floating dtype (float32 for integer inputs), on its
            device (CPU for arrays and frames).

        Raises:
            TypeError: ``x`` is not array-like or has non-numeric columns.
            ValueError: wrong number of features, or DataFrame columns that differ from the model's.
        """
        converted = to_tensor(x, "x", ndim=2)
        check_feature_names(self.feature_names, converted.feature_names, "x")
        with settings.using(max_memory=max_memory):
            return self._transform(check_matrix(converted.tensor, "x", self.n_features, allow_empty=True))

    def _transform(self, x: Tensor) -> Tensor:
        out_dtype = x.dtype if x.is_floating_point() else torch.float32
        feature = self.feature.to(x.device)
        threshold = self.threshold.to(x.device)
        nan_right = self.nan_right.to(x.device)
        zero_missing = self.zero_is_missing.to(x.device)
        out = torch.empty(x.shape[0], self.n_binary, dtype=out_dtype, device=x.device)
        step = rows_per_chunk(self.n_binary * 24, x.shape[0])
        for start, stop in chunk_bounds(x.shape[0], step):
            v = x[start:stop].to(self.input_dtype).double()[:, feature]
            right = v >= threshold if self.strict else v > threshold
            missing = torch.isnan(v) | (zero_missing & (v.abs() <= 1e-35))
            out[start:stop] = torch.where(missing, nan_right, right)
        return out

    def __repr__(self) -> str:
        return f"TreeEncoding(n_features={self.n_features}, n_binary={self.n_binary}, strict={self.strict})"
