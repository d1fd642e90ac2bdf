"""The flat, library-neutral form every tree adapter produces."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TreeEnsemble:
    """All trees of an ensemble, concatenated into one flat node table (numpy, float64 values).

    Node ``i`` is a leaf when ``left[i] == -1``. At an internal node the sample goes right exactly when
    its feature value ``v = x[feature[i]]`` (first cast to ``input_dtype``) satisfies ``v > threshold[i]``
    (``v >= threshold[i]`` when ``strict``, i.e. the library tests ``v < threshold`` to go left); a NaN goes
    right when ``nan_right[i]``, and when ``zero_is_missing[i]`` a zero goes the way of a NaN.

    Attributes:
        left, right: ``(N,)`` int64 global child indices, ``-1`` at leaves.
        feature: ``(N,)`` int64 original feature index, ``-1`` at leaves.
        threshold: ``(N,)`` float64 split thresholds (0 at leaves).
        nan_right: ``(N,)`` bool, where a missing value goes.
        zero_is_missing: ``(N,)`` bool, whether zero is treated as missing (LightGBM ``missing_type='Zero'``).
        value: ``(N,)`` float64 leaf outputs already multiplied by the tree's weight (0 at internal nodes).
        roots: ``(T,)`` int64 root node of every tree kept for the chosen output.
        offset: the constant added to the sum of trees (base score / initial prediction), in output units.
        n_features: number of input features the model expects.
        strict: ``True`` for libraries whose split is ``x < threshold`` (XGBoost).
        input_dtype: the dtype the library casts inputs to before comparing (float32 for scikit-learn and
            XGBoost, float64 for LightGBM).
        description: a short human name of the model and output, used in messages.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    nan_right: np.ndarray
    zero_is_missing: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    offset: float
    n_features: int
    strict: bool
    input_dtype: np.dtype
    description: str

    @property
    def is_leaf(self) -> np.ndarray:
        """``(N,)`` bool mask of leaves."""
        return self.left < 0

    def goes_right(self, values: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Whether feature ``values`` (broadcasting with ``nodes``) go right at internal ``nodes``."""
        v = np.asarray(values, dtype=self.input_dtype).astype(np.float64)
        thr = self.threshold[nodes]
        right = v >= thr if self.strict else v > thr
        missing = np.isnan(v) | (self.zero_is_missing[nodes] & (np.abs(v) <= 1e-35))
        return np.where(missing, self.nan_right[nodes], right)


def concat_trees(trees: list[dict[str, np.ndarray]], weights: list[float], **meta: object) -> TreeEnsemble:
    """Concatenate per-tree arrays (local child indices, ``-1`` at leaves) into one :class:`TreeEnsemble`.

    Every dict holds ``left, right, feature, threshold, nan_right, zero_is_missing, value`` for one tree
    (``value`` is the leaf output, ignored at internal nodes); ``weights`` scales each tree's leaves.
    """
    parts: dict[str, list[np.ndarray]] = {
        key: [] for key in ("left", "right", "feature", "threshold", "nan_right", "zero_is_missing", "value")
    }
    roots = []
    start = 0
    for tree, weight in zip(trees, weights):
        left = np.asarray(tree["left"], dtype=np.int64)
        right = np.asarray(tree["right"], dtype=np.int64)
        leaf = left < 0
        roots.append(start)
        parts["left"].append(np.where(leaf, -1, left + start))
        parts["right"].append(np.where(leaf, -1, right + start))
        parts["feature"].append(np.where(leaf, -1, np.asarray(tree["feature"], dtype=np.int64)))
        parts["threshold"].append(np.where(leaf, 0.0, np.asarray(tree["threshold"], dtype=np.float64)))
        parts["nan_right"].append(np.asarray(tree["nan_right"], dtype=bool) & ~leaf)
        parts["zero_is_missing"].append(np.asarray(tree["zero_is_missing"], dtype=bool) & ~leaf)
        parts["value"].append(np.where(leaf, np.asarray(tree["value"], dtype=np.float64) * weight, 0.0))
        start += len(left)
    arrays = {key: (np.concatenate(val) if val else np.zeros(0)) for key, val in parts.items()}
    for key in ("left", "right", "feature"):
        arrays[key] = arrays[key].astype(np.int64)
    for key in ("nan_right", "zero_is_missing"):
        arrays[key] = arrays[key].astype(bool)
    return TreeEnsemble(roots=np.asarray(roots, dtype=np.int64), **arrays, **meta)  # type: ignore[arg-type]


def check_target(target: int | None, n_outputs: int, description: str) -> int:
    """Validate ``target`` for a model with ``n_outputs`` outputs and return the output index.

    Raises:
        ValueError: ``target`` missing for a multi-output model, or out of range.
        TypeError: ``target`` is not an integer.
    """
    if target is None:
        if n_outputs == 1:
            return 0
        raise ValueError(
            f"{description} has {n_outputs} outputs; pass target=<output index in 0..{n_outputs - 1}> "
            "to choose the one to explain"
        )
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
        raise TypeError(f"target must be an int output index, got {type(target).__name__}")
    if not 0 <= int(target) < n_outputs:
        raise ValueError(f"target must be in 0..{n_outputs - 1} for {description}, got {target}")
    return int(target)
