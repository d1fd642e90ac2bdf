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
its terms are subsets of them (one option per slot for a leaf), built by doubling from the largest candidate
down: a taken candidate goes to slot 0 of the key and the others move up, so the keys stay sorted — no per-term
sort (:func:`~torchxplain.fourier.values._keys.subsets`). Sources of one term count are batched (rows sorted by
count, a range padded to its largest); sources whose candidates repeat a feature (a degenerate split, rare) take
the general path, which sorts and cancels repeated features (``χ_i χ_i = 1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from torchxplain._core import progress
from torchxplain.fourier.spectrum import fwht
from torchxplain.fourier.trees._intervals import FeatureGroups, leaf_slots
from torchxplain.fourier.trees._paths import Paths, node_paths
from torchxplain.fourier.trees.adapters._base import TreeEnsemble
from torchxplain.fourier.values import KeyLayout, canonical, subsets

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
        count: ``(R,)`` int64 terms per row (rows sorted by it).
        general: ``(R,)`` bool, rows whose candidates repeat a feature (sorted and cancelled per term).
        family: ``(R,)`` int64 support family of each row's terms (assigned by
            :func:`~torchxplain.fourier.trees._families.assign_families`; ``-1`` until then or for none).
    """

    kind: str
    codes: Tensor
    count: Tensor
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


@dataclass(frozen=True)
class _Block:
    """An oblivious block's per-tree data, levels in the order of their sorted features: the swapped levels as a bit
    mask ``(T,)``, each level's bit ``2^level`` in the leaf index ``(T, d)``; and the leaves' transform ``(T, 2^d)``
    (already ``/ 2^d``) and rounding scale ``(T,)``."""

    swapped: Tensor
    weight: Tensor
    spectrum: Tensor
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
            swapped = torch.from_numpy(swap[start:stop].reshape(b.n_trees, b.depth)).to(device)
            block_value = torch.from_numpy(b.value).to(device)
            codes, order = torch.sort(features, dim=1, stable=True)
            repeats = ((codes[:, 1:] == codes[:, :-1]).any(1)) if b.depth > 1 else torch.zeros_like(codes[:, 0]) > 0
            self.blocks.append(
                _Block(
                    swapped=_bit_mask(swapped.gather(1, order)),
                    weight=torch.bitwise_left_shift(torch.ones_like(order), order),
                    spectrum=fwht(block_value, dim=1) / 2.0**b.depth,
                    scale=block_value.abs().mean(dim=1) * b.depth,
                )
            )
            count = torch.full((b.n_trees,), 2**b.depth, dtype=torch.int64, device=device)
            self.sources.append(Sources(f"block{index}", codes, count, repeats, torch.full_like(count, -1)))

    # --- sources -----------------------------------------------------------------------------------------
    def _node_sources(self) -> None:
        paths, n = self.paths, self.layout.n
        nodes = paths.internal
        nodes = nodes[torch.argsort(paths.depth[nodes], stable=True)]  # one depth after another: equal term counts
        ancestors = torch.where(paths.ancestors[nodes] >= 0, paths.ancestors[nodes], n)
        codes, order = torch.sort(ancestors, dim=1, stable=True)
        own = paths.feature[nodes]
        repeats = ((codes == own[:, None]).any(1)) | ((codes[:, 1:] == codes[:, :-1]) & (codes[:, 1:] < n)).any(1)
        self.node_right = _bit_mask(paths.went_right[nodes].gather(1, order))  # sorted ancestors with s_a = -1
        self.node_own, self.node_ids = own, nodes
        self.node_depth = paths.depth[nodes]
        self.delta = paths.mass[paths.left[nodes]] - paths.mass[paths.right[nodes]]
        count = torch.bitwise_left_shift(torch.ones_like(nodes), self.node_depth)
        self.sources.append(Sources("node", codes, count, repeats, torch.full_like(nodes, -1)))

    def _leaf_sources(self, groups: FeatureGroups, value: Tensor) -> None:
        paths, n = self.paths, self.layout.n
        slots = leaf_slots(paths.leaves, paths.ancestors[paths.leaves], paths.went_right[paths.leaves], groups, n)
        order = torch.argsort(slots.count, stable=True)  # one slot count after another
        count = slots.count[order]
        width = max(int(count.max()) if count.numel() else 0, 1)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(order.numel(), device=self.device)
        column = torch.arange(slots.leaf.numel(), device=self.device) - slots.start[slots.leaf]
        feat = torch.full((order.numel(), width, 2), n, dtype=torch.int64, device=self.device)
        coef = torch.zeros(order.numel(), width, 2, dtype=torch.float64, device=self.device)
        coef[:, :, 0] = 1.0  # past a leaf's slots: the empty option with factor 1, the other weighs nothing
        feat[rank[slots.leaf], column] = slots.feat
        coef[rank[slots.leaf], column] = slots.coef
        # slots in the order of their features: the binary features of one input are contiguous in an encoding,
        # so one option per slot is then ascending — unless a leaf's slots share a range (sorted per term then)
        by_feature = torch.argsort(feat.min(dim=2).values, dim=1, stable=True)[..., None].expand(-1, -1, 2)
        feat, coef = feat.gather(1, by_feature), coef.gather(1, by_feature)
        highest = torch.where(feat < n, feat, -1).max(dim=2).values
        overlap = (highest[:, :-1] >= feat.min(dim=2).values[:, 1:]).any(1) if width > 1 else count < 0
        flat = feat.reshape(order.numel(), 2 * width)
        codes, position, repeats = _sorted_candidates(flat, n)
        slot_bits = torch.bitwise_left_shift(torch.ones_like(position), position)
        self.slot_bits = torch.where(flat < n, slot_bits, 0).view_as(feat)
        self.slot_feat, self.slot_coef, self.slot_count = feat, coef, count
        self.leaf_value = value[paths.leaves[order]]
        terms = torch.bitwise_left_shift(torch.ones_like(count), count)
        self.sources.append(Sources("leaf", codes, terms, repeats | overlap, torch.full_like(count, -1)))

    @property
    def n_terms(self) -> int:
        """Number of terms before merging duplicates (plus the constant)."""
        return 1 + sum(s.n_terms for s in self.sources)

    # --- term generation --------------------------------------------------------------------------------
    def chunks(self, rows_per_chunk: int) -> Iterator[Chunk]:
        """Every term once, in chunks of about ``max(rows_per_chunk, 1)`` terms (plus the constant); a source with
        more terms than that is one chunk of its own."""
        one = torch.ones(1, dtype=torch.float64, device=self.device)
        empty = torch.zeros(1, self.layout.n_words, dtype=torch.int64, device=self.device)
        yield empty, one * self.constant, one * abs(self.constant), torch.full((1,), -1, device=self.device)
        step = max(1, rows_per_chunk)
        work = [(source, r0, r1) for source in self.sources for r0, r1 in _row_spans(source, step)]
        quiet = False if self.n_terms < SHOW_PROGRESS_TERMS else None  # no bar for small models
        for source, r0, r1 in progress(work, show=quiet, desc="tree spectrum"):
            if source.kind == "leaf":
                yield self._leaf_terms(source, r0, r1)
            else:
                yield self._subset_terms(source, r0, r1)

    def _subset_terms(self, source: Sources, r0: int, r1: int) -> Chunk:
        """Terms of rows ``r0:r1`` (one term count) of a node or oblivious source: every subset of the row's
        sorted candidates (a node's ancestors, a tree's levels), built by doubling (no per-term sort)."""
        rows = torch.arange(r0, r1, device=self.device)
        codes = source.codes[r0:r1]
        general = source.general[r0:r1]
        if source.kind == "node":  # rows sorted by depth: the last is the deepest; shallower rows' pad columns
            k = int(self.node_depth[r1 - 1])  # are their empty slots, and the subsets that take one are dropped
            keys, taken = subsets(self.layout, codes[:, :k])
            own = self.node_own[r0:r1, None]
            below = _popcount(taken & _bit_mask(codes[:, :k] < own)[:, None])  # ancestors under the own feature
            keys = self.layout.insert(keys, own.expand(-1, 2**k), below)
            flips = _popcount(taken & self.node_right[r0:r1, None]) & 1
            amp = self.delta[r0:r1, None] * (1.0 - 2.0 * flips.double())
            valid = (taken < torch.bitwise_left_shift(torch.ones_like(taken), self.node_depth[r0:r1, None])).flatten()
            keys, amp = keys.reshape(-1, self.layout.n_words)[valid], amp.reshape(-1)[valid]
            family = source.family[r0:r1, None].expand(-1, 2**k).reshape(-1)[valid]
            if bool(general.any()):  # a feature repeats among the candidates: sort and cancel per term
                terms = general[:, None].expand(-1, 2**k).reshape(-1)[valid]
                inside = valid.view(-1, 2**k)[general].flatten()
                keys[terms] = self._general_keys(source, rows[general], taken[general], k)[inside]
            return keys, amp, amp.abs(), family
        block = self.blocks[int(source.kind.removeprefix("block"))]
        k = codes.shape[1]
        keys, taken = subsets(self.layout, codes)
        bits = torch.bitwise_and(torch.bitwise_right_shift(taken[..., None], torch.arange(k, device=self.device)), 1)
        level = (bits * block.weight[r0:r1, None, :]).sum(-1)  # the subset as bits of the leaf index
        flips = _popcount(taken & block.swapped[r0:r1, None]) & 1
        amp = (block.spectrum[r0:r1].gather(1, level) * (1.0 - 2.0 * flips.double())).reshape(-1)
        scale = block.scale[r0:r1, None].expand(-1, 2**k).reshape(-1)
        keys = keys.reshape(-1, self.layout.n_words)
        if bool(general.any()):  # a feature repeats among the candidates: sort and cancel per term
            terms = general.repeat_interleave(2**k)
            keys[terms] = self._general_keys(source, rows[general], taken[general], k)
        return keys, amp, scale, source.family[r0:r1].repeat_interleave(2**k)

    def _leaf_terms(self, source: Sources, r0: int, r1: int) -> Chunk:
        """Terms of leaves ``r0:r1`` (sorted by slot count; the last has the most): one option per slot, by
        doubling over the slots from the last (keys stay sorted: a slot's options precede the next slot's)."""
        width = int(self.slot_count[r1 - 1])
        n, rows = self.layout.n, torch.arange(r0, r1, device=self.device)
        keys = torch.zeros(r1 - r0, 1, self.layout.n_words, dtype=torch.int64, device=self.device)
        amp = self.leaf_value[r0:r1, None]
        chosen = torch.zeros(r1 - r0, 1, dtype=torch.int64, device=self.device)
        for j in range(width - 1, -1, -1):
            up = self.layout.shift_up(keys)
            parts = []
            for option in (0, 1):
                code = self.slot_feat[r0:r1, j, option, None]
                with_it = up.clone()
                with_it[..., 0] |= code + 1
                parts.append(torch.where((code < n)[..., None], with_it, keys))
            keys = torch.cat(parts, dim=1)
            amp = torch.cat([amp * self.slot_coef[r0:r1, j, 0, None], amp * self.slot_coef[r0:r1, j, 1, None]], 1)
            bits = self.slot_bits[r0:r1, j]
            chosen = torch.cat([chosen | bits[:, 0, None], chosen | bits[:, 1, None]], dim=1)
        general = source.general[r0:r1]
        if bool(general.any()):  # slots that overlap or repeat a feature: sort and cancel per term
            codes = source.codes[rows[general]].repeat_interleave(chosen.shape[1], dim=0)
            fixed = self._selected_keys(codes, chosen[general].reshape(-1))
            keys[general] = fixed.view(-1, chosen.shape[1], self.layout.n_words)
        keep = (amp != 0).reshape(-1)  # the padded slots' second option, and terms that vanish
        family = source.family[r0:r1, None].expand(-1, chosen.shape[1]).reshape(-1)[keep]
        amp = amp.reshape(-1)[keep]
        return keys.reshape(-1, self.layout.n_words)[keep], amp, amp.abs(), family

    def _general_keys(self, source: Sources, rows: Tensor, taken: Tensor, k: int) -> Tensor:
        """Keys of the subsets ``taken`` (``(r, 2^k)`` bit masks over the sorted candidates) of rows whose
        candidates repeat a feature (plus a node's own feature)."""
        bits = torch.bitwise_and(torch.bitwise_right_shift(taken[..., None], torch.arange(k, device=self.device)), 1)
        chosen = torch.where(bits > 0, source.codes[rows, None, :k], self.layout.n)  # (r, 2^k, k)
        if source.kind == "node":
            own = self.node_own[rows, None, None].expand(-1, 2**k, 1)
            chosen = torch.cat([chosen, own], dim=2)
        rows_ = canonical(chosen.reshape(-1, chosen.shape[2]), self.layout.n, parity=True)[:, : self.layout.width]
        return self.layout.pack(rows_)

    def _selected_keys(self, codes: Tensor, selected: Tensor) -> Tensor:
        """Keys of selections from candidate lists that repeat a feature: sorted, repeated pairs cancelled."""
        p = codes.shape[1]
        bit = torch.bitwise_and(torch.bitwise_right_shift(selected[:, None], torch.arange(p, device=codes.device)), 1)
        chosen = torch.where(bit > 0, codes, self.layout.n)
        rows = canonical(chosen, self.layout.n, parity=True)[:, : self.layout.width]
        return self.layout.pack(rows)


def _row_spans(source: Sources, step: int) -> list[tuple[int, int]]:
    """Consecutive row ranges of about ``step`` terms each (at least one row). Rows are sorted by term count and a
    range is generated padded to its last (largest) row."""
    count = source.count.tolist()
    spans, start = [], 0
    while start < len(count):
        stop = start + 1
        while stop < len(count) and (stop - start + 1) * count[stop] <= step:
            stop += 1
        spans.append((start, stop))
        start = stop
    return spans


def _bit_mask(flags: Tensor) -> Tensor:
    """``(r, p)`` bool -> ``(r,)`` int64 with bit ``j`` set where column ``j`` is."""
    return torch.bitwise_left_shift(flags.long(), torch.arange(flags.shape[1], device=flags.device)).sum(1)


def _popcount(x: Tensor) -> Tensor:
    """Set bits of non-negative int64 values below ``2^32``."""
    x = x - (torch.bitwise_right_shift(x, 1) & 0x55555555)
    x = (x & 0x33333333) + (torch.bitwise_right_shift(x, 2) & 0x33333333)
    x = (x + torch.bitwise_right_shift(x, 4)) & 0x0F0F0F0F
    return torch.bitwise_right_shift(x * 0x01010101, 24) & 0xFF
