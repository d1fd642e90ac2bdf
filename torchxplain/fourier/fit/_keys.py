"""One int64 key per term of units of distinct players (terms of a fit, or Walsh frequencies of such terms)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from torchxplain.fourier.fit._levels import PlayerLevels


class TermKeys:
    """One int64 key per term. When the players' grid ``Π_g L_g`` is below ``2^62`` a term's key is its grid index
    (the level of each of its players, mixed radix, 0 for the others): a sum of one value per unit, whatever the
    degree. Otherwise the digits ``unit + 1`` in base ``M + 1`` by position (units ascending, 0 for padding), which
    bounds the degree (:meth:`max_degree`). Either way the empty term's key is 0.

    Args:
        sizes: each player's number of levels (level 0, the reference, has no unit).
        device: where the keys live.
    """

    def __init__(self, sizes: list[int], device: torch.device) -> None:
        counts = torch.tensor(sizes, dtype=torch.long, device=device) - 1
        self.sizes, self.m, self.n_units = sizes, len(sizes), int(counts.sum())
        self.offsets = torch.cumsum(counts, 0) - counts
        self.grid = math.prod(sizes) < 2**62
        if self.grid:
            unit_player = torch.repeat_interleave(torch.arange(len(sizes), device=device), counts)
            strides = torch.ones(len(sizes), dtype=torch.long, device=device)
            for g in range(len(sizes) - 2, -1, -1):
                strides[g] = strides[g + 1] * sizes[g + 1]
            level = torch.arange(self.n_units, device=device) - self.offsets[unit_player] + 1
            zero = torch.zeros(1, dtype=torch.long, device=device)
            self.unit_value = torch.cat((level * strides[unit_player], zero))

    @classmethod
    def for_levels(cls, levels: PlayerLevels) -> TermKeys:
        """The keys of terms of the players' units."""
        return cls(levels.level_count(), levels.device)

    def max_degree(self) -> int:
        """The largest degree whose keys fit in an int64."""
        if self.grid:
            return self.m
        base, degree = self.n_units + 1, 0
        while base ** (degree + 1) < 2**62:
            degree += 1
        return degree

    def encode(self, units: Tensor) -> Tensor:
        """Keys of terms given as ascending unit ids ``(..., j)`` (padding ``M`` allowed)."""
        if self.grid:
            return self.unit_value[units].sum(-1)
        j = units.shape[-1]
        powers = (self.n_units + 1) ** torch.arange(j, device=units.device)
        return (torch.where(units < self.n_units, units + 1, 0) * powers).sum(-1)

    def decode(self, keys: Tensor, width: int) -> Tensor:
        """``(T, width)`` ascending unit ids of term keys, padded with ``M``."""
        n_units = self.n_units
        if self.grid:
            codes = torch.zeros(keys.numel(), self.m, dtype=torch.long, device=keys.device)
            rest = keys.clone()
            for g in range(self.m - 1, -1, -1):
                codes[:, g] = rest % self.sizes[g]
                rest = rest // self.sizes[g]
            units = torch.sort(torch.where(codes > 0, self.offsets + codes - 1, n_units), dim=1).values
            if units.shape[1] < width:
                units = torch.cat((units, units.new_full((units.shape[0], width - units.shape[1]), n_units)), 1)
            return units[:, :width]
        base = n_units + 1
        out = torch.full((keys.numel(), width), n_units, dtype=torch.long, device=keys.device)
        rest = keys.clone()
        for col in range(width):
            digit = rest % base
            out[:, col] = torch.where(digit > 0, digit - 1, n_units)
            rest = rest // base
        return out
