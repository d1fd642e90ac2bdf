"""The exact expansion of a parsed ensemble into Fourier terms, generated in chunks under the memory budget.

Node tables: a tree on binary features is ``t(x) = (1+χ_i)/2 · t_left(x) + (1-χ_i)/2 · t_right(x)`` with
``χ_i = (-1)^{x_i}`` (``x_i = 1`` goes right). Expanding the product along every root-to-leaf path and grouping
terms by the deepest split they use gives, for each internal node ``u`` at depth ``k`` and each subset ``A``
of its ``k`` ancestors, the frequency ``e_{i_u} ⊕ (⊕_{a∈A} e_{i_a})`` with amplitude
``(M(left u) - M(right u)) · Π_{a∈A} s_a``, where ``s_a = +1`` if the path to ``u`` leaves ``a`` to the left and
``-1`` otherwise, and ``M(w) = Σ_{leaves l under w} v_l 2^{-depth(l)}``; the constant is ``Σ_trees M(root)``.

Oblivious trees (one split per level, leaf index ``L = Σ_j 2^j y_j`` with ``y_j`` "goes right at level j"):
``t = Σ_S â_S (-1)^{<S, y>}`` with ``â = WHT(v) / 2^d``, and ``(-1)^{y_j} = (-1)^{x_{b_j}}`` up to the sign of a
swapped split, so subset ``S`` of the levels gives the frequency ``⊕_{j∈S} e_{b_j}``.

Every term also carries the family (a leaf's root-to-leaf feature set, or an oblivious tree's feature set)
whose support contains its own, for kernels that group frequencies by support.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import progress
from torchxplain.fourier.spectrum._fwht import fwht
from torchxplain.fourier.trees._intervals import FeatureGroups, Slots, leaf_slots
from torchxplain.fourier.trees._terms import KeyLayout, TermBuffer, canonical, unique_keys
from torchxplain.fourier.trees.adapters._base import TreeEnsemble

SHOW_PROGRESS_TERMS = 2_000_000
Chunk = tuple[Tensor, Tensor, Tensor, Tensor | None]  # (rows (r, w) int64 with empty = n, amp, scale, family)


@dataclass
class _Level:
    """The internal nodes of one depth ``k`` with their ancestors' features and sides."""

    nodes: Tensor  # (c,) node ids
    path_feat: Tensor  # (c, k) binary feature of each ancestor (root first)
    path_right: Tensor  # (c, k) bool: the path leaves that ancestor to the right (sign -1)


class Expansion:
    """The node-table walk and oblivious blocks of one ensemble, ready to generate terms chunk by chunk.

    Args:
        ensemble: the parsed trees.
        split_feature: ``(S,)`` binary feature of every row of ``ensemble.split_table()``.
        split_swap: ``(S,)`` bool, splits where feature value 1 goes left (binary inputs), or ``None``.
        layout: the key layout of the spectrum's supports.
        device: where the expansion runs (float64 throughout).
        groups: for an encoding of continuous inputs, its features' groups: node tables then expand leaf by
            leaf in the interval form of :mod:`~torchxplain.fourier.trees._intervals`.
    """

    def __init__(
        self,
        ensemble: TreeEnsemble,
        split_feature: np.ndarray,
        split_swap: np.ndarray | None,
        layout: KeyLayout,
        device: torch.device,
        groups: FeatureGroups | None = None,
    ) -> None:
        self.layout, self.device = layout, device
        offsets = ensemble.split_offsets()
        swap = np.zeros(len(split_feature), dtype=bool) if split_swap is None else split_swap
        internal = np.flatnonzero(~ensemble.is_leaf)
        feat = np.zeros(len(ensemble.left), dtype=np.int64)
        feat[internal] = split_feature[offsets[0] : offsets[1]]
        flip = np.zeros(len(ensemble.left), dtype=bool)
        flip[internal] = swap[offsets[0] : offsets[1]]
        left, right = np.where(flip, ensemble.right, ensemble.left), np.where(flip, ensemble.left, ensemble.right)
        self.left, self.right = torch.from_numpy(left).to(device), torch.from_numpy(right).to(device)
        self.feat = torch.from_numpy(feat).to(device)
        self.levels, self.leaf_levels, depth = self._walk(torch.from_numpy(ensemble.roots).to(device))
        value = torch.from_numpy(ensemble.value).to(device)
        self.mass = torch.where(self.left < 0, value * torch.pow(2.0, -depth.double()), torch.zeros_like(value))
        for level in reversed(self.levels):
            self.mass[level.nodes] = self.mass[self.left[level.nodes]] + self.mass[self.right[level.nodes]]
        self.constant = float(self.mass[torch.from_numpy(ensemble.roots).to(device)].sum()) + ensemble.offset
        self.slots: Slots | None = None
        if groups is not None:  # leaf by leaf: the constant comes from the leaves' empty options
            self.slots = leaf_slots(self.leaf_levels, groups, layout.n)
            self.leaf_value = value[self.slots.nodes]
            self.constant = ensemble.offset
        self.blocks = [
            (
                torch.from_numpy(split_feature[start:stop].reshape(b.n_trees, b.depth)).to(device),
                torch.from_numpy(swap[start:stop].reshape(b.n_trees, b.depth)).to(device),
                torch.from_numpy(b.value).to(device),
            )
            for b, start, stop in zip(ensemble.oblivious, offsets[1:-1], offsets[2:])
        ]

    def _walk(self, roots: Tensor) -> tuple[list[_Level], list[tuple[Tensor, Tensor, Tensor]], Tensor]:
        """Walk down one depth at a time: internal nodes per level, ``(leaves, path features, sides)`` per level."""
        levels: list[_Level] = []
        leaves: list[tuple[Tensor, Tensor, Tensor]] = []
        depth = torch.zeros(len(self.left), dtype=torch.int64, device=self.device)
        nodes = roots
        path_feat = torch.zeros(len(nodes), 0, dtype=torch.int64, device=self.device)
        path_right = torch.zeros(len(nodes), 0, dtype=torch.bool, device=self.device)
        while len(nodes):
            depth[nodes] = len(levels)
            inner = self.left[nodes] >= 0
            leaves.append((nodes[~inner], path_feat[~inner], path_right[~inner]))
            nodes, path_feat, path_right = nodes[inner], path_feat[inner], path_right[inner]
            if not len(nodes):
                break
            levels.append(_Level(nodes, path_feat, path_right))
            step = torch.cat([path_feat, self.feat[nodes, None]], dim=1)
            side = torch.zeros(len(nodes), 1, dtype=torch.bool, device=self.device)
            nodes = torch.cat([self.left[nodes], self.right[nodes]])
            path_feat = torch.cat([step, step])
            path_right = torch.cat([torch.cat([path_right, side], 1), torch.cat([path_right, ~side], 1)])
        return levels, leaves, depth

    @property
    def n_terms(self) -> int:
        """Number of terms before merging duplicates (``Σ_u 2^depth(u)`` plus ``2^d`` per oblivious tree)."""
        blocks = sum(int(v.shape[0]) * int(v.shape[1]) for _, _, v in self.blocks)
        if self.slots is not None:
            return 1 + int((2 ** self.slots.count.double()).sum()) + blocks
        return 1 + sum(len(level.nodes) * 2**k for k, level in enumerate(self.levels)) + blocks

    # --- families: one per distinct root-to-leaf feature set ---------------------------------------------
    def family_keys(self) -> tuple[Tensor, Tensor, list[Tensor]]:
        """``(keys (m, n_words), node_family (N,), block_family [(T,) per block])``: the distinct feature sets
        of the root-to-leaf paths and oblivious trees, the family of every node (of a leaf below it for
        internal nodes), and of every oblivious tree."""
        empty = self.layout.n
        parts, owners = [], []
        for nodes, path, _ in self.leaf_levels:
            pad = torch.full((len(nodes), self.layout.width - path.shape[1]), empty, device=self.device)
            parts.append(self.layout.pack(canonical(torch.cat([path, pad.long()], 1), empty, parity=False)))
            owners.append(nodes)
        for features, _, _ in self.blocks:
            pad = torch.full((features.shape[0], self.layout.width - features.shape[1]), empty, device=self.device)
            parts.append(self.layout.pack(canonical(torch.cat([features, pad.long()], 1), empty, parity=False)))
        no_words = torch.zeros(0, self.layout.n_words, dtype=torch.int64, device=self.device)
        words = torch.cat(parts) if parts else no_words
        inverse, count = unique_keys(words)
        keys = words.new_zeros(count, words.shape[1]).index_copy_(0, inverse, words)
        node_family = torch.zeros(len(self.left), dtype=torch.int64, device=self.device)
        n_leaves = sum(len(o) for o in owners)
        if owners:
            node_family[torch.cat(owners)] = inverse[:n_leaves]
        for level in reversed(self.levels):  # an internal node takes its left child's family
            node_family[level.nodes] = node_family[self.left[level.nodes]]
        block_family, start = [], n_leaves
        for features, _, _ in self.blocks:
            block_family.append(inverse[start : start + features.shape[0]])
            start += features.shape[0]
        return keys, node_family, block_family

    # --- term generation --------------------------------------------------------------------------------
    def chunks(
        self, rows_per_chunk: int, node_family: Tensor | None, block_family: list[Tensor] | None
    ) -> Iterator[Chunk]:
        """Every term once, in chunks of at most ``max(rows_per_chunk, 1)`` rows (plus the constant)."""
        one = torch.ones(1, dtype=torch.float64, device=self.device)
        empty_row = torch.full((1, 1), self.layout.n, dtype=torch.int64, device=self.device)
        family = None if node_family is None else torch.zeros(1, dtype=torch.int64, device=self.device)
        yield empty_row, one * self.constant, one * abs(self.constant), family
        step = max(1, rows_per_chunk)
        if self.slots is None:
            sizes = [("node", k, len(level.nodes), 2**k) for k, level in enumerate(self.levels)]
        else:
            counts = self.slots.count
            self.by_count = {int(c): torch.nonzero(counts == c).reshape(-1) for c in torch.unique(counts).tolist()}
            sizes = [("leaf", c, len(rows), 2**c) for c, rows in self.by_count.items()]
        sizes += [("block", b, len(f), 2 ** f.shape[1]) for b, (f, _, _) in enumerate(self.blocks)]
        work = [(kind, i, s, e, size) for kind, i, count, size in sizes for s, e in _spans(count, size, step)]
        quiet = False if self.n_terms < SHOW_PROGRESS_TERMS else None  # no bar for small models
        for kind, index, start, stop, size in progress(work, show=quiet, desc="tree spectrum"):
            for m0 in range(0, size, step):
                masks = torch.arange(m0, min(size, m0 + step), device=self.device)
                if kind == "node":
                    yield self._node_terms(index, start, stop, masks, node_family)
                elif kind == "leaf":
                    yield self._leaf_terms(index, start, stop, masks, node_family)
                else:
                    yield self._block_terms(index, start, stop, masks, block_family)

    def _node_terms(self, k: int, start: int, stop: int, masks: Tensor, node_family: Tensor | None) -> Chunk:
        level = self.levels[k]
        nodes = level.nodes[start:stop]
        bits = _bits(masks, k)  # (M, k)
        chosen = torch.where(bits[None], level.path_feat[start:stop, None, :], self.layout.n)  # (c, M, k)
        own = self.feat[nodes, None, None].expand(-1, len(masks), 1)
        rows = canonical(torch.cat([own, chosen], dim=2).reshape(-1, k + 1), self.layout.n, parity=True)
        flips = (bits[None] & level.path_right[start:stop, None, :]).sum(dim=2) % 2
        delta = self.mass[self.left[nodes]] - self.mass[self.right[nodes]]
        amp = (delta[:, None] * (1 - 2 * flips).double()).reshape(-1)
        family = None if node_family is None else node_family[nodes].repeat_interleave(len(masks))
        return rows, amp, amp.abs(), family

    def _leaf_terms(self, s: int, start: int, stop: int, masks: Tensor, node_family: Tensor | None) -> Chunk:
        assert self.slots is not None
        rows = self.by_count[s][start:stop]  # leaves with s slots
        slot = self.slots.start[rows, None] + torch.arange(s, device=self.device)  # (c, s)
        feat, coef = self.slots.feat[slot], self.slots.coef[slot]  # (c, s, 2)
        bits = _bits(masks, s).long()[None, :, :, None].expand(len(rows), -1, -1, 1)  # (c, M, s, 1)
        chosen = torch.gather(feat[:, None].expand(-1, len(masks), -1, -1), 3, bits)[..., 0]  # (c, M, s)
        factor = torch.gather(coef[:, None].expand(-1, len(masks), -1, -1), 3, bits)[..., 0]
        amp = (self.leaf_value[rows, None] * factor.prod(dim=2)).reshape(-1)
        terms = canonical(chosen.reshape(len(rows) * len(masks), s), self.layout.n, parity=True)
        family = None if node_family is None else node_family[self.slots.nodes[rows]].repeat_interleave(len(masks))
        return terms, amp, amp.abs(), family

    def _block_terms(self, b: int, start: int, stop: int, masks: Tensor, block_family: list[Tensor] | None) -> Chunk:
        features, swap, value = (t[start:stop] for t in self.blocks[b])
        d = features.shape[1]
        spectrum = fwht(value, dim=1)[:, masks] / 2.0**d  # (c, M) in the levels' "goes right" bits
        bits = _bits(masks, d)
        flips = (bits[None] & swap[:, None, :]).sum(dim=2) % 2
        amp = (spectrum * (1 - 2 * flips).double()).reshape(-1)
        rows = torch.where(bits[None], features[:, None, :], self.layout.n).reshape(len(features) * len(masks), d)
        scale = (value.abs().mean(dim=1, keepdim=True) * d).expand(-1, len(masks)).reshape(-1)
        family = None if block_family is None else block_family[b][start:stop].repeat_interleave(len(masks))
        return canonical(rows, self.layout.n, parity=True), amp, scale, family


def _bits(masks: Tensor, k: int) -> Tensor:
    """``(M, k)`` bool: bit ``j`` of each subset mask."""
    return torch.bitwise_and(torch.bitwise_right_shift(masks[:, None], torch.arange(k, device=masks.device)), 1) > 0


def _spans(count: int, per_item: int, target_rows: int) -> list[tuple[int, int]]:
    """Slices of ``count`` items of ``per_item`` terms each, about ``target_rows`` terms per slice."""
    step = max(1, target_rows // max(per_item, 1))
    return [(s, min(s + step, count)) for s in range(0, count, step)]


def fill(expansion: Expansion, buffer: TermBuffer, rows_per_chunk: int, families: bool) -> Tensor | None:
    """Generate every term into ``buffer``; returns the family keys ``(m, n_words)`` when ``families``."""
    keys, node_family, block_family = expansion.family_keys() if families else (None, None, None)
    layout = expansion.layout
    for rows, amp, scale, family in expansion.chunks(rows_per_chunk, node_family, block_family):
        width = min(rows.shape[1], layout.width)
        buffer.add(layout.pack(rows[:, :width]), amp, scale, family)
    return keys
