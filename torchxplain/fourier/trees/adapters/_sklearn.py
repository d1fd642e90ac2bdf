"""scikit-learn adapter: decision trees, random forests, extra trees and gradient boosting."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = (
    "sklearn DecisionTreeRegressor/Classifier, ExtraTreeRegressor/Classifier, "
    "RandomForestRegressor/Classifier, ExtraTreesRegressor/Classifier, GradientBoostingRegressor/Classifier"
)


def _forests() -> tuple[type, ...]:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )

    return (RandomForestRegressor, RandomForestClassifier, ExtraTreesRegressor, ExtraTreesClassifier)


def _boosters() -> tuple[type, ...]:
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

    return (GradientBoostingRegressor, GradientBoostingClassifier)


def matches(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn tree model this adapter reads."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    return isinstance(model, (DecisionTreeRegressor, DecisionTreeClassifier, *_forests(), *_boosters()))


def check_fitted(model: Any) -> None:
    """Raise a ``ValueError`` naming the fix when a scikit-learn estimator is not fitted."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
    except NotFittedError as err:
        raise ValueError(f"{type(model).__name__} is not fitted; call .fit() first") from err


def feature_names(model: Any) -> tuple[str, ...] | None:
    """The column names a scikit-learn estimator saw at fit time (``feature_names_in_``), if any."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else tuple(str(c) for c in names)


def _tree_arrays(tree: Any, values: np.ndarray) -> dict[str, np.ndarray]:
    t = tree.tree_
    missing_left = getattr(t, "missing_go_to_left", None)
    nan_right = np.zeros(t.node_count, dtype=bool) if missing_left is None else ~np.asarray(missing_left, dtype=bool)
    return {
        "left": t.children_left,
        "right": t.children_right,
        "feature": t.feature,
        "threshold": t.threshold,
        "nan_right": nan_right,
        "zero_is_missing": np.zeros(t.node_count, dtype=bool),
        "value": values,
    }


def _leaf_outputs(tree: Any, column: int, classifier: bool) -> np.ndarray:
    value = np.asarray(tree.tree_.value, dtype=np.float64)
    if classifier:  # predict_proba normalises each node's class weights (counts before sklearn 1.4)
        total = value[:, 0, :].sum(axis=1)
        return value[:, 0, column] / np.where(total > 0, total, 1.0)
    return value[:, column, 0]


def _boosting(model: Any, target: int | None, meta: dict[str, Any]) -> list[TreeEnsemble]:
    from sklearn.base import is_classifier
    from sklearn.dummy import DummyClassifier, DummyRegressor

    name = type(model).__name__
    if not (isinstance(model.init_, (DummyClassifier, DummyRegressor)) or model.init_ == "zero"):
        raise ValueError(
            f"{name} uses a custom init estimator {type(model.init_).__name__}, whose output is not a "
            "tree; only the default (prior) or init='zero' is supported"
        )
    stages = model.estimators_
    classifier = is_classifier(model)
    n = len(model.classes_) if classifier else stages.shape[1]
    kind: OutputKind = "margin" if classifier else "outputs"
    raw_name = "decision_function" if classifier else "predict"
    scale = ("log-odds" if n == 2 else "softmax logit") if classifier else "output units"
    origin = np.zeros((1, int(model.n_features_in_)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # feature-name warnings for models fitted on frames
        raw = model.decision_function(origin) if classifier else model.predict(origin)
    raw = np.asarray(raw, dtype=np.float64).reshape(-1)
    origin32 = origin.astype(np.float32)
    out = []
    for choice in choose_outputs(target, n, kind, name):
        column = stages[:, choice.column]
        sign = -1.0 if choice.negate else 1.0
        trees = [_tree_arrays(t, _leaf_outputs(t, 0, False)) for t in column]
        # the low-level tree's predict skips the estimator's input validation (most of the call on 100 stages)
        stage_sum = sum(float(t.tree_.predict(origin32)[0, 0]) for t in column)
        offset = sign * float(raw[choice.column] - model.learning_rate * stage_sum)
        output = describe_output(choice, kind, raw_name, scale, n, getattr(model, "classes_", None))
        out.append(
            concat_trees(
                trees,
                [sign * float(model.learning_rate)] * len(trees),
                offset=offset,
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                **meta,
            )
        )
    return out


def parse(model: Any, target: int | None, frame: Any = None) -> list[TreeEnsemble]:
    """Read a fitted scikit-learn tree model into one :class:`TreeEnsemble` per explained output.

    Outputs (see :mod:`~torchxplain.fourier.trees.adapters._targets` for the default): regressors explain
    ``predict``; decision-tree, forest and extra-trees classifiers explain ``predict_proba[:, c]``;
    gradient-boosting classifiers explain the raw score ``decision_function`` (log-odds when binary).

    ``frame`` is unused (the model records how its inputs are coded).
    """
    from sklearn.base import is_classifier

    check_fitted(model)
    name = type(model).__name__
    meta: dict[str, Any] = {
        "n_features": int(model.n_features_in_),
        "strict": False,
        "input_dtype": np.dtype(np.float32),
        "feature_names": feature_names(model),
    }
    if isinstance(model, _boosters()):
        return _boosting(model, target, meta)
    forest = isinstance(model, _forests())
    estimators = list(model.estimators_) if forest else [model]
    classifier = is_classifier(model)
    if classifier and int(model.n_outputs_) > 1:
        raise ValueError(f"multi-output classifier {name} is not supported; fit one per output")
    n = len(model.classes_) if classifier else int(model.n_outputs_)
    kind: OutputKind = "proba" if classifier else "outputs"
    raw_name, scale = ("predict_proba", "probability") if classifier else ("predict", "output units")
    out = []
    for choice in choose_outputs(target, n, kind, name):
        output = describe_output(choice, kind, raw_name, scale, n, getattr(model, "classes_", None))
        trees = [_tree_arrays(t, _leaf_outputs(t, choice.column, classifier)) for t in estimators]
        out.append(
            concat_trees(
                trees,
                [1.0 / len(trees)] * len(trees),
                offset=0.0,
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                **meta,
            )
        )
    return out


__all__ = ["SUPPORTED", "check_fitted", "feature_names", "matches", "parse"]
