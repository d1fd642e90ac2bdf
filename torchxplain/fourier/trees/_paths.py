"""Root-to-node paths of a node table, for every node at once: ancestors, sides, depths, masses, leftmost leaves.

The node table of a parsed ensemble holds every tree's nodes; ``left[i] = -1`` marks a leaf. One pass per depth
follows the parent pointers (no loop over trees, leaves or nodes), so every node gets its ancestors' binary
features (nearest first) and the side its path takes at each of them; leaves are then the rows the expansions
and the support families read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Paths:
    """Every node's path from its root (all on one device).

    Attributes:
        left, right: ``(N,)`` int64 children (``-1`` at leaves), already swapped where a split sends 1 left.
        feature: ``(N,)`` int64 binary feature split at each internal node (``-1`` at leaves).
        ancestors: ``(N, D)`` int64 binary features of each node's ancestors, nearest first, ``-1`` past the root
            (``D`` = the deepest leaf's depth).
        went_right: ``(N, D)`` bool, whether the path to the node leaves that ancestor to the right.
        depth: ``(N,)`` int64 number of ancestors.
        leftmost: ``(N,)`` int64 the first leaf (following left children) below each node; a leaf itself.
        mass: ``(N,)`` float64 ``Σ_{leaves l below} value_l 2^{-depth(l)}``.
        leaves: ``(L,)`` int64 the leaves' node ids, ascending.
    """

    left: Tensor
    right: Tensor
    feature: Tensor
    ancestors: Tensor
    went_right: Tensor
    depth: Tensor
    leftmost: Tensor
    mass: Tensor
    leaves: Tensor

    @property
    def internal(self) -> Tensor:
        """``(N_int,)`` int64 ids of the internal nodes, ascending."""
        return torch.nonzero(self.left >= 0).flatten()


def node_paths(left: Tensor, right: Tensor, feature: Tensor, value: Tensor, max_depth: int) -> Paths:
    """:class:`Paths` of a node table.

    Args:
        left, right: ``(N,)`` int64 children, ``-1`` at leaves (global node ids of one table of many trees).
        feature: ``(N,)`` int64 binary feature of each internal node's split (ignored at leaves).
        value: ``(N,)`` float64 leaf values (ignored at internal nodes).
        max_depth: the deepest leaf's depth (the number of passes).
    """
    device = left.device
    n_nodes = left.shape[0]
    internal = torch.nonzero(left >= 0).flatten()
    sentinel = n_nodes  # the parent of roots, its own parent: one extra slot instead of clamping every pass
    parent = torch.full((n_nodes + 1,), sentinel, dtype=torch.int64, device=device)
    parent[left[internal]] = internal
    parent[right[internal]] = internal
    is_right = torch.zeros(n_nodes + 1, dtype=torch.bool, device=device)
    is_right[right[internal]] = True
    feat = torch.cat([torch.where(left >= 0, feature, -1), feature.new_full((1,), -1)])
    depth_cols = max(max_depth, 1)
    chain = torch.empty(n_nodes, depth_cols + 1, dtype=torch.int64, device=device)  # the node, then its ancestors
    chain[:, 0] = torch.arange(n_nodes, device=device)
    for j in range(depth_cols):
        chain[:, j + 1] = parent[chain[:, j]]
    ancestors = feat[chain[:, 1:]]
    went_right = is_right[chain[:, :-1]] & (ancestors >= 0)
    depth = (ancestors >= 0).sum(1)
    step = torch.where(left >= 0, left, torch.arange(n_nodes, device=device))
    for _ in range(max(1, depth_cols).bit_length()):  # pointer jumping: leaves are fixed points
        step = step[step]
    leaves = torch.nonzero(left < 0).flatten()
    share = value[leaves] * torch.pow(2.0, -depth[leaves].to(value.dtype))
    owners = chain[leaves]  # each leaf adds its share to itself and every ancestor (the sentinel absorbs padding)
    mass = value.new_zeros(n_nodes + 1).index_add_(0, owners.flatten(), share[:, None].expand_as(owners).flatten())
    return Paths(left, right, feature, ancestors, went_right, depth, step, mass[:n_nodes], leaves)
