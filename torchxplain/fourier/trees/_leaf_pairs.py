"""The pair route of the leaf values: (row, background row) pairs followed down the trees, for deep leaves.

A pair ``(x, b)`` reaches a node's subtree in the interventional game only while no player fails on both sides:
with ``F`` the players whose conditions so far ``x`` fails and ``G`` those ``b`` fails, the leaves below need
``F ∩ G = ∅`` (a failed condition must come from the other row), and both sets only grow down the tree. So the
pairs are followed level by level (:func:`~torchxplain.fourier.trees._leaves.frontiers` gives both rows' patterns at
every node) and dropped where they meet; at a leaf a pair adds its game's values in closed form
(:mod:`~torchxplain.fourier.trees._leaf_games`). The work is the number of (pair, node) visits — the nodes where a
hybrid of the pair can pass, as in interventional TreeSHAP's walk — instead of the ``2^d`` patterns of the dense
tables, which deep leaves (random forests at their default depth) cannot afford.

Memory: the live pairs of one level, three int64 columns (node row, row, background row); the caller sizes the
chunks of rows and trees with :func:`visits` (a probe of the pairs' visits per tree).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.trees._leaf_games import popcount
from torchxplain.fourier.trees._leaves import FeatureCodes, LeafTable, Slots, Traversal, frontiers


@dataclass(frozen=True)
class PairLeaves:
    """What the leaves of a tree range need for the pair route.

    Attributes:
        value: ``(L_range,)`` leaf values (tree weights included), in the traversal's leaf order.
        players: ``(L_range, D)`` the slots' players, ``m`` (a spare column) past a leaf's slots.
        n_slots: ``(L_range,)`` each leaf's number of slots.
        is_leaf, inner: per level, ``(width_t,)`` whether each frontier row is a leaf, and each internal row's
            position among the level's internal nodes (``-1`` at leaves).
        leaf: per level, ``(width_t,)`` each leaf row's position in the leaf order (``-1`` at internal nodes).
    """

    value: Tensor
    players: Tensor
    n_slots: Tensor
    is_leaf: list[Tensor]
    inner: list[Tensor]
    leaf: list[Tensor]


def pair_leaves(table: LeafTable, slot: Slots, plan: Traversal, m: int) -> PairLeaves:
    """The :class:`PairLeaves` of a traversal."""
    device = table.left.device
    rows = slot.leaf_of_node[plan.leaves]
    players = slot.players[rows]
    players = torch.where(players >= 0, players, m)
    is_leaf, inner, leaf = [], [], []
    for inner_rows, leaf_rows, leaf_index in zip(plan.inner_rows, plan.leaf_rows, plan.leaf_index):
        width = inner_rows.numel() + leaf_rows.numel()
        flag = torch.zeros(width, dtype=torch.bool, device=device)
        flag[leaf_rows] = True
        position = torch.full((width,), -1, dtype=torch.int64, device=device)
        position[inner_rows] = torch.arange(inner_rows.numel(), device=device)
        at = torch.full((width,), -1, dtype=torch.int64, device=device)
        at[leaf_rows] = leaf_index
        is_leaf.append(flag)
        inner.append(position)
        leaf.append(at)
    return PairLeaves(table.value[plan.leaves], players, slot.n_slots[rows], is_leaf, inner, leaf)


def pair_values(
    table: LeafTable,
    plan: Traversal,
    leaves: PairLeaves,
    rows: FeatureCodes,
    background: FeatureCodes,
    weights: tuple[Tensor, Tensor],
    out: Tensor,
) -> tuple[int, int]:
    """Add ``1/B`` times the values of every (row, background row) pair of a tree range to ``out`` ``(Q, m + 1)``
    (column ``m`` takes the padding; ``B`` the background rows given) and return the number of (pair, node) visits and
    the most pairs alive at one level.

    Args:
        table, plan, leaves: the tree range.
        rows, background: the coded rows ``(p, Q)`` and background rows ``(p, B)``.
        weights: ``(g, h)`` tables indexed ``[|G|, |F|]`` (:func:`~torchxplain.fourier.trees._leaf_games.weight_tables`)
            already divided by the background's full size.
    """
    q, n_bg = rows.code.shape[1], background.code.shape[1]
    device = rows.code.device
    width = plan.inner_rows[0].numel() + plan.leaf_rows[0].numel()
    node = torch.arange(width, device=device).repeat_interleave(q * n_bg)
    x = torch.arange(q, device=device).repeat_interleave(n_bg).repeat(width)
    b = torch.arange(n_bg, device=device).repeat(q * width)
    visits, peak = 0, 0
    for level, (fx, fb) in enumerate(zip(frontiers(table, plan, rows), frontiers(table, plan, background))):
        if not node.numel():
            break
        if level:  # the previous level's pairs at both children: keep those still disjoint
            meet = fx.view(-1).index_select(0, torch.add(x, node, alpha=q))
            meet &= fb.view(-1).index_select(0, torch.add(b, node, alpha=n_bg))
            keep = torch.nonzero(meet == 0).flatten()
            node, x, b = node.index_select(0, keep), x.index_select(0, keep), b.index_select(0, keep)
        visits += node.numel()
        peak = max(peak, node.numel())
        leaf = leaves.leaf[level].index_select(0, node)
        at = torch.nonzero(leaf >= 0).flatten()
        if at.numel():
            on = node.index_select(0, at)
            _add(
                fx, fb, on, x.index_select(0, at), b.index_select(0, at), leaf.index_select(0, at), leaves, weights, out
            )
            inner = torch.nonzero(leaf < 0).flatten()
            node, x, b = node.index_select(0, inner), x.index_select(0, inner), b.index_select(0, inner)
        k = leaves.inner[level].index_select(0, node)
        node = torch.cat([k, k + plan.inner_rows[level].numel()])
        x, b = torch.cat([x, x]), torch.cat([b, b])
    return visits, peak


def _add(
    fx: Tensor,
    fb: Tensor,
    node: Tensor,
    x: Tensor,
    b: Tensor,
    leaf: Tensor,
    leaves: PairLeaves,
    weights: tuple[Tensor, Tensor],
    out: Tensor,
) -> None:
    """Each pair's leaf game in closed form, added to ``out`` ``(Q, m + 1)`` at ``(x, player)``."""
    g, h = weights
    f = fx.view(-1).index_select(0, torch.add(x, node, alpha=fx.shape[1]))
    gb = fb.view(-1).index_select(0, torch.add(b, node, alpha=fb.shape[1]))
    a, nb = popcount(gb), popcount(f)
    scale = leaves.value[leaf]
    w_h, w_g = h[a, nb] * scale, g[a, nb] * scale
    flat, width = out.view(-1), out.shape[1]
    base = x * width
    players = leaves.players[leaf]
    most = int(leaves.n_slots[leaf].max())
    for s in range(most):
        bit = 1 << s
        value = ((gb & bit) != 0).to(w_h.dtype) * w_h - ((f & bit) != 0).to(w_g.dtype) * w_g
        flat.index_add_(0, base + players[:, s], value)
