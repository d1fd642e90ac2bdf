"""Support families: sets ``U`` of features such that every frequency's support lies in one of them.

:class:`SupportFamilies` is the one cover type of the package: the small-support kernel reads it, a tree
extraction records it (a root-to-leaf path's features cover every frequency of that path, see
:mod:`~torchxplain.fourier.trees._families`) and :func:`support_families` finds it for any other spectrum.

The search takes the maximal supports of the spectrum (supports contained in no other one), so nested
supports are merged: for a tree, every subset of a root-to-leaf path's features joins that path's family.
They are found greedily from the highest degree down: the keys of every subset of the families found so far
are sorted together with the keys of the remaining supports (exact packed keys,
:mod:`~torchxplain.fourier.values._keys`), so each remaining support learns whether a family holds it; one found
in none is maximal and starts a new family. Each frequency is assigned to one family containing it; the
constant term (empty support) to none.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.values._keys import KeyLayout, subsets, unique_keys

MAX_FAMILY_SIZE = 16
"""Largest support the family search (and the small-support kernel) handles: ``2^16`` subsets per family."""


@dataclass(frozen=True)
class SupportFamilies:
    """Support families of a spectrum, ordered by size (so families of equal size are contiguous).

    Attributes:
        members: ``(M, u_max)`` int64 features of each family in increasing order, padded with ``-1``.
        sizes: ``(M,)`` int64 ``|U|`` of each family (non-decreasing).
        family: ``(k,)`` int64 family of each frequency (``-1`` for the constant term).
        features: ``(k, D)`` int64 features of each frequency in increasing order, padded with ``n`` (as
            :func:`feature_lists` gives them), when known: the cost model reads the degrees from them.
    """

    members: Tensor
    sizes: Tensor
    family: Tensor
    features: Tensor | None = None

    def __len__(self) -> int:
        return int(self.sizes.shape[0])

    def restrict(self, keep: Tensor) -> SupportFamilies:
        """The cover of the frequencies ``keep`` (``(k,)`` bool) selects, in their order: families no kept
        frequency uses are dropped."""
        features = None if self.features is None else self.features[keep]
        return from_cover(self.members, self.sizes, self.family[keep], None, features)

    def size_classes(self) -> list[tuple[int, int, int]]:
        """``[(u, start, stop), ...]``: the families of size ``u`` are ``start..stop-1``."""
        sizes, counts = torch.unique_consecutive(self.sizes, return_counts=True)
        stops = torch.cumsum(counts, 0).tolist()
        return [(int(u), stop - int(c), stop) for u, c, stop in zip(sizes.tolist(), counts.tolist(), stops)]


def from_cover(
    supports: Tensor, sizes: Tensor, family: Tensor, degrees: Tensor | None, features: Tensor | None = None
) -> SupportFamilies:
    """:class:`SupportFamilies` from any valid cover — ``(m, s)`` supports padded with ``-1``, their sizes, and
    a family containing each frequency (``-1``: none, for the constant term) — such as the one a tree extraction
    records: unused and empty families are dropped, the rest sorted by size, and frequencies of degree 0
    (``degrees``, when given) get no family. The cover is trusted, not re-checked."""
    if degrees is not None:
        family = torch.where(degrees.to(family.device) > 0, family, -1)
    family = torch.where(sizes[family.clamp(min=0)] > 0, family, -1) if sizes.numel() else family
    used, inverse = torch.unique(family[family >= 0], return_inverse=True)
    order = torch.argsort(sizes[used], stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=order.device)
    out = family.clone()
    out[family >= 0] = rank[inverse]
    members = supports[used[order]]
    width = int(sizes[used].max()) if used.numel() else 0
    return SupportFamilies(members[:, :width].contiguous(), sizes[used[order]], out, features)


def feature_lists(frequencies: Tensor) -> tuple[Tensor, Tensor]:
    """``(k, D)`` features of each frequency in increasing order (padded with ``n``) and ``(k,)`` degrees.

    The bools are scanned eight at a time (the flat buffer viewed as int64 words); only nonzero words are
    expanded, so sparse frequencies cost about an eighth of a dense scan.
    """
    k, n = frequencies.shape
    device = frequencies.device
    flat = frequencies.contiguous().view(-1).view(torch.uint8)
    body = flat.numel() // 8 * 8
    words = flat[:body].view(torch.int64)
    index = torch.nonzero(words).flatten()
    byte = torch.nonzero(words[index, None].view(torch.uint8).view(-1, 8), as_tuple=True)
    positions = torch.cat([index[byte[0]] * 8 + byte[1], body + torch.nonzero(flat[body:]).flatten()])
    rows, cols = positions // max(n, 1), positions % max(n, 1)  # row-major order: features ascending in a row
    degrees = torch.bincount(rows, minlength=k)
    width = int(degrees.max()) if k else 0
    position = torch.arange(rows.numel(), device=device) - (torch.cumsum(degrees, 0) - degrees)[rows]
    feats = torch.full((k, width), n, dtype=torch.int64, device=device)
    feats[rows, position] = cols
    return feats, degrees


def support_families(frequencies: Tensor, features: tuple[Tensor, Tensor] | None = None) -> SupportFamilies:
    """The maximal supports of ``frequencies`` (``(k, n)`` bool) and each frequency's family.

    ``features`` may pass their :func:`feature_lists`, computed already.

    Supports are matched by their packed keys (:mod:`~torchxplain.fourier.values._keys`: exact, a few words
    whatever ``n``). Cost: one sort per round of ``Σ_U 2^|U|`` subset keys of the new families and the pending
    frequencies (a round per degree at which new families appear; most supports are found in the first).

    Raises:
        ValueError: a frequency has more than :data:`MAX_FAMILY_SIZE` features.
    """
    device = frequencies.device
    k, n = frequencies.shape
    feats, degrees = feature_lists(frequencies) if features is None else features
    if feats.shape[1] > MAX_FAMILY_SIZE:
        raise ValueError(
            f"support families hold at most {MAX_FAMILY_SIZE} features, but a frequency has {feats.shape[1]}; "
            "spectra of such degrees take the dense kernel (kernel='gemm')"
        )
    layout = KeyLayout.create(n, feats.shape[1])
    keys = layout.pack(feats)  # features ascending, padded with n: exact keys
    family = torch.full((k,), -1, dtype=torch.int64, device=device)
    defining: list[Tensor] = []  # frequencies whose supports are the families, in order of discovery
    pending = torch.nonzero(degrees > 0).flatten()
    pending = pending[torch.argsort(degrees[pending], descending=True, stable=True)]
    while pending.numel():  # every pending support was looked up in every family found before
        d = int(degrees[pending[0]])
        top = int((degrees[pending] == d).sum(dtype=torch.int64))
        rows, pending = pending[:top], pending[top:]  # the largest left: in no family, so maximal
        first_id = sum(r.numel() for r in defining)
        family[rows] = torch.arange(rows.numel(), device=device) + first_id
        defining.append(rows)
        if pending.numel():
            found = _containing(layout, feats[rows, :d], keys[pending], first_id)
            family[pending] = found
            pending = pending[found < 0]
    if not defining:
        empty = torch.zeros(0, 0, dtype=torch.int64, device=device)
        return SupportFamilies(empty, empty.new_zeros(0), family, feats)
    first = torch.cat(defining)
    sizes = degrees[first]
    order = torch.argsort(sizes, stable=True)  # families of equal size contiguous, smallest first
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=device)
    members = feats[first[order]]
    members = torch.where(members < n, members, torch.full_like(members, -1))
    family = torch.where(family >= 0, rank[family.clamp(min=0)], family)
    return SupportFamilies(members, sizes[order], family, feats)


def _containing(layout: KeyLayout, supports: Tensor, queries: Tensor, first_id: int) -> Tensor:
    """For each query key ``(q, n_words)``, a family among ``supports`` (``(r, d)`` ascending features, ids from
    ``first_id``) that holds it, else ``-1``: every subset's key joins the queries' in one sort."""
    r, d = supports.shape
    words, _ = subsets(layout, supports)
    owner = (torch.arange(r, device=supports.device) + first_id).repeat_interleave(2**d)
    inverse, count = unique_keys(torch.cat([words.reshape(-1, layout.n_words), queries]))
    holder = torch.full((count,), -1, dtype=torch.int64, device=supports.device)
    holder.scatter_reduce_(0, inverse[: owner.numel()], owner, "amax")
    return holder[inverse[owner.numel() :]]
