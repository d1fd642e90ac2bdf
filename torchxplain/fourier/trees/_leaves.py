"""The leaf table of a tree ensemble: every node's split as a condition on one feature, and the leaves' values.

The leaf route (:mod:`~torchxplain.fourier.trees._leaf_values`) needs, for every row and every leaf, which of the
leaf's path conditions the row satisfies. A player's condition on a path is the conjunction of the path's splits
on the player's features (the thresholds of one feature bound an interval; a categorical split is a set of
categories), so a row's *fail pattern* at a leaf — bit ``s`` set when the row fails the leaf's ``s``-th player —
is built top-down: a child's pattern is its parent's with the bit of the node's player set where the row goes the
other way (:func:`fail_patterns`). Bit positions follow the order in which players first appear on a path
(:class:`Slots`, per players), so every node below a split agrees on them.

Rows enter through :class:`FeatureCodes`: per feature, how many of the model's thresholds on it the value passes
(``bins``), or its category id, and whether it is missing — one ``(p, Q)`` int32 table instead of one column per
threshold.

Memory: the table holds ``O(N)`` entries for ``N`` nodes; :meth:`LeafTable.nbytes` prices it before it is built,
and the patterns are computed for chunks of trees and rows sized by the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from torchxplain.fourier.trees.adapters._base import ObliviousBlock, TreeEnsemble

MAX_SLOTS = 62
"""Most players one root-to-leaf path may condition on (fail patterns are int64 bit masks)."""


@dataclass(frozen=True)
class FeatureCodes:
    """Raw rows as the splits see them, feature-major.

    Attributes:
        code: ``(p, Q)`` int32: for a numeric feature the number of the model's thresholds on it that the value
            goes right of; for a categorical feature its category id (``n_categories`` for an unseen or invalid id).
        missing: ``(p, Q)`` bool where the value is missing (NaN, the library's sentinel), or ``None`` when none is.
        zero: ``(p, Q)`` bool where the value reads as zero (for splits that treat zero as missing), or ``None``.
    """

    code: Tensor
    missing: Tensor | None
    zero: Tensor | None


@dataclass(frozen=True)
class LeafTable:
    """An ensemble's node table for the leaf route (torch tensors on one device; trees in order).

    Node ``i`` is a leaf when ``left[i] < 0``. At an internal node a row goes right when its code of
    ``feature[i]`` is above ``split[i]`` (numeric: ``split`` is the rank of the node's threshold among the
    feature's sorted thresholds) or, for a categorical node, when ``categories[split[i], code]`` is true; a
    missing value goes right when ``nan_right[i]``, and a zero reads as missing where ``zero_missing[i]``.

    Attributes:
        left, right, feature: ``(N,)`` int64 (``-1`` at leaves); split: ``(N,)`` int32 (``-1`` at leaves).
        categorical, nan_right, zero_missing: ``(N,)`` bool.
        value: ``(N,)`` float64 leaf outputs (0 at internal nodes), tree weights included.
        tree: ``(N,)`` int64 tree of each node; depth: ``(N,)`` int64 its depth; tree_start: ``(T + 1,)`` first
            node of each tree (nodes of one tree are contiguous).
        thresholds: ``(p, K)`` float64 sorted distinct thresholds per numeric feature, padded with ``+inf``.
        categories: ``(S, C + 1)`` bool: which category ids go right at each categorical split (column ``C``:
            an unseen id).
        is_categorical: ``(p,)`` bool features split by category.
        offset: the constant added to the trees' sum; strict: ``x >= t`` goes right (else ``x > t``);
        input_dtype: the precision inputs are compared in; missing_value: a sentinel read as missing (NaN: none).
    """

    left: Tensor
    right: Tensor
    feature: Tensor
    split: Tensor
    categorical: Tensor
    nan_right: Tensor
    zero_missing: Tensor
    value: Tensor
    tree: Tensor
    depth: Tensor
    tree_start: Tensor
    thresholds: Tensor
    categories: Tensor
    is_categorical: Tensor
    offset: float
    strict: bool
    input_dtype: torch.dtype
    missing_value: float

    @property
    def n_nodes(self) -> int:
        """Number of nodes ``N``."""
        return int(self.left.shape[0])

    @property
    def n_trees(self) -> int:
        """Number of trees ``T``."""
        return int(self.tree_start.shape[0]) - 1

    @property
    def n_features(self) -> int:
        """Number of input features ``p``."""
        return int(self.thresholds.shape[0])

    @property
    def max_depth(self) -> int:
        """Depth of the deepest node."""
        return int(self.depth.max()) if self.n_nodes else 0

    def codes(self, x: Tensor) -> FeatureCodes:
        """``(Q, p)`` raw rows (category ids in categorical columns) -> their :class:`FeatureCodes`.

        Values are cast to the library's input precision first, as its ``predict`` does.
        """
        v = x.to(self.input_dtype).double().T.contiguous()  # (p, Q)
        missing = torch.isnan(v)
        if self.missing_value == self.missing_value:
            missing |= v == float(torch.tensor(self.missing_value, dtype=self.input_dtype))
        code = torch.searchsorted(self.thresholds, v, right=self.strict).to(torch.int32)
        if bool(self.is_categorical.any()):
            n_cat = self.categories.shape[1] - 1
            valid = (v >= 0) & (v < n_cat)  # an id is the value truncated, as the libraries read it
            category = torch.where(valid, torch.floor(v), float(n_cat)).nan_to_num(float(n_cat)).to(torch.int32)
            code = torch.where(self.is_categorical[:, None], category, code)
        zero = None
        if bool(self.zero_missing.any()):
            zero = (v.abs() <= 1e-35) & ~missing
            zero = zero if bool(zero.any()) else None
        return FeatureCodes(code, missing if bool(missing.any()) else None, zero)

    def goes_right(self, nodes: Tensor, codes: FeatureCodes) -> Tensor:
        """``(len(nodes), Q)`` bool: whether each row goes right at each of the internal ``nodes``."""
        feature = self.feature[nodes]
        code = codes.code.index_select(0, feature)
        right = code > self.split[nodes, None]
        categorical = self.categorical[nodes]
        if bool(categorical.any()):
            width = self.categories.shape[1]
            row = torch.where(categorical, self.split[nodes].long(), 0)[:, None]  # threshold splits read row 0
            flat = row * width + code.long().clamp(max=width - 1)
            right = torch.where(categorical[:, None], self.categories.view(-1)[flat], right)
        if codes.missing is not None:
            right = torch.where(codes.missing.index_select(0, feature), self.nan_right[nodes, None], right)
        if codes.zero is not None:
            zero = codes.zero.index_select(0, feature) & self.zero_missing[nodes, None]
            right = torch.where(zero, self.nan_right[nodes, None], right)
        return right

    def to(self, device: torch.device) -> LeafTable:
        """The table on ``device``."""
        moved: dict[str, Any] = {k: v.to(device) for k, v in self.__dict__.items() if isinstance(v, Tensor)}
        return dataclasses.replace(self, **moved)


def _oblivious_nodes(block: ObliviousBlock) -> dict[str, np.ndarray]:
    """Full binary node tables of a block of oblivious trees, breadth-first per tree (``T · (2^{d+1} - 1)`` nodes).

    Node ``2^j - 1 + i`` of a tree is position ``i`` of level ``j``; its children are positions ``2i`` and
    ``2i + 1`` of level ``j + 1``. A leaf's position read from the root (most significant bit first) lists the
    sides taken, so CatBoost's leaf index (level ``j`` is bit ``j``) is the position's bits reversed.
    """
    t, d = block.n_trees, block.depth
    inner, size = 2**d - 1, 2 ** (d + 1) - 1
    level = np.repeat(np.arange(d), 2 ** np.arange(d))  # level of each internal node
    position = np.arange(inner) - (2**level - 1)
    local_left = np.concatenate([2 ** (level + 1) - 1 + 2 * position, np.full(2**d, -1)])
    local_right = np.where(local_left >= 0, local_left + 1, -1)
    offsets = (np.arange(t) * size)[:, None]
    leaf_pos = np.arange(2**d)
    reversed_index = np.zeros(2**d, dtype=np.int64)
    for j in range(d):
        reversed_index |= ((leaf_pos >> (d - 1 - j)) & 1) << j
    value = np.zeros((t, size))
    value[:, inner:] = block.value[:, reversed_index]
    pad_i = np.full((t, 2**d), -1)
    return {
        "left": np.where(local_left >= 0, local_left + offsets, -1).reshape(-1),
        "right": np.where(local_right >= 0, local_right + offsets, -1).reshape(-1),
        "feature": np.concatenate([block.feature[:, level], pad_i], axis=1).reshape(-1),
        "threshold": np.concatenate([block.threshold[:, level], np.zeros((t, 2**d))], axis=1).reshape(-1),
        "nan_right": np.concatenate([block.nan_right[:, level], pad_i == 0], axis=1).reshape(-1),
        "zero_is_missing": np.concatenate([block.zero_is_missing[:, level], pad_i == 0], axis=1).reshape(-1),
        "value": value.reshape(-1),
        "category": np.full(t * size, -1, dtype=np.int64),
        "roots": np.arange(t) * size,
    }


def leaf_table(ensemble: TreeEnsemble, device: torch.device | str | None = None) -> LeafTable:
    """The :class:`LeafTable` of a parsed ensemble (oblivious blocks become full binary node tables)."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    n = len(ensemble.left)
    category = ensemble.category_split if ensemble.category_split is not None else np.full(n, -1, dtype=np.int64)
    parts = [
        {
            "left": ensemble.left,
            "right": ensemble.right,
            "feature": ensemble.feature,
            "threshold": ensemble.threshold,
            "nan_right": ensemble.nan_right,
            "zero_is_missing": ensemble.zero_is_missing,
            "value": ensemble.value,
            "category": category,
            "roots": ensemble.roots,
        }
    ]
    parts += [_oblivious_nodes(block) for block in ensemble.oblivious]
    offset = 0
    arrays: dict[str, list[np.ndarray]] = {key: [] for key in parts[0]}
    for part in parts:
        for key, val in part.items():
            shift = offset if key in ("left", "right", "roots") else 0
            arrays[key].append(np.where(val >= 0, val + shift, -1) if shift else np.asarray(val))
        offset += len(part["left"])
    cat = {key: np.concatenate(val) for key, val in arrays.items()}
    left, right, feature = (cat[k].astype(np.int64) for k in ("left", "right", "feature"))
    roots = cat["roots"].astype(np.int64)
    order = np.argsort(roots, kind="stable")  # trees by first node: each tree's nodes are contiguous
    roots = roots[order]
    inner = left >= 0
    categorical = cat["category"] >= 0
    p = ensemble.n_features
    numeric = inner & ~categorical
    is_cat = np.zeros(p, dtype=bool)
    is_cat[feature[inner & categorical]] = True
    if (is_cat[feature[numeric]]).any():
        bad = int(feature[numeric][is_cat[feature[numeric]]][0])
        raise ValueError(f"{ensemble.description} splits feature {bad} both by threshold and by category")
    # thresholds per feature, sorted and distinct; each numeric node's rank among its feature's thresholds
    keys, inverse = _distinct_splits(feature[numeric], cat["threshold"][numeric].astype(np.float64))
    key_feature = keys[:, 0].astype(np.int64)
    counts = np.bincount(key_feature, minlength=p)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    thresholds = np.full((p, max(int(counts.max()) if p else 0, 1)), np.inf)
    thresholds[key_feature, np.arange(len(keys)) - starts[key_feature]] = keys[:, 1]
    split = np.full(len(left), -1, dtype=np.int64)
    split[numeric] = inverse.reshape(-1) - starts[feature[numeric]]
    split[categorical & inner] = cat["category"][categorical & inner]
    tree = np.zeros(len(left), dtype=np.int64)
    tree[roots[1:]] = 1
    tree = np.cumsum(tree)
    depth = _depths(left, right, roots)
    sets = ensemble.category_sets if ensemble.category_sets is not None else np.zeros((0, 1), dtype=bool)
    tensor = lambda a, dt: torch.as_tensor(np.ascontiguousarray(a), dtype=dt, device=dev)  # noqa: E731
    return LeafTable(
        left=tensor(left, torch.int64),
        right=tensor(right, torch.int64),
        feature=tensor(np.where(inner, feature, -1), torch.int64),
        split=tensor(split, torch.int32),
        categorical=tensor(categorical & inner, torch.bool),
        nan_right=tensor(cat["nan_right"].astype(bool) & inner, torch.bool),
        zero_missing=tensor(cat["zero_is_missing"].astype(bool) & inner, torch.bool),
        value=tensor(np.where(inner, 0.0, cat["value"]), torch.float64),
        tree=tensor(tree, torch.int64),
        depth=tensor(depth, torch.int64),
        tree_start=tensor(np.concatenate([roots, [len(left)]]), torch.int64),
        thresholds=tensor(thresholds, torch.float64),
        categories=tensor(sets, torch.bool),
        is_categorical=tensor(is_cat, torch.bool),
        offset=float(ensemble.offset),
        strict=bool(ensemble.strict),
        input_dtype=torch.float32 if ensemble.input_dtype == np.float32 else torch.float64,
        missing_value=float(ensemble.missing),
    )


def _distinct_splits(feature: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(feature, threshold)`` pairs ``(K, 2)`` in ascending order and each input pair's row among
    them: ``np.unique(..., axis=0)`` by one lexicographic sort (the structured sort of ``axis=0`` took seconds on
    a 600,000-node forest)."""
    order = np.lexsort((threshold, feature))
    f, t = feature[order], threshold[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (f[1:] != f[:-1]) | (t[1:] != t[:-1])
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return np.stack([f[new].astype(np.float64), t[new]], 1).reshape(-1, 2), inverse


def _depths(left: np.ndarray, right: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """Depth of every node (one pass per level)."""
    depth = np.zeros(len(left), dtype=np.int64)
    frontier, level = roots, 0
    while len(frontier):
        depth[frontier] = level
        inner = frontier[left[frontier] >= 0]
        frontier = np.concatenate([left[inner], right[inner]])
        level += 1
    return depth


def _descend_right(table: LeafTable, node: Tensor, codes: FeatureCodes) -> Tensor:
    """Whether each row goes right at its own node: ``node`` ``(T, Q)`` internal node ids (any id at leaves)."""
    feature = table.feature[node].clamp(min=0)
    code = torch.gather(codes.code, 0, feature)
    split = table.split[node]
    right = code > split
    categorical = table.categorical[node]
    if bool(categorical.any()):
        width = table.categories.shape[1]
        flat = torch.where(categorical, split.long(), 0) * width + code.long().clamp(max=width - 1)
        right = torch.where(categorical, table.categories.view(-1)[flat], right)
    if codes.missing is not None:
        right = torch.where(torch.gather(codes.missing, 0, feature), table.nan_right[node], right)
    if codes.zero is not None:
        zero = torch.gather(codes.zero, 0, feature) & table.zero_missing[node]
        right = torch.where(zero, table.nan_right[node], right)
    return right


def predict(table: LeafTable, codes: FeatureCodes) -> Tensor:
    """``(Q,)`` float64 ensemble output at the coded rows: every tree descended to its leaf, level by level."""
    q = codes.code.shape[1]
    node = table.tree_start[:-1, None].expand(-1, q).contiguous()
    for _ in range(table.max_depth):
        inner = table.left[node] >= 0
        if not bool(inner.any()):
            break
        right = _descend_right(table, node, codes)
        node = torch.where(inner, torch.where(right, table.right[node], table.left[node]), node)
    return table.offset + table.value[node].sum(0)


@dataclass(frozen=True)
class Slots:
    """Where each player's condition sits in a path's fail pattern, for one grouping of features into players.

    Attributes:
        bit: ``(N,)`` int64 ``1 << position`` of each internal node's player on its path (0 at leaves), positions
            numbered in the order players first appear from the root.
        leaves: ``(L,)`` int64 node ids of the leaves, ascending (so trees in order).
        n_slots: ``(L,)`` int64 number of players on each leaf's path.
        players: ``(L, D)`` int64 player of each slot of a leaf (``-1`` past ``n_slots``), ``D`` the most slots.
        leaf_of_node: ``(N,)`` int64 row of each leaf in ``leaves`` (``-1`` at internal nodes).
        node_slots: ``(N,)`` int64 number of players on each node's path from the root (its own split excluded).
    """

    bit: Tensor
    leaves: Tensor
    n_slots: Tensor
    players: Tensor
    leaf_of_node: Tensor
    node_slots: Tensor

    @property
    def max_slots(self) -> int:
        """The most slots of a leaf, ``D``."""
        return int(self.players.shape[1])


def slots(table: LeafTable, player: Tensor, description: str = "the model") -> Slots:
    """The :class:`Slots` of ``table`` when feature ``f`` belongs to player ``player[f]``.

    One pass per depth carries each node's path players (its parent's plus the parent's player when new), so only
    one level's paths are held at a time besides the leaves' own (the result).

    Raises:
        ValueError: a path conditions on more than :data:`MAX_SLOTS` players.
    """
    device = table.left.device
    n = table.n_nodes
    inner = table.left >= 0
    node_player = torch.where(inner, player[table.feature.clamp(min=0)], -1)
    width = max(1, min(table.max_depth, int(player.max()) + 1 if player.numel() else 1))
    bit = torch.zeros(n, dtype=torch.int64, device=device)
    count = torch.zeros(n, dtype=torch.int64, device=device)
    leaves = torch.nonzero(~inner).flatten()
    leaf_of_node = torch.full((n,), -1, dtype=torch.int64, device=device)
    leaf_of_node[leaves] = torch.arange(leaves.numel(), device=device)
    leaf_paths = torch.full((leaves.numel(), width), -1, dtype=torch.int64, device=device)
    level = table.tree_start[:-1]
    paths = torch.full((level.numel(), width), -1, dtype=torch.int64, device=device)
    while level.numel():
        at_leaf = ~inner[level]
        leaf_paths[leaf_of_node[level[at_leaf]]] = paths[at_leaf]
        keep = ~at_leaf
        level, path = level[keep], paths[keep]
        if not level.numel():
            break
        d, who = count[level], node_player[level]
        match = path == who[:, None]
        found = match.any(1)
        position = torch.where(found, match.to(torch.int8).argmax(1), d)
        if int(position.max()) >= MAX_SLOTS:
            raise ValueError(
                f"{description} has a path that conditions on more than {MAX_SLOTS} players; the leaf route "
                "holds a path's conditions in one 64-bit pattern: group features into fewer players"
            )
        bit[level] = torch.ones_like(position) << position
        grow = ~found
        path[grow, d[grow].clamp(max=width - 1)] = who[grow]
        for child in (table.left[level], table.right[level]):
            count[child] = d + grow.long()
        level = torch.cat([table.left[level], table.right[level]])
        paths = torch.cat([path, path])
    n_slots = count[leaves]
    most = int(n_slots.max()) if leaves.numel() else 0
    return Slots(bit, leaves, n_slots, leaf_paths[:, :most].contiguous(), leaf_of_node, count)


@dataclass(frozen=True)
class Traversal:
    """The level-by-level schedule of a range of trees: which frontier rows are internal nodes, which are leaves.

    The frontier of level 0 is the trees' roots; the frontier of level ``t + 1`` is the left children of level
    ``t``'s internal nodes, then their right children.

    Attributes:
        inner_rows, inner_nodes, inner_bit: per level, the frontier rows of internal nodes, their node ids and the
            ``(n, 1)`` bit of their player.
        leaf_rows, leaf_index: per level, the frontier rows of leaves and their rows in the range's leaf block.
        leaves: ``(L_range,)`` the range's leaves (node ids) in the order of the leaf block.
        widest: the largest frontier.
    """

    inner_rows: list[Tensor]
    inner_nodes: list[Tensor]
    inner_bit: list[Tensor]
    leaf_rows: list[Tensor]
    leaf_index: list[Tensor]
    leaves: Tensor
    widest: int


def traversal(
    table: LeafTable, slot: Slots, trees: tuple[int, int], leaves: Tensor, stop: Tensor | None = None
) -> Traversal:
    """The :class:`Traversal` of trees ``trees[0]..trees[1]-1`` whose leaf block lists ``leaves`` (node ids of
    exactly the range's terminal nodes, in any order): its leaves, or where ``stop`` (``(N,)`` bool) marks internal
    nodes to end at, those instead of the leaves below them."""
    device = table.left.device
    position = torch.full((table.n_nodes,), -1, dtype=torch.int64, device=device)
    position[leaves] = torch.arange(leaves.numel(), device=device)
    frontier = table.tree_start[trees[0] : trees[1]]
    inner_rows, inner_nodes, inner_bit, leaf_at, leaf_index = [], [], [], [], []
    widest = 0
    while frontier.numel():
        widest = max(widest, int(frontier.numel()))
        is_inner = table.left[frontier] >= 0
        if stop is not None:
            is_inner &= ~stop[frontier]
        rows = torch.arange(frontier.numel(), device=device)
        nodes = frontier[is_inner]
        inner_rows.append(rows[is_inner])
        inner_nodes.append(nodes)
        inner_bit.append(slot.bit[nodes, None])
        leaf_at.append(rows[~is_inner])
        leaf_index.append(position[frontier[~is_inner]])
        frontier = torch.cat([table.left[nodes], table.right[nodes]])
    return Traversal(inner_rows, inner_nodes, inner_bit, leaf_at, leaf_index, leaves, widest)


def pattern_dtype(bits: int) -> torch.dtype:
    """The integer dtype of fail patterns of at most ``bits`` bits, the narrowest that holds them: uint8 up to 8
    bits, int16 up to 15, int32 up to 30, else int64 (the traversal's traffic shrinks with the width: measured on
    XGBoost 100 × 6's background of 10,000 rows, uint8 frontiers take a fifth of int32's time)."""
    if bits <= 8:
        return torch.uint8
    return torch.int16 if bits <= 15 else torch.int32 if bits <= 30 else torch.int64


def frontiers(
    table: LeafTable, plan: Traversal, codes: FeatureCodes, dtype: torch.dtype = torch.int64
) -> Iterator[Tensor]:
    """The fail patterns ``(width_t, Q)`` (int64, or ``dtype``: uint8 moves an eighth of the bytes where the range's
    paths have at most 8 players) of the coded rows at every node of each level ``t`` of a tree range
    (frontier order of :class:`Traversal`): bit ``s`` is set when the row fails the ``s``-th player on the node's
    path (one of the player's splits so far sends it the other way).

    A yielded level is valid until the next one is requested (three ``plan.widest × Q`` buffers: two
    frontiers and the decisions).
    """
    q = codes.code.shape[1]
    device = codes.code.device
    buffers = [torch.empty(plan.widest * q, dtype=dtype, device=device) for _ in range(3)]
    width = plan.inner_rows[0].numel() + plan.leaf_rows[0].numel()
    frontier = buffers[0][: width * q].view(width, q).zero_()
    for level in range(len(plan.inner_rows)):
        yield frontier
        nodes = plan.inner_nodes[level]
        n = nodes.numel()
        if not n:
            return
        rows = plan.inner_rows[level]
        parent = frontier if n == frontier.shape[0] else frontier.index_select(0, rows)
        bit = plan.inner_bit[level].to(dtype)
        went = buffers[2][: n * q].view(n, q)
        torch.mul(table.goes_right(nodes, codes), bit, out=went)  # the left child fails where the row goes right
        after = buffers[(level + 1) % 2][: 2 * n * q].view(2 * n, q)
        torch.bitwise_or(parent, went, out=after[:n])
        went.bitwise_xor_(bit)
        torch.bitwise_or(parent, went, out=after[n:])
        frontier = after


def fail_patterns(table: LeafTable, plan: Traversal, codes: FeatureCodes, dtype: torch.dtype = torch.int64) -> Tensor:
    """``(L_range, Q)`` int64 (or ``dtype``) fail patterns of the coded rows at every leaf of a tree range, in
    ``plan.leaves`` order (see :func:`frontiers`)."""
    out = torch.empty(plan.leaves.numel(), codes.code.shape[1], dtype=dtype, device=codes.code.device)
    for level, frontier in enumerate(frontiers(table, plan, codes, dtype)):
        if plan.leaf_rows[level].numel():
            out.index_copy_(0, plan.leaf_index[level], frontier.index_select(0, plan.leaf_rows[level]))
    return out


def fail_counts(
    table: LeafTable, plan: Traversal, codes: FeatureCodes, offset: Tensor, size: int, dtype: torch.dtype = torch.int64
) -> tuple[Tensor, Tensor]:
    """How many coded rows have each fail pattern at each leaf of a tree range (see :func:`frontiers`), without
    their ``(L_range, Q)`` patterns: for the first ``len(offset)`` leaves of the leaf block, ``(size,)`` int64 counts,
    entry ``offset[i] + F`` the rows of pattern ``F`` at leaf ``i`` (its ``2^{d_i}`` entries start at ``offset[i]``);
    for the leaves past them, their patterns ``(L_range - len(offset), Q)`` (``dtype``).

    Each level's leaf rows are counted where they are made: their patterns plus the leaves' offsets (one ``(n, Q)``
    buffer of keys, int32 below ``2^31`` entries) added into the counts by ``index_add_``, whose work follows the
    keys (a ``bincount`` per level allocated, zeroed and added all ``size`` entries: on a default random forest's
    first 10 trees at 1,000 rows, 4.0 of the call's 8.4 s).
    """
    q, device = codes.code.shape[1], codes.code.device
    counted = offset.numel()
    counts = torch.zeros(size, dtype=torch.int64, device=device)
    rest = torch.empty(plan.leaves.numel() - counted, q, dtype=dtype, device=device)
    key_dtype = torch.int32 if size < 2**31 else torch.int64
    start = offset.to(key_dtype)[:, None]
    keys = torch.empty(plan.widest * q, dtype=key_dtype, device=device)
    one = torch.ones((), dtype=torch.int64, device=device)
    for level, frontier in enumerate(frontiers(table, plan, codes, dtype)):
        rows, index = plan.leaf_rows[level], plan.leaf_index[level]
        if not rows.numel():
            continue
        if rest.numel():  # leaves past the counted ones keep their patterns
            deep = index >= counted
            rest.index_copy_(0, index[deep] - counted, frontier.index_select(0, rows[deep]))
            rows, index = rows[~deep], index[~deep]
        n = rows.numel()
        if not n:
            continue
        key = keys[: n * q].view(n, q)
        key.copy_(frontier if n == frontier.shape[0] else frontier.index_select(0, rows)).add_(start[index])
        counts.index_add_(0, key.view(-1), one.expand(n * q))
    return counts, rest


def spectrum_terms(table: LeafTable, cap: int | None = None) -> int:
    """A bound on the Fourier terms of ``table``'s trees: per tree, ``Σ_leaves 2^d`` (``d`` distinct features on a
    leaf's path) or ``2^s`` (``s`` distinct splits in the tree: an oblivious tree has ``d`` of them), the smaller.

    With ``cap``, a number above ``cap`` as soon as a lower bound of it (per tree, its leaves or ``2^s``, the
    fewer) exceeds ``cap``, without the paths' players (which take most of the time on deep forests).
    """
    device = table.left.device
    inner = table.left >= 0
    width = (int(table.split.max()) + 2) * max(table.n_features, 1)  # distinct keys of one tree's splits
    key = table.feature[inner] * (int(table.split.max()) + 2) + table.split[inner].long() + 1
    distinct = torch.unique(table.tree[inner] * width + key)  # one flat key: unique(dim=0) sorts rows slowly
    splits = torch.pow(2.0, torch.bincount(distinct // width, minlength=table.n_trees).double().clamp(max=60))
    if cap is not None:
        leaves = torch.bincount(table.tree[~inner], minlength=table.n_trees).double()
        least = int(torch.minimum(leaves, splits).sum())
        if least > cap:
            return least
    slot = slots(table, torch.arange(table.n_features, device=device))
    per_leaf = torch.zeros(table.n_trees, dtype=torch.float64, device=device)
    per_leaf.index_add_(0, table.tree[slot.leaves], torch.pow(2.0, slot.n_slots.double()))
    return int(torch.minimum(per_leaf, splits).sum())
