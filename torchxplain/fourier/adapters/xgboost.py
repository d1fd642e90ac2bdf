"""XGBoost adapter: ``Booster`` and the scikit-learn wrappers (``XGBRegressor``, ``XGBClassifier``, ...)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from torchxplain.fourier.adapters.base import TreeEnsemble, check_target, concat_trees

SUPPORTED = "xgboost Booster (gbtree), XGBRegressor, XGBClassifier, XGBRFRegressor, XGBRFClassifier"

# How each objective turns the stored base_score into a margin (checked against predict(output_margin=True)).
_LOGIT = {"binary:logistic", "reg:logistic"}
_LOG = {"count:poisson", "reg:gamma", "reg:tweedie"}
_IDENTITY = {
    "reg:squarederror",
    "reg:squaredlogerror",
    "reg:pseudohubererror",
    "reg:absoluteerror",
    "reg:quantileerror",
    "binary:logitraw",
    "binary:hinge",
    "multi:softmax",
    "multi:softprob",
}


def matches(model: Any) -> bool:
    """Whether ``model`` is an XGBoost booster or scikit-learn wrapper (False if xgboost is not installed)."""
    try:
        import xgboost
    except ImportError:
        return False
    return isinstance(model, (xgboost.Booster, xgboost.XGBModel))


def _margin(objective: str, base_score: float) -> float:
    if objective in _LOGIT:
        return float(np.log(base_score) - np.log1p(-base_score))
    if objective in _LOG:
        return float(np.log(base_score))
    if objective in _IDENTITY:
        return base_score
    raise ValueError(
        f"XGBoost objective {objective!r} is not supported (its base score link is unknown); "
        f"supported objectives: {sorted(_LOGIT | _LOG | _IDENTITY)}"
    )


def _floats32(values: list[Any]) -> np.ndarray:
    """XGBoost stores thresholds and leaves in float32: read them back exactly."""
    return np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float64)


def parse(model: Any, target: int | None) -> TreeEnsemble:
    """Read an XGBoost tree model into a :class:`TreeEnsemble` explaining the raw margin
    (``predict(output_margin=True)``); ``target`` picks the class or target of a multi-output model.

    A scikit-learn wrapper fitted with early stopping keeps the trees up to ``best_iteration``, as its
    ``predict`` does.
    """
    import xgboost

    wrapper = isinstance(model, xgboost.XGBModel)
    try:
        booster = model.get_booster() if wrapper else model
    except xgboost.core.XGBoostError as err:
        raise ValueError(f"{type(model).__name__} is not fitted; call .fit() first") from err
    learner = json.loads(booster.save_raw("json"))["learner"]
    gbm = learner["gradient_booster"]
    if gbm["name"] != "gbtree":
        raise ValueError(f"XGBoost booster {gbm['name']!r} is not supported; only booster='gbtree' is")
    name = type(model).__name__
    params = learner["learner_model_param"]
    n_outputs = max(int(params["num_class"]), int(params.get("num_target", 1)), 1)
    out = check_target(target, n_outputs, f"{name} (raw margin)")
    base = [float(v) for v in params["base_score"].strip("[]").split(",")]
    offset = _margin(learner["objective"]["name"], np.float32(base[out if len(base) > 1 else 0]).item())
    tree_model = gbm["model"]
    n_trees = len(tree_model["trees"])
    if wrapper:
        try:
            n_trees = int(tree_model["iteration_indptr"][int(model.best_iteration) + 1])
        except AttributeError:
            pass  # no early stopping: all trees
    tree_info = np.asarray(tree_model["tree_info"][:n_trees])
    trees = []
    for index in np.flatnonzero(tree_info == out):
        tree = tree_model["trees"][int(index)]
        if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
            raise ValueError(f"{name} has multi-output (vector-leaf) trees, which are not supported")
        if any(int(t) != 0 for t in tree["split_type"]):
            raise ValueError(f"{name} has categorical splits, which are not supported; one-hot encode")
        cond = _floats32(tree["split_conditions"])
        trees.append(
            {
                "left": tree["left_children"],
                "right": tree["right_children"],
                "feature": tree["split_indices"],
                "threshold": cond,
                "nan_right": ~np.asarray(tree["default_left"], dtype=bool),
                "zero_is_missing": np.zeros(len(cond), dtype=bool),
                "value": cond,
            }
        )
    description = f"{name} (raw margin" + (f", output {out})" if n_outputs > 1 else ")")
    return concat_trees(
        trees,
        [1.0] * len(trees),
        offset=offset,
        n_features=int(params["num_feature"]),
        strict=True,
        input_dtype=np.dtype(np.float32),
        description=description,
    )
