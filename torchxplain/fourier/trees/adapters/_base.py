"""The flat, library-neutral form every tree adapter produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class ObliviousBlock:
    """Oblivious (symmetric) trees of one depth ``d``: every node of level ``j`` splits the same way.

    A sample's leaf is ``Σ_j 2^j · [it goes right at level j]`` (CatBoost's leaf index), so a tree is its
    ``2^d`` leaf values and its ``d`` splits, and its spectrum is one Walsh–Hadamard transform of the leaves.
    Split semantics are those of :class:`TreeEnsemble`.

    Attributes:
        feature: ``(T, d)`` int64 original feature of the split at each level.
        threshold: ``(T, d)`` float64 thresholds.
        nan_right: ``(T, d)`` bool, where a missing value goes.
        zero_is_missing: ``(T, d)`` bool.
        value: ``(T, 2^d)`` float64 leaf outputs, already multiplied by the tree's weight.
    """

    feature: np.ndarray
    threshold: np.ndarray
    nan_right: np.ndarray
    zero_is_missing: np.ndarray
    value: np.ndarray

    @property
    def depth(self) -> int:
        """The trees' depth ``d``."""
        return int(self.feature.shape[1])

    @property
    def n_trees(self) -> int:
        """Number of trees ``T`` in the block."""
        return int(self.feature.shape[0])


@dataclass(frozen=True)
class TreeEnsemble:
    """All trees of one model output, as one flat node table plus blocks of oblivious trees (numpy, float64).

    Node ``i`` is a leaf when ``left[i] == -1``. At an internal node the sample goes right exactly when
    its feature value ``v = x[feature[i]]`` (first cast to ``input_dtype``) satisfies ``v > threshold[i]``
    (``v >= threshold[i]`` when ``strict``, i.e. the library tests ``v < threshold`` to go left); a NaN goes
    right when ``nan_right[i]``, and when ``zero_is_missing[i]`` a zero goes the way of a NaN.

    The ensemble's output is ``offset + Σ_trees tree(x)``: exactly the model output named by :attr:`output`.

    Attributes:
        left: ``(N,)`` int64 global index of each node's left child, ``-1`` at leaves.
        right: ``(N,)`` int64 global index of each node's right child, ``-1`` at leaves.
        feature: ``(N,)`` int64 original feature index, ``-1`` at leaves.
        threshold: ``(N,)`` float64 split thresholds (0 at leaves).
        nan_right: ``(N,)`` bool, where a missing value goes.
        zero_is_missing: ``(N,)`` bool, whether zero is treated as missing (LightGBM ``missing_type='Zero'``).
        value: ``(N,)`` float64 leaf outputs already multiplied by the tree's weight (0 at internal nodes).
        roots: ``(T,)`` int64 root node of every tree of the node table.
        offset: the constant added to the sum of trees (base score / initial prediction), in output units.
        n_features: number of input features the model expects.
        strict: ``True`` for libraries whose split is ``x < threshold`` (XGBoost).
        input_dtype: the dtype the library casts inputs to before comparing (float32 for scikit-learn trees,
            XGBoost and CatBoost; float64 for LightGBM and HistGradientBoosting).
        description: a short human name of the model and output, used in messages.
        output: which output and on which scale, e.g. ``"predict_proba[:, 1] (probability of class 1)"``.
        target: the output index this ensemble explains (class for classifiers), ``None`` for single-output
            regressors.
        feature_names: the model's fit-time column names, when it recorded them.
        oblivious: blocks of oblivious trees (CatBoost, ``ObliviousBlock``), explained by one transform per tree.
        missing: a value the library reads as missing besides NaN (XGBoost's ``missing=``; NaN: none), compared
            after casting to ``input_dtype``.
        names: how the library stored ``feature_names``: ``"exact"``, or ``"lightgbm"`` (each space of a column
            name became ``_``; that rule is applied to a frame's columns before comparing).
        category_split: ``(N,)`` int64 row of :attr:`category_sets` of each categorical split (``-1`` elsewhere), or
            ``None`` when the model splits by threshold only. A categorical split reads the feature's value as a
            category id (the model's own coding, see :attr:`categories`).
        category_sets: ``(S, C + 1)`` bool, which category ids ``0..C-1`` go right at each categorical split; column
            ``C`` is where an id the model never saw goes (a missing value goes the ``nan_right`` way).
        categories: per categorical feature, the category values in the order of their ids (how a DataFrame's
            ``category`` column maps to ids), when the library recorded them; ``None`` otherwise.
        unseen_category: how the library's ``predict`` reads a DataFrame category it was not fitted on:
            ``"missing"`` (as a missing value) or ``"refuse"``.
        categories_by_value: the model maps the values of its categorical features to ids itself (a preprocessor:
            scikit-learn's histogram boosting), for arrays too; otherwise an array holds the ids already.
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
    output: str = ""
    target: int | None = None
    feature_names: tuple[str, ...] | None = None
    oblivious: tuple[ObliviousBlock, ...] = field(default=())
    missing: float = float("nan")
    names: Literal["exact", "lightgbm"] = "exact"
    category_split: np.ndarray | None = None
    category_sets: np.ndarray | None = None
    categories: dict[int, tuple[object, ...]] | None = None
    unseen_category: Literal["missing", "refuse"] = "refuse"
    categories_by_value: bool = False

    @property
    def is_leaf(self) -> np.ndarray:
        """``(N,)`` bool mask of leaves of the node table."""
        return self.left < 0

    def split_table(self) -> np.ndarray:
        """``(S, 4)`` float64 rows ``(feature, threshold, nan_right, zero_is_missing)`` of every split.

        Order: the node table's internal nodes (ascending node index), then each oblivious block's ``(T, d)``
        splits in row-major order. :meth:`split_offsets` gives where each part starts.

        Raises:
            ValueError: the ensemble has categorical splits (they have no threshold: only the leaf route reads them).
        """
        if self.category_split is not None and bool((self.category_split >= 0).any()):
            raise ValueError(
                f"{self.description} has categorical splits, which a Fourier spectrum on threshold features does not "
                "represent; FourierShap.from_trees(model, background) explains them exactly from the leaves "
                "(route='leaves'), without a spectrum"
            )
        internal = ~self.is_leaf
        parts = [
            np.stack(
                [
                    self.feature[internal].astype(np.float64),
                    self.threshold[internal],
                    self.nan_right[internal].astype(np.float64),
                    self.zero_is_missing[internal].astype(np.float64),
                ],
                axis=1,
            )
        ]
        for block in self.oblivious:
            columns = (block.feature, block.threshold, block.nan_right, block.zero_is_missing)
            parts.append(np.stack([c.reshape(-1).astype(np.float64) for c in columns], axis=1))
        return np.concatenate(parts) if parts else np.zeros((0, 4))

    def split_offsets(self) -> list[int]:
        """Start of the node-table part and of each oblivious block in :meth:`split_table` (plus the end)."""
        offsets = [0, int((~self.is_leaf).sum())]
        for block in self.oblivious:
            offsets.append(offsets[-1] + block.n_trees * block.depth)
        return offsets

    def goes_right(self, values: np.ndarray, splits: np.ndarray) -> np.ndarray:
        """Whether feature ``values`` go right at rows ``splits`` of :meth:`split_table` (broadcasting)."""
        table = self.split_table()[splits]
        v = np.asarray(values, dtype=self.input_dtype).astype(np.float64)
        right = v >= table[:, 1] if self.strict else v > table[:, 1]
        missing = np.isnan(v) | ((table[:, 3] > 0) & (np.abs(v) <= 1e-35))
        if self.missing == self.missing:  # a sentinel value, compared in the library's input precision
            missing |= v == float(np.asarray(self.missing, dtype=self.input_dtype))
        return np.where(missing, table[:, 2] > 0, right)

    @property
    def max_depth(self) -> int:
        """Depth of the deepest tree (node table and oblivious blocks)."""
        deepest = 0
        frontier = self.roots
        while len(frontier):
            inner = frontier[self.left[frontier] >= 0]
            deepest += bool(len(inner))
            frontier = np.concatenate([self.left[inner], self.right[inner]])
        return max([deepest, *(block.depth for block in self.oblivious)])


def fitted_names(columns: tuple[str, ...] | None, rule: str) -> tuple[str, ...] | None:
    """A DataFrame's ``columns`` as a library that renames them at fit time recorded them (``rule`` as
    :attr:`TreeEnsemble.names`): LightGBM writes ``_`` for every space."""
    if columns is None or rule == "exact":
        return columns
    return tuple(str(c).replace(" ", "_") for c in columns)


def concat_trees(trees: list[dict[str, np.ndarray]], weights: list[float], **meta: object) -> TreeEnsemble:
    """Concatenate per-tree arrays (local child indices, ``-1`` at leaves) into one :class:`TreeEnsemble`.

    Every dict holds ``left, right, feature, threshold, nan_right, zero_is_missing, value`` for one tree
    (``value`` is the leaf output, ignored at internal nodes); ``weights`` scales each tree's leaves. A tree with
    categorical splits also holds ``category`` (``(N,)`` row of its ``category_sets``, ``-1`` at threshold splits)
    and ``category_sets`` (``(S_t, C_t + 1)`` bool, as :attr:`TreeEnsemble.category_sets`). ``meta`` holds the
    remaining :class:`TreeEnsemble` fields.
    """
    keys = ("left", "right", "feature", "threshold", "nan_right", "zero_is_missing", "value")
    parts: dict[str, list[np.ndarray]] = {key: [] for key in keys}
    roots = []
    start = 0
    categories: list[np.ndarray] = []
    sets: list[np.ndarray] = []
    n_sets = 0
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
        category = np.asarray(tree.get("category", np.full(len(left), -1)), dtype=np.int64)
        categories.append(np.where((category >= 0) & ~leaf, category + n_sets, -1))
        if "category_sets" in tree:
            sets.append(np.asarray(tree["category_sets"], dtype=bool))
            n_sets += len(sets[-1])
        start += len(left)
    dtypes = {"left": np.int64, "right": np.int64, "feature": np.int64, "nan_right": bool, "zero_is_missing": bool}
    arrays = {
        key: (np.concatenate(val) if val else np.zeros(0)).astype(dtypes.get(key, np.float64))
        for key, val in parts.items()
    }
    if n_sets:
        meta = {**meta, "category_split": np.concatenate(categories), "category_sets": stack_category_sets(sets)}
    return TreeEnsemble(roots=np.asarray(roots, dtype=np.int64), **arrays, **meta)  # type: ignore[arg-type]


def stack_category_sets(sets: list[np.ndarray]) -> np.ndarray:
    """Stack ``(S_t, C_t + 1)`` category tables into one ``(S, C + 1)``: ids a table does not reach go the way of
    its unseen column (its last)."""
    width = max(s.shape[1] for s in sets)
    out = np.empty((sum(len(s) for s in sets), width), dtype=bool)
    row = 0
    for s in sets:
        out[row : row + len(s), : s.shape[1] - 1] = s[:, :-1]
        out[row : row + len(s), s.shape[1] - 1 :] = s[:, -1:]
        row += len(s)
    return out
