"""Terms of a hybrid fit and their sparse design: every product of units a sample activates, found by subsets.

A term is a set of units of distinct players (:mod:`~torchxplain.fourier.fit._levels`); it is active on a point
when the point takes each of its units' levels. A point activates at most one unit per player, so its active
terms of degree ``<= d`` are exactly the subsets (of size ``1..d``) of its active units: the design is a list of
(sample, term) incidences, built by enumerating those subsets — grouped by how many units a point has, so
nothing is padded — and encoding each as one int64 key (unit ids in base ``M + 1``, ascending). The *pool* of a
stage is every term active on at least :data:`MIN_COUNT` samples: no term is left out because a parent looked
unimportant, so support discovery cannot stall on terms whose lower-order parts cancel.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels

MIN_COUNT = 4
"""A term must be active on at least this many fit samples to be a candidate (fewer cannot be estimated)."""


@lru_cache(maxsize=256)
def _combinations(a: int, j: int) -> Tensor:
    return torch.tensor(list(itertools.combinations(range(a), j)), dtype=torch.long).reshape(-1, j)


def subset_keys(active: Tensor, codec: TermKeys, degree: int) -> tuple[Tensor, Tensor, Tensor]:
    """Every subset of ``1..degree`` units of each point's active units.

    Args:
        active: ``(N, A)`` int64 unit ids per point, ascending, padded with ``M``.
        codec: the term keys.

    Returns:
        ``(point index, key, degree)`` int64 tensors, one entry per (point, subset).
    """
    device = active.device
    count = (active < codec.n_units).sum(1)
    points, keys, degrees = [], [], []
    for a in torch.unique(count).tolist():
        if a == 0:
            continue
        rows = (count == a).nonzero()[:, 0]
        units = active[rows, :a]
        for j in range(1, min(degree, a) + 1):
            combos = _combinations(a, j).to(device)
            for s, e in chunk_bounds(rows.numel(), rows_per_chunk(24 * combos.shape[0] * j, rows.numel())):
                key = codec.encode(units[s:e][:, combos])
                points.append(rows[s:e, None].expand_as(key).reshape(-1))
                keys.append(key.reshape(-1))
                degrees.append(torch.full((key.numel(),), j, dtype=torch.long, device=device))
    if not points:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return empty, empty, empty
    return torch.cat(points), torch.cat(keys), torch.cat(degrees)


def count_subsets(active: Tensor, n_units: int, degree: int) -> int:
    """How many (point, subset) entries :func:`subset_keys` would produce."""
    count = (active < n_units).sum(1)
    sizes = torch.bincount(count)
    total = 0
    for a, how_many in enumerate(sizes.tolist()):
        if how_many:
            total += how_many * sum(_combinations(a, j).shape[0] for j in range(1, min(degree, a) + 1))
    return total


@dataclass(frozen=True)
class Incidence:
    """The (sample, term) pairs of a design: ``rows`` and ``cols`` int64, ``n_rows`` samples, ``n_cols`` terms."""

    rows: Tensor
    cols: Tensor
    n_rows: int
    n_cols: int


class TermPool:
    """Every term active on at least ``min_count`` of the samples, with its incidences (module docstring).

    Args:
        levels: the players' levels; active: ``(N, A)`` active units of the samples (:meth:`active_units`).
        degree: most units per term; min_count: :data:`MIN_COUNT`.

    Attributes:
        keys: ``(T,)`` sorted term keys; degrees: ``(T,)``; counts: ``(T,)`` float64 samples per term;
        incidence: the design's (sample, term) pairs.
    """

    def __init__(self, codec: TermKeys, active: Tensor, degree: int, min_count: int = MIN_COUNT) -> None:
        self.codec, self.n_units, self.degree = codec, codec.n_units, degree
        points, keys, degrees = subset_keys(active, codec, degree)
        unique, inverse, counts = torch.unique(keys, return_inverse=True, return_counts=True)
        keep = counts >= min_count
        column = torch.cumsum(keep.long(), 0) - 1
        kept = keep[inverse]
        term_degree = torch.zeros(unique.numel(), dtype=torch.long, device=keys.device)
        term_degree[inverse] = degrees
        self.keys, self.degrees = unique[keep], term_degree[keep]
        self.counts = counts[keep].to(torch.float64)
        self.incidence = Incidence(points[kept], column[inverse[kept]], int(active.shape[0]), int(keep.sum()))

    def __len__(self) -> int:
        return int(self.keys.numel())

    def units(self, index: Tensor) -> Tensor:
        """``(len(index), degree)`` unit ids of the pool terms ``index``, padded with ``M``."""
        return self.codec.decode(self.keys[index], max(self.degree, 1))

    def positions(self, keys: Tensor) -> Tensor:
        """Pool index of each term key (``-1`` for keys not in the pool)."""
        if self.keys.numel() == 0:
            return torch.full_like(keys, -1)
        pos = torch.searchsorted(self.keys, keys).clamp(max=self.keys.numel() - 1)
        return torch.where(self.keys[pos] == keys, pos, -1)


def incidence_of(levels: PlayerLevels, codec: TermKeys, points: Tensor, keys: Tensor, degree: int) -> Incidence:
    """The incidences of sorted term ``keys`` on bool ``points`` (every subset looked up)."""
    return PointDesign(levels, codec, points).incidence(keys, degree)


class PointDesign:
    """Fixed points (e.g. the held-out check's) whose subsets are enumerated once per degree, so that every stage's
    fit is evaluated there by one ``searchsorted``."""

    def __init__(self, levels: PlayerLevels, codec: TermKeys, points: Tensor) -> None:
        self.codec, self.n_points = codec, int(points.shape[0])
        self.active = levels.active_units(points)
        self._subsets: dict[int, tuple[Tensor, Tensor]] = {}

    def incidence(self, keys: Tensor, degree: int) -> Incidence:
        """The incidences of sorted term ``keys`` of at most ``degree`` units."""
        if degree not in self._subsets:
            rows, found, _ = subset_keys(self.active, self.codec, degree)
            self._subsets[degree] = (rows, found)
        rows, found = self._subsets[degree]
        if keys.numel() == 0:
            empty = torch.zeros(0, dtype=torch.long, device=rows.device)
            return Incidence(empty, empty, self.n_points, 0)
        pos = torch.searchsorted(keys, found).clamp(max=keys.numel() - 1)
        hit = keys[pos] == found
        return Incidence(rows[hit], pos[hit], self.n_points, int(keys.numel()))


def apply(incidence: Incidence, coefficients: Tensor, constant: float) -> Tensor:
    """``(n_rows,)`` float64 ``constant + Φ c`` of a design."""
    out = torch.full((incidence.n_rows,), float(constant), dtype=torch.float64, device=coefficients.device)
    return out.index_add_(0, incidence.rows, coefficients[incidence.cols])
