"""CatBoost adapter: ``CatBoostRegressor``, ``CatBoostClassifier`` and ``CatBoost`` on float features.

The model is read from its JSON export. Symmetric (oblivious) trees — CatBoost's default — become
:class:`ObliviousBlock` rows: leaf ``Σ_j 2^j [x_{f_j} > b_j]`` holds the value, so each tree's spectrum is one
Walsh–Hadamard transform of its ``2^depth`` leaves. ``Depthwise``/``Lossguide`` trees become ordinary node
tables (``right`` is the branch where ``x > border``). Features are compared in float32; a NaN goes right
only under ``nan_mode='Max'`` (``nan_value_treatment`` ``AsTrue``), else it counts as smaller than every
border. The explained output is ``predict(prediction_type="RawFormulaVal")``: ``scale · Σ trees + bias``.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import ObliviousBlock, TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = "catboost CatBoostRegressor, CatBoostClassifier, CatBoost (float features; symmetric or other trees)"
_CLASSIFICATION = {"Logloss", "CrossEntropy", "MultiClass", "MultiClassOneVsAll"}


def matches(model: Any) -> bool:
    """Whether ``model`` is a CatBoost model (False if catboost is not installed)."""
    try:
        import catboost
    except ImportError:
        return False
    return isinstance(model, catboost.CatBoost)


def _names(model: Any) -> tuple[str, ...] | None:
    names = [str(c) for c in (getattr(model, "feature_names_", None) or [])]
    if not names or names == [str(i) for i in range(len(names))]:  # CatBoost's names for arrays
        return None
    return tuple(names)


def _check_float_features(model: Any, name: str) -> None:
    names = [str(c) for c in (getattr(model, "feature_names_", None) or [])]
    for kind, getter in (
        ("categorical", "get_cat_feature_indices"),
        ("text", "get_text_feature_indices"),
        ("embedding", "get_embedding_feature_indices"),
    ):
        indices = list(getattr(model, getter, lambda: [])())
        if indices:
            index = int(indices[0])
            label = f"{names[index]!r} (column {index})" if index < len(names) else f"column {index}"
            raise ValueError(
                f"{name} uses {kind} feature {label} (and {len(indices)} {kind} feature(s) in all); its splits "
                f"are CatBoost's own statistics, not thresholds, so the spectrum cannot represent them. One-hot "
                f"encode the {kind} features yourself and refit with float features only (no cat_features)"
            )


def _dump(model: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path) as handle:
            return json.load(handle)


def _split(split: dict[str, Any], float_features: list[dict[str, Any]], name: str) -> tuple[int, float, bool]:
    """``(input column, float32 border, NaN goes right)`` of one float split."""
    if split.get("split_type") != "FloatFeature":
        raise ValueError(
            f"{name} has a {split.get('split_type')!r} split (a categorical or text statistic); only float "
            "features are supported: one-hot encode categorical features and refit"
        )
    info = float_features[int(split["float_feature_index"])]
    border = float(np.float32(split["border"]))
    return int(info["flat_feature_index"]), border, info.get("nan_value_treatment") == "AsTrue"


def _oblivious(trees: list[dict[str, Any]], float_features: list[dict[str, Any]], dim: int, name: str) -> list:
    """Group symmetric trees by depth: ``[(depth, features (T,d), borders, nan_right, leaves (T, 2^d, dim))]``."""
    by_depth: dict[int, list[tuple[list[tuple[int, float, bool]], np.ndarray]]] = {}
    for tree in trees:
        splits = [_split(s, float_features, name) for s in tree["splits"]]
        leaves = np.asarray(tree["leaf_values"], dtype=np.float64).reshape(2 ** len(splits), dim)
        by_depth.setdefault(len(splits), []).append((splits, leaves))
    groups = []
    for depth, items in sorted(by_depth.items()):
        table = np.asarray([splits for splits, _ in items], dtype=np.float64).reshape(len(items), depth, 3)
        groups.append((depth, table, np.stack([leaves for _, leaves in items])))
    return groups


def _node_table(tree: dict[str, Any], float_features: list[dict[str, Any]], dim: int, name: str) -> dict:
    """Pre-order node arrays of one non-symmetric tree; ``value`` is ``(N, dim)``."""
    left: list[int] = []
    right: list[int] = []
    split_rows: list[tuple[int, float, bool]] = []
    values: list[np.ndarray] = []
    stack: list[tuple[dict[str, Any], int, bool]] = [(tree, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        index = len(left)
        left.append(-1)
        right.append(-1)
        if parent >= 0:
            (right if is_right else left)[parent] = index
        if "split" not in node:
            split_rows.append((-1, 0.0, False))
            values.append(np.asarray(node["value"], dtype=np.float64).reshape(dim))
            continue
        split_rows.append(_split(node["split"], float_features, name))
        values.append(np.zeros(dim))
        stack.append((node["right"], index, True))
        stack.append((node["left"], index, False))
    rows = np.asarray(split_rows, dtype=np.float64).reshape(-1, 3)
    return {
        "left": np.asarray(left),
        "right": np.asarray(right),
        "feature": rows[:, 0].astype(np.int64),
        "threshold": rows[:, 1],
        "nan_right": rows[:, 2] > 0,
        "zero_is_missing": np.zeros(len(left), dtype=bool),
        "value": np.stack(values),
    }


def parse(model: Any, target: int | None) -> list[TreeEnsemble]:
    """Read a fitted CatBoost model into one :class:`TreeEnsemble` per explained output of
    ``predict(prediction_type="RawFormulaVal")`` (log-odds for binary classifiers, the class's raw score for
    multiclass ones; see :mod:`~torchxplain.fourier.trees.adapters._targets` for the default classes).

    Raises:
        ValueError: not fitted, or the model uses categorical, text or embedding features (named, with the
            fix: one-hot encode them and refit on float features).
    """
    name = type(model).__name__
    if not model.is_fitted():
        raise ValueError(f"{name} is not fitted; call .fit() first")
    _check_float_features(model, name)
    dump = _dump(model)
    float_features = dump["features_info"].get("float_features", [])
    scale, bias = dump["scale_and_bias"]
    bias = np.asarray(bias, dtype=np.float64).reshape(-1)
    dim = max(len(bias), 1)
    loss = str(dump["model_info"].get("params", {}).get("loss_function", {}).get("type", ""))
    classifier = loss in _CLASSIFICATION
    kind: OutputKind = "margin" if classifier else "outputs"
    n = max(dim, 2) if classifier else dim
    output_scale = ("log-odds" if n == 2 else "softmax logit") if classifier else "output units"
    blocks = _oblivious(dump.get("oblivious_trees", []), float_features, dim, name)
    tables = [_node_table(t, float_features, dim, name) for t in dump.get("trees", [])]
    n_features = len(getattr(model, "feature_names_", None) or []) or max(
        [0, *(int(f["flat_feature_index"]) + 1 for f in float_features)]
    )
    out = []
    for choice in choose_outputs(target, n, kind, name):
        sign = (-1.0 if choice.negate else 1.0) * float(scale)
        output = describe_output(
            choice, kind, "predict(prediction_type='RawFormulaVal')", output_scale, n, getattr(model, "classes_", None)
        )
        oblivious = tuple(
            ObliviousBlock(
                feature=table[:, :, 0].astype(np.int64),
                threshold=table[:, :, 1],
                nan_right=table[:, :, 2] > 0,
                zero_is_missing=np.zeros(table.shape[:2], dtype=bool),
                value=sign * leaves[:, :, choice.column],
            )
            for _, table, leaves in blocks
        )
        trees = [{**t, "value": t["value"][:, choice.column]} for t in tables]
        out.append(
            concat_trees(
                trees,
                [sign] * len(trees),
                offset=(-1.0 if choice.negate else 1.0) * float(bias[choice.column if len(bias) > 1 else 0]),
                n_features=n_features,
                strict=False,
                input_dtype=np.dtype(np.float32),
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                feature_names=_names(model),
                oblivious=oblivious,
            )
        )
    return out
