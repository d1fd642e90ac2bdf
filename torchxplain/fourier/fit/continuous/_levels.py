"""The players of raw rows and the level each row takes: slots of a thermometer code, or the hot column of a
one-hot block; and coarse levels for interactions (equal-count merges of neighbouring slots).

A hybrid ``(x_S, b_{~S})`` takes each player whole from one of two rows, so per player it takes one of the levels
that player shows in the data and the background. A continuous (or binary) column is one player whose levels are
the slots of its thresholds (:class:`~torchxplain.fourier.ThresholdEncoding`: level ``s`` = the number of its
thresholds the value lies right of); a one-hot block of columns is one player whose level is its hot column.
Interactions are fitted on *coarse* levels: for a thermometer player, at most ``k`` groups of neighbouring slots
cut at equal counts of the pooled rows, each cut one of the player's thresholds (so a coarse indicator is still a
monomial of the fine code).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain.fourier.encoding import ThresholdEncoding


@dataclass(frozen=True)
class Coarse:
    """One resolution of the players: ``level`` ``(m, L_max)`` int64 maps each fine level to its coarse level,
    ``sizes`` ``(m,)`` the coarse level counts, ``bits`` ``(m, K_max)`` int64 the encoding bit of each coarse
    level's indicator monomial (thermometer: the cut below level ``c``, ``-1`` for level 0, whose monomial is the
    constant; one-hot: the level's column bit, ``-1`` for a column never hot in the pooled rows)."""

    level: Tensor
    sizes: Tensor
    bits: Tensor


class RawPlayers:
    """Players of raw columns and their levels.

    Args:
        encoding: the thresholds of every raw column (one per column of a one-hot block, at 0.5).
        players: ``(p,)`` int64 dense player index per raw column, ``0..m-1``.
        pooled: ``(R, p)`` the rows that define the levels (data and background, raw).

    Raises:
        ValueError: a player of several columns that is not one-hot on ``pooled`` (exactly one 1 per row).
    """

    def __init__(self, encoding: ThresholdEncoding, players: Tensor, pooled: Tensor) -> None:
        device = pooled.device
        self.encoding, self.players = encoding, players
        self.m = int(players.max()) + 1 if players.numel() else 0
        self.p = encoding.n_features
        width = torch.bincount(players, minlength=self.m)
        self.one_hot = width > 1
        feature = encoding.feature.to(device)
        n_thresholds = torch.bincount(feature, minlength=self.p)
        self.first_bit = torch.cumsum(n_thresholds, 0) - n_thresholds  # bit index of each column's first threshold
        table = torch.full((self.p, max(int(n_thresholds.max()) if self.p else 0, 1)), torch.inf, dtype=torch.float64)
        rank = torch.arange(feature.numel(), device=device) - self.first_bit[feature]
        table = table.to(device)
        table[feature, rank] = encoding.threshold.to(device)
        self._thresholds = table  # (p, T_max) ascending, padded with +inf
        self._n_thresholds = n_thresholds
        self._check_one_hot(pooled)
        # a one-hot player's levels are its columns in order; the bit of column j is its single threshold's
        self._block_columns = [(players == g).nonzero()[:, 0] for g in self.one_hot.nonzero()[:, 0].tolist()]
        fine = self.levels(pooled)
        sizes = torch.where(self.one_hot, width, torch.zeros_like(width))
        single = ~self.one_hot
        column_of = torch.zeros(self.m, dtype=torch.long, device=device)
        column_of[players] = torch.arange(self.p, device=device)  # a singleton player's column
        sizes[single] = n_thresholds[column_of[single]] + 1
        self.n_levels = sizes
        self._column_of = column_of
        self.counts = torch.zeros(self.m, int(sizes.max()) if self.m else 1, dtype=torch.float64, device=device)
        self.counts.scatter_add_(1, fine.T, torch.ones_like(fine.T, dtype=torch.float64))
        self.fine = self.coarse(None)

    def _check_one_hot(self, pooled: Tensor) -> None:
        owner = torch.nn.functional.one_hot(self.players, self.m).to(torch.float64)
        ones = (pooled.to(torch.float64) != 0).to(torch.float64) @ owner
        binary = ((pooled == 0) | (pooled == 1)).to(torch.float64) @ owner == owner.sum(0)
        bad = (self.one_hot[None] & ((ones != 1) | ~binary)).nonzero()
        if bad.numel():
            row, g = (int(i) for i in bad[0])
            columns = (self.players == g).nonzero()[:, 0].tolist()
            raise ValueError(
                f"player {g} has columns {columns[:12]} but row {row} of data/background is not one-hot on them "
                "(exactly one 1, the rest 0). A player of several columns must be a one-hot block; give other "
                "columns players of their own"
            )

    def levels(self, x: Tensor) -> Tensor:
        """``(N, m)`` int64 fine level of every player for raw rows ``x`` ``(N, p)``."""
        values = x.to(self.encoding.input_dtype).to(torch.float64)
        slots = torch.searchsorted(self._thresholds, values.T.contiguous(), side="left").T  # thresholds below x
        out = torch.zeros(x.shape[0], self.m, dtype=torch.long, device=x.device)
        single = (~self.one_hot[self.players]).nonzero()[:, 0]
        out[:, self.players[single]] = slots[:, single]
        for g, columns in zip(self.one_hot.nonzero()[:, 0].tolist(), self._block_columns):
            out[:, g] = x[:, columns].argmax(1)
        return out

    def coarse(self, k: int | None) -> Coarse:
        """The resolution with at most ``k`` levels per thermometer player (``None``: every slot); one-hot players
        keep their levels. Cuts: for each of ``k - 1`` equally spaced quantiles of the pooled rows, the first slot
        boundary at or past it."""
        device = self.counts.device
        n_max = self.counts.shape[1]
        boundary = torch.arange(n_max, device=device)[None] < self.n_levels[:, None]  # real fine levels
        cut = boundary.clone()
        cut[:, 0] = False  # boundary s lies between fine levels s-1 and s
        if k is not None:
            share = self.counts.cumsum(1) / self.counts.sum(1, keepdim=True).clamp_min(1)
            below = torch.cat((torch.zeros_like(share[:, :1]), share[:, :-1]), 1)  # share of rows under level s
            passed = torch.floor(below * k + 1e-9).clamp(max=k - 1) * cut
            before = torch.cat((torch.zeros_like(passed[:, :1]), passed[:, :-1].cummax(1).values), 1)
            thin = cut & (passed > before)
            coarsen = (~self.one_hot & (self.n_levels > k))[:, None]
            cut = torch.where(coarsen, thin, cut)
        level = torch.cumsum(cut.long(), 1) * boundary
        sizes = level.max(1).values + 1
        bits = torch.full((self.m, int(sizes.max()) if self.m else 1), -1, dtype=torch.long, device=device)
        rows, s = cut.nonzero(as_tuple=True)  # coarse level level[g, s] starts at fine boundary s
        thermometer = ~self.one_hot[rows]
        column = self._column_of[rows]
        bits[rows[thermometer], level[rows, s][thermometer]] = (self.first_bit[column] + s - 1)[thermometer]
        for g, columns in zip(self.one_hot.nonzero()[:, 0].tolist(), self._block_columns):
            seen = self._n_thresholds[columns] > 0  # a column never hot in the pooled rows has no bit: -1
            bits[g, : columns.numel()] = torch.where(seen, self.first_bit[columns], -1)
        return Coarse(level, sizes, bits)
