"""CatBoost adapter: ``CatBoostRegressor``, ``CatBoostClassifier`` and ``CatBoost`` (float and categorical features).

The model is read from its JSON export. Symmetric (oblivious) trees — CatBoost's default — become
:class:`ObliviousBlock` rows: leaf ``Σ_j 2^j [x_{f_j} > b_j]`` holds the value, so each tree's spectrum is one
Walsh–Hadamard transform of its ``2^depth`` leaves. ``Depthwise``/``Lossguide`` trees become ordinary node
tables (``right`` is the branch where ``x > border``). Features are compared in float32; a NaN goes right
only under ``nan_mode='Max'`` (``nan_value_treatment`` ``AsTrue``), else it counts as smaller than every
border. The explained output is ``predict(prediction_type="RawFormulaVal")``: ``scale · Σ trees + bias``.

Categorical features (``cat_features``): CatBoost splits on statistics of a category (online CTRs) or on one
category (one-hot), computed from hashes the export does not invert. So each categorical split is read by probing:
the model's leaf indexes (``calc_leaf_indexes``) of a row whose categorical column takes each category of the
explained DataFrame's ``category`` dtype in turn (and one category the model never saw) give the side every
category takes at every split. A split that moves with two categorical columns (CTRs of feature combinations,
``max_ctr_complexity > 1``) is not a condition on one feature, and is refused. Such models become node tables
whose categorical splits are category sets (a missing category goes the way of an unseen one).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import ObliviousBlock, TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = (
    "catboost CatBoostRegressor, CatBoostClassifier, CatBoost (float features, and categorical ones of one column "
    "each; symmetric or other trees)"
)
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


def _probe(model: Any, dump: dict[str, Any], frame: Any, name: str) -> dict[tuple[int, int], tuple[int, np.ndarray]]:
    """The categorical splits of the symmetric trees: ``{(tree, level): (column, goes right (C + 1,))}`` over the
    column's categories in the frame's order, then an unseen category (module docstring).

    Raises:
        ValueError: no DataFrame with ``category`` columns to probe, or a split that moves with two columns.
    """
    import pandas as pd
    from catboost import Pool

    columns = [int(info["flat_feature_index"]) for info in dump["features_info"].get("categorical_features", [])]
    combined = [c for c in dump["features_info"].get("ctrs", []) if len(c.get("elements", [])) != 1]
    if combined:
        raise ValueError(
            f"{name} splits on CTRs of feature combinations, which are no condition on one feature; refit it with "
            "max_ctr_complexity=1 (a categorical feature's statistics then depend on that feature alone)"
        )
    if frame is None or not hasattr(frame, "iloc"):
        raise ValueError(
            f"{name} has categorical features, whose splits are read by probing the model with each category of "
            "a DataFrame: explain it with FourierShap.from_trees(model, background) on a background DataFrame whose "
            "categorical columns have dtype 'category' (a Fourier spectrum does not represent these splits)"
        )
    trees = dump.get("oblivious_trees", [])
    sides: dict[int, np.ndarray] = {}
    base = frame.iloc[[0]]
    for column in columns:
        series = frame.iloc[:, column]
        if not isinstance(series.dtype, pd.CategoricalDtype):
            raise ValueError(
                f"background column {str(frame.columns[column])[:60]!r} is a categorical feature of {name}: give it "
                "dtype 'category' (its categories are the values the explainer reads the splits for)"
            )
        known = list(series.cat.categories)
        unseen = _unseen(known)
        probe = base.loc[base.index.repeat(len(known) + 1)].reset_index(drop=True)
        probe[probe.columns[column]] = pd.Categorical(known + [unseen], categories=known + [unseen])
        leaf = np.asarray(model.calc_leaf_indexes(Pool(probe, cat_features=columns)), dtype=np.int64)
        sides[column] = leaf  # (C + 1, T)
    out: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
    for t, tree in enumerate(trees):
        for level, split in enumerate(tree["splits"]):
            if split.get("split_type") == "FloatFeature":
                continue
            moving = [c for c in columns if np.ptp((sides[c][:, t] >> level) & 1) > 0]
            if len(moving) > 1:
                raise ValueError(
                    f"{name} has a split that moves with several categorical columns ({moving}); refit it with "
                    "max_ctr_complexity=1"
                )
            column = moving[0] if moving else columns[int(split.get("cat_feature_index", 0)) % len(columns)]
            out[(t, level)] = (column, ((sides[column][:, t] >> level) & 1).astype(bool))
    return out


def _unseen(known: list[Any]) -> Any:
    """A category not among ``known`` of the same kind (a string, or a number past them)."""
    if known and all(isinstance(k, (int, float, np.integer, np.floating)) for k in known):
        return type(known[0])(max(known) + 1)
    label = "<unseen>"
    while label in known:
        label += "_"
    return label


def _expanded(
    tree: dict[str, Any], t: int, float_features: list[dict[str, Any]], probed: dict, dim: int, name: str
) -> dict[str, np.ndarray]:
    """One symmetric tree as a full node table (breadth-first; position ``i`` of level ``j`` has children ``2i``
    and ``2i + 1``), its categorical levels category sets; ``value`` is ``(N, dim)``."""
    d = len(tree["splits"])
    inner, size = 2**d - 1, 2 ** (d + 1) - 1
    level = np.repeat(np.arange(d), 2 ** np.arange(d))
    position = np.arange(inner) - (2**level - 1)
    left = np.concatenate([2 ** (level + 1) - 1 + 2 * position, np.full(2**d, -1)])
    feature = np.zeros(d, dtype=np.int64)
    threshold, nan_right = np.zeros(d), np.zeros(d, dtype=bool)
    category = np.full(d, -1, dtype=np.int64)
    sets: list[np.ndarray] = []
    for j, split in enumerate(tree["splits"]):
        if split.get("split_type") == "FloatFeature":
            feature[j], threshold[j], nan_right[j] = _split(split, float_features, name)
        else:
            feature[j], goes_right = probed[(t, j)]
            category[j], nan_right[j] = len(sets), goes_right[-1]
            sets.append(goes_right)
    reversed_index = np.zeros(2**d, dtype=np.int64)
    for j in range(d):
        reversed_index |= ((np.arange(2**d) >> (d - 1 - j)) & 1) << j
    value = np.zeros((size, dim))
    value[inner:] = np.asarray(tree["leaf_values"], dtype=np.float64).reshape(2**d, dim)[reversed_index]
    pad = np.full(2**d, -1)
    extra = {}
    if sets:
        width = max(len(s) for s in sets)
        table = np.stack([np.concatenate([s[:-1], np.full(width - len(s), s[-1]), s[-1:]]) for s in sets])
        extra = {"category": np.concatenate([category[level], pad]), "category_sets": table}
    return {
        **extra,
        "left": left,
        "right": np.where(left >= 0, left + 1, -1),
        "feature": np.concatenate([feature[level], pad]),
        "threshold": np.concatenate([threshold[level], np.zeros(2**d)]),
        "nan_right": np.concatenate([nan_right[level], pad == 0]),
        "zero_is_missing": np.zeros(size, dtype=bool),
        "value": value,
    }


def parse(model: Any, target: int | None, frame: Any = None) -> list[TreeEnsemble]:
    """Read a fitted CatBoost model into one :class:`TreeEnsemble` per explained output of
    ``predict(prediction_type="RawFormulaVal")`` (log-odds for binary classifiers, the class's raw score for
    multiclass ones; see :mod:`~torchxplain.fourier.trees.adapters._targets` for the default classes).

    ``frame``: rows like the ones to be explained, a DataFrame whose categorical columns have dtype
    ``category``; needed only when the model has categorical features (module docstring).

    Raises:
        ValueError: not fitted, text or embedding features (named, with the fix), categorical features without a
            DataFrame to probe, or CTRs of feature combinations.
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
    categorical = dump["features_info"].get("categorical_features", [])
    if categorical and dump.get("trees"):
        raise ValueError(f"{name} has categorical features on non-symmetric trees, which are not supported")
    if categorical:  # every symmetric tree as a node table with its categorical splits probed
        probed = _probe(model, dump, frame, name)
        blocks = []
        tables = [_expanded(t, i, float_features, probed, dim, name) for i, t in enumerate(dump["oblivious_trees"])]
    else:
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
                categories=_frame_categories(frame, categorical),
            )
        )
    return out


def _frame_categories(frame: Any, categorical: list[dict[str, Any]]) -> dict[int, tuple[object, ...]] | None:
    """The probed categories per categorical column (the frame's, in id order)."""
    if not categorical:
        return None
    columns = [int(info["flat_feature_index"]) for info in categorical]
    return {c: tuple(frame.iloc[:, c].cat.categories) for c in columns}
