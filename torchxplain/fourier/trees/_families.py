"""``SupportFamilies``: the frequencies of a tree spectrum grouped under small support sets.

Every frequency of a tree's expansion lies on one root-to-leaf path: its support is a subset of that path's
features. A family is such a feature set ``U`` (of a leaf's path, or of an oblivious tree's levels); families
contained in another family are merged into a maximal one that contains them, and every frequency is assigned
to one family whose support contains its own. Kernels that tabulate a family over its ``2^|U|`` patterns
(the small-support SHAP kernel) read the frequencies of each family from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import parse_memory
from torchxplain.fourier.trees._terms import KeyLayout, canonical, unique_keys

MAX_SUBSET_ROWS = 1 << 26  # above this many subsets, families are left unmerged (still valid, just not maximal)


@dataclass(frozen=True)
class SupportFamilies:
    """Frequencies of a tree spectrum grouped by a small support set (all on the spectrum's device).

    Attributes:
        supports: ``(m, s)`` int64 sorted binary features of each family's support ``U``, padded with ``-1``
            (``s`` = the largest ``|U|``, at most the trees' depth).
        sizes: ``(m,)`` int64 ``|U|`` of each family.
        family: ``(k,)`` int64 family of each frequency (row of the spectrum): ``supp f ⊆ supports[family[f]]``.
        indices: ``(k, d)`` int64 sorted features of each frequency, padded with ``-1`` (``d`` = degree).
    """

    supports: Tensor
    sizes: Tensor
    family: Tensor
    indices: Tensor

    @property
    def n_families(self) -> int:
        """Number of families ``m``."""
        return int(self.supports.shape[0])

    def members(self, j: int) -> Tensor:
        """``(k_j,)`` int64 rows of the spectrum in family ``j``."""
        return torch.nonzero(self.family == j).reshape(-1)

    def check(self) -> None:
        """Assert that every frequency's support lies inside its family's support (a cheap invariant)."""
        support = self.supports[self.family]  # (k, s)
        inside = (self.indices[:, :, None] == support[:, None, :]).any(dim=2) | (self.indices < 0)
        if not bool(inside.all()):
            raise AssertionError("a frequency's support is not inside its family's support")


def maximal_parents(keys: Tensor, layout: KeyLayout) -> Tensor:
    """``(m,)`` for each family, a family of largest size that contains it (itself when none does).

    Enumerates the ``2^|U|`` subsets of every family and matches them with the families' keys; skipped (every
    family its own parent) when that exceeds :data:`MAX_SUBSET_ROWS`.
    """
    m = keys.shape[0]
    supports = layout.unpack(keys)
    sizes = (supports >= 0).sum(dim=1)
    best = sizes * m + (m - 1 - torch.arange(m, device=keys.device))  # larger size first, then smaller id
    if m == 0 or int((2 ** sizes.double()).sum()) > MAX_SUBSET_ROWS:
        return torch.arange(m, device=keys.device)
    rows_budget = max(1, parse_memory() // (32 * layout.width + 64))
    order = torch.argsort(sizes)
    cost = torch.cumsum(2 ** sizes[order], dim=0)
    start = 0
    while start < m:  # chunks of families whose subsets fit the budget
        done = int(cost[start - 1]) if start else 0
        stop = max(start + 1, int(torch.searchsorted(cost, done + rows_budget, right=True)))
        chunk = order[start:stop]
        for size in torch.unique(sizes[chunk]).tolist():
            if size == 0:  # the empty family's one subset is itself; it is found inside every larger family
                continue
            owners = chunk[sizes[chunk] == size]
            masks = torch.arange(2**size, device=keys.device)
            bits = (masks[:, None] >> torch.arange(size, device=keys.device)) & 1 > 0  # (M, size)
            chosen = torch.where(bits[None], supports[owners, None, :size], layout.n).reshape(-1, size)
            sub = layout.pack(canonical(chosen, layout.n, parity=False))
            inverse, count = unique_keys(torch.cat([keys, sub]))
            family_of = torch.full((count,), -1, dtype=torch.int64, device=keys.device)
            family_of[inverse[:m]] = torch.arange(m, device=keys.device)
            matched = family_of[inverse[m:]]
            owner = owners.repeat_interleave(2**size)
            hit = matched >= 0
            score = sizes[owner[hit]] * m + (m - 1 - owner[hit])
            best.scatter_reduce_(0, matched[hit], score, "amax")
        start = stop
    return m - 1 - best % m


def build_families(keys: Tensor, family: Tensor, indices: Tensor, layout: KeyLayout) -> SupportFamilies:
    """Merge nested families, renumber the used ones and assemble :class:`SupportFamilies`.

    Args:
        keys: ``(m, n_words)`` packed supports of the leaf-path families.
        family: ``(k,)`` a family of each frequency (any that contains it).
        indices: ``(k, d)`` the frequencies' sorted features, ``-1`` padded.
    """
    if keys.shape[0] == 0:  # no trees: one empty family holds the constant
        keys = torch.zeros(1, layout.n_words, dtype=torch.int64, device=keys.device)
    family = maximal_parents(keys, layout)[family]
    used, family = torch.unique(family, return_inverse=True)
    supports = layout.unpack(keys[used])
    sizes = (supports >= 0).sum(dim=1)
    width = int(sizes.max()) if len(sizes) else 0
    return SupportFamilies(supports=supports[:, :width].contiguous(), sizes=sizes, family=family, indices=indices)
