"""Tabulation: the exact spectrum of a black box on the product of its players' observed levels.

Every hybrid ``(x_S, b_{~S})`` of the data and background takes, per player, one of the levels that player shows
there (:mod:`~torchxplain.fourier.fit._levels`), so all of them lie on the grid ``Π_g L_g``. When the grid fits the
query budget (GB1's four sites: ``20⁴ = 160,000``), query every grid point once: the table is the model wherever
SHAP can look. The level indicators of a player sum to one on its levels, so the table's expansion in the
reference-coded basis is one difference per axis (``c[.., l, ..] = T[.., l, ..] - T[.., ref, ..]``, cost
``G · m``): every non-zero entry is a term (the units of its non-reference levels) and the all-reference entry is
the constant. Its Walsh expansion equals the model on every grid point, so its SHAP values equal the model's for
every row and background whose levels are on the grid.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain._core import chunk_bounds, parse_memory, rows_per_chunk
from torchxplain.fourier.fit._keys import TermKeys
from torchxplain.fourier.fit._levels import PlayerLevels
from torchxplain.fourier.fit._oracle import Oracle
from torchxplain.fourier.fit.hybrid._regression import TermFit
from torchxplain.fourier.spectrum import FourierSpectrum
from torchxplain.fourier.values import mixed_radix_digits

RELATIVE_ZERO = 1e-12
"""Coefficients below this fraction of the largest are the rounding of exact cancellations (dropped)."""


def tabulation_bytes(levels: PlayerLevels) -> int:
    """Peak bytes of tabulating ``levels``' grid of ``G`` points (:func:`tabulate` and :func:`table_spectrum`):
    the model's values, the table and its reference-coded and Walsh copies (float64), the kept indices and their
    digits (int64, ``m`` per point), and the spectrum's ``(G, n)`` bool frequencies, each at most ``G`` entries."""
    return levels.grid_size * (6 * 8 + 8 * levels.m + levels.n_features)


def check_tabulation(levels: PlayerLevels, budget: int | None = None) -> None:
    """Refuse, before anything is queried or allocated, a grid whose tables exceed the memory budget
    (``tx.settings.max_memory`` unless ``budget``), naming the grid, its size and what would fit."""
    need, allowed = tabulation_bytes(levels), parse_memory() if budget is None else budget
    if need <= allowed:
        return
    sizes = levels.level_count()
    shown = "·".join(str(s) for s in sizes) if len(sizes) <= 8 else f"the level counts of {len(sizes)} players"
    fits = allowed // max(need // max(levels.grid_size, 1), 1)
    raise ValueError(
        f"tabulation queries the model at every one of the {levels.grid_size:,} level combinations ({shown}) and "
        f"its tables need {need / 2**30:.3g} GiB, above max_memory={allowed / 2**30:.3g} GiB (grids of at most "
        f"~{fits:,} combinations fit): use method='auto' or 'hybrid' (a sparse fit on hybrid samples), fewer "
        "players (groups=), or raise max_memory"
    )


def tabulate(oracle: Oracle, levels: PlayerLevels) -> tuple[TermFit, Tensor]:
    """Query the model on every grid point once; its exact expansion in the reference-coded basis.

    Args:
        oracle: the black box (its row count grows by ``levels.grid_size``).
        levels: the players' observed levels.

    Returns:
        ``(fit, values)``: a :class:`TermFit` equal to the model on every grid point (float64, without
        rounding-level terms), and the model's ``(G,)`` values in row-major grid order (:func:`grid_index`).

    Raises:
        ValueError: the tables exceed the memory budget (:func:`check_tabulation`), before any query.
    """
    check_tabulation(levels)
    sizes = levels.level_count()
    total, device = levels.grid_size, levels.device
    values = torch.empty(total, dtype=torch.float64, device=device)
    for a, b in chunk_bounds(total, rows_per_chunk(levels.n_features + 8 * len(sizes), total)):
        values[a:b] = oracle(levels.points(mixed_radix_digits(torch.arange(a, b, device=device), sizes)))
    table = values.reshape(sizes).clone()
    for g in range(levels.m):  # reference coding: each non-reference slice minus the reference slice
        moved = table.movedim(g, 0)
        moved = torch.cat((moved[:1], moved[1:] - moved[:1]))
        table = moved.movedim(0, g)
    flat = table.reshape(-1)
    top = float(flat.abs().max()) if flat.numel() else 0.0
    keep = (flat.abs() > RELATIVE_ZERO * top).nonzero()[:, 0]
    constant = float(flat[0])
    keep = keep[keep > 0]
    codec = TermKeys.for_levels(levels)  # the grid is small: a term's key is its flat grid index
    degrees = (mixed_radix_digits(keep, sizes) > 0).sum(1)
    return TermFit(keep, degrees, flat[keep], constant, codec), values


def grid_index(codes: Tensor, sizes: list[int]) -> Tensor:
    """Flat grid indices of level indices ``(N, m)`` (the inverse of :func:`mixed_radix_digits`)."""
    flat = torch.zeros(codes.shape[0], dtype=torch.long, device=codes.device)
    for g, size in enumerate(sizes):
        flat = flat * size + codes[:, g]
    return flat


def table_spectrum(levels: PlayerLevels, values: Tensor) -> FourierSpectrum:
    """The exact Walsh spectrum of the model's values on the grid, by one mode product per player with its matrix
    of level-indicator Walsh amplitudes (``G · Σ_g L_g`` work; the frequencies are distinct by construction, so
    nothing is merged — the fast route of a whole table, :meth:`TermFit.spectrum` the general one)."""
    table = values.reshape(levels.level_count())
    frequencies = []
    for g in range(levels.m):
        walsh = levels.walsh(g)
        table = torch.tensordot(walsh.amplitudes, table.movedim(g, 0), dims=([1], [0])).movedim(0, g)
        frequencies.append(walsh.frequencies)
    amplitudes = table.reshape(-1)
    top = float(amplitudes.abs().max()) if amplitudes.numel() else 0.0
    keep = (amplitudes.abs() > RELATIVE_ZERO * top).nonzero()[:, 0]
    codes = mixed_radix_digits(keep, [f.shape[0] for f in frequencies])
    union = torch.zeros(keep.numel(), levels.n_features, dtype=torch.bool, device=values.device)
    for g, freq in enumerate(frequencies):
        union |= freq[codes[:, g]]
    return FourierSpectrum.trusted(union, amplitudes[keep])
