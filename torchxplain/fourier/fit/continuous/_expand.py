"""Block tables to Walsh terms on the thermometer codes (exact).

A thermometer player's table over its levels is ``w(s) = w(0) + Σ_{c>=1} (w(c) - w(c-1)) z_c`` with ``z_c`` the
bit of the cut below level ``c``; a one-hot player's is ``Σ_l w(l) z_l`` (its bits sum to one on every row). So a
block's table is a sum of products of these monomials, one per player: finite differences along the thermometer
axes give the coefficients, and each monomial ``Π_{i∈T} z_i = 2^{-|T|} Σ_{U⊆T} (-1)^{|U|} (-1)^{<U,z>}`` gives
the Walsh terms (duplicates across blocks merged).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchxplain.fourier.fit.continuous._blocks import Layout
from torchxplain.fourier.spectrum import FourierSpectrum

ROUNDING = 1e-12
"""Amplitudes within this share of the largest are rounding (exact cancellations leave ~1e-17) and dropped."""


def monomials(layout: Layout, coefficients: Tensor, n_bits: int) -> tuple[Tensor, Tensor]:
    """``(bits (T, d_max) int64 padded with n_bits, coefficients (T,))`` of the fitted tables' monomials."""
    players = layout.players
    parts_bits, parts_coef = [], []
    for resolution, members, radix, offsets in layout.groups:
        res = layout.resolutions[resolution]
        g, d = members.shape
        sizes = res.sizes[members]  # (G, d)
        shape = [int(s) for s in sizes.max(0).values]
        grid = torch.stack(torch.meshgrid(*[torch.arange(s, device=sizes.device) for s in shape], indexing="ij"), -1)
        grid = grid.reshape(-1, d)  # (C, d) every cell of the padded grid
        valid = (grid[None] < sizes[:, None, :]).all(2)  # (G, C)
        column = offsets[:, None] + (grid[None] * radix[:, None, :]).sum(2)
        table = torch.where(valid, coefficients[column.clamp(max=coefficients.numel() - 1)], 0.0)
        table = table.reshape(g, *shape)
        for axis in range(d):  # finite differences along the thermometer axes
            thermometer = ~players.one_hot[members[:, axis]]
            shifted = torch.cat(
                (torch.zeros_like(table.narrow(axis + 1, 0, 1)), table.narrow(axis + 1, 0, shape[axis] - 1)), axis + 1
            )
            keep = thermometer.reshape(g, *([1] * d))
            table = torch.where(keep, table - shifted, table)
        coef = table.reshape(g, -1)
        nonzero = valid & (coef != 0)
        block, cell = nonzero.nonzero(as_tuple=True)
        levels = grid[cell]  # (T, d)
        owner = members[block]  # (T, d)
        bits = res.bits[owner, levels]
        one_hot = players.one_hot[owner]
        representable = ~(one_hot & (bits < 0)).any(1)  # a one-hot level never seen has no monomial (and no data)
        bits = torch.where(bits < 0, n_bits, bits)[representable]
        parts_bits.append(bits)
        parts_coef.append(coef[block, cell][representable])
    width = max((b.shape[1] for b in parts_bits), default=1)
    padded = [torch.cat((b, b.new_full((b.shape[0], width - b.shape[1]), n_bits)), 1) for b in parts_bits]
    if not padded:
        return torch.zeros(0, 1, dtype=torch.long), torch.zeros(0, dtype=torch.float64)
    return torch.cat(padded), torch.cat(parts_coef)


def walsh(bits: Tensor, coefficients: Tensor, n_bits: int) -> FourierSpectrum:
    """The Walsh spectrum of ``Σ_t c_t Π_{i∈T_t} z_i`` for monomials given as padded bit tuples ``(T, d)``."""
    device = bits.device
    d = bits.shape[1]
    real = bits < n_bits  # (T, d)
    subsets = ((torch.arange(2**d, device=device)[:, None] >> torch.arange(d, device=device)) & 1).bool()  # (S, d)
    inside = (subsets[None] & ~real[:, None]).any(2)  # (T, S): the subset uses a padding slot
    size = subsets.sum(1)  # (S,)
    degree = real.sum(1)  # (T,)
    amplitude = coefficients[:, None] * torch.pow(2.0, -degree.to(torch.float64))[:, None]
    amplitude = amplitude * (1.0 - 2.0 * (size % 2).to(torch.float64))[None]
    members = torch.where(subsets[None], bits[:, None, :], n_bits)  # (T, S, d)
    keep = ~inside
    members, amplitude = members[keep], amplitude[keep]  # (F', d), (F',)
    members = torch.sort(members, dim=1).values  # a frequency is its sorted bit tuple (padding last)
    unique, inverse = torch.unique(members, dim=0, return_inverse=True)
    total = torch.zeros(unique.shape[0], dtype=torch.float64, device=device).index_add_(0, inverse, amplitude)
    top = float(total.abs().max()) if total.numel() else 0.0
    keep_terms = total.abs() > ROUNDING * top
    frequencies = torch.zeros(int(keep_terms.sum()), n_bits + 1, dtype=torch.bool, device=device)
    frequencies.scatter_(1, unique[keep_terms], True)
    return FourierSpectrum.trusted(frequencies[:, :n_bits], total[keep_terms])


def spectrum_of(layout: Layout, coefficients: Tensor, n_bits: int) -> FourierSpectrum:
    """The exact Walsh spectrum of the fitted tables on the ``n_bits`` threshold bits."""
    bits, coef = monomials(layout, coefficients, n_bits)
    return walsh(bits, coef, n_bits)
