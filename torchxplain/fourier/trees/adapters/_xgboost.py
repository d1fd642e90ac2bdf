"""XGBoost adapter: ``Booster`` and the scikit-learn wrappers (``XGBRegressor``, ``XGBClassifier``, ...)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = "xgboost Booster (gbtree, dart), XGBRegressor, XGBClassifier, XGBRFRegressor, XGBRFClassifier, XGBRanker"

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
    "rank:pairwise",  # ranking objectives: predict is the margin itself
    "rank:ndcg",
    "rank:map",
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


def _scale(objective: str) -> str:
    if objective in _LOGIT or objective == "binary:logitraw":
        return "log-odds"
    if objective.startswith("multi:"):
        return "softmax logit"
    if objective in _LOG:
        return "log of the mean"
    return "output units"


def _tree_arrays(tree: dict[str, Any], name: str) -> dict[str, np.ndarray]:
    if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise ValueError(f"{name} has multi-output (vector-leaf) trees, which are not supported")
    cond = _floats32(tree["split_conditions"])
    categorical = np.asarray(tree["split_type"], dtype=np.int64) != 0
    extra = _category_splits(tree, categorical) if categorical.any() else {}
    return {
        **extra,
        "left": tree["left_children"],
        "right": tree["right_children"],
        "feature": tree["split_indices"],
        "threshold": cond,
        "nan_right": ~np.asarray(tree["default_left"], dtype=bool),
        "zero_is_missing": np.zeros(len(cond), dtype=bool),
        "value": cond,
    }


def _not_fitted() -> type[Exception]:
    """scikit-learn's ``NotFittedError`` (what an unfitted wrapper raises since xgboost 3), or ``XGBoostError``
    when scikit-learn is not installed (xgboost 2 raised that)."""
    import xgboost

    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:  # pragma: no cover - the wrappers need scikit-learn
        return xgboost.core.XGBoostError
    return NotFittedError


def _category_splits(tree: dict[str, Any], categorical: np.ndarray) -> dict[str, np.ndarray]:
    """``category`` and ``category_sets`` of a tree's categorical splits: the listed categories go right, every
    other id (and an id past the list) left; a missing value goes the default way."""
    nodes = np.asarray(tree["categories_nodes"], dtype=np.int64)
    segments = np.asarray(tree["categories_segments"], dtype=np.int64)
    sizes = np.asarray(tree["categories_sizes"], dtype=np.int64)
    listed = np.asarray(tree["categories"], dtype=np.int64)
    width = int(listed.max()) + 1 if listed.size else 1
    sets = np.zeros((len(nodes), width + 1), dtype=bool)
    row = np.repeat(np.arange(len(nodes)), sizes)
    members = listed[np.concatenate([np.arange(a, a + n) for a, n in zip(segments, sizes)] or [np.zeros(0, int)])]
    sets[row, members] = True
    category = np.full(len(categorical), -1, dtype=np.int64)
    category[nodes] = np.arange(len(nodes))
    return {"category": category, "category_sets": sets}


def _categories(gbm: dict[str, Any]) -> dict[int, tuple[object, ...]] | None:
    """The categories XGBoost (3.1 and later) saved with the model, per categorical feature in id order."""
    cats = gbm["model"].get("cats")
    if not cats:
        return None
    out: dict[int, tuple[object, ...]] = {}
    for feature, enc in enumerate(cats.get("enc", [])):
        if "offsets" in enc and enc["offsets"]:
            raw = bytes(enc["values"])
            bounds = enc["offsets"]
            out[feature] = tuple(raw[a:b].decode() for a, b in zip(bounds[:-1], bounds[1:]))
        elif enc.get("values"):
            out[feature] = tuple(enc["values"])
    return out or None


def parse(model: Any, target: int | None, frame: Any = None) -> list[TreeEnsemble]:
    """Read an XGBoost tree model into one :class:`TreeEnsemble` per explained output, each the raw margin
    ``predict(output_margin=True)`` of one output (class; see :mod:`~torchxplain.fourier.trees.adapters._targets`).

    A scikit-learn wrapper fitted with early stopping keeps the trees up to ``best_iteration``, as its
    ``predict`` does, and reads entries equal to its ``missing=`` value as missing, as its ``predict`` does (a raw
    ``Booster`` knows no sentinel: its ``DMatrix`` did). A ``dart`` booster predicts with every tree scaled by its
    weight (``weight_drop``), as ``predict`` does.

    ``frame`` is unused (the model records how its inputs are coded).
    """
    import xgboost

    wrapper = isinstance(model, xgboost.XGBModel)
    try:
        booster = model.get_booster() if wrapper else model
        saved = booster.save_raw("json")  # an empty Booster() fails here ("0 feature is supplied")
    except (xgboost.core.XGBoostError, _not_fitted()) as err:  # xgboost 3 raises scikit-learn's NotFittedError
        raise ValueError(f"{type(model).__name__} is not fitted; call .fit() first") from err
    learner = json.loads(saved)["learner"]
    gbm = learner["gradient_booster"]
    weight_drop = None
    if gbm["name"] == "dart":
        weight_drop = np.asarray(gbm["weight_drop"], dtype=np.float64)
        gbm = gbm["gbtree"]
    if gbm["name"] != "gbtree":
        raise ValueError(f"XGBoost booster {gbm['name']!r} is not supported; booster='gbtree' and 'dart' are")
    name = type(model).__name__
    params = learner["learner_model_param"]
    objective = learner["objective"]["name"]
    n_class = int(params["num_class"])
    binary = n_class > 1 or objective.startswith("binary:")
    kind: OutputKind = "margin" if binary else "outputs"
    n = max(n_class, 2) if binary else max(int(params.get("num_target", 1)), 1)
    base = [float(v) for v in params["base_score"].strip("[]").split(",")]
    tree_model = gbm["model"]
    n_trees = len(tree_model["trees"])
    if wrapper:
        try:
            n_trees = int(tree_model["iteration_indptr"][int(model.best_iteration) + 1])
        except AttributeError:
            pass  # no early stopping: all trees
    tree_info = np.asarray(tree_model["tree_info"][:n_trees])
    names = booster.feature_names
    out = []
    for choice in choose_outputs(target, n, kind, name):
        sign = -1.0 if choice.negate else 1.0
        column = choice.column
        offset = _margin(objective, np.float32(base[column if len(base) > 1 else 0]).item())
        chosen = np.flatnonzero(tree_info == column)
        trees = [_tree_arrays(tree_model["trees"][int(i)], name) for i in chosen]
        weights = np.ones(len(chosen)) if weight_drop is None else weight_drop[chosen]
        output = describe_output(choice, kind, "predict(output_margin=True)", _scale(objective), n)
        out.append(
            concat_trees(
                trees,
                [sign * float(w) for w in weights],
                offset=sign * offset,
                n_features=int(params["num_feature"]),
                strict=True,
                input_dtype=np.dtype(np.float32),
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                feature_names=None if names is None else tuple(str(c) for c in names),
                missing=_missing(model) if wrapper else float("nan"),
                categories=_categories(gbm),
            )
        )
    return out


def _missing(model: Any) -> float:
    """A scikit-learn wrapper's ``missing=`` value (NaN: only NaN is missing)."""
    value = getattr(model, "missing", float("nan"))
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{type(model).__name__} has missing={value!r}; expected a number or NaN")
    return float(value)
