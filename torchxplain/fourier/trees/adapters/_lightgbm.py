"""LightGBM adapter: ``Booster`` and the scikit-learn wrappers (``LGBMRegressor``, ``LGBMClassifier``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from torchxplain.fourier.trees.adapters._base import TreeEnsemble, concat_trees
from torchxplain.fourier.trees.adapters._targets import OutputKind, choose_outputs, describe_output

SUPPORTED = "lightgbm Booster, LGBMRegressor, LGBMClassifier (numerical splits, constant leaves)"


def matches(model: Any) -> bool:
    """Whether ``model`` is a LightGBM booster or sklearn wrapper (False if lightgbm is not installed)."""
    try:
        import lightgbm
    except ImportError:
        return False
    return isinstance(model, (lightgbm.Booster, lightgbm.LGBMModel))


def _flatten(root: dict[str, Any], name: str) -> dict[str, np.ndarray]:
    """Pre-order node arrays of one dumped tree (parsing at the edge; the spectrum itself is vectorised)."""
    nodes: list[dict[str, Any]] = []
    left: list[int] = []
    right: list[int] = []
    stack: list[tuple[dict[str, Any], int, bool]] = [(root, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        index = len(nodes)
        nodes.append(node)
        left.append(-1)
        right.append(-1)
        if parent >= 0:
            (right if is_right else left)[parent] = index
        if "leaf_value" in node:
            if "leaf_coeff" in node or "leaf_features" in node:
                raise ValueError(f"{name} uses linear trees (linear_tree=True), which are not supported")
            continue
        if node["decision_type"] != "<=":
            raise ValueError(
                f"{name} has a categorical split (decision_type {node['decision_type']!r}), which is not "
                "supported; one-hot encode categorical features instead"
            )
        stack.append((node["right_child"], index, True))
        stack.append((node["left_child"], index, False))
    internal = ["leaf_value" not in n for n in nodes]
    threshold = np.array([n.get("threshold", 0.0) for n in nodes], dtype=np.float64)
    default_left = np.array([bool(n.get("default_left", True)) for n in nodes])
    missing = [n.get("missing_type", "None") for n in nodes]
    # missing_type None: NaN is read as 0 and compared; NaN: NaN takes the default side; Zero: 0 and NaN do.
    nan_right = np.where(np.array(missing) == "None", threshold < 0.0, ~default_left) & np.array(internal)
    return {
        "left": np.array(left),
        "right": np.array(right),
        "feature": np.array([n.get("split_feature", -1) for n in nodes]),
        "threshold": threshold,
        "nan_right": nan_right,
        "zero_is_missing": np.array(missing) == "Zero",
        "value": np.array([n.get("leaf_value", 0.0) for n in nodes], dtype=np.float64),
    }


def _names(dump: dict[str, Any]) -> tuple[str, ...] | None:
    names = [str(c) for c in dump.get("feature_names", [])]
    if not names or names == [f"Column_{i}" for i in range(len(names))]:  # LightGBM's names for arrays
        return None
    return tuple(names)


def parse(model: Any, target: int | None) -> list[TreeEnsemble]:
    """Read a LightGBM model into one :class:`TreeEnsemble` per explained output, each the raw score
    ``predict(raw_score=True)`` of one class (see :mod:`~torchxplain.fourier.trees.adapters._targets`). Like
    ``predict``, the dump stops at the best iteration when early stopping recorded one. For
    ``boosting_type='rf'`` the score is the average over the trees, the margin behind ``predict`` (LightGBM's
    ``predict(raw_score=True)`` returns the un-averaged sum there).
    """
    import lightgbm

    name = type(model).__name__
    if isinstance(model, lightgbm.LGBMModel):
        if not getattr(model, "fitted_", False):
            raise ValueError(f"{name} is not fitted; call .fit() before extracting its spectrum")
        model = model.booster_
    dump = model.dump_model()
    per_iteration = int(dump["num_tree_per_iteration"])
    objective = str(dump.get("objective", "")).split(" ")[0]
    classifier = objective in ("binary", "multiclass", "multiclassova")
    kind: OutputKind = "margin" if classifier else "outputs"
    n = max(per_iteration, 2) if classifier else per_iteration
    scale = ("log-odds" if n == 2 else "softmax logit") if classifier else "output units"
    infos = dump["tree_info"]
    weight = 1.0 / max(len(infos) // per_iteration, 1) if dump.get("average_output", False) else 1.0
    out = []
    for choice in choose_outputs(target, n, kind, name):
        sign = -1.0 if choice.negate else 1.0
        chosen = [info for i, info in enumerate(infos) if i % per_iteration == choice.column]
        trees = [_flatten(info["tree_structure"], name) for info in chosen]
        output = describe_output(choice, kind, "predict(raw_score=True)", scale, n)
        out.append(
            concat_trees(
                trees,
                [sign * weight] * len(trees),
                offset=0.0,
                n_features=int(dump["max_feature_idx"]) + 1,
                strict=False,
                input_dtype=np.dtype(np.float64),
                description=f"{name} ({output})",
                output=output,
                target=choice.target,
                feature_names=_names(dump),
                names="lightgbm",
            )
        )
    return out
