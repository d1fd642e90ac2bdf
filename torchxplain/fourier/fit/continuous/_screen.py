"""Which interactions to fit: candidate blocks scored on the residual of the fit so far.

A candidate block (two or more players at a coarse resolution) fitted alone to the residual ``r`` by its cell
means reduces the squared error by ``G = Σ_c S_c² / n_c - (Σ r)² / N`` (``S_c``, ``n_c``: the residual's sum and
count in cell ``c``). Under the null of no interaction, each of its ``C - 1`` free cells adds about ``σ²``, so a
candidate is kept when ``G > PENALTY · (C - 1) · σ²`` (an information-criterion cut), best first. All candidates
are scored by one bincount per chunk of candidates.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, rows_per_chunk
from torchxplain.fourier.fit.continuous._levels import Coarse

PENALTY = 2.0
"""Squared-error reduction a candidate must bring per free cell, in units of the residual variance."""


def gains(levels: Tensor, coarse: Coarse, candidates: Tensor, resid: Tensor) -> Tensor:
    """``(C,)`` penalised squared-error reductions of candidate blocks ``(C, d)`` (module docstring).

    Args:
        levels: ``(N, m)`` int64 fine levels of the fit points.
        coarse: the candidates' resolution.
        candidates: ``(C, d)`` int64 players of each candidate.
        resid: ``(N,)`` float64 residual of the current fit.
    """
    n = resid.shape[0]
    sigma2 = float((resid**2).mean())
    total = float(resid.sum()) ** 2 / n
    out = torch.empty(candidates.shape[0], dtype=torch.float64, device=resid.device)
    sizes = coarse.sizes[candidates]  # (C, d)
    radix = torch.cumprod(torch.cat((torch.ones_like(sizes[:, :1]), sizes[:, :-1]), 1), 1)
    cells = sizes.prod(1)
    width = int(cells.max()) if cells.numel() else 1
    step = max(1, rows_per_chunk(16 * n, candidates.shape[0]))
    for a, b in chunk_bounds(candidates.shape[0], step):
        members = candidates[a:b]
        fine = levels[:, members]  # (N, c, d)
        cell = (coarse.level[members[None].expand_as(fine), fine] * radix[a:b][None]).sum(2)  # (N, c)
        keys = (cell + width * torch.arange(b - a, device=resid.device)[None]).reshape(-1)
        count = torch.bincount(keys, minlength=(b - a) * width).to(torch.float64).reshape(b - a, width)
        sums = torch.bincount(keys, weights=resid.repeat_interleave(b - a), minlength=(b - a) * width).reshape(
            b - a, width
        )
        reduction = (sums**2 / count.clamp_min(1)).sum(1) - total
        out[a:b] = reduction - PENALTY * (cells[a:b] - 1).to(torch.float64) * sigma2
    return out


def pairs(m: int, device: torch.device) -> Tensor:
    """``(m(m-1)/2, 2)`` every pair of players."""
    return torch.combinations(torch.arange(m, device=device), 2)


def triples_of(selected_pairs: Sequence[tuple[int, ...]], device: torch.device) -> Tensor:
    """``(C, 3)`` triples with at least two of their pairs among ``selected_pairs`` (heredity)."""
    chosen = set(selected_pairs)
    players = sorted({g for pair in selected_pairs for g in pair})
    found = [
        t for t in itertools.combinations(players, 3) if sum(p in chosen for p in itertools.combinations(t, 2)) >= 2
    ]
    return torch.tensor(found, dtype=torch.long, device=device).reshape(-1, 3)


def select(candidates: Tensor, scores: Tensor, room: int) -> list[tuple[int, ...]]:
    """The best ``room`` candidates with a positive score, best first."""
    order = torch.argsort(scores, descending=True)
    order = order[scores[order] > 0][:room]
    return [tuple(int(g) for g in row) for row in candidates[order].tolist()]
