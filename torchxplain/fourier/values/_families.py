"""Support families: sets ``U`` of features such that every frequency's support lies in one of them.

:class:`SupportFamilies` is the one cover type of the package: the small-support kernel reads it, a tree
extraction records it (a root-to-leaf path's features cover every frequency of that path, see
:mod:`~torchxplain.fourier.trees._families`) and :func:`support_families` finds it for any other spectrum.

The search takes the maximal supports of the spectrum (supports contained in no other one), so nested
supports are merged: for a tree, every subset of a root-to-leaf path's features joins that path's family.
They are found greedily from the highest degree down. Every subset of a family's support is entered in a
sorted key table (the support's packed bits; a mixing hash of them when ``n > 63``), so whether a lower-degree
frequency lies in a family already found is one binary search; a frequency found in none is maximal and
starts a new family. Hash matches are verified bit by bit (a collision falls back to testing the families
directly), so the result is exact. Each frequency is assigned to one family
containing it; the constant term (empty support) to none.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory

MAX_FAMILY_SIZE = 16
"""Largest support the family search (and the small-support kernel) handles: ``2^16`` subsets per family."""
_BITS = 63  # bits per int64 word of a packed support (the sign bit stays clear)
_GOLDEN = -0x61C8864680B583EB  # 0x9E3779B97F4A7C15 as a signed int64 (splitmix64's increment)
_MIX1, _MIX2 = -0x40A7B892E31B1A47, -0x6B2FB644ECCEEE15  # 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


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


def pack(feats: Tensor, n: int) -> Tensor:
    """Feature lists ``(k, D)`` (padded with ``n``) -> ``(k, ceil(n/63))`` int64 words of their bits."""
    words = max(1, -(-n // _BITS))
    valid = feats < n
    powers = torch.bitwise_left_shift(
        torch.ones(_BITS, dtype=torch.int64, device=feats.device), torch.arange(_BITS, device=feats.device)
    )
    bit = torch.where(valid, powers[feats % _BITS], 0)  # a table lookup: variable shifts are slow
    index = torch.where(valid, feats // _BITS, 0)
    return torch.zeros(feats.shape[0], words, dtype=torch.int64, device=feats.device).scatter_add_(1, index, bit)


def _key(packed: Tensor) -> Tensor:
    """One int64 key per packed support: the word itself for ``n ≤ 63``, else a hash of the words.

    Each word goes through splitmix64's finaliser (with its position mixed in) before the words are summed: a
    linear combination of the words would collide whenever two supports differ by offsetting high bits in two
    words. Arithmetic wraps modulo 2^64; matches are verified bit by bit, so a collision costs time, not exactness.
    """
    if packed.shape[-1] == 1:
        return packed[..., 0]
    z = packed + _GOLDEN * torch.arange(1, packed.shape[-1] + 1, device=packed.device)
    z = (z ^ _shift(z, 30)) * _MIX1
    z = (z ^ _shift(z, 27)) * _MIX2
    return (z ^ _shift(z, 31)).sum(-1)


def _shift(z: Tensor, bits: int) -> Tensor:
    """Logical right shift of int64 values (torch's ``>>`` is arithmetic: it copies the sign bit)."""
    return (z >> bits) & ((1 << (64 - bits)) - 1)


def support_families(frequencies: Tensor, features: tuple[Tensor, Tensor] | None = None) -> SupportFamilies:
    """The maximal supports of ``frequencies`` (``(k, n)`` bool) and each frequency's family.

    ``features`` may pass their :func:`feature_lists`, computed already.

    Cost: ``O(nnz)`` to pack, ``Σ_U 2^|U|`` keys for the subsets of the families, and one binary search per
    frequency and round (a round per degree at which new families appear; most supports are found in the
    first).

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
    packed = pack(feats, n)
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
            family_words = packed[torch.cat(defining)]
            found, collided = _lookup(packed[pending], _subset_keys(feats[rows, :d], n, first_id), family_words)
            if bool(collided.any()):  # a hash collision may hide a family: test those supports directly
                found[collided] = _test_every_family(packed[pending[collided]], family_words)
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


def _subset_keys(feats: Tensor, n: int, first_id: int) -> tuple[Tensor, Tensor]:
    """Sorted keys of every subset of each new family's support (``(r, u)`` features) and the family ids."""
    r, u = feats.shape
    words = pack(feats.reshape(-1, 1), n).view(r, u, -1)  # one word row per member feature
    subsets = torch.zeros(r, 1, words.shape[-1], dtype=torch.int64, device=feats.device)
    for j in range(u):  # doubling: the subsets without member j, then with it
        subsets = torch.cat([subsets, subsets + words[:, j : j + 1]], dim=1)
    keys = _key(subsets).flatten()
    ids = (torch.arange(r, device=feats.device) + first_id).repeat_interleave(2**u)
    order = torch.argsort(keys)
    return keys[order], ids[order]


def _lookup(packed: Tensor, table: tuple[Tensor, Tensor], family_words: Tensor) -> tuple[Tensor, Tensor]:
    """A family of ``table`` (sorted subset keys, their family) containing each packed support, verified bit by bit,
    else ``-1``; and whether the key matched a family not containing it (a hash collision, which may hide one)."""
    keys, ids = table
    key = _key(packed)
    order = torch.argsort(key)  # sorted queries: successive binary searches stay in cache
    pos = torch.empty_like(order)
    pos[order] = torch.searchsorted(keys, key[order]).clamp(max=keys.numel() - 1)
    cand = ids[pos]
    match = keys[pos] == key
    inside = match & (torch.bitwise_and(packed, ~family_words[cand]) == 0).all(1)
    return torch.where(inside, cand, -1), match & ~inside


def _test_every_family(packed: Tensor, family_words: Tensor) -> Tensor:
    """Fallback after a hash collision (rare): the first family containing each support, else ``-1``."""
    out = torch.full((packed.shape[0],), -1, dtype=torch.int64, device=packed.device)
    step = max(1, parse_memory() // (8 * family_words.numel() + 1))
    for r0, r1 in chunk_bounds(packed.shape[0], step):
        inside = (torch.bitwise_and(packed[r0:r1, None, :], ~family_words[None]) == 0).all(-1)
        out[r0:r1] = torch.where(inside.any(1), inside.to(torch.int8).argmax(1), -1)
    return out
