"""The exact expansion of a parsed ensemble into Fourier terms, generated in chunks under the memory budget.

Node tables: a tree on binary features is ``t(x) = (1+χ_i)/2 · t_left(x) + (1-χ_i)/2 · t_right(x)`` with
``χ_i = (-1)^{x_i}`` (``x_i = 1`` goes right). Expanding the product along every root-to-leaf path and grouping
terms by the deepest split they use gives, for each internal node ``u`` at depth ``k`` and each subset ``A``
of its ``k`` ancestors, the frequency ``e_{i_u} ⊕ (⊕_{a∈A} e_{i_a})`` with amplitude
``(M(left u) - M(right u)) · Π_{a∈A} s_a``, where ``s_a = +1`` if the path to ``u`` leaves ``a`` to the left and
``-1`` otherwise, and ``M(w) = Σ_{leaves l under w} v_l 2^{-depth(l)}``; the constant is ``Σ_trees M(root)``.

Continuous inputs (an encoding's feature groups): each leaf is a product of two-option slots
(:mod:`~torchxplain.fourier.trees._intervals`), so a leaf with ``s`` slots gives ``2^s`` terms, one option per slot.

Oblivious trees (one split per level, leaf index ``L = Σ_j 2^j y_j`` with ``y_j`` "goes right at level j"):
``t = Σ_S â_S (-1)^{<S, y>}`` with ``â = WHT(v) / 2^d``, and ``(-1)^{y_j} = (-1)^{x_{b_j}}`` up to the sign of a
swapped split, so subset ``S`` of the levels gives the frequency ``⊕_{j∈S} e_{b_j}``.

Every source (an internal node, a leaf's slots, an oblivious tree) has a sorted list of candidate features, and
each of its terms selects some of them; a selection of a sorted list is sorted, so the terms' keys are packed
straight from the selection (:meth:`~torchxplain.fourier.trees._terms.KeyLayout.pack_selected`) — no per-term
sort. All sources of one kind are enumerated together, ragged (term ``t`` belongs to the source whose range
holds it), in chunks of a bounded number of terms; sources whose candidates repeat a feature (a degenerate
split, rare) take the general path, which sorts and cancels repeated features (``χ_i χ_i = 1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import progress
from torchxplain.fourier.spectrum._fwht import fwht
from torchxplain.fourier.trees._intervals import FeatureGroups, leaf_slots
from torchxplain.fourier.trees._paths import Paths, node_paths
from torchxplain.fourier.trees._terms import KeyLayout, canonical
from torchxplain.fourier.trees.adapters._base import TreeEnsemble

SHOW_PROGRESS_TERMS = 2_000_000
Chunk = tuple[Tensor, Tensor, Tensor, Tensor]  # (keys (r, n_words), amplitude, rounding scale, source family)


@dataclass
class Sources:
    """Sources of one kind: each row's sorted candidate features and how its terms select them.

    Term ``m`` (``0 <= m < count``) of row ``r`` selects the candidates of :meth:`Expansion._select`; its amplitude
    is :meth:`Expansion._amplitude`'s. ``family`` is the row's support family (``-1`` when found later).

    Attributes:
        kind: ``"node"``, ``"leaf"`` or ``"block"``.
        codes: ``(R, p)`` int64 candidate features, ascending, ``n`` past the end.
        count: ``(R,)`` int64 terms per row; start: ``(R,)`` int64 first term of each row (within the kind).
        general: ``(R,)`` bool, rows whose candidates repeat a feature (sorted and cancelled per term).
        family: ``(R,)`` int64 support family of each row's terms (assigned by
            :func:`~torchxplain.fourier.trees._families.assign_families`; ``-1`` until then or for none).
    """

    kind: str
    codes: Tensor
    count: Tensor
    start: Tensor
    general: Tensor
    family: Tensor

    @property
    def n_terms(self) -> int:
        return int(self.count.sum())


def _sorted_candidates(features: Tensor, n: int) -> tuple[Tensor, Tensor, Tensor]:
    """``(codes, position, repeats)``: each row of ``(R, p)`` features (``-1`` or ``n`` = none) sorted with ``n``
    last, the sorted position of every input column, and whether a row repeats a feature."""
    features = torch.where(features >= 0, features, n)
    codes, order = torch.sort(features, dim=1, stable=True)
    position = torch.empty_like(order).scatter_(
        1, order, torch.arange(order.shape[1], device=order.device).expand_as(order)
    )
    repeats = ((codes[:, 1:] == codes[:, :-1]) & (codes[:, 1:] < n)).any(1) if codes.shape[1] > 1 else codes[:, 0] < 0
    return codes, position, repeats


def _parity(x: Tensor) -> Tensor:
    """``(-1)^{popcount(x)}`` of non-negative int64 values, as 0/1 (1 = odd)."""
    for shift in (32, 16, 8, 4, 2, 1):
        x = x ^ torch.bitwise_right_shift(x, shift)
    return torch.bitwise_and(x, 1)


def _offsets(count: Tensor) -> Tensor:
    return torch.cumsum(count, 0) - count


@dataclass(frozen=True)
class _Block:
    """An oblivious block's per-tree data: the sorted position of each level's feature ``(T, d)``, the leaves'
    transform ``(T, 2^d)`` (already ``/ 2^d``), the swapped levels as a bit mask ``(T,)`` and the rounding scale."""

    position: Tensor
    spectrum: Tensor
    swap_mask: Tensor
    scale: Tensor


class Expansion:
    """The terms of one ensemble, ready to be generated chunk by chunk.

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
        n = layout.n
        offsets = ensemble.split_offsets()
        swap = np.zeros(len(split_feature), dtype=bool) if split_swap is None else split_swap
        internal = ~ensemble.is_leaf
        feat = np.full(len(ensemble.left), -1, dtype=np.int64)
        feat[internal] = split_feature[offsets[0] : offsets[1]]
        flip = np.zeros(len(ensemble.left), dtype=bool)
        flip[internal] = swap[offsets[0] : offsets[1]]
        left, right = np.where(flip, ensemble.right, ensemble.left), np.where(flip, ensemble.left, ensemble.right)
        value = torch.from_numpy(ensemble.value).to(device)
        self.paths: Paths = node_paths(
            torch.from_numpy(left).to(device), torch.from_numpy(right).to(device), torch.from_numpy(feat).to(device),
            value, ensemble.max_depth,
        )  # fmt: skip
        roots = torch.from_numpy(ensemble.roots).to(device)
        self.sources: list[Sources] = []
        self.constant = ensemble.offset
        if groups is None:
            self.constant += float(self.paths.mass[roots].sum())
            self._node_sources()
        else:  # leaf by leaf: the constant comes from the leaves' empty options
            self._leaf_sources(groups, value)
        self.blocks: list[_Block] = []
        for index, (b, start, stop) in enumerate(zip(ensemble.oblivious, offsets[1:-1], offsets[2:])):
            features = torch.from_numpy(split_feature[start:stop].reshape(b.n_trees, b.depth)).to(device)
            levels = torch.arange(b.depth, device=device)
            swap_mask = torch.bitwise_left_shift(
                torch.from_numpy(swap[start:stop]).to(device).long(), levels.repeat(b.n_trees)
            )
            block_value = torch.from_numpy(b.value).to(device)
            codes, position, repeats = _sorted_candidates(features, n)
            self.blocks.append(
                _Block(
                    position=position,
                    spectrum=fwht(block_value, dim=1) / 2.0**b.depth,
                    swap_mask=swap_mask.view(b.n_trees, b.depth).sum(1),
                    scale=block_value.abs().mean(dim=1) * b.depth,
                )
            )
            count = torch.full((b.n_trees,), 2**b.depth, dtype=torch.int64, device=device)
            self.sources.append(
                Sources(f"block{index}", codes, count, _offsets(count), repeats, torch.full_like(count, -1))
            )

    # --- sources -----------------------------------------------------------------------------------------
    def _node_sources(self) -> None:
        paths, n = self.paths, self.layout.n
        nodes = paths.internal
        candidates = torch.cat([paths.feature[nodes, None], paths.ancestors[nodes]], dim=1)  # own first
        codes, position, repeats = _sorted_candidates(candidates, n)
        # a term chooses a subset of the ancestors (in sorted order, own left out) and always the own feature
        self.own_position = position[:, 0]
        rank_skip = position[:, 1:] - (position[:, 1:] > self.own_position[:, None]).long()  # own removed
        on_right = paths.went_right[nodes] & (paths.ancestors[nodes] >= 0)
        self.right_mask = (torch.bitwise_left_shift(on_right.long(), rank_skip.clamp(min=0))).sum(1)
        self.delta = paths.mass[paths.left[nodes]] - paths.mass[paths.right[nodes]]
        count = torch.bitwise_left_shift(torch.ones_like(nodes), paths.depth[nodes])
        self.node_ids = nodes
        self.sources.append(Sources("node", codes, count, _offsets(count), repeats, torch.full_like(nodes, -1)))

    def _leaf_sources(self, groups: FeatureGroups, value: Tensor) -> None:
        paths, n = self.paths, self.layout.n
        leaves = paths.leaves
        slots = leaf_slots(leaves, paths.ancestors[leaves], paths.went_right[leaves], groups, n)
        width = int(slots.count.max()) if slots.count.numel() else 0
        rows = slots.leaf
        column = torch.arange(rows.numel(), device=self.device) - slots.start[rows]
        feat = torch.full((leaves.numel(), max(width, 1), 2), n, dtype=torch.int64, device=self.device)
        coef = torch.zeros(leaves.numel(), max(width, 1), 2, dtype=torch.float64, device=self.device)
        coef[:, :, 0] = 1.0  # past a leaf's slots: the empty option with factor 1 (never the other: m < 2^count)
        feat[rows, column] = slots.feat
        coef[rows, column] = slots.coef
        flat = feat.reshape(leaves.numel(), 2 * feat.shape[1])
        codes, position, repeats = _sorted_candidates(flat, n)
        slot_bits = torch.bitwise_left_shift(torch.ones_like(position), position)
        self.slot_bits = torch.where(flat < n, slot_bits, 0).view_as(feat)
        self.slot_coef, self.leaf_value = coef, value[leaves]
        count = torch.bitwise_left_shift(torch.ones_like(leaves), slots.count)
        self.sources.append(Sources("leaf", codes, count, _offsets(count), repeats, torch.full_like(leaves, -1)))

    @property
    def n_terms(self) -> int:
        """Number of terms before merging duplicates (plus the constant)."""
        return 1 + sum(s.n_terms for s in self.sources)

    # --- term generation --------------------------------------------------------------------------------
    def chunks(self, rows_per_chunk: int) -> Iterator[Chunk]:
        """Every term once, in chunks of at most ``max(rows_per_chunk, 1)`` terms (plus the constant)."""
        one = torch.ones(1, dtype=torch.float64, device=self.device)
        empty = torch.zeros(1, self.layout.n_words, dtype=torch.int64, device=self.device)
        yield empty, one * self.constant, one * abs(self.constant), torch.full((1,), -1, device=self.device)
        step = max(1, rows_per_chunk)
        work = [(s, t0, min(t0 + step, s.n_terms)) for s in self.sources for t0 in range(0, s.n_terms, step)]
        quiet = False if self.n_terms < SHOW_PROGRESS_TERMS else None  # no bar for small models
        for source, t0, t1 in progress(work, show=quiet, desc="tree spectrum"):
            terms = torch.arange(t0, t1, device=self.device)
            row = torch.searchsorted(source.start, terms, right=True) - 1
            mask = terms - source.start[row]
            selected, amp, scale = self._terms(source, row, mask)
            general = source.general[row]
            keys = self.layout.pack_selected(source.codes[row], selected)
            if bool(general.any()):
                keys[general] = self._general_keys(source.codes[row[general]], selected[general])
            yield keys, amp, scale, source.family[row]

    def _terms(self, source: Sources, row: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(selected, amplitude, scale)`` of terms ``mask`` of rows ``row``."""
        if source.kind == "node":
            own = self.own_position[row]
            low = torch.bitwise_and(mask, torch.bitwise_left_shift(torch.ones_like(own), own) - 1)
            high = torch.bitwise_left_shift(torch.bitwise_right_shift(mask, own), own + 1)
            selected = high | low | torch.bitwise_left_shift(torch.ones_like(own), own)
            sign = 1.0 - 2.0 * _parity(torch.bitwise_and(mask, self.right_mask[row])).double()
            amp = self.delta[row] * sign
            return selected, amp, amp.abs()
        if source.kind == "leaf":
            width = self.slot_bits.shape[1]
            choice = torch.bitwise_and(
                torch.bitwise_right_shift(mask[:, None], torch.arange(width, device=self.device)), 1
            )  # (t, width)
            selected = self.slot_bits[row].gather(2, choice[:, :, None])[..., 0].sum(1)
            amp = self.leaf_value[row] * self.slot_coef[row].gather(2, choice[:, :, None])[..., 0].prod(1)
            return selected, amp, amp.abs()
        block = self.blocks[int(source.kind.removeprefix("block"))]
        position = block.position[row]  # (t, d) sorted position of each level
        levels = torch.arange(position.shape[1], device=self.device)
        bits = torch.bitwise_and(torch.bitwise_right_shift(mask[:, None], levels), 1)
        selected = torch.bitwise_left_shift(bits, position).sum(1)
        sign = 1.0 - 2.0 * _parity(torch.bitwise_and(mask, block.swap_mask[row])).double()
        return selected, block.spectrum[row, mask] * sign, block.scale[row]

    def _general_keys(self, codes: Tensor, selected: Tensor) -> Tensor:
        """Keys of selections from candidate lists that repeat a feature: sorted, repeated pairs cancelled."""
        p = codes.shape[1]
        bit = torch.bitwise_and(torch.bitwise_right_shift(selected[:, None], torch.arange(p, device=codes.device)), 1)
        chosen = torch.where(bit > 0, codes, self.layout.n)
        rows = canonical(chosen, self.layout.n, parity=True)[:, : self.layout.width]
        return self.layout.pack(rows)
