"""scikit-learn adapter: decision trees, random forests, extra trees and gradient boosting."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from torchxplain.fourier.adapters.base import TreeEnsemble, check_target, concat_trees

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


def _check_fitted(model: Any) -> None:
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
    except NotFittedError as err:
        raise ValueError(f"{type(model).__name__} is not fitted; call .fit() first") from err


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


def _leaf_outputs(tree: Any, target: int, classifier: bool) -> np.ndarray:
    value = np.asarray(tree.tree_.value, dtype=np.float64)
    if classifier:  # predict_proba normalises each node's class weights (counts before sklearn 1.4)
        total = value[:, 0, :].sum(axis=1)
        return value[:, 0, target] / np.where(total > 0, total, 1.0)
    return value[:, target, 0]


def parse(model: Any, target: int | None) -> TreeEnsemble:
    """Read a fitted scikit-learn tree model into a :class:`TreeEnsemble` for output ``target``.

    Outputs: regressors explain ``predict`` (``target`` picks the output of a multi-output regressor);
    decision-tree, forest and extra-trees classifiers explain ``predict_proba[:, target]``;
    gradient-boosting classifiers explain the raw score ``decision_function`` (log-odds; ``target`` picks
    the class when there are more than two).
    """
    from sklearn.base import is_classifier
    from sklearn.dummy import DummyClassifier, DummyRegressor

    _check_fitted(model)
    name = type(model).__name__
    n_features = int(model.n_features_in_)
    meta = {"n_features": n_features, "strict": False, "input_dtype": np.dtype(np.float32)}
    if isinstance(model, _boosters()):
        stages = model.estimators_
        n_out = stages.shape[1]
        out = check_target(target, n_out, f"{name} (raw decision_function)")
        if not (isinstance(model.init_, (DummyClassifier, DummyRegressor)) or model.init_ == "zero"):
            raise ValueError(
                f"{name} uses a custom init estimator {type(model.init_).__name__}, whose output is not a "
                "tree; only the default (prior) or init='zero' is supported"
            )
        trees = [_tree_arrays(t, _leaf_outputs(t, 0, False)) for t in stages[:, out]]
        origin = np.zeros((1, n_features))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # feature-name warnings for models fitted on frames
            raw = model.decision_function(origin) if is_classifier(model) else model.predict(origin)
            stage_sum = sum(t.predict(origin.astype(np.float32))[0] for t in stages[:, out])
        raw = np.asarray(raw, dtype=np.float64).reshape(1, -1)[0, out]
        offset = float(raw - model.learning_rate * stage_sum)
        description = f"{name} (raw decision_function" + (f", class {out})" if n_out > 1 else ")")
        return concat_trees(
            trees, [float(model.learning_rate)] * len(trees), offset=offset, description=description, **meta
        )
    estimators = list(model.estimators_) if isinstance(model, _forests()) else [model]
    classifier = is_classifier(model)
    if classifier:
        if int(model.n_outputs_) > 1:
            raise ValueError(f"multi-output classifier {name} is not supported; fit one per output")
        n_out = len(model.classes_)
        out = check_target(target, n_out, f"{name} (predict_proba)")
        description = f"{name} (predict_proba[:, {out}])"
    else:
        n_out = int(model.n_outputs_)
        out = check_target(target, n_out, f"{name} (predict)")
        description = f"{name} (predict" + (f"[:, {out}])" if n_out > 1 else ")")
    trees = [_tree_arrays(t, _leaf_outputs(t, out, classifier)) for t in estimators]
    return concat_trees(trees, [1.0 / len(trees)] * len(trees), offset=0.0, description=description, **meta)
