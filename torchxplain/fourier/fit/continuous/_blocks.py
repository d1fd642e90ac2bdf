"""The design of a fit on raw hybrids: blocks of players, one column per cell of each block's level grid.

A *block* is a set of players at one resolution: a main effect (one player, every fine level) or an interaction
(two or more players, coarse levels, :mod:`~torchxplain.fourier.fit.continuous._levels`). The fitted function is
the sum of the blocks' tables, ``h(z) = Σ_blocks table_b[cell_b(z)]``. Every point lies in exactly one cell of
every block, so the design is one-hot per block: a point is its ``(B,)`` active column ids, and least squares
needs only gathers and bincounts (:mod:`~torchxplain.fourier.fit.continuous._solve`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.fit.continuous._levels import Coarse, RawPlayers


@dataclass(frozen=True)
class Block:
    """Players ``(g1, ..., gd)`` ascending, at ``resolution`` levels each (``None``: every fine level)."""

    players: tuple[int, ...]
    resolution: int | None


class Layout:
    """Column offsets and cell sizes of a list of blocks over ``players``.

    Blocks of one degree and resolution are laid out together, so their cells are computed for all of them at
    once; ``blocks`` keeps that order.
    """

    def __init__(self, players: RawPlayers, blocks: list[Block], resolutions: dict[int | None, Coarse]) -> None:
        self.players = players
        self.resolutions = resolutions
        order = sorted(blocks, key=lambda b: (len(b.players), -1 if b.resolution is None else b.resolution))
        self.blocks = order
        self.groups: list[tuple[int | None, Tensor, Tensor, Tensor]] = []  # resolution, players, radix, offset
        offset = 0
        sizes = []
        start = 0
        while start < len(order):
            stop = start
            key = (len(order[start].players), order[start].resolution)
            while stop < len(order) and (len(order[stop].players), order[stop].resolution) == key:
                stop += 1
            res = resolutions[key[1]]
            members = torch.tensor([b.players for b in order[start:stop]], dtype=torch.long, device=res.sizes.device)
            level_sizes = res.sizes[members]  # (G, d)
            radix = torch.cumprod(torch.cat((torch.ones_like(level_sizes[:, :1]), level_sizes[:, :-1]), 1), 1)
            cells = level_sizes.prod(1)
            offsets = offset + torch.cumsum(cells, 0) - cells
            self.groups.append((key[1], members, radix, offsets))
            sizes.append(cells)
            offset += int(cells.sum())
            start = stop
        self.cells = torch.cat(sizes) if sizes else torch.zeros(0, dtype=torch.long)
        self.offsets = torch.cumsum(self.cells, 0) - self.cells
        self.n_columns = offset

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def active(self, levels: Tensor) -> Tensor:
        """``(N, B)`` int64 active column of every block for fine levels ``(N, m)``, chunked to the memory budget."""
        out = torch.empty(levels.shape[0], self.n_blocks, dtype=torch.long, device=levels.device)
        for a, b in chunk_bounds(levels.shape[0], rows_per_chunk(24 * max(self.n_blocks, 1), levels.shape[0])):
            out[a:b] = torch.cat([self._cells(levels[a:b], *group) for group in self.groups], 1)
        return out

    def _cells(self, levels: Tensor, resolution: int | None, members: Tensor, radix: Tensor, offsets: Tensor) -> Tensor:
        res = self.resolutions[resolution]
        fine = levels[:, members]  # (N, G, d)
        coarse = res.level[members[None].expand_as(fine), fine]
        return (coarse * radix).sum(2) + offsets


def fine_and_coarse(players: RawPlayers, blocks: list[Block]) -> dict[int | None, Coarse]:
    """The resolutions ``blocks`` use, each computed once."""
    return {r: players.fine if r is None else players.coarse(r) for r in {b.resolution for b in blocks}}
