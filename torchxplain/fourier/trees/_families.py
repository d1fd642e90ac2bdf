"""The support families a tree extraction records: every frequency lies on a root-to-leaf path.

A frequency of a node table's expansion uses the split features of one internal node and of some of its
ancestors, so it lies inside the feature set of any root-to-leaf path through that node; an oblivious tree's
frequencies lie inside its levels' features. Those path sets are the families
(:class:`~torchxplain.fourier.values._families.SupportFamilies`, the small-support kernel's cover).

They are made maximal along the tree without enumerating subsets: a leaf's path set is the path of its parent
plus the parent's split, which every path below the leaf's sibling also holds, so each leaf points at the
first leaf below its sibling (at its sibling when that is a leaf: both have the same set) and pointer jumping
follows the chain to a leaf no other path contains from within its tree. Equal sets of different trees merge by
key; sets nested across trees merge by one subset enumeration when the families differ in size.

Continuous inputs expand leaf by leaf into intervals (:mod:`~torchxplain.fourier.trees._intervals`), whose terms use
only the interval endpoints; those families are found on the merged spectrum instead
(:func:`~torchxplain.fourier.values._families.support_families`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain.fourier.trees._expansion import Expansion
from torchxplain.fourier.values import KeyLayout, canonical, subsets, unique_keys

MAX_SUBSET_ROWS = 1 << 22  # above this many subsets, cross-tree nesting is left unmerged (still valid, not maximal)


def assign_families(expansion: Expansion) -> Tensor | None:
    """Give every node and block source of ``expansion`` its family; return the families' packed keys
    ``(m, n_words)`` (``None`` for leaf-by-leaf expansions, whose families are searched after merging)."""
    if any(source.kind == "leaf" for source in expansion.sources):
        return None
    layout, paths = expansion.layout, expansion.paths
    keys = []
    node_source = next((s for s in expansion.sources if s.kind == "node"), None)
    if node_source is not None and paths.leaves.numel():
        rep = _representatives(expansion)
        keys.append(_pack_sets(paths.ancestors[paths.leaves[rep]], layout))
    for source in expansion.sources:
        if source.kind.startswith("block"):
            keys.append(_pack_sets(torch.where(source.codes < layout.n, source.codes, -1), layout))
    if not keys:
        return torch.zeros(1, layout.n_words, dtype=torch.int64, device=expansion.device)  # the constant's
    words = torch.cat(keys)
    inverse, count = unique_keys(words)
    family_keys = words.new_zeros(count, words.shape[1]).index_copy_(0, inverse, words)
    parent = maximal_parents(family_keys, layout)
    family = parent[inverse]
    start = 0
    for source in expansion.sources:
        if source.kind == "node":
            leaf_family = family[start : start + paths.leaves.numel()]
            start += paths.leaves.numel()
            row_of_leaf = torch.full_like(paths.left, -1)
            row_of_leaf[paths.leaves] = torch.arange(paths.leaves.numel(), device=expansion.device)
            source.family = leaf_family[row_of_leaf[paths.leftmost[expansion.node_ids]]]
        else:
            source.family = family[start : start + source.codes.shape[0]]
            start += source.codes.shape[0]
    return family_keys


def _representatives(expansion: Expansion) -> Tensor:
    """``(L,)`` for each leaf (by row of ``paths.leaves``), a leaf whose path set holds its own, maximal within
    the tree: the first leaf below its sibling, followed to a fixed point."""
    paths = expansion.paths
    leaves, left, right = paths.leaves, paths.left, paths.right
    n_nodes = left.shape[0]
    parent = torch.full((n_nodes,), -1, dtype=torch.int64, device=left.device)
    internal = paths.internal
    parent[left[internal]] = internal
    parent[right[internal]] = internal
    up = parent[leaves]
    has_parent = up >= 0
    up = up.clamp(min=0)
    sibling = torch.where(left[up] == leaves, right[up], left[up])
    sibling_is_leaf = left[sibling] < 0
    target = torch.where(sibling_is_leaf, torch.minimum(leaves, sibling), paths.leftmost[sibling])
    target = torch.where(has_parent, target, leaves)
    row_of_leaf = torch.full((n_nodes,), -1, dtype=torch.int64, device=left.device)
    row_of_leaf[leaves] = torch.arange(leaves.numel(), device=left.device)
    rep = row_of_leaf[target]
    for _ in range(max(1, int(paths.depth.max()) + 1).bit_length()):
        rep = rep[rep]
    return rep


def _pack_sets(features: Tensor, layout: KeyLayout) -> Tensor:
    """``(r, w)`` feature sets (``-1`` = none, repeats allowed) -> ``(r, n_words)`` keys of the sets."""
    rows = torch.where(features >= 0, features, layout.n)
    rows = canonical(rows, layout.n, parity=False)[:, : layout.width]
    return layout.pack(rows)


def maximal_parents(keys: Tensor, layout: KeyLayout) -> Tensor:
    """``(m,)`` for each family, a family of largest size that contains it (itself when none does).

    Only a larger family can contain another, so nothing is enumerated when all families have one size.
    Otherwise every subset of every family is built by doubling (all padded to the largest size, the subsets
    that take padding dropped) and matched with the families' keys in one sort; skipped (every family its own
    parent) above :data:`MAX_SUBSET_ROWS` padded subsets.
    """
    m = keys.shape[0]
    supports = layout.unpack(keys)
    sizes = (supports >= 0).sum(dim=1)
    identity = torch.arange(m, device=keys.device)
    if m < 2 or int(sizes.min()) == int(sizes.max()) or m * 2 ** int(sizes.max()) > MAX_SUBSET_ROWS:
        return identity
    width = int(sizes.max())
    codes = torch.where(supports[:, :width] >= 0, supports[:, :width], layout.n)  # ascending, padding last
    words, taken = subsets(layout, codes)
    inside = (taken < torch.bitwise_left_shift(torch.ones_like(taken), sizes[:, None])).flatten()  # no padding
    inverse, count = unique_keys(torch.cat([keys, words.reshape(-1, layout.n_words)[inside]]))
    family_of = torch.full((count,), -1, dtype=torch.int64, device=keys.device)
    family_of[inverse[:m]] = identity
    matched = family_of[inverse[m:]]
    owner = identity.repeat_interleave(2**width)[inside]
    hit = matched >= 0
    best = sizes * m + (m - 1 - identity)  # larger size first, then smaller id
    best.scatter_reduce_(0, matched[hit], sizes[owner[hit]] * m + (m - 1 - owner[hit]), "amax")
    return m - 1 - best % m
