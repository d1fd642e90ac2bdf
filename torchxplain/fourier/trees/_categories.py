"""A DataFrame's ``category`` columns as the category ids a tree model's categorical splits read.

Each library codes categories its own way; the adapter records the categories in id order where the model keeps
them (LightGBM's ``pandas_categorical``, XGBoost's saved categories, HistGradientBoosting's ordinal encoder), and
the DataFrame's own categories stand in where it does not (CatBoost, whose splits are probed per category, and
older XGBoost models, which read the frame's codes). A :class:`CategoryCodec` maps values to those ids — a value
the model never saw is a missing value for LightGBM and HistGradientBoosting (as their ``predict`` reads it) and is
refused for the others (XGBoost's ``predict`` refuses it too) — so values come back one per categorical column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from torch import Tensor

from torchxplain._core.inputs import is_dataframe
from torchxplain.fourier.trees.adapters._base import TreeEnsemble

Unseen = Literal["missing", "refuse"]


@dataclass(frozen=True)
class CategoryCodec:
    """How the rows a user passes become a tree model's inputs.

    Attributes:
        values: per coded column (its index), the categories in id order.
        unseen: what a value outside them is: ``"missing"`` (NaN, routed as the model routes a missing value) or
            ``"refuse"``.
        by_value: arrays hold category values too (the model maps them itself); otherwise only a DataFrame's
            ``category`` columns are mapped and an array holds ids.
        description: the model, for messages.
    """

    values: dict[int, tuple[object, ...]]
    unseen: Unseen
    by_value: bool
    description: str

    def encode(self, x: Any, name: str) -> Any:
        """``x`` with its coded columns replaced by float category ids (NaN for missing): a DataFrame's, or an
        array's when :attr:`by_value`; anything else is returned as it is.

        Raises:
            ValueError: a value outside the categories where the model refuses those.
        """
        import pandas as pd

        if is_dataframe(x):
            frame = x
        elif self.by_value and x is not None:
            array = x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x, dtype=np.float64)
            if array.ndim != 2:
                return x
            frame = pd.DataFrame(array)
        else:
            return x
        out = frame.copy()
        for column, values in self.values.items():
            if column >= frame.shape[1]:
                continue  # a width error is the boundary's to report
            label = frame.columns[column]
            given = frame.iloc[:, column]
            if not (self.by_value or isinstance(given.dtype, pd.CategoricalDtype)):
                continue
            codes = pd.Index(list(values)).get_indexer(given.astype(object)).astype(np.float64)
            unknown = (codes < 0) & given.notna().to_numpy()
            if unknown.any() and self.unseen == "refuse":
                bad = given[unknown].iloc[0]
                raise ValueError(
                    f"{name} column {str(label)[:60]!r} holds {str(bad)[:40]!r}, a category {self.description} was "
                    f"not fitted on (it knows {len(values)}: {', '.join(map(str, values[:6]))}"
                    f"{', ...' if len(values) > 6 else ''}); its predict refuses it too"
                )
            out[label] = np.where(codes < 0, np.nan, codes)
        return out if is_dataframe(x) else out.to_numpy(dtype=np.float64)


def category_codec(ensembles: list[TreeEnsemble], frame: Any, unseen: Unseen) -> CategoryCodec | None:
    """The codec of a model whose parsed outputs are ``ensembles``, for rows like ``frame``.

    Returns ``None`` when there is nothing to map (no ``category`` column, and a model that reads ids).

    Raises:
        ValueError: a ``category`` column the model splits by threshold.
    """
    import pandas as pd

    first = ensembles[0]
    by_category, by_threshold = set(), set()
    for e in ensembles:
        inner = e.left >= 0
        categorical = np.zeros(len(inner), dtype=bool) if e.category_split is None else e.category_split >= 0
        by_category |= set(e.feature[inner & categorical].tolist())
        by_threshold |= set(e.feature[inner & ~categorical].tolist())
        by_threshold |= {int(f) for b in e.oblivious for f in b.feature.reshape(-1)}
    recorded = first.categories or {}
    values: dict[int, tuple[object, ...]] = {}
    if first.categories_by_value:
        values = {f: recorded[f] for f in sorted(by_category) if f in recorded}
    if is_dataframe(frame):
        for column, dtype in enumerate(frame.dtypes):
            if not isinstance(dtype, pd.CategoricalDtype):
                continue
            if column in by_threshold:
                raise ValueError(
                    f"background column {str(frame.columns[column])[:60]!r} has dtype category, but "
                    f"{first.description} splits it by threshold (it was fitted on numbers there): pass those numbers"
                )
            known = recorded.get(column)
            values[column] = known if known is not None else tuple(frame.iloc[:, column].cat.categories)
    return CategoryCodec(values, unseen, first.categories_by_value, first.description) if values else None
