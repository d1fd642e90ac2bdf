"""``TreeEncoding``: the split features of a tree ensemble, a :class:`ThresholdEncoding` read off the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from torchxplain.fourier.encoding import ThresholdEncoding
from torchxplain.fourier.trees._splits import check_ensemble, splits_binary_inputs
from torchxplain.fourier.trees.adapters._base import TreeEnsemble, fitted_names
from torchxplain.fourier.trees.adapters._dispatch import parse_model_outputs


class TreeEncoding(ThresholdEncoding):
    """The binary split features of a tree ensemble and the map from raw inputs to them.

    Binary feature ``b`` is 1 exactly when a sample goes right at every split keyed
    ``(feature[b], threshold[b], nan_right[b], zero_is_missing[b])``: ``x > threshold`` (``x >= threshold``
    for XGBoost's ``x < threshold`` splits) after casting ``x`` to the library's input precision; missing
    values (NaN, and zero where the library treats zero as missing) go right when ``nan_right``.

    Build it with :meth:`from_model`; pass it to :func:`~torchxplain.tree_spectrum` (``encoding=``), encode inputs
    with :meth:`transform`, and use :attr:`groups` as the player groups of the Shapley values, so that values come
    per original feature. An encoding built from one model serves every output of it (it holds the splits of
    all classes) and any model that splits on a subset of its splits. Attributes as :class:`ThresholdEncoding`;
    ``feature_names`` are the model's fit-time column names (``None`` when it was fitted on an array) and
    ``missing_value`` its ``missing=`` sentinel (XGBoost's scikit-learn wrappers; NaN otherwise).
    """

    @classmethod
    def from_model(cls, model: Any, target: int | None = None) -> TreeEncoding:
        """One binary feature per distinct split of ``model``, sorted by feature and threshold.

        ``target=None`` takes the splits of every output the model has (all classes of a multiclass model),
        so one encoding serves each of them; ``target=c`` only those of output ``c``. Raises like
        :func:`~torchxplain.fourier.parse_model` for unsupported or unfitted models.
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
            missing_value=first.missing,
            names=first.names,
        )

    def __init__(self, *args: Any, names: str = "exact", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names = names

    def transform(self, x: Any, max_memory: int | str | None = None) -> Tensor:
        """:meth:`ThresholdEncoding.transform`; a DataFrame's columns are compared with the names as the library
        stored them at fit time (LightGBM writes ``_`` for a space)."""
        columns = getattr(x, "columns", None)
        if columns is not None and self.names != "exact":
            x = x.set_axis(list(fitted_names(tuple(str(c) for c in columns), self.names) or ()), axis=1)
        return super().transform(x, max_memory)


ENCODINGS = ("auto", "binary", "thresholds")


def resolve_encoding(
    encoding: Any,
    ensembles: Sequence[TreeEnsemble],
    splits: Callable[[], ThresholdEncoding],
    background: Tensor | None = None,
) -> ThresholdEncoding | None:
    """The one rule that turns an ``encoding`` argument into the encoding of a tree model's inputs.

    Args:
        encoding: ``"auto"`` (or ``None``): binary when every split of every ensemble separates 0 from 1 and the
            ``background`` (when given) is 0/1, else thresholds; ``"binary"``; ``"thresholds"``; or a
            :class:`ThresholdEncoding` (a :class:`TreeEncoding`), used as given.
        ensembles: the parsed outputs to be explained.
        splits: builds the thresholds encoding (the splits of every output the caller serves).
        background: ``(B, p)`` rows that ``"auto"`` also requires to be 0/1 for the binary encoding.

    Returns:
        ``None`` for binary inputs, else the encoding.

    Raises:
        TypeError: ``encoding`` is neither a string nor a :class:`ThresholdEncoding`.
        ValueError: an unknown encoding name.
    """
    if encoding is None:
        encoding = "auto"
    if isinstance(encoding, ThresholdEncoding):
        return encoding
    if not isinstance(encoding, str):
        raise TypeError(
            f"encoding must be one of {ENCODINGS} or a TreeEncoding (TreeEncoding.from_model(model)), got "
            f"{type(encoding).__name__}"
        )
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS} or a TreeEncoding, got {encoding[:40]!r}")
    for ensemble in ensembles:
        check_ensemble(ensemble)
    if encoding == "auto":
        binary_rows = background is None or bool(((background == 0) | (background == 1)).all())
        encoding = "binary" if binary_rows and all(splits_binary_inputs(e) for e in ensembles) else "thresholds"
    return None if encoding == "binary" else splits()
