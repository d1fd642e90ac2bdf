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

SUPPORTED = "sklearn HistGradientBoostingRegressor/Classifier (numerical features)"


def matches(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn histogram gradient-boosting model."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    return isinstance(model, (HistGradientBoostingRegressor, HistGradientBoostingClassifier))


def _check_numerical(model: Any, name: str) -> None:
    categorical = getattr(model, "is_categorical_", None)
    if categorical is not None and bool(np.any(categorical)):
        index = int(np.flatnonzero(categorical)[0])
        names = feature_names(model)
        column = f"{names[index]!r} (column {index})" if names else f"column {index}"
        raise ValueError(
            f"{name} treats feature {column} as categorical (categorical_features), whose bitset splits have no "
            "threshold; refit it with that feature one-hot encoded and categorical_features=None"
        )


def _tree_arrays(predictor: Any) -> dict[str, np.ndarray]:
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    return {
        "left": np.where(leaf, -1, nodes["left"].astype(np.int64)),
        "right": np.where(leaf, -1, nodes["right"].astype(np.int64)),
        "feature": nodes["feature_idx"].astype(np.int64),
        "threshold": nodes["num_threshold"].astype(np.float64),
        "nan_right": ~nodes["missing_go_to_left"].astype(bool),
        "zero_is_missing": np.zeros(len(nodes), dtype=bool),
        "value": nodes["value"].astype(np.float64),
    }


def parse(model: Any, target: int | None) -> list[TreeEnsemble]:
    """Read a fitted histogram gradient-boosting model into one :class:`TreeEnsemble` per explained output.

    Regressors explain ``predict`` (for the default squared error; other losses explain the raw prediction
    before the inverse link); classifiers explain ``decision_function`` (log-odds when binary, the class's raw
    score otherwise; see :mod:`~torchxplain.fourier.trees.adapters._targets` for the default classes).

    Raises:
        ValueError: the model is not fitted or uses categorical features.
    """
    from sklearn.base import is_classifier

    check_fitted(model)
    name = type(model).__name__
    _check_numerical(model, name)
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
        trees = [_tree_arrays(iteration[choice.column]) for iteration in model._predictors]
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
            )
        )
    return out
