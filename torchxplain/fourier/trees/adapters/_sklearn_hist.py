"""scikit-learn ``HistGradientBoostingRegressor``/``HistGradientBoostingClassifier`` adapter.

The fitted predictors (``model._predictors``: one list of ``TreePredictor`` per iteration, one predictor per
output) hold node arrays whose numerical splits send ``x <= num_threshold`` left in float64 (the bin edge the
model was trained on, mapped back to raw units), and a NaN to the side ``missing_go_to_left`` records (the
child with most samples when training saw no NaN). Leaf values already include the learning rate; the raw
prediction adds ``_baseline_prediction``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._sklearn import check_fitted, feature_names
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = "sklearn HistGradientBoostingRegressor/Classifier (numerical and categorical features)"


def matches(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn histogram gradient-boosting model."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    return isinstance(model, (HistGradientBoostingRegressor, HistGradientBoostingClassifier))


def _columns(model: Any) -> np.ndarray:
    """The input column of each feature the trees split (``feature_idx``): the model's preprocessor puts its
    categorical columns first (an ordinal encoder), then the numerical ones."""
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return np.arange(int(model.n_features_in_))
    order = []
    for name, _, columns in pre.transformers_:
        if name == "remainder":
            continue
        columns = np.asarray(columns)
        order.append(np.flatnonzero(columns) if columns.dtype == bool else columns.astype(np.int64))
    return np.concatenate(order).astype(np.int64)


def _categories(model: Any, columns: np.ndarray) -> dict[int, tuple[object, ...]] | None:
    """The ordinal encoder's categories per categorical input column, in id order."""
    pre = getattr(model, "_preprocessor", None)
    if pre is None or "encoder" not in pre.named_transformers_:
        return None
    encoder = pre.named_transformers_["encoder"]
    out = {}
    for f, values in enumerate(encoder.categories_):  # the encoder's columns come first
        listed = values.tolist()  # a missing value the encoder saw is listed last: it is no category (NaN stays NaN)
        out[int(columns[f])] = tuple(v for v in listed if v == v and v is not None)
    return out


def _tree_arrays(predictor: Any, columns: np.ndarray, known: tuple[np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    categorical = (
        nodes["is_categorical"].astype(bool) & ~leaf if "is_categorical" in nodes.dtype.names else leaf & False
    )
    extra = _category_splits(predictor, categorical, known) if categorical.any() else {}
    return {
        **extra,
        "left": np.where(leaf, -1, nodes["left"].astype(np.int64)),
        "right": np.where(leaf, -1, nodes["right"].astype(np.int64)),
        "feature": np.where(leaf, -1, columns[nodes["feature_idx"].astype(np.int64)]),
        "threshold": nodes["num_threshold"].astype(np.float64),
        "nan_right": ~nodes["missing_go_to_left"].astype(bool),
        "zero_is_missing": np.zeros(len(nodes), dtype=bool),
        "value": nodes["value"].astype(np.float64),
    }


def _bits(words: np.ndarray) -> np.ndarray:
    """``(..., 8)`` uint32 bitsets -> ``(..., 256)`` bool."""
    return (
        ((words[..., None].astype(np.uint64) >> np.arange(32, dtype=np.uint64)) & np.uint64(1))
        .astype(bool)
        .reshape(*words.shape[:-1], -1)
    )


def _category_splits(predictor: Any, categorical: np.ndarray, known: tuple[np.ndarray, np.ndarray]) -> dict:
    """``category`` and ``category_sets`` of a predictor's categorical splits: a category of the split's bitset goes
    left, another known one right, an unknown one (and an id past 255) the way of a missing value."""
    nodes = predictor.nodes
    index = np.flatnonzero(categorical)
    left = _bits(np.asarray(predictor.raw_left_cat_bitsets)[nodes["bitset_idx"][index].astype(np.int64)])
    known_bits, f_idx_map = known
    seen = _bits(np.asarray(known_bits)[np.asarray(f_idx_map)[nodes["feature_idx"][index].astype(np.int64)]])
    missing_right = ~nodes["missing_go_to_left"][index].astype(bool)
    sets = np.where(seen, ~left, missing_right[:, None])
    sets = np.concatenate([sets, missing_right[:, None]], axis=1)
    category = np.full(len(nodes), -1, dtype=np.int64)
    category[index] = np.arange(len(index))
    return {"category": category, "category_sets": sets}


def parse(model: Any, target: int | None, frame: Any = None) -> list[TreeEnsemble]:
    """Read a fitted histogram gradient-boosting model into one :class:`TreeEnsemble` per explained output.

    Regressors explain ``predict`` (for the default squared error; other losses explain the raw prediction
    before the inverse link); classifiers explain ``decision_function`` (log-odds when binary, the class's raw
    score otherwise; see :mod:`~torchxplain.fourier.trees.adapters._targets` for the default classes).

    Raises:
        ValueError: the model is not fitted.

    ``frame`` is unused (the model records how its inputs are coded).
    """
    from sklearn.base import is_classifier

    check_fitted(model)
    name = type(model).__name__
    columns = _columns(model)
    categorical = bool(np.any(getattr(model, "is_categorical_", None) is not None and model.is_categorical_))
    known = model._bin_mapper.make_known_categories_bitsets() if categorical else (np.zeros((0, 8)), np.zeros(0))
    classifier = is_classifier(model)
    per_iteration = int(model.n_trees_per_iteration_)
    n = len(model.classes_) if classifier else per_iteration
    kind: OutputKind = "margin" if classifier else "outputs"
    link = getattr(getattr(model, "_loss", None), "link", None)
    identity = type(link).__name__ == "IdentityLink"
    raw_name = "decision_function" if classifier else ("predict" if identity else "raw prediction (before the link)")
    scale = ("log-odds" if n == 2 else "softmax logit") if classifier else "output units"
    baseline = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    out = []
    for choice in choose_outputs(target, n, kind, name):
        sign = -1.0 if choice.negate else 1.0
        trees = [_tree_arrays(iteration[choice.column], columns, known) for iteration in model._predictors]
        output = describe_output(choice, kind, raw_name, scale, n, getattr(model, "classes_", None))
        out.append(
            concat_trees(
                trees,
                [sign] * len(trees),
                offset=sign * float(baseline[choice.column]),
                n_features=int(model.n_features_in_),
                strict=False,
                input_dtype=np.dtype(np.float64),
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                feature_names=feature_names(model),
                categories=_categories(model, columns) if categorical else None,
                unseen_category="missing",
                categories_by_value=True,
            )
        )
    return out
