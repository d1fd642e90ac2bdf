"""LightGBM adapter: ``Booster`` and the scikit-learn wrappers (``LGBMRegressor``, ``LGBMClassifier``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = "lightgbm Booster, LGBMRegressor, LGBMClassifier (numerical and categorical splits, constant leaves)"


def matches(model: Any) -> bool:
    """Whether ``model`` is a LightGBM booster or sklearn wrapper (False if lightgbm is not installed)."""
    try:
        import lightgbm
    except ImportError:
        return False
    return isinstance(model, (lightgbm.Booster, lightgbm.LGBMModel))


def _model_text(model: Any) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The header and the trees of ``model_to_string()`` (LightGBM's own text format, as ``key=value`` lines; up to
    the best iteration when early stopping recorded one, as ``predict`` uses)."""
    header: dict[str, str] = {}
    trees: list[dict[str, str]] = []
    current = header
    for line in model.model_to_string().split("\n"):
        if line.startswith("Tree="):
            current = {}
            trees.append(current)
        elif line.startswith("end of trees"):
            break
        elif line:
            key, _, value = line.partition("=")  # a bare line is a flag (average_output, the rf mode)
            current[key] = value
    return header, trees


def _tree_arrays(tree: dict[str, str], name: str) -> dict[str, np.ndarray]:
    """Node arrays of one tree of the text format: internal nodes ``0..I-1``, then leaf ``j`` at ``I + j`` (a
    child ``c < 0`` is leaf ``~c``)."""
    if tree.get("is_linear", "0") != "0":
        raise ValueError(f"{name} uses linear trees (linear_tree=True), which are not supported")
    leaf_value = np.array(tree["leaf_value"].split(), dtype=np.float64)
    if len(leaf_value) == 1 or "split_feature" not in tree:  # a tree of one leaf
        none, empty = np.array([-1]), np.zeros(1, dtype=bool)
        arrays = {"left": none, "right": none, "feature": none, "threshold": np.zeros(1), "value": leaf_value[:1]}
        return {**arrays, "nan_right": empty, "zero_is_missing": empty}
    decision = np.array(tree["decision_type"].split(), dtype=np.int64)
    internal = len(decision)
    threshold = np.array(tree["threshold"].split(), dtype=np.float64)
    children = [np.array(tree[key].split(), dtype=np.int64) for key in ("left_child", "right_child")]
    left, right = (np.where(c >= 0, c, internal + ~c) for c in children)
    missing = (decision >> 2) & 3  # 0: None (NaN is read as 0 and compared), 1: Zero (0 and NaN), 2: NaN
    default_left = (decision & 2) > 0
    nan_right = np.where(missing == 0, threshold < 0.0, ~default_left)
    pad = np.zeros(len(leaf_value), dtype=bool)
    categorical = (decision & 1) > 0
    extra = {}
    if categorical.any():  # a categorical split sends the categories of its bitset left, every other id right
        nan_right = np.where(categorical, True, nan_right)  # NaN and negative values go right
        missing = np.where(categorical, 0, missing)
        extra = _category_splits(tree, threshold, categorical, len(leaf_value))
    return {
        **extra,
        "left": np.concatenate([left, np.full(len(leaf_value), -1)]),
        "right": np.concatenate([right, np.full(len(leaf_value), -1)]),
        "feature": np.concatenate(
            [np.array(tree["split_feature"].split(), dtype=np.int64), np.full(len(leaf_value), -1)]
        ),
        "threshold": np.concatenate([threshold, np.zeros(len(leaf_value))]),
        "nan_right": np.concatenate([nan_right, pad]),
        "zero_is_missing": np.concatenate([missing == 1, pad]),
        "value": np.concatenate([np.zeros(internal), leaf_value]),
    }


def _category_splits(tree: dict[str, str], threshold: np.ndarray, categorical: np.ndarray, leaves: int) -> dict:
    """``category`` (one row per categorical split, ``-1`` elsewhere, leaves included) and ``category_sets``: which
    ids go right (not in the split's bitset of 32-bit words), the last column (unseen ids) right."""
    bounds = np.array(tree["cat_boundaries"].split(), dtype=np.int64)
    words = np.array(tree["cat_threshold"].split(), dtype=np.uint64)
    index = threshold[categorical].astype(np.int64)
    width = 32 * int(np.diff(bounds).max())
    sets = np.ones((len(index), width + 1), dtype=bool)
    for row, i in enumerate(index):
        chunk = words[bounds[i] : bounds[i + 1]]
        bits = ((chunk[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool).reshape(-1)
        sets[row, : len(bits)] = ~bits
    category = np.full(len(threshold) + leaves, -1, dtype=np.int64)
    category[np.flatnonzero(categorical)] = np.arange(len(index))
    return {"category": category, "category_sets": sets}


def _categories(header: dict[str, str], model: Any) -> dict[int, tuple[object, ...]] | None:
    """The categories of each categorical feature in id order: LightGBM's ``pandas_categorical`` (recorded when
    the model was fitted on a DataFrame) lists them for its category columns in column order."""
    recorded = getattr(model, "pandas_categorical", None)
    infos = header.get("feature_infos", "").split()
    features = [i for i, info in enumerate(infos) if info != "none" and not info.startswith("[")]
    if not recorded or len(recorded) != len(features):
        return None
    return {f: tuple(values) for f, values in zip(features, recorded)}


def _names(header: dict[str, str]) -> tuple[str, ...] | None:
    names = header.get("feature_names", "").split()
    if not names or names == [f"Column_{i}" for i in range(len(names))]:  # LightGBM's names for arrays
        return None
    return tuple(names)


def parse(model: Any, target: int | None, frame: Any = None) -> list[TreeEnsemble]:
    """Read a LightGBM model into one :class:`TreeEnsemble` per explained output, each the raw score
    ``predict(raw_score=True)`` of one class (see :mod:`~torchxplain.fourier.trees.adapters._targets`), from the
    model's text form (``model_to_string``: like ``predict``, it stops at the best iteration when early stopping
    recorded one). For
    ``boosting_type='rf'`` the score is the average over the trees, the margin behind ``predict`` (LightGBM's
    ``predict(raw_score=True)`` returns the un-averaged sum there).

    ``frame`` is unused (the model records how its inputs are coded).
    """
    import lightgbm

    name = type(model).__name__
    if isinstance(model, lightgbm.LGBMModel):
        if not getattr(model, "fitted_", False):
            raise ValueError(f"{name} is not fitted; call .fit() before extracting its spectrum")
        model = model.booster_
    header, tree_texts = _model_text(model)
    per_iteration = int(header["num_tree_per_iteration"])
    objective = header.get("objective", "").split(" ")[0]
    classifier = objective in ("binary", "multiclass", "multiclassova")
    kind: OutputKind = "margin" if classifier else "outputs"
    n = max(per_iteration, 2) if classifier else per_iteration
    scale = ("log-odds" if n == 2 else "softmax logit") if classifier else "output units"
    weight = 1.0 / max(len(tree_texts) // per_iteration, 1) if "average_output" in header else 1.0
    out = []
    for choice in choose_outputs(target, n, kind, name):
        sign = -1.0 if choice.negate else 1.0
        trees = [_tree_arrays(t, name) for i, t in enumerate(tree_texts) if i % per_iteration == choice.column]
        output = describe_output(choice, kind, "predict(raw_score=True)", scale, n)
        out.append(
            concat_trees(
                trees,
                [sign * weight] * len(trees),
                offset=0.0,
                n_features=int(header["max_feature_idx"]) + 1,
                strict=False,
                input_dtype=np.dtype(np.float64),
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                feature_names=_names(header),
                names="lightgbm",
                categories=_categories(header, model),
                unseen_category="missing",
            )
        )
    return out
