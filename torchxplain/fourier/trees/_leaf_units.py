"""Units: small subtrees whose leaves are tabulated together, so a row pays one gather per unit, not per leaf.

Below a node ``u`` every leaf's fail pattern is a function of the row's fail pattern at ``u`` (its ``d_u`` bits)
and of the row's decisions at the subtree's distinct splits (``K_u`` bits; an oblivious tree's level is one split
however many nodes it has). So the values of all the subtree's leaves at a row are one entry of a table over
``2^{d_u + K_u}`` states with one column per player of the subtree — built once from the leaves' own tables
(:func:`~torchxplain.fourier.trees._leaf_values._slot_table`) — and a row costs its pattern at ``u`` (the traversal
stops there), ``K_u`` decisions and one gather of the columns, instead of every leaf's pattern and columns. Units
are the largest subtrees of height at most ``H`` whose tables have at most :data:`MAX_UNIT_BITS` bits (a leaf is a
unit of height 0); ``H`` grows with the rows of a call, which pay for the tables' ``2^{bits}`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.trees._leaves import LeafTable, Slots

MAX_UNIT_BITS = 10
"""Most bits of a unit table (``2^10`` states: wider tables cost more in cache misses than they save)."""


@dataclass(frozen=True)
class UnitGroup:
    """The units of one table width: ``b`` bits.

    Attributes:
        b: bits of the tables; rows: ``(U,)`` the units' rows in the traversal's terminal block.
        keys: ``(U, K)`` a node of each distinct split of each unit (any internal node past its splits).
        weights: ``(U, K)`` int64 ``2^{d_u + k}`` for split ``k`` (0 past the unit's splits).
        players: ``(U, S)`` the tables' columns' players (``m``, a spare row, past a unit's players).
        table: ``(U, S, 2^b)`` float64 values, leaf values and ``1/|D|`` included.
    """

    b: int
    rows: Tensor
    keys: Tensor
    weights: Tensor
    players: Tensor
    table: Tensor


def _heights(table: LeafTable, nodes: Tensor) -> Tensor:
    """``(N,)`` height of every node (0 at leaves; only ``nodes``, a range's, are filled)."""
    height = torch.zeros(table.n_nodes, dtype=torch.int64, device=table.left.device)
    depth = table.depth[nodes]
    for level in range(int(depth.max()) if nodes.numel() else -1, -1, -1):
        at = nodes[(depth == level) & (table.left[nodes] >= 0)]
        height[at] = 1 + torch.maximum(height[table.left[at]], height[table.right[at]])
    return height


def _subtrees(table: LeafTable, roots: Tensor, height: int) -> Tensor:
    """``(U, 2^{height+1} - 1)`` nodes below each root in heap order (children of position ``p`` at ``2p + 1``,
    ``2p + 2``), ``-1`` where there is none."""
    width = 2 ** (height + 1) - 1
    out = torch.full((roots.numel(), width), -1, dtype=torch.int64, device=roots.device)
    out[:, 0] = roots
    for p in range((width - 1) // 2):
        node = out[:, p]
        inner = node >= 0
        inner &= table.left[node.clamp(min=0)] >= 0
        out[:, 2 * p + 1] = torch.where(inner, table.left[node.clamp(min=0)], -1)
        out[:, 2 * p + 2] = torch.where(inner, table.right[node.clamp(min=0)], -1)
    return out


def _keys(table: LeafTable, sub: Tensor) -> tuple[Tensor, Tensor]:
    """Per unit, the split index of each heap position (``-1`` at leaves and gaps) and the number of distinct
    splits: a split is its feature, kind, threshold (or category set) and where missing values and zeros go (two
    nodes on one threshold may send a missing value different ways)."""
    node = sub.clamp(min=0)
    inner = (sub >= 0) & (table.left[node] >= 0)
    width = int(table.split.max()) + 2 if table.n_nodes else 1
    kind = table.categorical[node].long() * 4 + table.nan_right[node].long() * 2 + table.zero_missing[node].long()
    key = (table.feature[node] * 8 + kind) * width + table.split[node].long() + 1
    key = torch.where(inner, key, -1)
    ordered, order = torch.sort(key, dim=1)
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first &= ordered >= 0
    rank = torch.cumsum(first.long(), 1) - 1
    index = torch.empty_like(rank)
    index.scatter_(1, order, rank)
    return torch.where(inner, index, -1), first.sum(1)


def unit_roots(table: LeafTable, slot: Slots, nodes: Tensor, height: int, most: int = MAX_UNIT_BITS) -> Tensor:
    """The unit roots among ``nodes`` (one tree range's), in node order: the highest subtrees of height at most
    ``height`` whose tables have at most ``most`` bits (at most :data:`MAX_UNIT_BITS`; a subtree too wide splits
    into its children's; a leaf with more players than that is no unit)."""
    heights = _heights(table, nodes)
    parent = torch.full((table.n_nodes,), -1, dtype=torch.int64, device=nodes.device)
    inner = nodes[table.left[nodes] >= 0]
    parent[table.left[inner]] = inner
    parent[table.right[inner]] = inner
    up = parent[nodes]
    candidate = nodes[(heights[nodes] <= height) & ((up < 0) | (heights[up.clamp(min=0)] > height))]
    roots = []
    while candidate.numel():
        level_of = heights[candidate]
        wide = []
        for h in torch.unique(level_of).tolist():
            level = candidate[level_of == h]
            _, count = _keys(table, _subtrees(table, level, h))
            fits = slot.node_slots[level] + count <= most
            roots.append(level[fits])
            wide.append(level[~fits & (table.left[level] >= 0)])
        split = torch.cat(wide)
        candidate = torch.cat([table.left[split], table.right[split]])
    found = torch.cat(roots) if roots else nodes[:0]
    return torch.sort(found).values


def unit_groups(
    table: LeafTable,
    slot: Slots,
    roots: Tensor,
    height: int,
    leaf_values: tuple[Tensor, Tensor, Tensor],
    m: int,
) -> list[UnitGroup]:
    """The tables of the units rooted at ``roots`` (rows ``0..U-1`` of the terminal block, in this order).

    Args:
        table, slot: the tree range's table and slots.
        roots: ``(U,)`` unit roots; height: the largest unit height.
        leaf_values: ``(flat, offset, d)``: every leaf's ``(d, 2^d)`` table of slot values (scale included)
            flattened, and per node its table's offset in ``flat`` and its number of slots (leaves only).
        m: number of players (the spare player row).
    """
    flat, offset, leaf_d = leaf_values
    device = roots.device
    sub = _subtrees(table, roots, height)
    key_index, count = _keys(table, sub)
    d_root = slot.node_slots[roots]
    bits = d_root + count
    width = sub.shape[1]
    # every heap position's ancestors (nearest last) and the side taken at each
    depth_of = torch.floor(torch.log2(torch.arange(width, dtype=torch.float64) + 1)).long()
    ancestors = torch.full((width, height), -1, dtype=torch.int64)
    sides = torch.zeros((width, height), dtype=torch.int64)
    for p in range(1, width):
        q, j = p, int(depth_of[p]) - 1
        while q:
            ancestors[p, j], sides[p, j] = (q - 1) // 2, 1 - q % 2
            q, j = (q - 1) // 2, j - 1
    ancestors, sides = ancestors.to(device), sides.to(device)
    node = sub.clamp(min=0)
    is_leaf = (sub >= 0) & (table.left[node] < 0)
    groups = []
    for b in torch.unique(bits).tolist():
        pick = torch.nonzero(bits == b).flatten()
        players, columns = _columns(slot, sub[pick], is_leaf[pick], d_root[pick], m)
        # the spare column (last) takes no slot's values: the tables leave it out, so rows gather one column less
        players = players[:, :-1]
        tables = torch.zeros(pick.numel(), players.shape[1], 1 << b, dtype=torch.float64, device=device)
        # per unit: its states' fail patterns at every heap position, and per (leaf, slot) a gather's index and values
        step = max(1, min(parse_memory(), 1 << 25) // (8 * (1 + 2 * players.shape[1]) * width << b))
        for a in range(0, pick.numel(), step):
            rows = pick[a : a + step]
            _fill(
                tables[a : a + step],
                table,
                slot,
                sub[rows],
                key_index[rows],
                is_leaf[rows],
                d_root[rows],
                b,
                columns[a : a + step],
                ancestors,
                sides,
                flat,
                offset,
                leaf_d,
            )
        spare = int(torch.nonzero(table.left >= 0)[0]) if bool((table.left >= 0).any()) else 0
        keys, weights = _key_nodes(sub[pick], key_index[pick], d_root[pick], max(int(count[pick].max()), 1), spare)
        groups.append(UnitGroup(b, pick, keys, weights, players, tables))
    return groups


def _columns(slot: Slots, sub: Tensor, is_leaf: Tensor, d_root: Tensor, m: int) -> tuple[Tensor, Tensor]:
    """The units' players — the root's path players (slots ``0..d_u-1`` of every leaf below), then the players new
    below it in increasing order, ``m`` padding — and, per heap position and slot, the column it adds to:
    ``(U, S)`` and ``(U, width, D)``."""
    units, width = sub.shape
    rows = slot.leaf_of_node[sub.clamp(min=0)]
    leaf_players = torch.where(is_leaf[..., None], slot.players[rows.clamp(min=0)], -1)  # (U, width, D)
    depth = leaf_players.shape[2]
    position = torch.arange(depth, device=sub.device)
    below = (position[None, None, :] >= d_root[:, None, None]) & (leaf_players >= 0)
    fresh = torch.where(below, leaf_players, m + 1).reshape(units, -1)
    fresh, _ = torch.sort(fresh, dim=1)
    first = torch.ones_like(fresh, dtype=torch.bool)
    first[:, 1:] = fresh[:, 1:] != fresh[:, :-1]
    first &= fresh <= m
    rank = torch.cumsum(first.long(), 1) - 1  # rank among the new players, at every sorted position
    n_columns = int((d_root + first.sum(1)).max()) if units else 0
    players = torch.full((units, n_columns + 1), m, dtype=torch.int64, device=sub.device)  # + 1: a spare column
    any_leaf = torch.argmax(is_leaf.long(), 1)
    head = leaf_players[torch.arange(units, device=sub.device), any_leaf]  # (U, D): its first d_u are the root's
    keep = position[None, :] < d_root[:, None]
    cols = min(depth, n_columns + 1)
    players[:, :cols] = torch.where(keep, head, m)[:, :cols]
    target = torch.where(first, d_root[:, None] + rank, n_columns)
    players.scatter_(1, target, torch.where(first, fresh, m))
    players[:, n_columns] = m
    found = torch.searchsorted(fresh, torch.where(below, leaf_players, 0).reshape(units, -1).contiguous())
    new_column = d_root[:, None] + torch.gather(rank, 1, found.clamp(max=fresh.shape[1] - 1))
    column = torch.where(below.reshape(units, -1), new_column, position.repeat(width)[None, :])
    column = torch.where((leaf_players >= 0).reshape(units, -1), column, n_columns)
    return players, column.view(units, width, depth)


def _fill(
    out: Tensor,
    table: LeafTable,
    slot: Slots,
    sub: Tensor,
    key_index: Tensor,
    is_leaf: Tensor,
    d_root: Tensor,
    b: int,
    columns: Tensor,
    ancestors: Tensor,
    sides: Tensor,
    flat: Tensor,
    offset: Tensor,
    leaf_d: Tensor,
) -> None:
    """Add every leaf's slot values to its unit's table ``out`` ``(U, S, 2^b)`` at every state."""
    device = out.device
    state = torch.arange(1 << b, device=device)
    node = sub.clamp(min=0)
    # every leaf with slots below a unit: its fail pattern at every state, from the root's bits and the decisions
    unit, position = torch.nonzero(is_leaf & (leaf_d[node] > 0), as_tuple=True)
    leaf = node[unit, position]
    root = d_root[unit]
    fail = state[None, :] & ((torch.ones_like(root) << root) - 1)[:, None]  # (E, 2^b)
    for j in range(ancestors.shape[1]):
        above = ancestors[position, j]
        at = above.clamp(min=0)
        k = key_index[unit, at]
        decision = (state[None, :] >> (root + k.clamp(min=0))[:, None]) & 1
        failed = decision ^ sides[position, j][:, None]
        fail |= failed * (slot.bit[node[unit, at]] * ((above >= 0) & (k >= 0)))[:, None]
    # one entry per (leaf, slot): its slot's values at every state, added to its column's row
    n_slots = leaf_d[leaf]
    entry = torch.repeat_interleave(torch.arange(leaf.numel(), device=device), n_slots)
    slot_of = torch.arange(entry.numel(), device=device) - (torch.cumsum(n_slots, 0) - n_slots)[entry]
    start = offset[leaf][entry] + (slot_of << n_slots[entry])
    values = flat[start[:, None] + fail[entry]]
    rows = unit[entry] * out.shape[1] + columns[unit[entry], position[entry], slot_of]
    out.view(-1, out.shape[2]).index_add_(0, rows, values)


def _key_nodes(sub: Tensor, key_index: Tensor, d_root: Tensor, most: int, spare: int) -> tuple[Tensor, Tensor]:
    """``(U, most)`` a node of each split of each unit (``spare``, an internal node of the table, past a unit's
    splits) and the weights ``2^{d_u + k}`` of its decisions (0 for the padding)."""
    keys = torch.full((sub.shape[0], most), spare, dtype=torch.int64, device=sub.device)
    present = torch.zeros(sub.shape[0], most, dtype=torch.bool, device=sub.device)
    for p in range(sub.shape[1] - 1, -1, -1):  # the first node of each split in heap order wins
        k = key_index[:, p]
        rows = torch.nonzero(k >= 0).flatten()
        keys[rows, k[rows]] = sub[rows, p]
        present[rows, k[rows]] = True
    shift = d_root[:, None] + torch.arange(most, device=sub.device)
    return keys, torch.where(present, torch.ones_like(keys) << shift, 0)
