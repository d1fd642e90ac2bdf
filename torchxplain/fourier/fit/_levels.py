"""The players' observed levels: the identifiable (reference-coded) basis of every black-box fit, and its exact
map to Walsh terms.

With a background, interventional SHAP evaluates a model only at hybrids ``(x_S, b_{~S})``: each player's block of
bits comes whole from a row or from a background row, so every hybrid takes, per player, one of the bit patterns
(*levels*) that player shows in the data and the background. Functions on these points are coded per player by
its levels: the most frequent level is the *reference*, every other level is a *unit* (its indicator), and a term
is a product of units of distinct players. This basis is identifiable on the hybrids (the Walsh columns of a
one-hot block are not: the block's bits sum to one), and every hybrid activates at most one unit per player, so
designs stay sparse whatever the number of levels (one-hot blocks, thermometer codes of thresholds, single bits).

Each level's indicator has an exact Walsh expansion on the observed levels: the player's monomials that are
unisolvent on its levels (the single bits of a one-hot block or of a thermometer code; greedy otherwise), whose
evaluation matrix ``E`` is inverted, times each monomial's expansion
``Π_{i∈T} z_i = 2^{-|T|} Σ_{U⊆T} (-1)^{|U|} (-1)^{<U,z>}``. So a fitted function, or a whole table of values
(tabulation), maps exactly to a :class:`~torchxplain.fourier.spectrum._spectrum.FourierSpectrum`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.spectrum import pack_rows, unique_rows

_KEY_BITS = 40
"""Players up to this many bits are looked up by one packed key (wider ones, e.g. long thermometer codes, by rows)."""


@dataclass(frozen=True)
class PlayerWalsh:
    """A player's level indicators in Walsh terms: ``amplitudes[j, l]`` is the amplitude of the character of the
    (global) frequency ``frequencies[j]`` in the indicator of level ``l`` (exact on the observed levels)."""

    frequencies: Tensor  # (F, n) bool, only the player's bits set
    amplitudes: Tensor  # (F, L) float64


class PlayerLevels:
    """The levels each player takes in ``rows`` (data and background), reference-coded.

    Args:
        rows: ``(R, n)`` bool rows that define the levels (every hybrid of them takes only these).
        players: ``(n,)`` int64 player index per feature, ``0..m-1``.
        n_players: ``m``.

    Attributes:
        levels: per player, ``(L_g, w_g)`` bool patterns of its bits, the reference (most frequent) first.
        counts: per player, ``(L_g,)`` how many rows take each level.
        bits: per player, its feature indices (ascending).
        offsets: ``(m,)`` int64 id of each player's first unit; unit ``offsets[g] + l - 1`` is level ``l >= 1``.
        n_units: ``M``, the number of non-reference levels (id ``M`` is the padding/constant unit).
        unit_player: ``(M,)`` int64 the player of each unit.
    """

    def __init__(self, rows: Tensor, players: Tensor, n_players: int) -> None:
        device = rows.device
        self.n_features, self.m, self.players, self.device = rows.shape[1], n_players, players, device
        order = torch.argsort(players, stable=True)
        sizes = torch.bincount(players, minlength=n_players)
        self.bits = tuple(torch.split(order, sizes.tolist()))
        ones = rows.sum(0)  # single-bit players: their levels straight from the column counts
        levels, counts = [], []
        for bits in self.bits:
            if bits.numel() == 1:
                on = int(ones[bits[0]])
                count = torch.tensor([rows.shape[0] - on, on], device=device)
                patterns = torch.tensor([[False], [True]], device=device)[count > 0]
                count = count[count > 0]
            else:
                patterns, _, count = unique_rows(rows[:, bits])
            first = torch.argsort(count, descending=True, stable=True)  # the most frequent level is the reference
            levels.append(patterns[first])
            counts.append(count[first])
        self.levels, self.counts = tuple(levels), tuple(counts)
        n_levels = torch.tensor([lv.shape[0] for lv in levels], dtype=torch.long, device=device)
        self.n_levels = n_levels
        self.offsets = torch.cumsum(n_levels - 1, 0) - (n_levels - 1)
        self.n_units = int((n_levels - 1).sum())
        self.unit_player = torch.repeat_interleave(torch.arange(n_players, device=device), n_levels - 1)
        self._lookup = _KeyLookup(self)

    @property
    def grid_size(self) -> int:
        """``Π_g L_g``: how many distinct points hybrids of the rows can take."""
        return math.prod(int(lv.shape[0]) for lv in self.levels)

    def level_count(self) -> list[int]:
        """``L_g`` per player."""
        return [int(lv.shape[0]) for lv in self.levels]

    def codes(self, z: Tensor) -> Tensor:
        """``(N, m)`` int64 level index of each player in bool points ``z`` ``(N, n)`` (0 = reference).

        Raises:
            ValueError: a point holds a pattern no row had (it is not a hybrid of the rows).
        """
        return self._lookup(z)

    def active_units(self, z: Tensor) -> Tensor:
        """``(N, A)`` int64 unit ids of each point, ascending, padded with ``M`` (``A``: the most any point has)."""
        codes = self.codes(z)
        active = codes > 0
        width = max(int(active.sum(1).max()) if active.numel() else 0, 1)
        place = torch.cumsum(active, 1) - 1  # unit ids ascend with the player: keep the players' order
        out = torch.full((z.shape[0], width + 1), self.n_units, dtype=torch.long, device=z.device)
        out.scatter_(1, torch.where(active, place, width), self.offsets + codes - 1)
        out[:, width] = self.n_units
        return out[:, :width]

    def points(self, codes: Tensor) -> Tensor:
        """``(N, n)`` bool points of level indices ``(N, m)`` (the inverse of :meth:`codes`)."""
        out = torch.zeros(codes.shape[0], self.n_features, dtype=torch.bool, device=self.device)
        for g, bits in enumerate(self.bits):
            if bits.numel():
                out[:, bits] = self.levels[g][codes[:, g]]
        return out

    def walsh(self, g: int) -> PlayerWalsh:
        """Player ``g``'s level indicators in Walsh terms (exact on its observed levels)."""
        return _player_walsh(self.levels[g], self.bits[g], self.n_features)


class _KeyLookup:
    """Level index of every player of a batch of points: packed keys, one ``searchsorted`` for the narrow
    players; a row lookup per wide player."""

    def __init__(self, lv: PlayerLevels) -> None:
        width = torch.tensor([b.numel() for b in lv.bits], dtype=torch.long, device=lv.device)
        two_level = torch.tensor([int(n) == 2 for n in lv.n_levels.tolist()], dtype=torch.bool, device=lv.device)
        single = (width == 1) & two_level  # a bit: its code is whether it differs from the reference bit
        self.single = single.nonzero()[:, 0]
        self.single_feature = (
            torch.stack([lv.bits[g][0] for g in self.single.tolist()]) if self.single.numel() else self.single
        )
        self.single_reference = torch.tensor(
            [bool(lv.levels[g][0, 0]) for g in self.single.tolist()], dtype=torch.bool, device=lv.device
        )
        width = torch.tensor([b.numel() for b in lv.bits], dtype=torch.long, device=lv.device).masked_fill(single, -1)
        self.narrow = ((width <= _KEY_BITS) & (width >= 0)).nonzero()[:, 0]
        self.wide = (width > _KEY_BITS).nonzero()[:, 0].tolist()
        self.lv = lv
        position = torch.zeros(lv.n_features, dtype=torch.long, device=lv.device)
        for bits in lv.bits:
            position[bits] = torch.arange(bits.numel(), device=lv.device)
        narrow_feature = ((width[lv.players] <= _KEY_BITS) & (width[lv.players] >= 0)).nonzero()[:, 0]
        self.features = narrow_feature
        self.shift = position[narrow_feature]
        self.owner = lv.players[narrow_feature]
        # a global table of (key * m + player) for every narrow player's levels, sorted
        keys, index = [], []
        weights = 1 << torch.arange(_KEY_BITS, dtype=torch.long, device=lv.device)
        for g in self.narrow.tolist():
            level_keys = (lv.levels[g].long() * weights[: lv.levels[g].shape[1]]).sum(1)
            keys.append(level_keys * lv.m + g)
            index.append(torch.arange(level_keys.numel(), device=lv.device))
        table = torch.cat(keys) if keys else torch.zeros(0, dtype=torch.long, device=lv.device)
        order = torch.argsort(table)
        self.table = table[order]
        self.index = torch.cat(index)[order] if index else table
        self.wide_keys = {g: pack_rows(lv.levels[g]) for g in self.wide}

    def __call__(self, z: Tensor) -> Tensor:
        lv, n_points = self.lv, z.shape[0]
        out = torch.zeros(n_points, lv.m, dtype=torch.long, device=z.device)
        if self.single.numel():
            out[:, self.single] = (z[:, self.single_feature] != self.single_reference).long()
        chunk = rows_per_chunk(16 * (lv.m + self.features.numel()), n_points)
        for a, b in chunk_bounds(n_points, chunk) if self.narrow.numel() else []:
            key = torch.zeros(b - a, lv.m, dtype=torch.long, device=z.device)
            key.index_add_(1, self.owner, z[a:b, self.features].long() << self.shift)
            key = key[:, self.narrow] * lv.m + self.narrow
            pos = torch.searchsorted(self.table, key).clamp(max=max(self.table.numel() - 1, 0))
            found = self.table[pos] == key
            if not bool(found.all()):
                _unseen(z[a:b], (~found).nonzero()[0], self.narrow, a)
            out[a:b, self.narrow] = self.index[pos]
        for g in self.wide:
            known = self.wide_keys[g]
            packed = pack_rows(z[:, lv.bits[g]])
            _, inverse = torch.unique(torch.cat((known, packed)), dim=0, return_inverse=True)
            code = torch.full((int(inverse.max()) + 1,), -1, dtype=torch.long, device=z.device)
            code[inverse[: known.shape[0]]] = torch.arange(known.shape[0], device=z.device)
            found_codes = code[inverse[known.shape[0] :]]
            if bool((found_codes < 0).any()):
                row = int((found_codes < 0).nonzero()[0, 0])
                raise ValueError(f"point {row} holds a pattern of player {g} that no data or background row has")
            out[:, g] = found_codes
        return out


def _unseen(z: Tensor, where: Tensor, narrow: Tensor, start: int) -> None:
    row, col = int(where[0]), int(narrow[int(where[1])])
    raise ValueError(
        f"point {start + row} holds a pattern of player {col} that no data or background row has: it is not a "
        "hybrid of the rows the levels were read from"
    )


def _player_walsh(levels: Tensor, bits: Tensor, n: int) -> PlayerWalsh:
    """Walsh amplitudes of each level's indicator (module docstring): ``A = W E^{-1}``."""
    n_levels, width = levels.shape
    device = levels.device
    if n_levels == 1:  # a constant player: its only level's indicator is 1
        frequencies = torch.zeros(1, n, dtype=torch.bool, device=device)
        return PlayerWalsh(frequencies, torch.ones(1, 1, dtype=torch.float64, device=device))
    monomials = _unisolvent_monomials(levels)
    evaluations = torch.ones(n_levels, len(monomials) + 1, dtype=torch.float64, device=device)
    for c, members in enumerate(monomials):
        evaluations[:, c + 1] = levels[:, members].all(1).to(torch.float64)
    local, expansion = _monomial_walsh(monomials, width, device)
    amplitudes = expansion @ torch.linalg.inv(evaluations)  # (F, L)
    frequencies = torch.zeros(local.shape[0], n, dtype=torch.bool, device=device)
    frequencies[:, bits] = local
    return PlayerWalsh(frequencies, amplitudes)


def _unisolvent_monomials(levels: Tensor) -> list[list[int]]:
    """Bit sets (local indices) of ``L - 1`` monomials that, with the constant, are unisolvent on the levels.

    Single bits first (one-hot blocks and thermometer codes need nothing else), then the levels' own bit sets by
    increasing weight (together unisolvent: their evaluation matrix is unitriangular by weight); a candidate is
    kept when it raises the rank.
    """
    n_levels, width = levels.shape
    weight = levels.sum(1)
    if bool((weight[1:] == 1).all()) and int(weight[0]) <= 1:  # one-hot (or one-hot with an empty reference)
        return [[int(levels[lv].nonzero()[0, 0])] for lv in range(1, n_levels)]
    candidates = [[i] for i in range(width)]
    candidates += [levels[p].nonzero()[:, 0].tolist() for p in torch.argsort(weight, stable=True).tolist()]
    basis = torch.ones(n_levels, 1, dtype=torch.float64, device=levels.device) / math.sqrt(n_levels)
    chosen: list[list[int]] = []
    for members in candidates:
        if len(members) == 0 or members in chosen:
            continue
        column = levels[:, members].all(1).to(torch.float64)
        residual = column - basis @ (basis.T @ column)
        norm = float(residual.norm())
        if norm > 1e-9 * max(float(column.norm()), 1.0):
            basis = torch.cat((basis, (residual / norm)[:, None]), dim=1)
            chosen.append(members)
            if len(chosen) == n_levels - 1:
                break
    return chosen


def _monomial_walsh(monomials: list[list[int]], width: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """``(local frequencies (F, w) bool, W (F, 1 + len(monomials)))``: each monomial's Walsh expansion (column 0:
    the constant)."""
    index: dict[tuple[int, ...], int] = {(): 0}
    entries: list[tuple[int, int, float]] = [(0, 0, 1.0)]
    for c, members in enumerate(monomials):
        t = len(members)
        for mask in range(2**t):
            subset = tuple(members[i] for i in range(t) if (mask >> i) & 1)
            j = index.setdefault(subset, len(index))
            entries.append((j, c + 1, (-1.0) ** len(subset) * 2.0**-t))
    expansion = torch.zeros(len(index), len(monomials) + 1, dtype=torch.float64, device=device)
    for j, c, value in entries:
        expansion[j, c] += value
    local = torch.zeros(len(index), width, dtype=torch.bool, device=device)
    for subset, j in index.items():
        local[j, list(subset)] = True
    return local, expansion
